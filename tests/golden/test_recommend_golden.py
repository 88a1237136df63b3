"""GET /recommend for every recorded lab snapshot and every shipped workload (and none: general.*),
compared with goldens.

Each snapshot under tests/fixtures/hosts/<zfs version>/<layout>/<state>/ is
served by the real app and asked, over HTTP, for each workload's advice as
JSON and as text; the answers must equal
tests/golden/recommend/<zfs version>/<layout>/<state>/<workload>.json|.txt.
A rule edit (and later the model) shows up as a reviewable diff of these
files. Only the time of the answer is normalised; everything else comes from
the snapshot and the rules.

    python -m pytest tests/golden --update-golden    # or ZFS_ADVISOR_UPDATE_GOLDEN=1
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlencode

import pytest

from advisor.config.settings import Settings
from advisor.engine.loader import load_rulebook
from advisor.engine.models import GENERAL
from advisor.service.app import create_app
from support import HOSTS, check_golden, recorded_snapshots, snapshot_id

GOLDEN = Path(__file__).resolve().parent / "recommend"
SNAPSHOTS = recorded_snapshots()
# `general`: the answer without a workload (asked for with no `workload` parameter at all)
WORKLOADS = [*sorted(load_rulebook().workloads), GENERAL]
GENERATED_AT = "2000-01-01T00:00:00+00:00"  # stands in for the time of the answer
_TEXT_GENERATED = re.compile(r"(, generated )\S+$", re.MULTILINE)


def golden_dir(snapshot: Path) -> Path:
    return GOLDEN.joinpath(*snapshot.relative_to(HOSTS).parts)


def normalise_json(body: str) -> str:
    document = json.loads(body)
    document["generated_at"] = GENERATED_AT
    return json.dumps(document, indent=2) + "\n"


def normalise_text(body: str) -> str:
    return _TEXT_GENERATED.sub(rf"\g<1>{GENERATED_AT[:19]}", body, count=1)


@pytest.mark.parametrize("snapshot", SNAPSHOTS, ids=snapshot_id)
async def test_recommend_output_matches_golden(http_client, snapshot, update_golden):
    client = await http_client(create_app(Settings(root=str(snapshot))))
    for workload in WORKLOADS:
        for fmt, normalise in (("json", normalise_json), ("text", normalise_text)):
            query = {"format": fmt} if workload == GENERAL else {"workload": workload, "format": fmt}
            resp = await client.get("/recommend", params=query)
            assert resp.status == 200, await resp.text()
            golden = golden_dir(snapshot) / f"{workload}.{'json' if fmt == 'json' else 'txt'}"
            check_golden(golden, normalise(await resp.text()), update_golden,
                         f"/recommend?{urlencode(query)} for {snapshot_id(snapshot)}")


def test_every_recommend_golden_has_its_snapshot_and_workload():
    expected = {golden_dir(s) / f"{w}.{ext}" for s in SNAPSHOTS for w in WORKLOADS for ext in ("json", "txt")}
    found = {*GOLDEN.rglob("*.json"), *GOLDEN.rglob("*.txt")}
    assert not found - expected, f"golden files without a snapshot or workload: {sorted(found - expected)}"
    assert len(expected) == 2 * len(SNAPSHOTS) * len(WORKLOADS) > 0
