"""A real Prometheus scrapes the real service over TLS with basic auth and a client certificate,
configured as its documentation says (scrape_config: scheme, basic_auth, tls_config), and
reports the target up; with a wrong password it reports it down with the server's 401."""
from __future__ import annotations

import pytest

from support import RECORDING
from support.service import Service
from support.tls import bcrypt_hash, make_certs

from .promserver import PrometheusServer

PASSWORD = "scrape-secret"


def web_config(tmp_path, certs) -> str:
    path = tmp_path / "web.yml"
    path.write_text(
        f"tls_server_config:\n  cert_file: {certs.server_cert}\n  key_file: {certs.server_key}\n"
        f"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {certs.client_ca}\n"
        f"basic_auth_users:\n  prometheus: {bcrypt_hash(PASSWORD)}\n"
    )
    return str(path)


def job(certs, password: str) -> str:
    return (
        "    scheme: https\n"
        f"    basic_auth:\n      username: prometheus\n      password: {password}\n"
        f"    tls_config:\n      ca_file: {certs.ca}\n      cert_file: {certs.client_cert}\n"
        f"      key_file: {certs.client_key}\n"
    )


@pytest.mark.parametrize("password, up", [(PASSWORD, 1), ("wrong", 0)], ids=["right-password", "wrong-password"])
def test_prometheus_scrapes_over_tls_with_basic_auth(tmp_path, password, up):
    certs = make_certs(tmp_path / "certs")
    with Service(RECORDING, tmp_path, "--web.config.file", web_config(tmp_path, certs)) as service:
        target = f"127.0.0.1:{service.port}"
        with PrometheusServer(tmp_path, targets=[target], job_options=job(certs, password)) as prom:
            prom.wait_for(f'up{{job="zfs-advisor"}} == {up}')
            if up:
                assert prom.wait_for("zfs_pool_health_state")
            else:
                active = prom.targets()
                assert "401" in active[0]["lastError"], active
