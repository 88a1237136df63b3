"""The whole fact catalogue: every facts_* module imported once, each adding its facts to
advisor.engine.catalogue. Whatever validates rules or computes facts imports this module
(a new fact source is one more facts_* module and one more name here)."""
from __future__ import annotations

from advisor.engine import facts_arc, facts_dataset, facts_dedup, facts_host, facts_measured, facts_pool
from advisor.engine.catalogue import CATALOGUE

FACT_MODULES = (facts_host, facts_pool, facts_dedup, facts_arc, facts_measured, facts_dataset)
__all__ = ["CATALOGUE", "FACT_MODULES"]
