"""The one way the advisor runs host commands: argv lists, a timeout, stderr kept.

`CommandRunner` runs for real; `ReplayRunner` answers from a host snapshot's
manifest; `RecordingRunner` runs for real and remembers each result so
`zfs-advisor snapshot` can write it down. All three share `run(argv)`.
"""
from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

# A command that could not run at all: same code a shell uses for "not found".
EXIT_NOT_FOUND = 127
# A command killed by our timeout (the same code as coreutils' timeout(1)).
EXIT_TIMEOUT = 124


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str = ""
    duration_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def error(self) -> str:
        """One line that says why the command failed, for 'no data' reasons."""
        detail = (self.stderr.strip().splitlines() or [""])[-1]
        if self.returncode == EXIT_NOT_FOUND:
            return f"{self.argv[0]}: not available ({detail or 'command not found'})"
        if self.returncode == EXIT_TIMEOUT:
            return f"{' '.join(self.argv)}: timed out"
        return f"{' '.join(self.argv)}: exit {self.returncode}" + (f": {detail}" if detail else "")


class CommandError(Exception):
    def __init__(self, result: CommandResult):
        super().__init__(result.error())
        self.result = result


class CommandRunner:
    """Runs argv lists as subprocesses (never through a shell)."""

    def __init__(self, timeout_seconds: float = 10.0, env: dict[str, str] | None = None):
        self.timeout_seconds = timeout_seconds
        # A fixed C locale: ZFS tools localise numbers and dates otherwise.
        self.env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), "LC_ALL": "C"}
        if env:
            self.env.update(env)

    async def run(self, argv: list[str] | tuple[str, ...], timeout_seconds: float | None = None) -> CommandResult:
        if isinstance(argv, (str, bytes)):
            raise TypeError("argv must be a list of strings, never a shell string")
        argv = tuple(argv)
        if not argv or not all(isinstance(a, str) for a in argv):
            raise TypeError("argv must be a non-empty list of strings")
        timeout = self.timeout_seconds if timeout_seconds is None else timeout_seconds
        started = time.monotonic()
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self.env,
            )
        except (FileNotFoundError, PermissionError) as exc:
            return CommandResult(argv, EXIT_NOT_FOUND, "", str(exc), time.monotonic() - started)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return CommandResult(argv, EXIT_TIMEOUT, "", f"killed after {timeout:g}s", time.monotonic() - started)
        except asyncio.CancelledError:
            # Never leave a zpool process behind when a scrape is cancelled.
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            raise
        return CommandResult(
            argv,
            proc.returncode if proc.returncode is not None else -1,
            out.decode("utf-8", "replace"),
            err.decode("utf-8", "replace"),
            time.monotonic() - started,
        )


@dataclass
class RecordingRunner(CommandRunner):
    """Runs commands for real and keeps every result (in call order)."""

    inner: CommandRunner = field(default_factory=CommandRunner)
    results: list[CommandResult] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(self.inner.timeout_seconds)

    async def run(self, argv, timeout_seconds=None) -> CommandResult:
        result = await self.inner.run(argv, timeout_seconds)
        self.results.append(result)
        return result


class ReplayRunner(CommandRunner):
    """Answers commands from recorded results, matched by exact argv.

    `lazy` results are read when asked for (in a worker thread, as a live command's output
    arrives while the loop runs) and not kept: a snapshot's `zfs get` of 10,000 datasets is
    10.8 MB of text that a live host does not hold between two runs either.
    """

    def __init__(self, results: Sequence[CommandResult] = (),
                 lazy: Mapping[tuple[str, ...], Callable[[], CommandResult]] | None = None):
        super().__init__()
        self._by_argv: dict[tuple[str, ...], CommandResult | Callable[[], CommandResult]] = {
            r.argv: r for r in results}
        self._by_argv.update(lazy or {})

    async def run(self, argv, timeout_seconds=None) -> CommandResult:
        argv = tuple(argv)
        recorded = self._by_argv.get(argv)
        if recorded is None:
            return CommandResult(argv, EXIT_NOT_FOUND, "", "not recorded in this host snapshot")
        if callable(recorded):
            return await asyncio.to_thread(recorded)
        return recorded
