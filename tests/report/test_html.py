"""report --format html (report/html.py, report/svg.py), read back without a browser.

The page is well-formed XML as well as HTML, so a plain XML parser reads its
tables and charts; tests/report/test_html_browser.py opens it in Chromium.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import REPO, run_report
from hypothesis import given, settings
from hypothesis import strategies as st
from sweeps import SCALING_FLAGS

from ezpz_amsc.report.chart import grouped, nice_ticks, node_labels
from ezpz_amsc.report.data import build_report, rate_text, read_sweep
from ezpz_amsc.report.html import MAX_PROBLEMS, MAX_SOURCES, render_html
from ezpz_amsc.results.schema import HEADER

SWEEP = REPO / "docs" / "report-example" / "sweep.csv"
SVG = "{http://www.w3.org/2000/svg}"
HOSTILE_CONFIG = "<script>alert(1)</script>"
HOSTILE_SYSTEM = '"><img src=x onerror=alert(1)>'
HOSTILE_ERROR = "</td></tr></table><script>window.pwned=1</script> & &amp; \x1b[31m"


def write_rows(path: Path, rows: list[dict]) -> Path:
    """A results file of ``rows`` (cells by column name; the others empty)."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(HEADER)
        for n, row in enumerate(rows):
            cells = {"timestamp": f"2026-08-11T00:{n // 60:02d}:{n % 60:02d}Z", "status": "pass",
                     "wall_time_sec": "100.000", **row}
            w.writerow([cells.get(c, "") for c in HEADER])
    return path


def rate_row(system: str, nodes: int, gpus: int, per_gpu: float, **more: str) -> dict:
    return {"system": system, "nodes": str(nodes), "gpus": str(gpus),
            "throughput_tokens_per_sec": f"{per_gpu * gpus:.3f}",
            "throughput_tokens_per_sec_per_gpu": f"{per_gpu:.3f}", "config": "cfg", **more}


def hostile_file(path: Path) -> Path:
    """Labels and an error text that would be markup, were they not escaped."""
    return write_rows(path, [
        rate_row(HOSTILE_SYSTEM, 1, 4, 1000, config=HOSTILE_CONFIG),
        rate_row(HOSTILE_SYSTEM, 2, 8, 990, config=HOSTILE_CONFIG),
        {**rate_row("aurora", 2, 24, 0), "status": "fail", "throughput_tokens_per_sec": "",
         "throughput_tokens_per_sec_per_gpu": "", "config": HOSTILE_CONFIG,
         "error": HOSTILE_ERROR},
        rate_row("Ünïcode ⚠ 日本", 1, 4, 500, config="ünï/cfg")])


def page_of(*paths: Path) -> tuple[str, dict]:
    r = run_report(*paths, "--format", "html")
    assert r.exit_code == 0, r.output
    return r.stdout, json.loads(run_report(*paths, "--format", "json").stdout)


def text_of(el: ET.Element) -> str:
    return "".join(el.itertext())


def cells(tr: ET.Element) -> list[str]:
    return [text_of(td) for td in tr]


def by_class(root: ET.Element, tag: str, cls: str) -> list[ET.Element]:
    return [e for e in root.iter(tag) if cls in (e.get("class") or "").split()]


@pytest.fixture
def example(monkeypatch) -> tuple[str, ET.Element, dict]:
    monkeypatch.chdir(SWEEP.parent)
    text, data = page_of(Path("sweep.csv"))
    return text, ET.fromstring(text), data


def test_the_page_is_self_contained(example):
    text, root, _ = example
    assert text.startswith("<!DOCTYPE html>\n<html lang=\"en\">") and text.isascii()
    csp = [m.get("content") for m in root.iter("meta") if m.get("http-equiv")]
    assert csp == ["default-src 'none'; style-src 'unsafe-inline'"]
    # nothing to fetch: no script, no image, no link, no frame, no font, no url(); the one
    # address is the SVG namespace, which is a name, never loaded
    assert not {e.tag for e in root.iter()} & {"script", "img", "link", "iframe", "object",
                                               "embed", "base", "form"}
    assert re.findall(r"(?:https?:)?//[\w.]+", text) == ["http://www.w3.org"] * text.count(
        'xmlns="http://www.w3.org/2000/svg"')
    assert "url(" not in text and "@import" not in text and "src=" not in text
    assert {e.get("href")[:1] for e in root.iter("a")} == {"#"}
    ids = {e.get("id") for e in root.iter() if e.get("id")}
    assert {e.get("href")[1:] for e in root.iter("a")} <= ids  # every link lands
    assert "@media print" in text and "nav.toc { display: none; }" in text


def test_one_table_per_config_and_system_with_the_reports_numbers(example):
    _, root, data = example
    tables = by_class(root, "table", "scaling")
    assert [(t.get("data-config"), t.get("data-system")) for t in tables] == [
        (g["config"], g["system"]) for g in data["groups"]]
    for table, g in zip(tables, data["groups"], strict=True):
        head = [text_of(th) for th in table.find("thead/tr")]
        assert head == ["", "nodes", "gpus", "repeats", "tokens/s", "tokens/s/gpu", "eff",
                        "mfu %", "spread", "rows"]
        rows = [cells(tr) for tr in table.find("tbody")]
        assert [r[:9] for r in rows] == [
            ["\u26a0" if p["flagged"] else "", f"{p['nodes']:,}", f"{p['gpus']:,}",
             str(p["repeats"]), rate_text(p["tokens_per_sec"]),
             rate_text(p["tokens_per_sec_per_gpu"]), f"{p['efficiency']:.3f}",
             "-" if p["mfu_pct"] is None else f"{p['mfu_pct']:.1f}",
             "-" if p["spread_pct"] is None else f"{p['spread_pct']:.1f}%"]
            for p in g["points"]]
        # where each number came from: every repeat's file and line
        for row, p in zip(rows, g["points"], strict=True):
            lines = [s.rpartition(":")[2] for s in p["sources"]]
            assert row[9] == f"sweep.csv:{', '.join(lines)}"


def test_the_first_table_cell_by_cell(example):
    _, root, _ = example
    table = by_class(root, "table", "scaling")[0]
    assert [cells(tr) for tr in table.find("tbody")][3:5] == [
        ["\u26a0", "8", "96", "1", "1,152,000.0", "12,000.0", "1.200", "48.0", "-",
         "sweep.csv:15"],
        ["", "16", "192", "2", "1,795,200.0", "9,350.0", "0.935", "37.4", "1.1%",
         "sweep.csv:16, 17"]]
    flagged = by_class(table, "tr", "flagged")
    assert [cells(tr)[1] for tr in flagged] == ["8", "32", "64"]
    bad = [(cells(tr)[1], text_of(td)) for tr in flagged for td in tr if td.get("class") == "bad"]
    assert bad == [("8", "1.200"), ("32", "15.4%"), ("64", "0.405")]


def test_flags_listed_under_their_table(example):
    _, root, data = example
    lists = by_class(root, "ul", "flags")
    assert [text_of(li) for li in lists[0]] == SCALING_FLAGS
    assert sum(len(ul) for ul in lists) == sum(len(g["flags"]) for g in data["groups"])


def test_a_chart_per_config_that_scales_with_the_reports_points(example):
    _, root, data = example
    charts = by_class(root, f"{SVG}svg", "chart")
    assert [text_of(c.find(f"{SVG}title")) for c in charts] == [
        "agpt-2b/bs1/seq2048/tp1: tokens/s per GPU and efficiency against nodes"]
    (chart,) = charts
    for cls, key in (("pt", "tokens_per_sec_per_gpu"), ("eff-pt", "efficiency")):
        drawn = [(g.get("data-system"), int(g.get("data-nodes")), float(g.get("data-value")))
                 for g in by_class(chart, f"{SVG}g", cls)]
        assert drawn == [(g["system"], p["nodes"], p[key]) for g in data["groups"][:2]
                         for p in g["points"]]
    assert [text_of(t) for t in by_class(chart, f"{SVG}text", "flag")] == [
        "superlinear", "spread", "low eff"]
    assert [text_of(t) for t in by_class(chart, f"{SVG}text", "xtick")] == [
        "1", "2", "4", "8", "16", "32", "64"]
    assert [text_of(t) for t in by_class(chart, f"{SVG}text", "ytick")][:3] == [
        "0", "5,000", "10,000"]
    legend = [text_of(li) for li in by_class(root, "ul", "legend")[0]]
    assert legend == ["aurora", "perlmutter"]
    # the two configs run at one node count: a note, no chart
    notes = [text_of(p) for p in by_class(root, "p", "note")]
    assert notes == ["Only one node count (1): no scaling to show, so no chart; the table has "
                     "the numbers.", "Only one node count (2): no scaling to show, so no "
                     "chart; the table has the numbers."]


def test_failed_and_without_throughput_rows_with_their_source(example):
    _, root, data = example
    (failed,) = by_class(root, "table", "failed")
    assert [cells(tr) for tr in failed.find("tbody")] == [
        ["sweep.csv:31", "agpt-2b/bs1/seq2048/tp1", "perlmutter", "32", "128",
         "2026-08-11T00:00:24Z", "NCCL timeout at step 3"]]
    (without,) = by_class(root, "table", "without")
    assert [cells(tr) for tr in without.find("tbody")] == [
        ["sweep.csv:5", "minimal", "localhost", "1", "1", "tokens/s and tokens/s/gpu"],
        ["sweep.csv:6", "diffusion/debug", "localhost", "1", "1", "tokens/s and tokens/s/gpu"]]
    (cross,) = by_class(root, "table", "cross")
    rows = [cells(tr) for tr in cross.find("tbody")]
    assert rows[0] == ["", "1", "aurora", "12", "120,000.0", "10,000.0", "1.000", "1.00x"]
    assert len(rows) == len(data["cross_machine"][0]["rows"])


def test_text_from_a_results_file_is_text_never_markup(tmp_path):
    text, data = page_of(hostile_file(tmp_path / "hostile.csv"))
    root = ET.fromstring(text)  # still well-formed: nothing broke out of its element
    assert not {e.tag for e in root.iter()} & {"script", "img"}
    assert "<script" not in text and "<img" not in text and "pwned=1</script>" not in text
    headings = [text_of(h) for h in root.iter("h3")]
    assert f"{HOSTILE_CONFIG} on {HOSTILE_SYSTEM}" in headings
    assert text_of(root.find("head/title")) == f"Scaling report: {tmp_path}/hostile.csv"
    (failed,) = by_class(root, "table", "failed")
    # the escape blanked to a space, like the text report; & shown as written
    assert cells(failed.find("tbody/tr"))[-1] == HOSTILE_ERROR.replace("\x1b", " ")
    assert [(t.get("data-config"), t.get("data-system")) for t in
            by_class(root, "table", "scaling")] == [(g["config"], g["system"])
                                                   for g in data["groups"]]
    (chart,) = by_class(root, f"{SVG}svg", "chart")
    assert {g.get("data-system") for g in by_class(chart, f"{SVG}g", "pt")} == {HOSTILE_SYSTEM}
    # not ASCII: character references, read back as written
    assert "Ünïcode ⚠ 日本" not in text and "Ünïcode ⚠ 日本 " not in headings
    assert "ünï/cfg on Ünïcode ⚠ 日本" in headings


def test_the_same_report_writes_the_same_page(tmp_path):
    p = hostile_file(tmp_path / "h.csv")
    assert page_of(p)[0] == page_of(p)[0]
    assert "2026" not in re.sub(r"2026-08-11T[\d:]+Z", "", page_of(p)[0])  # no date of its own


def test_problems_and_many_sources_are_listed_and_capped(tmp_path):
    rows = [rate_row("a", 1, 4, 1000 + n % 7) for n in range(MAX_SOURCES + 5)]
    p = write_rows(tmp_path / "s.csv", rows)
    with open(p, "a", encoding="utf-8") as f:
        f.writelines(f"garbage {n}\n" for n in range(MAX_PROBLEMS + 3))
    text, data = page_of(p)
    root = ET.fromstring(text)
    (table,) = by_class(root, "table", "scaling")
    lines = ", ".join(str(n) for n in range(2, MAX_SOURCES + 2))
    assert cells(table.find("tbody/tr"))[-1] == (f"{p}:{lines} and 5 more (--format json "
                                                 "lists them)")
    (problems,) = by_class(root, "ul", "problems")
    assert [text_of(li) for li in problems] == data["problems"][:MAX_PROBLEMS]
    assert len(data["problems"]) == MAX_PROBLEMS + 3
    section = next(s for s in root.iter("section") if s.get("id") == "problems")
    assert text_of(section.findall("p")[-1]) == ("and 3 more: ezpz-amsc check FILE lists them "
                                                 "all.")


def test_a_report_with_nothing_to_scale(tmp_path):
    p = write_rows(tmp_path / "s.csv", [{**rate_row("a", 1, 4, 1), "status": "fail",
                                         "throughput_tokens_per_sec": "",
                                         "throughput_tokens_per_sec_per_gpu": ""}])
    root = ET.fromstring(page_of(p)[0])
    assert [text_of(e) for e in by_class(root, "p", "note")] == [
        "No pass row with throughput: nothing to scale."]
    assert by_class(root, "table", "failed")


def test_several_files_one_page_and_notes_on_stderr_as_ever(tmp_path):
    a = write_rows(tmp_path / "a.csv", [rate_row("a", 1, 4, 1000), rate_row("a", 2, 8, 990)])
    b = write_rows(tmp_path / "b.csv", [rate_row("a", 4, 16, 980)])
    with open(b, "a", encoding="utf-8") as f:
        f.write("bad line\n")
    r = run_report(a, b, "--format", "html")
    assert r.exit_code == 0
    assert r.stderr == f"note: {b}:3: 1 cells, header has 14\n"
    root = ET.fromstring(r.stdout)
    (table,) = by_class(root, "table", "scaling")
    assert [cells(tr)[-1] for tr in table.find("tbody")] == [f"{a}:2", f"{a}:3", f"{b}:2"]


def test_html_needs_no_matplotlib(tmp_path):
    p = write_rows(tmp_path / "s.csv", [rate_row("a", 1, 4, 1000), rate_row("a", 2, 8, 990)])
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from ezpz_amsc.cli.report_command import report_command\n"
            "report_command.main(sys.argv[1:], standalone_mode=False)\n"
            "print(sorted(m for m in sys.modules if m.startswith(('ezpz_amsc.report', "
            "'numpy'))), file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code, str(p), "--format", "html"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.startswith("<!DOCTYPE html>") and "<svg" in out.stdout
    loaded = eval(out.stderr)  # noqa: S307 - our own print of a list of names
    assert "ezpz_amsc.report.plot" not in loaded and "numpy" not in loaded


def test_node_labels_keep_the_ends_and_the_roundest_counts():
    def extents(nodes, width=10.0):  # labels 10 wide at x = 10 x position
        return {n: (i * 10 - width / 2, i * 10 + width / 2) for i, n in enumerate(nodes)}

    assert node_labels(extents([1, 2, 4, 8]), 0) == [1, 2, 4, 8]  # touching is not crowded
    # the ends first, then the most factors of 2: 8 would crowd 16, 4 does not crowd 1 or 16
    assert node_labels(extents([1, 2, 4, 8, 16]), 10) == [1, 4, 16]
    assert node_labels(extents(list(range(1, 10))), 11) == [1, 4, 9]
    assert node_labels(extents(list(range(8, 13))), 10) == [8, 10, 12]
    assert node_labels({}, 1) == []


def test_y_ticks_are_round_and_written_with_separators():
    assert nice_ticks(23000) == [0, 5000, 10000, 15000, 20000, 25000]
    assert nice_ticks(1.26, most=4) == [0, 0.5, 1.0, 1.5]
    assert nice_ticks(0) == [0.0, 1.0]
    assert [grouped(t, 2500) for t in (0, 2500, 12500)] == ["0", "2,500", "12,500"]
    assert grouped(0.30000000000000004, 0.1) == "0.3"
    assert grouped(1234567.0, 200000) == "1,234,567"


# What a results file can hold in a label (non-blank text) and in a throughput cell.
_label = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=60).filter(
    lambda t: t.strip() != "")


@pytest.mark.slow
@settings(max_examples=60)
@given(rows=st.lists(st.tuples(_label, _label, st.integers(1, 5000),
                               st.floats(0.001, 1e12, allow_nan=False), _label),
                     min_size=1, max_size=8))
def test_any_results_file_makes_a_well_formed_page_of_text(tmp_path_factory, rows):
    d = tmp_path_factory.mktemp("html")
    p = write_rows(d / "s.csv", [
        {**rate_row(system, nodes, nodes * 4, rate, config=config),
         **({"status": "fail", "error": error} if n % 3 == 2 else {})}
        for n, (config, system, nodes, rate, error) in enumerate(rows)])
    text = render_html(build_report(read_sweep([p])))
    assert text.isascii()
    root = ET.fromstring(text)  # no label broke out of its element
    allowed = {"html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3",
               "p", "code", "em", "a", "nav", "ol", "ul", "li", "main", "section", "figure",
               "figcaption", "div", "table", "thead", "tbody", "tr", "th", "td", "footer"}
    svg = {f"{SVG}{t}" for t in ("svg", "title", "rect", "line", "text", "polyline", "g",
                                  "circle", "polygon", "path")}
    assert {e.tag for e in root.iter()} <= allowed | svg
