"""All settings in one place: embedded defaults < TOML file < ZFS_ADVISOR_* env < CLI flags.

The TOML file is `--config FILE`, else $ZFS_ADVISOR_CONFIG, else
/etc/zfs-advisor/config.toml when it exists. Unknown keys are errors, so a
typo never silently falls back to a default.
"""
from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, TomlConfigSettingsSource

from advisor.hostmodel.names import check_dataset_name, check_pool_name

DEFAULT_CONFIG_FILE = Path("/etc/zfs-advisor/config.toml")
# Outside the Prometheus wiki's "Default port allocations" (9090-9999 is fully allocated and new
# exporters are given ports upward from 10000; 9134 is zfs_exporter's, 9135 rTorrent's).
DEFAULT_PORT = 21134
# RFC 6750 section 2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
BEARER_TOKEN = re.compile(r"[A-Za-z0-9._~+/-]+=*")
# How a probe keeps its measured reads from coming out of memory (docs/probes.md, "The probe and
# the rest of the host"): "uncached" keeps the scratch dataset's data out of the ARC
# (primarycache=metadata), "arc-cap" lowers zfs_arc_max for the whole host, "cached" does neither.
CacheMethod = Literal["uncached", "arc-cap", "cached"]
CACHE_METHODS: tuple[CacheMethod, ...] = get_args(CacheMethod)


class ProfilerSettings(BaseModel):
    """The background profiler (`zfs-advisor profile`, run by zfs-advisor-probe.timer): which pools
    and workloads it measures, when, and how much per day (docs/probes.md, "Background profiler")."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(False, description="Probe `pools` x `workloads` in idle windows (queued requests run either way).")
    pools: list[str] = Field(default_factory=list, description="Pools the profiler measures.")
    workloads: list[str] = Field(default_factory=list, description="Workloads it measures on each of them.")
    probe_seconds: float = Field(300.0, ge=60, le=3600, description="Wall time of one background probe run.")
    max_request_seconds: float = Field(900.0, ge=60, le=3600, description="Longest budget POST /v1/probes may ask for.")
    daily_seconds: float = Field(1800.0, gt=0, description="Probe time per pool in any 24 hours (all runs count).")
    daily_bytes: int = Field(32 << 30, gt=0, description="Bytes probes may write per pool in any 24 hours.")
    idle_window_seconds: float = Field(30.0, ge=1, le=600, description="Foreground I/O is watched this long first.")
    idle_max_ops_per_second: float = Field(5.0, ge=0, description="More foreground operations than this: not idle.")
    idle_max_bytes_per_second: float = Field(256 << 10, ge=0, description="More foreground bytes than this: not idle.")
    idle_max_cpu_busy: float = Field(0.5, gt=0, le=1, description="The host's CPU busy (steal included) this share "
                                     "of the idle window or more: not idle (a probe would measure the CPU left over).")
    max_file_bytes: int = Field(256 << 20, ge=16 << 20, description="Largest file per fio job of a probe.")
    ramp_seconds: int = Field(5, ge=0, le=60, description="Warm-up discarded per fio run.")
    cache: CacheMethod = Field(
        "uncached", description="How probes keep reads from coming out of memory: uncached (primarycache=metadata on "
        "the scratch dataset only), arc-cap (zfs_arc_max lowered for the whole host while a probe runs: evicts "
        "other pools' cached data), cached (neither).")
    layout_bytes_per_second: float = Field(
        50e6, gt=0, description="How fast fio lays out files here, for the plan's estimate (an emulated VM: ~8 MB/s).")
    max_queued: int = Field(16, ge=1, le=1000, description="POST /v1/probes refuses more queued runs than this.")
    budget_probes: int = Field(
        0, ge=0, le=32, description="Candidates per background run (the baseline included) chosen by the regression "
        "model's expected improvement (needs `model = true`); 0: every candidate not measured yet. From 2, a run of "
        "a workload whose dataset `[workloads]` names on the pool has that dataset's recordsize as its baseline.")
    queued_max_age_seconds: float = Field(
        86400.0, gt=0, description="A queued run not started by then (the pool was never idle) fails, saying why.")

    @field_validator("pools")
    @classmethod
    def _pool_names(cls, value: list[str]) -> list[str]:
        for pool in value:
            check_pool_name(pool)
        return value


class FleetSettings(BaseModel):
    """The fleet's probes read back from Prometheus (docs/fleet.md): off until `prometheus_url` is
    set. Read on a slow schedule in the background, never while an answer is made."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prometheus_url: str | None = Field(
        None, description="Base URL of a Prometheus HTTP API that scrapes the fleet's daemons (Thanos Query and "
        "Mimir's Prometheus-compatible prefix speak the same /api/v1/query); unset: no fleet.")
    timeout_seconds: float = Field(10.0, gt=0, le=120, description="Deadline of one query.")
    interval_seconds: float = Field(900.0, ge=30, le=86400, description="Read the fleet's probes this often.")
    max_age_seconds: float = Field(
        7 * 86400.0, gt=0, description="A fleet view older than this (Prometheus unreachable since) is no longer used.")
    ca_file: Path | None = Field(None, description="PEM CA bundle the Prometheus server's certificate is checked with.")
    insecure_skip_verify: bool = Field(False, description="Do not check the server's certificate (tests only).")
    basic_auth_username: str | None = Field(None, description="Basic auth user (with basic_auth_password_file).")
    basic_auth_password_file: Path | None = Field(None, description="File holding the basic auth password.")
    bearer_token_file: Path | None = Field(None, description="File holding a bearer token (Mimir, a proxy).")
    instance: str | None = Field(
        None, description="This daemon's `instance` label in that Prometheus, whose series are its own pools' and "
        "not siblings' (default: any instance on this host's name).")

    @field_validator("prometheus_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"https?://[^/\s]+", value):
            raise ValueError(f"{value!r} is not an http:// or https:// URL")
        return value.rstrip("/") if value is not None else None

    @model_validator(mode="after")
    def _one_authentication(self) -> FleetSettings:
        if self.bearer_token_file is not None and self.basic_auth_username is not None:
            raise ValueError("give basic_auth_username or bearer_token_file, not both")
        if (self.basic_auth_username is None) != (self.basic_auth_password_file is None):
            raise ValueError("basic_auth_username and basic_auth_password_file go together")
        if self.basic_auth_username is not None and ":" in self.basic_auth_username:
            raise ValueError("basic_auth_username cannot contain ':' (RFC 7617, section 2)")
        return self


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ZFS_ADVISOR_", extra="forbid", validate_default=True)

    listen_address: str = Field("127.0.0.1", description="Address to listen on; loopback by default (read-only API).")
    port: int = Field(DEFAULT_PORT, ge=1, le=65535)
    root: str = Field("/", description="Host root to read: '/' is the live host, a directory replays a host snapshot.")
    command_timeout_seconds: float = Field(
        30.0, gt=0, le=600,
        description="Deadline for each zpool/zfs call (they run in the background: zfs get of thousands of "
        "datasets takes seconds on a loaded host).",
    )
    facts_max_age_seconds: float = Field(
        5.0, ge=0, le=3600, description="Reuse a collection this young instead of reading the kstats again."
    )
    commands_interval_seconds: float = Field(
        15.0, gt=0, le=3600,
        description="Run zpool/zfs in the background this often; requests use their latest output.",
    )
    changes_window_seconds: float = Field(
        600.0, ge=60, le=86400,
        description="Change verification: compare this long of I/O before a tracked setting changed with as "
        "long after it (docs/changes.md); the samples of one window are kept in memory.",
    )
    state_dir: Path = Field(Path("/var/lib/zfs-advisor"), description="Where probe results and history are stored.")
    model: bool = Field(True, description="Predict each dataset recommendation's effect with the regression model "
                        "(the fit shipped with the lab prior; docs/model.md); false: rules and probes only.")
    api_token: SecretStr | None = Field(
        None, description="Bearer token clients beyond loopback send for every endpoint but /healthz and /metrics."
    )
    web_config_file: Path | None = Field(
        None, description="TLS and basic auth, in the Prometheus exporter toolkit's web config format "
        "(node_exporter's --web.config.file; docs/security.md).",
    )
    rules_dir: str | None = Field(None, description="Directory of rule and workload YAML files (default: the shipped rules/).")
    # Exporter (/metrics): deadline and cardinality controls (docs/metrics.md).
    metrics_scrape_deadline_seconds: float = Field(
        8.0, gt=0, le=600, description="Wait at most this long for fresh facts, then serve the last good ones."
    )
    metrics_pool_include: re.Pattern[str] | None = Field(None, description="Regex: only pools named so.")
    metrics_pool_exclude: re.Pattern[str] | None = Field(None, description="Regex: no pools named so.")
    metrics_dataset_include: re.Pattern[str] | None = Field(None, description="Regex: only datasets named so.")
    metrics_dataset_exclude: re.Pattern[str] | None = Field(None, description="Regex: no datasets named so.")
    metrics_per_vdev: bool = Field(False, description="Queues, latencies and histograms per vdev, not only per pool.")
    metrics_per_dataset: bool = Field(False, description="Every objset counter per dataset (per-dataset ZIL stats).")
    metrics_all_disks: bool = Field(False, description="Every block device, not only those behind exported pools.")
    metrics_diskstats: bool = Field(
        False, description="The disks' /proc/diskstats counters (zfs_advisor_disk_*_total), for hosts without "
        "node_exporter's diskstats collector (node_disk_*)."
    )
    workloads: dict[str, str] = Field(
        default_factory=dict,
        description="Dataset -> workload it serves, e.g. {\"tank/pg\" = \"postgres\"}: the advice for each is "
        "exported as zfs_advisor_recommendation_info (workloads are checked against the rules at start).",
    )

    @field_validator("api_token")
    @classmethod
    def _token_syntax(cls, value: SecretStr | None) -> SecretStr | None:
        """A token a client can send: not empty (an empty one matched `Authorization: Bearer` with
        nothing after it) and RFC 6750's b64token characters only, so no whitespace that a client's
        header would lose. The reason never repeats the token."""
        if value is None:
            return value
        token = value.get_secret_value()
        if not token:
            raise ValueError("api_token is empty: give a long random string (openssl rand -hex 32), or leave it out")
        if not BEARER_TOKEN.fullmatch(token):
            space = next((i for i, c in enumerate(token) if c.isspace()), None)
            what = "a character" if space is None else f"whitespace (at position {space + 1} of {len(token)})"
            raise ValueError(f"api_token has {what} a bearer token cannot carry: use letters, digits and "
                             "- . _ ~ + / (then = at the end only), RFC 6750 section 2.1")
        return value

    @model_validator(mode="after")
    def _token_beyond_loopback(self) -> Settings:
        """/v1/facts names disks, datasets and mountpoints: beyond loopback, a token or TLS with basic
        auth guards it (the web config file is read and checked by advisor.config.webconfig.check_exposure)."""
        if self.api_token is None and self.web_config_file is None and not self.loopback_only:
            raise ValueError(f"listen_address {self.listen_address!r} is not loopback: set api_token, or "
                             "web_config_file with TLS and basic_auth_users (docs/security.md)")
        return self

    @property
    def loopback_only(self) -> bool:
        return _is_loopback_address(self.listen_address)

    @field_validator("workloads")
    @classmethod
    def _dataset_names(cls, value: dict[str, str]) -> dict[str, str]:
        for dataset in value:
            check_dataset_name(dataset)  # InvalidName is a ValueError: a validation error naming it
        return value

    @field_validator("state_dir", mode="before")
    @classmethod
    def _state_dir_named(cls, value: Any) -> Any:
        """An empty path is the current directory of whoever starts the service: refused."""
        if isinstance(value, str) and not value.strip():
            raise ValueError("is empty, which would mean the current directory; give a directory such as "
                             "/var/lib/zfs-advisor")
        return value
    profiler: ProfilerSettings = Field(default_factory=ProfilerSettings,
                                       description="[profiler] table: the background profiler (docs/probes.md).")
    fleet: FleetSettings = Field(default_factory=FleetSettings,
                                 description="[fleet] table: sibling pools' probes from Prometheus (docs/fleet.md).")
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_format: Literal["json", "text"] = "json"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        toml_file = settings_cls.model_config.get("toml_file")
        if toml_file:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_file))
        return tuple(sources)


def _is_loopback_address(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name or a wildcard: not known to be loopback


class SettingsError(Exception):
    """Settings that cannot be used; the message says which and why."""


def config_file_path(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    if explicit:
        return Path(explicit)
    if env := os.environ.get("ZFS_ADVISOR_CONFIG"):
        return Path(env)
    return DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.exists() else None


# ZFS_ADVISOR_* variables that are not settings: the config file's path, and those of
# the project's own tooling (install script, test and lab tiers).
_NOT_SETTINGS = ("ZFS_ADVISOR_CONFIG", "ZFS_ADVISOR_PREFIX", "ZFS_ADVISOR_UPDATE_GOLDEN")
_TOOLING_PREFIXES = ("ZFS_ADVISOR_LAB", "ZFS_ADVISOR_TEST_")


def unknown_environment(environ: dict[str, str] | os._Environ[str] = os.environ) -> list[str]:
    """ZFS_ADVISOR_* variables that name no setting: a typo must not leave a default in place."""
    prefix = Settings.model_config["env_prefix"]
    known = {prefix + name.upper() for name in Settings.model_fields}
    return sorted(k for k in environ if k.upper().startswith(prefix) and k.upper() not in known
                  and k.upper() not in _NOT_SETTINGS and not k.upper().startswith(_TOOLING_PREFIXES))


def load_settings(config_file: str | os.PathLike[str] | None = None, **overrides: Any) -> Settings:
    """Settings from defaults, the TOML file, the environment and `overrides` (CLI)."""
    if unknown := unknown_environment():
        valid = ", ".join(sorted(Settings.model_config["env_prefix"] + n.upper() for n in Settings.model_fields))
        raise SettingsError(f"unknown environment variable(s) {', '.join(unknown)}; settings are {valid}")
    path = config_file_path(config_file)
    if path is not None and not path.is_file():
        raise SettingsError(f"config file {path} does not exist")
    settings_cls: type[Settings] = Settings
    if path is not None:
        settings_cls = type("FileSettings", (Settings,), {"model_config": {**Settings.model_config, "toml_file": path}})
    try:
        return settings_cls(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}" for e in exc.errors())
        raise SettingsError(f"invalid settings{f' (from {path})' if path else ''}: {problems}") from None
    except ValueError as exc:  # e.g. malformed TOML
        raise SettingsError(f"cannot read {path}: {exc}") from None
    except RecursionError:  # tomllib recurses per level of nested arrays and inline tables
        raise SettingsError(f"cannot read {path}: values nested too deeply") from None
