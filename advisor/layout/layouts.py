"""The layouts a number of equal disks allows, every disk used, the vdevs of each alike.

A stripe; 2- and 3-way mirrors; raidz1/2/3 of every width from nparity + 2 up to
MAX_RAIDZ_WIDTH that divides the disks into equal vdevs; dRAID1/2 over all the disks with one
distributed spare and the default group of zpoolconcepts(7) (8 data disks, fewer when the
disks do not allow 8).
"""
from __future__ import annotations

from dataclasses import dataclass

from advisor.layout.space import Vdev

MAX_RAIDZ_WIDTH = 16  # wider stripes add space, not speed (docs/planner.md)
DRAID_DEFAULT_DATA = 8
DRAID_SPARES = 1


@dataclass(frozen=True)
class Candidate:
    vdevs: tuple[Vdev, ...]

    @property
    def name(self) -> str:
        first = self.vdevs[0]
        if first.type == "disk":
            return f"stripe of {len(self.vdevs)}"
        if first.type == "draid":
            return first.name
        of = f"{first.name} of {first.width}" if first.type == "raidz" else f"{first.width}-way mirror"
        return f"{len(self.vdevs)} x {of}"

    def zpool_create(self, pool: str = "tank") -> str:
        """The shape of the `zpool create` command, disks as D1..DN."""
        words, n = ["zpool", "create", pool], 0
        for vdev in self.vdevs:
            if vdev.type != "disk":
                words.append(vdev.name)
            words.extend(f"D{n + i + 1}" for i in range(vdev.width))
            n += vdev.width
        return " ".join(words)


def candidates(disks: int) -> list[Candidate]:
    found = [Candidate(tuple(Vdev("disk", 1) for _ in range(disks)))]
    for ways in (2, 3):
        if disks >= ways and disks % ways == 0:
            found.append(Candidate(tuple(Vdev("mirror", ways) for _ in range(disks // ways))))
    for nparity in (1, 2, 3):
        for width in range(nparity + 2, min(disks, MAX_RAIDZ_WIDTH) + 1):
            if disks % width == 0:
                found.append(Candidate(tuple(Vdev("raidz", width, nparity) for _ in range(disks // width))))
    for nparity in (1, 2):
        ndata = min(DRAID_DEFAULT_DATA, disks - DRAID_SPARES - nparity)
        if ndata >= 2:
            found.append(Candidate((Vdev("draid", disks, nparity, ndata=ndata, nspares=DRAID_SPARES),)))
    return found
