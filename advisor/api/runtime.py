"""The parts of the running service that SIGHUP replaces (advisor/service/reload.py), kept apart from the
app's own keys, which are fixed once it runs."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from advisor.answering.exported_advice import Advice
from advisor.config.webconfig import WebConfig
from advisor.exporters.base import ExportOptions


@dataclass
class Runtime:
    """What a reload replaces, read per request from app[RUNTIME] (the app's own keys are fixed
    once it runs)."""

    export_options: ExportOptions
    advice: Advice  # what /metrics exports for the `workloads` setting
    client_ca_digest: str | None = None  # of tls_server_config.client_ca_file as loaded at start
    generation: int = 0  # bumped by every applied reload: part of the cached /metrics bodies' key


def client_ca_digest(web_config: WebConfig) -> str | None:
    ca = web_config.tls.client_ca_file if web_config.tls else None
    try:
        return hashlib.sha256(Path(ca).read_bytes()).hexdigest() if ca else None
    except OSError:
        return None
