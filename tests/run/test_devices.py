"""The device table (run/devices.py): every name and peak as ezpz 0.26.1 lists them.

A name is printed in the cross-check's note ("near 340.8 (Intel Max 1550 tile, 512 CUs)")
and a peak decides which device a reading lands near; the bounds and the distance are
tested beside the identity that uses them (tests/run/test_identities.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ezpz_amsc.run.devices import PEAKS, SYSTEMS, Device, matches, nearest, system_of


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
    assert len(PEAKS) == 13
    # ezpz's table is of BF16 dense peaks; the exceptions, as ezpz lists them:
    assert {d.name: d.precision for d in PEAKS if d.precision != "BF16 dense"} == {
        "AMD Instinct MI355X": "as ezpz lists it",
        "Intel Max 1550 tile, 512 CUs": "BF16",
        "Intel Max 1550 tile, 448 CUs": "BF16",
    }
    assert all(type(d) is Device for d in PEAKS)


@pytest.mark.parametrize(("tflops", "name"), [
    (989.0, "NVIDIA H100 SXM"),  # the H200 has the same peak: the first listed is named
    (835.0, "NVIDIA H100 NVL"), (2250.0, "NVIDIA B200"), (756.0, "NVIDIA H100 PCIe"),
    (312.0, "NVIDIA A100"),
    (183.0, "NVIDIA L40S"), (5000.0, "AMD Instinct MI355X"),
    (1300.0, "AMD Instinct MI325X"),  # the MI300X's too: the first listed
    (191.5, "AMD Instinct MI250X, one GCD"), (340.8, "Intel Max 1550 tile, 512 CUs"),
    (298.2, "Intel Max 1550 tile, 448 CUs"),
])
def test_each_peak_is_its_device_s_exactly(tflops, name):
    device, off = nearest(tflops)
    assert (device.name, off) == (name, 0.0)


def _documented_systems() -> list[tuple[str, str, int]]:
    """(system, device, per node) of docs/numbers.md's "Systems" table, in its order."""
    text = (Path(__file__).parents[2] / "docs" / "numbers.md").read_text(encoding="utf-8")
    section = text[text.index("\n## Systems\n"):]
    rows = re.findall(r"^\| ([A-Z][a-z]+) \| ([^|]+?) \| ([0-9]+) \| ([^|]+) \|$", section, re.M)
    return [(name, dev, int(n)) for name, dev, n, _ in rows]


def test_the_systems_are_the_documented_ones():
    """Each system's devices and GPUs per node as docs/numbers.md gives them with sources."""
    got = [(s.name, s.per_node, [(d.name, d.peak_tflops) for d in s.devices]) for s in SYSTEMS]
    max1550 = [("Intel Max 1550 tile, 512 CUs", 340.8), ("Intel Max 1550 tile, 448 CUs", 298.2)]
    assert got == [
        ("Aurora", 12, max1550), ("Sunspot", 12, max1550),
        ("Polaris", 4, [("NVIDIA A100", 312.0)]), ("Perlmutter", 4, [("NVIDIA A100", 312.0)]),
        ("Sophia", 8, [("NVIDIA A100", 312.0)]),
        ("Frontier", 8, [("AMD Instinct MI250X, one GCD", 191.5)]),
    ]
    assert [(n, k) for n, _, k in _documented_systems()] == [(s.name, s.per_node)
                                                             for s in SYSTEMS]
    assert [s.fastest.peak_tflops for s in SYSTEMS] == [340.8, 340.8, 312.0, 312.0, 312.0, 191.5]
    assert SYSTEMS[0].device_names == ("340.8 (Intel Max 1550 tile, 512 CUs) or 298.2 (Intel "
                                       "Max 1550 tile, 448 CUs)")


@pytest.mark.parametrize(("name", "found"), [
    ("Aurora", "Aurora"), ("SunSpot", "Sunspot"), ("sunspot", "Sunspot"),
    (" POLARIS ", "Polaris"), ("perlmutter", "Perlmutter"), ("Frontier", "Frontier"),
    ("Sophia", "Sophia"), ("localhost", None), ("", None), (None, None), ("Sirius", None),
])
def test_a_system_by_its_name_whatever_the_case(name, found):
    got = system_of(name)
    assert (got.name if got else None) == found


@pytest.mark.parametrize(("tflops", "ok"), [
    (340.8, True), (298.2, True), (357.8, True), (358.0, False), (284.1, True),
    (283.9, False), (319.0, False), (312.0, True),  # 312 is 4.6 % above 298.2
])
def test_an_implied_peak_matches_either_tile(tflops, ok):
    assert matches(tflops, SYSTEMS[0]) is ok


def test_a_system_of_the_table_cannot_be_changed_by_a_caller():
    """The table is shared by every row of a process (the end-of-training hook exports
    many): a caller that changed a system would change the next row's peak."""
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        system_of("Aurora").per_node = 6  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        PEAKS[0].peak_tflops = 1.0  # type: ignore[misc]


def test_no_rate_near_a_listed_peak_is_exactly_at_the_match_bound():
    """Why matches()'s `<=` and `<` agree (tools/mutation-equivalents.txt): no float within
    50 ulps of a 5 % edge of a listed peak is exactly 5 % off it."""
    import math

    from ezpz_amsc.run.devices import PEAK_MATCH, off_peak

    for d in PEAKS:
        for edge in (d.peak_tflops * (1 + PEAK_MATCH), d.peak_tflops / (1 + PEAK_MATCH)):
            t = edge
            for _ in range(50):
                t = math.nextafter(t, 0)
            for _ in range(100):
                assert off_peak(t, d) != PEAK_MATCH
                t = math.nextafter(t, math.inf)
