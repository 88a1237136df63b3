"""Shared test helpers: where the recorded host snapshots live."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
HOSTS = Path(os.environ.get("ZFS_ADVISOR_TEST_HOSTS", FIXTURES / "hosts"))


def recorded_snapshots() -> list[Path]:
    """Every host snapshot recorded by the lab: hosts/<zfs version>/<layout>/<state>/."""
    return sorted(p.parent for p in HOSTS.glob("*/*/*/manifest.json"))


def snapshot_id(path: Path) -> str:
    return "/".join(path.relative_to(HOSTS).parts)


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
