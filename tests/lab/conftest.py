"""pytest tier "lab": tests against real OpenZFS in a qemu VM.

Lab tests run only when asked for:
  * ZFS_ADVISOR_LAB=1 (CI, .ci/lab.sh): they run, and FAIL if the image is missing;
  * `-m lab` given explicitly: they run, and are skipped if the image is missing;
  * otherwise they are skipped, so plain unit runs stay fast.

Fixtures:
  * lab_vm — a booted VM with its layout's pool created; parametrize it
    indirectly with (zfs_line, layout_name).  One VM per OpenZFS line boots
    with the disks of every selected layout attached (a boot costs minutes
    under emulation); each layout's pool is created when its tests start and
    destroyed when the next layout's start.  One VM runs at a time.
  * labparams.lab_params(...) gives the (zfs, layout) pairs selected by
    ZFS_ADVISOR_LAB_ZFS (e.g. "2.3") and ZFS_ADVISOR_LAB_LAYOUTS (comma separated).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import labimage  # noqa: E402 - after the sys.path line above
import labparams  # noqa: E402 - after the sys.path line above
from labvm import LabVM  # noqa: E402 - after the sys.path line above


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "lab: needs the qemu ZFS lab VM (tests/lab); run with ZFS_ADVISOR_LAB=1")
    config.addinivalue_line(
        "markers", "lab_wrecks_vm: leaves the VM unusable (a suspended pool); runs last on its OpenZFS line "
        "and takes the fixture wrecked_after, which stops the VM after it")


def _lab_requested(config: pytest.Config) -> tuple[bool, bool]:
    """(run lab tests?, must they fail rather than skip when the image is missing?)"""
    if os.environ.get("ZFS_ADVISOR_LAB") == "1":
        return True, True
    expr = config.getoption("markexpr", "") or ""
    return ("lab" in expr and "not lab" not in expr), False


@pytest.hookimpl(trylast=True)  # after pytest's own grouping by fixture parameter
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    run, _ = _lab_requested(config)
    if run:
        _deselect_unselected_lines(config, items)
        _order_by_vm(items)
        return
    skip = pytest.mark.skip(reason="lab test: set ZFS_ADVISOR_LAB=1 or select -m lab")
    for item in items:
        if "lab" in item.keywords:
            item.add_marker(skip)


def _deselect_unselected_lines(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test none of whose (line, layout) pairs is selected (a 2.3-only test while
    ZFS_ADVISOR_LAB_ZFS=2.1 runs) gets pytest's empty-parameter-set skip; it is deselected
    instead, so the skips left are the tests that did not run for a reason."""
    empty = [i for i in items if any(str(m.kwargs.get("reason", "")).startswith("got empty parameter set")
                                     for m in i.iter_markers("skip"))]
    if empty:
        config.hook.pytest_deselected(items=empty)
        items[:] = [i for i in items if i not in empty]


def _order_by_vm(items: list[pytest.Item]) -> None:
    """Every test of one OpenZFS line, then the next, layout by layout: each switch of
    line is a boot (minutes), each switch of layout a pool creation; a test that wrecks
    the VM comes last on its line.  Stable: tests keep their order within a (line, layout)."""
    lines = list(labimage.LINES)  # the Debian 13 line's last
    layouts = labparams.selected_layouts()

    def key(item: pytest.Item) -> tuple[int, int, int]:
        spec = getattr(item, "callspec", None)
        param = spec.params.get("lab_vm") if spec else None
        if not isinstance(param, tuple):
            return (-1, -1, -1)  # lab-free tests, and those whose layouts are all deselected (skipped), first
        zfs, layout = param
        return (lines.index(zfs) if zfs in lines else len(lines),
                1 if item.get_closest_marker("lab_wrecks_vm") else 0,
                layouts.index(layout) if layout in layouts else len(layouts))

    items.sort(key=key)


def _require_lab(config: pytest.Config, zfs: str) -> None:
    _, strict = _lab_requested(config)
    problem = None
    if shutil.which("qemu-system-x86_64") is None:
        problem = "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86 qemu-utils)"
    elif labimage.find_image(zfs) is None:
        problem = (f"lab image for OpenZFS {zfs} (key {labimage.image_key(zfs)}) is missing in "
                   f"{labimage.cache_dir()}: run tests/lab/build-image --zfs {zfs}")
    if problem:
        if strict:
            pytest.fail(f"ZFS_ADVISOR_LAB=1 but {problem}", pytrace=False)
        pytest.skip(problem)


class _Machines:
    """The one running lab VM, for the OpenZFS line asked for last."""

    def __init__(self) -> None:
        self.vm: LabVM | None = None

    def for_line(self, zfs: str) -> LabVM:
        if self.vm is not None and self.vm.image.zfs_line == zfs:
            return self.vm
        self.stop()  # one VM at a time: two emulated VMs on 2 cores slow both 3-5x
        vm = LabVM(zfs, layouts=labparams.booted_layouts(zfs))  # the disks of this run's layouts on the line
        try:
            vm.start()
        except BaseException:
            vm.stop()
            raise
        self.vm = vm
        return vm

    def stop(self, *, kill: bool = False) -> None:
        if self.vm is not None:
            vm, self.vm = self.vm, None
            if kill:
                vm.kill()
            else:
                vm.stop()


@pytest.fixture(scope="session")
def _lab_machines():
    machines = _Machines()
    try:
        yield machines
    finally:
        machines.stop()


@pytest.fixture
def wrecked_after(_lab_machines):
    """For a test that leaves the VM unusable: stops the VM after it (the next test boots a new one).
    Killed, not powered off: a pool that lost its disk holds the shutdown until the 30 s timeout, and
    nothing of a wrecked VM is kept (its disks and root overlay are temporary files)."""
    yield
    _lab_machines.stop(kill=True)


@pytest.fixture(scope="session")
def lab_vm(request, _lab_machines):
    zfs, layout = request.param
    _require_lab(request.config, zfs)
    vm = _lab_machines.for_line(zfs)
    vm.use_layout(layout)
    return vm
