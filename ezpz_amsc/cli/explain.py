"""Where the row's numbers came from: the ``--explain`` report and ``--format json``.

Both read only the result (its row, notes and :class:`~ezpz_amsc.details.Details`),
never the files again, so what the report says is exactly what the export
used. No numpy: the series arrive already squeezed to sparkline width.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ezpz_amsc.cli.output import say
from ezpz_amsc.results.schema import HEADER
from ezpz_amsc.run.details import TREND_SERIES, Details, SeriesDetail, Trend
from ezpz_amsc.text import WIDTH, Paint, number, plural, table, wrap

if TYPE_CHECKING:
    from ezpz_amsc.flow.export import ExportResult

BARS = "▁▂▃▄▅▆▇█"
WARMUP_MARK = "┊"  # between the dropped warmup steps and the steps that were reduced
ABSENT = "·"  # a step (or bucket) with no finite value

# Reduced series shown in the table, in row order; loss is a last value, not reduced.
_TABLE = ("tps", "tps_per_gpu", "mfu", "tflops", "dt")
# The row's measured cells, wall_time_sec to final_loss.
_ROW_SHOWN = HEADER[HEADER.index("wall_time_sec"):HEADER.index("steps")]
# The report fits a terminal of WIDTH columns: labels in 15, text wrapped to the rest.
_INDENT = " " * 15
_NOTE = "    note: "


def spread(value: float | None, p10: float | None, p90: float | None) -> float | None:
    """(p90 - p10) / value: how wide the middle 80% of steps is, relative to the result."""
    if value is None or p10 is None or p90 is None or value == 0:
        return None
    return (p90 - p10) / abs(value)


def sparkline(points: Sequence[float | None], lo: float, hi: float) -> str:
    """One glyph per point on the ``lo``..``hi`` scale; points outside it are clipped."""
    out = []
    top = len(BARS) - 1
    for v in points:
        if v is None:
            out.append(ABSENT)
        elif hi <= lo:
            out.append(BARS[top // 2])
        else:
            level = round((v - lo) / (hi - lo) * top)
            out.append(BARS[min(top, max(0, level))])
    return "".join(out)


def _rel(path: str, run_dir: str) -> str:
    try:
        return str(Path(path).relative_to(run_dir))
    except ValueError:
        return path


def _trend_lines(trend: Trend | None, paint: Paint) -> list[tuple[str, str]]:
    """(plain text, painted text) lines; the plain one is what gets wrapped and measured."""
    if trend is None:
        return [_plain("no throughput or step-time series logged; nothing to draw")]
    lines = []
    if trend.series != "tps":
        what = ("no global throughput logged" if trend.series == "tps_per_gpu"
                else "no throughput series logged")
        lines.append(_plain(f"{what}; showing {TREND_SERIES[trend.series]} ({trend.key})"))
    warm, used = trend.warmup, trend.used
    scale_pts = [v for v in used if v is not None] or [v for v in warm if v is not None]
    lo, hi = (min(scale_pts), max(scale_pts)) if scale_pts else (0.0, 0.0)
    per = trend.steps_per_point
    how = ("1 glyph per step" if per == 1
           else f"{len(warm) + len(used)} glyphs wide, each the mean of ~{per} steps")
    lines.append(_plain(f"{trend.key}, {plural(trend.steps, 'step')}, {how}"))
    lines.append(_plain(f"scale {_scale(lo, hi)}"))
    # The sparkline gets a line of its own, so it can be picked out (and copied) whole.
    plain = sparkline(used, lo, hi)
    line = paint.good(plain)
    if warm:
        plain = sparkline(warm, lo, hi) + WARMUP_MARK + plain
        line = paint.dim(sparkline(warm, lo, hi)) + paint.warn(WARMUP_MARK) + line
    lines.append((plain, line))
    if trend.warmup_steps:
        known = [v for v in warm if v is not None]
        shown = ", ".join(number(v) for v in warm[:3]) + (", .." if len(warm) > 3 else "")
        where = ("below the scale" if known and max(known) < lo else
                 "above the scale" if known and min(known) > hi else "")
        lines.append(_plain(f"{plural(trend.warmup_steps, 'warmup step')} dropped, left of "
                            f"{WARMUP_MARK}: {shown}"
                            + (f" ({where}, drawn clipped)" if where else "")))
    else:
        lines.append(_plain("no warmup step dropped"))
    return lines


def _plain(text: str) -> tuple[str, str]:
    return text, text


def _scale(lo: float, hi: float) -> str:
    """The sparkline's range, with enough digits that a narrow one does not read as flat."""
    digits = 6
    while digits < 12 and lo != hi and number(lo, digits) == number(hi, digits):
        digits += 1
    return f"{BARS[0]} {number(lo, digits)} .. {BARS[-1]} {number(hi, digits)}"


def _table(d: Details, width: int) -> list[str]:
    """The reduced series, one row each; numbers lose digits rather than pass ``width``."""
    shown = [(name, d.series[name]) for name in _TABLE if name in d.series
             and d.series[name].present]
    if not shown:
        return ["no reduced series (no step records)"]
    for digits in range(6, 2, -1):
        lines = _table_lines(shown, d.reducer, digits)
        if max(map(len, lines)) <= width:
            break
    return lines


def _table_lines(shown: list[tuple[str, SeriesDetail]], reducer: str, digits: int) -> list[str]:
    rows = [("key", reducer, "p10", "p90", "spread", "used", "warmup")]
    for name, s in shown:
        sp = spread(s.value, s.p10, s.p90)
        dropped = "kept" if s.kept_warmup else str(s.dropped_warmup)
        if s.all_zero and name == "mfu":  # ezpz's 0.0 means "peak FLOPS unknown"
            rows.append((s.key or "-", "unknown", "-", "-", "-", str(s.used), dropped))
            continue
        rows.append((s.key or "-", number(s.value, digits), number(s.p10, digits),
                     number(s.p90, digits), "-" if sp is None else f"{sp:.1%}", str(s.used),
                     dropped))
    return table(rows, "l")


def _provenance(d: Details) -> str:
    by_file: dict[str, list[str]] = {}
    for key, src in d.provenance.sources.items():
        by_file.setdefault(src, []).append(key)
    if not by_file:
        return "none found (no run_info.json, config.json or report ### Distributed)"
    tier = {"run_info.json": "tier 1 of 3, run_info.json",
            "config.json": "tier 2 of 3, config.json"}
    parts = []
    for src, keys in by_file.items():
        label = tier.get(Path(src).name, "tier 3 of 3, report ### Distributed")
        # Which keys came from where matters only when more than one file contributed.
        parts.append(f"{src} ({label}" + (f": {', '.join(keys)})" if len(by_file) > 1 else ")"))
    return "; ".join(parts)


def _steps_text(d: Details) -> str:
    n, dropped = d.steps, d.steps_dropped_warmup
    if not n:
        return "no step records"
    if not dropped and d.warmup:
        return (f"{plural(n, 'step')} logged; --warmup {d.warmup} would leave none, "
                "so all were reduced")
    return (f"{plural(n, 'step')} logged, {dropped} dropped as warmup (--warmup {d.warmup}), "
            f"{d.steps_used} reduced with {d.reducer}")


def render(result: ExportResult, colour: bool = False, quiet: bool = False) -> str:
    """The ``--explain`` report as text (newline-terminated), for stderr, in :data:`WIDTH`."""
    d, p = result.details, Paint(colour)
    out: list[str] = [p.bold(f"explain: {d.run_dir}")]

    def block(label: str, lines: list[tuple[str, str]]) -> None:
        """Lines under a label; each wrapped unless it was painted (the sparkline)."""
        for i, (plain, painted) in enumerate(lines):
            head = f"  {label if i == 0 else '':<12} "
            out.extend(wrap(plain, head, _INDENT) if plain == painted else [head + painted])

    def item(label: str, *texts: str) -> None:
        block(label, [_plain(t) for t in texts])

    files = [_rel(f, d.run_dir) for f in d.files_read]
    read = ", ".join(files) or "no metrics file"
    if files and d.rank is not None:
        read += f" (rank {d.rank})"
    more = []
    if d.rank_files_not_read:
        more.append(f"{plural(d.rank_files_not_read, 'other rank file')} not read "
                    "(ranks log near-identical values)")
    if d.other_rank_records:
        more.append(f"{plural(d.other_rank_records, 'record')} of other ranks skipped")
    item("files read", read, *more)
    item("provenance", _provenance(d))
    item("placement", say(d.placement.system), say(d.placement.gpus), say(d.placement.nodes))

    more = []
    cov = d.step_coverage
    if cov:
        more.append(f"step numbers {cov.first}..{cov.last} have gaps (stride {cov.stride}): "
                    f"{cov.logged} of ~{cov.estimated_total} steps logged")
    if len(d.attempts) > 1:
        more.append(f"{len(d.attempts)} attempts in the records; exported "
                    + (f"#{d.attempt}" if d.attempt else "none"))
    item("steps", _steps_text(d), *more)

    label = TREND_SERIES[d.trend.series] if d.trend else "throughput"
    block(label, _trend_lines(d.trend, p))

    out.append("  " + p.bold("reduced") + " (spread = (p90 - p10) / value)")
    out.extend("    " + line for line in _table(d, WIDTH - 4))

    row = result.row
    item("row", ", ".join(f"{k}={row[k]}" for k in _ROW_SHOWN if k in row))

    notes = result.notes
    if quiet and notes:
        item("notes", f"{len(notes)} hidden by --quiet")
    elif notes:
        item("notes", str(len(notes)))
        for note in notes:
            first, *rest = wrap(say(note), _NOTE, " " * len(_NOTE))
            out.append(_NOTE[:4] + p.warn("note: ") + first[len(_NOTE):])
            out.extend(rest)
    else:
        item("notes", "none")
    return "\n".join(out) + "\n"

