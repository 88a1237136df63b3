"""Module parameters changed only while a probe runs, saved before, restored after.

The original value goes to the store (committed) BEFORE the parameter is written, so a
crash at any point leaves enough behind for `restore_leftovers` to put it back at the
next start.  Writes go to /sys/module/zfs/parameters/<name> (zfs(4)) under the host root.
"""
from __future__ import annotations

import logging
import re

from advisor.host.files import HostFiles
from advisor.host.modparams import PARAMS_DIR
from advisor.store.probes import ProbeStore

log = logging.getLogger("advisor.probe")
_NAME = re.compile(r"^[a-z][a-z0-9_]{1,63}$")


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
        self._originals: dict[str, str] = {}

    def set(self, name: str, value: str) -> None:
        if name not in self._originals:
            original = self.params.read(name)
            self.store.save_module_param(self.run_id, name, original)  # before the change, committed
            self._originals[name] = original
        self.params.write(name, value)

    def restore(self, names: list[str] | None = None) -> list[str]:
        """Restore `names` (default: all changed); -> problems (empty when all went back)."""
        problems = []
        for name in list(names if names is not None else self._originals):
            original = self._originals.get(name)
            if original is None:
                continue
            try:
                self.params.write(name, original)
            except ModuleParamError as exc:
                problems.append(str(exc))
                continue
            self.store.forget_module_param(self.run_id, name)
            del self._originals[name]
        return problems


def restore_leftovers(params: ModuleParams, store: ProbeStore) -> list[tuple[str, str]]:
    """Put back parameters saved by runs that never restored them (a crash, a kill).

    Call only while holding the probe lock (no live run is changing parameters).  When
    several runs saved one parameter, the oldest saved value is the true original.
    -> [(name, value restored)].
    """
    oldest: dict[str, tuple[int, str]] = {}
    rows = store.saved_module_params()
    for run_id, name, original in rows:
        oldest.setdefault(name, (run_id, original))
    restored = []
    for name, (_, original) in oldest.items():
        try:
            params.write(name, original)
        except ModuleParamError as exc:
            log.error("could not restore module parameter: %s", exc)
            continue
        restored.append((name, original))
        log.warning("restored module parameter %s=%s left changed by an interrupted probe", name, original)
    done = {name for name, _ in restored}
    for run_id, name, _ in rows:
        if name in done:
            store.forget_module_param(run_id, name)
    return restored
