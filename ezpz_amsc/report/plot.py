"""``report --plot FILE``: tokens/s/gpu against nodes, drawn from the report's data.

matplotlib is an optional extra (``plot``): this module is imported only when
``--plot`` is given, and :func:`require_matplotlib` turns its absence into the
one ``error:`` line before anything is read or written.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ezpz_amsc.errors import AmscError, AmscUsageError
from ezpz_amsc.report.chart import (
    LABEL_GAP_EM,
    flag_words,
    grouped,
    node_labels,
    per_node_text,
    scales,
    series,
    tick_step,
)
from ezpz_amsc.report.data import rate_text
from ezpz_amsc.text import opt, printable

FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
# No date, tool stamps as they are: the same report draws the same bytes.
_METADATA: dict[str, dict[str, Any] | None] = {
    "png": None, "svg": {"Date": None}, "pdf": {"CreationDate": None}}
FLAG_COLOUR = "tab:red"
# Inches: a column per config (two columns past three configs), a config whose
# systems ran several node counts gets the throughput panel over the efficiency panel,
# one that ran a single node count a note a few lines high.
COLUMN_WIDTH = 10.0
SCALING_HEIGHT = (3.4, 1.8)  # throughput, efficiency
NOTE_HEIGHT, NOTE_LINE = 0.55, 0.25
DEFAULT_DPI = 100


def plot_format(path: str) -> str:
    """``png``, ``svg`` or ``pdf`` from the file name; anything else is a usage error."""
    fmt = FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise AmscUsageError(opt("plot", path) + ": the file name must end in .png, .svg or .pdf")
    return fmt


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        # The package is not on PyPI: name the extra the way a checkout installs it.
        raise AmscError(opt("plot") + " needs matplotlib, which is not installed: pip install "
                        "matplotlib, or from a checkout of ezpz-amsc pip install '.[plot]' "
                        "(the plot extra)") from None


def write_plot(report: Mapping[str, Any], path: str, dpi: int = DEFAULT_DPI) -> list[str]:
    """Draw the plot and write it to ``path`` whole, or not at all; return notes."""
    fmt = plot_format(path)
    if not report["groups"]:
        raise AmscError(opt("plot", path) + ": nothing to plot (no pass row with throughput)")
    from matplotlib import rc_context

    from ezpz_amsc.fs.create import create_file

    buf = io.BytesIO()
    # No date and fixed SVG ids: the same report draws the same bytes, so a
    # plot kept under version control changes only when the data does. The
    # figure is laid out once to place its labels: its warnings are caught too.
    with (rc_context({"svg.hashsalt": "ezpz-amsc"}),
          warnings.catch_warnings(record=True) as caught):
        warnings.simplefilter("always")
        fig = _figure(report["groups"], report["thresholds"], dpi)
        fig.savefig(buf, format=fmt, metadata=_METADATA[fmt], dpi=dpi)
    # Whole or not at all: never a half-drawn file, whatever goes wrong.
    create_file(path, buf.getvalue(), replace=True, parents=False, what="plot")
    return _notes(caught, path)


def _notes(caught: list[warnings.WarningMessage], path: str) -> list[str]:
    """matplotlib's warnings as this tool's notes (one per kind, not one per glyph)."""
    notes = []
    if any("missing from font" in str(w.message) for w in caught):
        notes.append(f"{path}: some characters of the labels have no glyph in matplotlib's "
                     "font; they are drawn as boxes")
    notes += [f"{path}: matplotlib: {w.message}" for w in caught
              if "missing from font" not in str(w.message)]
    return notes


def _figure(groups: list[Mapping[str, Any]], thresholds: Mapping[str, float],
            dpi: int = DEFAULT_DPI) -> Any:
    from matplotlib.figure import Figure

    configs = list(dict.fromkeys(g["config"] for g in groups))
    cells = [(config, [g for g in groups if g["config"] == config]) for config in configs]
    cols = 1 if len(cells) <= 3 else 2
    rows = [cells[i:i + cols] for i in range(0, len(cells), cols)]
    heights = [max(_cell_height(gs) for _, gs in row) for row in rows]
    fig = Figure(figsize=(COLUMN_WIDTH * cols, sum(heights)), dpi=dpi, constrained_layout=True)
    outer = fig.add_gridspec(len(rows), cols, height_ratios=heights)
    bottoms = []
    for r, row in enumerate(rows):
        for c, (config, gs) in enumerate(row):
            if scales(gs):
                inner = outer[r, c].subgridspec(2, 1, height_ratios=SCALING_HEIGHT)
                ax = fig.add_subplot(inner[0])
                eff = fig.add_subplot(inner[1], sharex=ax)
                _panel(ax, config, gs)
                _efficiency_panel(eff, gs, thresholds)
                bottoms.append(eff)
            else:
                _note(fig.add_subplot(outer[r, c]), config, gs)
    _thin_node_labels(fig, bottoms)
    return fig


def _cell_height(groups: list[Mapping[str, Any]]) -> float:
    if scales(groups):
        return sum(SCALING_HEIGHT)
    return NOTE_HEIGHT + NOTE_LINE * (1 + len(groups))


def _note(ax: Any, config: str, groups: list[Mapping[str, Any]]) -> None:
    """A config run at one node count: its numbers in words, not an almost empty panel."""
    ax.set_label("note")
    ax.axis("off")
    ax.set_title(_label(config))
    nodes = groups[0]["points"][0]["nodes"]
    lines = [f"only one node count ({nodes:,}): no scaling to show; per GPU:"]
    for g in groups:
        kinds = flag_words(g)
        said = []
        for p in g["points"]:
            flags = kinds.get((p["nodes"], p["gpus"]))
            said.append(f"{p['gpus']:,} gpu{'' if p['gpus'] == 1 else 's'}: "
                        f"{rate_text(p['tokens_per_sec_per_gpu'])} tokens/s"
                        + (f" (flagged: {', '.join(flags)})" if flags else ""))
        lines.append(f"{_label(g['system'])}: {'; '.join(said)}")
    ax.text(0.5, 1.0, "\n".join(lines), transform=ax.transAxes, ha="center", va="top",
            wrap=True, linespacing=1.6)


def _thin_node_labels(fig: Any, axes: list[Any]) -> None:
    """Label only the node counts whose labels do not run into each other once laid out.

    Measured on the drawn figure (fonts, the legend's width, the dpi), so that 1 to 24
    nodes never read as "1011121314".
    """
    if not axes:
        return
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)  # measures text as the png draws it; svg and pdf alike
    getattr(fig, "draw_without_rendering", canvas.draw)()  # lays the figure out (3.6+)
    renderer = canvas.get_renderer()  # type: ignore[no-untyped-call]
    for ax in axes:
        nodes = [int(n) for n in ax.get_xticks()]
        prop = ax.xaxis.get_major_ticks()[0].label1.get_fontproperties()
        extents = {}
        for n in nodes:
            x = ax.transData.transform((n, 0))[0]
            width = renderer.get_text_width_height_descent(f"{n:,}", prop, ismath=False)[0]
            extents[n] = (x - width / 2, x + width / 2)
        gap = renderer.points_to_pixels(prop.get_size_in_points() * LABEL_GAP_EM)
        kept = set(node_labels(extents, gap))
        ax.set_xticks(nodes)
        ax.set_xticklabels([f"{n:,}" if n in kept else "" for n in nodes])


def _panel(ax: Any, config: str, groups: list[Mapping[str, Any]]) -> None:
    from matplotlib.lines import Line2D

    ax.set_label("throughput")
    handles = []
    ideal = spread = False
    for i, g in enumerate(groups):
        colour = f"C{i % 10}"
        all_series = series(g["points"])
        for k, pts in enumerate(all_series):
            xs = [p["nodes"] for p in pts]
            ys = [p["tokens_per_sec_per_gpu"] for p in pts]
            label = _label(g["system"]) + (f" ({per_node_text(pts[0])})" if len(all_series) > 1
                                           else "")
            (line,) = ax.plot(xs, ys, marker=_MARKERS[k % len(_MARKERS)], color=colour,
                              label=label)
            handles.append(line)
            # Spread: the lowest and highest tokens/s/gpu of the repeats, at points with several.
            rep = [p for p in pts if p["repeats"] > 1]
            if rep:
                spread = True
                ax.errorbar([p["nodes"] for p in rep],
                            [p["tokens_per_sec_per_gpu"] for p in rep],
                            yerr=[[p["tokens_per_sec_per_gpu"] - p["tokens_per_sec_per_gpu_min"]
                                   for p in rep],
                                  [p["tokens_per_sec_per_gpu_max"] - p["tokens_per_sec_per_gpu"]
                                   for p in rep]],
                            fmt="none", ecolor=colour, elinewidth=1.5, capsize=4, zorder=4)
        # Ideal weak scaling: the baseline's per-GPU rate at every node count (none to
        # draw when the system ran one node count only).
        xs = [p["nodes"] for p in g["points"]]
        if max(xs) > min(xs):
            ideal = True
            base = g["points"][0]["tokens_per_sec_per_gpu"]
            ax.plot([min(xs), max(xs)], [base, base], linestyle="--", linewidth=1,
                    color=colour, alpha=0.7)
        _mark_flags(ax, g)
    _node_axis(ax, groups)
    ax.tick_params(labelbottom=False)  # the efficiency panel below labels the shared axis
    ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.12)  # room for the flag labels
    ax.yaxis.set_major_formatter(_grouped_formatter(ax))
    ax.set_ylabel("throughput per GPU (tokens/s)")
    ax.set_title(_label(config))
    ax.grid(True, alpha=0.3)
    if ideal:
        handles.append(Line2D([], [], linestyle="--", color="grey",
                              label="ideal: flat at the smallest node count"))
    if spread:
        handles.append(Line2D([], [], linestyle="none", marker="|", markersize=10,
                              color="grey", label="bar: lowest to highest of the repeats"))
    if any(p["flagged"] for g in groups for p in g["points"]):
        handles.append(Line2D([], [], linestyle="", marker="o", markersize=11,
                              markerfacecolor="none", markeredgecolor=FLAG_COLOUR,
                              markeredgewidth=2, label="flagged (see the report)"))
    # Beside the axes, not on them: a legend must never hide a point.
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small",
              borderaxespad=0)


_MARKERS = ("o", "s", "^", "D", "v")  # one per GPUs-per-node series of a system


def _node_axis(ax: Any, groups: list[Mapping[str, Any]]) -> None:
    """log2 nodes, a tick at each node count run (which are labelled: _thin_node_labels)."""
    from matplotlib.ticker import NullFormatter, NullLocator

    ax.set_xscale("log", base=2)
    nodes = sorted({p["nodes"] for g in groups for p in g["points"]})
    ax.set_xticks(nodes)
    ax.set_xticklabels([f"{n:,}" for n in nodes])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(nodes[0] / 2 ** 0.25, nodes[-1] * 2 ** 0.25)  # end points clear of the frame


def _grouped_formatter(ax: Any) -> Any:
    """y tick labels with thousands separators, and the decimals the tick step needs."""
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _: grouped(value, tick_step(
        [float(t) for t in ax.yaxis.get_majorticklocs()])))


def _efficiency_panel(ax: Any, groups: list[Mapping[str, Any]],
                      thresholds: Mapping[str, float]) -> None:
    """Each point's weak-scaling efficiency (the report's ``eff``) over the band in which
    no flag is raised: above it superlinear, below it a collapse."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    ax.set_label("efficiency")
    low, high = thresholds["low_efficiency_below"], thresholds["superlinear_above"]
    ax.axhspan(low, high, color="tab:green", alpha=0.12, linewidth=0)
    ax.axhline(1.0, linestyle="--", linewidth=1, color="grey")
    top = 1.2
    for i, g in enumerate(groups):
        for k, pts in enumerate(series(g["points"])):
            ys = [p["efficiency"] for p in pts]
            top = max(top, *ys)
            ax.plot([p["nodes"] for p in pts], ys, marker=_MARKERS[k % len(_MARKERS)],
                    color=f"C{i % 10}", markersize=5)
    _node_axis(ax, groups)
    ax.set_ylim(0, top * 1.08)
    ax.yaxis.set_major_formatter(_grouped_formatter(ax))
    ax.set_xlabel("nodes (log2 scale)")
    ax.set_ylabel("efficiency")
    ax.grid(True, alpha=0.3)
    ax.legend(handles=[Patch(color="tab:green", alpha=0.25,
                             label=f"not flagged: {low:.2f} to {high:.2f}"),
                       Line2D([], [], linestyle="--", linewidth=1, color="grey",
                              label="1.0: the rate at the smallest node count")],
              loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", borderaxespad=0)


def _label(text: str) -> str:
    """A label from a results file, drawn as written: ``$`` would start matplotlib's math."""
    return printable(text).replace("$", r"\$")


def _mark_flags(ax: Any, g: Mapping[str, Any]) -> None:
    kinds = flag_words(g)
    for p in g["points"]:
        labels = kinds.get((p["nodes"], p["gpus"]))
        if not labels:
            continue
        x, y = p["nodes"], p["tokens_per_sec_per_gpu"]
        ax.plot([x], [y], linestyle="", marker="o", markersize=13, markerfacecolor="none",
                markeredgecolor=FLAG_COLOUR, markeredgewidth=2, zorder=3)
        ax.annotate(", ".join(labels), (x, y), textcoords="offset points",
                    xytext=(0, 10), ha="center", fontsize="small", color=FLAG_COLOUR)
