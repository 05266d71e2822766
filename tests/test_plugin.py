"""The ezpz.commands plugin, loaded from installed metadata the way a host CLI would."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import click
import pytest
from conftest import REPO, _runner, error_line, one_row, parse_csv, run_cli
from host_loader import BrokenCommand, load_plugins, run_finalize_hooks

from ezpz_amsc.cli import export_amsc


def _host() -> click.Group:
    """An ``ezpz``-like CLI with one built-in command, plugins loaded from metadata."""

    @click.group("ezpz")
    def cli() -> None:
        pass

    @cli.command("launch")
    def launch() -> None:
        click.echo("built-in launch")

    load_plugins(cli)
    return cli


def _invoke(cli: click.Group, *args: object):
    return _runner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _write_dist(site: Path, name: str, eps: str, modules: dict[str, str]) -> None:
    """A real installed distribution: a dist-info folder importlib.metadata finds on sys.path."""
    info = site / f"{name}-0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text(eps)
    for mod, src in modules.items():
        (site / f"{mod}.py").write_text(src)


def test_installed_metadata_names_both_entry_points():
    cmds = [ep for ep in entry_points(group="ezpz.commands") if ep.name == "export-amsc"]
    hooks = [ep for ep in entry_points(group="ezpz.finalize") if ep.name == "amsc"]
    assert [ep.value for ep in cmds] == ["ezpz_amsc.cli:export_amsc"]
    assert [ep.value for ep in hooks] == ["ezpz_amsc.hook:finalize_hook"]
    assert cmds[0].load() is export_amsc
    assert isinstance(export_amsc, click.Command)


def test_host_runs_an_export_through_the_plugin(fixture_run):
    run = fixture_run("fsdp_tp-2rank")
    cli = _host()
    assert cli.commands["export-amsc"] is export_amsc
    via_host = _invoke(cli, "export-amsc", run, "--config", "fsdp_tp/dp2")
    row = one_row(via_host)
    assert (row["config"], row["system"], row["gpus"], row["status"]) == (
        "fsdp_tp/dp2", "localhost", "2", "pass")
    assert float(row["throughput_tokens_per_sec"]) > 0
    # Same bytes as the console script, notes included.
    direct = run_cli(run, "--config", "fsdp_tp/dp2")
    assert (via_host.stdout, via_host.stderr) == (direct.stdout, direct.stderr)


def test_host_appends_through_the_plugin(fixture_run, tmp_path):
    run = fixture_run("minimal-1rank")
    out = tmp_path / "results" / "amsc.csv"
    for label in ("minimal/a", "minimal/b"):
        assert _invoke(_host(), "export-amsc", run, "--config", label, "--append", out
                       ).exit_code == 0
    assert [r["config"] for r in parse_csv(out.read_text())] == ["minimal/a", "minimal/b"]


@pytest.mark.parametrize("args, code, fragment", [
    (["--config", ""], 2, "error: invalid value for '--config': must not be empty"),
    (["--config", "x", "--warmup", "-1"], 2,
     "error: invalid value for '--warmup': must be 0 or more"),
    (["--config", "x", "--bogus"], 2, "error: no such option"),
])
def test_plugin_errors_stay_one_line_under_the_host(fixture_run, args, code, fragment):
    result = _invoke(_host(), "export-amsc", fixture_run("minimal-1rank"), *args)
    assert result.exit_code == code
    assert error_line(result).startswith(fragment)


_LOAD_AND_LIST = """
import json, sys
from importlib.metadata import entry_points
before = set(sys.modules)
loaded = {ep.name: ep.load() for g in ("ezpz.commands", "ezpz.finalize")
          for ep in entry_points(group=g) if ep.value.startswith("ezpz_amsc")}
import ezpz_amsc
print(json.dumps({"loaded": sorted(loaded), "new": sorted(set(sys.modules) - before)}))
"""


def test_loading_the_entry_points_imports_nothing_heavy():
    out = subprocess.run([sys.executable, "-c", _LOAD_AND_LIST], capture_output=True,
                         text=True, check=True, cwd=REPO)
    got = json.loads(out.stdout)
    assert got["loaded"] == ["amsc", "export-amsc"]
    new = set(got["new"])
    heavy = {"numpy", "ezpz", "torch", "xarray", "pandas"}
    assert not new & heavy
    ours = {m for m in new if m.startswith("ezpz_amsc")}
    # The pipeline (numpy) loads only when an export runs.
    # Of the subcommands, only export (the export-amsc entry point) is imported.
    assert ours == {"ezpz_amsc", "ezpz_amsc.cli", "ezpz_amsc.errors", "ezpz_amsc.hook",
                    "ezpz_amsc.options", "ezpz_amsc.help_layout", "ezpz_amsc.commands",
                    "ezpz_amsc.commands.export"}
    assert "click" in new  # the one dependency cli.py may load, so the check sees imports


def test_importing_the_package_does_not_load_the_hook():
    code = "import sys, ezpz_amsc; print(sorted(m for m in sys.modules if m.startswith('ezpz')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO)
    assert out.stdout.split() == ["['ezpz_amsc']"]
    assert callable(__import__("ezpz_amsc").install)


@pytest.fixture
def broken_site(tmp_path, monkeypatch):
    """Installed plugins that fail in each way a host meets, next to ours."""
    _write_dist(tmp_path / "site", "amsc-test-broken-plugins", "\n".join([
        "[ezpz.commands]",
        "raises = amsc_test_raising_plugin:cmd",
        "missing = amsc_test_no_such_module:cmd",
        "notacommand = ezpz_amsc.cli:main",
        "launch = ezpz_amsc.cli:export_amsc",
        "[ezpz.finalize]",
        "broken = amsc_test_raising_plugin:hook",
        "",
    ]), {"amsc_test_raising_plugin": "raise RuntimeError('plugin exploded on import')\n"})
    monkeypatch.syspath_prepend(str(tmp_path / "site"))


def test_broken_plugins_show_up_broken_and_the_cli_keeps_working(broken_site, fixture_run):
    cli = _host()
    broken = {n: c for n, c in cli.commands.items() if isinstance(c, BrokenCommand)}
    assert sorted(broken) == ["missing", "notacommand", "raises"]
    assert broken["raises"].reason == "RuntimeError: plugin exploded on import"
    assert broken["missing"].reason.startswith("ModuleNotFoundError: ")
    assert broken["notacommand"].reason == (
        "TypeError: ezpz_amsc.cli:main is not a click command")

    # Built-ins win a clash: the plugin named "launch" did not replace it.
    assert _invoke(cli, "launch").stdout == "built-in launch\n"

    listing = _invoke(cli, "--help")
    assert listing.exit_code == 0
    assert "(broken plugin) RuntimeError: plugin" in listing.stdout
    assert "export-amsc" in listing.stdout

    ran = _invoke(cli, "raises", "--any", "args")
    assert ran.exit_code == 1
    assert ran.stderr.strip() == (
        "Error: plugin 'raises' failed to load: RuntimeError: plugin exploded on import")

    one_row(_invoke(cli, "export-amsc", fixture_run("minimal-1rank"), "--config", "still/works"))


def test_host_finalize_hooks_reach_ours_past_a_broken_one(broken_site, fixture_run,
                                                          monkeypatch, caplog):
    run = fixture_run("minimal-1rank")
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "minimal/hooked")
    for name in ("EZPZ_AMSC_APPEND", "EZPZ_AMSC_STATUS", "EZPZ_AMSC_WALL_TIME_SEC",
                 "EZPZ_AMSC_PROVENANCE", "RANK"):
        monkeypatch.delenv(name, raising=False)
    caplog.set_level(logging.WARNING)
    run_finalize_hooks(object(), run)
    assert [r["config"] for r in parse_csv((run / "amsc.csv").read_text())] == ["minimal/hooked"]
    assert [r.getMessage() for r in caplog.records] == [
        "finalize hook broken failed: plugin exploded on import",
        "ezpz-amsc: note: mfu is 0.0 on every step (ezpz writes 0.0 when it does not know the "
        "device's peak FLOPS); left empty"]


def test_docs_give_exactly_the_tested_host_code():
    source = (REPO / "tests" / "host_loader.py").read_text()
    snippets = [part.split("# --- end snippet ---")[0].split("---\n", 1)[1]
                for part in source.split("# --- snippet: ")[1:]]
    docs = (REPO / "docs" / "ezpz-integration.md").read_text()
    assert len(snippets) == 2
    for snippet in snippets:
        assert f"```python\n{snippet}```" in docs
