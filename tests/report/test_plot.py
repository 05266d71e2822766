"""``report --plot`` (report/plot.py): the figure drawn from the report's data."""

from __future__ import annotations

import os
import sys
import warnings
import xml.etree.ElementTree as ET

import pytest
from helpers import (
    PNG_SIGNATURE,
    error_line,
    run_report,
)
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sweeps import (
    CFG,
    Sweep,
    _axes_of,
    _drawn,
    _drawn_labels,
    _figure_of,
    _png_size,
    _rate,
    _report_of,
    _text,
    scaling_sweep,
)

from ezpz_amsc.errors import AmscError
from ezpz_amsc.results.schema import MAX_COUNT


@pytest.mark.slow
def test_plot_png_written_whole_and_report_unchanged(tmp_path):
    pytest.importorskip("matplotlib")
    p = scaling_sweep().write(tmp_path / "sweep.csv")
    png = tmp_path / "scaling.png"
    r = run_report(p, "--plot", png)
    assert r.exit_code == 0 and r.stderr == f"note: wrote {png}\n"
    assert r.stdout == run_report(p).stdout
    assert run_report(p, "--plot", png, "-q").stderr == ""
    data = png.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 10_000
    assert sorted(f.name for f in tmp_path.iterdir()) == ["scaling.png", "sweep.csv"]
    umask = os.umask(0o022)
    os.umask(umask)
    assert png.stat().st_mode & 0o777 == 0o666 & ~umask  # like any new file, not 0600


@pytest.mark.slow
def test_plot_svg_has_the_labels_legend_and_flags(tmp_path):
    pytest.importorskip("matplotlib")
    p = scaling_sweep().write(tmp_path / "sweep.csv")
    svg = tmp_path / "scaling.svg"
    assert run_report(p, "--plot", svg, "--format", "json").exit_code == 0
    root = ET.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    text = svg.read_text()  # matplotlib keeps each drawn string as a comment
    for label in ("nodes (log2 scale)", "throughput per GPU (tokens/s)", CFG, "vit/bs64",
                  "aurora", "perlmutter", "ideal: flat at the smallest node count",
                  "flagged (see the report)", "superlinear", "low eff", "spread", "efficiency",
                  "not flagged: 0.70 to 1.05", "1.0: the rate at the smallest node count",
                  "20,000", "10,000"):
        assert f"<!-- {label} -->" in text, label
    for tick in (1, 2, 4, 8, 16, 32, 64):  # log2 axis, one tick per node count
        assert f"<!-- {tick} -->" in text
    # vit/bs64 ran one node count: a note, not an almost empty panel
    assert "<!-- only one node count (2): no scaling to show; per GPU: -->" in text
    assert "<!-- sunspot: 24 gpus: 5,000.0 tokens/s -->" in text


@pytest.mark.slow
@pytest.mark.parametrize("name", ["s.png", "s.svg", "s.pdf"])
def test_the_same_report_draws_the_same_bytes(tmp_path, name):
    pytest.importorskip("matplotlib")
    p = scaling_sweep().write(tmp_path / "sweep.csv")
    first, second = tmp_path / f"1{name}", tmp_path / f"2{name}"
    assert run_report(p, "--plot", first).exit_code == 0
    assert run_report(p, "--plot", second).exit_code == 0
    assert first.read_bytes() == second.read_bytes()
    Sweep().add("a", 1, 4, 100).add("a", 2, 8, 90).write(p)
    assert run_report(p, "--plot", second).exit_code == 0
    assert first.read_bytes() != second.read_bytes()


def test_plot_without_matplotlib_is_one_error_naming_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    p = scaling_sweep().write(tmp_path / "sweep.csv")
    line = error_line(run_report(p, "--plot", tmp_path / "s.png"))
    assert line == ("error: --plot needs matplotlib, which is not installed: pip install "
                    "matplotlib, or from a checkout of ezpz-amsc pip install '.[plot]' (the "
                    "plot extra)")
    assert not (tmp_path / "s.png").exists()


def test_plot_suffix_is_checked_before_anything_is_read(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    r = run_report(tmp_path / "missing.csv", "--plot", tmp_path / "s.jpg")
    assert r.exit_code == 2
    assert error_line(r) == (f"error: --plot {tmp_path}/s.jpg: the file name must end in .png, "
                             ".svg or .pdf")
    assert error_line(run_report(tmp_path / "missing.csv", "--plot", "")) == (
        "error: invalid value for '--plot': empty path (is the variable that should hold it "
        "unset?)")


@pytest.mark.slow
def test_plot_pdf(tmp_path):
    pytest.importorskip("matplotlib")
    p = scaling_sweep().write(tmp_path / "sweep.csv")
    pdf = tmp_path / "scaling.PDF"  # the suffix in any case
    r = run_report(p, "--plot", pdf)
    assert (r.exit_code, r.stderr) == (0, f"note: wrote {pdf}\n")
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-") and b"CreationDate" not in data


def test_plot_never_joins_two_gpus_counts_at_one_node_count():
    (ax,) = _axes_of(("a", 1, 4, 1000), ("a", 1, 8, 600), ("a", 2, 8, 990), ("a", 2, 16, 580),
                     ("b", 1, 4, 2000), ("b", 2, 8, 1900))
    assert _drawn(ax) == {"a (4 gpus/node)": [(1, 1000.0), (2, 990.0)],
                          "a (8 gpus/node)": [(1, 600.0), (2, 580.0)],
                          "b": [(1, 2000.0), (2, 1900.0)]}
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[:3] == ["a (4 gpus/node)", "a (8 gpus/node)", "b"]
    (one,) = _axes_of(("c", 1, 1, 7000), ("c", 1, 2, 2000), ("c", 2, 2, 6900))
    assert _drawn(one) == {"c (1 gpu/node)": [(1, 7000.0), (2, 6900.0)],
                           "c (2 gpus/node)": [(1, 2000.0)]}
    (later,) = _axes_of(("d", 2, 8, 700), ("d", 2, 24, 500), ("d", 4, 16, 690))
    assert list(_drawn(later)) == ["d (4 gpus/node)", "d (12 gpus/node)"]


def test_plot_gives_each_series_of_a_system_its_own_marker():
    (ax,) = _axes_of(*[("a", n, n * k, 1000 - k) for k in (1, 2, 3, 4, 5, 6) for n in (1, 2)])
    markers = [ln.get_marker() for ln in ax.get_lines() if not ln.get_label().startswith("_")]
    assert markers == ["o", "s", "^", "D", "v", "o"]


def test_plot_names_an_ideal_only_where_it_draws_one():
    (multi,) = _axes_of(("a", 1, 4, 1000), ("a", 4, 16, 900))
    dashed = [ln for ln in multi.get_lines() if ln.get_linestyle() == "--"]
    assert [list(zip(ln.get_xdata(), ln.get_ydata(), strict=True)) for ln in dashed] == [
        [(1, 1000.0), (4, 1000.0)]]
    assert [ln.get_linewidth() for ln in dashed] == [1]  # thinner than the measured line
    assert "ideal: flat at the smallest node count" in [
        t.get_text() for t in multi.get_legend().get_texts()]
    # b ran one node count: no line for it, and the legend names a's
    (mixed,) = _axes_of(("a", 2, 8, 1000), ("a", 4, 16, 990), ("b", 2, 8, 900))
    assert [list(zip(ln.get_xdata(), ln.get_ydata(), strict=True)) for ln in mixed.get_lines()
            if ln.get_linestyle() == "--"] == [[(2, 1000.0), (4, 1000.0)]]
    assert [t.get_text() for t in mixed.get_legend().get_texts()] == [
        "a", "b", "ideal: flat at the smallest node count"]


def test_plot_shows_the_spread_of_repeats():
    (ax,) = _axes_of(("a", 1, 4, 1000), ("a", 1, 4, 900), ("a", 1, 4, 1040), ("a", 2, 8, 950),
                     ("a", 4, 16, 900), ("a", 4, 16, 940))
    (bars,) = ax.containers  # the points with two repeats or more
    (segments,) = [c.get_segments() for c in bars.lines[2]]
    assert [[tuple(pt) for pt in seg] for seg in segments] == [[(1, 900.0), (1, 1040.0)],
                                                               [(4, 900.0), (4, 940.0)]]
    # Drawn to be seen: above the red ring of a flagged point (zorder 3), with caps.
    (stems,) = bars.lines[2]
    assert (stems.get_zorder(), list(stems.get_linewidths())) == (4, [1.5])
    assert [c.get_markersize() for c in bars.lines[1]] == [8, 8]  # capsize 4: 8 points wide
    assert all(c.get_zorder() == 4 for c in bars.lines[1])
    (key,) = [h for h in ax.get_legend().legend_handles
              if h.get_label() == "bar: lowest to highest of the repeats"]
    assert (key.get_marker(), key.get_markersize()) == ("|", 10)
    assert "bar: lowest to highest of the repeats" in [
        t.get_text() for t in ax.get_legend().get_texts()]
    (none,) = _axes_of(("a", 1, 4, 1000), ("a", 2, 8, 950))
    assert none.containers == [] and "bar: lowest to highest of the repeats" not in [
        t.get_text() for t in none.get_legend().get_texts()]


@pytest.mark.slow
def test_plot_into_a_missing_folder(tmp_path):
    pytest.importorskip("matplotlib")
    p = scaling_sweep().write(tmp_path / "sweep.csv")
    line = error_line(run_report(p, "--plot", tmp_path / "no" / "s.png"))
    assert line == f"error: {tmp_path}/no/s.png: cannot write plot: No such file or directory"


@pytest.mark.slow
def test_plot_write_failure_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import os

    from ezpz_amsc.fs import create

    p = scaling_sweep().write(tmp_path / "sweep.csv")
    png = tmp_path / "s.png"
    png.write_bytes(b"old plot")

    def disk_full(fd, data):
        os.write(fd, bytes(data[:10]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(create, "write_all", disk_full)
    line = error_line(run_report(p, "--plot", png))
    assert line == f"error: {png}: cannot write plot: No space left on device"
    assert png.read_bytes() == b"old plot"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["s.png", "sweep.csv"]


def test_plot_draws_labels_as_written(tmp_path):
    pytest.importorskip("matplotlib")
    # "$...$" would be matplotlib math (and "\\frac" alone an error), "_x" a hidden label
    p = (Sweep().add("_sys$1", 1, 4, 100, config="$\\frac$ cfg\x1b[31m")
         .add("_sys$1", 2, 8, 99, config="$\\frac$ cfg\x1b[31m").write(tmp_path / "s.csv"))
    svg = tmp_path / "s.svg"
    assert run_report(p, "--plot", svg).exit_code == 0
    text = svg.read_text()
    assert "<!-- $\\frac$ cfg [31m -->" in text and "<!-- _sys$1 -->" in text


@pytest.mark.slow
@settings(max_examples=25)  # a plot costs ~0.2 s: enough to meet odd labels and numbers
@given(rows=st.lists(st.tuples(_text, _text, st.integers(1, MAX_COUNT // 4), _rate), min_size=1,
                     max_size=6))  # gpus = 4 x nodes: a row over MAX_COUNT is not used
@example(rows=[("0", "0\r", 1, 1.0)])  # found by the random profile: a line split by a bare CR
def test_plot_never_fails_on_what_a_results_file_holds(tmp_path_factory, rows):
    pytest.importorskip("matplotlib")
    s = Sweep()
    for config, system, nodes, rate in rows:
        s.add(system, nodes, nodes * 4, rate, config=config)
    d = tmp_path_factory.mktemp("plot")
    from ezpz_amsc.report.plot import write_plot

    report = _report_of(s.write(d / "s.csv"))
    if not report["groups"]:
        # a label with a bare CR, which --append refuses to write, splits its line in two:
        # both halves are bad lines, and the plot is refused cleanly, writing nothing
        with pytest.raises(AmscError, match=r"nothing to plot \(no pass row with throughput\)$"):
            write_plot(report, str(d / "s.png"))
        assert not (d / "s.png").exists()
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib's warnings become notes, never escape
        notes = write_plot(report, str(d / "s.png"))
    assert (d / "s.png").read_bytes().startswith(PNG_SIGNATURE)
    assert all(n.startswith(f"{d}/s.png: ") for n in notes)


def test_a_glyph_the_font_lacks_is_one_note(tmp_path):
    pytest.importorskip("matplotlib")
    p = Sweep().add("\U00027067\U0002aee3", 1, 4, 100).write(tmp_path / "s.csv")
    r = run_report(p, "--plot", tmp_path / "s.png")
    assert r.exit_code == 0
    assert r.stderr == (f"note: {tmp_path}/s.png: some characters of the labels have no glyph "
                        "in matplotlib's font; they are drawn as boxes\n"
                        f"note: wrote {tmp_path}/s.png\n")


def test_plot_with_nothing_to_plot(tmp_path):
    pytest.importorskip("matplotlib")
    p = Sweep().add("a", 1, 4, None, status="fail").write(tmp_path / "s.csv")
    line = error_line(run_report(p, "--plot", tmp_path / "s.png"))
    assert line == (f"error: --plot {tmp_path}/s.png: nothing to plot (no pass row with "
                    "throughput)")
    assert not (tmp_path / "s.png").exists()


@pytest.mark.parametrize("dpi", [100, 300])
def test_plot_labels_only_node_counts_run_and_never_lets_them_collide(dpi):
    """1 to 24 nodes once read "1011121314...": now the counts whose labels fit."""
    fig = _figure_of(*[("p", n, 4 * n, 1000 - n) for n in range(1, 25)], dpi=dpi)
    (top,) = [ax for ax in fig.axes if ax.get_label() == "throughput"]
    (eff,) = [ax for ax in fig.axes if ax.get_label() == "efficiency"]
    labels = _drawn_labels(fig, eff)
    assert [t.get_text() for t in labels] == ["1", "2", "3", "4", "5", "6", "7", "8", "10",
                                              "12", "16", "20", "24"]
    boxes = [t.get_window_extent() for t in labels]
    gap = 0.8 * 10 * dpi / 72  # LABEL_GAP_EM at the 10-point tick labels, in pixels
    assert all(b.x0 - a.x1 >= gap - 0.5 for a, b in zip(boxes, boxes[1:], strict=False))
    assert list(eff.get_xticks()) == list(range(1, 25))  # a tick mark at every count run
    assert _drawn_labels(fig, top) == []  # the panels share the axis: labelled once, below


def test_plot_labels_every_power_of_two_with_separators():
    fig = _figure_of(*[("a", 2 ** k, 4 * 2 ** k, 900) for k in range(12)])
    (eff,) = [ax for ax in fig.axes if ax.get_label() == "efficiency"]
    assert [t.get_text() for t in _drawn_labels(fig, eff)] == [
        "1", "2", "4", "8", "16", "32", "64", "128", "256", "512", "1,024", "2,048"]
    (odd,) = [ax for ax in _figure_of(("a", 3, 12, 900), ("a", 6, 24, 890),
                                      ("a", 48, 192, 850)).axes
              if ax.get_label() == "efficiency"]
    assert list(odd.get_xticks()) == [3, 6, 48]


def test_plot_y_axis_has_thousands_separators_and_the_decimals_it_needs():
    fig = _figure_of(("a", 1, 4, 20100), ("a", 2, 8, 19800), ("a", 4, 16, 12000))
    (top,) = [ax for ax in fig.axes if ax.get_label() == "throughput"]
    texts = [t.get_text() for t in _drawn_labels(fig, top, "y")]
    assert "10,000" in texts and "20,000" in texts and texts[0] == "0"
    small = _figure_of(("a", 1, 4, 0.5), ("a", 2, 8, 0.45))
    (low,) = [ax for ax in small.axes if ax.get_label() == "throughput"]
    texts = [t.get_text() for t in _drawn_labels(small, low, "y")]
    assert len(set(texts)) == len(texts) and "0.5" in texts  # never 0, 0, 0, 1


def test_plot_draws_the_efficiency_the_report_prints_and_the_band_of_no_flag(tmp_path):
    rep = _report_of(scaling_sweep().write(tmp_path / "sweep.csv"))
    from ezpz_amsc.report.plot import _figure

    fig = _figure(rep["groups"], rep["thresholds"])
    (eff,) = [ax for ax in fig.axes if ax.get_label() == "efficiency"]
    lines = [list(zip(ln.get_xdata(), ln.get_ydata(), strict=True)) for ln in eff.get_lines()
             if ln.get_linestyle() == "-"]
    assert lines == [[(p["nodes"], p["efficiency"]) for p in g["points"]]
                     for g in rep["groups"][:2]]
    (band,) = eff.patches
    # a Rectangle or, before matplotlib 3.9, a Polygon: its corners, y in data units
    corners = band.get_patch_transform().transform(band.get_path().vertices)
    ys = sorted({round(float(y), 6) for y in corners[:, 1]})
    assert ys == [0.7, 1.05]
    legend = [t.get_text() for t in eff.get_legend().get_texts()]
    assert legend == ["not flagged: 0.70 to 1.05", "1.0: the rate at the smallest node count"]


def test_a_config_run_at_one_node_count_is_a_note_not_an_empty_panel():
    fig = _figure_of(("sunspot", 2, 24, 5000, "vit/bs64"), ("aurora", 2, 24, 6000, "vit/bs64"),
                     ("aurora", 1, 12, 6100, "gpt"), ("aurora", 2, 24, 6000, "gpt"))
    assert sorted(ax.get_label() for ax in fig.axes) == ["efficiency", "note", "throughput"]
    (note,) = [ax for ax in fig.axes if ax.get_label() == "note"]
    assert note.get_title() == "vit/bs64" and not note.axison
    (text,) = note.texts
    assert text.get_text().splitlines() == [
        "only one node count (2): no scaling to show; per GPU:",
        "aurora: 24 gpus: 6,000.0 tokens/s", "sunspot: 24 gpus: 5,000.0 tokens/s"]
    (flagged,) = _figure_of(("l", 1, 1, 7443.2), ("l", 1, 2, 2021.0)).axes
    assert flagged.texts[0].get_text().splitlines()[1] == (
        "l: 1 gpu: 7,443.2 tokens/s (flagged: gpus?); 2 gpus: 2,021.0 tokens/s (flagged: gpus?, "
        "low eff)")


def test_plot_figure_size_follows_the_panels():
    from ezpz_amsc.report.plot import COLUMN_WIDTH, NOTE_HEIGHT, NOTE_LINE, SCALING_HEIGHT

    scaling = ("a", 1, 4, 100), ("a", 2, 8, 99)
    assert tuple(_figure_of(*scaling).get_size_inches()) == (COLUMN_WIDTH, sum(SCALING_HEIGHT))
    one = _figure_of(*scaling, ("a", 1, 4, 100, "single"))
    assert tuple(one.get_size_inches()) == (
        COLUMN_WIDTH, sum(SCALING_HEIGHT) + NOTE_HEIGHT + 2 * NOTE_LINE)
    four = _figure_of(*[(s, n, 4 * n, 100, c) for c in "abcd" for s, n, *_ in scaling])
    assert tuple(four.get_size_inches()) == (2 * COLUMN_WIDTH, 2 * sum(SCALING_HEIGHT))


@pytest.mark.slow
def test_dpi_sets_the_size_of_the_png(tmp_path):
    pytest.importorskip("matplotlib")
    p = Sweep().add("a", 1, 4, 100).add("a", 2, 8, 99).write(tmp_path / "s.csv")
    sizes = {}
    for dpi in (None, 100, 150):
        png = tmp_path / f"{dpi}.png"
        r = run_report(p, "--plot", png, *(() if dpi is None else ("--dpi", dpi)))
        assert (r.exit_code, r.stderr) == (0, f"note: wrote {png}\n")
        sizes[dpi] = _png_size(png.read_bytes())
    assert sizes[None] == sizes[100] == (1000, 520)  # 10 x 5.2 inches
    assert sizes[150] == (1500, 780)
