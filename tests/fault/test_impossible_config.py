"""Configuration no one should write, and signals no one should send, against the real
`zfs-advisor serve` (a process on 127.0.0.1 replaying a lab recording):

- TLS versions this OpenSSL cannot negotiate (TLS10..TLS11: Debian 12's OpenSSL refuses TLS below
  1.2 at its default security level): refused at start with one line naming the file and the
  key, and refused by a reload, which keeps the running configuration;
- a TOML config file and a web config file nested 5,000 deep: one line, exit 2, no traceback;
- 1,000 SIGHUPs in 2-3 s: reloads coalesced (one running, at most one pending), so /healthz
  stays answered within 1 s and few reloads run.
"""
from __future__ import annotations

import http.client
import json
import os
import signal
import ssl
import statistics
import threading
import time
from pathlib import Path

import pytest

from advisor.cli import main
from support import HOSTS
from support.service import Service
from support.tls import make_certs
from support.waiting import wait_until

SNAPSHOT = HOSTS / "2.3.2" / "ssd-mirror2x2" / "idle"
DEEP = 5000
SIGNALS = 1000
SIGNAL_GAP_SECONDS = 0.002


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


def web_config(path: Path, certs, versions: str = "") -> Path:
    path.write_text(f"tls_server_config:\n  cert_file: {certs.server_cert}\n  key_file: {certs.server_key}\n{versions}")
    return path


def one_line_refusal(capsys, argv: list[str]) -> str:
    """The command's exit status must be 2 and its stderr one `zfs-advisor: ...` line: that line."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("zfs-advisor: ") and "Traceback" not in err, err
    return err


def test_tls_versions_openssl_cannot_negotiate_stop_start_up(tmp_path, certs, capsys, tally):
    path = web_config(tmp_path / "web.yml", certs, "  min_version: TLS10\n  max_version: TLS11\n")
    err = one_line_refusal(capsys, ["serve", "--root", str(SNAPSHOT), "--web.config.file", str(path)])
    tally.cases()
    tally.fault(str(path) in err and "tls_server_config.min_version TLS10 with max_version TLS11" in err)
    assert str(path) in err and "tls_server_config.min_version TLS10 with max_version TLS11" in err, err


def _log(service: Service) -> list[dict]:
    return [json.loads(line) for line in service.log.read_text().splitlines() if line.startswith("{")]


def _wait_for(service: Service, what: str, seconds: float = 30) -> dict:
    def found() -> list[dict]:
        assert service.proc.poll() is None, service.log.read_text()[-2000:]
        return [m for m in _log(service) if m["msg"].startswith(what)]

    return wait_until(found, seconds, lambda: f"{what!r} in the log: {service.log.read_text()[-2000:]}",
                      interval=0.1)[0]


def test_a_reload_to_tls_versions_openssl_cannot_negotiate_is_refused(tmp_path, certs, tally):
    path = web_config(tmp_path / "web.yml", certs)
    with Service(SNAPSHOT, tmp_path, "--web.config.file", str(path)) as service:
        web_config(path, certs, "  min_version: TLS10\n  max_version: TLS11\n")
        service.proc.send_signal(signal.SIGHUP)
        refused = _wait_for(service, "reload refused")
        client = ssl.create_default_context(cafile=certs.ca)
        conn = http.client.HTTPSConnection("127.0.0.1", service.port, timeout=10, context=client)
        conn.request("GET", "/healthz")
        status = conn.getresponse().status
        conn.close()
    ok = "min_version TLS10 with max_version TLS11" in refused["msg"] and status == 200
    tally.cases()
    tally.fault(ok)
    assert ok, (refused, status)


SERVE = ["serve", "--root", str(SNAPSHOT), "--web.config.file"]
FACTS = ["facts", "--root", str(SNAPSHOT), "--config"]


@pytest.mark.parametrize("argv, name, text", [
    (FACTS, "config.toml", "workloads = " + "[" * DEEP + "]" * DEEP + "\n"),
    (FACTS, "config.toml", "workloads = " + "{a = " * DEEP + "1" + "}" * DEEP + "\n"),
    (SERVE, "web.yml", "tls_server_config: " + "[" * DEEP + "]" * DEEP + "\n"),
    (SERVE, "web.yml", "basic_auth_users: " + "{a: " * DEEP + "b" + "}" * DEEP + "\n"),
], ids=["toml array", "toml inline table", "yaml sequence", "yaml mapping"])
def test_a_config_file_nested_5000_deep_is_one_line(tmp_path, capsys, argv, name, text, tally):
    path = tmp_path / name
    path.write_text(text)
    err = one_line_refusal(capsys, [*argv, str(path)])
    tally.cases()
    tally.fault(str(path) in err and "nested too deeply" in err)
    assert str(path) in err and "nested too deeply" in err, err


def _healthz(port: int) -> float:
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/healthz")
        assert conn.getresponse().status == 200
    finally:
        conn.close()
    return time.perf_counter() - started


def test_a_sighup_flood_is_coalesced(tmp_path, tally):
    env = {"ZFS_ADVISOR_LOG_LEVEL": "info", "ZFS_ADVISOR_STATE_DIR": str(tmp_path / "state")}
    with Service(SNAPSHOT, tmp_path, env=env) as service:
        _healthz(service.port)
        timings: list[float] = []
        flooding = threading.Event()

        def ask() -> None:
            while flooding.is_set():
                timings.append(_healthz(service.port))

        flooding.set()
        asker = threading.Thread(target=ask)
        asker.start()
        started = time.monotonic()
        for _ in range(SIGNALS):  # spaced, or the kernel merges them into one pending signal
            os.kill(service.proc.pid, signal.SIGHUP)
            time.sleep(SIGNAL_GAP_SECONDS)
        sent = time.monotonic() - started
        # until the reloads have settled: the count unchanged while /healthz answered twice more
        settled, count = 0, -1
        while settled < 2:
            now = sum(m["msg"].startswith("reloaded") for m in _log(service))
            settled, count = (settled + 1, now) if now == count else (0, now)
            _healthz(service.port)
            assert service.proc.poll() is None and time.monotonic() - started < 60
        flooding.clear()
        asker.join()
    p99 = sorted(timings)[int(0.99 * (len(timings) - 1))]
    ok = p99 < 1.0 and 1 <= count <= SIGNALS // 10
    print(f"{SIGNALS} SIGHUPs sent in {sent:.2f} s: {count} reloads; /healthz x{len(timings)} "
          f"p50 {statistics.median(timings) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, worst {max(timings) * 1000:.0f} ms")
    tally.cases(SIGNALS)
    tally.fault(ok)
    assert ok, (count, p99)
