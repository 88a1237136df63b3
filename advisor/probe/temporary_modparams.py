"""Module parameters changed only while a probe runs, saved before, restored after.

The original value goes to the store (committed) BEFORE the parameter is written, so a
crash at any point leaves enough behind for `restore_leftovers` to put it back at the
next start.  Writes go to /sys/module/zfs/parameters/<name> (zfs(4)) under the host root.

Writing a parameter's file back is not always enough: `zfs_arc_max=0` means "default",
and the ARC ignores a 0 written at run time (arc_tuning_update() in module/zfs/arc.c
applies only non-zero values), so the ARC would stay capped although the file reads 0
again (seen in the lab on OpenZFS 2.1.11).  `zfs_arc_min=0` is the same case.  For such
parameters the value in effect (arcstats `c_max`, `c_min`) is saved too, and restoring
writes it first, then the original.

Parameters go back in the reverse order of their change: the ARC applies `zfs_arc_min` only
up to the `zfs_arc_max` in effect, so a lowered cap must be lifted before the floor returns.

Lifting a cap is not the whole way back either: capping lowers the ARC's target (arcstats `c`)
with its maximum, and the target does not rise when the maximum does; it stays at the floor and
grows back only as data is read (measured in the lab, OpenZFS 2.3.2: `c` 697 MB before a 64 MiB
cap, 128 MB after the cap was lifted and still 30 s later).  So the target in effect before the
first cap is noted, and once both limits are back, the floor is raised to that target for a
moment and put back: `arc_tuning_update()` raises `c` to a new `zfs_arc_min`, and a lower one
leaves it there (module/zfs/arc.c).  The raised floor is saved like any change, so a crash in
between is put back at the next start.
"""
from __future__ import annotations

import logging
import re

from advisor.host.files import HostFiles
from advisor.host.kstat import read_named_kstat
from advisor.hostmodel.facts import PARAMS_DIR
from advisor.store.probes import ProbeStore

log = logging.getLogger("advisor.probe")
_NAME = re.compile(r"^[a-z][a-z0-9_]{1,63}$")
# parameter -> (kstat file, field) holding the value in effect when the parameter is 0
ARCSTATS = "/proc/spl/kstat/zfs/arcstats"
EFFECTIVE_WHEN_ZERO = {"zfs_arc_max": (ARCSTATS, "c_max"), "zfs_arc_min": (ARCSTATS, "c_min")}
ARC_LIMITS = frozenset({"zfs_arc_min", "zfs_arc_max"})


class ModuleParamError(Exception):
    """A module parameter could not be read or written; the message says which."""


class ModuleParams:
    def __init__(self, files: HostFiles):
        self.files = files

    def _path(self, name: str) -> str:
        if not _NAME.match(name):
            raise ModuleParamError(f"not a module parameter name: {name!r}")
        return f"{PARAMS_DIR}/{name}"

    def read(self, name: str) -> str:
        try:
            return self.files.read_text(self._path(name)).strip()
        except OSError as exc:
            raise ModuleParamError(f"cannot read {name}: {exc.strerror or exc}") from None

    def effective(self, name: str) -> str | None:
        """The value in effect for a parameter whose file reads 0 ("default"), if it has one."""
        source = EFFECTIVE_WHEN_ZERO.get(name)
        if source is None:
            return None
        try:
            return str(int(read_named_kstat(self.files, source[0]).values[source[1]]))
        except (OSError, ValueError, KeyError):
            return None

    def arc_target(self) -> tuple[int, int] | None:
        """The ARC's target and maximum in effect (arcstats `c`, `c_max`), or None if unreadable."""
        try:
            values = read_named_kstat(self.files, ARCSTATS).values
            return int(values["c"]), int(values["c_max"])
        except (OSError, ValueError, KeyError):
            return None

    def put_back(self, name: str, original: str, effective: str | None) -> None:
        if effective is not None and original == "0" and effective != "0":
            self.write(name, effective)  # the kernel's value first: a 0 alone would be ignored
        self.write(name, original)

    def write(self, name: str, value: str) -> None:
        if not re.fullmatch(r"[0-9]{1,20}", value):
            raise ModuleParamError(f"{name}: refusing to write non-integer {value!r}")
        try:
            with open(self.files.path(self._path(name)), "w", encoding="ascii") as f:
                f.write(value)
        except OSError as exc:
            raise ModuleParamError(f"cannot write {name}={value}: {exc.strerror or exc}") from None


class ParamGuard:
    """Changes for one run; `restore()` puts back every original (call it in `finally`)."""

    def __init__(self, params: ModuleParams, store: ProbeStore, run_id: int):
        self.params, self.store, self.run_id = params, store, run_id
        self._originals: dict[str, tuple[str, str | None]] = {}
        self._arc_target: int | None = None  # the ARC's target before the first cap

    def set(self, name: str, value: str) -> None:
        if name not in self._originals:
            original = self.params.read(name)
            effective = self.params.effective(name) if original == "0" else None
            self.store.save_module_param(self.run_id, name, original, effective)  # before the change, committed
            self._originals[name] = (original, effective)
        self.params.write(name, value)

    def cap_arc(self, floor: int | None, cap: int | None) -> None:
        """The ARC's floor first: the ARC takes a cap only above its floor (advisor/evidence/arc_cap.py)."""
        if (floor or cap) and not ARC_LIMITS & self._originals.keys():
            now = self.params.arc_target()
            self._arc_target = now[0] if now else None
        if floor:
            self.set("zfs_arc_min", str(floor))
        if cap:
            self.set("zfs_arc_max", str(cap))

    def restore(self, names: list[str] | None = None) -> list[str]:
        """Restore `names` (default: all changed), last changed first; -> problems (empty when
        all went back)."""
        problems = []
        wanted = set(names if names is not None else self._originals)
        for name in [n for n in reversed(self._originals) if n in wanted]:
            saved = self._originals.get(name)
            if saved is None:
                continue
            try:
                self.params.put_back(name, *saved)
            except ModuleParamError as exc:
                problems.append(str(exc))
                continue
            self.store.forget_module_param(self.run_id, name)
            del self._originals[name]
        if self._arc_target is not None and not ARC_LIMITS & self._originals.keys():
            target, self._arc_target = self._arc_target, None
            problems += self._regrow_arc_target(target)
        return problems

    def _regrow_arc_target(self, target: int) -> list[str]:
        """Raise the ARC's target back to `target` (at most its maximum): the floor set to it for a
        moment, saved and put back as any change (the module docstring says why)."""
        now = self.params.arc_target()
        if now is None or now[0] >= min(target, now[1]):
            return []
        try:
            self.set("zfs_arc_min", str(min(target, now[1])))
        except ModuleParamError as exc:
            return [f"the ARC's target not raised back to {target}: {exc}"] + self.restore(["zfs_arc_min"])
        return self.restore(["zfs_arc_min"])


def restore_leftovers(params: ModuleParams, store: ProbeStore) -> list[tuple[str, str]]:
    """Put back parameters saved by runs that never restored them (a crash, a kill).

    Call only while holding the probe lock (no live run is changing parameters).  When
    several runs saved one parameter, the oldest saved value is the true original.
    -> [(name, value restored)].
    """
    oldest: dict[str, tuple[str, str | None]] = {}
    rows = store.saved_module_params()
    for _, name, original, effective in rows:
        oldest.setdefault(name, (original, effective))
    restored = []
    for name, (original, effective) in reversed(oldest.items()):  # last saved first, as ParamGuard
        try:
            params.put_back(name, original, effective)
        except ModuleParamError as exc:
            log.error("could not restore module parameter: %s", exc)
            continue
        restored.append((name, original))
        log.warning("restored module parameter %s=%s left changed by an interrupted probe", name, original)
    done = {name for name, _ in restored}
    for run_id, name, _, _ in rows:
        if name in done:
            store.forget_module_param(run_id, name)
    return restored
