"""The shipped Grafana dashboards' queries as Prometheus runs them, and when an empty answer is by
design: shared by the golden check (two replayed hosts) and the lab's (the installed service).

    for title, target in panel_targets():
        promql = resolve(target["expr"], instance="127.0.0.1:123|127.0.0.1:456")
        why_empty(prom, target["expr"], promql, instance)  # None: it should have had data
"""
from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
from functools import cache
from pathlib import Path

from support import REPO

GRAFANA = REPO / "deploy" / "grafana"
# A query that ends in a comparison with a number shows only the series past it (errors, failing
# collectors, pools about to fill): empty on a healthy host, while the series it filters exist.
FILTER = re.compile(r"^(?P<series>.+?)\s*(?:==|!=|>=|<=|>|<)\s*-?[\d.e+]+$", re.S)


def dashboards() -> list[Path]:
    return sorted(GRAFANA.glob("*.json"))


def panel_targets(path: Path | None = None) -> list[tuple[dict, dict]]:
    """(panel, target) of every query target of every panel (annotations are not panels)."""
    found = []
    for file in [path] if path else dashboards():
        for panel in json.loads(file.read_text())["panels"]:
            found += [(panel, t) for t in panel.get("targets", []) if "expr" in t]
    return found


def resolve(expr: str, instance: str, rate_interval: str = "1m", job: str = ".*", pool: str = "tank") -> str:
    """The PromQL Grafana sends for `expr` with these variable values (regexes, as Grafana writes a
    multi-value or All variable)."""
    return (expr.replace("$__rate_interval", rate_interval).replace("$job", job)
            .replace("$instance", instance).replace("$pool", pool))


def alternatives(*values: str) -> str:
    """A multi-value variable as Grafana puts it into a PromQL regex: escaped, then quoted."""
    return "|".join(re.escape(v).replace("\\", "\\\\") for v in values)


@cache
def _builder():
    spec = importlib.util.spec_from_file_location("build_dashboard", GRAFANA / "build_dashboard.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def builder():
    """deploy/grafana/build_dashboard.py as a module."""
    return _builder()


def instances_of(result: list[dict]) -> set[str]:
    return {r["metric"].get("instance", "") for r in result}


def why_empty(prom, expr: str, promql: str, instance: str, **variables: str) -> str | None:
    """Why `expr` (its Grafana text; `promql` resolved) has no series for `instance`, when that is by
    design: its filter leaves nothing while the series it filters exist, or the witness its target
    names (build_dashboard.Target.empty_when) has a series for the instance. None when not by design."""
    if match := FILTER.match(promql):
        inner = [r for r in prom.query(match["series"])
                 if r["metric"].get("instance") == instance and math.isfinite(float(r["value"][1]))]
        return f"{len(inner)} series, none past the filter" if inner else None
    witness = builder().by_design().get(expr)
    if witness is None:
        return None
    shown = prom.query(resolve(witness.expr, alternatives(instance), **variables))
    return witness.reason if instance in instances_of(shown) else None


def legend(template: str, labels: dict[str, str]) -> str:
    """Grafana's legend text for a series: {{label}} replaced by its value."""
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), template)
