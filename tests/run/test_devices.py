"""The device table (run/devices.py): every name and peak as ezpz 0.26.1 lists them.

A name is printed in the cross-check's note ("near 340.8 (Intel Max 1550 tile, 512 CUs)")
and a peak decides which device a reading lands near; the bounds and the distance are
tested beside the identity that uses them (tests/run/test_identities.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ezpz_amsc.run.devices import PEAKS, Device, nearest


def _documented_peaks() -> list[tuple[str, float]]:
    """(device, TFLOPS) of docs/numbers.md's "Peak FLOPS" table, in its order."""
    text = (Path(__file__).parents[2] / "docs" / "numbers.md").read_text(encoding="utf-8")
    section = text[text.index("\n## Peak FLOPS\n"):]
    rows = re.findall(r"^\| ([^|]+?) \| ([0-9][0-9,.]*) \| [^|]+ \|$", section, re.M)
    return [(name, float(peak.replace(",", ""))) for name, peak in rows]


def test_the_table_entry_by_entry():
    # The table's names and peaks are the ones docs/numbers.md gives with their sources, in
    # the same order (the first listed of two equal peaks is the one named).
    assert [(d.name, d.peak_tflops) for d in PEAKS] == _documented_peaks()
    assert len(PEAKS) == 12
    # ezpz's table is of BF16 dense peaks; the exceptions, as ezpz lists them:
    assert {d.name: d.precision for d in PEAKS if d.precision != "BF16 dense"} == {
        "AMD Instinct MI355X": "as ezpz lists it",
        "Intel Max 1550 tile, 512 CUs": "BF16",
        "Intel Max 1550 tile, 448 CUs": "BF16",
    }
    assert all(type(d) is Device for d in PEAKS)


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
