"""SIGHUP (`systemctl reload zfs-advisor`): read the settings and the web config file again and
apply what can change while the service runs.

Applied at once: log_level, api_token, workloads, every metrics_* setting, the profiler table,
the basic auth users, and the TLS certificate and key (a renewal: new connections get the new
certificate, open ones keep theirs). The rest is bound to what the process set up at start (the
listening socket, the facts refresh loop, the state directory, the rules, the model) and to
change it needs a restart: a changed value there is logged, named, and kept. A new configuration
that does not load or does not pass the start-up checks is refused as a whole, with the reason,
and the running one stays: a reload never stops the service.
"""
from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from aiohttp import web

from advisor.answering.exported_advice import Advice
from advisor.api.appkeys import ANSWERER, EXPORTER, RULEBOOK, RUNTIME, SETTINGS, WEB_CONFIG
from advisor.api.runtime import Runtime, client_ca_digest
from advisor.config.settings import Settings, SettingsError
from advisor.config.tlscheck import set_versions
from advisor.config.webconfig import TLS_VERSIONS, WebConfig, check_exposure, load_web_config
from advisor.exporters.base import ExportOptions
from advisor.process.logs import setup_logging
from advisor.service.app import check_workloads_setting

log = logging.getLogger(__name__)

# Settings bound to what start-up built: a reload logs a change to them and keeps the running value.
RESTART_ONLY = (
    "listen_address", "port", "root", "state_dir", "rules_dir", "web_config_file", "log_format", "model",
    "command_timeout_seconds", "facts_max_age_seconds", "commands_interval_seconds", "changes_window_seconds",
)


# A reload follows a signal at once, unless one ran less than this long ago: then it waits for it.
RELOAD_SPACING_SECONDS = 1.0


@dataclass
class Reloaded:
    """What one reload did: the settings applied, those kept (each with why), or why it was refused."""

    applied: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    refused: str | None = None


def reload(app: web.Application, load: Callable[[], Settings], ssl_context: ssl.SSLContext | None) -> Reloaded:
    """Load the configuration again with `load` (file, environment and the command's flags) and
    apply it to the running `app`; `ssl_context` is the listening socket's (None: plain HTTP)."""
    live: Settings = app[SETTINGS]
    live_web: WebConfig = app[WEB_CONFIG]
    try:
        new = load()
        web_config = load_web_config(live.web_config_file)  # the same file: its contents may have changed
    except SettingsError as exc:
        return Reloaded(refused=str(exc))
    result = Reloaded()
    changed = [name for name in Settings.model_fields if getattr(new, name) != getattr(live, name)]
    for name in changed:
        if name in RESTART_ONLY:
            result.kept.append(f"{name} (a restart applies it; running with {_shown(live, name)})")
    update = {name: getattr(new, name) for name in changed if name not in RESTART_ONLY}
    effective = live.model_copy(update=update)
    try:  # the start-up checks of the app factory, on the configuration as it would run
        check_workloads_setting(effective.workloads, app[RULEBOOK])
        check_exposure(effective, web_config)
        tls_kept = _check_tls(live_web, web_config, app[RUNTIME])
    except SettingsError as exc:
        return Reloaded(refused=str(exc))
    result.kept += tls_kept

    for name, value in update.items():
        setattr(live, name, value)
    result.applied += sorted(update)
    result.applied += _apply_web_config(live_web, web_config, ssl_context)
    if "log_level" in update:
        setup_logging(live.log_level, live.log_format)
    runtime = app[RUNTIME]
    runtime.export_options = ExportOptions.from_settings(live)
    if "workloads" in update:
        runtime.advice = Advice(app[ANSWERER], live.workloads)
    if update:  # what /metrics renders depends on the settings (users and certificates do not)
        runtime.generation += 1
        app[EXPORTER].forget()  # text rendered under the old settings
    return result


class CoalescedReloads:
    """SIGHUPs coalesced: one reload at a time, at most one waiting however many signals arrive,
    and reloads at least `spacing` seconds apart. Each reload reads files and loads certificates on
    the event loop (it changes what requests see); a reload per signal of a flood, 700 of 1,000
    signals sent 2 ms apart, took the loop from every request for as long as the flood lasted."""

    def __init__(self, run: Callable[[], None], spacing: float = RELOAD_SPACING_SECONDS):
        self.run, self.spacing = run, spacing
        self.pending = False
        self.runs = 0
        self._last = -spacing
        self._task: asyncio.Task[None] | None = None

    def request(self) -> None:
        """The signal handler: cheap, whatever the rate."""
        self.pending = True
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self.pending:
            if (wait := self._last + self.spacing - loop.time()) > 0:
                await asyncio.sleep(wait)  # signals meanwhile join this one reload
            self.pending = False
            self._last = loop.time()
            self.run()
            self.runs += 1


def _shown(settings: Settings, name: str) -> str:
    value = getattr(settings, name)
    return repr(str(value)) if value is not None else "none"


def _check_tls(live: WebConfig, new: WebConfig, runtime: Runtime) -> list[str]:
    """What of tls_server_config a reload cannot change (kept, with why); a certificate that does
    not load refuses the reload (WebConfigError)."""
    if (live.tls is None) != (new.tls is None):
        return ["tls_server_config (turning TLS on or off changes the listening socket: a restart applies it)"]
    if new.tls is None or live.tls is None:  # both None: the check above
        return []
    new.tls.context()  # loads the certificate, key and CA now: an error names the file
    kept = []
    if (new.tls.client_ca_file != live.tls.client_ca_file or client_ca_digest(new) != runtime.client_ca_digest
            or new.tls.client_auth_type != live.tls.client_auth_type):
        # OpenSSL adds CAs to a context but never removes one: a restart is the only way to stop trusting one
        kept.append("tls_server_config client_ca_file/client_auth_type (a restart applies them)")
    return kept


def _apply_web_config(live: WebConfig, new: WebConfig, ssl_context: ssl.SSLContext | None) -> list[str]:
    applied = []
    if new.users != live.users:
        live.users = dict(new.users)  # remembered passwords are keyed by the user's hash too (advisor/server/passwords.py)
        applied.append("basic_auth_users")
    if ssl_context is not None and new.tls is not None and live.tls is not None:
        # Read again whether or not the files changed: a renewal usually keeps the file names.
        set_versions(ssl_context, TLS_VERSIONS[new.tls.min_version], TLS_VERSIONS[new.tls.max_version])
        ssl_context.load_cert_chain(new.tls.cert_file, new.tls.key_file)
        live.tls = replace(new.tls, client_auth_type=live.tls.client_auth_type, client_ca_file=live.tls.client_ca_file)
        applied.append("tls_server_config certificate")
    return applied
