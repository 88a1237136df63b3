"""The regression model in /recommend, `zfs-advisor recommend` and /metrics: `source: model` or
`rule+model` with the predicted `expected_effect` where no probe of the pool exists, probes
still winning where they do, the model answering without scikit-learn (from the fit shipped with
the prior), and the rules answering alone (saying why) without numpy.

The host is the lab recording of ssd-mirror2x2 (OpenZFS 2.3.2); the model is the one fitted on the
shipped lab prior (advisor/model/data/*.gp.json).  The engine-only tests at the end use predictions typed in by hand (marked
synthetic): they test the confirm / reorder / overrule logic, not the model.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from prometheus_client.parser import text_string_to_metric_families
from support import RECORDING, REPO

from advisor.app import create_app
from advisor.engine.models import Recommendation
from advisor.engine.predicted import CandidatePrediction, PairEffect, ParameterPrediction, apply_predictions
from advisor.model import MODEL_VERSION
from advisor.settings import Settings
from advisor.store.db import connect
from advisor.store.probes import ProbeStore, ResultRow

EFFECT = "zfs_advisor_recommendation_expected_effect_ratio"


def recordsize(answer: dict) -> dict:
    return next(r for r in answer["recommendations"] if r["parameter"] == "recordsize")


async def test_recommend_carries_the_models_prediction(http_client, tmp_path):
    client = await http_client(create_app(Settings(root=str(RECORDING), state_dir=str(tmp_path / "state"))))
    answer = await (await client.get("/recommend", params={"workload": "postgres", "pool": "tank"})).json()
    model = answer["model"]
    assert model["available"] and model["version"].startswith(f"{MODEL_VERSION}+gp.prior-") and model["lab_runs"] > 0
    rec = recordsize(answer)
    assert rec["source"] in ("model", "rule+model")
    assert f"from 0 probes on this pool and {model['lab_runs']} lab runs" in rec["explanation"]
    assert any(v in rec["explanation"] for v in ("confirms the rule", "overrules the rule", "cannot separate them"))
    effect = rec["expected_effect"]
    assert effect["metric"] == "iops"
    assert effect["interval"][0] <= effect["change_ratio"] <= effect["interval"][1]
    assert any(e["fact"].startswith("model.recordsize.") for e in rec["evidence"])
    text = await (await client.get("/recommend", params={"workload": "postgres", "pool": "tank", "format": "text"})).text()
    assert f"lab runs (model {MODEL_VERSION}+gp.prior-" in text
    assert not (tmp_path / "state").exists()  # reading advice creates no database
    # 1M sequential I/O: a block size beyond what the lab measured, so no prediction
    media = await (await client.get("/recommend", params={"workload": "media", "pool": "tank"})).json()
    assert recordsize(media)["source"] == "rule" and recordsize(media)["expected_effect"] is None


async def test_metrics_export_the_predicted_effect_of_open_recommendations(http_client, tmp_path):
    client = await http_client(create_app(Settings(root=str(RECORDING), state_dir=str(tmp_path),
                                                    workloads={"tank/pg": "postgres"})))
    # /recommend first: it waits for the fit (a scrape waits only ADVICE_WAIT_SECONDS, which a
    # loaded machine can exceed, and then goes on without the model)
    answer = await (await client.get("/recommend", params={"workload": "postgres", "dataset": "tank/pg"})).json()
    text = await (await client.get("/metrics")).text()
    series = {s.labels["bound"]: (s.labels, s.value) for f in text_string_to_metric_families(text)
              for s in f.samples if s.name == EFFECT and s.labels["parameter"] == "recordsize"}
    rec = recordsize(answer)
    if rec["status"] != "change" or rec["expected_effect"] is None:
        assert not series
        return
    effect = rec["expected_effect"]
    assert series["expected"][1] == effect["change_ratio"]
    assert (series["low"][1], series["high"][1]) == tuple(effect["interval"])
    labels = series["expected"][0]
    assert labels | {"bound": "x"} == {"workload": "postgres", "pool": "tank", "dataset": "tank/pg",
                                       "parameter": "recordsize", "metric": "iops", "source": rec["source"],
                                       "bound": "x"}


async def test_probe_evidence_still_wins(http_client, tmp_path):
    store = ProbeStore(connect(tmp_path))
    run = store.start_run("tank", "postgres", "data", {}, [], None)
    # the ssd-mirror2x2 postgres cell of the shipped prior, repeat by repeat (IOPS, write p99 s)
    measured = {"128K": [(2001.1, 0.0114688), (1657.8, 0.0161874)], "8K": [(3355.2, 0.0015155), (3540.5, 0.0016302)]}
    for value, repeats in measured.items():
        for i, (iops, p99) in enumerate(repeats):
            store.add_result(ResultRow(
                run_id=run, parameter="recordsize", value=value, scope="dataset", baseline=value == "128K", repeat=i,
                started_at=0.0, iops=iops, read_iops=0.7 * iops, write_iops=0.3 * iops, read_bw=0.0, write_bw=0.0,
                write_p99=p99, runtime_seconds=8.0, written_bytes=0, pool={"media": "ssd"}, job="[global]\n[data]\n"))
    store.end_run(run, "completed")
    store.conn.close()
    client = await http_client(create_app(Settings(root=str(RECORDING), state_dir=str(tmp_path))))
    answer = await (await client.get("/recommend", params={"workload": "postgres", "pool": "tank"})).json()
    rec = recordsize(answer)
    assert rec["source"] == "probe" and rec["recommended"] == "8K"
    assert answer["model"]["available"]


def _recommend_with_blocked(*modules: str) -> tuple[dict, str]:
    """`zfs-advisor recommend --json` in a fresh interpreter where `modules` cannot be imported
    (None in sys.modules is how Python blocks an import: the import system's documented switch);
    (the answer, the modules of the blocked families that got imported anyway)."""
    script = (
        "import json, sys\n"
        f"for name in {list(modules)!r}: sys.modules[name] = None\n"
        "from advisor.cli import main\n"
        f"code = main(['recommend', '--root', {str(RECORDING)!r}, '--workload', 'postgres', '--json'])\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('sklearn', 'scipy') \n"
        "                         and sys.modules[m] is not None)), file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120,
                         env={"PATH": "/usr/bin:/bin", "ZFS_ADVISOR_STATE_DIR": "/nonexistent/zfs-advisor-test"})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout), out.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("blocked", [(), ("sklearn", "scipy")], ids=["installed-or-not", "blocked"])
def test_the_shipped_fit_answers_without_importing_scikit_learn(blocked):
    answer, imported = _recommend_with_blocked(*blocked)
    assert answer["model"]["available"] and answer["model"]["version"].startswith(f"{MODEL_VERSION}+gp.prior-")
    assert recordsize(answer)["source"] in ("model", "rule+model")
    assert recordsize(answer)["expected_effect"]["metric"] == "iops"
    assert imported == "[]"  # not even when installed: about 90 MB resident (docs/reliability.md)


def test_without_numpy_the_rules_answer_and_say_why():
    answer, _ = _recommend_with_blocked("numpy")
    assert answer["model"] == {"available": False, "version": None, "lab_runs": 0,
                               "reason": "the regression model is unavailable: numpy is not installed "
                                         "(pip install numpy)"}
    assert all(r["source"] == "rule" for r in answer["recommendations"])


# --- the engine's merge, on predictions typed in by hand (synthetic: tests the logic only) ------
def _rec(recommended: str = "32K", current: str = "128K") -> Recommendation:
    return Recommendation(parameter="recordsize", scope="dataset", current=current, recommended=recommended,
                          change=True, status="change", confidence=0.5, explanation="The rule says 32K.",
                          rule="recordsize-postgres", title="t", pool="tank", dataset="tank/pg",
                          apply="zfs set recordsize=32K tank/pg", apply_argv=["zfs", "set", "recordsize=32K", "tank/pg"],
                          effect="new-writes", reversible="yes", references=[])


def _synthetic(best: str, diff_interval: tuple[float, float]) -> ParameterPrediction:
    values = {"8K": 1.6, "32K": 1.3, "128K": 1.0}
    cands = [CandidatePrediction(value=v, ratio=r, interval=(r * 0.9, r * 1.1)) for v, r in values.items()]
    effects = [PairEffect(from_value=a, to_value=b, ratio=values[b] / values[a],
                          interval=diff_interval if (a, b) == ("32K", "8K") else (0.9 * values[b] / values[a],
                                                                                  1.1 * values[b] / values[a]))
               for a in values for b in values if a != b]
    return ParameterPrediction(parameter="recordsize", metric="iops", best=best, candidates=cands, effects=effects,
                               local_probes=0, lab_runs=10, model_version="test")


@pytest.mark.parametrize("best, interval, source, recommended, verdict", [
    ("32K", (0.9, 1.1), "rule+model", "32K", "The model confirms the rule"),
    ("8K", (0.95, 1.5), "rule+model", "32K", "cannot separate them"),
    ("8K", (1.1, 1.4), "model", "8K", "The model overrules the rule, which said 32K"),
])
def test_confirm_reorder_overrule(best, interval, source, recommended, verdict):
    pred = _synthetic(best, interval)
    [out] = apply_predictions([_rec()], "postgres", lambda *a: pred)
    assert (out.source, out.recommended) == (source, recommended)
    assert verdict in out.explanation and "from 0 probes on this pool and 10 lab runs" in out.explanation
    assert out.expected_effect.change_ratio == pytest.approx(pred.effect("128K", recommended).ratio, abs=1e-3)
    if recommended == "8K":
        assert out.apply_argv == ["zfs", "set", "recordsize=8K", "tank/pg"]


def test_a_probed_recommendation_is_left_to_the_probe():
    rec = _rec().model_copy(update={"source": "probe"})
    assert apply_predictions([rec], "postgres", lambda *a: _synthetic("8K", (1.1, 1.4))) == [rec]


def _passed(current: str) -> Recommendation:
    """A rule accepting 32K, 64K or 128K passes the current value: nothing to apply."""
    return _rec(current=current).model_copy(update={"status": "passed", "change": False, "apply": None,
                                                    "apply_argv": None})


def test_a_passed_value_the_model_says_is_beaten_becomes_a_change():
    # 32K vs the current 128K: 1.3x with (1.17, 1.43), above no change; 8K vs 32K cannot be told apart
    [out] = apply_predictions([_passed("128K")], "postgres", lambda *a: _synthetic("8K", (0.95, 1.5)))
    assert (out.status, out.change, out.recommended) == ("change", True, "32K")
    assert out.apply_argv == ["zfs", "set", "recordsize=32K", "tank/pg"]
    assert "The rule accepts the current 128K, but 32K is predicted +30% IOPS" in out.explanation


def test_a_passed_value_the_model_cannot_beat_stays_passed():
    pred = _synthetic("32K", (0.9, 1.1))
    weak = pred.model_copy(update={"effects": [e if (e.from_value, e.to_value) != ("128K", "32K")
                                               else e.model_copy(update={"interval": (0.95, 1.6)})
                                               for e in pred.effects]})
    [out] = apply_predictions([_passed("128K")], "postgres", lambda *a: weak)
    assert (out.status, out.change, out.apply_argv) == ("passed", False, None)
    assert "answer is to change" not in out.explanation


def test_a_passed_value_only_the_models_best_beats_becomes_a_change_to_it():
    # 32K vs the current 128K cannot be told apart from no change, 8K vs 128K can, and 8K vs the
    # rule's 32K cannot: the gain the data support is 8K's
    pred = _synthetic("8K", (0.95, 1.5))
    pred = pred.model_copy(update={"effects": [
        e.model_copy(update={"interval": (0.95, 1.6)}) if (e.from_value, e.to_value) == ("128K", "32K")
        else e.model_copy(update={"interval": (1.2, 1.9)}) if (e.from_value, e.to_value) == ("128K", "8K") else e
        for e in pred.effects]})
    [out] = apply_predictions([_passed("128K")], "postgres", lambda *a: pred)
    assert (out.status, out.change, out.recommended, out.source) == ("change", True, "8K", "model")
    assert out.apply_argv == ["zfs", "set", "recordsize=8K", "tank/pg"]
    assert "cannot separate them; of the two only 8K is predicted to beat the current 128K" in out.explanation
    assert out.expected_effect.change_ratio == pytest.approx(1.6) and out.expected_effect.interval == (1.2, 1.9)


async def test_a_stop_does_not_wait_for_an_unfinished_fit(monkeypatch, tmp_path):
    """The fit runs in a daemon thread of its own, not in the loop's executor, whose threads
    asyncio waits for at exit: a stop during a slow fit (minutes in an emulated VM) waits
    FIT_STOP_WAIT_SECONDS for it, not longer.  The fit is held here by an event instead of a slow
    machine (a stand-in, said so)."""
    import asyncio
    import threading

    from aiohttp import web

    from advisor.model.provider import ModelProvider

    release = threading.Event()
    monkeypatch.setattr(ModelProvider, "_fit", lambda self: release.wait(60) and self)
    monkeypatch.setattr("advisor.app.FIT_STOP_WAIT_SECONDS", 0.2)
    runner = web.AppRunner(create_app(Settings(root=str(RECORDING), state_dir=str(tmp_path / "state"))))
    await runner.setup()
    try:
        await runner.cleanup()
        (fit,) = [t for t in threading.enumerate() if t.name == "model-fit"]
        assert fit.is_alive() and fit.daemon
        # what asyncio.run does at exit: returns although the fit has not ended
        await asyncio.wait_for(asyncio.get_running_loop().shutdown_default_executor(), 10)
        assert fit.is_alive()
    finally:
        release.set()
