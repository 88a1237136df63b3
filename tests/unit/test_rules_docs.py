"""docs/rules.md is generated from the rules and must match them."""
from __future__ import annotations

from pathlib import Path

from advisor.engine.docs import render
from advisor.engine.loader import load_rulebook

DOC = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


def test_rules_reference_is_up_to_date():
    assert DOC.read_text(encoding="utf-8") == render(load_rulebook()), (
        "docs/rules.md is stale: run `python -m advisor.engine.docs > docs/rules.md`"
    )


def test_every_rule_and_its_sources_are_documented():
    text = DOC.read_text(encoding="utf-8")
    for rule in load_rulebook().rules:
        assert f"`{rule.id}`" in text
        for ref in rule.references:
            assert str(ref) in text
