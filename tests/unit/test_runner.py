"""The command runner runs real processes: argv only, timeouts, stderr kept."""
import asyncio
import os

import pytest

from advisor.host.runner import EXIT_NOT_FOUND, EXIT_TIMEOUT, CommandRunner, RecordingRunner, ReplayRunner
from support.waiting import await_until


async def test_runs_argv_and_keeps_output():
    result = await CommandRunner().run(["printf", "%s|", "a b", "$(id)"])
    assert result.ok
    # No shell: the metacharacters arrive as literal arguments.
    assert result.stdout == "a b|$(id)|"


async def test_failure_keeps_stderr_in_the_reason():
    result = await CommandRunner().run(["ls", "/definitely/not/here"])
    assert not result.ok
    assert "No such file" in result.error()
    assert result.error().startswith("ls /definitely/not/here: exit 2")


async def test_missing_binary_is_not_found_not_an_exception():
    result = await CommandRunner().run(["zpool-does-not-exist", "list"])
    assert result.returncode == EXIT_NOT_FOUND
    assert "not available" in result.error()


async def test_timeout_kills_the_process():
    result = await CommandRunner(timeout_seconds=0.2).run(["sleep", "5"])
    assert result.returncode == EXIT_TIMEOUT
    assert result.duration_seconds < 2
    assert "timed out" in result.error()


async def test_cancelled_run_leaves_no_process_behind():
    seconds = f"{30 + os.getpid() % 1000 / 1000:.3f}"  # unique among concurrent test runs
    task = asyncio.create_task(CommandRunner().run(["sleep", seconds]))

    async def running() -> str:
        return (await CommandRunner().run(["pgrep", "-f", f"^sleep {seconds}$"])).stdout.strip()
    await await_until(running, 10, f"sleep {seconds} to start")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    ps = await CommandRunner().run(["pgrep", "-f", f"^sleep {seconds}$"])
    assert ps.stdout.strip() == ""


async def test_a_shell_string_is_refused():
    with pytest.raises(TypeError):
        await CommandRunner().run("zpool list")  # type: ignore[arg-type]  # a string, not argv: what is refused
    with pytest.raises(TypeError):
        await CommandRunner().run([])


async def test_recording_then_replay_gives_the_same_result():
    recorder = RecordingRunner(inner=CommandRunner())
    live = await recorder.run(["uname", "-s"])
    replayed = await ReplayRunner(recorder.results).run(["uname", "-s"])
    assert replayed == live
    missing = await ReplayRunner(recorder.results).run(["uname", "-r"])
    assert missing.returncode == EXIT_NOT_FOUND
    assert "not recorded" in missing.error()
