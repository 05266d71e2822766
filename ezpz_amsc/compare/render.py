"""The comparison as text, Markdown or JSON, all drawn from
:func:`ezpz_amsc.compare.study.compare_studies`'s one dict.

The first line of the text and of the Markdown is the summary (:func:`summary_line`):
every verdict counted, sigma, alpha, the judged points and both studies' dates, so a
CI log's first line says what happened. Then the points that are not `same`, each
with what it can and cannot say; the study shifts; the noise. Words are chosen so
that nothing claims more than the numbers: never "no regression" (a point rules out
a change of X % or more, or it resolves only changes of Y % or more), never a cause.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from ezpz_amsc.report.data import rate_text
from ezpz_amsc.report.markdown import escape
from ezpz_amsc.text import Paint, opt, plural, printable, spelled, wrap
from ezpz_amsc.text import table as aligned

# The verdicts counted in the summary even at 0: the ones that fail a CI run.
ALWAYS_COUNTED = ("slower", "broke")


def level(settings: Mapping[str, Any]) -> str:
    """The intervals' confidence, ``95%`` at alpha 0.05."""
    return f"{100 * (1 - settings['alpha']):g}%"


def legend(s: Mapping[str, Any]) -> str:
    """What the columns are and what each verdict needs, under the summary line."""
    effect = f"{s['min_effect_pct']:g}%"
    return ("tokens/s/gpu, medians over each point's pass rows; change = new / base - 1; "
            f"slower or faster: Holm-significant at {s['alpha']:g} and at least {effect} (2 or "
            f"more repeats a side); same: the {level(s)} interval inside ±{effect}; resolves: "
            "the smallest change the point would call")


def _signed(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1f}%"


def _interval(iv: Sequence[float] | None) -> str:
    return "-" if iv is None else f"{iv[0]:+.1f}% to {iv[1]:+.1f}%"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}%"


def _side(s: Mapping[str, Any] | None) -> str:
    """``10,000.0 (3)``: the median tokens/s/gpu and the repeats it is over."""
    if s is None:
        return "-"
    if s["tokens_per_sec_per_gpu"] is None:
        return f"- ({s['repeats']})"
    return f"{rate_text(s['tokens_per_sec_per_gpu'])} ({s['repeats']})"


def _dates(d: Mapping[str, str | None]) -> str:
    first, last = (d["first"] or "")[:10], (d["last"] or "")[:10]
    if not first:
        return "no rows"
    return first if first == last else f"{first} to {last}"


def _sigma_text(n: Mapping[str, Any]) -> str:
    return f"{n['system']} {n['sigma_pct']:.1f}%" + (" assumed" if n["source"] == "assumed"
                                                      else "")


def summary_line(c: Mapping[str, Any]) -> str:
    """Every verdict counted (slower and broke even at 0), sigma, alpha, the judged points,
    both studies' dates: one line."""
    counts = c["counts"]
    shown = [f"{counts[v]} {v}" for v in (*ALWAYS_COUNTED, *(v for v in counts
                                                             if v not in ALWAYS_COUNTED))
             if v in ALWAYS_COUNTED or counts[v]]
    sigma = ", ".join(_sigma_text(n) for n in c["noise"]) or "-"
    s = c["settings"]
    slower_shifts = [x["system"] for x in c["shifts"] if x["verdict"] == "slower"]
    shift = f"; study slower on {', '.join(slower_shifts)}" if slower_shifts else ""
    return (f"compare: {', '.join(shown)}{shift}; sigma {sigma}; alpha {s['alpha']:g} (Holm), "
            f"{plural(c['judged'], 'judged point')}; base {_dates(c['base']['dates'])}, "
            f"new {_dates(c['new']['dates'])}")


def _bound(p: Mapping[str, Any]) -> float:
    """The largest change a judged point's interval leaves open, in percent."""
    lo, hi = p["interval_pct"]
    return float(max(abs(lo), abs(hi)))


def outlook(c: Mapping[str, Any]) -> str | None:
    """What the judged points can and cannot say, when nothing was found slower: never
    "no regression", but the change each point rules out or could resolve."""
    counts, points = c["counts"], c["points"]
    if counts["slower"] or counts["broke"] or not c["judged"]:
        return None
    same = [_bound(p) for p in points if p["verdict"] == "same"]
    unsure = [p["resolves_pct"] for p in points if p["verdict"] == "unsure"]
    parts = []
    if same:
        parts.append(f"{len(same)} same (each rules out a change of X% or more, X "
                     f"{_span(same)})")
    if unsure:
        parts.append(f"{len(unsure)} unsure (each can resolve only a change of Y% or more, "
                     f"Y {_span(unsure)})")
    faster = counts["faster"]
    if faster:
        parts.append(f"{faster} faster")
    return "nothing slower found between the studies: " + "; ".join(parts)


def _span(xs: Sequence[float]) -> str:
    lo, hi = min(xs), max(xs)
    return f"{lo:.1f}%" if lo == hi else f"{lo:.1f}% to {hi:.1f}%"


def point_note(p: Mapping[str, Any], settings: Mapping[str, Any], interval: bool = True) -> str:
    """What a point's verdict rests on, or why it has none: one sentence (``interval``:
    with the interval, which a table with a column for it leaves out)."""
    v, b, n = p["verdict"], p["base"], p["new"]
    notes = []
    if interval and p["interval_pct"] is not None:
        notes.append(f"{level(settings)} interval {_interval(p['interval_pct'])}")
    if v in ("slower", "faster"):
        notes.append(f"adjusted p {p['p_adjusted']:.2g}")
    elif v == "same":
        notes.append(f"rules out a change of {_bound(p):.1f}% or more")
    elif v == "unsure":
        if p["settle_repeats"] is None:
            notes.append("more than 50 repeats a side would be needed to settle it")
        else:
            notes.append(f"{plural(p['settle_repeats'], 'repeat')} a side would settle it")
    elif v == "noisy":
        where = [f"{name} {s['spread_pct']:.1f}%" for name, s in (("base", b), ("new", n))
                 if s["spread_pct"] is not None and s["spread_pct"] > settings["noisy_above_pct"]]
        notes.append(f"repeats spread above {settings['noisy_above_pct']:.0f}% ("
                     f"{', '.join(where)}): not judged")
    elif v == "not comparable":
        steps = ", ".join(f"{name} {'/'.join(map(str, s['steps']))}"
                          for name, s in (("base", b), ("new", n)) if s["steps"])
        notes.append(f"repeats ran different steps ({steps}): not comparable")
    elif v == "broke":
        notes.append(f"no pass row in new: {_failed(n)}")
    elif v == "fixed":
        notes.append(f"no pass row in base ({_failed(b)}); passes in new")
    elif v == "failing":
        notes.append(f"no pass row in either study: base {_failed(b)}; new {_failed(n)}")
    elif v == "unmeasured":
        empty = [name for name, s in (("base", b), ("new", n)) if not s["repeats"]]
        notes.append(f"pass rows without throughput in {' and '.join(empty)}: not judged")
    elif v == "different":
        notes.append(f"{b['system']} ({plural(b['gpus'], 'gpu')}) against {n['system']} "
                     f"({plural(n['gpus'], 'gpu')}): a difference between systems, not judged")
    elif v == "gone":
        notes.append("in base, not in new")
    elif v == "new":
        notes.append("in new, not in base")
    if p["assumed_noise"]:
        notes.append(f"assumed noise ({settings['assumed_sigma_pct']:.0f}%)")
    if p["flaky"]:
        notes.append(f"flaky: {_runs_failed(n)} in new, {_runs_failed(b)} in base")
    return "; ".join(notes)


# A failed run's error text as a note shows it: the first few, each cut (a cell may hold
# 128 KiB); the JSON keeps every distinct text whole.
MAX_ERRORS_SHOWN, MAX_ERROR_CHARS = 3, 120


def _failed(s: Mapping[str, Any]) -> str:
    text = plural(s["failed"], "failed run")
    errors = [e if len(e) <= MAX_ERROR_CHARS else e[:MAX_ERROR_CHARS - 1] + "…"
              for e in s["errors"][:MAX_ERRORS_SHOWN]]
    if len(s["errors"]) > MAX_ERRORS_SHOWN:
        errors.append(f"{len(s['errors']) - MAX_ERRORS_SHOWN} more")
    return text + (f" ({'; '.join(errors)})" if errors else "")


def _runs_failed(s: Mapping[str, Any]) -> str:
    runs = s["failed"] + s["repeats"] + s["without_throughput"]
    return f"{s['failed']} of {plural(runs, 'run')} failed"


def noise_note(n: Mapping[str, Any], settings: Mapping[str, Any]) -> str:
    """Where a system's sigma came from, and what it rests on."""
    def rests(est: Mapping[str, Any], where: str) -> str:
        if not est["repeated_points"]:
            return f"no repeated point in {where}"
        return (f"{est['sigma_pct']:.2f}% pooled from "
                f"{plural(est['repeated_points'], 'repeated point')} of {where} "
                f"({est['df']:.1f} degrees of freedom)")

    own = rests(n["studies"], "both studies")
    aa = None if n["noise_files"] is None else rests(n["noise_files"],
                                                      spelled(opt("noise_from")))
    name = n["system"]
    if n["source"] == "assumed":
        told = "; ".join([own] + ([aa] if aa else []))
        return (f"{name}: {n['sigma_pct']:.2f}% assumed, as the repeats are too few to measure "
                f"it ({told}; {settings['min_sigma_df']:g} degrees of freedom are needed); "
                f"every verdict on {name} rests on this assumption")
    used, other = (aa, own) if n["source"] == "a/a" else (own, aa)
    if n["floored"]:
        text = (f"{name}: {n['sigma_pct']:.2f}%, the floor, above the {used}")
    else:
        text = f"{name}: {used}"
    if other:
        text += f"; not used: {other}"
    return text


def shift_note(s: Mapping[str, Any], settings: Mapping[str, Any]) -> str:
    if s["verdict"] == "not judged":
        return (f"{s['system']}: not judged: {plural(s['points'], 'judged point')} (a study "
                f"shift needs {settings['shift_min_points']})")
    head = (f"{s['system']}: {_signed(s['change_pct'])} over {plural(s['points'], 'point')}, "
            f"{level(settings)} interval {_interval(s['interval_pct'])}")
    lo, hi = s["interval_pct"]
    tail = {"slower": f"slower as a whole, by {settings['min_effect_pct']:g}% or more",
            "faster": f"faster as a whole, by {settings['min_effect_pct']:g}% or more",
            "drift": (f"drift: {'slower' if s['change_pct'] < 0 else 'faster'} as a whole by "
                      f"{settings['drift_pct']:g}% to {settings['min_effect_pct']:g}%, "
                      "a warning"),
            "none": f"rules out a shift of {max(abs(lo), abs(hi)):.1f}% or more"}[s["verdict"]]
    return f"{head}: {tail}" + (" (assumed noise)" if s["assumed_noise"] else "")


# --- text ---------------------------------------------------------------------------------

_COLUMNS = ("verdict", "nodes", "gpus", "base (n)", "new (n)", "change", "resolves")


def _groups(points: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], list[Mapping[str, Any]]]:
    out: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for p in points:
        if p["verdict"] != "same":
            out[(p["config"], p["system"])].append(p)
    return out


def render_text(c: Mapping[str, Any], colour: bool = False) -> str:
    """The comparison for a terminal: the summary line, then the points that are not `same`
    per config and system, the study shifts and the noise."""
    paint = Paint(colour)
    s = c["settings"]
    out = [summary_line(c)]
    out += wrap(legend(s), "  ", "  ")
    if (note := outlook(c)) is not None:
        out += wrap(note, "  ", "  ")
    for (config, system), points in _groups(c["points"]).items():
        out += ["", *(paint.bold(ln) for ln in wrap(printable(f"{config} on {system}"), "", "    ",
                                                      break_long_words=True))]
        rows = [(p["verdict"], str(p["nodes"]), str(p["gpus"]), _side(p["base"]),
                 _side(p["new"]), _signed(p["change_pct"]), _pct(p["resolves_pct"]))
                for p in points]
        table = aligned([_COLUMNS, *rows], "l")
        out.append("  " + table[0])
        for p, line in zip(points, table[1:], strict=True):
            failing = p["verdict"] in ("slower", "broke")
            out.append(paint.warn("  " + line) if failing else "  " + line)
            out += wrap(printable(point_note(p, s)), "      ", "      ")
    if c["shifts"]:
        out += ["", paint.bold("study shift per system (geometric mean of new / base over the "
                               "judged points)")]
        for x in c["shifts"]:
            out += wrap(printable(shift_note(x, s)), "  ", "      ")
    if c["noise"]:
        out += ["", paint.bold("noise (sigma of one repeat, per system)")]
        for n in c["noise"]:
            out += wrap(printable(noise_note(n, s)), "  ", "      ")
    same = c["counts"]["same"]
    if same:
        out += ["", f"{plural(same, 'point')} same, not listed here ("
                    + spelled(opt("format", "markdown")) + " or json lists every point)"]
    return "\n".join(out) + "\n"


# --- Markdown ------------------------------------------------------------------------------

_MD_LISTED = ("verdict", "system", "config", "nodes", "gpus", "base (n)", "new (n)", "ratio",
              "interval", "resolves", "note")
_MD_ALL = ("verdict", "system", "config", "nodes", "gpus", "base (n)", "new (n)", "ratio",
           "change", "interval", "resolves", "z", "adjusted p", "mfu % base", "mfu % new",
           "wall s base", "wall s new")


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str) -> list[str]:
    rule = ["---:" if a == "r" else ":---" for a in align]
    return [f"| {' | '.join(r)} |" for r in (header, rule, *rows)]


def _num(x: float | None, style: str = "{:g}") -> str:
    return "-" if x is None else style.format(x)


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _verdict_cell(p: Mapping[str, Any]) -> str:
    text = p["verdict"] + (" (assumed noise)" if p["assumed_noise"] else "")
    return f"**{text}**" if p["verdict"] in ("slower", "broke") else text


def render_markdown(c: Mapping[str, Any]) -> str:
    """The comparison as GitHub-flavoured Markdown: the summary line first, the points that
    are not `same`, the study shifts and the noise; every point in a <details> table."""
    s = c["settings"]
    out = [escape(summary_line(c)), "",
           escape(legend(s) + ".")]
    if (note := outlook(c)) is not None:
        out += ["", escape(note) + "."]
    listed = [p for p in c["points"] if p["verdict"] != "same"]
    if listed:
        rows = [(_verdict_cell(p), escape(p["system"]), escape(p["config"]), str(p["nodes"]),
                 str(p["gpus"]), _side(p["base"]), _side(p["new"]), _ratio(p["ratio"]),
                 _interval(p["interval_pct"]), _pct(p["resolves_pct"]),
                 escape(point_note(p, s, interval=False))) for p in listed]
        out += ["", "### Changed, unsure, broken and missing points", "",
                *_md_table(_MD_LISTED, rows, "lllrrrrrrrl")]
    if c["shifts"]:
        out += ["", "### Study shift per system", "",
                "Geometric mean of new / base over the judged points.", ""]
        out += [f"- {escape(shift_note(x, s))}" for x in c["shifts"]]
    if c["noise"]:
        out += ["", "### Noise", "", "sigma of one repeat, per system.", ""]
        out += [f"- {escape(noise_note(n, s))}" for n in c["noise"]]
    if c["points"]:
        every: list[tuple[str, ...]] = [
                (_verdict_cell(p), escape(p["system"]), escape(p["config"]), str(p["nodes"]),
                 str(p["gpus"]), _side(p["base"]), _side(p["new"]), _ratio(p["ratio"]),
                 _signed(p["change_pct"]), _interval(p["interval_pct"]),
                 _pct(p["resolves_pct"]), _num(p["z"], "{:.2f}"),
                 _num(p["p_adjusted"], "{:.2g}"),
                 *(_num(side and side["mfu_pct"], "{:.1f}") for side in (p["base"], p["new"])),
                 *(_num(side and side["wall_time_sec"], "{:,.1f}")
                   for side in (p["base"], p["new"])))
                for p in c["points"]]
        out += ["", f"<details><summary>All {plural(len(c['points']), 'point')}</summary>", "",
                *_md_table(_MD_ALL, every, "lllrrrrrrrrrrrrrr"), "", "</details>"]
    return "\n".join(out) + "\n"


# --- JSON ---------------------------------------------------------------------------------

def to_data(c: Mapping[str, Any]) -> dict[str, Any]:
    """The comparison as ``--format json`` prints it: ``summary`` (the first line of the
    text) first."""
    return {"summary": summary_line(c), **c}
