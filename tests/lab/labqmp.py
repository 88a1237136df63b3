"""Change a running lab VM's disk throttles through qemu's QMP socket (qemu-qmp-ref(7),
`block_set_io_throttle`), so that one boot can measure an application at several throttles on
the same data: the setup at the layout's own throttle, each run at its scaled one.

    with QMP(vm.tmp / "qmp.sock") as qmp:
        qmp.set_throttle("d0", iops=15, bps=2_000_000)
"""
from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any


def throttle_command(drive: str, iops: int | None, bps: int | None) -> dict[str, Any]:
    """The QMP command giving `drive` a total IOPS and bytes/s limit (0 = none), as the command
    line's throttling.iops-total and throttling.bps-total do; the per-direction limits stay off."""
    zero = dict.fromkeys(("bps_rd", "bps_wr", "iops_rd", "iops_wr"), 0)
    return {"execute": "block_set_io_throttle",
            "arguments": {"device": drive, "iops": iops or 0, "bps": bps or 0, **zero}}


class QMPError(RuntimeError):
    pass


class QMP:
    def __init__(self, path: Path, timeout: float = 30):
        self.path, self.timeout = path, timeout
        self.sock: socket.socket | None = None
        self.reader: Any = None

    def __enter__(self) -> QMP:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(str(self.path))
        self.reader = self.sock.makefile("r")
        self._answer()  # the greeting
        self.call({"execute": "qmp_capabilities"})
        return self

    def __exit__(self, *exc: object) -> None:
        if self.reader:
            self.reader.close()
        if self.sock:
            self.sock.close()

    def _answer(self) -> dict[str, Any]:
        while True:  # events (e.g. a throttle's) may come before the answer
            msg = json.loads(self.reader.readline())
            if "event" not in msg:
                return msg

    def call(self, command: dict[str, Any]) -> Any:
        assert self.sock is not None
        self.sock.sendall(json.dumps(command).encode() + b"\n")
        answer = self._answer()
        if "error" in answer:
            raise QMPError(f"{command['execute']}: {answer['error'].get('desc', answer['error'])}")
        return answer.get("return")

    def set_throttle(self, drive: str, iops: int | None, bps: int | None) -> None:
        self.call(throttle_command(drive, iops, bps))

    def throttles(self) -> dict[str, tuple[int, int]]:
        """Each drive's (iops, bps) limits as qemu holds them now (query-block)."""
        return {b["device"]: (b["inserted"].get("iops", 0), b["inserted"].get("bps", 0))
                for b in self.call({"execute": "query-block"}) if "inserted" in b}
