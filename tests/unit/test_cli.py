"""The CLI as a user runs it: a real subprocess."""
import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path

import aiohttp

from support.cli import run_cli

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_facts_without_zfs_says_absent_and_exits_0(tmp_path):
    # A root with only a /proc/meminfo: a host without the ZFS module.
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "meminfo").write_text("MemTotal:  2048 kB\n")
    (tmp_path / "sys" / "block").mkdir(parents=True)
    result = run_cli("facts", "--root", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "ZFS: absent" in result.stdout
    facts = json.loads(run_cli("facts", "--json", "--root", str(tmp_path)).stdout)
    assert facts["zfs"]["present"] is False and facts["memory_bytes"] == 2048 * 1024


def test_snapshot_then_facts_from_it(tmp_path):
    snap = tmp_path / "snap"
    result = run_cli("snapshot", str(snap))
    assert result.returncode == 0, result.stderr
    assert "recorded" in result.stdout
    again = run_cli("snapshot", str(snap))
    assert again.returncode == 1 and "not empty" in again.stderr
    assert run_cli("facts", "--root", str(snap)).returncode == 0


def test_bad_usage_exits_2_with_a_message(tmp_path):
    assert run_cli("frobnicate").returncode == 2
    bad = run_cli("facts", "--config", str(tmp_path / "missing.toml"))
    assert bad.returncode == 2 and "does not exist" in bad.stderr
    assert run_cli("facts", "--root", str(tmp_path / "missing")).returncode == 1


def test_serve_answers_healthz_and_stops_on_sigterm(tmp_path):
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "advisor", "serve", "--port", str(port)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        body = asyncio.run(_get_when_up(f"http://127.0.0.1:{port}/healthz"))
        assert body["status"] == "ok"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0
    logs = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert any(e["msg"] == "serving" and e["port"] == port for e in logs)
    assert any(e["msg"] == "shutting down" for e in logs)


def test_serve_on_a_busy_port_fails_cleanly():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli("serve", "--port", str(port))
    assert result.returncode == 1
    assert "cannot listen" in result.stderr and "Traceback" not in result.stderr


async def _get_when_up(url: str) -> dict:
    async with aiohttp.ClientSession() as session:
        for _ in range(100):
            try:
                async with session.get(url) as resp:
                    return await resp.json()
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.1)
    raise AssertionError(f"{url} never answered")


def test_a_command_imports_only_its_own_module():
    """`zfs-advisor probe` must not pay for the HTTP stack (about 9 s of a 21 s start in the
    emulated lab VM); the top-level help still lists every command."""
    code = ("import sys; from advisor.cli import main\n"
            "try:\n    main(['probe', '--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith(('aiohttp', 'advisor.cli.'))), file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "--efficiency" in out.stdout  # the probe subcommand's own help, in full
    assert out.stderr.strip() == "['advisor.cli.probe']"
    listing = run_cli("--help")
    assert listing.returncode == 0
    for name in ("serve", "facts", "snapshot", "recommend", "verify", "probe", "profile", "evaluate"):
        assert f"    {name} " in listing.stdout or f"    {name}\n" in listing.stdout, listing.stdout
