"""compare/render.py: the text, the Markdown (read back with markdown-it-py, as GitHub
renders it) and the JSON, all from one comparison."""

from __future__ import annotations

import json
import re

import pytest
from markdown_it import MarkdownIt
from synthetic_studies import Study
from test_study import run

from ezpz_amsc.cli.output import json_text
from ezpz_amsc.compare.render import render_markdown, render_text, summary_line, to_data

MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])


def steady(factor: dict[int, float]) -> tuple[Study, Study]:
    """12 points run 3 times each, the same runs again in new (times ``factor``)."""
    base, new = Study(), Study("2026-09-02T00:00:00Z")
    for nodes in range(1, 13):
        rates = [10_000 - 100 * nodes + x for x in (0, 100, -100)]
        base.repeats("aurora", nodes, rates)
        new.repeats("aurora", nodes, [r * factor.get(nodes, 1.0) for r in rates])
    return base, new


@pytest.fixture
def mixed(tmp_path) -> dict:
    """11 points the same, one 15% slower, one broke, one gone, one new, one unsure."""
    base, new = steady({4: 0.85})
    base.repeats("aurora", 100, [9_000, 9_050])
    new.add("aurora", 100, None, status="fail", error="NCCL timeout")
    base.add("aurora", 101, 9_000)
    new.add("aurora", 102, 9_000)
    base.add("aurora", 103, 9_000, config="a|b_c")
    new.add("aurora", 103, 8_700, config="a|b_c")
    return run(tmp_path, base, new)


def test_the_first_line_counts_every_verdict_with_sigma_alpha_and_dates(mixed):
    first = render_text(mixed).splitlines()[0]
    sigma = mixed["noise"][0]["sigma_pct"]
    assert first == (f"compare: 1 slower, 1 broke, 11 same, 1 unsure, 1 new, 1 gone; sigma "
                     f"aurora {sigma:.1f}%; alpha 0.05 (Holm), 13 judged points; base "
                     "2026-08-11, new 2026-09-02")
    assert first == summary_line(mixed)
    assert sum(mixed["counts"][v] for v in ("slower", "broke", "same", "unsure", "new",
                                            "gone")) == len(mixed["points"])


def test_the_text_lists_what_is_not_same_with_its_numbers(mixed):
    text = render_text(mixed)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines[1:]), [ln for ln in lines if len(ln) > 80]
    slower = next(p for p in mixed["points"] if p["verdict"] == "slower")
    row = next(ln for ln in lines if re.match(r"\s+slower\s+\d", ln))
    assert row.split() == ["slower", "4", "48",
                           f"{slower['base']['tokens_per_sec_per_gpu']:,.1f}", "(3)",
                           f"{slower['new']['tokens_per_sec_per_gpu']:,.1f}", "(3)",
                           f"{slower['change_pct']:+.1f}%", f"{slower['resolves_pct']:.1f}%"]
    assert "no pass row in new: 1 failed run (NCCL timeout)" in text
    assert "in base, not in new" in text and "in new, not in base" in text
    assert "11 points same, not listed here" in text
    assert re.search(r"1 repeat a side would settle it|\d+ repeats a side would settle it",
                     text)


def test_words_never_claim_no_regression_nor_a_cause(tmp_path, mixed):
    clean = run(tmp_path, *steady({}))
    for c in (mixed, clean):
        for text in (render_text(c), render_markdown(c), json_text(to_data(c), indent=2)):
            low = text.lower()
            assert "no regression" not in low and "due to" not in low and "caused" not in low
    text = render_text(clean)
    assert "nothing slower found between the studies: 12 same (each rules out a change of X% " \
           "or more" in " ".join(text.split())


def test_markdown_renders_tables_with_the_full_table_in_details(mixed):
    md = render_markdown(mixed)
    assert md.splitlines()[0] == summary_line(mixed)
    tokens = MD.parse(md)
    tables: list = []
    row: list = []
    for i, t in enumerate(tokens):
        if t.type == "table_open":
            tables.append([])
        elif t.type == "tr_open":
            row = []
        elif t.type in ("th_open", "td_open"):
            inline = tokens[i + 1]
            row.append("".join(c.content for c in inline.children or []
                               if c.type in ("text", "code_inline")))
        elif t.type == "tr_close":
            tables[-1].append(row)
    html = [t.content for t in tokens if t.type == "html_block"]
    assert html[0].startswith("<details><summary>All 16 points</summary>")
    assert html[-1].strip() == "</details>"
    listed, full = tables
    assert listed[0][:8] == ["verdict", "system", "config", "nodes", "gpus", "base (n)",
                             "new (n)", "ratio"]
    assert [r[0] for r in listed[1:]] == ["slower", "broke", "gone", "new", "unsure"]
    # the label a|b_c is one cell, shown as written
    assert [r[2] for r in listed[1:]][-1] == "a|b_c"
    assert len(full) == 1 + len(mixed["points"])
    assert full[0][11:13] == ["z", "adjusted p"]
    slower = next(p for p in mixed["points"] if p["verdict"] == "slower")
    row = next(r for r in full[1:] if r[0] == "slower")
    assert row[7:12] == [f"{slower['ratio']:.3f}", f"{slower['change_pct']:+.1f}%",
                         f"{slower['interval_pct'][0]:+.1f}% to "
                         f"{slower['interval_pct'][1]:+.1f}%",
                         f"{slower['resolves_pct']:.1f}%", f"{slower['z']:.2f}"]
    # the full table's details block is closed: nothing after it is swallowed
    assert md.rstrip().endswith("</details>")


def test_markdown_bolds_what_fails_and_labels_assumed_noise(tmp_path):
    base = Study().repeats("aurora", 1, [10_000, 10_050, 10_020])
    new = Study("2026-09-02T00:00:00Z").repeats("aurora", 1, [8_500, 8_520, 8_490])
    c = run(tmp_path, base, new)
    md = render_markdown(c)
    assert "| **slower (assumed noise)** | aurora |" in md
    assert "5.00% assumed" in md and "rests on this assumption" in md


def test_json_carries_z_se_and_the_adjusted_p(mixed):
    data = json.loads(json_text(to_data(mixed), indent=2))
    assert data["summary"] == summary_line(mixed)
    slower = next(p for p in data["points"] if p["verdict"] == "slower")
    for key in ("d", "se", "z", "p", "p_adjusted", "interval_pct", "resolves_pct"):
        assert isinstance(slower[key], (float, list)), key
    assert slower["z"] == pytest.approx(slower["d"] / slower["se"], abs=1e-2)
    assert data["exit_code"] == 1 and data["counts"]["slower"] == 1
    text = json_text(to_data(mixed), indent=2)
    assert "NaN" not in text and "Infinity" not in text


def test_the_text_names_the_noise_and_the_shift(mixed):
    text = " ".join(render_text(mixed).split())
    noise = mixed["noise"][0]
    assert noise["floored"] and noise["studies"]["repeated_points"] == 25
    assert (f"aurora: 2.00%, the floor, above the {noise['studies']['sigma_pct']:.2f}% pooled "
            f"from 25 repeated points of both studies ({noise['studies']['df']:.1f} degrees of "
            "freedom)") in text
    shift = mixed["shifts"][0]
    assert f"aurora: {shift['change_pct']:+.1f}% over 13 points, 95% interval" in text


def test_colour_only_when_asked(mixed):
    assert "\x1b[" not in render_text(mixed)
    assert "\x1b[33m" in render_text(mixed, colour=True)


def test_long_and_many_error_texts_are_cut_in_the_note_and_whole_in_the_json(tmp_path):
    base, new = steady({})
    base.add("aurora", 50, 9_000)
    for i in range(5):
        new.add("aurora", 50, None, status="fail", error=f"e{i} " + "x" * 300)
    c = run(tmp_path, base, new)
    broke = next(p for p in c["points"] if p["verdict"] == "broke")
    assert len(broke["new"]["errors"]) == 5 and len(broke["new"]["errors"][0]) == 303
    md = render_markdown(c)
    line = next(ln for ln in md.splitlines() if ln.startswith("| **broke**"))
    assert "e2 " in line and "e3 " not in line and "; 2 more)" in line
    assert "x" * 120 not in line and "x" * 110 + "…" in line
