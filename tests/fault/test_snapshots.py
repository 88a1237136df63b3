"""Broken host snapshots: one line that says what is wrong, never a traceback, never a read
outside the snapshot.

Each case damages a copy of a recorded lab snapshot the way a bad copy, a hand edit or a
hostile archive would, then runs `zfs-advisor facts --root COPY` as a user does. The
command must either work (output it cannot decode is data, not a crash) or exit non-zero
with a single `zfs-advisor: ...` line on stderr. Escapes (`../../etc/hostname`, symlinks)
are refused, so no byte from outside the snapshot reaches the facts.
"""
from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.host.files import HostFiles
from support import HOSTS

SNAPSHOT = HOSTS / "2.1.11" / "ssd-mirror2x2" / "idle"
SECRET = "outside-the-snapshot-7f3a"


def _manifest(root: Path) -> dict:
    return json.loads((root / "manifest.json").read_text())


def _save(root: Path, manifest: dict) -> None:
    (root / "manifest.json").write_text(json.dumps(manifest))


def _edit(change: Callable[[dict], None]) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        manifest = _manifest(root)
        change(manifest)
        _save(root, manifest)
    return apply


def _first_command(m: dict) -> dict:
    return m["commands"][1]  # zpool get


def _delete_output(root: Path) -> None:
    (root / _first_command(_manifest(root))["stdout_file"]).unlink()


def _symlink_hostname(root: Path) -> None:
    link = root / "proc/sys/kernel/hostname"
    link.unlink()
    link.symlink_to(root.parent / "secret")


def _listing_escape(m: dict) -> None:
    m["listings"]["/sys/block"] = ["..", "sda"]


# name -> (damage, "works" or the words the one-line error must hold)
CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "command output deleted": (_delete_output, "cannot be read"),
    "manifest names a missing output": (_edit(lambda m: _first_command(m).update(stdout_file="commands/999.out")),
                                        "cannot be read"),
    "manifest names a missing file": (_edit(lambda m: m["files"].append("/proc/spl/kstat/zfs/gone")), "missing"),
    "output path escapes": (_edit(lambda m: _first_command(m).update(stdout_file="../../../../../../etc/hostname")),
                            "outside the snapshot"),
    "output path absolute": (_edit(lambda m: _first_command(m).update(stdout_file="/etc/hostname")),
                             "outside the snapshot"),
    "host path escapes": (_edit(lambda m: m["files"].append("/../../../../etc/hostname")), "leaves the snapshot"),
    "listing escapes": (_edit(_listing_escape), "not a file name"),
    "symlink out": (_symlink_hostname, "symlink out of the snapshot"),
    "manifest not JSON": (lambda r: (r / "manifest.json").write_text("{ not json"), "invalid manifest"),
    "manifest cut short": (lambda r: (r / "manifest.json").write_bytes((r / "manifest.json").read_bytes()[:200]),
                           "invalid manifest"),
    "manifest not UTF-8": (lambda r: (r / "manifest.json").write_bytes(b"\xff\xfe{}"), "invalid manifest"),
    "manifest wrong types": (_edit(lambda m: m.update(commands="none")), "invalid manifest"),
    "manifest missing": (lambda r: (r / "manifest.json").unlink(), "works"),  # a plain root of files
    "manifest a directory": (lambda r: ((r / "manifest.json").unlink(), (r / "manifest.json").mkdir()),
                             "cannot read"),
    "output not UTF-8": (lambda r: (r / _first_command(_manifest(r))["stdout_file"]).write_bytes(b"tank\tsize\t\xff\xfe\t-\n"),
                         "works"),
    "kstat not UTF-8": (lambda r: (r / "proc/spl/kstat/zfs/arcstats").write_bytes(b"\x80\x81\xfe\xff" * 100), "works"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_broken_snapshot_is_one_line_not_a_traceback(case, tmp_path, capsys, tally):
    root = tmp_path / "snapshot"
    shutil.copytree(SNAPSHOT, root)
    (tmp_path / "secret").write_text(SECRET + "\n")
    damage, expect = CASES[case]
    damage(root)
    code = main(["facts", "--json", "--root", str(root)])
    out, err = capsys.readouterr()
    if expect == "works":
        survived = code == 0 and SECRET not in out and json.loads(out)["zfs"]
    else:
        lines = err.strip().splitlines()
        survived = code != 0 and len(lines) == 1 and lines[0].startswith("zfs-advisor: ") and expect in lines[0]
    tally.cases()
    tally.fault(bool(survived) and "Traceback" not in err and SECRET not in out + err)
    assert "Traceback" not in err and SECRET not in out + err
    assert survived, (code, err[-500:])


@pytest.mark.parametrize("host_path", ["/../../etc/hostname", "/proc/../../../etc/hostname", "/sys/./../../etc/hostname",
                                       "/proc//..//..//etc/hostname"])
def test_the_file_view_never_leaves_its_root(tmp_path, host_path):
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "hostname").write_text("inside\n")
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "hostname").write_text(SECRET)
    files = HostFiles(root)
    assert files.read_text(host_path) == "inside\n"  # `..` stops at the root, as at '/'
    assert files.exists(host_path) and files.path(host_path) == root / "etc" / "hostname"


def test_nul_in_a_host_path_is_no_such_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        HostFiles(tmp_path).read_text("/proc/\0/etc")


def test_snapshot_files_are_replayed_not_followed_outside(tmp_path):
    """Sanity of the fixture copy: the intact snapshot replays with exit 0 (so each case
    above fails because of its damage alone)."""
    root = tmp_path / "snapshot"
    shutil.copytree(SNAPSHOT, root)
    assert main(["facts", "--root", str(root)]) == 0
    assert not any(p.is_symlink() for p in root.rglob("*")) and os.path.isdir(root / "commands")
