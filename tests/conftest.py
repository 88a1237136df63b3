"""Fixtures for every tier (the helpers they share are in tests/support/)."""
from __future__ import annotations

import logging

import pytest

from support import HOSTS, recorded_snapshots


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tables of tests over the recorded snapshots would silently be empty without them."""
    if not recorded_snapshots():
        raise pytest.UsageError(f"no recorded host snapshots under {HOSTS}")


@pytest.fixture(autouse=True)
def _root_logging_restored():
    """A test that runs a CLI command sets the root logger's handler to its own captured stderr
    (advisor/process/logs.py setup_logging); pytest closes that stream after the test, and a thread of a
    later test (the model fit) that logs would write to it ("--- Logging error ---").  So the
    root logger's handlers and level are put back after every test."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


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
