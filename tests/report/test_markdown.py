"""report --format markdown (report/markdown.py), read back with a Markdown parser: the
tables' cells are the report's numbers, and text from results files stays text."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from helpers import REPO, run_report
from markdown_it import MarkdownIt
from sweeps import SCALING_FLAGS

from ezpz_amsc.report.data import build_report, rate_text, read_sweep
from ezpz_amsc.report.markdown import FLAG, escape, render_markdown
from ezpz_amsc.results.schema import HEADER

SWEEP = REPO / "docs" / "report-example" / "sweep.csv"
# GitHub's Markdown: CommonMark with tables and strikethrough
MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])


def _text(inline) -> str:
    return "".join(t.content if t.type in ("text", "code_inline") else " "
                   for t in inline.children or [] if t.type != "softbreak") if inline else ""


def parse(text: str) -> dict:
    """Headings, tables (rows of cell texts, the header first) and list items, in order."""
    tokens = MD.parse(text)
    out: dict = {"headings": [], "tables": [], "items": [], "paragraphs": [], "types": set()}
    row: list[str] | None = None
    in_item = 0
    for i, t in enumerate(tokens):
        out["types"].add(t.type)
        for child in t.children or []:
            out["types"].add(child.type)
        if t.type == "heading_open":
            out["headings"].append((t.tag, _text(tokens[i + 1])))
        elif t.type == "table_open":
            out["tables"].append([])
        elif t.type == "tr_open":
            row = []
        elif t.type in ("th_open", "td_open"):
            assert row is not None
            row.append(_text(tokens[i + 1]) if tokens[i + 1].type == "inline" else "")
        elif t.type == "tr_close":
            out["tables"][-1].append(row)
        elif t.type == "list_item_open":
            in_item += 1
        elif t.type == "list_item_close":
            in_item -= 1
        elif t.type == "inline" and in_item and tokens[i - 1].type == "paragraph_open":
            out["items"].append(_text(t))
        elif t.type == "inline" and tokens[i - 1].type == "paragraph_open":
            out["paragraphs"].append(_text(t))
    return out


@pytest.fixture
def sweep_report(monkeypatch) -> tuple[dict, dict]:
    monkeypatch.chdir(SWEEP.parent)
    r = run_report("sweep.csv", "--format", "markdown")
    assert r.exit_code == 0 and r.stderr == ""
    data = json.loads(run_report("sweep.csv", "--format", "json").stdout)
    return parse(r.stdout), data


def _num(x, style: str) -> str:
    return "-" if x is None else style.format(x)


def test_one_table_per_config_and_system_with_the_reports_numbers(sweep_report):
    md, data = sweep_report
    groups = data["groups"]
    assert md["headings"][0] == ("h2", "Scaling report")
    assert [h for h in md["headings"] if h[0] == "h3"][:len(groups)] == [
        ("h3", f"{g['config']} on {g['system']}") for g in groups]
    tables = md["tables"][:len(groups)]
    for table, g in zip(tables, groups, strict=True):
        assert table[0] == ["", "nodes", "gpus", "repeats", "tokens/s", "tokens/s/gpu", "eff",
                            "mfu %", "spread"]
        assert table[1:] == [
            [FLAG if p["flagged"] else "", str(p["nodes"]), str(p["gpus"]), str(p["repeats"]),
             rate_text(p["tokens_per_sec"]), rate_text(p["tokens_per_sec_per_gpu"]),
             f"{p['efficiency']:.3f}", _num(p["mfu_pct"], "{:.1f}"),
             _num(p["spread_pct"], "{:.1f}%")] for p in g["points"]]


def test_the_first_table_cell_by_cell(sweep_report):
    md, _ = sweep_report
    assert md["tables"][0][1:5] == [
        ["", "1", "12", "3", "120,000.0", "10,000.0", "1.000", "40.0", "2.0%"],
        ["", "2", "24", "2", "235,920.0", "9,830.0", "0.983", "39.3", "0.6%"],
        ["", "4", "48", "3", "463,200.0", "9,650.0", "0.965", "38.6", "1.0%"],
        [FLAG, "8", "96", "1", "1,152,000.0", "12,000.0", "1.200", "48.0", "-"]]


def test_flags_are_a_list_under_their_table(sweep_report):
    md, data = sweep_report
    assert md["items"][:3] == SCALING_FLAGS
    flags = sum(len(g["flags"]) for g in data["groups"])
    listed = len(data["failed"]) + len(data["without_throughput"])
    assert len(md["items"]) == flags + listed
    assert "1 node, 2 gpus: efficiency 0.272 is below 0.70 (collapse?): each GPU delivers " \
           "27.2% of its rate at the baseline (1 node, 1 gpu)" in md["items"]


def test_cross_machine_failed_and_without_throughput(sweep_report):
    md, data = sweep_report
    (cross,) = data["cross_machine"]
    assert ("h2", "Cross-machine") in md["headings"]
    assert ("h3", f"{cross['config']}: aurora vs perlmutter") in md["headings"]
    table = md["tables"][len(data["groups"])]
    assert table[0] == ["", "nodes", "system", "gpus", "tokens/s", "tokens/s/gpu", "eff",
                        "ratio"]
    assert table[1:] == [
        [FLAG if r["flagged"] else "", str(r["nodes"]), r["system"], str(r["gpus"]),
         rate_text(r["tokens_per_sec"]), rate_text(r["tokens_per_sec_per_gpu"]),
         f"{r['efficiency']:.3f}", f"{r['vs_reference']:.2f}x"] for r in cross["rows"]]
    assert table[13] == [FLAG, "64", "aurora", "768", "3,110,400.0", "4,050.0", "0.405", "1.00x"]
    assert ("h2", "Failed runs (1, not in the tables)") in md["headings"]
    assert md["items"][-3:] == [
        "sweep.csv:31: agpt-2b/bs1/seq2048/tp1 on perlmutter, 32 nodes, 128 gpus, "
        "2026-08-11T00:00:24Z: error: NCCL timeout at step 3",
        "sweep.csv:5: minimal on localhost, 1 node, 1 gpu: tokens/s and tokens/s/gpu empty",
        "sweep.csv:6: diffusion/debug on localhost, 1 node, 1 gpu: tokens/s and tokens/s/gpu "
        "empty"]
    assert md["paragraphs"][0] == ("1 file (sweep.csv), 31 rows: 28 measured, 2 without "
                                   "throughput, 1 failed.")


HOSTILE = "a|b *c* _d_ <b>x</b> [l](u) `k` @team #1 ~~s~~ \\ &copy; ![i](j)"


def _hostile_sweep(tmp_path: Path) -> Path:
    p = tmp_path / "sweep.csv"
    with open(p, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(HEADER)
        for i, (nodes, system) in enumerate([(1, "x|y"), (2, "x|y"), (1, "z")]):
            w.writerow([f"2026-08-11T00:00:0{i}Z", system, HOSTILE, nodes, nodes, "pass",
                        "1.0", str(100.0 * nodes), "100.0", "", "", "", "", ""])
        w.writerow(["2026-08-11T00:01:00Z", "x|y", HOSTILE, 4, 4, "fail", "1.0", "", "", "", "",
                    "", "", f"died: {HOSTILE}\tand\x1bmore"])
    return p


def test_text_from_a_results_file_is_shown_literally(tmp_path):
    report = build_report(read_sweep([_hostile_sweep(tmp_path)]))
    md = parse(render_markdown(report))
    assert ("h3", f"{HOSTILE} on x|y") in md["headings"]
    assert ("h3", f"{HOSTILE}: x|y vs z") in md["headings"]
    # no markup came from the cells: no emphasis, link, image, html, strikethrough or code
    assert md["types"] & {"em_open", "strong_open", "link_open", "image", "html_inline",
                          "html_block", "s_open", "code_inline"} == set()
    assert all(len(row) == 9 for row in md["tables"][0])  # the | did not split a cell
    assert md["tables"][2][1][2] == "x|y"
    assert md["items"][-1] == (f"{tmp_path / 'sweep.csv'}:5: {HOSTILE} on x|y, 4 nodes, 4 gpus, "
                               f"2026-08-11T00:01:00Z: error: died: {HOSTILE} and more")


@pytest.mark.parametrize("text, shown", [
    ("plain text 1.5", "plain text 1.5"),
    ("a_b*c", "a\\_b\\*c"),
    ("x|y", "x\\|y"),
    ("<b>", "\\<b\\>"),
    ("@me #2", "\\@me \\#2"),
    ("tab\there\x1b[1m", "tab here \\[1m"),
    ("MAX x X", "MAX x X"),
])
def test_escape(text, shown):
    assert escape(text) == shown


def test_a_failed_run_without_error_text(tmp_path):
    p = tmp_path / "f.csv"
    p.write_text(",".join(HEADER) + "\n2026-08-11T00:01:00Z,a,cfg,4,4,fail,1.0,,,,,,,\n")
    md = parse(render_markdown(build_report(read_sweep([p]))))
    assert md["items"] == [f"{p}:2: cfg on a, 4 nodes, 4 gpus, 2026-08-11T00:01:00Z"]


def test_an_empty_report(tmp_path):
    p = tmp_path / "e.csv"
    p.write_text(",".join(HEADER) + "\n")
    md = parse(render_markdown(build_report(read_sweep([p]))))
    assert md["paragraphs"][-1] == "No pass row with throughput: nothing to scale."
    assert md["tables"] == []


F1 = [
    '2026-08-11T00:00:01Z,a,cfg,1,1,pass,1.0,100.000,100.000,40.000,,,,',
    '2026-08-11T00:00:02Z,a,cfg,2,2,pass,1.0,180.000,90.000,,,,,',
    '2026-08-11T00:00:03Z,b,cfg,1,4,pass,1.0,400.000,100.000,,,,,',
    '2026-08-11T00:00:04Z,x,split,1,1,pass,1.0,10.000,10.000,,,,,',
    '2026-08-11T00:00:05Z,y,split,2,2,pass,1.0,20.000,10.000,,,,,',
]
F2 = [
    '2026-08-11T00:01:00Z,a,cfg,4,4,fail,1.0,,,,,,,OOM',
    '2026-08-11T00:01:01Z,a,cfg,8,8,pass,1.0,,,,,,,',
    '2026-08-11T00:01:02Z,a,cfg,16,16,maybe,1.0,,,,,,,',
]

SUMMARY = ("2 files (f1.csv, f2.csv), 8 rows: 5 measured, 1 without throughput, 1 failed, "
           "1 not used; 1 problem (ezpz-amsc check lists them).")
LEGEND = ("Medians over repeats; eff = tokens/s/gpu / tokens/s/gpu at the smallest node count "
          "of the same config and system; spread = (max - min) / median of tokens/s over "
          "repeats. ⚠ flags: eff above 1.05 or below 0.70, spread above 10%, tokens/s/gpu x "
          "gpus off tokens/s by over 2%, several gpus counts at one node count, mfu from some "
          "repeats only, a single node count.")
SMALL = f'''\
## Scaling report

{SUMMARY}

{LEGEND}

### cfg on a

|  | nodes | gpus | repeats | tokens/s | tokens/s/gpu | eff | mfu % | spread |
| :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
|  | 1 | 1 | 1 | 100.0 | 100.0 | 1.000 | 40.0 | - |
|  | 2 | 2 | 1 | 180.0 | 90.0 | 0.900 | - | - |

### cfg on b

|  | nodes | gpus | repeats | tokens/s | tokens/s/gpu | eff | mfu % | spread |
| :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
|  | 1 | 4 | 1 | 400.0 | 100.0 | 1.000 | - | - |

Flags:

- only one node count (1): no scaling to show

### split on x

|  | nodes | gpus | repeats | tokens/s | tokens/s/gpu | eff | mfu % | spread |
| :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
|  | 1 | 1 | 1 | 10.0 | 10.0 | 1.000 | - | - |

Flags:

- only one node count (1): no scaling to show

### split on y

|  | nodes | gpus | repeats | tokens/s | tokens/s/gpu | eff | mfu % | spread |
| :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
|  | 2 | 2 | 1 | 20.0 | 10.0 | 1.000 | - | - |

Flags:

- only one node count (2): no scaling to show

## Cross-machine

Node counts run on more than one system.

### cfg: a vs b

ratio = tokens/s / a's

|  | nodes | system | gpus | tokens/s | tokens/s/gpu | eff | ratio |
| :--- | ---: | :--- | ---: | ---: | ---: | ---: | ---: |
|  | 1 | a | 1 | 100.0 | 100.0 | 1.000 | 1.00x |
|  | 1 | b | 4 | 400.0 | 100.0 | 1.000 | 4.00x |

### split: x vs y

ratio = tokens/s / x's

No node count was run on more than one system.

## Failed runs (1, not in the tables)

- f2.csv:2: cfg on a, 4 nodes, 4 gpus, 2026-08-11T00:01:00Z: error: OOM

## Pass rows without throughput (1, not in the tables)

- f2.csv:3: cfg on a, 8 nodes, 8 gpus: tokens/s and tokens/s/gpu empty
'''


def test_the_whole_page_of_a_small_sweep(tmp_path, monkeypatch):
    # two files, a flag list, a cross-machine table, one without a shared node count,
    # a failed run, a row without throughput and a row check refuses
    monkeypatch.chdir(tmp_path)
    for name, rows in (("f1.csv", F1), ("f2.csv", F2)):
        Path(name).write_text("\n".join([",".join(HEADER), *rows]) + "\n")
    r = run_report("f1.csv", "f2.csv", "--format", "markdown")
    assert r.exit_code == 0
    assert r.stdout == SMALL
    assert r.stderr == "note: f2.csv:4: status 'maybe' is not pass or fail\n"
    assert "| :--- | ---: | :--- | ---: | ---: | ---: | ---: | ---: |" in SMALL.splitlines()
    assert "| ⚠ | 8 | 96 | 1 |" in render_markdown(build_report(read_sweep([SWEEP])))
