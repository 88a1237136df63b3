"""Each page from what `gather` reads: the overview, a pool's page and a probe run's page, or a
`PageError` saying why not (the handlers, advisor/api/page.py, answer it as an HTML 4xx/503)."""
from __future__ import annotations

from advisor.answering.exported_advice import dataset_states
from advisor.engine.pool_list import pool_list
from advisor.page import gather, views
from advisor.page.markup import pool_href


class PageError(Exception):
    """A page that cannot be shown: its status, reason and (href, text) of pages that do exist."""

    def __init__(self, status: int, reason: str, valid: list[tuple[str, str]] | None = None):
        super().__init__(reason)
        self.status, self.reason, self.valid = status, reason, valid or []


def overview(inputs: gather.Inputs) -> str:
    host = inputs.host
    pools = pool_list(host).pools
    states = dataset_states(host, inputs.workloads)
    return views.overview(host, pools, {p.name: gather.general_answer(inputs, p.name) for p in pools},
                          gather.dataset_answers(inputs), [(d, w) for d, w, here in states if not here],
                          gather.stored(inputs.state_dir, [p.name for p in pools]), list(inputs.changes))


def pool(inputs: gather.Inputs, name: str) -> str:
    """`name` is a valid pool name (advisor/hostmodel/names.py); 404 when it is not on the host."""
    host = inputs.host
    facts = host.pool(name)
    if facts is None:
        raise PageError(404, f"no pool {name!r} on this host", [(pool_href(p.name), p.name) for p in host.pools])
    info = next(p for p in pool_list(host).pools if p.name == name)
    return views.pool_page(host, facts, info, gather.general_answer(inputs, name), gather.dataset_answers(inputs, name),
                           inputs.workloads, gather.stored(inputs.state_dir, [name], name),
                           [c for c in inputs.changes if c.get("pool") == name or c.get("scope") == "module"])


def probe_run(inputs: gather.Inputs, run_id: int) -> str:
    found = gather.probe_run(inputs.state_dir, run_id)
    if found is None:
        raise PageError(404, f"no probe run {run_id}", [("/", "the overview, which lists the runs")])
    if isinstance(found, str):  # the store cannot be read: the run is not found, and the page says why
        raise PageError(404, f"probe run {run_id} cannot be read: {found}", [("/", "the overview")])
    return views.probe_page(inputs.host, found)
