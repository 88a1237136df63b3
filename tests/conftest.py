"""Fixtures for every tier (the helpers they share are in tests/support/)."""
from __future__ import annotations

from pathlib import Path

import pytest
from support import HOSTS, recorded_snapshots


@pytest.fixture(scope="session")
def snapshots() -> list[Path]:
    found = recorded_snapshots()
    if not found:
        pytest.fail(f"no recorded host snapshots under {HOSTS}")
    return found


@pytest.fixture
async def http_client():
    """Start a real app on a loopback port and talk to it over HTTP.

    Usage: `client = await http_client(create_app(settings))`.
    """
    from aiohttp.test_utils import TestClient, TestServer

    clients = []

    async def start(app):
        client = TestClient(TestServer(app))
        await client.start_server()
        clients.append(client)
        return client

    yield start
    for client in clients:
        await client.close()
