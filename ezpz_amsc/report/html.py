"""The report as one self-contained HTML page, to publish or send (``--format html``).

Drawn only from :func:`ezpz_amsc.report.data.build_report`'s data (built with
``sources=True``), like the text, the Markdown and the JSON: per config a
chart (inline SVG, :mod:`ezpz_amsc.report.svg`), per config and system the
scaling table with the file:line of every repeat and the flags, then the
cross-machine tables, the failed runs, the pass rows without throughput and
the problems in the input.

Self-contained: inline CSS, no script, no font, no image from anywhere; a
Content-Security-Policy forbids the page to load anything, so it opens from
disk and shows the same offline. Cells come from files people edit by hand, so
every text from a results file is escaped (a cell ``<script>`` is shown, never
run). The page is ASCII (anything else as a character reference), so it reads
right however it is served; no date in it, so the same report writes the same
bytes. Well-formed XML as well as HTML, which lets the tests read it with a
plain XML parser.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ezpz_amsc.report.chart import scales
from ezpz_amsc.report.data import TPS, TPS_PER_GPU, rate_text
from ezpz_amsc.report.svg import chart, esc, legend_key
from ezpz_amsc.report.text import flag_texts, row_counts
from ezpz_amsc.text import opt, plural, spelled
from ezpz_amsc.version import TOOL, __version__

FLAG = "&#9888;"  # a warning sign marks a flagged point, as "!" does in the text
MAX_SOURCES = 24  # line numbers listed per point; the JSON lists every one
MAX_PROBLEMS = 200  # problems listed; `ezpz-amsc check` lists every one

CSS = """
:root { --ink: #1b1f24; --muted: #57606a; --rule: #d0d7de; --flag: #b42318;
  --flagbg: #fff1ef; --head: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
  sans-serif; color: var(--ink); background: #fff; max-width: 1100px; margin: 0 auto;
  padding: 1.5rem 1.25rem 3rem; }
h1 { font-size: 1.7rem; margin: 0 0 .5rem; }
h2 { font-size: 1.3rem; margin: 2.2rem 0 .6rem; padding-bottom: .2rem;
  border-bottom: 1px solid var(--rule); }
h3 { font-size: 1.05rem; margin: 1.4rem 0 .4rem; }
p, ul { margin: .4rem 0; }
.muted, figcaption, footer { color: var(--muted); }
code { font: .9em ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
nav.toc ol { columns: 2; margin: .3rem 0; padding-left: 1.4rem; }
a { color: #0969da; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: .4rem 0; font-variant-numeric: tabular-nums; }
th, td { padding: .22rem .6rem; border-bottom: 1px solid var(--rule); text-align: right;
  vertical-align: top; white-space: nowrap; }
th { background: var(--head); font-weight: 600; }
td.text, th.text { text-align: left; white-space: normal; }
td.src { text-align: left; white-space: normal; font-size: .82em; color: var(--muted);
  min-width: 9rem; }
tr.flagged td { background: var(--flagbg); }
td.mark { color: var(--flag); padding-right: 0; }
td.bad { color: var(--flag); font-weight: 600; }
ul.flags { color: var(--flag); padding-left: 1.4rem; }
ul.flags li::marker { content: "\\26A0  "; }
p.note { background: var(--head); border-left: 4px solid var(--rule); padding: .5rem .8rem; }
figure { margin: .6rem 0 1rem; }
svg.chart { max-width: 100%; height: auto; display: block; }
svg.chart text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif;
  font-size: 12px; fill: var(--ink); }
svg.chart .ytick { text-anchor: end; }
svg.chart .xtick, svg.chart .xtitle, svg.chart text.flag { text-anchor: middle; }
svg.chart .ytitle { text-anchor: middle; }
svg.chart .frame { fill: none; stroke: #8c959f; }
svg.chart .grid { stroke: #eaeef2; }
svg.chart .tick { stroke: #8c959f; }
svg.chart .series { fill: none; stroke-width: 2; }
svg.chart .ideal { stroke-dasharray: 5 4; stroke-width: 1.2; opacity: .75; }
svg.chart line.ideal:not([stroke]) { stroke: #6e7781; }
svg.chart .band { fill: #2ca02c; opacity: .12; }
svg.chart .spread { fill: none; stroke-width: 1.6; }
svg.chart circle.flag { fill: none; stroke: #d62728; stroke-width: 2; }
svg.chart text.flag { fill: #d62728; font-size: 11px; }
ul.legend { list-style: none; padding: 0; margin: .3rem 0 0; display: flex; flex-wrap: wrap;
  gap: .3rem 1.2rem; font-size: .9em; }
ul.legend svg { vertical-align: middle; margin-right: .35rem; }
footer { margin-top: 3rem; font-size: .85em; border-top: 1px solid var(--rule);
  padding-top: .6rem; }
@page { margin: 14mm; }
@media print {
  body { font-size: 9.5pt; max-width: none; padding: 0; }
  nav.toc { display: none; }
  .scroll { overflow: visible; }
  a { color: inherit; text-decoration: none; }
  h2, h3 { break-after: avoid; }
  figure, tr, ul.flags li, p.note { break-inside: avoid; }
  thead { display: table-header-group; }
  th, td { padding: .12rem .45rem; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
"""

# default-src 'none': nothing is fetched, from the network or from disk; only the
# inline style applies (and no script would run, were one ever let through).
CSP = "default-src 'none'; style-src 'unsafe-inline'"


def _num(x: float | None, style: str) -> str:
    return "-" if x is None else style.format(x)


def _row(cells: Sequence[tuple[str, str]], cls: str = "") -> str:
    """A table row of ``(class, html)`` cells; the html is escaped already."""
    attr = f' class="{cls}"' if cls else ""
    tds = "".join(f'<td class="{c}">{h}</td>' if c else f"<td>{h}</td>" for c, h in cells)
    return f"<tr{attr}>{tds}</tr>"


def _head(names: Sequence[str], text: Sequence[str] = ()) -> str:
    ths = "".join(f'<th class="text">{n}</th>' if n in text else f"<th>{n}</th>"
                  for n in names)
    return f"<thead><tr>{ths}</tr></thead>"


def _sources(sources: Sequence[str]) -> str:
    """``sweep.csv:7, 8, 9``: each file named once, then its lines (capped)."""
    by_file: dict[str, list[str]] = {}
    for s in sources[:MAX_SOURCES]:
        path, _, line = s.rpartition(":")
        by_file.setdefault(path, []).append(line)
    text = "; ".join(f"{path}:{', '.join(lines)}" for path, lines in by_file.items())
    if len(sources) > MAX_SOURCES:
        text += (f" and {len(sources) - MAX_SOURCES:,} more ("
                 + spelled(opt("format", "json")) + " lists them)")
    return esc(text)


_GROUP_HEADER = ("", "nodes", "gpus", "repeats", "tokens/s", "tokens/s/gpu", "eff", "mfu %",
                 "spread", "rows")


def _bad_cells(g: Mapping[str, Any]) -> dict[tuple[int, int], set[str]]:
    """Which cells of a point its flags are about: eff (superlinear, low) or spread."""
    out: dict[tuple[int, int], set[str]] = {}
    for f in g["flags"]:
        cell = {"superlinear": "eff", "low_efficiency": "eff", "spread": "spread"}.get(f["kind"])
        if cell and f["nodes"] is not None:
            out.setdefault((f["nodes"], f["gpus"]), set()).add(cell)
    return out


def _group_html(g: Mapping[str, Any], anchor: str) -> list[str]:
    bad = _bad_cells(g)
    rows = []
    for p in g["points"]:
        cells = bad.get((p["nodes"], p["gpus"]), set())
        rows.append(_row([
            ("mark", FLAG if p["flagged"] else ""), ("", f"{p['nodes']:,}"),
            ("", f"{p['gpus']:,}"), ("", f"{p['repeats']:,}"),
            ("", rate_text(p["tokens_per_sec"])), ("", rate_text(p["tokens_per_sec_per_gpu"])),
            ("bad" if "eff" in cells else "", _num(p["efficiency"], "{:.3f}")),
            ("", _num(p["mfu_pct"], "{:.1f}")),
            ("bad" if "spread" in cells else "", _num(p["spread_pct"], "{:.1f}%")),
            ("src", _sources(p["sources"]))], "flagged" if p["flagged"] else ""))
    base = g["baseline"]
    out = [f'<section class="group" id="{anchor}">',
           f"<h3>{esc(g['config'])} on {esc(g['system'])}</h3>",
           f'<p class="muted">baseline (eff 1.000): {plural(base["nodes"], "node")}, '
           f'{plural(base["gpus"], "gpu")}</p>',
           f'<div class="scroll"><table class="scaling" data-config="{esc(g["config"])}" '
           f'data-system="{esc(g["system"])}">',
           _head(_GROUP_HEADER, ("rows",)), "<tbody>", *rows, "</tbody></table></div>"]
    if g["flags"]:
        out += ['<ul class="flags">', *(f"<li>{esc(t)}</li>" for t in flag_texts(g)), "</ul>"]
    out.append("</section>")
    return out


def _config_html(config: str, groups: Sequence[Mapping[str, Any]],
                 thresholds: Mapping[str, float], anchor: str, first: int) -> list[str]:
    out = [f'<section class="config" id="{anchor}">', f"<h2>{esc(config)}</h2>"]
    if scales(groups):
        svg, legend = chart(groups, thresholds,
                            f"{config}: tokens/s per GPU and efficiency against nodes")
        items = [f"<li>{legend_key(colour, shape)}{esc(label)}</li>"
                 for colour, shape, label in legend]
        out += ["<figure>", svg,
                f'<figcaption><ul class="legend">{"".join(items)}</ul>'
                "Top: tokens/s per GPU (median of the repeats; a bar spans the lowest to the "
                "highest), the dashed line flat at the rate of the smallest node count (ideal "
                "weak scaling); flagged points ringed in red. Bottom: the efficiency, over the "
                f"band in which no flag is raised ({thresholds['low_efficiency_below']:.2f} to "
                f"{thresholds['superlinear_above']:.2f}).</figcaption>", "</figure>"]
    else:
        nodes = groups[0]["points"][0]["nodes"]
        out.append(f'<p class="note">Only one node count ({nodes:,}): no scaling to show, so no '
                   "chart; the table has the numbers.</p>")
    for i, g in enumerate(groups):
        out += _group_html(g, f"g{first + i}")
    out.append("</section>")
    return out


def _cross_html(c: Mapping[str, Any]) -> list[str]:
    out = [f"<h3>{esc(c['config'])}: {esc(' vs '.join(c['systems']))}</h3>",
           f'<p class="muted">ratio = tokens/s / {esc(c["reference"])}&#8217;s at the same '
           "node count</p>"]
    if not c["rows"]:
        return [*out, "<p>No node count was run on more than one system.</p>"]
    rows, last = [], None
    for r in c["rows"]:
        rows.append(_row([
            ("mark", FLAG if r["flagged"] else ""),
            ("", "" if r["nodes"] == last else f"{r['nodes']:,}"), ("text", esc(r["system"])),
            ("", f"{r['gpus']:,}"), ("", rate_text(r["tokens_per_sec"])),
            ("", rate_text(r["tokens_per_sec_per_gpu"])), ("", _num(r["efficiency"], "{:.3f}")),
            ("", _num(r["vs_reference"], "{:.2f}x"))], "flagged" if r["flagged"] else ""))
        last = r["nodes"]
    header = ("", "nodes", "system", "gpus", "tokens/s", "tokens/s/gpu", "eff", "ratio")
    return [*out, f'<div class="scroll"><table class="cross" data-config="{esc(c["config"])}">',
            _head(header, ("system",)), "<tbody>", *rows, "</tbody></table></div>"]


def _listed(rows: Sequence[Mapping[str, Any]], extra: Sequence[str],
            cells: Any, cls: str) -> list[str]:
    header = ("row", "config", "system", "nodes", "gpus", *extra)
    body = [_row([("text", esc(r["source"])), ("text", esc(r["config"])),
                  ("text", esc(r["system"])), ("", f"{r['nodes']:,}"), ("", f"{r['gpus']:,}"),
                  *cells(r)]) for r in rows]
    return [f'<div class="scroll"><table class="{cls}">',
            _head(header, ("row", "config", "system", *extra)), "<tbody>", *body,
            "</tbody></table></div>"]


def _summary_html(report: Mapping[str, Any]) -> list[str]:
    rows, t = report["rows"], report["thresholds"]
    files = ", ".join(f"<code>{esc(f)}</code>" for f in report["files"])
    problems = report["problem_count"]
    out = [f"<p>{plural(len(report['files']), 'file')} ({files}), "
           f"{plural(rows['read'], 'row')}: {esc(', '.join(row_counts(report)))}"
           + (f'; <a href="#problems">{plural(problems, "problem")}</a>' if problems else "")
           + ".</p>",
           '<p class="muted">Medians over repeats; eff = tokens/s/gpu &#247; tokens/s/gpu at '
           "the smallest node count of the same config and system; spread = (max &#8722; min) "
           "&#247; median of tokens/s over repeats. "
           f"{FLAG} flags: eff above {t['superlinear_above']:.2f} or below "
           f"{t['low_efficiency_below']:.2f}, spread above {t['spread_above_pct']:.0f}%, "
           f"tokens/s/gpu &#215; gpus off tokens/s by over {t['gpus_mismatch_pct']:.0f}%, "
           "several gpus counts at one node count, mfu from some repeats only, mfu 0.0 "
           "(unknown), a single node count. The <em>rows</em> column names the file and line "
           "of every repeat behind a point.</p>"]
    for m in report["merged_systems"]:
        names = ", ".join(f"{name} ({plural(n, 'row')})" for name, n in m["spellings"].items())
        out.append(f"<p>{esc(f'One system named in different cases: {names}; shown as ')}"
                   f"{esc(m['system'])}.</p>")
    return out


def _toc(report: Mapping[str, Any], configs: Sequence[tuple[str, list[Any]]]) -> list[str]:
    items, n = [], 0
    for i, (config, groups) in enumerate(configs):
        systems = ", ".join(f'<a href="#g{n + k}">{esc(g["system"])}</a>'
                            for k, g in enumerate(groups))
        items.append(f'<li><a href="#c{i}">{esc(config)}</a>: {systems}</li>')
        n += len(groups)
    for key, anchor, title in (("cross_machine", "cross", "Cross-machine"),
                               ("failed", "failed", "Failed runs"),
                               ("without_throughput", "without", "Pass rows without throughput"),
                               ("problems", "problems", "Problems in the input")):
        if report[key]:
            items.append(f'<li><a href="#{anchor}">{title}</a></li>')
    return ['<nav class="toc"><ol>', *items, "</ol></nav>"]


def render_html(report: Mapping[str, Any]) -> str:
    """The whole page: one string of ASCII, well-formed as HTML and as XML."""
    by_config: dict[str, list[Mapping[str, Any]]] = {}
    for g in report["groups"]:  # sorted by (config, system)
        by_config.setdefault(g["config"], []).append(g)
    configs = list(by_config.items())
    title = f"Scaling report: {', '.join(report['files'])}"
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8"/>',
           f'<meta http-equiv="Content-Security-Policy" content="{CSP}"/>',
           '<meta name="viewport" content="width=device-width, initial-scale=1"/>',
           f'<meta name="generator" content="{TOOL} {__version__}"/>',
           f"<title>{esc(title)}</title>", f"<style>{CSS}</style>", "</head>", "<body>",
           "<header>", "<h1>Scaling report</h1>", *_summary_html(report),
           *_toc(report, configs), "</header>", "<main>"]
    n = 0
    for i, (config, groups) in enumerate(configs):
        out += _config_html(config, groups, report["thresholds"], f"c{i}", n)
        n += len(groups)
    if not configs:
        out.append('<p class="note">No pass row with throughput: nothing to scale.</p>')
    if report["cross_machine"]:
        out += ['<section id="cross">', "<h2>Cross-machine</h2>",
                "<p>Node counts run on more than one system.</p>"]
        for c in report["cross_machine"]:
            out += _cross_html(c)
        out.append("</section>")
    if report["failed"]:
        out += ['<section id="failed">',
                f"<h2>Failed runs ({len(report['failed']):,}, not in the tables)</h2>",
                *_listed(report["failed"], ("timestamp", "error"),
                         lambda r: [("text", esc(r["timestamp"])), ("text", esc(r["error"]))],
                         "failed"), "</section>"]
    if report["without_throughput"]:
        short = {TPS: "tokens/s", TPS_PER_GPU: "tokens/s/gpu"}
        out += ['<section id="without">',
                f"<h2>Pass rows without throughput ({len(report['without_throughput']):,}, "
                "not in the tables)</h2>",
                *_listed(report["without_throughput"], ("empty",),
                         lambda r: [("text", " and ".join(short[c] for c in r["missing"]))],
                         "without"), "</section>"]
    problems = report["problems"]
    if problems:
        out += ['<section id="problems">',
                f"<h2>Problems in the input ({len(problems):,})</h2>",
                f"<p>What <code>{TOOL} check</code> reports, and rows the report does not use "
                "(the <code>note:</code> lines on stderr); a line named here is left out "
                "unless it says otherwise.</p>", '<ul class="problems">',
                *(f"<li>{esc(p)}</li>" for p in problems[:MAX_PROBLEMS]), "</ul>"]
        if len(problems) > MAX_PROBLEMS:
            out.append(f"<p>and {len(problems) - MAX_PROBLEMS:,} more: <code>{TOOL} check "
                       "FILE</code> lists them all.</p>")
        out.append("</section>")
    out += ["</main>",
            f"<footer>Made by {TOOL} {__version__} (<code>{TOOL} report "
            f"{spelled(opt('format', 'html'))}</code>) "
            "from the files named above; each point's numbers come from the rows its "
            "<em>rows</em> column names (file:line).</footer>", "</body>", "</html>"]
    return "\n".join(out).encode("ascii", "xmlcharrefreplace").decode("ascii") + "\n"
