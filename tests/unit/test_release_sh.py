"""deploy/release.sh on this host: the switch in one rename, the answer check, the rollback.

The functions install.sh and the Debian package's postinst use, sourced by bash as they source
them, without systemd (its background-process path: a pid file and a log), in a prefix under
tmp_path. Each release is a real venv made as release_build makes it (`python -m venv
--without-pip`) whose `bin/zfs-advisor` is a console script as pip writes it (the shebang names
the release's own python), serving a recorded host. Instead of pip installing the wheels, a .pth
file puts this checkout and the test venv's packages on the release's path: the switch,
the answer check and the rollback are what is tested here; release_build's pip run is the lab's
(tests/lab/test_systemd.py, tests/lab/test_install_sh.py).

A broken release is one whose dependencies are missing (no test venv packages on its path): it
fails at its first import, as an upgrade with a missing wheel would.
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import sysconfig
import textwrap
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RELEASE_SH = ROOT / "deploy" / "release.sh"
SNAPSHOT = ROOT / "tests" / "fixtures" / "hosts" / "2.3.2" / "ssd-mirror2x2" / "idle"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Host:
    def __init__(self, tmp_path: Path):
        self.prefix = tmp_path / "opt"
        self.run_dir = tmp_path / "run"
        self.run_dir.mkdir()
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        (tmp_path / "config.toml").write_text("")
        self.env = {"ZFS_ADVISOR_CONFIG": str(tmp_path / "config.toml"), "ZFS_ADVISOR_PORT": str(self.port),
                    "ZFS_ADVISOR_STATE_DIR": str(tmp_path / "state")}

    def release(self, name: str, *, broken: bool = False) -> Path:
        path = self.prefix / "releases" / name
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
        site = subprocess.run([path / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                              capture_output=True, text=True, check=True).stdout.strip()
        paths = [str(ROOT)] if broken else [str(ROOT), sysconfig.get_path("purelib"), sysconfig.get_path("platlib")]
        Path(site, "test-checkout.pth").write_text("\n".join(paths) + "\n")
        script = path / "bin" / "zfs-advisor"
        script.write_text(textwrap.dedent(f"""\
            #!{path}/bin/python
            import os, sys
            os.environ.update({self.env!r})
            sys.argv += ["--root", {str(SNAPSHOT)!r}]
            from advisor.cli import main
            sys.exit(main())
            """))
        script.chmod(0o755)
        return path

    def bash(self, steps: str) -> subprocess.CompletedProcess:
        """The steps after release.sh is sourced (PREFIX set first, as its callers do), systemd out of the way."""
        script = (f'set -u\nPREFIX={self.prefix}\nsource {RELEASE_SH}\nunder_systemd() {{ return 1; }}\n'
                  f'PIDFILE={self.run_dir}/zfs-advisor.pid\nLOG={self.run_dir}/zfs-advisor.log\n{steps}\n')
        return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)

    def upgrade(self, new: Path) -> subprocess.CompletedProcess:
        """What install.sh does once the new release is built."""
        return self.bash(f"RELEASE_NEW={new}\nrelease_switch {new}\nrelease_start\nrelease_finish {new} {self.url}")

    def current(self) -> Path:
        return Path(os.readlink(self.prefix / "venv"))

    def pid(self) -> int:
        return int((self.run_dir / "zfs-advisor.pid").read_text())

    def serving(self) -> Path:
        """The release whose process answers (its argv[0], the shebang's python), after a 200 from /healthz."""
        with urllib.request.urlopen(self.url + "/healthz", timeout=5) as r:
            assert r.status == 200
        return Path(Path(f"/proc/{self.pid()}/cmdline").read_bytes().split(b"\0")[0].decode()).parents[1]

    def stop(self) -> None:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError, ValueError):  # not running: nothing to stop
            os.kill(self.pid(), signal.SIGTERM)


@pytest.fixture
def host(tmp_path):
    h = Host(tmp_path)
    yield h
    h.stop()


def test_a_failed_upgrade_is_rolled_back_and_the_next_one_prunes(host):
    first = host.release("0.1.0")
    started = host.bash(f"_release_point {first}\nrelease_start\nrelease_answers {host.url} {first}/bin/python")
    assert started.returncode == 0, started
    assert host.serving() == first
    first_pid = host.pid()

    broken = host.release("0.1.1", broken=True)
    failed = host.upgrade(broken)
    # release_finish waited its 30 s for an answer, switched back and restarted the one before
    assert failed.returncode == 1, failed
    assert f"the new version ({broken}) did not answer within 30 s; rolled back to the one before ({first})" \
        in failed.stderr, failed
    assert host.current() == first and host.serving() == first and host.pid() != first_pid
    assert broken.is_dir()  # kept for a look
    log = (host.run_dir / "zfs-advisor.log").read_text()
    assert "ModuleNotFoundError" in log, log[-2000:]  # the broken release's own words, for the user to read

    fixed = host.release("0.1.2")
    upgraded = host.upgrade(fixed)
    assert upgraded.returncode == 0, upgraded
    assert host.current() == fixed and host.serving() == fixed
    # the running release and the one before it are kept, the broken one pruned
    assert sorted(p.name for p in (host.prefix / "releases").iterdir()) == ["0.1.0", "0.1.2"]


def test_the_switch_is_one_rename_of_a_symlink(host):
    """`mv -T` of a new symlink over the old: at no moment is there no $PREFIX/venv."""
    first, second = host.release("a"), host.release("b")
    assert host.bash(f"_release_point {first}").returncode == 0
    inode_before = os.lstat(host.prefix / "venv").st_ino
    switched = host.bash(f"release_switch {second}\necho \"$RELEASE_PREVIOUS\"")
    assert switched.returncode == 0, switched
    assert switched.stdout.strip() == str(first)
    assert host.current() == second and os.lstat(host.prefix / "venv").st_ino != inode_before
    assert not (host.prefix / "venv.next").exists()
