"""The web config file (--web.config.file): checked at start-up with one-line errors, then TLS
and basic auth on the real server (`python -m advisor serve`), talked to by aiohttp's client
over TLS with certificates made by openssl for this run (tests/support/tls.py)."""
from __future__ import annotations

import base64
import contextlib
import ssl
from pathlib import Path

import aiohttp
import pytest

from advisor.cli import main
from advisor.config.settings import Settings, SettingsError
from advisor.config.webconfig import WebConfigError, load_web_config, parse_basic
from advisor.service.app import create_app
from support import RECORDING, REPO
from support.service import Service
from support.tls import bcrypt_hash, make_certs

PASSWORD = "correct horse battery staple"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def user_hash():
    return bcrypt_hash(PASSWORD)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def tls_yaml(certs, extra: str = "") -> str:
    return f"tls_server_config:\n  cert_file: {certs.server_cert}\n  key_file: {certs.server_key}\n{extra}"


# --- start-up checks ----------------------------------------------------------------------


@pytest.mark.parametrize("text, message", [
    ("tls_server_config: [\n", "not valid YAML at line"),
    ("- a\n- b\n", "expected a mapping"),
    ("tls_config: {}\n", "unknown key tls_config; valid: tls_server_config, basic_auth_users"),
    ("rate_limit: {interval: 1s, burst: 2}\n", "rate_limit is not supported by zfs-advisor"),
    ("basic_auth_users:\n  alice: plain-password\n", "basic_auth_users.alice: not a bcrypt hash"),
    ("basic_auth_users:\n  alice: $1$abc$0123456789\n", "basic_auth_users.alice: not a bcrypt hash"),
    ("basic_auth_users: [alice]\n", "basic_auth_users must be a mapping"),
    ("tls_server_config:\n  key_file: k\n", "tls_server_config.cert_file is required"),
    ("tls_server_config:\n  cert_file: /nonexistent/server.crt\n  key_file: /nonexistent/server.key\n",
     "tls_server_config.cert_file: /nonexistent/server.crt is not a file"),
])
def test_bad_files_are_one_line_errors(tmp_path, text, message):
    with pytest.raises(WebConfigError) as info:
        load_web_config(write(tmp_path / "web.yml", text))
    assert message in str(info.value) and "\n" not in str(info.value)
    assert str(tmp_path / "web.yml") in str(info.value)


@pytest.mark.parametrize("extra, message", [
    ("  client_auth_type: RequireAndVerifyClientCert\n", "tls_server_config.client_ca_file is required"),
    ("  client_auth_type: RequireAnyClientCert\n", "RequireAnyClientCert is not supported"),
    ("  client_auth_type: Sometimes\n", "valid: NoClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert"),
    ("  min_version: SSL3\n", "min_version 'SSL3' is not valid; valid: TLS10, TLS11, TLS12, TLS13"),
    ("  min_version: TLS13\n  max_version: TLS12\n", "min_version is above max_version"),
    ("  min_version: TLS10\n  max_version: TLS11\n", "min_version TLS10 with max_version TLS11: no TLS handshake"),
    ("  cipher_suites: [TLS_AES_128_GCM_SHA256]\n", "tls_server_config.cipher_suites is not supported"),
    ("  verify: yes\n", "unknown key tls_server_config.verify; valid: cert_file, key_file"),
])
def test_bad_tls_settings_are_one_line_errors(tmp_path, certs, extra, message):
    with pytest.raises(WebConfigError) as info:
        load_web_config(write(tmp_path / "web.yml", tls_yaml(certs, extra)))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_key_that_does_not_match_the_certificate_stops_start_up(tmp_path, certs):
    text = f"tls_server_config:\n  cert_file: {certs.server_cert}\n  key_file: {certs.client_key}\n"
    with pytest.raises(WebConfigError, match="cannot load cert_file .* with key_file"):
        load_web_config(write(tmp_path / "web.yml", text))


def test_serve_refuses_a_missing_file_in_one_line(tmp_path, capsys):
    assert main(["serve", "--root", str(RECORDING), "--web.config.file", str(tmp_path / "absent.yml")]) == 2
    err = capsys.readouterr().err
    assert err == f"zfs-advisor: web config {tmp_path / 'absent.yml'}: no such file\n"


def test_relative_names_are_relative_to_the_file_and_the_toolkit_example_loads(tmp_path, certs, user_hash):
    for cert in (certs.server_cert, certs.server_key):
        (tmp_path / cert.name).write_bytes(cert.read_bytes())
    config = load_web_config(write(tmp_path / "web.yml", (
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
        f"basic_auth_users:\n  alice: {user_hash}\n  bob: '{bcrypt_hash('other')}'\n")))
    assert config.tls.cert_file == tmp_path / "server.crt" and sorted(config.users) == ["alice", "bob"]
    assert load_web_config(write(tmp_path / "empty.yml", "")).tls is None  # the toolkit allows an empty file


def test_the_shipped_example_is_valid_once_its_files_exist(tmp_path, certs):
    text = (REPO / "deploy" / "web-config.example.yml").read_text()
    for name, source in (("server.crt", certs.server_cert), ("server.key", certs.server_key),
                         ("prometheus-ca.crt", certs.client_ca)):
        text = text.replace(f"/etc/zfs-advisor/tls/{name}", str(source))
    config = load_web_config(write(tmp_path / "web.yml", text))
    assert config.tls.client_auth_type == "RequireAndVerifyClientCert" and config.basic_auth


def test_parse_basic():
    encode = lambda s: "Basic " + base64.b64encode(s.encode()).decode()  # noqa: E731 - a one-line helper, read where it is used
    assert parse_basic(encode("alice:pa:ss")) == ("alice", "pa:ss")
    assert parse_basic(encode("no-colon")) is None
    assert parse_basic("Basic !!!") is None
    assert parse_basic("Bearer abc") is None and parse_basic(None) is None


# --- who may listen beyond loopback -------------------------------------------------------


def test_beyond_loopback_tls_with_basic_auth_replaces_the_token(tmp_path, certs, user_hash):
    both = write(tmp_path / "both.yml", tls_yaml(certs, f"basic_auth_users:\n  alice: {user_hash}\n"))
    create_app(Settings(root=str(RECORDING), listen_address="0.0.0.0", web_config_file=both))
    tls_only = write(tmp_path / "tls.yml", tls_yaml(certs))
    users_only = write(tmp_path / "users.yml", f"basic_auth_users:\n  alice: {user_hash}\n")
    for path, missing in ((tls_only, "basic_auth_users"), (users_only, "tls_server_config")):
        with pytest.raises(SettingsError, match=f"is not loopback: set api_token, or give .* {missing} "):
            create_app(Settings(root=str(RECORDING), listen_address="0.0.0.0", web_config_file=path))
        create_app(Settings(root=str(RECORDING), listen_address="0.0.0.0", web_config_file=path, api_token="t"))
    with pytest.raises(ValueError, match="set api_token, or web_config_file"):
        Settings(root=str(RECORDING), listen_address="0.0.0.0")


# --- the real server over TLS -------------------------------------------------------------


@pytest.fixture
def serve(tmp_path):
    """Start `python -m advisor serve` with a web config; yields its https base URL."""
    with contextlib.ExitStack() as stack:
        def start(web_config: Path, *extra: str) -> str:
            service = stack.enter_context(Service(RECORDING, tmp_path, "--web.config.file", str(web_config), *extra))
            return f"https://127.0.0.1:{service.port}"

        yield start


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def client_context(certs, cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(certs.ca))
    if cert:
        ctx.load_cert_chain(cert, key)
    return ctx


async def test_tls_and_basic_auth_on_every_endpoint(tmp_path, certs, user_hash, serve):
    base = serve(write(tmp_path / "web.yml", tls_yaml(certs, f"basic_auth_users:\n  alice: {user_hash}\n")),
                 "--config", str(write(tmp_path / "c.toml", 'api_token = "s3cret-token"\n')))
    alice = basic("alice", PASSWORD)
    async with aiohttp.ClientSession() as session:
        for path in ("/metrics", "/healthz", "/v1/facts", "/recommend?pool=tank&workload=postgres"):
            resp = await session.get(base + path, ssl=client_context(certs))
            assert resp.status == 401, path  # from loopback too, as node_exporter
            # both schemes it accepts, each a challenge (RFC 7617, RFC 6750)
            assert resp.headers.getall("WWW-Authenticate") == ['Basic realm="zfs-advisor", charset="UTF-8"',
                                                               'Bearer realm="zfs-advisor"']
            assert "basic auth" in (await resp.json())["error"]["reason"]
        resp = await session.get(base + "/metrics", ssl=client_context(certs), headers=basic("alice", "no"))
        assert resp.status == 401
        resp = await session.get(base + "/metrics", ssl=client_context(certs), headers=basic("eve", PASSWORD))
        assert resp.status == 401
        for _ in range(2):  # the second is answered from the verified-password cache
            resp = await session.get(base + "/metrics", ssl=client_context(certs), headers=alice)
            assert resp.status == 200 and "zfs_pool_health_state" in await resp.text()
        assert (await session.get(base + "/v1/facts", ssl=client_context(certs), headers=alice)).status == 200
        bearer = {"Authorization": "Bearer s3cret-token"}
        assert (await session.get(base + "/v1/facts", ssl=client_context(certs), headers=bearer)).status == 200
        # plain HTTP to the TLS port is not answered
        with pytest.raises(aiohttp.ClientError):
            await session.get(base.replace("https:", "http:") + "/healthz", headers=alice)
        # a client that does not trust the server's CA refuses it
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await session.get(base + "/healthz", ssl=ssl.create_default_context(), headers=alice)


async def test_client_certificates_when_required(tmp_path, certs, serve):
    extra = f"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {certs.client_ca}\n  min_version: TLS13\n"
    base = serve(write(tmp_path / "web.yml", tls_yaml(certs, extra)))
    async with aiohttp.ClientSession() as session:
        resp = await session.get(base + "/healthz", ssl=client_context(certs, certs.client_cert, certs.client_key))
        assert resp.status == 200
        for ctx in (client_context(certs), client_context(certs, certs.stranger_cert, certs.stranger_key)):
            with pytest.raises(aiohttp.ClientError):  # no certificate, or one the client CA did not sign
                resp = await session.get(base + "/healthz", ssl=ctx)
                await resp.read()
        old = client_context(certs, certs.client_cert, certs.client_key)
        old.maximum_version = ssl.TLSVersion.TLSv1_2
        with pytest.raises(aiohttp.ClientError):  # below min_version
            await session.get(base + "/healthz", ssl=old)
