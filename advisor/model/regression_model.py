"""The one place the regression model is built, for the service (app.py) and for every command
(recommend, verify, probe --budget-probes, profile): the model handed this host's probe store
and what a probe would run (advisor/model/inputs.py says why it is handed both)."""
from __future__ import annotations

import os

from advisor.engine.loader import RuleBook
from advisor.model.provider import FittedModel, ModelProvider
from advisor.probe.description import ProbeDescription
from advisor.store.results import StoredResults


def build_model(state_dir: str | os.PathLike[str], book: RuleBook, enabled: bool = True,
                fitted: FittedModel | None = None) -> ModelProvider:
    """Not fitted yet: the service fits it in a thread of its own, a command before it asks; with
    `fitted` (the evaluation's held-out model), ready as it is."""
    return ModelProvider(StoredResults(state_dir), ProbeDescription(), book, enabled=enabled, fitted=fitted)
