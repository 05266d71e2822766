"""The HTML page's chart of one config: tokens/s/gpu and efficiency against nodes, as SVG.

Drawn here, from the report's data, so that the page needs neither matplotlib
nor anything from the network. It shows what ``--plot`` shows: one line per
system (one per GPUs-per-node series of it), the repeats' spread as a bar,
the ideal weak-scaling line, flagged points ringed in red with a short label,
and under it each point's efficiency over the band in which no flag is raised.
Every text from a results file goes through :func:`esc`.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from ezpz_amsc.report.chart import (
    LABEL_GAP_EM,
    flag_words,
    grouped,
    log2_position,
    nice_ticks,
    node_labels,
    per_node_text,
    series,
    tick_step,
)
from ezpz_amsc.report.data import rate_text
from ezpz_amsc.text import plural, printable

# matplotlib's default colours (tab10), so the page and --plot draw a system alike.
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")
MARKERS = ("circle", "square", "triangle", "diamond", "down")  # one per GPUs-per-node series

WIDTH = 880
FONT = 12  # px, the tick labels; the CSS sets the same
CHAR = 0.62 * FONT  # a digit's width, about, in the sans-serif fonts browsers pick
TOP, RIGHT, GAP = 22, 24, 18
RATE_HEIGHT, EFF_HEIGHT = 250, 110
BOTTOM = 44  # tick labels and the axis title under the efficiency panel


def esc(text: object) -> str:
    """Text from a results file, as text in HTML or SVG (never markup), on one line."""
    return html.escape(printable(str(text)), quote=True)


def series_label(g: Mapping[str, Any], pts: Sequence[Mapping[str, Any]], several: bool) -> str:
    """The system, and its GPUs per node when it ran several series."""
    return f"{g['system']} ({per_node_text(pts[0])})" if several else str(g["system"])


def marker(shape: str, x: float, y: float, size: float, colour: str) -> str:
    """A point's marker, filled in its line's colour."""
    s = size
    fill = f'fill="{colour}"'
    if shape == "square":
        return (f'<rect x="{x - s:.1f}" y="{y - s:.1f}" width="{2 * s:.1f}" '
                f'height="{2 * s:.1f}" {fill}/>')
    if shape == "diamond":
        pts = [(x, y - s * 1.3), (x + s, y), (x, y + s * 1.3), (x - s, y)]
    elif shape in ("triangle", "down"):
        k = -1 if shape == "down" else 1
        pts = [(x, y - k * s * 1.2), (x + s * 1.1, y + k * s * 0.8),
               (x - s * 1.1, y + k * s * 0.8)]
    else:
        pts = []
    if pts:
        return f'<polygon points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in pts)}" {fill}/>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{s:.1f}" {fill}/>'


class _Panel:
    """One panel's geometry: x by node count (log2), y by value, in the SVG's pixels."""

    def __init__(self, left: float, top: float, width: float, height: float,
                 nodes: Sequence[int], ticks: Sequence[float]) -> None:
        self.left, self.top, self.width, self.height = left, top, width, height
        self.ticks = ticks
        pad = width * 0.04  # the end points clear of the frame
        at = log2_position(min(nodes), max(nodes), width - 2 * pad)
        self._pad, self._at = pad, at

    def x_of(self, n: float) -> float:
        return self.left + self._pad + self._at(n)

    def y_of(self, v: float) -> float:
        return self.top + self.height - v / self.ticks[-1] * self.height

    def frame(self, label: str) -> list[str]:
        step = tick_step(self.ticks)
        out = [f'<rect class="frame" x="{self.left}" y="{self.top}" width="{self.width}" '
               f'height="{self.height}"/>']
        for t in self.ticks:
            y = self.y_of(t)
            out.append(f'<line class="grid" x1="{self.left}" x2="{self.left + self.width}" '
                       f'y1="{y:.1f}" y2="{y:.1f}"/>')
            out.append(f'<text class="ytick" x="{self.left - 6}" y="{y + 4:.1f}">'
                       f'{grouped(t, step)}</text>')
        mid = self.top + self.height / 2
        out.append(f'<text class="ytitle" transform="translate(14 {mid:.1f}) rotate(-90)">'
                   f'{label}</text>')
        return out

    def node_ticks(self, nodes: Sequence[int], labelled: bool) -> list[str]:
        bottom = self.top + self.height
        out = []
        extents = {n: (self.x_of(n) - len(f"{n:,}") * CHAR / 2,
                       self.x_of(n) + len(f"{n:,}") * CHAR / 2) for n in nodes}
        kept = set(node_labels(extents, LABEL_GAP_EM * FONT)) if labelled else set()
        for n in nodes:
            x = self.x_of(n)
            out.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{self.top}" '
                       f'y2="{bottom}"/>')
            out.append(f'<line class="tick" x1="{x:.1f}" x2="{x:.1f}" y1="{bottom}" '
                       f'y2="{bottom + 4}"/>')
            if n in kept:
                out.append(f'<text class="xtick" x="{x:.1f}" y="{bottom + 17}">{n:,}</text>')
        return out


def _point_title(g: Mapping[str, Any], p: Mapping[str, Any], flags: Sequence[str]) -> str:
    """What a point is, shown when the pointer rests on it."""
    text = (f"{g['system']}, {plural(p['nodes'], 'node')}, {plural(p['gpus'], 'gpu')}: "
            f"{rate_text(p['tokens_per_sec_per_gpu'])} tokens/s/gpu, eff "
            f"{p['efficiency']:.3f}, median of {plural(p['repeats'], 'repeat')}")
    if flags:
        text += f"; flagged: {', '.join(flags)}"
    return esc(text)


def chart(groups: Sequence[Mapping[str, Any]], thresholds: Mapping[str, float],
          title: str) -> tuple[str, list[tuple[str, str, str]]]:
    """The SVG of one config's systems, and its legend: (colour, marker, label) per series."""
    nodes = sorted({p["nodes"] for g in groups for p in g["points"]})
    rate_top = max(p["tokens_per_sec_per_gpu_max"] for g in groups for p in g["points"])
    rate_ticks = nice_ticks(rate_top * 1.15)  # room above the top point for a flag's label
    eff_top = max([1.2, *(p["efficiency"] for g in groups for p in g["points"])])
    eff_ticks = nice_ticks(eff_top * 1.05, most=4)
    widest = max(len(grouped(t, tick_step(rate_ticks))) for t in rate_ticks)
    left = 30 + widest * CHAR
    width = WIDTH - left - RIGHT
    rate = _Panel(left, TOP, width, RATE_HEIGHT, nodes, rate_ticks)
    eff = _Panel(left, TOP + RATE_HEIGHT + GAP, width, EFF_HEIGHT, nodes, eff_ticks)
    height = eff.top + EFF_HEIGHT + BOTTOM
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {WIDTH} '
           f'{height:.0f}" width="{WIDTH}" height="{height:.0f}" role="img">',
           f"<title>{esc(title)}</title>"]
    out += rate.frame("tokens/s per GPU") + rate.node_ticks(nodes, labelled=False)
    out += eff.frame("efficiency") + eff.node_ticks(nodes, labelled=True)
    out.append(f'<text class="xtitle" x="{left + width / 2:.1f}" y="{height - 6:.0f}">'
               "nodes (log2 scale)</text>")
    # The band of efficiencies no flag is raised for, and 1.0: the baseline's rate.
    low, high = thresholds["low_efficiency_below"], thresholds["superlinear_above"]
    y_high, y_low = eff.y_of(min(high, eff_ticks[-1])), eff.y_of(low)
    out.append(f'<rect class="band" x="{eff.left}" y="{y_high:.1f}" width="{eff.width}" '
               f'height="{y_low - y_high:.1f}"/>')
    out.append(f'<line class="ideal" x1="{eff.left}" x2="{eff.left + eff.width}" '
               f'y1="{eff.y_of(1.0):.1f}" y2="{eff.y_of(1.0):.1f}"/>')
    legend = []
    rings = []
    for i, g in enumerate(groups):
        colour = COLOURS[i % len(COLOURS)]
        words = flag_words(g)
        xs = [p["nodes"] for p in g["points"]]
        if max(xs) > min(xs):  # ideal weak scaling: flat at the baseline's per-GPU rate
            y = rate.y_of(g["points"][0]["tokens_per_sec_per_gpu"])
            out.append(f'<line class="ideal" stroke="{colour}" x1="{rate.x_of(min(xs)):.1f}" '
                       f'x2="{rate.x_of(max(xs)):.1f}" y1="{y:.1f}" y2="{y:.1f}"/>')
        all_series = series(g["points"])
        for k, pts in enumerate(all_series):
            shape = MARKERS[k % len(MARKERS)]
            legend.append((colour, shape, series_label(g, pts, len(all_series) > 1)))
            for panel, key, cls in ((rate, "tokens_per_sec_per_gpu", "pt"),
                                    (eff, "efficiency", "eff-pt")):
                line = " ".join(f"{panel.x_of(p['nodes']):.1f},{panel.y_of(p[key]):.1f}"
                                for p in pts)
                out.append(f'<polyline class="series" stroke="{colour}" points="{line}"/>')
                for p in pts:
                    x, y = panel.x_of(p["nodes"]), panel.y_of(p[key])
                    flags = words.get((p["nodes"], p["gpus"]), [])
                    if cls == "pt" and p["repeats"] > 1:  # lowest to highest of the repeats
                        y0 = rate.y_of(p["tokens_per_sec_per_gpu_min"])
                        y1 = rate.y_of(p["tokens_per_sec_per_gpu_max"])
                        out.append(f'<path class="spread" stroke="{colour}" d="M{x:.1f} '
                                   f'{y0:.1f}V{y1:.1f}M{x - 4:.1f} {y0:.1f}h8M{x - 4:.1f} '
                                   f'{y1:.1f}h8"/>')
                    out.append(f'<g class="{cls}" data-system="{esc(g["system"])}" '
                               f'data-nodes="{p["nodes"]}" data-gpus="{p["gpus"]}" '
                               f'data-value="{p[key]!r}"><title>'
                               f"{_point_title(g, p, flags)}</title>"
                               f"{marker(shape, x, y, 4.5 if cls == 'pt' else 3.5, colour)}</g>")
                    if cls == "pt" and flags:
                        rings.append(f'<circle class="flag" cx="{x:.1f}" cy="{y:.1f}" r="9"/>'
                                     f'<text class="flag" x="{x:.1f}" y="{y - 14:.1f}">'
                                     f"{esc(', '.join(flags))}</text>")
    out += rings  # over the lines, so a ring and its label are never hidden
    out.append("</svg>")
    return "\n".join(out), legend


def legend_key(colour: str, shape: str) -> str:
    """A small line-and-marker sample for the legend under a chart."""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="key" viewBox="0 0 28 12" '
            f'width="28" height="12" aria-hidden="true"><line x1="0" x2="28" y1="6" y2="6" '
            f'stroke="{colour}" stroke-width="2"/>{marker(shape, 14, 6, 4, colour)}</svg>')
