"""deploy/config.example.toml loads with the real settings class and tells the truth about defaults."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from advisor.config.settings import Settings, load_settings

EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "config.example.toml"
# A commented-out setting: "# key = value", "# [table]" or '# "quoted key" = value'.
_COMMENTED = re.compile(r'^# ((?:\w+|"[^"]+") = .+|\[\w+\])$', re.MULTILINE)


@pytest.fixture(autouse=True)
def _no_environment(monkeypatch):
    for key in list(__import__("os").environ):
        if key.startswith("ZFS_ADVISOR_"):
            monkeypatch.delenv(key)


def test_the_example_loads_and_its_values_are_the_defaults():
    loaded = load_settings(EXAMPLE)
    defaults = Settings()
    shown = set(re.findall(r"^(\w+) = ", EXAMPLE.read_text(), re.MULTILINE))
    assert len(shown) >= 12
    assert {k: getattr(loaded, k) for k in shown} == {k: getattr(defaults, k) for k in shown}


def test_every_commented_setting_is_accepted_when_uncommented(tmp_path):
    text = EXAMPLE.read_text()
    assert len(_COMMENTED.findall(text)) >= 8
    uncommented = tmp_path / "config.toml"
    uncommented.write_text(_COMMENTED.sub(r"\1", text))
    loaded = load_settings(uncommented)
    assert loaded.workloads == {"tank/pg": "postgres", "tank/media": "media"}
    assert loaded.metrics_pool_exclude.pattern == "scratch"
    assert loaded.api_token is not None
    assert loaded.profiler.enabled and loaded.profiler.pools == ["tank"]
