"""Which (OpenZFS line, layout) pairs the lab tests run on.

ZFS_ADVISOR_LAB_ZFS=2.3 or =2.1,2.3 limits the lines; ZFS_ADVISOR_LAB_LAYOUTS
(comma separated names) limits the layouts, also for tests written for
named layouts.  Use lab_params() to parametrize
the lab_vm fixture indirectly.
"""

from __future__ import annotations

import os

import pytest

import labimage
import lablayouts


def selected_lines() -> list[str]:
    env = os.environ.get("ZFS_ADVISOR_LAB_ZFS", "")
    return [l for l in labimage.ZFS_LINES if not env or l in env.split(",")]


def selected_layouts() -> list[str]:
    env = os.environ.get("ZFS_ADVISOR_LAB_LAYOUTS", "")
    names = list(lablayouts.load())
    return [n for n in names if not env or n in env.split(",")]


def lab_params(layout_names: list[str] | None = None, lines: list[str] | None = None) -> list:
    """`lines`: the OpenZFS lines a test needs (default: every selected one); long tests that
    behave alike on both lines name one, to keep the lab tier within the CI budget.  A layout
    with `lines` of its own in layouts.toml (the measured prior's) runs on those lines only."""
    selected = selected_layouts()
    names = [n for n in layout_names if n in selected] if layout_names else selected
    zfs = [z for z in selected_lines() if lines is None or z in lines]
    layouts = lablayouts.load()
    return [pytest.param((z, n), id=f"zfs{z}-{n}") for z in zfs for n in names
            if not layouts[n].lines or z in layouts[n].lines]
