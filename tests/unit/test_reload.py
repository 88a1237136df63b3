"""SIGHUP reloads the configuration of a running `zfs-advisor serve` (advisor/service/reload.py).

A real service process on a recorded lab host: the config file and the web config file are
rewritten, the process gets SIGHUP, and what it then answers (over real HTTP and TLS) and logs
is checked. Before the reload existed, SIGHUP ended the process (and systemd counted that as a
clean exit, so Restart=on-failure did not bring it back).
"""
from __future__ import annotations

import base64
import json
import signal
import ssl
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from support import REPO
from support.service import Service
from support.tls import bcrypt_hash, make_certs
from support.waiting import wait_until

HOST = REPO / "tests" / "fixtures" / "hosts" / "2.3.2" / "ssd-mirror2x2" / "idle"


def messages(service: Service) -> list[dict]:
    return [json.loads(line) for line in service.log.read_text().splitlines() if line.startswith("{")]


def hup_and_wait(service: Service, done: str) -> list[dict]:
    """SIGHUP, then the log records that begin with `done` ("reloaded" or "reload refused")."""
    before = len([m for m in messages(service) if m["msg"].startswith(done)])
    service.proc.send_signal(signal.SIGHUP)

    def new_records() -> list[dict]:
        assert service.proc.poll() is None, f"the service exited on SIGHUP: {service.log.read_text()[-2000:]}"
        return [m for m in messages(service) if m["msg"].startswith(done)][before:]

    return wait_until(new_records, 30, lambda: f"{done!r} in the log: {service.log.read_text()[-2000:]}",
                      interval=0.1)


def get(url: str, headers: dict[str, str] | None = None, context: ssl.SSLContext | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60, context=context) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        with exc:  # it holds the connection
            return exc.code, exc.read().decode()


def metrics(service: Service) -> str:
    def collected() -> str | None:  # the first collection may still be under way
        status, body = get(f"http://127.0.0.1:{service.port}/metrics")
        return body if status == 200 and "zfs_pool_health_state" in body else None

    return wait_until(collected, 60, "/metrics with the first collection's pools", interval=0.5)


def test_sighup_applies_workloads_and_metrics_settings_keeps_the_port_and_refuses_a_bad_file(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('log_level = "info"\n')
    with Service(HOST, tmp_path, "--config", str(config), env={}) as service:
        assert 'workload="postgres"' not in metrics(service)

        # port = 1 is overridden by --port, as at start; commands_interval_seconds needs a restart
        config.write_text('log_level = "info"\nport = 1\ncommands_interval_seconds = 60\nmetrics_dataset_exclude = "tank/media"\n'
                          '[workloads]\n"tank/pg" = "postgres"\n')
        [done] = hup_and_wait(service, "reloaded")
        assert done["applied"] == ["metrics_dataset_exclude", "workloads"]
        kept = [m["msg"] for m in messages(service) if m["msg"].startswith("reload: ")]
        assert kept == ["reload: commands_interval_seconds (a restart applies it; running with '15.0') changed but "
                        "cannot change while running: kept"]
        body = metrics(service)  # still on the port it started on
        assert 'zfs_advisor_workload_dataset_missing{dataset="tank/pg",workload="postgres"} 0.0' in body
        assert 'name="tank/media"' not in body and 'name="tank/pg"' in body

        config.write_text('[workloads]\n"tank/pg" = "postgress"\n')
        [refused] = hup_and_wait(service, "reload refused")
        assert "'postgress' is not a workload; valid:" in refused["msg"] and "postgres" in refused["msg"]
        body = metrics(service)
        assert 'zfs_advisor_workload_dataset_missing{dataset="tank/pg",workload="postgres"} 0.0' in body
        assert service.proc.poll() is None


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def test_sighup_loads_a_renewed_certificate_and_changed_users_and_keeps_the_client_ca(tmp_path):
    old, new = make_certs(tmp_path / "old"), make_certs(tmp_path / "new")
    web = tmp_path / "web.yml"

    def write_web(certs, users: dict[str, str], client_ca: Path | None = None) -> None:
        lines = ["tls_server_config:", f"  cert_file: {certs.server_cert}", f"  key_file: {certs.server_key}"]
        if client_ca:
            lines += ["  client_auth_type: VerifyClientCertIfGiven", f"  client_ca_file: {client_ca}"]
        lines += ["basic_auth_users:", *(f"  {u}: '{bcrypt_hash(p)}'" for u, p in users.items())]
        web.write_text("\n".join(lines) + "\n")

    write_web(old, {"alice": "first"})
    trust_both = ssl.create_default_context(cafile=str(old.ca))
    trust_both.load_verify_locations(cafile=str(new.ca))
    with Service(HOST, tmp_path, "--web.config.file", str(web), env={}) as service:
        url = f"https://127.0.0.1:{service.port}/healthz"
        served = ssl.get_server_certificate(("127.0.0.1", service.port))
        assert served.strip() == old.server_cert.read_text().strip()
        assert get(url, basic("alice", "first"), trust_both)[0] == 200

        write_web(new, {"bob": "second"}, client_ca=new.client_ca)
        [done] = hup_and_wait(service, "reloaded")
        assert done["applied"] == ["basic_auth_users", "tls_server_config certificate"]
        served = ssl.get_server_certificate(("127.0.0.1", service.port))
        assert served.strip() == new.server_cert.read_text().strip()
        assert get(url, basic("alice", "first"), trust_both)[0] == 401
        assert get(url, basic("bob", "second"), trust_both)[0] == 200
        kept = [m["msg"] for m in messages(service) if m["msg"].startswith("reload: tls_server_config client")]
        assert len(kept) == 1

        web.write_text("tls_server_config:\n  cert_file: /nonexistent.crt\n  key_file: /nonexistent.key\n")
        [refused] = hup_and_wait(service, "reload refused")
        assert "/nonexistent.crt" in refused["msg"]
        assert get(url, basic("bob", "second"), trust_both)[0] == 200


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_sigint_still_stop_it_cleanly(tmp_path, sig):
    with Service(HOST, tmp_path, env={}) as service:
        service.proc.send_signal(sig)
        assert service.proc.wait(timeout=30) == 0
        assert any(m["msg"] == "shutting down" for m in messages(service))
