"""What the plot (matplotlib) and the HTML page's charts (SVG) share.

Which points make one line, how a flagged point is labelled, which node counts
get a label on a log2 axis, where the y ticks go, and how a tick's number is
written. No matplotlib: the HTML page must not need it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

# A flag's kind in the word a chart writes beside the point.
SHORT = {"superlinear": "superlinear", "low_efficiency": "low eff", "spread": "spread",
         "gpus_mismatch": "gpus?", "partial_mfu": "mfu", "mixed_gpus": "gpus?"}

# Space kept between two node-count labels, in the unit of their extents, per unit of
# font size: a label closer than this reads as one number with its neighbour ("1011").
LABEL_GAP_EM = 0.8


def _twos(n: int) -> int:
    """How many times 2 divides ``n``: 8 and 24 before 12, 12 before 6, 6 before 7."""
    return (n & -n).bit_length() - 1


def node_labels(extents: Mapping[int, tuple[float, float]], gap: float) -> list[int]:
    """The node counts to label, from each count's label extent ``(left, right)`` on the axis.

    Only counts present get a label, and none overlaps its neighbours: the smallest
    and largest always, then the "roundest" (most factors of 2: powers of two first,
    so a sweep of 1, 2, 4 ... keeps them all), each where it does not come within
    ``gap`` of a label already kept. A count left without a label still has its tick
    mark and its point.
    """
    counts = sorted(extents)
    if not counts:
        return []
    ends = {counts[0], counts[-1]}
    order = sorted(counts, key=lambda n: (n not in ends, -_twos(n), n))
    kept: list[int] = []
    for n in order:
        left, right = extents[n]
        if all(right + gap <= extents[k][0] or extents[k][1] + gap <= left for k in kept):
            kept.append(n)
    return sorted(kept)


def nice_ticks(top: float, most: int = 6) -> list[float]:
    """Ticks from 0 to at least ``top`` at a round step (1, 2, 2.5 or 5 x a power of ten)."""
    if not top > 0 or not math.isfinite(top):
        return [0.0, 1.0]
    raw = top / (most - 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    count = math.ceil(top / step - 1e-9)
    return [i * step for i in range(count + 1)]


def grouped(value: float, step: float) -> str:
    """A tick's number with thousands separators and the decimals its step needs.

    ``12,000`` at a step of 2,000; ``7.5`` at a step of 2.5; ``0.25`` at a step of 0.05.
    """
    decimals = next((d for d in range(7) if abs(round(step, d) - step) <= abs(step) * 1e-9), 6)
    text = f"{value:,.{decimals}f}"
    return "0" if text.lstrip("-").strip("0.,") == "" else text


def tick_step(ticks: Sequence[float]) -> float:
    """The distance between neighbouring ticks (the smallest, for uneven ones)."""
    gaps = [b - a for a, b in zip(ticks, ticks[1:], strict=False) if b > a]
    return min(gaps) if gaps else 1.0


def log2_position(lo: int, hi: int, width: float) -> Callable[[float], float]:
    """x of a node count on a log2 axis ``width`` wide; a single count sits in the middle."""
    if hi <= lo:
        return lambda n: width / 2
    span = math.log2(hi) - math.log2(lo)
    return lambda n: (math.log2(n) - math.log2(lo)) / span * width


def scales(groups: Sequence[Mapping[str, Any]]) -> bool:
    """Whether some system of a config ran more than one node count (else: nothing to draw)."""
    return any(len({p["nodes"] for p in g["points"]}) > 1 for g in groups)


def series(points: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """The points of one system split by GPUs per node, each a weak-scaling series.

    Two ``gpus`` counts at one node count are two experiments (or a wrong cell,
    which the report flags): joined by one line they would draw a vertical
    segment that reads as a measurement.
    """
    by_ratio: dict[float, list[Mapping[str, Any]]] = {}
    for p in points:
        by_ratio.setdefault(p["gpus"] / p["nodes"], []).append(p)
    return [by_ratio[r] for r in sorted(by_ratio)]


def per_node_text(p: Mapping[str, Any]) -> str:
    """``4 gpus/node``: what tells two series of one system apart."""
    per_node = p["gpus"] / p["nodes"]
    return f"{per_node:g} gpu{'' if per_node == 1 else 's'}/node"


def flag_words(g: Mapping[str, Any]) -> dict[tuple[int, int], list[str]]:
    """Each flagged point's flags in short words (``superlinear``, ``low eff``, ...)."""
    kinds: dict[tuple[int, int], list[str]] = {}
    for f in g["flags"]:
        for p in g["points"]:
            if f["nodes"] == p["nodes"] and f["gpus"] in (None, p["gpus"]):
                kinds.setdefault((p["nodes"], p["gpus"]), []).append(SHORT[f["kind"]])
    return {at: list(dict.fromkeys(words)) for at, words in kinds.items()}
