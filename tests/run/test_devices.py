"""The device table (run/devices.py): every name and peak as ezpz 0.26.1 lists them.

A name is printed in the cross-check's note ("near 340.8 (Intel Max 1550 tile, 512 CUs)")
and a peak decides which device a reading lands near; the bounds and the distance are
tested beside the identity that uses them (tests/run/test_identities.py).
"""

from __future__ import annotations

import pytest

from ezpz_amsc.run.devices import PEAKS, Device, nearest


def test_the_table_entry_by_entry():
    want = (
        Device("NVIDIA H100 SXM", "BF16 dense", 989.0),
        Device("NVIDIA H100 NVL", "BF16 dense", 835.0),
        Device("NVIDIA H100 PCIe", "BF16 dense", 756.0),
        Device("NVIDIA H200", "BF16 dense", 989.0),
        Device("NVIDIA A100", "BF16 dense", 312.0),
        Device("NVIDIA L40S", "BF16 dense", 183.0),
        Device("AMD Instinct MI355X", "as ezpz lists it", 5000.0),
        Device("AMD Instinct MI325X", "BF16 dense", 1300.0),
        Device("AMD Instinct MI300X", "BF16 dense", 1300.0),
        Device("AMD Instinct MI250X, one GCD", "BF16 dense", 191.5),
        Device("Intel Max 1550 tile, 512 CUs", "BF16", 340.8),
        Device("Intel Max 1550 tile, 448 CUs", "BF16", 298.2),
    )
    assert want == PEAKS


@pytest.mark.parametrize(("tflops", "name"), [
    (989.0, "NVIDIA H100 SXM"),  # the H200 has the same peak: the first listed is named
    (835.0, "NVIDIA H100 NVL"), (756.0, "NVIDIA H100 PCIe"), (312.0, "NVIDIA A100"),
    (183.0, "NVIDIA L40S"), (5000.0, "AMD Instinct MI355X"),
    (1300.0, "AMD Instinct MI325X"),  # the MI300X's too: the first listed
    (191.5, "AMD Instinct MI250X, one GCD"), (340.8, "Intel Max 1550 tile, 512 CUs"),
    (298.2, "Intel Max 1550 tile, 448 CUs"),
])
def test_each_peak_is_its_device_s_exactly(tflops, name):
    device, off = nearest(tflops)
    assert (device.name, off) == (name, 0.0)
