"""Fixtures for every tier (the helpers they share are in tests/support/)."""
from __future__ import annotations

import pytest
from support import HOSTS, recorded_snapshots


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tables of tests over the recorded snapshots would silently be empty without them."""
    if not recorded_snapshots():
        raise pytest.UsageError(f"no recorded host snapshots under {HOSTS}")


@pytest.fixture
async def http_client():
    """Start a real app on a loopback port and talk to it over HTTP.

    Usage: `client = await http_client(create_app(settings))`.
    """
    from aiohttp.test_utils import TestClient, TestServer

    clients = []

    async def start(app, **session):  # session: ClientSession options (auto_decompress=False)
        client = TestClient(TestServer(app), **session)
        await client.start_server()
        clients.append(client)
        return client

    yield start
    for client in clients:
        await client.close()
