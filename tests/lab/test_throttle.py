"""The qemu throttles, not the emulator, bound what the lab's disks can do."""

from __future__ import annotations

import pytest

from labparams import lab_params

pytestmark = pytest.mark.lab


@pytest.mark.parametrize("lab_vm", lab_params(["mixed-mirror-ssd-hdd"]), indirect=True, scope="session")
def test_throttled_iops(lab_vm):
    """The qemu throttles bound the disks: 4K random reads at QD1 straight from
    each raw device land within 10% of the layout's IOPS (HDD 150, SSD 1,500)."""
    for disk in lab_vm.layout.disks:
        out = lab_vm.exec(
            ["fio", "--name=t", f"--filename={disk.by_id}", "--rw=randread", "--bs=4k",
             "--direct=1", "--ioengine=psync", "--iodepth=1", "--time_based", "--runtime=5",
             "--readonly", "--output-format=terse", "--terse-version=3"], check=True).stdout
        iops = int(out.strip().splitlines()[-1].split(";")[7])
        assert 0.9 * disk.iops <= iops <= 1.1 * disk.iops, (disk.name, iops)
