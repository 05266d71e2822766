"""The report as GitHub-flavoured Markdown, for a pull request's description.

Drawn only from :func:`ezpz_amsc.report.data.build_report`'s data, like the
text and the JSON: one table per (config, system) with its flags as a list,
the cross-machine tables, then failed runs and rows without throughput.
Numbers are written as the text writes them, never shortened to fit a
column. Cells come from files people edit by hand, so every character
Markdown or GitHub would act on (emphasis, links, HTML, a table's ``|``, an
``@mention``) is escaped, and anything unprintable is blanked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ezpz_amsc.report.data import TPS, TPS_PER_GPU, rate_text
from ezpz_amsc.report.text import flag_texts, row_counts
from ezpz_amsc.text import plural, printable

# Inline Markdown (CommonMark and GitHub's extensions) acts on these; a backslash
# before any ASCII punctuation shows it as it is.
_ACTIVE = set("\\`*_[]<>!&|~@#")
_GROUP_HEADER = ("", "nodes", "gpus", "repeats", "tokens/s", "tokens/s/gpu", "eff", "mfu %",
                 "spread")
_CROSS_HEADER = ("", "nodes", "system", "gpus", "tokens/s", "tokens/s/gpu", "eff", "ratio")
FLAG = "⚠"  # marks a flagged point, as "!" does in the text


def escape(text: str) -> str:
    """Text from a results file, shown literally by any Markdown renderer."""
    return "".join("\\" + c if c in _ACTIVE else c for c in printable(text))


def _num(x: float | None, style: str) -> str:
    return "-" if x is None else style.format(x)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str) -> list[str]:
    """A GFM table; ``align`` holds ``l`` or ``r`` per column."""
    rule = ["---:" if a == "r" else ":---" for a in align]
    return [f"| {' | '.join(r)} |" for r in (header, rule, *rows)]


def _group_lines(g: Mapping[str, Any]) -> list[str]:
    rows = [(FLAG if pt["flagged"] else "", str(pt["nodes"]), str(pt["gpus"]),
             str(pt["repeats"]), rate_text(pt["tokens_per_sec"]),
             rate_text(pt["tokens_per_sec_per_gpu"]), _num(pt["efficiency"], "{:.3f}"),
             _num(pt["mfu_pct"], "{:.1f}"), _num(pt["spread_pct"], "{:.1f}%"))
            for pt in g["points"]]
    out = [f"### {escape(g['config'])} on {escape(g['system'])}", "",
           *_table(_GROUP_HEADER, rows, "lrrrrrrrr")]
    if g["flags"]:
        out += ["", "Flags:", "", *(f"- {escape(text)}" for text in flag_texts(g))]
    return out


def _cross_lines(c: Mapping[str, Any]) -> list[str]:
    out = [f"### {escape(c['config'])}: {escape(' vs '.join(c['systems']))}", "",
           f"ratio = tokens/s / {escape(c['reference'])}'s", ""]
    if not c["rows"]:
        return [*out, "No node count was run on more than one system."]
    rows = [(FLAG if r["flagged"] else "", str(r["nodes"]), escape(r["system"]), str(r["gpus"]),
             rate_text(r["tokens_per_sec"]), rate_text(r["tokens_per_sec_per_gpu"]),
             _num(r["efficiency"], "{:.3f}"), _num(r["vs_reference"], "{:.2f}x"))
            for r in c["rows"]]
    return [*out, *_table(_CROSS_HEADER, rows, "lrlrrrrr")]


def _summary_lines(report: Mapping[str, Any]) -> list[str]:
    rows, t = report["rows"], report["thresholds"]
    counts = row_counts(report)
    files = ", ".join(escape(f) for f in report["files"])
    problems = report["problem_count"]
    return [
        "## Scaling report", "",
        f"{plural(len(report['files']), 'file')} ({files}), {plural(rows['read'], 'row')}: "
        f"{', '.join(counts)}"
        + (f"; {plural(problems, 'problem')} (ezpz-amsc check lists them)" if problems else "")
        + ".", "",
        "Medians over repeats; eff = tokens/s/gpu / tokens/s/gpu at the smallest node count of "
        "the same config and system; spread = (max - min) / median of tokens/s over repeats. "
        f"{FLAG} flags: eff above {t['superlinear_above']:.2f} or below "
        f"{t['low_efficiency_below']:.2f}, spread above {t['spread_above_pct']:.0f}%, "
        f"tokens/s/gpu x gpus off tokens/s by over {t['gpus_mismatch_pct']:.0f}%, several gpus "
        "counts at one node count, mfu from some repeats only, a single node count.",
    ]


def _listed(source: str, f: Mapping[str, Any]) -> str:
    return (f"{escape(source)}: {escape(f['config'])} on {escape(f['system'])}, "
            f"{plural(f['nodes'], 'node')}, {plural(f['gpus'], 'gpu')}")


def render_markdown(report: Mapping[str, Any]) -> str:
    """The report as GitHub-flavoured Markdown: headings, tables and lists."""
    out = _summary_lines(report)
    for g in report["groups"]:
        out += ["", *_group_lines(g)]
    if not report["groups"]:
        out += ["", "No pass row with throughput: nothing to scale."]
    if report["cross_machine"]:
        out += ["", "## Cross-machine", "", "Node counts run on more than one system."]
        for c in report["cross_machine"]:
            out += ["", *_cross_lines(c)]
    if report["failed"]:
        out += ["", f"## Failed runs ({len(report['failed'])}, not in the tables)", ""]
        for f in report["failed"]:
            line = f"- {_listed(f['source'], f)}, {escape(f['timestamp'])}"
            out.append(line + (f": error: {escape(f['error'])}" if f["error"] else ""))
    if report["without_throughput"]:
        short = {TPS: "tokens/s", TPS_PER_GPU: "tokens/s/gpu"}
        out += ["", f"## Pass rows without throughput ({len(report['without_throughput'])}, "
                    "not in the tables)", ""]
        for r in report["without_throughput"]:
            empty = " and ".join(short[c] for c in r["missing"])
            out.append(f"- {_listed(r['source'], r)}: {empty} empty")
    return "\n".join(out) + "\n"
