"""The probe's foreground watch alone: a poll every 0.2 s in a worker thread, as run_watched_fio does."""
import asyncio
import sys
import time

from advisor.host.files import HostFiles
from advisor.probe.foreground import ForegroundWatch


async def main(seconds: float, interval: float) -> None:
    watch = ForegroundWatch(HostFiles("/"), "tank", "tank/zfs-advisor-probe")
    await asyncio.to_thread(watch.refresh)
    polls, cpu0, t0 = 0, time.process_time(), time.monotonic()
    while time.monotonic() - t0 < seconds:
        await asyncio.sleep(interval)
        await asyncio.to_thread(watch.poll)
        polls += 1
    cpu = time.process_time() - cpu0
    print(f"poller: {polls} polls in {time.monotonic() - t0:.1f} s, {cpu:.2f} s CPU, {1000 * cpu / polls:.1f} ms a poll",
          file=sys.stderr)

asyncio.run(main(float(sys.argv[1]), float(sys.argv[2])))
