"""The real service as a process: `python -m advisor serve` on a free loopback port.

    with Service(snapshot, log_dir, "--web.config.file", path) as service:
        service.port   # bound and accepting connections (TLS, if any, is negotiated per connection)
"""
from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
from pathlib import Path

from support import REPO
from support.waiting import poll


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Service:
    def __init__(self, root: Path, log_dir: Path, *args: str, env: dict[str, str] | None = None,
                 nofile: int | None = None):
        """`env`: ZFS_ADVISOR_* variables instead of the default (log level warning); `nofile`: the
        process's RLIMIT_NOFILE (soft and hard)."""
        self.env = {"ZFS_ADVISOR_LOG_LEVEL": "warning"} if env is None else env
        self.nofile = nofile
        self.port = free_port()
        self.argv = [sys.executable, "-m", "advisor", "serve", "--root", str(root), "--port", str(self.port), *args]
        self.log = Path(log_dir) / f"serve-{self.port}.log"
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Service:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("ZFS_ADVISOR_")}
        env = {**clean, "PYTHONPATH": str(REPO), **self.env}
        limit = None if self.nofile is None else (lambda: resource.setrlimit(resource.RLIMIT_NOFILE,
                                                                              (self.nofile, self.nofile)))
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(self.argv, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                         preexec_fn=limit)
        if poll(self._listening_or_gone, 60, interval=0.1) and self.proc.poll() is None:
            return self
        self.__exit__()
        raise RuntimeError(f"the service did not start: {self.log.read_text()[-3000:]}")

    def _listening_or_gone(self) -> bool:
        """True once the port takes a connection, or the process has exited (no use waiting)."""
        assert self.proc is not None
        if self.proc.poll() is not None:
            return True
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
