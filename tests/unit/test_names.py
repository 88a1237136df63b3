import pytest

from advisor.hostmodel.names import InvalidName, check_dataset_name, check_pool_name


@pytest.mark.parametrize("name", ["tank", "tank_2", "a", "pool.with:colon-and_dash", "T" * 239])
def test_valid_pool_names(name):
    assert check_pool_name(name) == name


@pytest.mark.parametrize(
    "name, why",
    [
        ("", "empty"),
        ("2tank", "begin with a letter"),
        ("-rf", "begin with a letter"),
        ("mirror", "reserved"),
        ("raidz1pool", "reserved"),
        ("log", "reserved"),
        ("c0t0d0", "device name"),
        ("tank;rm -rf /", "may contain only"),
        ("tank$(id)", "may contain only"),
        ("tank\nx", "may contain only"),
        ("tank/ds", "may contain only"),
        ("T" * 240, "longer than 239"),  # zfs_namecheck.c: room for <pool>/$ORIGIN@$ORIGIN
    ],
)
def test_invalid_pool_names_say_why(name, why):
    with pytest.raises(InvalidName, match=why):
        check_pool_name(name)


@pytest.mark.parametrize("name", ["tank", "tank/pg", "tank/pg/wal", "tank/with space", "tank/a.b:c-d_e",
                                  "tank/" + "x" * 250])
def test_valid_dataset_names(name):
    assert check_dataset_name(name) == name


@pytest.mark.parametrize(
    "name, why",
    [
        ("tank/pg@snap", "snapshot"),
        ("tank/pg#bm", "bookmark"),
        ("tank//pg", "empty component"),
        ("tank/", "empty component"),
        ("tank/../etc", "'..'"),
        ("tank/pg;reboot", "components may contain only"),
        ("tank/`id`", "components may contain only"),
        ("/tank", "pool name is empty"),
        ("-o/x", "begin with a letter"),
        ("tank/" + "x" * 260, "longer than"),
        ("tank/" + "x" * 251, "longer than 255"),
        ("tank/pg\n", "components may contain only"),  # `$` matches before a final newline: fullmatch
        ("tank\n/pg", "may contain only"),
    ],
)
def test_invalid_dataset_names_say_why(name, why):
    with pytest.raises(InvalidName, match=why):
        check_dataset_name(name)
