"""Published peak TFLOPS of the accelerators ezpz runs on: facts for the identity
``tflops / (mfu / 100) = the device's peak`` (docs/numbers.md, "Peak FLOPS").

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


def nearest(tflops: float) -> tuple[Device, float]:
    """The listed device whose peak is nearest ``tflops`` (> 0), and how far: the ratio's
    distance from 1 either way (1.1 and 1 / 1.1 are both 0.1)."""
    def off(d: Device) -> float:
        r = tflops / d.peak_tflops
        return max(r, 1 / r) - 1

    best = min(PEAKS, key=off)
    return best, off(best)
