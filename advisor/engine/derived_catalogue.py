"""The whole fact catalogue: every derived_* module imported once, each adding its facts to
advisor.engine.catalogue. Whatever validates rules or computes facts imports this module
(a new fact source is one more derived_* module and one more name here)."""
from __future__ import annotations

from advisor.engine import derived_arc, derived_dataset, derived_dedup, derived_host, derived_io, derived_pool
from advisor.engine.catalogue import CATALOGUE

DERIVED_MODULES = (derived_host, derived_pool, derived_dedup, derived_arc, derived_io, derived_dataset)
__all__ = ["CATALOGUE", "DERIVED_MODULES"]
