"""Where the lab images live and which one belongs to the current recipe.

An image is keyed by its line and a hash of everything that goes into it.  The
OpenZFS lines (2.1, 2.3) are Debian bookworm with the project's venv, every lab
test's VM (tests/lab/recipe/*.sh, tests/lab/vm-requirements.txt).  The Debian 13
line (debian13) is trixie as it comes: its kernel, OpenZFS and Python, for the
Debian package's tests only (tests/lab/recipe/debian13/*.sh and recipe/common.sh;
its own files, so that adding it changed neither the 2.1 nor the 2.3 key):

    $ZFS_ADVISOR_LAB_CACHE/images/zfs<line>-<recipe-hash>/   (complete images only)
    $ZFS_ADVISOR_LAB_CACHE/images/debian13-<recipe-hash>/
    $ZFS_ADVISOR_LAB_CACHE/images/apps-zfs2.3-<recipe-hash>/  (line 2.3-apps: recipe/apps/, docs/apps.md)
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
ZFS_LINES = ("2.1", "2.3")  # lab tests without named lines run on these
DEBIAN13 = "debian13"  # only the tests that name it run on it
LINES = (*ZFS_LINES, DEBIAN13)  # the order lab tests run in
APPS = "2.3-apps"  # OpenZFS 2.3 with the applications of the application lab (docs/apps.md); no lab test runs on it
IMAGE_LINES = (*LINES, APPS)  # every image build-image and vm know


@dataclass(frozen=True)
class Recipe:
    """The two stages that make a line's image, and the files its cache keys hash."""
    base_script: Path
    line_script: Path
    files: tuple[Path, ...]
    base_prefix: str  # of the cached base rootfs's folder under work/ (one never the start of another)
    image_prefix: str  # of the image folder before its hash


def recipe(line: str) -> Recipe:
    if line == DEBIAN13:
        own = LAB_DIR / "recipe" / "debian13"
        return Recipe(own / "base.sh", own / "zfs.sh",
                      (LAB_DIR / "recipe" / "common.sh", *sorted(own.glob("*.sh"))), "trixie-base-", f"{line}-")
    if line == APPS:  # the bookworm base, then recipe/apps/apps.sh, which ends with recipe/zfs.sh
        own = sorted((LAB_DIR / "recipe" / "apps").glob("*.sh"))
        return Recipe(LAB_DIR / "recipe" / "base.sh", own[0], (*RECIPE_FILES, *own), "base-", "apps-zfs2.3-")
    return Recipe(LAB_DIR / "recipe" / "base.sh", LAB_DIR / "recipe" / "zfs.sh", tuple(RECIPE_FILES),
                  "base-", f"zfs{line}-")


def cache_dir() -> Path:
    return Path(os.environ.get("ZFS_ADVISOR_LAB_CACHE", "/var/cache/zfs-advisor-lab"))


def _hash(files: tuple[Path, ...], zfs_line: str | None) -> str:
    h = hashlib.sha256()
    for path in files:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    if zfs_line:
        h.update(b"zfs=" + zfs_line.encode())
    return h.hexdigest()[:12]


def recipe_hash(zfs_line: str | None = None) -> str:
    """Hash of the recipe files of the line (of the bookworm lines' base, without a line)."""
    return _hash(recipe(zfs_line or ZFS_LINES[0]).files, zfs_line)


def base_key(zfs_line: str | None = None) -> str:
    """The base rootfs of the line: the OpenZFS lines share one, keyed without a line."""
    if zfs_line == DEBIAN13:
        r = recipe(DEBIAN13)
        return r.base_prefix + _hash(r.files, DEBIAN13)
    r = recipe(ZFS_LINES[0])  # the application image starts from the OpenZFS lines' base
    return r.base_prefix + _hash(r.files, None)


def image_key(zfs_line: str) -> str:
    return recipe(zfs_line).image_prefix + recipe_hash(zfs_line)


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
