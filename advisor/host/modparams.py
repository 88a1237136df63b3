"""Kernel module parameters: /sys/module/zfs/parameters/* (see zfs(4)).

Each value is checked against its zfs(4) type (advisor/host/modparam_types.py): an integer
parameter that does not read as an integer within 64 bits (unsigned ones not below 0), a text
one holding a number past 64 bits, or a file that is empty or holds bytes no parameter
prints, is an error of the source, not a value.
"""
from __future__ import annotations

import re

from advisor.host.files import HostFiles
from advisor.host.modparam_types import SIGNED, UNSIGNED
from advisor.host.parsing import ParseError, printable_text, shown, to_int
from advisor.hostmodel.facts import PARAMS_DIR

_DECIMAL = re.compile(r"-?[0-9]+")
_NUMBER = re.compile(r"[0-9]+")
VERSION_FILE = "/sys/module/zfs/version"


def parse_module_param(name: str, raw: str) -> str:
    """The value of parameter `name` as read from sysfs (`raw`), or ParseError saying why it is none.

    A read always gives at least a newline (an empty string parameter is "\\n"): no bytes at
    all is a damaged file."""
    if not raw:
        raise ParseError(f"{name}: the file is empty")
    value = printable_text(raw, name)
    if name in UNSIGNED or name in SIGNED:
        if not _DECIMAL.fullmatch(value):  # what the kernel prints: no '+', no '1_000'
            raise ParseError(f"{name}: {shown(value)} is not an integer")
        if to_int(value, name) < 0 and name in UNSIGNED:
            raise ParseError(f"{name}: {value} is below 0 for an unsigned parameter")
    else:  # text, which may hold numbers ('fixed,1,8 null scale null'): each within 64 bits
        for number in _NUMBER.findall(value):
            to_int(number, name)
    return value


def read_module_params(files: HostFiles, errors: list[str] | None = None) -> dict[str, str]:
    """{name: value}; a parameter whose value is not of its type is left out, and its reason
    added to `errors` (the collector reports the source as failed with it)."""
    params: dict[str, str] = {}
    for name in files.listdir(PARAMS_DIR):
        try:
            params[name] = parse_module_param(name, files.read_text(f"{PARAMS_DIR}/{name}"))
        except OSError:
            continue  # write-only or vanished parameter: skip it, keep the rest
        except ParseError as exc:
            if errors is not None:
                errors.append(str(exc))
    return params


def read_kmod_version(files: HostFiles) -> str | None:
    try:
        return files.read_text(VERSION_FILE).strip() or None
    except OSError:
        return None
