"""Dataset and zvol properties that matter for tuning: `zfs get -Hp` (zfsprops(7)).

One call for every filesystem and volume, a fixed property list (asking for
`all` costs ~70 rows per dataset, which hurts at thousands of datasets).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from advisor.host import property_domains
from advisor.host.parsing import INT_MAX, ParseError, compact_dict, interned, lines_in_blocks, shown, whole_lines
from advisor.host.runner import CommandRunner
from advisor.hostmodel.facts import Dataset, Property, fields_set
from advisor.hostmodel.names import InvalidName, check_dataset_name
from advisor.hostmodel.tunables import TUNING_PROPERTIES

# the `type` values of the datasets advised on (Dataset.type)
_DATASET_TYPES: dict[str, Literal["filesystem", "volume"]] = {"filesystem": "filesystem", "volume": "volume"}

_PATH_PROPERTIES = ("mountpoint",)
_PROPERTY_FIELDS = fields_set("value", "source")
_DATASET_FIELDS = fields_set("name", "type", "properties")


def zfs_get_argv(properties: tuple[str, ...] = TUNING_PROPERTIES) -> tuple[str, ...]:
    return ("zfs", "get", "-Hp", "-t", "filesystem,volume", "-o", "name,property,value,source", ",".join(properties))


async def dataset_recordsize(runner: CommandRunner, name: str) -> int | None:
    """One filesystem's recordsize in bytes (a validated name: advisor/hostmodel/names.py); None when `zfs get`
    fails or the dataset has none (a volume)."""
    out = await runner.run(["zfs", "get", "-Hp", "-o", "value", "recordsize", name])
    value = out.stdout.strip()
    return int(value) if out.ok and value.isdigit() else None


def parse_zfs_get(stdout: str, previous: Sequence[Dataset] = (), properties: Sequence[str] = (),
                  errors: list[str] | None = None) -> list[Dataset]:
    """Rows `name<TAB>property<TAB>value<TAB>source` -> datasets in listed order.

    All or nothing: `zfs get` prints one row per dataset and property asked, so a row of
    another shape, output that ends inside a row, a second row for a dataset's property, a
    dataset name zfs(8) does not allow, or a dataset without a row for each of `properties`
    (or, without them, for each property another dataset has) is output cut short or
    damaged: a ParseError, never the datasets before the damage alone.

    A value that is not of its property's domain (advisor/host/property_domains.py) is left
    out, as if unknown, and its reason added to `errors`; a dataset whose type is not
    understood is left out whole. Without `errors`, such a value is a ParseError.

    Every value is a string and the type is checked here, so the models are
    built without pydantic validation: 10,000 datasets are 280,000 rows. Most
    rows repeat a (value, source) pair ("lz4", "inherited from tank"), which
    share one Property (facts are not modified once collected).

    `previous` (the last parse) lends its objects: a row as it was reuses its
    Property, and a dataset whose every row is as it was is the same Dataset.
    A refresh then allocates only what changed; building 10,000 datasets anew
    every 15 s left the freed ones scattered among the live ones, and the
    service's resident memory grew by tens of megabytes (docs/reliability.md).
    """
    props: dict[str, dict[str, Property]] = {}
    shared: dict[tuple[str, str], Property] = {}
    construct = Property.model_construct
    before = {d.name: d for d in previous}
    was: dict[str, Property] = {}
    current = None
    rejected: list[tuple[str, str]] = []
    valid: set[tuple[str, str]] = set()  # (property, value) pairs seen valid: most rows repeat one
    for line in lines_in_blocks(whole_lines(stdout, "zfs get")):
        parts = line.split("\t")
        # four fields; only a mountpoint (a path) may hold a tab of its own
        if len(parts) < 4 or not parts[0] or not parts[1] or len(parts) > 4 and parts[1] not in _PATH_PROPERTIES:
            if not line.strip():
                continue
            raise ParseError(f"not a `name<TAB>property<TAB>value<TAB>source` row: {shown(line)}")
        name, prop, value, source = parts if len(parts) == 4 else (*parts[:2], "\t".join(parts[2:-1]), parts[-1])
        if len(value) >= 20 and value.isdigit() and int(value) > INT_MAX:  # -p numbers are uint64
            raise ParseError(f"{name} {prop}: {shown(value)} is out of the 64-bit range")
        if name != current:
            current, was = name, before[name].properties if name in before else {}
            if name not in before and name not in props:
                _check_name(name)
        if prop in props.get(name, ()):
            raise ParseError(f"zfs get: two rows for {shown(name)} {shown(prop)}")
        prop_value = was.get(prop)
        if prop_value is None or prop_value.value != value or prop_value.source != source:
            if (prop, value) not in valid:  # a row as it was last time was valid then
                if _in_domain(name, prop, value, errors):
                    valid.add((prop, value))
                else:
                    rejected.append((name, prop))
            prop_value = shared.get((value, source))
            if prop_value is None:
                prop_value = shared[(value, source)] = construct(_PROPERTY_FIELDS, value=value, source=source)
        props.setdefault(name, {})[interned(prop)] = prop_value
    _check_every_row(props, properties)
    return _datasets(props, before, rejected)


def _datasets(props: dict[str, dict[str, Property]], before: dict[str, Dataset],
              rejected: list[tuple[str, str]]) -> list[Dataset]:
    """The parsed rows as datasets, without the rejected values, reusing each Dataset of the
    last parse whose every row is as it was."""
    for name, prop in rejected:
        del props[name][prop]
    untyped = {name for name, prop in rejected if prop == "type"}
    datasets = []
    for name, p in props.items():
        if name in untyped:
            continue
        kind = _DATASET_TYPES.get(p["type"].value if "type" in p else "filesystem")
        if kind is None:  # another type (zfs_get_argv asks for these two only)
            continue
        old = before.get(name)
        if old is not None and old.type == kind and _same_objects(old.properties, p):
            datasets.append(old)
        else:
            datasets.append(Dataset.model_construct(_DATASET_FIELDS, name=name, type=kind, properties=compact_dict(p)))
    return datasets


def _in_domain(name: str, prop: str, value: str, errors: list[str] | None) -> bool:
    """Whether `value` is of its property's domain; when it is not, the reason goes to `errors`,
    or without them is a ParseError."""
    try:
        property_domains.check(property_domains.DATASET, name, prop, value)
    except ParseError as exc:
        if errors is None:  # no one to report it to: the output is not understood
            raise
        errors.append(str(exc))
        return False
    return True


def _check_name(name: str) -> None:
    try:
        check_dataset_name(name)
    except InvalidName as exc:
        raise ParseError(f"zfs get: {exc}") from None


def _check_every_row(props: dict[str, dict[str, Property]], properties: Sequence[str]) -> None:
    expected = set(properties) or {prop for p in props.values() for prop in p}
    for name, p in props.items():
        if missing := expected.difference(p):
            raise ParseError(f"zfs get listed no {', '.join(sorted(missing)[:3])}{' ...' if len(missing) > 3 else ''} "
                             f"for {name} (output cut short?)")


def _same_objects(old: dict[str, Property], new: dict[str, Property]) -> bool:
    return len(old) == len(new) and all(old.get(k) is v for k, v in new.items())
