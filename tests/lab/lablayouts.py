"""Named lab disk layouts: read layouts.toml, turn one into qemu disk
arguments (host side) and into the shell script that creates its pool
(guest side)."""

from __future__ import annotations

import shlex
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

LAYOUTS_FILE = Path(__file__).resolve().parent / "layouts.toml"
BY_ID_PREFIX = "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_"
DISK_KEYS = {"name", "profile", "size", "media", "rotation_rate", "logical_block_size",
             "physical_block_size", "iops", "bps"}


def parse_size(text: str | int) -> int:
    if isinstance(text, int):
        return text
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper().rstrip("B")
    if t and t[-1] in units:
        return int(float(t[:-1]) * units[t[-1]])
    return int(t)


@dataclass(frozen=True)
class Disk:
    name: str
    media: str  # "ssd" | "hdd"
    size: int
    rotation_rate: int
    logical_block_size: int
    physical_block_size: int
    iops: int | None
    bps: int | None
    # The SCSI serial, hence the /dev/disk/by-id name; the disk's name unless
    # several layouts share one VM (Layout.with_serial_prefix).
    serial_prefix: str = ""

    @property
    def serial(self) -> str:
        return self.serial_prefix + self.name

    @property
    def by_id(self) -> str:
        return BY_ID_PREFIX + self.serial

    def qemu_args(self, image: Path, index: int) -> list[str]:
        drive = [f"file={image}", "if=none", f"id=d{index}", "format=raw", "aio=threads"]
        if self.iops:
            drive.append(f"throttling.iops-total={self.iops}")
        if self.bps:
            drive.append(f"throttling.bps-total={self.bps}")
        dev = ["scsi-hd", "bus=scsi0.0", f"drive=d{index}", "channel=0", f"scsi-id={index}",
               "lun=0", f"serial={self.serial}", f"rotation_rate={self.rotation_rate}",
               f"logical_block_size={self.logical_block_size}",
               f"physical_block_size={self.physical_block_size}"]
        return ["-drive", ",".join(drive), "-device", ",".join(dev)]

    def describe(self) -> str:
        throttle = f", throttled to {self.iops} IOPS / {self.bps // 1_000_000} MB/s" if self.iops else ""
        return (f"{self.name}: {self.media.upper()} {self.size >> 20} MiB, sectors "
                f"{self.logical_block_size}/{self.physical_block_size} (logical/physical), "
                f"rotation_rate={self.rotation_rate}{throttle}")


@dataclass(frozen=True)
class Dataset:
    name: str
    properties: dict[str, str]
    volume_size: str | None = None
    sparse: bool = False

    def create_argv(self) -> list[str]:
        argv = ["zfs", "create"]
        if self.volume_size:
            argv += ["-s"] if self.sparse else []
            argv += ["-V", self.volume_size]
        for k, v in self.properties.items():
            argv += ["-o", f"{k}={v}"]
        return argv + [self.name]


@dataclass(frozen=True)
class Layout:
    name: str
    description: str
    disks: tuple[Disk, ...]
    zpool_create: tuple[str, ...]
    datasets: tuple[Dataset, ...]
    fill: dict | None
    expect: dict = field(default_factory=dict)
    # zfs module parameters set only around `zpool create`, restored afterwards
    create_module_params: dict = field(default_factory=dict)
    # the OpenZFS lines the lab tests boot it on (empty: every line)
    lines: tuple[str, ...] = ()
    # the lines it boots on in CI (None: all of `lines`; empty: long lab jobs only); every line of
    # `lines` with ZFS_ADVISOR_LAB_LONG=1 (docs/lab.md, "CI time")
    ci_lines: tuple[str, ...] | None = None

    def with_serial_prefix(self, prefix: str) -> Layout:
        """The same layout with disk serials `<prefix><name>`: unique when layouts share a VM."""
        return replace(self, disks=tuple(replace(d, serial_prefix=prefix) for d in self.disks))

    def zpool_create_argv(self) -> list[str]:
        by_name = {d.name: d for d in self.disks}
        argv = ["zpool", "create"]
        for a in self.zpool_create:
            argv.append(by_name[a[1:]].by_id if a.startswith("@") else a)
        return argv

    def setup_script(self) -> str:
        """Guest shell script: wait for the disks, create pool and datasets, fill."""
        lines = ["set -eu", "udevadm settle"]
        for d in self.disks:
            lines.append(f"for i in $(seq 50); do [ -e {d.by_id} ] && break; sleep 0.2; done; "
                         f"[ -e {d.by_id} ] || {{ echo 'disk {d.name} missing' >&2; exit 1; }}")
        params = "/sys/module/zfs/parameters"
        for name, value in self.create_module_params.items():
            lines.append(f"saved_{name}=$(cat {params}/{name} 2>/dev/null || true); "
                         f"[ -z \"$saved_{name}\" ] || echo {value} > {params}/{name}")
        # A disk that just lost a pool's label (the layout before) gets its partitions re-read by
        # udev when its writer closes it, and again when `zpool create` has written the new label:
        # a partition open while it is re-read is ENXIO, "one or more devices is currently
        # unavailable" (CI, OpenZFS 2.1, 2026-12-02). Only that error is tried again, after udev
        # has settled and whatever the failed create left is gone.
        lines += [
            "for attempt in 1 2 3; do",
            "  udevadm settle",
            f"  if {shlex.join(self.zpool_create_argv())} 2>/tmp/zpool-create.err; then break; fi",
            "  cat /tmp/zpool-create.err >&2",
            "  grep -q 'currently unavailable' /tmp/zpool-create.err && [ $attempt -lt 3 ] || exit 1",
            "  echo \"zpool create: attempt $attempt failed with a device unavailable; again\" >&2",
            "  ! zpool list -H tank >/dev/null 2>&1 || zpool destroy -f tank",
            "  sleep 2",
            "done",
        ]
        for name in self.create_module_params:
            lines.append(f"[ -z \"$saved_{name}\" ] || echo $saved_{name} > {params}/{name}")
        for ds in self.datasets:
            lines.append(shlex.join(ds.create_argv()))
        if self.fill:
            fs = self.fill["dataset"]
            target = int(self.fill["capacity_percent"])
            lines += [
                # copies=3: each MiB written allocates three, and under emulation the guest's
                # write path, not the disks, bounds the fill (docs/lab.md: 2.35x as fast)
                f"zfs create -o compression=off -o recordsize=1M -o copies=3 {fs}",
                "zpool sync tank",
                # Write in steps (9/10 of what is left each) until the capacity reaches the target.
                "size=$(zpool list -Hp -o size tank); n=0",
                f"while [ $(zpool list -Hp -o capacity tank) -lt {target} ]; do",
                "  alloc=$(zpool list -Hp -o allocated tank)",
                f"  want=$(( (size * {target} / 100 - alloc) * 9 / 10 / 3 / 1048576 + 1 ))",
                f"  dd if=/dev/zero of=/{fs}/blob.$n bs=1M count=$want status=none",
                "  zpool sync tank; n=$((n+1))",
                "done",
            ]
        lines.append("zpool sync tank")
        return "\n".join(lines) + "\n"


def _disk(spec: dict, profiles: dict) -> Disk:
    unknown = set(spec) - DISK_KEYS
    if unknown:
        raise ValueError(f"disk {spec.get('name')}: unknown keys {sorted(unknown)}")
    merged = {**profiles[spec["profile"]], **spec} if "profile" in spec else dict(spec)
    return Disk(
        name=merged["name"], media=merged["media"], size=parse_size(merged["size"]),
        rotation_rate=int(merged["rotation_rate"]),
        logical_block_size=int(merged["logical_block_size"]),
        physical_block_size=int(merged["physical_block_size"]),
        iops=merged.get("iops"), bps=merged.get("bps"),
    )


def load(path: Path = LAYOUTS_FILE) -> dict[str, Layout]:
    data = tomllib.loads(path.read_text())
    profiles = data.get("profiles", {})
    datasets = tuple(
        Dataset(d["name"], {k: str(v) for k, v in d.get("properties", {}).items()},
                d.get("volume", {}).get("size"), bool(d.get("volume", {}).get("sparse")))
        for d in data.get("datasets", []))
    out = {}
    for name, spec in data["layouts"].items():
        out[name] = Layout(
            name=name, description=spec.get("description", ""),
            disks=tuple(_disk(d, profiles) for d in spec["disks"]),
            zpool_create=tuple(spec["zpool_create"]),
            datasets=datasets if spec.get("datasets", True) else (),
            fill=spec.get("fill"), expect=spec.get("expect", {}),
            create_module_params=spec.get("create_module_params", {}),
            lines=tuple(spec.get("lines", ())),
            ci_lines=tuple(spec["ci_lines"]) if "ci_lines" in spec else None,
        )
        out[name].zpool_create_argv()  # validates the @disk references
    return out


def get(name: str) -> Layout:
    layouts = load()
    if name not in layouts:
        raise KeyError(f"unknown layout {name!r}; known: {', '.join(sorted(layouts))}")
    return layouts[name]
