"""The real app through aiohttp's test client."""
import pytest

from advisor.config.settings import Settings
from advisor.service.app import create_app


@pytest.fixture
async def client(http_client, tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "meminfo").write_text("MemTotal:  1024 kB\n")
    return await http_client(create_app(Settings(root=str(tmp_path))))


async def test_healthz_is_json_and_cheap(client):
    resp = await client.get("/healthz")
    assert resp.status == 200
    body = await resp.json()
    assert body["status"] == "ok"
    # what the last collection saw, if one has run yet: the service's own first one runs in the
    # background from the start and may have finished (a loaded CI host); /healthz forces none
    assert "zfs" not in body or body["zfs"]["present"] is False
    await client.get("/v1/facts")
    body = await (await client.get("/healthz")).json()
    assert body["zfs"]["present"] is False


async def test_facts_endpoint(client):
    resp = await client.get("/v1/facts")
    assert resp.status == 200
    facts = await resp.json()
    assert facts["memory_bytes"] == 1024 * 1024 and facts["zfs"]["present"] is False


@pytest.mark.parametrize("path", ["/nope", "/" + "x" * 5000, "/v1/facts/../../etc/passwd", "/%00"])
async def test_unknown_paths_are_json_404_with_the_valid_ones(client, path):
    resp = await client.get(path)
    assert resp.status == 404
    body = await resp.json()
    assert "/healthz" in body["error"]["valid"]


async def test_wrong_method_is_json_405(client):
    resp = await client.delete("/healthz")
    assert resp.status == 405
    assert (await resp.json())["error"]["valid"] == ["GET", "HEAD"]
    assert resp.headers["Allow"] == "GET, HEAD"  # RFC 9110: a 405 names the allowed methods
