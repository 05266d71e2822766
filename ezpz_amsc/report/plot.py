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
from ezpz_amsc.text import opt, printable

FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
# No date, tool stamps as they are: the same report draws the same bytes.
_METADATA: dict[str, dict[str, Any] | None] = {
    "png": None, "svg": {"Date": None}, "pdf": {"CreationDate": None}}
FLAG_COLOUR = "tab:red"
_SHORT = {"superlinear": "superlinear", "low_efficiency": "low eff", "spread": "spread",
          "gpus_mismatch": "gpus?", "partial_mfu": "mfu", "mixed_gpus": "gpus?"}


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


def write_plot(report: Mapping[str, Any], path: str) -> list[str]:
    """Draw the plot and write it to ``path`` whole, or not at all; return notes."""
    fmt = plot_format(path)
    if not report["groups"]:
        raise AmscError(opt("plot", path) + ": nothing to plot (no pass row with throughput)")
    fig = _figure(report["groups"])
    from matplotlib import rc_context

    from ezpz_amsc.fs.create import create_file

    buf = io.BytesIO()
    # No date and fixed SVG ids: the same report draws the same bytes, so a
    # plot kept under version control changes only when the data does.
    with (rc_context({"svg.hashsalt": "ezpz-amsc"}),
          warnings.catch_warnings(record=True) as caught):
        warnings.simplefilter("always")
        fig.savefig(buf, format=fmt, metadata=_METADATA[fmt])
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


def _figure(groups: list[Mapping[str, Any]]) -> Any:
    from matplotlib.figure import Figure

    configs = list(dict.fromkeys(g["config"] for g in groups))
    cols = 1 if len(configs) <= 3 else 2
    rows = -(-len(configs) // cols)
    fig = Figure(figsize=(10 * cols, 3.8 * rows), constrained_layout=True)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, config in zip(axes, configs, strict=False):
        _panel(ax, config, [g for g in groups if g["config"] == config])
    for ax in axes[len(configs):]:
        ax.set_visible(False)
    return fig


def _series(points: list[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """The points of one system split by GPUs per node, each a weak-scaling series.

    Two ``gpus`` counts at one node count are two experiments (or a wrong cell,
    which the report flags): joined by one line they would draw a vertical
    segment that reads as a measurement.
    """
    by_ratio: dict[float, list[Mapping[str, Any]]] = {}
    for p in points:
        by_ratio.setdefault(p["gpus"] / p["nodes"], []).append(p)
    return [by_ratio[r] for r in sorted(by_ratio)]


def _ratio_text(p: Mapping[str, Any]) -> str:
    per_node = p["gpus"] / p["nodes"]
    return f"{per_node:g} gpu{'' if per_node == 1 else 's'}/node"


def _panel(ax: Any, config: str, groups: list[Mapping[str, Any]]) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.ticker import NullFormatter, NullLocator

    handles = []
    ideal = spread = False
    for i, g in enumerate(groups):
        colour = f"C{i % 10}"
        series = _series(g["points"])
        for k, pts in enumerate(series):
            xs = [p["nodes"] for p in pts]
            ys = [p["tokens_per_sec_per_gpu"] for p in pts]
            label = _label(g["system"]) + (f" ({_ratio_text(pts[0])})" if len(series) > 1
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
    ax.set_xscale("log", base=2)
    nodes = sorted({p["nodes"] for g in groups for p in g["points"]})
    ax.set_xticks(nodes)
    ax.set_xticklabels([str(n) for n in nodes])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
    if len(nodes) == 1:  # a single tick: give the axis some width around it
        ax.set_xlim(nodes[0] / 2, nodes[0] * 2)
    ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.12)  # room for the flag labels
    ax.set_xlabel("nodes (log2 scale)")
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


def _label(text: str) -> str:
    """A label from a results file, drawn as written: ``$`` would start matplotlib's math."""
    return printable(text).replace("$", r"\$")


def _mark_flags(ax: Any, g: Mapping[str, Any]) -> None:
    kinds: dict[tuple[int, int], list[str]] = {}
    for f in g["flags"]:
        for p in g["points"]:
            if f["nodes"] == p["nodes"] and f["gpus"] in (None, p["gpus"]):
                kinds.setdefault((p["nodes"], p["gpus"]), []).append(_SHORT[f["kind"]])
    for p in g["points"]:
        labels = kinds.get((p["nodes"], p["gpus"]))
        if not labels:
            continue
        x, y = p["nodes"], p["tokens_per_sec_per_gpu"]
        ax.plot([x], [y], linestyle="", marker="o", markersize=13, markerfacecolor="none",
                markeredgecolor=FLAG_COLOUR, markeredgewidth=2, zorder=3)
        ax.annotate(", ".join(dict.fromkeys(labels)), (x, y), textcoords="offset points",
                    xytext=(0, 10), ha="center", fontsize="small", color=FLAG_COLOUR)
