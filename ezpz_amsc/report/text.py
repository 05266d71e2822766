"""The report as text for a terminal: tables per (config, system), flags, failures.

Drawn only from :func:`ezpz_amsc.report.build_report`'s data. Every line fits
80 columns: labels are wrapped, system names cut in the one table that holds
them, and a number too wide for its column is shown in fewer digits (the JSON
keeps it whole). Cells come from files people edit by hand, so anything
unprintable (escapes, line breaks) is blanked before it reaches a terminal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ezpz_amsc.report.data import TPS, TPS_PER_GPU, rate_text
from ezpz_amsc.text import Paint, plural, printable, wrap
from ezpz_amsc.text import table as aligned

MAX_SYSTEM_CHARS = 12  # longer system names are cut in the cross-machine table


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


def _wrap(text: str, indent: str = "", more: str = "    ") -> list[str]:
    return wrap(text, indent, indent + more, break_long_words=True)


# Column caps keep the widest possible table inside 80 columns; longer numbers
# are shown in fewer digits (the JSON keeps them whole).
_GROUP_COLUMNS = ("nodes", "gpus", "repeats", "tokens/s", "tokens/s/gpu", "eff", "mfu %",
                  "spread")


def _group_lines(g: Mapping[str, Any], p: Paint) -> list[str]:
    out = [p.bold(line) for line in _wrap(f"{printable(g['config'])} on "
                                          f"{printable(g['system'])}")]
    rows = [(_num(pt["nodes"], str, 7), _num(pt["gpus"], str, 7), _num(pt["repeats"], str, 7),
             _num(pt["tokens_per_sec"], rate_text, 13),
             _num(pt["tokens_per_sec_per_gpu"], rate_text, 12),
             _num(pt["efficiency"], "{:.3f}".format, 6),
             _num(pt["mfu_pct"], "{:.1f}".format, 5),
             _num(pt["spread_pct"], "{:.1f}%".format, 6)) for pt in g["points"]]
    marks = ["!" if pt["flagged"] else "" for pt in g["points"]]
    table = aligned([_GROUP_COLUMNS, *rows], marks=["", *marks])
    out.append(table[0])
    out.extend(p.warn(ln) if m else ln for ln, m in zip(table[1:], marks, strict=True))
    for text in flag_texts(g):
        out.extend(p.warn(ln) for ln in _wrap(text, indent="! "))
    return out


def flag_texts(g: Mapping[str, Any]) -> list[str]:
    """A group's flags, each said with where it is: ``8 nodes: efficiency ...``.

    The gpus count is named only at a node count recorded with several.
    """
    mixed = {f["nodes"] for f in g["flags"] if f["kind"] == "mixed_gpus"}
    out = []
    for f in g["flags"]:
        where = ""
        if f["nodes"] is not None:
            where = plural(f["nodes"], "node")
            if f["nodes"] in mixed and f["gpus"] is not None:
                where += f", {f['gpus']} gpus"
            where += ": "
        out.append(where + f["reason"])
    return out


def row_counts(report: Mapping[str, Any]) -> list[str]:
    """``28 measured``, then each other pile that holds rows: what the summary counts."""
    rows = report["rows"]
    return [f"{rows['measured']} measured"] + [
        f"{rows[key]} {what}" for key, what in (("without_throughput", "without throughput"),
                                                ("failed", "failed"), ("not_used", "not used"))
        if rows[key]]


def _cross_lines(c: Mapping[str, Any], p: Paint) -> list[str]:
    ref = c["reference"]
    out = [p.bold(line) for line in _wrap(
        printable(f"{c['config']}: {' vs '.join(c['systems'])}; ratio = tokens/s / {ref}'s"))]
    if not c["rows"]:
        return [*out, "  no node count was run on more than one system"]
    rows, last = [], None
    for r in c["rows"]:
        system = printable(r["system"])
        if len(system) > MAX_SYSTEM_CHARS:
            system = system[:MAX_SYSTEM_CHARS - 1] + "…"
        rows.append(("" if r["nodes"] == last else _num(r["nodes"], str, 7), system,
                     _num(r["gpus"], str, 7), _num(r["tokens_per_sec"], rate_text, 13),
                     _num(r["tokens_per_sec_per_gpu"], rate_text, 12),
                     _num(r["efficiency"], "{:.3f}".format, 6),
                     _num(r["vs_reference"], "{:.2f}x".format, 7)))
        last = r["nodes"]
    header = ("nodes", "system", "gpus", "tokens/s", "tokens/s/gpu", "eff", "ratio")
    marks = ["!" if r["flagged"] else "" for r in c["rows"]]
    table = aligned([header, *rows], "rl", marks=["", *marks])
    return [*out, table[0], *(p.warn(ln) if m else ln
                              for ln, m in zip(table[1:], marks, strict=True))]


def _summary_lines(report: Mapping[str, Any]) -> list[str]:
    rows, t = report["rows"], report["thresholds"]
    counts = row_counts(report)
    problems = report["problem_count"]
    out = _wrap(f"scaling report: {plural(len(report['files']), 'file')}, "
                f"{plural(rows['read'], 'row')}: {', '.join(counts)}"
                + (f" ({plural(problems, 'problem')}: notes on stderr)" if problems else ""))
    out += _wrap("medians over repeats; eff = tokens/s/gpu / tokens/s/gpu at the smallest "
                 "node count of the same config and system; spread = (max - min) / median "
                 "of tokens/s over repeats", indent="  ", more="")
    out += _wrap(f"flags (!): eff above {t['superlinear_above']:.2f} or below "
                 f"{t['low_efficiency_below']:.2f}, spread above {t['spread_above_pct']:.0f}%, "
                 f"tokens/s/gpu x gpus off tokens/s by over {t['gpus_mismatch_pct']:.0f}%, "
                 "several gpus counts at one node count, mfu from some repeats only, mfu "
                 "0.0 (unknown), a single node count", indent="  ", more="")
    for m in report["merged_systems"]:
        names = ", ".join(f"{name} ({plural(n, 'row')})" for name, n in m["spellings"].items())
        out += _wrap(printable(f"one system named in different cases: {names}; shown as "
                               f"{m['system']}"), indent="  ")
    return out


def _failed_lines(failed: list[Mapping[str, Any]], p: Paint) -> list[str]:
    out = [p.bold(f"failed runs ({len(failed)}, not in the tables)")]
    for f in failed:
        head = printable(f"{f['source']}  {f['config']} on {f['system']}, "
                          f"{plural(f['nodes'], 'node')}, {plural(f['gpus'], 'gpu')}, "
                          f"{f['timestamp']}")
        out.extend(p(ln, "31") for ln in _wrap(head, indent="  "))
        if f["error"]:
            out.extend(_wrap(printable(f"error: {f['error']}"), indent="    "))
    return out


def _without_lines(rows: list[Mapping[str, Any]], p: Paint) -> list[str]:
    out = [p.bold(f"pass rows without throughput ({len(rows)}, not in the tables)")]
    short = {TPS: "tokens/s", TPS_PER_GPU: "tokens/s/gpu"}
    for r in rows:
        empty = " and ".join(short[c] for c in r["missing"])
        out.extend(_wrap(printable(f"{r['source']}  {r['config']} on {r['system']}, "
                                    f"{plural(r['nodes'], 'node')}, "
                                    f"{plural(r['gpus'], 'gpu')}: {empty} empty"),
                         indent="  "))
    return out


def render_text(report: Mapping[str, Any], colour: bool = False) -> str:
    """The report for a terminal: every line fits 80 columns."""
    p = Paint(colour)
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
