"""The pages in a real browser (Debian's chromium, headless) against a real server on 127.0.0.1:
two lab recordings, one pool with probe runs, stored advice and an efficiency report, one
without. Each page is one request (nothing else is fetched), logs nothing to the console, and
the DOM the browser built has what the page says; the screenshots are kept in the test's tmp
dir and their paths printed.

Skipped where chromium is not installed (tests/run installs the Debian package).
"""
from __future__ import annotations

import asyncio
import shutil

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from advisor.config.settings import Settings
from advisor.service.app import create_app
from advisor.store.db import connect
from advisor.store.probes import ProbeStore
from support import HOSTS
from support.probes import seed_recordsize_probe

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed "
                                "(apt-get install chromium; tests/run installs it)")
WITH_PROBES = HOSTS / "2.3.2" / "ssd-mirror2x2" / "idle"
WITHOUT_PROBES = HOSTS / "2.3.2" / "hdd-raidz2x6" / "idle"
EFFICIENCY = {"results": [{"direction": "write", "ratio": 0.95,
                           "diagnosis": ["the pool gives 95% of what its layout should: nothing is lost"]}]}


async def browse(url: str, screenshot, profile) -> tuple[str, list[str]]:
    """The DOM chromium built from `url` and the console lines it logged; a screenshot saved."""
    proc = await asyncio.create_subprocess_exec(
        CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", f"--user-data-dir={profile}",
        f"--screenshot={screenshot}", "--window-size=1280,2000", "--enable-logging=stderr", "--v=0",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--dump-dom", url,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()[-2000:]
    console = [line for line in err.decode().splitlines() if "CONSOLE" in line or "Uncaught" in line]
    return out.decode(), console


@pytest.mark.parametrize("probes", [True, False], ids=["with-probes", "without-probes"])
async def test_the_pages_in_chromium(tmp_path, capsys, probes):
    state = tmp_path / "state"
    if probes:
        seed_recordsize_probe(state)
        store = ProbeStore(connect(state))
        store.add_efficiency("tank", EFFICIENCY)
        store.conn.close()
    settings = Settings(root=str(WITH_PROBES if probes else WITHOUT_PROBES), state_dir=str(state),
                        workloads={"tank/pg": "postgres", "tank/home": "postgres"} if probes else {})
    app = create_app(settings)
    asked: list[str] = []

    @web.middleware
    async def record(request, handler):
        asked.append(request.path_qs)
        return await handler(request)

    app.middlewares.insert(0, record)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    pages = {"/": ["Pools", "Probe runs"], "/pool/tank": ["Pool tank", "Advice for the pool", "Datasets"]}
    if probes:
        pages["/"] += ["tank/pg", "postgres", "completed"]
        pages["/pool/tank"] += ["change", "zfs set", "95% of what the layout should give"]
        pages["/probes/1"] = ["Probe run 1", "<svg", "recordsize", "3,448", "1.63 ms"]
    else:
        pages["/"] += ["No probe run is stored."]
        pages["/pool/tank"] += ["No efficiency report is stored", "raidz2"]
    shots = []
    try:
        for path, expected in pages.items():
            shot = tmp_path / f"page-{'with' if probes else 'without'}-probes-{path.strip('/').replace('/', '-') or 'index'}.png"
            asked.clear()
            dom, console = await browse(str(server.make_url(path)), shot, tmp_path / "chromium")
            assert console == [], (path, console)
            assert asked == [path]  # the page alone: no style sheet, script, font or icon fetched
            assert "<script" not in dom and "<main>" in dom
            missing = [text for text in expected if text not in dom]
            assert not missing, (path, missing)
            assert shot.stat().st_size > 10_000  # a picture, not an empty file
            shots.append(shot)
    finally:
        await server.close()
    with capsys.disabled():
        print("\nscreenshots:", *shots, sep="\n  ")
