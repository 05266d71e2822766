"""``report PATH...``: a scaling study over results files, before the rows go public.

Reads results files exactly as ``--check`` does (a row with a problem is
reported and left out), groups the ``pass`` rows by (config, system), and per
node count takes medians over the repeats. The report is one plain dict
(:func:`build_report`): the text (:func:`render_text`), the JSON
(:func:`to_json`) and the plot (:mod:`ezpz_amsc.plot`) are all drawn from it,
so they cannot disagree. Its numbers are rounded once, here, and every
derived number and every flag is computed from the rounded values, so what
the text shows is what was compared.

No numpy: a sweep is at most thousands of rows, and this runs in the CLI.
"""

from __future__ import annotations

import json
import os
import statistics
import textwrap
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .check import check_results_file
from .errors import AmscError
from .explain import _Paint
from .export import plural
from .provenance import MAX_COUNT
from .sink import KEY_COLUMNS

# Efficiency above this is superlinear. Per-GPU throughput cannot really grow
# with the node count of a weak-scaling run; a few percent can (a cooler node,
# a lucky placement, run-to-run noise), more almost always means a wrong gpus
# count somewhere: too few gpus recorded here, or too many at the baseline.
SUPERLINEAR_ABOVE = 1.05
# Efficiency below this is a collapse. Data-parallel training on these
# machines overlaps its gradient all-reduce with compute and typically keeps
# 80-95 % of the one-node per-GPU rate; below 70 % almost a third of every GPU
# is lost to something the baseline did not pay for (a slow or faulty node,
# a bad placement, a communication setting), which is worth a look before the
# point is published, even if the model really scales that badly.
LOW_EFFICIENCY_BELOW = 0.70
# Repeats of one point (same config, system, nodes, gpus) whose tokens/s
# differ by more than this, relative to their median, do not measure one rate.
SPREAD_ABOVE_PCT = 10.0
# tokens/s/gpu x gpus against tokens/s of the same row. The exporter writes
# one from the other (or both from ezpz, which divides by the ranks that ran),
# so they agree to rounding; 2 % apart means the gpus cell is not the count
# the throughput was measured with.
GPUS_MISMATCH_PCT = 2.0

WIDTH = 80
TPS, TPS_PER_GPU, MFU = "throughput_tokens_per_sec", "throughput_tokens_per_sec_per_gpu", "mfu"
MAX_SYSTEM_CHARS = 12  # longer system names are cut in the cross-machine table


# --- reading ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Run:
    """One measured repeat: a ``pass`` row with both throughput cells."""

    source: str  # PATH:LINE
    tps: float
    tps_per_gpu: float
    mfu_pct: float | None


PointKey = tuple[str, str, int, int]  # config, system, nodes, gpus


@dataclass
class Sweep:
    """Every usable row of the results files, sorted into the report's piles."""

    files: list[str]
    rows_read: int = 0
    problems: list[str] = field(default_factory=list)
    measured: dict[PointKey, list[Run]] = field(default_factory=dict)
    failed: list[dict[str, Any]] = field(default_factory=list)
    without_throughput: list[dict[str, Any]] = field(default_factory=list)

    @property
    def rows_used(self) -> int:
        return (sum(len(runs) for runs in self.measured.values()) + len(self.failed)
                + len(self.without_throughput))


def read_sweep(paths: Sequence[str | os.PathLike[str]]) -> Sweep:
    """Read every results file; problems are collected, never fatal.

    A file that cannot be read at all (missing, a directory, no header) is an
    ``AmscError``: a report without one of the files asked for would look
    complete and not be.
    """
    sweep = Sweep(files=[str(p) for p in paths])
    first_seen: dict[tuple[str, ...], str] = {}  # run identity -> PATH:LINE, across files
    for path in paths:
        if Path(path).is_dir():
            raise AmscError(f"{path}: is a directory; report needs results CSV files")
        found: list[tuple[int, str]] = []

        def take(line: int, row: dict[str, str], path: Any = path,
                 found: list[tuple[int, str]] = found) -> None:
            source = f"{path}:{line}"
            key = tuple(row.get(c, "") for c in KEY_COLUMNS)
            if key in first_seen:
                found.append((line, f"{source}: same run as {first_seen[key]}"))
                return
            first_seen[key] = source
            problem = _sort_row(sweep, source, row)
            if problem:
                found.append((line, f"{source}: {problem}"))

        rows, problems = check_results_file(path, take)
        sweep.rows_read += rows
        sweep.problems.extend(_in_line_order(str(path), problems, found))
    return sweep


def _in_line_order(path: str, checked: list[str], found: list[tuple[int, str]]) -> list[str]:
    """``--check``'s problems and the report's own, merged by line number."""
    def line_of(problem: str) -> int:
        head = problem[len(path) + 1:].split(":", 1)[0]
        return int(head) if head.isdigit() else 0  # a whole-file problem goes first

    return [text for _, text in sorted([(line_of(p), p) for p in checked] + found,
                                       key=lambda item: item[0])]


def _cell(row: Mapping[str, str], column: str) -> float | None:
    text = row.get(column, "").strip()
    return float(text) if text else None  # --check has made sure it parses and is finite


def _sort_row(sweep: Sweep, source: str, row: Mapping[str, str]) -> str | None:
    """File one row that ``--check`` passed; return why it is not used, if it is not."""
    nodes, gpus = int(row["nodes"]), int(row["gpus"])
    for name, count in (("nodes", nodes), ("gpus", gpus)):
        if count > MAX_COUNT:
            return f"{name} {count} is more than {MAX_COUNT:,}; row not used"
    where = {"source": source, "config": row["config"], "system": row["system"],
             "nodes": nodes, "gpus": gpus}
    if row["status"] == "fail":
        sweep.failed.append({**where, "timestamp": row["timestamp"],
                             "error": row.get("error", "")})
        return None
    tps, tps_per_gpu = _cell(row, TPS), _cell(row, TPS_PER_GPU)
    if tps is None or tps_per_gpu is None:
        missing = [c for c, v in ((TPS, tps), (TPS_PER_GPU, tps_per_gpu)) if v is None]
        sweep.without_throughput.append({**where, "missing": missing})
        return None
    for name, value in ((TPS, tps), (TPS_PER_GPU, tps_per_gpu)):
        if value <= 0:
            return f"{name} {row[name]!r} is not positive; row not used"
    key = (row["config"], row["system"], nodes, gpus)
    sweep.measured.setdefault(key, []).append(
        Run(source, tps, tps_per_gpu, _cell(row, MFU)))
    return None


# --- the numbers ------------------------------------------------------------------------------

def build_report(sweep: Sweep) -> dict[str, Any]:
    """The whole report as plain data (what ``--format json`` prints)."""
    by_group: dict[tuple[str, str], list[tuple[int, int, list[Run]]]] = defaultdict(list)
    for (config, system, nodes, gpus), runs in sweep.measured.items():
        by_group[(config, system)].append((nodes, gpus, runs))
    groups = [_group(config, system, points)
              for (config, system), points in sorted(by_group.items())]
    return {
        "files": sweep.files,
        "rows": {"read": sweep.rows_read,
                 "measured": sum(len(r) for r in sweep.measured.values()),
                 "without_throughput": len(sweep.without_throughput),
                 "failed": len(sweep.failed),
                 "not_used": sweep.rows_read - sweep.rows_used},
        "thresholds": {"superlinear_above": SUPERLINEAR_ABOVE,
                       "low_efficiency_below": LOW_EFFICIENCY_BELOW,
                       "spread_above_pct": SPREAD_ABOVE_PCT,
                       "gpus_mismatch_pct": GPUS_MISMATCH_PCT},
        "groups": groups,
        "cross_machine": _cross_machine(groups),
        "failed": sweep.failed,
        "without_throughput": sweep.without_throughput,
        "problems": sweep.problems,
    }


def _median(values: Iterable[float]) -> float:
    return statistics.median(values)


def spread_pct(values: Sequence[float]) -> float | None:
    """(max - min) / median, in percent; None for a single repeat."""
    if len(values) < 2:
        return None
    return (max(values) - min(values)) / _median(values) * 100


def _point(nodes: int, gpus: int, runs: list[Run]) -> dict[str, Any]:
    tps = [r.tps for r in runs]
    mfu = [r.mfu_pct for r in runs if r.mfu_pct is not None]
    spread = spread_pct(tps)
    return {
        "nodes": nodes, "gpus": gpus, "repeats": len(runs),
        "tokens_per_sec": round(_median(tps), 1),
        "tokens_per_sec_per_gpu": round(_median(r.tps_per_gpu for r in runs), 1),
        "efficiency": None,  # set by _group, against the baseline
        "mfu_pct": round(_median(mfu), 1) if mfu else None,
        "mfu_repeats": len(mfu),
        "spread_pct": None if spread is None else round(spread, 1),
        "tokens_per_sec_min": round(min(tps), 1), "tokens_per_sec_max": round(max(tps), 1),
        "flagged": False,
        "sources": [r.source for r in runs],
    }


def _group(config: str, system: str, points: list[tuple[int, int, list[Run]]]) -> dict[str, Any]:
    pts = [_point(n, g, runs) for n, g, runs in sorted(points, key=lambda p: (p[0], p[1]))]
    base = pts[0]
    for p in pts:
        p["efficiency"] = round(p["tokens_per_sec_per_gpu"] / base["tokens_per_sec_per_gpu"], 3)
    runs = {(n, g): rs for n, g, rs in points}
    flags = _group_flags(pts) + [f for p in pts for f in _point_flags(p, base, runs)]
    flagged = {(f["nodes"], f["gpus"]) for f in flags}
    for p in pts:
        p["flagged"] = (p["nodes"], p["gpus"]) in flagged or (p["nodes"], None) in flagged
    return {"config": config, "system": system,
            "baseline": {"nodes": base["nodes"], "gpus": base["gpus"]},
            "points": pts, "flags": flags}


def _flag(kind: str, reason: str, nodes: int | None = None,
          gpus: int | None = None) -> dict[str, Any]:
    return {"kind": kind, "nodes": nodes, "gpus": gpus, "reason": reason}


def _group_flags(pts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    gpus_at: dict[int, list[int]] = defaultdict(list)
    for p in pts:
        gpus_at[p["nodes"]].append(p["gpus"])
    flags = []
    if len(gpus_at) == 1:
        (nodes,) = gpus_at
        flags.append(_flag("single_node_count",
                           f"only one node count ({nodes}): no scaling to show"))
    for nodes, gpus in gpus_at.items():
        if len(gpus) > 1:
            flags.append(_flag("mixed_gpus", f"{plural(nodes, 'node')} recorded with "
                               f"{len(gpus)} different gpus counts "
                               f"({', '.join(map(str, gpus))}): check gpus", nodes))
    return flags


def _point_flags(p: dict[str, Any], base: dict[str, Any],
                 runs: Mapping[tuple[int, int], list[Run]]) -> list[dict[str, Any]]:
    at = {"nodes": p["nodes"], "gpus": p["gpus"]}
    eff, base_at = p["efficiency"], plural(base["nodes"], "node")
    flags = []
    if eff > SUPERLINEAR_ABOVE:
        flags.append(_flag("superlinear", f"efficiency {eff:.3f} is above "
                           f"{SUPERLINEAR_ABOVE:.2f} (superlinear): check gpus here and "
                           f"at the baseline ({base_at})", **at))
    elif eff < LOW_EFFICIENCY_BELOW:
        flags.append(_flag("low_efficiency", f"efficiency {eff:.3f} is below "
                           f"{LOW_EFFICIENCY_BELOW:.2f} (collapse?): each GPU delivers "
                           f"{eff * 100:.1f}% of its rate at {base_at}", **at))
    if p["spread_pct"] is not None and p["spread_pct"] > SPREAD_ABOVE_PCT:
        flags.append(_flag("spread", f"repeats disagree: spread {p['spread_pct']:.1f}% is "
                           f"above {SPREAD_ABOVE_PCT:.0f}% (tokens/s "
                           f"{_thousands(p['tokens_per_sec_min'])} to "
                           f"{_thousands(p['tokens_per_sec_max'])} over "
                           f"{p['repeats']} repeats)", **at))
    if 0 < p["mfu_repeats"] < p["repeats"]:
        flags.append(_flag("partial_mfu", f"mfu logged by {p['mfu_repeats']} of "
                           f"{p['repeats']} repeats; its median is over those only", **at))
    for r in runs[(p["nodes"], p["gpus"])]:
        ratio = round(r.tps_per_gpu * p["gpus"] / r.tps, 2)
        if abs(round(ratio * 100) - 100) > GPUS_MISMATCH_PCT:  # whole percent: no float fuzz
            flags.append(_flag("gpus_mismatch", f"{r.source}: tokens/s/gpu x gpus is "
                               f"{ratio:.2f}x tokens/s: gpus or a throughput is wrong", **at))
    return flags


def _cross_machine(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per config run on several systems: the systems side by side at shared node counts."""
    by_config: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for g in groups:  # sorted by (config, system), so the reference is the first system
        by_config[g["config"]].append(g)
    out = []
    for config, gs in by_config.items():
        if len(gs) < 2:
            continue
        at: dict[int, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
        for g in gs:
            for p in g["points"]:
                at[p["nodes"]].append((g["system"], p))
        ref = gs[0]["system"]
        rows = []
        for nodes in sorted(n for n, items in at.items() if len({s for s, _ in items}) > 1):
            ref_tps = next((p["tokens_per_sec"] for s, p in at[nodes] if s == ref), None)
            rows.extend({"nodes": nodes, "system": s, "gpus": p["gpus"],
                         "tokens_per_sec": p["tokens_per_sec"],
                         "tokens_per_sec_per_gpu": p["tokens_per_sec_per_gpu"],
                         "efficiency": p["efficiency"],
                         "vs_reference": (None if ref_tps is None
                                          else round(p["tokens_per_sec"] / ref_tps, 2)),
                         "flagged": p["flagged"]}
                        for s, p in at[nodes])
        out.append({"config": config, "systems": [g["system"] for g in gs],
                    "reference": ref, "rows": rows})
    return out


def to_json(report: Mapping[str, Any]) -> str:
    # allow_nan=False: every number in the report is finite; a NaN would be a bug.
    return json.dumps(report, indent=2, allow_nan=False, ensure_ascii=False) + "\n"


# --- text -------------------------------------------------------------------------------------

def _printable(text: str) -> str:
    """A cell from a results file, made safe for a terminal (no escapes, no line breaks)."""
    return "".join(c if c.isprintable() else " " for c in text)


def _thousands(x: float) -> str:
    return f"{x:,.1f}"


def _fit(text: str, cap: int) -> str:
    """``text`` if it fits ``cap`` characters, else the number in fewer digits."""
    if len(text) <= cap:
        return text
    x = float(text.replace(",", "").rstrip("%x"))
    suffix = text[-1] if text[-1] in "%x" else ""
    for digits in range(6, 0, -1):
        short = f"{x:.{digits}g}{suffix}"
        if len(short) <= cap:
            return short
    return short


def _num(x: float | None, style: Callable[[float], str], cap: int) -> str:
    return "-" if x is None else _fit(style(x), cap)


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], marks: Iterable[str],
           align: str = "") -> list[str]:
    """Aligned columns, right-aligned unless ``align`` has an ``l`` at that column."""
    rows = list(rows)
    widths = [max(len(c) for c in col) for col in zip(header, *rows, strict=True)]
    align = align.ljust(len(widths), "r")

    def line(mark: str, cells: Sequence[str]) -> str:
        text = "  ".join(c.ljust(w) if a == "l" else c.rjust(w)
                         for c, w, a in zip(cells, widths, align, strict=True))
        return f"{mark:<2}{text}".rstrip()

    return [line("", header)] + [line(m, r) for m, r in zip(marks, rows, strict=True)]


def _wrap(text: str, indent: str = "", more: str = "    ") -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent + more,
                         break_long_words=True, break_on_hyphens=False) or [indent]


# Column caps keep the widest possible table inside 80 columns; longer numbers
# are shown in fewer digits (the JSON keeps them whole).
_GROUP_COLUMNS = ("nodes", "gpus", "repeats", "tokens/s", "tokens/s/gpu", "eff", "mfu %",
                  "spread")


def _group_lines(g: Mapping[str, Any], p: _Paint) -> list[str]:
    out = [p.bold(line) for line in _wrap(f"{_printable(g['config'])} on "
                                          f"{_printable(g['system'])}")]
    rows = [(_num(pt["nodes"], str, 7), _num(pt["gpus"], str, 7), _num(pt["repeats"], str, 7),
             _num(pt["tokens_per_sec"], _thousands, 13),
             _num(pt["tokens_per_sec_per_gpu"], _thousands, 12),
             _num(pt["efficiency"], "{:.3f}".format, 6),
             _num(pt["mfu_pct"], "{:.1f}".format, 5),
             _num(pt["spread_pct"], "{:.1f}%".format, 6)) for pt in g["points"]]
    marks = ["!" if pt["flagged"] else "" for pt in g["points"]]
    table = _table(_GROUP_COLUMNS, rows, marks)
    out.append(table[0])
    out.extend(p.warn(ln) if m else ln for ln, m in zip(table[1:], marks, strict=True))
    mixed = {f["nodes"] for f in g["flags"] if f["kind"] == "mixed_gpus"}
    for f in g["flags"]:
        where = ""
        if f["nodes"] is not None:
            where = plural(f["nodes"], "node")
            if f["nodes"] in mixed and f["gpus"] is not None:
                where += f", {f['gpus']} gpus"
            where += ": "
        out.extend(p.warn(ln) for ln in _wrap(where + f["reason"], indent="! "))
    return out


def _cross_lines(c: Mapping[str, Any], p: _Paint) -> list[str]:
    ref = c["reference"]
    out = [p.bold(line) for line in _wrap(
        _printable(f"{c['config']}: {' vs '.join(c['systems'])}; ratio = tokens/s / {ref}'s"))]
    if not c["rows"]:
        return [*out, "  no node count was run on more than one system"]
    rows, last = [], None
    for r in c["rows"]:
        system = _printable(r["system"])
        if len(system) > MAX_SYSTEM_CHARS:
            system = system[:MAX_SYSTEM_CHARS - 1] + "…"
        rows.append(("" if r["nodes"] == last else _num(r["nodes"], str, 7), system,
                     _num(r["gpus"], str, 7), _num(r["tokens_per_sec"], _thousands, 13),
                     _num(r["tokens_per_sec_per_gpu"], _thousands, 12),
                     _num(r["efficiency"], "{:.3f}".format, 6),
                     _num(r["vs_reference"], "{:.2f}x".format, 7)))
        last = r["nodes"]
    header = ("nodes", "system", "gpus", "tokens/s", "tokens/s/gpu", "eff", "ratio")
    marks = ["!" if r["flagged"] else "" for r in c["rows"]]
    table = _table(header, rows, marks, align="rl")
    return [*out, table[0], *(p.warn(ln) if m else ln
                              for ln, m in zip(table[1:], marks, strict=True))]


def _summary_lines(report: Mapping[str, Any]) -> list[str]:
    rows, t = report["rows"], report["thresholds"]
    counts = [f"{rows['measured']} measured"] + [
        f"{rows[key]} {what}" for key, what in (("without_throughput", "without throughput"),
                                                ("failed", "failed"), ("not_used", "not used"))
        if rows[key]]
    problems = len(report["problems"])
    out = _wrap(f"scaling report: {plural(len(report['files']), 'file')}, "
                f"{plural(rows['read'], 'row')}: {', '.join(counts)}"
                + (f" ({plural(problems, 'problem')}: notes on stderr)" if problems else ""))
    out += _wrap("medians over repeats; eff = tokens/s/gpu / tokens/s/gpu at the smallest "
                 "node count of the same config and system; spread = (max - min) / median "
                 "of tokens/s over repeats", indent="  ", more="")
    out += _wrap(f"flags (!): eff above {t['superlinear_above']:.2f} or below "
                 f"{t['low_efficiency_below']:.2f}, spread above {t['spread_above_pct']:.0f}%, "
                 f"tokens/s/gpu x gpus off tokens/s by over {t['gpus_mismatch_pct']:.0f}%, "
                 "several gpus counts at one node count, mfu from some repeats only, a "
                 "single node count", indent="  ", more="")
    return out


def _failed_lines(failed: list[Mapping[str, Any]], p: _Paint) -> list[str]:
    out = [p.bold(f"failed runs ({len(failed)}, not in the tables)")]
    for f in failed:
        head = _printable(f"{f['source']}  {f['config']} on {f['system']}, "
                          f"{plural(f['nodes'], 'node')}, {plural(f['gpus'], 'gpu')}, "
                          f"{f['timestamp']}")
        out.extend(p(ln, "31") for ln in _wrap(head, indent="  "))
        if f["error"]:
            out.extend(_wrap(_printable(f"error: {f['error']}"), indent="    "))
    return out


def _without_lines(rows: list[Mapping[str, Any]], p: _Paint) -> list[str]:
    out = [p.bold(f"pass rows without throughput ({len(rows)}, not in the tables)")]
    short = {TPS: "tokens/s", TPS_PER_GPU: "tokens/s/gpu"}
    for r in rows:
        empty = " and ".join(short[c] for c in r["missing"])
        out.extend(_wrap(_printable(f"{r['source']}  {r['config']} on {r['system']}, "
                                    f"{plural(r['nodes'], 'node')}, "
                                    f"{plural(r['gpus'], 'gpu')}: {empty} empty"),
                         indent="  "))
    return out


def render_text(report: Mapping[str, Any], colour: bool = False) -> str:
    """The report for a terminal: every line fits 80 columns."""
    p = _Paint(colour)
    out = _summary_lines(report)
    for g in report["groups"]:
        out += ["", *_group_lines(g, p)]
    if not report["groups"]:
        out += ["", "no pass row with throughput: nothing to scale"]
    if report["cross_machine"]:
        out += ["", *(p.bold(ln) for ln in _wrap(
            "cross-machine (node counts run on more than one system)"))]
        for c in report["cross_machine"]:
            out += _cross_lines(c, p)
    if report["failed"]:
        out += ["", *_failed_lines(report["failed"], p)]
    if report["without_throughput"]:
        out += ["", *_without_lines(report["without_throughput"], p)]
    return "\n".join(out) + "\n"
