"""What the model is handed rather than reads itself (advisor/model/provider.py): this host's
probe results, and a description of what a probe would run.  The app and the CLI wire the
store's reader (advisor/store/results.py) and the probe's description
(advisor/probe/description.py) in; the model imports neither the store nor the probe's code."""
from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, Protocol

from advisor.hostmodel.facts import Disk, Pool


class ProbeResults(Protocol):
    """This host's stored probe results; a store that cannot be read reads as empty (logged)."""

    def generation(self) -> Hashable:
        """What the predictions depend on (the newest result's id, how many changes were verified;
        -1: unreadable): they are recomputed when it changes."""
        ...

    def results_for(self, pool: str, workload: str) -> Sequence[Any]:
        """Every repeat measured on `pool` for `workload` (advisor/store/probes.py ResultRow)."""
        ...

    def verified_changes(self, pool: str) -> Sequence[dict[str, Any]]:
        """The measured setting changes of `pool`'s datasets (records as GET /v1/changes serves them)."""
        ...


class ProbeJob(Protocol):
    """The job a probe of a workload would run: its fio text, its working set, and the ARC cap
    a probe reading from the disks would set."""

    @property
    def text(self) -> str: ...
    @property
    def working_set_bytes(self) -> int: ...
    @property
    def arc_max_bytes(self) -> int: ...


class ProbeDescription(Protocol):
    """What a probe would run, described without running anything."""

    def job(self, workload: Any, params: dict[str, str]) -> ProbeJob | None:
        """The job for `workload` with its parameters (and `role`), or None when none can be built."""
        ...

    def pool(self, facts: Pool, disks: list[Disk]) -> dict[str, Any]:
        """The pool's descriptor, as a probe stores it with its results."""
        ...

    def recordsize_grid(self, block_size: str) -> list[str]:
        """The recordsize values a probe of I/O of `block_size` compares."""
        ...

    def candidate(self, parameter: str, value: str, baseline: bool) -> Any:
        """The candidate a probe plan takes for this setting."""
        ...
