"""Which (OpenZFS line, layout) pairs the lab tests run on.

ZFS_ADVISOR_LAB_ZFS=2.3 or =2.1,2.3 limits the lines (=debian13: the Debian 13
line, which runs only the tests that name it); ZFS_ADVISOR_LAB_LAYOUTS
(comma separated names) limits the layouts, also for tests written for
named layouts.  Use lab_params() to parametrize
the lab_vm fixture indirectly.
"""

from __future__ import annotations

import os

import labimage
import lablayouts
import pytest


def selected_lines() -> list[str]:
    env = os.environ.get("ZFS_ADVISOR_LAB_ZFS", "")
    return [l for l in labimage.LINES if not env or l in env.split(",")]


def selected_layouts() -> list[str]:
    env = os.environ.get("ZFS_ADVISOR_LAB_LAYOUTS", "")
    names = list(lablayouts.load())
    return [n for n in names if not env or n in env.split(",")]


def lab_params(layout_names: list[str] | None = None, lines: list[str] | None = None) -> list:
    """`lines`: the lines a test needs (default: every selected OpenZFS line, never debian13); long tests that
    behave alike on both lines name one, to keep the lab tier within the CI budget.  A layout
    with `lines` of its own in layouts.toml (the measured prior's) runs on those lines only, and
    in CI (no ZFS_ADVISOR_LAB_LONG=1) on its `ci_lines` only when it names them."""
    selected = selected_layouts()
    names = [n for n in layout_names if n in selected] if layout_names else selected
    zfs = [z for z in selected_lines() if z in (labimage.ZFS_LINES if lines is None else lines)]
    layouts = lablayouts.load()
    return [pytest.param((z, n), id=f"{z if z == labimage.DEBIAN13 else 'zfs' + z}-{n}")
            for z in zfs for n in names if _boots(layouts[n], z)]


def booted_layouts(line: str) -> list[str]:
    """The selected layouts this run boots on `line` (their disks are the VM's)."""
    layouts = lablayouts.load()
    return [n for n in selected_layouts() if _boots(layouts[n], line)]


def long_jobs() -> bool:
    """ZFS_ADVISOR_LAB_LONG=1: the long lab jobs run too, and every layout on every line of its own."""
    return os.environ.get("ZFS_ADVISOR_LAB_LONG") == "1"


def _boots(layout: lablayouts.Layout, line: str) -> bool:
    if layout.lines and line not in layout.lines:
        return False
    return long_jobs() or layout.ci_lines is None or line in layout.ci_lines
