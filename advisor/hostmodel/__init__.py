"""The host model: what the project knows of a host (facts.py: Host, Pool, Vdev, Disk, Dataset,
...) and the ZFS naming rules its names follow (names.py). The shared vocabulary: the host's
sources produce it, the exporters, the engine and the features read it; it imports nothing."""
