"""The imported pools, their media and layout, and their datasets: GET /v1/pools and the page."""
from __future__ import annotations

from advisor.engine import derived_catalogue  # noqa: F401  (the pool.* facts below)
from advisor.engine.context import Context
from advisor.engine.models import PoolInfo, PoolList
from advisor.hostmodel.facts import Host


def pool_list(host: Host) -> PoolList:
    pools = []
    for pool in host.pools:
        ctx = Context(host=host, pool=pool)
        pools.append(
            PoolInfo(
                name=pool.name,
                health=pool.health,
                media=ctx.get("pool.media"),
                layout=ctx.get("pool.layout"),
                ashift_min=ctx.get("pool.ashift_min"),
                size_bytes=pool.size_bytes,
                capacity_ratio=pool.capacity_ratio,
                fragmentation_ratio=pool.fragmentation_ratio,
                datasets=[d.name for d in host.datasets if d.pool == pool.name],
            )
        )
    return PoolList(pools=pools)
