"""Where the lab images live and which one belongs to the current recipe.

An image is keyed by the OpenZFS line (2.1, 2.3) and a hash of everything that
goes into it (tests/lab/recipe/*, tests/lab/vm-requirements.txt).  Its folder
name also carries the kernel and exact ZFS version it ended up with:

    $ZFS_ADVISOR_LAB_CACHE/images/zfs<line>-<recipe-hash>/   (complete images only)
        root.qcow2  vmlinuz  initrd.img  id_lab  id_lab.pub  image.json

Editing the recipe changes the hash, so the next build-image rebuilds and
stale images are never booted by tests.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

LAB_DIR = Path(__file__).resolve().parent
REPO_ROOT = LAB_DIR.parent.parent
RECIPE_FILES = sorted((LAB_DIR / "recipe").glob("*.sh")) + [LAB_DIR / "vm-requirements.txt"]
ZFS_LINES = ("2.1", "2.3")


def cache_dir() -> Path:
    return Path(os.environ.get("ZFS_ADVISOR_LAB_CACHE", "/var/cache/zfs-advisor-lab"))


def recipe_hash(zfs_line: str | None = None) -> str:
    """Hash of the recipe files (and the ZFS line, if given)."""
    h = hashlib.sha256()
    for path in RECIPE_FILES:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    if zfs_line:
        h.update(b"zfs=" + zfs_line.encode())
    return h.hexdigest()[:12]


def base_key() -> str:
    return f"base-{recipe_hash()}"


def image_key(zfs_line: str) -> str:
    return f"zfs{zfs_line}-{recipe_hash(zfs_line)}"


@dataclass(frozen=True)
class Image:
    path: Path
    zfs_line: str
    kernel: str
    zfs_version: str
    meta: dict

    @property
    def root(self) -> Path:
        return self.path / "root.qcow2"

    @property
    def kernel_file(self) -> Path:
        return self.path / "vmlinuz"

    @property
    def initrd(self) -> Path:
        return self.path / "initrd.img"

    @property
    def ssh_key(self) -> Path:
        return self.path / "id_lab"


def image_dir(zfs_line: str) -> Path:
    return cache_dir() / "images" / image_key(zfs_line)


def find_image(zfs_line: str) -> Image | None:
    """The built image for the current recipe, or None."""
    path = image_dir(zfs_line)
    meta_file = path / "image.json"
    if not meta_file.is_file():
        return None
    meta = json.loads(meta_file.read_text())
    return Image(path, zfs_line, meta["kernel"], meta["zfs_version"], meta)


class ImageMissing(RuntimeError):
    pass


def require_image(zfs_line: str) -> Image:
    image = find_image(zfs_line)
    if image is None:
        raise ImageMissing(
            f"lab image for OpenZFS {zfs_line} (key {image_key(zfs_line)}) is not built "
            f"in {cache_dir()}; build it with: tests/lab/build-image --zfs {zfs_line}"
        )
    return image
