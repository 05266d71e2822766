"""Published peak TFLOPS of the accelerators ezpz runs on, and the accelerator of each
system: facts for the identity ``tflops / (mfu / 100) = the device's peak`` and the bound
``tflops per GPU <= the device's peak`` (docs/numbers.md, "Peak FLOPS" and "Systems").

ezpz computes ``mfu = model_flops / (peak_flops_per_device x step_time) x 100``
with this table (BF16 dense, per device; ezpz 0.26.1, ``src/ezpz/flops.py``),
and writes mfu 0.0 for a device it does not list (every CPU). Numpy-free.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Device:
    name: str
    precision: str
    peak_tflops: float  # per device (per GCD, per tile) as MFU is computed


PEAKS: tuple[Device, ...] = (
    Device("NVIDIA H100 SXM", "BF16 dense", 989.0),
    Device("NVIDIA H100 NVL", "BF16 dense", 835.0),
    Device("NVIDIA H100 PCIe", "BF16 dense", 756.0),
    Device("NVIDIA H200", "BF16 dense", 989.0),
    Device("NVIDIA B200", "BF16 dense", 2250.0),
    Device("NVIDIA A100", "BF16 dense", 312.0),
    Device("NVIDIA L40S", "BF16 dense", 183.0),
    Device("AMD Instinct MI355X", "as ezpz lists it", 5000.0),
    Device("AMD Instinct MI325X", "BF16 dense", 1300.0),
    Device("AMD Instinct MI300X", "BF16 dense", 1300.0),
    Device("AMD Instinct MI250X, one GCD", "BF16 dense", 191.5),
    Device("Intel Max 1550 tile, 512 CUs", "BF16", 340.8),
    Device("Intel Max 1550 tile, 448 CUs", "BF16", 298.2),
)

# An implied peak a real accelerator can have. Wide on purpose: other scripts use
# their own tables (another precision, another clock), and older or smaller devices
# are slower than the slowest listed. Below: a tenth of the slowest listed (an A100's
# FP32 peak, 19.5, is inside). Above: twice the fastest listed, which is still
# below 100 x the slowest (an mfu logged as a fraction multiplies the implied peak
# by 100: 18,300 on an L40S).
PEAK_MIN_TFLOPS = min(d.peak_tflops for d in PEAKS) / 10
PEAK_MAX_TFLOPS = max(d.peak_tflops for d in PEAKS) * 2
# An implied peak within 5 % of a listed one is that device's: ezpz's own mfu gives the
# listed peak exactly, other scripts' tables differ by under 1 % (989.4 for 989); the
# listed peaks are far enough apart that a wrong explanation rarely lands this near one.
PEAK_MATCH = 0.05


def plausible_peak(tflops: float) -> bool:
    """A peak some accelerator could have (:data:`PEAK_MIN_TFLOPS` .. :data:`PEAK_MAX_TFLOPS`)."""
    return PEAK_MIN_TFLOPS <= tflops <= PEAK_MAX_TFLOPS


def off_peak(tflops: float, d: Device) -> float:
    """How far ``tflops`` (> 0) is from ``d``'s peak: the ratio's distance from 1 either
    way (1.1 and 1 / 1.1 of the peak are both 0.1)."""
    r = tflops / d.peak_tflops
    return max(r, 1 / r) - 1


def nearest(tflops: float) -> tuple[Device, float]:
    """The listed device whose peak is nearest ``tflops`` (> 0), and how far
    (:func:`off_peak`)."""
    best = min(PEAKS, key=lambda d: off_peak(tflops, d))
    return best, off_peak(tflops, best)


def device(name: str) -> Device:
    """The listed device of this name."""
    return next(d for d in PEAKS if d.name == name)


@dataclass(frozen=True)
class System:
    """A system of the dashboard: the accelerator its ranks run on (one rank per GPU, tile
    or GCD, as ezpz places them) and how many of them a node has."""

    name: str
    devices: tuple[Device, ...]  # any of them (a Max 1550 tile runs with 512 or 448 CUs)
    per_node: int

    @property
    def fastest(self) -> Device:
        """Its device of the highest peak: no per-GPU rate can be above it."""
        return max(self.devices, key=lambda d: d.peak_tflops)

    @property
    def device_names(self) -> str:
        return " or ".join(f"{d.peak_tflops:g} ({d.name})" for d in self.devices)


_MAX_1550 = (device("Intel Max 1550 tile, 512 CUs"), device("Intel Max 1550 tile, 448 CUs"))
_A100 = (device("NVIDIA A100"),)
# The facilities' own documentation (docs/numbers.md, "Systems", gives the pages). Names
# are matched whatever their case: ezpz's get_machine() writes "SunSpot".
SYSTEMS: tuple[System, ...] = (
    System("Aurora", _MAX_1550, 12),
    System("Sunspot", _MAX_1550, 12),
    System("Polaris", _A100, 4),
    System("Perlmutter", _A100, 4),
    System("Sophia", _A100, 8),
    System("Frontier", (device("AMD Instinct MI250X, one GCD"),), 8),
)


def system_of(name: str | None) -> System | None:
    """The listed system of this name (any case), or None: an unknown system is judged
    against every listed device (:func:`plausible_peak`)."""
    if not name:
        return None
    key = name.strip().casefold()
    return next((s for s in SYSTEMS if s.name.casefold() == key), None)


def matches(tflops: float, sysdev: System) -> bool:
    """Within :data:`PEAK_MATCH` of one of the system's devices' peaks."""
    return any(off_peak(tflops, d) <= PEAK_MATCH for d in sysdev.devices)
