"""The scratch datasets a probe writes into, and nothing else.

`<pool>/zfs-advisor-probe` (the name is configurable) holds one child per candidate,
created with the candidate's properties and a quota, destroyed after its repeats.
Every name is checked (advisor/hostmodel/names.py) before it reaches `zfs`, and destroy refuses
anything that is not the scratch root or below it.
"""
from __future__ import annotations

from advisor.host.runner import CommandError, CommandRunner
from advisor.hostmodel.names import SCRATCH_DATASET, check_dataset_name, check_pool_name


class ScratchError(Exception):
    """A scratch dataset could not be created, found or removed; the message says which."""


class ScratchArea:
    def __init__(self, pool: str, runner: CommandRunner, name: str = SCRATCH_DATASET):
        check_pool_name(pool)
        if "/" in name:
            raise ScratchError(f"scratch dataset name {name!r} must be one component (it goes under the pool)")
        self.pool = pool
        self.root = check_dataset_name(f"{pool}/{name}")
        self.runner = runner

    def child_name(self, key: str) -> str:
        return check_dataset_name(f"{self.root}/{key}")

    def owns(self, dataset: str) -> bool:
        return dataset == self.root or dataset.startswith(self.root + "/")

    async def _zfs(self, *args: str) -> str:
        result = await self.runner.run(["zfs", *args], 120.0)
        if not result.ok:
            raise ScratchError(CommandError(result).args[0])
        return result.stdout

    async def exists(self, dataset: str | None = None) -> bool:
        result = await self.runner.run(["zfs", "list", "-H", "-o", "name", dataset or self.root])
        return result.ok

    async def create_child(self, key: str, properties: dict[str, str], quota_bytes: int) -> tuple[str, str]:
        """-> (dataset, mountpoint).  The root is created first when missing."""
        if not await self.exists():
            # canmount stays on: children inherit the mountpoint under it.  No data lands in the root.
            await self._zfs("create", "-o", "atime=off", self.root)
        name = self.child_name(key)
        options: list[str] = []
        for prop, value in {**properties, "quota": str(quota_bytes)}.items():
            options += ["-o", f"{prop}={value}"]
        await self._zfs("create", *options, name)
        mountpoint = (await self._zfs("get", "-H", "-o", "value", "mountpoint", name)).strip()
        mounted = (await self._zfs("get", "-H", "-o", "value", "mounted", name)).strip()
        if not mountpoint.startswith("/") or mounted != "yes":
            await self.destroy(name)
            raise ScratchError(f"{name} is not mounted (mountpoint {mountpoint!r}); set a mountpoint on {self.pool}")
        return name, mountpoint

    async def compress_ratio(self, dataset: str) -> float | None:
        out = await self._zfs("get", "-Hp", "-o", "value", "compressratio", dataset)
        try:
            return float(out.strip().rstrip("x"))
        except ValueError:
            return None

    async def set_property(self, dataset: str, prop: str, value: str) -> None:
        """Only on a child of the scratch dataset (never a user's dataset)."""
        if not self.owns(dataset) or dataset == self.root:
            raise ScratchError(f"refusing to change {dataset!r}: not under the scratch dataset {self.root}")
        await self._zfs("set", f"{prop}={value}", dataset)

    async def destroy(self, dataset: str) -> None:
        if not self.owns(dataset):
            raise ScratchError(f"refusing to destroy {dataset!r}: not under the scratch dataset {self.root}")
        if await self.exists(dataset):
            await self._zfs("destroy", "-r", "-f", dataset)

    async def remove_all(self) -> bool:
        """Destroy the scratch root and everything under it; True when something was there."""
        if not await self.exists():
            return False
        await self.destroy(self.root)
        return True
