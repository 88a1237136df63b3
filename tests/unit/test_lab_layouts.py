"""The lab's layouts sharing one VM (tests/lab/conftest.py): every disk keeps a unique serial, hence a
unique /dev/disk/by-id name, and each layout's pool is built from its own disks only."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab"))
import lablayouts  # noqa: E402 - after the sys.path line above


def shared_vm_layouts():
    return [layout.with_serial_prefix(f"L{i}") for i, layout in enumerate(lablayouts.load().values())]


def test_serials_are_unique_when_every_layout_shares_a_vm():
    serials = [d.serial for layout in shared_vm_layouts() for d in layout.disks]
    assert len(serials) == len(set(serials)) > len(lablayouts.load())
    names = [d.name for layout in lablayouts.load().values() for d in layout.disks]
    assert len(names) > len(set(names))  # without prefixes they would collide


def test_each_pool_is_created_from_its_own_prefixed_disks():
    for layout in shared_vm_layouts():
        own = {d.by_id for d in layout.disks}
        devices = {a for a in layout.zpool_create_argv() if a.startswith("/dev/")}
        assert devices == own, layout.name
        script = layout.setup_script()
        assert all(d.by_id in script for d in layout.disks)


def test_a_layout_alone_keeps_its_recorded_disk_names():
    layout = lablayouts.get("ssd-mirror2x2")
    assert [d.by_id.rsplit("_", 1)[1] for d in layout.disks] == ["ssd0", "ssd1", "ssd2", "ssd3"]


def test_the_measured_priors_layouts_boot_on_its_line_alone(monkeypatch):
    import labparams

    monkeypatch.delenv("ZFS_ADVISOR_LAB_ZFS", raising=False)
    monkeypatch.delenv("ZFS_ADVISOR_LAB_LAYOUTS", raising=False)
    monkeypatch.setenv("ZFS_ADVISOR_LAB_LONG", "1")  # every layout on every line of its own
    ids = {p.id for p in labparams.lab_params()}
    for name in ("ssd-raidz1x4", "hdd-mirror2x2", "hdd-raidz2x6", "hdd-raidz1x5"):
        assert lablayouts.get(name).lines == ("2.3",)
        assert f"zfs2.3-{name}" in ids and f"zfs2.1-{name}" not in ids
    assert {"zfs2.1-hdd-raidz1x4", "zfs2.3-hdd-raidz1x4", "zfs2.1-near-full"} <= ids  # the others on every line
    assert [p.id for p in labparams.lab_params(["hdd-raidz2x6"], lines=["2.1"])] == []


def test_ci_boots_a_layout_on_its_ci_lines_alone(monkeypatch):
    import labparams

    monkeypatch.delenv("ZFS_ADVISOR_LAB_ZFS", raising=False)
    monkeypatch.delenv("ZFS_ADVISOR_LAB_LAYOUTS", raising=False)
    monkeypatch.delenv("ZFS_ADVISOR_LAB_LONG", raising=False)
    ids = {p.id for p in labparams.lab_params()}
    assert lablayouts.get("hdd-raidz2x6").ci_lines == () and not any(i.endswith("-hdd-raidz2x6") for i in ids)
    assert lablayouts.get("mixed-mirror-ssd-hdd").ci_lines == ("2.3",)
    assert "zfs2.3-mixed-mirror-ssd-hdd" in ids and "zfs2.1-mixed-mirror-ssd-hdd" not in ids
    assert lablayouts.get("near-full").ci_lines == () and not any(i.endswith("-near-full") for i in ids)
    assert lablayouts.get("hdd-raidz1x4").ci_lines is None and {"zfs2.1-hdd-raidz1x4", "zfs2.3-hdd-raidz1x4"} <= ids
    # the VM of a line gets the disks of the layouts it boots there
    assert labparams.booted_layouts("2.1") == ["hdd-raidz1x4", "ssd-mirror2x2", "4kn-ashift9"]


def test_the_debian13_line_runs_only_the_tests_that_name_it(monkeypatch):
    import labparams

    monkeypatch.delenv("ZFS_ADVISOR_LAB_ZFS", raising=False)
    monkeypatch.delenv("ZFS_ADVISOR_LAB_LAYOUTS", raising=False)
    monkeypatch.delenv("ZFS_ADVISOR_LAB_LONG", raising=False)
    assert not any(p.id.startswith("debian13-") for p in labparams.lab_params())
    assert [p.id for p in labparams.lab_params(["ssd-mirror2x2"], lines=["debian13"])] == ["debian13-ssd-mirror2x2"]
    monkeypatch.setenv("ZFS_ADVISOR_LAB_ZFS", "2.3")
    assert labparams.lab_params(["ssd-mirror2x2"], lines=["debian13"]) == []


def test_the_debian13_recipe_and_the_openzfs_lines_recipe_key_apart():
    """Editing the trixie recipe rebuilds neither the 2.1 nor the 2.3 image, and the other way round
    (only recipe/common.sh, the mirror and chroot helpers, is shared)."""
    import labimage

    bookworm = set(labimage.recipe("2.1").files)
    assert set(labimage.recipe("2.3").files) == bookworm
    trixie = set(labimage.recipe("debian13").files)
    assert bookworm & trixie == {labimage.LAB_DIR / "recipe" / "common.sh"}
    assert labimage.recipe("debian13").base_script in trixie and labimage.recipe("2.1").base_script in bookworm
    keys = {labimage.image_key(line) for line in labimage.LINES} | {labimage.base_key(), labimage.base_key("debian13")}
    assert len(keys) == 5
    assert labimage.base_key("2.1") == labimage.base_key("2.3") == labimage.base_key()


def test_the_application_image_starts_from_the_bookworm_base_and_keys_apart():
    """The application image (line 2.3-apps, docs/apps.md) is the OpenZFS lines' base plus
    recipe/apps/: its recipe hashes theirs and its own, theirs does not hash recipe/apps/ (adding
    the applications rebuilt neither the 2.1 nor the 2.3 image), and no lab test runs on it."""
    import labimage

    apps = set(labimage.recipe(labimage.APPS).files)
    assert set(labimage.recipe("2.3").files) < apps
    assert all(f.parent.name == "apps" for f in apps - set(labimage.recipe("2.3").files))
    assert labimage.base_key(labimage.APPS) == labimage.base_key("2.3")
    assert labimage.image_key(labimage.APPS) not in {labimage.image_key(line) for line in labimage.LINES}
    assert labimage.APPS not in labimage.LINES and labimage.APPS in labimage.IMAGE_LINES
    # build-image deletes older images by prefix: a 2.3 build must not take the application image along
    assert not labimage.image_key(labimage.APPS).startswith(labimage.recipe("2.3").image_prefix)
