"""Whether a change followed an open recommendation: the engine's answer on the facts from before
the change named that setting, for that dataset or the host, with status "change" and the value
it took.

The open recommendations the service knows are those it computes itself: each dataset of the
`workloads` setting (the answer /recommend gives for it, exported as
zfs_advisor_recommendation_info) and the general answer (pools and module parameters, for any
workload). Advice asked of /recommend for another dataset is not remembered.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from advisor.answering.answerer import Answerer, Query
from advisor.answering.exported_advice import Advice
from advisor.changes.detect import Change
from advisor.engine.measured import same_value
from advisor.engine.models import Recommendation
from advisor.hostmodel.facts import Host

log = logging.getLogger(__name__)


def open_recommendations(host: Host, advice: Advice, generation: float) -> list[tuple[str, Recommendation]]:
    """(workload, recommendation) with status "change" on `host`: the workloads setting's datasets
    (the exporter's advice, computed once per command output: a scrape of the same output reuses it)
    and the general answer. Plain and synchronous: the caller runs it in a worker thread."""
    found = [(w, r) for w, r in advice.for_host(host, generation) if r.status == "change"]
    try:
        # the general answer reads neither probe evidence nor predictions: an answerer of the rules alone
        general = Answerer(advice.answerer.book).answer(host, Query(now=host.collected_at))
        found += [("general", r) for r in general.recommendations if r.status == "change"]
    except Exception:  # the change is still recorded, without the general advice; the log says why
        log.exception("the general recommendations failed")
    return found


def followed(change: Change, open_recs: Iterable[tuple[str, Recommendation]]) -> dict[str, Any] | None:
    """The open recommendation `change` carried out, as the record shows it; None when none."""
    for workload, rec in open_recs:
        if rec.parameter != change.parameter or rec.scope != change.scope:
            continue
        if change.scope == "dataset" and rec.dataset != change.dataset:
            continue
        if same_value(rec.recommended, change.new):
            return {"workload": workload, "rule": rec.rule, "recommended": rec.recommended,
                    "confidence": rec.confidence, "source": rec.source,
                    "expected_effect": rec.expected_effect.model_dump() if rec.expected_effect else None}
    return None
