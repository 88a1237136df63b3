"""Kernel module parameters: /sys/module/zfs/parameters/* (see zfs(4))."""
from __future__ import annotations

from advisor.host.files import HostFiles

PARAMS_DIR = "/sys/module/zfs/parameters"
VERSION_FILE = "/sys/module/zfs/version"


def read_module_params(files: HostFiles) -> dict[str, str]:
    params: dict[str, str] = {}
    for name in files.listdir(PARAMS_DIR):
        try:
            params[name] = files.read_text(f"{PARAMS_DIR}/{name}").strip()
        except OSError:
            continue  # write-only or vanished parameter: skip it, keep the rest
    return params


def read_kmod_version(files: HostFiles) -> str | None:
    try:
        return files.read_text(VERSION_FILE).strip() or None
    except OSError:
        return None
