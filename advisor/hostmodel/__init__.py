"""The host model: what the project knows of a host (facts.py: Host, Pool, Vdev, Disk, Dataset,
...), the ZFS naming rules its names follow (names.py) and the tunables it knows by name
(tunables.py, read from rules/tunables.yaml). The shared vocabulary: the host's sources produce
it, the exporters, the engine and the features read it; it imports only the rule files' place."""
