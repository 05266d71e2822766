"""Where the row's numbers came from: the ``--explain`` report and ``--format json``.

Both read only :attr:`ExportResult.details` and the notes, never the files
again, so what the report says is exactly what the export used. No numpy:
the series arrive already squeezed to sparkline width (``reduce.trend``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .export import plural

if TYPE_CHECKING:
    from .export import ExportResult

BARS = "▁▂▃▄▅▆▇█"
WARMUP_MARK = "┊"  # between the dropped warmup steps and the steps that were reduced
ABSENT = "·"  # a step (or bucket) with no finite value

# Reduced series shown in the table, in row order; loss is a last value, not reduced.
_TABLE = (("tps", "tokens/s"), ("tps_per_gpu", "tokens/s/gpu"), ("mfu", "mfu %"),
          ("tflops", "tflops/gpu"), ("dt", "step time s"))
_TREND_LABEL = {"tps": "throughput", "tps_per_gpu": "throughput per GPU", "dt": "step time"}


def use_colour(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set (no-color.org)."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR", ""):
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (OSError, ValueError):
        return False


class _Paint:
    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.on and text else text

    def bold(self, t: str) -> str:
        return self(t, "1")

    def dim(self, t: str) -> str:
        return self(t, "2")

    def warn(self, t: str) -> str:
        return self(t, "33")

    def good(self, t: str) -> str:
        return self(t, "36")


def _num(x: float | None, digits: int = 6) -> str:
    """A compact human number: 6 significant digits, no exponent for everyday sizes."""
    if x is None or not math.isfinite(x):
        return "-"
    if x != 0 and (abs(x) >= 1e9 or abs(x) < 1e-4):
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}" if abs(x) < 10 ** digits else f"{x:.0f}"


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


def _trend_lines(trend: Mapping[str, Any] | None, paint: _Paint) -> list[str]:
    if trend is None:
        return ["no throughput or step-time series logged; nothing to draw"]
    name, key = trend["series"], trend["key"]
    lines = []
    if name != "tps":
        what = ("no global throughput logged" if name == "tps_per_gpu"
                else "no throughput series logged")
        lines.append(f"{what}; showing {_TREND_LABEL[name]} ({key})")
    warm, used = list(trend["warmup"]), list(trend["used"])
    scale_pts = [v for v in used if v is not None] or [v for v in warm if v is not None]
    lo, hi = (min(scale_pts), max(scale_pts)) if scale_pts else (0.0, 0.0)
    n, w, per = trend["steps"], trend["warmup_steps"], trend["steps_per_point"]
    how = ("1 glyph per step" if per == 1
           else f"{len(warm) + len(used)} glyphs wide, each the mean of ~{per} steps")
    lines.append(f"{key}, {plural(n, 'step')}, {how}; scale {_scale(lo, hi)}")
    # The sparkline gets a line of its own, so it can be picked out (and copied) whole.
    line = paint.good(sparkline(used, lo, hi))
    if warm:
        line = paint.dim(sparkline(warm, lo, hi)) + paint.warn(WARMUP_MARK) + line
    lines.append(line)
    if w:
        known = [v for v in warm if v is not None]
        shown = ", ".join(_num(v) for v in warm[:3]) + (", .." if len(warm) > 3 else "")
        where = ("below the scale" if known and max(known) < lo else
                 "above the scale" if known and min(known) > hi else "")
        lines.append(f"{plural(w, 'warmup step')} dropped, left of {WARMUP_MARK}: {shown}"
                     + (f" ({where}, drawn clipped)" if where else ""))
    else:
        lines.append("no warmup step dropped")
    return lines


def _scale(lo: float, hi: float) -> str:
    """The sparkline's range, with enough digits that a narrow one does not read as flat."""
    digits = 6
    while digits < 12 and lo != hi and _num(lo, digits) == _num(hi, digits):
        digits += 1
    return f"{BARS[0]} {_num(lo, digits)} .. {BARS[-1]} {_num(hi, digits)}"


def _table(details: Mapping[str, Any]) -> list[str]:
    series = details.get("series") or {}
    rows = [("series", "key", details["reducer"], "p10", "p90", "spread", "used", "warmup")]
    for name, label in _TABLE:
        s = series.get(name)
        if not s or not s["present"]:
            continue
        sp = spread(s["value"], s["p10"], s["p90"])
        dropped = "kept" if s["kept_warmup"] else str(s["dropped_warmup"])
        if s.get("all_zero") and name == "mfu":  # ezpz's 0.0 means "peak FLOPS unknown"
            rows.append((label, s["key"] or "-", "unknown", "-", "-", "-", str(s["used"]),
                         dropped))
            continue
        rows.append((label, s["key"] or "-", _num(s["value"]), _num(s["p10"]), _num(s["p90"]),
                     "-" if sp is None else f"{sp:.1%}", str(s["used"]), dropped))
    if len(rows) == 1:
        return ["no reduced series (no step records)"]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(wd) if i < 2 else c.rjust(wd)
                      for i, (c, wd) in enumerate(zip(r, widths, strict=True))).rstrip()
            for r in rows]


def _provenance(details: Mapping[str, Any]) -> str:
    prov = details.get("provenance") or {}
    by_file: dict[str, list[str]] = {}
    for key, src in (prov.get("sources") or {}).items():
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


def render(result: ExportResult, colour: bool = False, quiet: bool = False) -> str:
    """The ``--explain`` report as text (newline-terminated), for stderr."""
    d, p = result.details, _Paint(colour)
    run_dir = d.get("run_dir", "")
    out: list[str] = [p.bold(f"explain: {run_dir}")]

    def item(label: str, text: str) -> None:
        out.append(f"  {label:<12} {text}")

    def more(text: str) -> None:
        out.append(f"  {'':<12} {text}")

    def block(label: str, lines: list[str]) -> None:
        for i, text in enumerate(lines):
            out.append(f"  {label if i == 0 else '':<12} {text}")

    files = [_rel(f, run_dir) for f in d.get("files_read", [])]
    rank = d.get("rank")
    read = ", ".join(files) or "no metrics file"
    if files and rank is not None:
        read += f" (rank {rank})"
    item("files read", read)
    if d.get("rank_files_not_read"):
        more(f"{plural(d['rank_files_not_read'], 'other rank file')} not read "
             "(ranks log near-identical values)")
    if d.get("other_rank_records"):
        more(f"{plural(d['other_rank_records'], 'record')} of other ranks skipped")
    item("provenance", _provenance(d))
    placement = d.get("placement") or {}
    block("placement", [placement[c] for c in ("system", "gpus", "nodes") if c in placement])

    n, used, dropped = d.get("steps", 0), d.get("steps_used", 0), d.get("steps_dropped_warmup", 0)
    if not n:
        steps = "no step records"
    elif not dropped and d.get("warmup"):
        steps = (f"{plural(n, 'step')} logged; --warmup {d['warmup']} would leave none, "
                 "so all were reduced")
    else:
        steps = (f"{plural(n, 'step')} logged, {dropped} dropped as warmup "
                 f"(--warmup {d.get('warmup')}), {used} reduced with {d.get('reducer')}")
    item("steps", steps)
    cov = d.get("step_coverage")
    if cov:
        more(f"step numbers {cov['first']}..{cov['last']} have gaps (stride "
             f"{cov['stride']}): {cov['logged']} of ~{cov['estimated_total']} steps logged")
    attempts = d.get("attempts") or []
    if len(attempts) > 1:
        chosen = d.get("attempt")
        more(f"{len(attempts)} attempts in the records; exported "
             + (f"#{chosen}" if chosen else "none"))

    trend = d.get("trend")
    label = _TREND_LABEL.get(trend["series"], "trend") if trend else "throughput"
    block(label, _trend_lines(trend, p))

    out.append("  " + p.bold("reduced") + " (spread = (p90 - p10) / value)")
    out.extend("    " + line for line in _table(d))

    row = result.row
    shown = ", ".join(f"{k}={row[k]}" for k in ("wall_time_sec", "throughput_tokens_per_sec",
                                                "throughput_tokens_per_sec_per_gpu", "mfu",
                                                "tflops", "final_loss") if k in row)
    item("row", shown)

    notes = result.notes
    if quiet and notes:
        item("notes", f"{len(notes)} hidden by --quiet")
    elif notes:
        item("notes", str(len(notes)))
        out.extend("    " + p.warn("note: ") + note for note in notes)
    else:
        item("notes", "none")
    return "\n".join(out) + "\n"


def json_ready(result: ExportResult) -> dict[str, Any]:
    """What ``--format json`` prints for one run, as plain JSON-ready values:
    ``{"row": the exact CSV cell strings, "details": ...}``.

    The one place that turns a result into data: ``--format json`` and the
    provenance records both take it from here.
    """
    return {"row": result.row, "details": result.details}


def to_json(result: ExportResult) -> str:
    """One JSON object (one line) per run: the exact CSV cell strings and the details."""
    # allow_nan=False: details carry only finite numbers or null; a NaN here is a bug
    # that must fail loudly rather than emit JSON other tools cannot parse.
    return json.dumps(json_ready(result), allow_nan=False, ensure_ascii=False)
