"""A real Prometheus (Debian's `prometheus` package) for tests: start, scrape targets, query.

    with PrometheusServer(tmp_path, targets=["127.0.0.1:21134"], scrape_interval="1s") as prom:
        prom.wait_for("up == 1")
        prom.query("zfs_pool_health_state")  # -> list of {"metric": {...}, "value": [t, "v"]}
"""
from __future__ import annotations

import base64
import json
import shutil
import socket
import ssl
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from support.waiting import poll

_UNCHECKED = ssl.create_default_context()  # this class's own requests: the tests make their own certificates
_UNCHECKED.check_hostname, _UNCHECKED.verify_mode = False, ssl.CERT_NONE


class PromQLError(Exception):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrometheusServer:
    def __init__(self, workdir: Path, targets: list[str] = (), scrape_interval: str = "1s", job_options: str = "",
                 rule_files: list[Path] = (), evaluation_interval: str | None = None, web_config: Path | None = None,
                 basic_auth: tuple[str, str] | None = None):
        """`job_options`: more YAML for the scrape job, indented as its keys (e.g. `    scheme: https`);
        `rule_files`: alerting/recording rules to load, evaluated every `evaluation_interval`
        (the scrape interval by default); `web_config`: its own --web.config.file (TLS, basic
        auth): `url` is then https:// when it has tls_server_config, which this class's own requests
        do not check, and they send `basic_auth` (user, password)."""
        binary = shutil.which("prometheus")
        if binary is None:
            raise FileNotFoundError("prometheus not found: install Debian's `prometheus` package")
        self.binary = binary
        self.workdir = Path(workdir)
        self.port = free_port()
        self.web_config = web_config
        self.headers = {}
        if basic_auth is not None:
            self.headers["Authorization"] = "Basic " + base64.b64encode(":".join(basic_auth).encode()).decode()
        tls = web_config is not None and "tls_server_config" in Path(web_config).read_text()
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        targets_yaml = json.dumps(list(targets))
        self.config = self.workdir / "prometheus.yml"
        rules = "".join(f"  - {json.dumps(str(Path(r).resolve()))}\n" for r in rule_files)
        self.config.write_text(
            f"global:\n  scrape_interval: {scrape_interval}\n  scrape_timeout: {scrape_interval}\n"
            f"  evaluation_interval: {evaluation_interval or scrape_interval}\n"
            + (f"rule_files:\n{rules}" if rules else "")
            + f"scrape_configs:\n  - job_name: zfs-advisor\n    static_configs:\n      - targets: {targets_yaml}\n"
            + job_options
        )
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> PrometheusServer:
        self.log = open(self.workdir / "prometheus.log", "wb")
        self.proc = subprocess.Popen(
            [
                self.binary,
                f"--config.file={self.config}",
                f"--storage.tsdb.path={self.workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--web.enable-lifecycle",
                *([f"--web.config.file={self.web_config}"] if self.web_config is not None else []),
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        if poll(self._ready_or_gone, 60, interval=0.2) and self.proc.poll() is None:
            return self
        self.__exit__()
        raise RuntimeError(f"prometheus did not become ready:\n{(self.workdir / 'prometheus.log').read_text()[-3000:]}")

    def _ready_or_gone(self) -> bool:
        """True once Prometheus says it is ready, or it has exited (no use waiting)."""
        if self.proc.poll() is not None:
            return True
        try:
            self._open(f"{self.url}/-/ready", timeout=2).read()
            return True
        except OSError:
            return False

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def _open(self, url: str, timeout: float):
        return urllib.request.urlopen(urllib.request.Request(url, headers=self.headers), timeout=timeout,
                                      context=_UNCHECKED)

    def query(self, expr: str) -> list[dict]:
        url = f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        try:
            with self._open(url, timeout=30) as resp:
                body = json.load(resp)
        except urllib.error.HTTPError as exc:
            body = json.load(exc)
        if body.get("status") != "success":
            raise PromQLError(f"{expr}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]["result"]

    def wait_for(self, expr: str, timeout: float = 60) -> list[dict]:
        """Poll until `expr` returns a non-empty result."""
        result = poll(lambda: self.query(expr), timeout, interval=0.5)
        if not result:
            raise TimeoutError(f"no result for {expr} within {timeout} s")
        return result

    def firing(self, alertname: str) -> list[dict]:
        """The labels of each firing alert of that name (the ALERTS series Prometheus writes)."""
        return [r["metric"] for r in self.query(f'ALERTS{{alertname="{alertname}",alertstate="firing"}}')]

    def targets(self) -> list[dict]:
        """The active scrape targets (health, lastError, ...) as /api/v1/targets lists them."""
        with self._open(f"{self.url}/api/v1/targets?state=active", timeout=30) as resp:
            return json.load(resp)["data"]["activeTargets"]
