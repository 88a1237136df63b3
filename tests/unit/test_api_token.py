"""The API token: trusted loopback, a bearer token (constant-time) from anywhere else, and no
non-loopback listen address without one (a remote client: tests/support/remote.py).
"""
from __future__ import annotations

import socket

import pytest

from advisor.api.auth import is_loopback, token_matches
from advisor.config.settings import Settings, SettingsError, load_settings
from advisor.service.app import create_app
from support import RECORDING
from support.remote import REMOTE, seen_from_remote


async def remote_client(http_client, **settings):
    return await http_client(seen_from_remote(create_app(Settings(root=str(RECORDING), **settings))))


async def test_beyond_loopback_facts_need_the_token(http_client):
    client = await remote_client(http_client, api_token="s3cret-token")
    resp = await client.get("/v1/facts")
    assert resp.status == 401 and "Bearer" in (await resp.json())["error"]["reason"]
    assert (await client.get("/v1/facts", headers={"Authorization": "Bearer wrong"})).status == 401
    assert (await client.get("/v1/facts", headers={"Authorization": "Basic s3cret-token"})).status == 401
    assert (await client.get("/v1/facts", headers={"Authorization": "Bearer s3cret-token"})).status == 200
    assert (await client.get("/v1/probes")).status == 401


async def test_a_401_names_the_bearer_scheme_in_www_authenticate(http_client):
    """RFC 9110 11.6.1: a 401 carries WWW-Authenticate; RFC 6750 section 3: error="invalid_token"
    when a token was sent and is not the one."""
    client = await remote_client(http_client, api_token="s3cret-token")
    resp = await client.get("/v1/facts")
    assert resp.status == 401 and resp.headers.getall("WWW-Authenticate") == ['Bearer realm="zfs-advisor"']
    resp = await client.get("/v1/facts", headers={"Authorization": "Bearer wrong"})
    assert resp.headers.getall("WWW-Authenticate") == ['Bearer realm="zfs-advisor", error="invalid_token"']


def test_an_empty_token_is_refused_and_an_empty_bearer_matches_nothing():
    with pytest.raises(SettingsError, match="api_token is empty"):
        load_settings(None, listen_address="0.0.0.0", api_token="")
    for header in ("Bearer", "Bearer ", "Bearer    ", "bearer\t"):
        assert not token_matches(header, "") and not token_matches(header, "abc")


async def test_beyond_loopback_health_and_metrics_stay_open(http_client):
    client = await remote_client(http_client, api_token="s3cret-token")
    assert (await client.get("/healthz")).status == 200
    assert (await client.get("/metrics")).status == 200


async def test_without_a_token_only_loopback_is_answered(http_client):
    client = await remote_client(http_client)
    resp = await client.get("/recommend", params={"workload": "postgres"})
    assert resp.status == 403 and (await resp.json())["error"]["status"] == 403


async def test_loopback_needs_no_token(http_client):
    client = await http_client(create_app(Settings(root=str(RECORDING), api_token="s3cret-token")))
    assert (await client.get("/v1/facts")).status == 200


@pytest.mark.parametrize("address", ["0.0.0.0", "::", "192.0.2.7", "example.org"])
def test_a_non_loopback_listen_address_needs_a_token(address):
    with pytest.raises(SettingsError, match="not loopback: set api_token"):
        load_settings(None, listen_address=address)
    assert load_settings(None, listen_address=address, api_token="t").listen_address == address


@pytest.mark.parametrize("address", ["127.0.0.1", "127.0.0.53", "::1", "[::1]", "localhost"])
def test_loopback_listen_addresses_need_none(address):
    assert load_settings(None, listen_address=address).api_token is None


def test_helpers():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and not is_loopback(REMOTE)
    assert not is_loopback(None) and not is_loopback("not-an-address")
    assert token_matches("Bearer abc", "abc") and token_matches("bearer  abc ", "abc")
    assert not token_matches(None, "abc") and not token_matches("Bearer abcd", "abc")


@pytest.mark.parametrize("host, status", [
    ("rebind.attacker.example", 403), ("rebind.attacker.example:21134", 403), ("localhost.attacker.example", 403),
    ("localhost", 200), ("LOCALHOST:21134", 200), ("zfs.localhost", 200), ("127.0.0.1:21134", 200),
    ("[::1]:21134", 200), ("192.0.2.10", 200), (socket.gethostname(), 200),
])
async def test_loopback_is_trusted_only_under_a_name_of_this_host(http_client, host, status):
    """A page whose name an attacker re-points at 127.0.0.1 (DNS rebinding) sends its own name
    as Host: trusted loopback does not answer it; the token still does."""
    client = await http_client(create_app(Settings(root=str(RECORDING), api_token="s3cret-token")))
    resp = await client.get("/v1/facts", headers={"Host": host})
    assert resp.status == status
    if status == 403:
        error = (await resp.json())["error"]
        assert "does not name this host" in error["reason"] and "localhost" in error["valid"]
        assert (await client.get("/metrics", headers={"Host": host})).status == 403
        token = {"Host": host, "Authorization": "Bearer s3cret-token"}
        assert (await client.get("/v1/facts", headers=token)).status == 200
