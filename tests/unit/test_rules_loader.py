"""The shipped rules and workloads load; broken ones stop start-up with a clear message."""
from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path

import pytest

from advisor.engine.derived_catalogue import CATALOGUE
from advisor.engine.loader import RulesError, load_rulebook
from advisor.rules import RULES_DIR

# The profiles are their files: a new one is read from the rule book, not listed here.
WORKLOADS = {p.stem for p in (RULES_DIR / "workloads").glob("*.yaml")}


def test_shipped_rules_load():
    book = load_rulebook()
    assert set(book.workloads) == WORKLOADS and "postgres" in WORKLOADS
    assert len(book.rules) >= 30
    ids = [r.id for r in book.rules]
    assert len(ids) == len(set(ids))


def test_every_rule_cites_openzfs_or_the_application():
    for rule in load_rulebook().rules:
        hosts = {r.host for r in rule.references}
        assert hosts, rule.id
        assert all(str(r).startswith("https://") for r in rule.references), rule.id


@pytest.mark.parametrize(
    "parameter",
    [
        "ashift", "recordsize", "volblocksize", "compression", "logbias", "primarycache", "atime", "xattr",
        "redundant_metadata", "sync", "log_vdev", "special_vdev", "special_small_blocks", "zfs_txg_timeout",
        "zfs_dirty_data_max", "zfs_delay_scale", "zfs_vdev_async_write_max_active", "zfs_vdev_async_write_min_active",
        "zfs_vdev_mirror_rotating_seek_inc", "zfs_vdev_max_auto_ashift", "mirror_media", "capacity",
        "fragmentation", "raidz_width", "vdev_type", "redundancy",
    ],
)
def test_required_parameters_are_covered(parameter):
    assert any(r.parameter == parameter for r in load_rulebook().rules)


def test_workload_fio_jobs_fill_their_parameters():
    book = load_rulebook()
    job = book.workloads["postgres"].fio_job({"page_size": "16K"})
    assert "[global]" in job and "bs=16K" in job and "{" not in job
    for workload in book.workloads.values():
        text = workload.fio_job({})
        assert text.count("[") >= 2 and "{" not in text


@pytest.fixture
def rules_copy(tmp_path: Path) -> Path:
    target = tmp_path / "rules"
    shutil.copytree(RULES_DIR, target, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    return target


def _append_rule(directory: Path, body: str) -> None:
    (directory / "zz-broken.yaml").write_text("rules:\n" + body, encoding="utf-8")


def _needs_load(fact: str, measure: str) -> str:
    return f"    needs_load: {{when: [{{fact: {fact}, op: gt, value: 0}}], explanation: x, measure: [zfs-advisor, '{measure}']}}\n"


GOOD = """\
  - id: test-rule
    title: a test rule for the loader
    parameter: recordsize
    scope: dataset
    current: {fact: dataset.recordsize}
    recommended: 32K
    confidence: 0.5
    explanation: {change: "x {dataset.name}", ok: "y"}
    effect: new-writes
    reversible: "yes"
    references: [https://openzfs.github.io/openzfs-docs/man/master/7/zfsprops.7.html#recordsize]
"""


def test_a_valid_extra_rule_loads(rules_copy):
    _append_rule(rules_copy, GOOD)
    assert load_rulebook(rules_copy).rule("test-rule") is not None


@pytest.mark.parametrize(
    "change, message",
    [
        (("recommended: 32K", "recommended: lots"), "not a size"),
        (("{fact: dataset.recordsize}", "{fact: dataset.recordsise}"), "unknown fact 'dataset.recordsise'"),
        (("confidence: 0.5", "confidence: 1.5"), "confidence"),
        (("scope: dataset", "scope: everywhere"), "scope"),
        (("effect: new-writes", "effect: whenever"), "effect"),
        (("https://openzfs", "http://openzfs"), "must be https"),
        (("https://openzfs.github.io", "https://example.com"), "must be https on one of"),
        (("x {dataset.name}", "x {dataset.name.__class__}"), "unknown fact"),
        (("x {dataset.name}", "x {dataset.name!r}"), "plain fact name"),
        (("x {dataset.name}", "x {0}"), "plain fact name"),
        (("parameter: recordsize", "parameter: record size"), "parameter"),
        (("id: test-rule", "id: Test Rule"), "id"),
        (("    reversible: \"yes\"\n", "    reversible: \"yes\"\n    eval: __import__('os')\n"), "Extra inputs"),
        (("    reversible: \"yes\"\n", "    reversible: \"yes\"\n" + _needs_load("host.dirty_delayz", "x")),
         "unknown fact 'host.dirty_delayz'"),
        (("    reversible: \"yes\"\n", "    reversible: \"yes\"\n" + _needs_load("host.dirty_data_delays", "{pool.nam}")),
         "unknown fact 'pool.nam'"),
        (("    reversible: \"yes\"\n", "    reversible: \"yes\"\n    needs_load: {when: [], explanation: x, measure: [x]}\n"),
         "at least 1 item"),
    ],
)
def test_broken_rules_stop_loading_with_the_file_and_rule_named(rules_copy, change, message):
    _append_rule(rules_copy, GOOD.replace(*change))
    with pytest.raises(RulesError, match="zz-broken.yaml") as exc:
        load_rulebook(rules_copy)
    assert message in str(exc.value)


def test_clause_with_unknown_op_is_rejected(rules_copy):
    _append_rule(rules_copy, GOOD.replace("    current:", "    when: [{fact: pool.media, op: matches, value: hdd}]\n    current:"))
    with pytest.raises(RulesError, match="op"):
        load_rulebook(rules_copy)


def test_clause_comparing_string_with_lt_is_rejected(rules_copy):
    _append_rule(rules_copy, GOOD.replace("    current:", "    when: [{fact: pool.media, op: lt, value: hdd}]\n    current:"))
    with pytest.raises(RulesError, match="numeric"):
        load_rulebook(rules_copy)


def test_rule_naming_an_unknown_workload_is_rejected(rules_copy):
    _append_rule(rules_copy, GOOD.replace("    current:", "    workloads: [oracle]\n    current:"))
    with pytest.raises(RulesError, match=r"unknown workloads \['oracle'\]"):
        load_rulebook(rules_copy)


def test_duplicate_rule_ids_are_rejected(rules_copy):
    _append_rule(rules_copy, GOOD + GOOD)
    with pytest.raises(RulesError, match="already used"):
        load_rulebook(rules_copy)


def test_yaml_syntax_error_names_the_file(rules_copy):
    (rules_copy / "zz-broken.yaml").write_text("rules: [\n", encoding="utf-8")
    with pytest.raises(RulesError, match="zz-broken.yaml: not valid YAML"):
        load_rulebook(rules_copy)


def test_yaml_cannot_construct_python_objects(rules_copy):
    (rules_copy / "zz-broken.yaml").write_text("rules: !!python/object/apply:os.system ['true']\n", encoding="utf-8")
    with pytest.raises(RulesError, match="not valid YAML"):
        load_rulebook(rules_copy)


def test_workload_with_unknown_fio_placeholder_is_rejected(rules_copy):
    path = rules_copy / "workloads" / "postgres.yaml"
    path.write_text(path.read_text().replace('bs: "{page_size}"', 'bs: "{pagesize}"', 1))
    with pytest.raises(RulesError, match=r"postgres.yaml: invalid workload.*unknown parameter \{pagesize\}"):
        load_rulebook(rules_copy)


@pytest.mark.parametrize("shared", ["[data]", "[logs]"])
def test_a_role_can_share_its_dataset_only_with_the_workloads_other_roles(rules_copy, shared):
    path = rules_copy / "workloads" / "postgres.yaml"
    path.write_text(path.read_text().replace("shares_with: [wal]", f"shares_with: {shared}", 1))
    with pytest.raises(RulesError, match=r"postgres.yaml: invalid workload.*role data: shares_with"):
        load_rulebook(rules_copy)


def test_workload_name_must_match_file(rules_copy):
    path = rules_copy / "workloads" / "postgres.yaml"
    (rules_copy / "workloads" / "pg.yaml").write_text(path.read_text())
    with pytest.raises(RulesError, match="must match the file name"):
        load_rulebook(rules_copy)


def test_missing_directory():
    with pytest.raises(RulesError, match="does not exist"):
        load_rulebook("/nonexistent/rules")


def test_catalogue_descriptions_are_present():
    assert all(d.description for d in CATALOGUE.values())


def _add_workload(rules_copy: Path, name: str, **io: object) -> None:
    """A new profile: the postgres one renamed, with other io traits."""
    text = (rules_copy / "workloads" / "postgres.yaml").read_text().replace("name: postgres", f"name: {name}", 1)
    for key, value in io.items():
        text = re.sub(rf"^  {key}: .*$", f"  {key}: {value}", text, count=1, flags=re.M)
    (rules_copy / "workloads" / f"{name}.yaml").write_text(text)


def test_a_new_workload_gets_the_rules_its_io_traits_select(rules_copy):
    _add_workload(rules_copy, "oltp", pattern="random", sync="light", read_fraction=0.9)
    book = load_rulebook(rules_copy)
    ids = {r.id for r in book.rules_for(book.workloads["oltp"])}
    assert {"geometry-raidz-random-io", "async-write-min-active-hdd", "compression-lz4"} <= ids
    assert not ids & {"recordsize-sequential", "compression-zstd-for-archives", "recordsize-postgres"}


def test_a_workload_no_specific_rule_selects_is_named_in_a_warning(rules_copy, caplog):
    for path in rules_copy.glob("*.yaml"):
        path.unlink()
    (rules_copy / "only.yaml").write_text("rules:\n" + GOOD.replace("recommended: 32K", "workloads: [postgres]\n    recommended: 32K"))
    _add_workload(rules_copy, "newcomer")
    with caplog.at_level(logging.WARNING, logger="advisor.engine.loader"):
        book = load_rulebook(rules_copy)
    warned = [r.getMessage() for r in caplog.records]
    assert [w.split()[1] for w in warned] == [n for n in sorted(book.workloads) if n != "postgres"]
    assert "newcomer" in book.workloads and "matches no workload-specific rule" in warned[0]


def test_the_shipped_workloads_each_have_workload_specific_rules(caplog):
    with caplog.at_level(logging.WARNING, logger="advisor.engine.loader"):
        load_rulebook()
    assert not caplog.records


@pytest.mark.parametrize("traits", ["{}", "{pattern: [diagonal]}", "{read_fraction_below: 2}"])
def test_trait_selectors_are_validated(rules_copy, traits):
    _append_rule(rules_copy, GOOD.replace("recommended: 32K", f"workloads: {traits}\n    recommended: 32K"))
    with pytest.raises(RulesError, match="zz-broken.yaml: rule test-rule: workloads"):
        load_rulebook(rules_copy)
