"""``ezpz-amsc report`` (cli/report_command.py): what the command loads, its usage errors and its
flags' checks."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers import (
    error_line,
    run_report,
)
from sweeps import (
    _MODULES,
    Sweep,
    scaling_sweep,
)

from ezpz_amsc.errors import AmscError
from ezpz_amsc.report.data import read_sweep


@pytest.mark.parametrize("make, fragment", [
    (lambda d: d / "missing.csv", "missing.csv: no such file"),
    (lambda d: d, "is a directory; report needs results CSV files"),
    (lambda d: (d / "e.csv", (d / "e.csv").write_text(""))[0], "e.csv: empty file, no header"),
    (lambda d: (d / "h.csv", (d / "h.csv").write_text("a,b\n1,2\n"))[0],
     "header lacks required columns timestamp"),
])
def test_a_file_that_cannot_be_read_is_one_error_line(tmp_path, make, fragment):
    good = scaling_sweep().write(tmp_path / "good.csv")
    line = error_line(run_report(good, make(tmp_path)))
    assert fragment in line


def test_no_path_is_a_usage_error():
    r = run_report()
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr.splitlines() == [
        "Usage: report RESULTS_CSV... [--format FORMAT] [--plot FILE [--dpi N]]",
        "error: missing RESULTS_CSV; try 'report -h' for help"]


def test_dpi_needs_a_plot_and_a_sane_value(tmp_path, monkeypatch):
    p = Sweep().add("a", 1, 4, 100).write(tmp_path / "s.csv")
    r = run_report(p, "--dpi", "150")
    assert (r.exit_code, error_line(r)) == (
        2, "error: --dpi is the resolution of --plot's image: pass --plot FILE")
    for bad in ("20", "601", "x"):
        r = run_report(p, "--plot", tmp_path / "s.png", "--dpi", bad)
        assert r.exit_code == 2 and error_line(r).startswith("error: invalid value for '--dpi'")
    assert not (tmp_path / "s.png").exists()


def test_dpi_on_a_vector_plot_is_a_note(tmp_path):
    pytest.importorskip("matplotlib")
    p = Sweep().add("a", 1, 4, 100).add("a", 2, 8, 99).write(tmp_path / "s.csv")
    svg = tmp_path / "s.svg"
    r = run_report(p, "--plot", svg, "--dpi", "300")
    assert (r.exit_code, r.stderr) == (0, "note: --dpi has no effect on a .svg plot (drawn as "
                                          f"lines and text, not pixels)\nnote: wrote {svg}\n")


def test_the_plots_default_dpi_is_the_commands():
    from ezpz_amsc.cli.report_command import DEFAULT_DPI
    from ezpz_amsc.report.plot import DEFAULT_DPI as PLOT_DEFAULT

    assert DEFAULT_DPI == PLOT_DEFAULT == 100


def test_the_command_loads_only_click_and_the_report_no_numpy(tmp_path):
    p = scaling_sweep().write(tmp_path / "sweep.csv")
    out = subprocess.run([sys.executable, "-c", _MODULES, str(p)], capture_output=True,
                         text=True, check=True)
    loaded, ran = map(set, json.loads(out.stderr))
    assert {m for m in loaded if m.startswith("ezpz_amsc")} == {
        "ezpz_amsc", "ezpz_amsc.version", "ezpz_amsc.cli", "ezpz_amsc.cli.edge",
        "ezpz_amsc.cli.help", "ezpz_amsc.cli.params", "ezpz_amsc.cli.output",
        "ezpz_amsc.cli.report_command", "ezpz_amsc.errors", "ezpz_amsc.options", "ezpz_amsc.text",
        "ezpz_amsc.results", "ezpz_amsc.results.schema"}
    assert "click" in loaded
    assert not {m.split(".")[0] for m in ran} & {"numpy", "matplotlib", "ezpz"}
    assert "ezpz_amsc.report.data" in ran and "ezpz_amsc.report.plot" not in ran
    assert "ezpz_amsc.flow.export" not in ran  # the export pipeline is not the report's to load


def test_report_of_a_directory_is_an_error(tmp_path):

    with pytest.raises(AmscError) as e:
        read_sweep([tmp_path])
    assert str(e.value) == f"{tmp_path}: is a directory; report needs results CSV files"
