"""The qemu throttles, not the emulator, bound what the lab's disks can do."""

from __future__ import annotations

import pytest
from labparams import lab_params

pytestmark = pytest.mark.lab


@pytest.mark.parametrize("lab_vm", lab_params(["mixed-mirror-ssd-hdd"]), indirect=True, scope="session")
def test_throttled_iops(lab_vm):
    """The qemu throttles bound the disks: 4K random reads at QD1 straight from
    each raw device never exceed the layout's IOPS limit, the HDD (150 IOPS,
    far below what emulation can do) reaches its limit within 10%, and the SSD
    (1,500 IOPS, close to the emulation ceiling at QD1 on a busy host) is at
    least 3x faster than the HDD."""
    measured = {}
    for disk in lab_vm.layout.disks:
        out = lab_vm.exec(
            ["fio", "--name=t", f"--filename={disk.by_id}", "--rw=randread", "--bs=4k",
             "--direct=1", "--ioengine=psync", "--iodepth=1", "--time_based", "--runtime=5",
             "--readonly", "--output-format=terse", "--terse-version=3"], check=True).stdout
        measured[disk.media] = (int(out.strip().splitlines()[-1].split(";")[7]), disk.iops)
    for media, (iops, limit) in measured.items():
        assert iops <= 1.1 * limit, (media, measured)
    hdd, hdd_limit = measured["hdd"]
    assert 0.9 * hdd_limit <= hdd, measured
    assert measured["ssd"][0] >= 3 * hdd, measured
