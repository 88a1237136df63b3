"""The web configuration file (`--web.config.file`, `web_config_file`): TLS and basic auth.

The format is the Prometheus exporter toolkit's, which node_exporter and most exporters
read (https://github.com/prometheus/exporter-toolkit/blob/master/docs/web-configuration.md),
so a file written for them works here for the keys below:

    tls_server_config:
      cert_file: /etc/zfs-advisor/tls/server.crt
      key_file: /etc/zfs-advisor/tls/server.key
      client_auth_type: RequireAndVerifyClientCert   # or NoClientCert (default), VerifyClientCertIfGiven
      client_ca_file: /etc/zfs-advisor/tls/clients-ca.crt
      min_version: TLS12                             # TLS10..TLS13, default TLS12
      max_version: TLS13
    basic_auth_users:
      prometheus: $2y$10$...                          # bcrypt hash (htpasswd -nBC 10 "" | tr -d ':\\n')

The toolkit's other keys (inline `cert`/`key`/`client_ca`, cipher_suites, curve_preferences,
client_allowed_sans, http_server_config, rate_limit) are refused with a message rather than
ignored: a setting that silently does nothing is worse than none. The file is read and
checked at start-up and again on SIGHUP (advisor/service/reload.py: users and the certificate change
then; the client CA and TLS on/off need a restart), not on every request as the toolkit does.
"""
from __future__ import annotations

import base64
import binascii
import re
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from advisor.config.settings import SettingsError
from advisor.config.tlscheck import handshake_failure, set_versions

TLS_KEYS = ("cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version", "max_version")
TOP_KEYS = ("tls_server_config", "basic_auth_users")
# Keys of the toolkit's format this program does not implement: named so the error says so.
UNSUPPORTED = {
    "cert": "give cert_file", "key": "give key_file", "client_ca": "give client_ca_file",
    "cipher_suites": "Python's ssl defaults are used", "curve_preferences": "Python's ssl defaults are used",
    "prefer_server_cipher_suites": "Python's ssl defaults are used",
    "client_allowed_sans": "not implemented", "http_server_config": "not implemented", "rate_limit": "not implemented",
}
CLIENT_AUTH = {  # the toolkit's names (Go's tls.ClientAuthType) -> Python's verify mode
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
# RequestClientCert and RequireAnyClientCert accept a certificate without verifying it; Python's
# ssl module cannot ask for a certificate without verifying it, and the toolkit's own docs call
# both insecure.
UNSUPPORTED_CLIENT_AUTH = ("RequestClientCert", "RequireAnyClientCert")
TLS_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1, "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3,
}
# A bcrypt hash as htpasswd -B, Python's bcrypt and Go's x/crypto/bcrypt write it.
BCRYPT = re.compile(r"^\$2[abxy]?\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}$")
MAX_FILE_BYTES = 1 << 20


class WebConfigError(SettingsError):
    """The web configuration file cannot be used; one line naming the file, the key and why."""


@dataclass(frozen=True)
class TlsConfig:
    cert_file: Path
    key_file: Path
    client_auth_type: str = "NoClientCert"
    client_ca_file: Path | None = None
    min_version: str = "TLS12"
    max_version: str = "TLS13"

    def context(self) -> ssl.SSLContext:
        """The server's SSL context (certificates are loaded here: errors name the file)."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        set_versions(ctx, TLS_VERSIONS[self.min_version], TLS_VERSIONS[self.max_version])
        try:
            ctx.load_cert_chain(self.cert_file, self.key_file)
        except (ssl.SSLError, OSError) as exc:
            raise WebConfigError(f"tls_server_config: cannot load cert_file {self.cert_file} with key_file "
                                 f"{self.key_file}: {_reason(exc)}") from None
        if self.client_ca_file is not None:
            try:
                ctx.load_verify_locations(cafile=self.client_ca_file)
            except (ssl.SSLError, OSError) as exc:
                raise WebConfigError(f"tls_server_config: cannot load client_ca_file {self.client_ca_file}: "
                                     f"{_reason(exc)}") from None
        ctx.verify_mode = CLIENT_AUTH[self.client_auth_type]
        return ctx


def _reason(exc: Exception) -> str:
    return getattr(exc, "reason", None) or getattr(exc, "strerror", None) or str(exc)


@dataclass
class WebConfig:
    """What the file says; an empty WebConfig (no file) means plain HTTP, no basic auth."""

    path: Path | None = None
    tls: TlsConfig | None = None
    users: dict[str, str] = field(default_factory=dict)  # user -> bcrypt hash (checked by advisor/server/passwords.py)

    @property
    def basic_auth(self) -> bool:
        return bool(self.users)

    def ssl_context(self) -> ssl.SSLContext | None:
        return self.tls.context() if self.tls else None


def parse_basic(header: str | None) -> tuple[str, str] | None:
    scheme, _, encoded = (header or "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, sep, password = decoded.partition(":")
    return (user, password) if sep else None


def load_web_config(path: str | Path | None) -> WebConfig:
    """The checked web configuration; WebConfigError (one line) for anything unusable."""
    if path is None:
        return WebConfig()
    path = Path(path)
    where = f"web config {path}"
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise WebConfigError(f"{where}: larger than {MAX_FILE_BYTES} bytes")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise WebConfigError(f"{where}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise WebConfigError(f"{where}: cannot read it: {_reason(exc)}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise WebConfigError(f"{where}: not valid YAML{at}: {getattr(exc, 'problem', None) or exc}") from None
    except RecursionError:  # PyYAML composes nested collections recursively: [[[[... 5,000 deep
        raise WebConfigError(f"{where}: not valid YAML: nested too deeply (the format nests 2 levels)") from None
    if data is None:
        return WebConfig(path=path)  # an empty file, as the toolkit allows: plain HTTP
    if not isinstance(data, dict):
        raise WebConfigError(f"{where}: expected a mapping with {' and/or '.join(TOP_KEYS)}")
    _no_unknown(where, "", data, TOP_KEYS)
    tls = _tls(where, data.get("tls_server_config"), path.parent)
    users = _users(where, data.get("basic_auth_users"))
    return WebConfig(path=path, tls=tls, users=users)


def _no_unknown(where: str, prefix: str, data: dict[str, Any], known: tuple[str, ...]) -> None:
    for key in data:
        if key in UNSUPPORTED:
            raise WebConfigError(f"{where}: {prefix}{key} is not supported by zfs-advisor ({UNSUPPORTED[key]})")
        if key not in known:
            raise WebConfigError(f"{where}: unknown key {prefix}{key!s}; valid: {', '.join(known)}")


def _tls(where: str, data: Any, base: Path) -> TlsConfig | None:
    if data is None:
        return None
    if not isinstance(data, dict):
        raise WebConfigError(f"{where}: tls_server_config must be a mapping")
    _no_unknown(where, "tls_server_config.", data, TLS_KEYS)
    for key, value in data.items():
        if not isinstance(value, str) or not value:
            raise WebConfigError(f"{where}: tls_server_config.{key} must be a non-empty string")
    auth = _client_auth_type(where, data)
    if auth == "NoClientCert":
        ca = _tls_file(where, data, base, "client_ca_file")
    else:
        ca = _required_tls_file(where, data, base, "client_ca_file")
    if ca is not None and auth == "NoClientCert":
        raise WebConfigError(f"{where}: tls_server_config.client_ca_file needs a client_auth_type that checks "
                             f"certificates ({', '.join(a for a in CLIENT_AUTH if a != 'NoClientCert')})")
    versions = _tls_versions(where, data)
    tls = TlsConfig(cert_file=_required_tls_file(where, data, base, "cert_file"),
                    key_file=_required_tls_file(where, data, base, "key_file"),
                    client_auth_type=auth, client_ca_file=ca, **versions)
    probe = tls.context()  # unreadable or mismatched certificates stop start-up, not the first scrape
    probe.verify_mode = ssl.CERT_NONE  # the check's client has no certificate to show
    if (failure := handshake_failure(probe)) is not None:
        raise WebConfigError(f"{where}: tls_server_config.min_version {tls.min_version} with max_version "
                             f"{tls.max_version}: no TLS handshake succeeds with this OpenSSL ({ssl.OPENSSL_VERSION}: "
                             f"{failure}); its security level may refuse versions below TLS12")
    return tls


def _tls_file(where: str, data: dict[str, str], base: Path, key: str) -> Path | None:
    if key not in data:
        return None
    resolved = base / data[key]  # relative names are relative to the web config file
    if not resolved.is_file():
        raise WebConfigError(f"{where}: tls_server_config.{key}: {resolved} is not a file")
    return resolved


def _required_tls_file(where: str, data: dict[str, str], base: Path, key: str) -> Path:
    if (path := _tls_file(where, data, base, key)) is None:
        raise WebConfigError(f"{where}: tls_server_config.{key} is required")
    return path


def _client_auth_type(where: str, data: dict[str, str]) -> str:
    auth = data.get("client_auth_type", "NoClientCert")
    if auth in UNSUPPORTED_CLIENT_AUTH:
        raise WebConfigError(f"{where}: tls_server_config.client_auth_type {auth} is not supported (it accepts "
                             f"unverified certificates); valid: {', '.join(CLIENT_AUTH)}")
    if auth not in CLIENT_AUTH:
        raise WebConfigError(f"{where}: tls_server_config.client_auth_type {auth!r} is not valid; "
                             f"valid: {', '.join(CLIENT_AUTH)}")
    return auth


def _tls_versions(where: str, data: dict[str, str]) -> dict[str, str]:
    """min_version and max_version, valid and in order."""
    versions = {}
    for key, default in (("min_version", "TLS12"), ("max_version", "TLS13")):
        versions[key] = data.get(key, default)
        if versions[key] not in TLS_VERSIONS:
            raise WebConfigError(f"{where}: tls_server_config.{key} {versions[key]!r} is not valid; "
                                 f"valid: {', '.join(TLS_VERSIONS)}")
    if TLS_VERSIONS[versions["min_version"]] > TLS_VERSIONS[versions["max_version"]]:
        raise WebConfigError(f"{where}: tls_server_config.min_version is above max_version")
    return versions


def _users(where: str, data: Any) -> dict[str, str]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise WebConfigError(f"{where}: basic_auth_users must be a mapping of user name to bcrypt hash")
    users: dict[str, str] = {}
    for user, hashed in data.items():
        if not isinstance(user, str) or not user or ":" in user:
            raise WebConfigError(f"{where}: basic_auth_users: user name {user!r} must be a non-empty string "
                                 "without ':'")
        if not isinstance(hashed, str) or not BCRYPT.match(hashed):
            raise WebConfigError(f"{where}: basic_auth_users.{user}: not a bcrypt hash (expected $2y$10$ and 53 "
                                 "characters, as `htpasswd -nBC 10 \"\" | tr -d ':\\n'` prints)")
        users[user] = hashed
    return users


def check_exposure(settings: Any, web: WebConfig) -> None:
    """Beyond loopback, someone must authenticate: an api_token, or TLS with basic auth (passwords
    never cross the network in clear). `settings` is an advisor.config.settings.Settings."""
    if settings.loopback_only or settings.api_token is not None:
        return
    if web.tls is None or not web.basic_auth:
        missing = " and ".join(n for n, ok in (("tls_server_config", web.tls), ("basic_auth_users", web.basic_auth))
                               if not ok)
        raise WebConfigError(f"listen_address {settings.listen_address!r} is not loopback: set api_token, or give "
                             f"{settings.web_config_file} {missing} (TLS with basic auth)")
