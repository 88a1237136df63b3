"""The fleet reader's [fleet] TLS and authentication against a real Prometheus (Debian's
`prometheus`, its --web.config.file: a certificate of a CA made here with openssl, and a basic
auth user), which scrapes two sibling daemons' /metrics (the real app over the lab's probes,
tests/support/fleet.py).  The right CA and password: the answer cites the siblings.  A wrong
password, a wrong CA, or a bearer token where Prometheus asks for basic auth: a counted failure,
and /recommend answers exactly as without a fleet.  Prometheus's web config offers TLS and basic
auth only; a bearer token is checked by what sits in front of it (Mimir, a proxy), not run here."""
from __future__ import annotations

import asyncio
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from aiohttp.test_utils import TestClient, TestServer

from advisor.api.appkeys import FLEET
from advisor.config.settings import Settings
from advisor.service.app import create_app
from support import RECORDING
from support.fleet import store_sibling_probes
from support.tls import bcrypt_hash, make_certs

from .promserver import PrometheusServer

pytestmark = pytest.mark.skipif(shutil.which("prometheus") is None, reason="Debian's prometheus is not installed")

USER, PASSWORD = "advisor", "fleet-secret"
QUERY = {"workload": "postgres", "pool": "tank"}


async def _metrics(state_dir) -> str:
    async with TestClient(TestServer(create_app(Settings(root=str(RECORDING), state_dir=str(state_dir))))) as client:
        return await (await client.get("/metrics")).text()


def _serve(text: str) -> ThreadingHTTPServer:
    """A sibling's recorded /metrics on a loopback port, in a thread."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = text.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """(the Prometheus, its certificates, the siblings' instances, a directory for secrets)."""
    tmp = tmp_path_factory.mktemp("fleet-auth")
    servers = []
    for repeat in (1, 2):
        store_sibling_probes(tmp / f"sibling-{repeat}", repeat, ("128K", "8K", "16K"))
        servers.append(_serve(asyncio.run(_metrics(tmp / f"sibling-{repeat}"))))
    targets = [f"127.0.0.1:{s.server_address[1]}" for s in servers]
    certs = make_certs(tmp / "certs")
    web = tmp / "web.yml"
    web.write_text(f"tls_server_config:\n  cert_file: {certs.server_cert}\n  key_file: {certs.server_key}\n"
                   f"basic_auth_users:\n  {USER}: {bcrypt_hash(PASSWORD)}\n")
    try:
        with PrometheusServer(tmp, targets=targets, web_config=web, basic_auth=(USER, PASSWORD)) as prom:
            prom.wait_for("count(zfs_advisor_probe_repeat_iops) == 6")
            yield prom, certs, targets, tmp
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


def _secret(directory, name: str, text: str) -> str:
    path = directory / name
    path.write_text(text + "\n")
    return str(path)


async def _first_reading(app, timeout: float = 60.0) -> None:
    """Until the reader's first reading at start-up has succeeded or failed."""
    for _ in range(int(timeout * 10)):
        if app[FLEET].view is not None or app[FLEET].failures:
            return
        await asyncio.sleep(0.1)
    raise TimeoutError("the fleet reader did not read")


async def _answer(http_client, tmp_path, fleet_settings: dict | None) -> tuple[dict, object]:
    settings = Settings(root=str(RECORDING), state_dir=str(tmp_path / "own"),
                        **({"fleet": fleet_settings} if fleet_settings else {}))
    app = create_app(settings)
    client = await http_client(app)
    if fleet_settings:
        await _first_reading(app)
    answer = await (await client.get("/recommend", params=QUERY)).json()
    return answer, app[FLEET] if fleet_settings else None


def _recordsize(answer: dict) -> dict:
    [found] = [r for r in answer["recommendations"] if r["parameter"] == "recordsize"]
    return found


@pytest.mark.parametrize("tls", ["ca_file", "insecure_skip_verify"])
async def test_the_right_password_and_certificate_read_the_siblings(fleet, http_client, tmp_path, tls):
    prom, certs, targets, secrets = fleet
    options = {"ca_file": str(certs.ca)} if tls == "ca_file" else {"insecure_skip_verify": True}
    answer, reader = await _answer(http_client, tmp_path, {
        "prometheus_url": prom.url, "instance": "this-host:21134", "basic_auth_username": USER,
        "basic_auth_password_file": _secret(secrets, "right", PASSWORD), **options})
    assert reader.failures == 0 and {r.instance for r in reader.view.runs} == set(targets)
    cited = [e["description"] for e in _recordsize(answer)["evidence"] if "sibling pools" in e["description"]]
    assert cited and all(t in cited[0] for t in targets)


WRONG = {
    "wrong password": lambda certs, secrets: {"ca_file": str(certs.ca), "basic_auth_username": USER,
                                              "basic_auth_password_file": _secret(secrets, "wrong", "not-it")},
    "wrong CA": lambda certs, secrets: {"ca_file": str(certs.client_ca), "basic_auth_username": USER,
                                        "basic_auth_password_file": _secret(secrets, "right", PASSWORD)},
    "bearer token for basic auth": lambda certs, secrets: {"ca_file": str(certs.ca),
                                                           "bearer_token_file": _secret(secrets, "token", PASSWORD)},
}


@pytest.mark.parametrize("case", sorted(WRONG))
async def test_a_refused_reading_is_counted_and_leaves_the_answer_as_without_a_fleet(fleet, http_client, tmp_path,
                                                                                      case):
    prom, certs, _, secrets = fleet
    answer, reader = await _answer(http_client, tmp_path, {"prometheus_url": prom.url, "instance": "this-host:21134",
                                                           **WRONG[case](certs, secrets)})
    assert reader.view is None and reader.failures >= 1
    assert ("401" in reader.last_error) if case != "wrong CA" else ("certificate" in reader.last_error.lower())
    assert PASSWORD not in reader.last_error and "not-it" not in reader.last_error
    without, _ = await _answer(http_client, tmp_path, None)
    assert answer["recommendations"] == without["recommendations"]
