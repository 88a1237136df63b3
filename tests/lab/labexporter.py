"""The daemon in the lab VM, reachable from the host: `advisor serve` started in the VM (the working
copy shared at /project) and an ssh tunnel to its port, for a Prometheus on the host to scrape."""
from __future__ import annotations

import contextlib
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from advisor.config.settings import DEFAULT_PORT

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
from promserver import free_port  # noqa: E402 - after the sys.path line above

PY = "PYTHONPATH=/project /opt/zfs-advisor-venv/bin/python"
PORT = DEFAULT_PORT


@contextlib.contextmanager
def exporter_in_vm(vm, env: dict[str, str] | None = None, port: int = PORT) -> Iterator[str]:
    """Start `advisor serve` in the VM with `env` (ZFS_ADVISOR_* settings), wait for /healthz,
    and yield the host-side address (127.0.0.1:PORT) of a tunnel to it; stop both on exit."""
    assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items())
    vm.exec(f"nohup env {assignments} {PY} -m advisor serve --port {port} >/root/advisor.log 2>&1 & "
            f"echo $! >/root/advisor.pid", check=True)
    vm.exec(f"{PY} -c 'import time, urllib.request as u\n"
            f"for _ in range(120):\n"
            f"    try: u.urlopen(\"http://127.0.0.1:{port}/healthz\").read(); break\n"
            f"    except OSError: time.sleep(1)\n"
            f"else: raise SystemExit(1)'", timeout=180).check("advisor serve in the VM")
    local = free_port()
    ssh = vm._ssh_base()
    tunnel = subprocess.Popen([*ssh[:-1], "-N", "-L", f"127.0.0.1:{local}:127.0.0.1:{port}", ssh[-1]],
                              stdin=subprocess.DEVNULL)
    try:
        yield f"127.0.0.1:{local}"
    finally:
        tunnel.terminate()
        tunnel.wait(timeout=10)
        vm.exec("kill $(cat /root/advisor.pid)", timeout=60)
