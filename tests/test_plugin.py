"""The ezpz.commands plugin, loaded from installed metadata the way a host CLI would.

A host is an ezpz-like click group; ``host_loader.py`` holds the loader that
``docs/ezpz-integration.md`` offers ezpz. Real ezpz 0.26+ ships a built-in
``export-amsc``: the loader must let this package's plugin take that name, and
fall back to the built-in (with one warning line) when the plugin is broken.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import click
import host_loader
import pytest
from helpers import NO_THROUGHPUT_NOTE, REPO, error_line, one_row, parse_csv, run_cli, runner
from host_loader import REPLACEABLE, BrokenCommand, load_plugins, run_finalize_hooks

from ezpz_amsc.cli.group import cli as amsc_group
from ezpz_amsc.cli.group import export_amsc

TEST_GROUP = "amsc-test.commands"  # broken plugins only: our own entry points are not in it


def _host(group: str = "ezpz.commands", replaceable: frozenset[str] = REPLACEABLE, *,
          builtin_export: bool = False) -> click.Group:
    """An ``ezpz``-like CLI: a plain click group with a built-in ``launch`` (and its own,
    earlier ``export-amsc`` when ``builtin_export``), then plugins loaded from metadata."""

    @click.group("ezpz")
    def main() -> None:
        pass

    @main.command("launch")
    def launch() -> None:
        click.echo("built-in launch")

    if builtin_export:
        @main.command("export-amsc", context_settings={"ignore_unknown_options": True,
                                                       "allow_extra_args": True})
        def builtin_export_amsc() -> None:
            click.echo("built-in export-amsc")  # ezpz's own, earlier exporter

    load_plugins(main, group, replaceable)
    return main


@pytest.fixture(autouse=True)
def _fresh_process():
    """Each test a new process, as far as the loader's once-per-process warning goes."""
    host_loader._WARNED.clear()
    yield
    host_loader._WARNED.clear()


def _ezpz(group: str = "ezpz.commands", replaceable: frozenset[str] = REPLACEABLE) -> click.Group:
    """ezpz 0.26+: a host that ships its own ``export-amsc``."""
    return _host(group, replaceable, builtin_export=True)


def _invoke(host: click.Group, *args: object):
    return runner().invoke(host, [str(a) for a in args], prog_name="ezpz",
                           catch_exceptions=False)


def _write_dist(site: Path, name: str, eps: str, modules: dict[str, str]) -> None:
    """A real installed distribution: a dist-info folder importlib.metadata finds on sys.path."""
    info = site / f"{name}-0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text(eps)
    for mod, src in modules.items():
        (site / f"{mod}.py").write_text(src)


# ---------------------------------------------------------------- the plugin in a host


def test_installed_metadata_names_both_entry_points():
    cmds = [ep for ep in entry_points(group="ezpz.commands") if ep.name == "export-amsc"]
    hooks = [ep for ep in entry_points(group="ezpz.finalize") if ep.name == "amsc"]
    assert [ep.value for ep in cmds] == ["ezpz_amsc.cli.group:export_amsc"]
    assert [ep.value for ep in hooks] == ["ezpz_amsc.hook:finalize_hook"]
    assert cmds[0].load() is export_amsc
    assert isinstance(export_amsc, click.Command)


def test_entry_points_name_the_export_command_and_the_group():
    from importlib.metadata import entry_points

    ours = {ep.name: ep for ep in entry_points(group="ezpz.commands")
            if ep.value.startswith("ezpz_amsc")}
    assert {n: ep.value for n, ep in ours.items()} == {
        "export-amsc": "ezpz_amsc.cli.group:export_amsc", "amsc": "ezpz_amsc.cli.group:cli"}
    export = ours["export-amsc"].load()
    assert not isinstance(export, click.Group)
    assert export is amsc_group.get_command(click.Context(amsc_group), "export")
    assert ours["amsc"].load() is amsc_group
    assert amsc_group.list_commands(click.Context(amsc_group))[:2] == ["export", "check"]


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


def _listed(help_text: str) -> list[str]:
    """Command names in a group's --help."""
    section = help_text.split("Commands:\n", 1)[1]
    return [ln.split()[0] for ln in section.splitlines() if ln[:3].strip() and ln[:2] == "  "]


def test_the_plugin_replaces_the_builtin_export_amsc(fixture_run, capsys):
    host = _ezpz()
    assert capsys.readouterr().err == ""  # nothing to warn about
    assert host.commands["export-amsc"] is export_amsc
    assert host.commands["amsc"] is amsc_group
    run = fixture_run("fsdp_tp-2rank")
    via_host = _invoke(host, "export-amsc", run, "--config", "fsdp_tp/dp2")
    assert "built-in" not in via_host.stdout
    row = one_row(via_host)
    assert row["mfu"] == ""  # the built-in writes 0.0 on CPU; this package leaves it empty
    direct = run_cli(run, "--config", "fsdp_tp/dp2")
    assert (via_host.stdout, via_host.stderr) == (direct.stdout, direct.stderr)


def test_without_the_replaceable_list_the_builtin_keeps_the_name():
    host = _ezpz(replaceable=frozenset())
    assert _invoke(host, "export-amsc", "x", "--config", "c").stdout == "built-in export-amsc\n"
    assert host.commands["amsc"] is amsc_group  # no clash there


def test_help_lists_each_command_once():
    listing = _invoke(_ezpz(), "--help")
    assert listing.exit_code == 0
    assert sorted(_listed(listing.stdout)) == ["amsc", "export-amsc", "launch"]


def test_the_group_runs_under_the_host(fixture_run, tmp_path):
    host = _ezpz()
    run = fixture_run("minimal-1rank")
    out = tmp_path / "r.csv"
    # The default subcommand and explicit subcommands, as `ezpz amsc ...`.
    assert _invoke(host, "amsc", run, "--config", "m/a", "--append", out, "-q").exit_code == 0
    assert _invoke(host, "amsc", "export", run, "--config", "m/b", "--append", out,
                   "-q").exit_code == 0
    assert [r["config"] for r in parse_csv(out.read_text())] == ["m/a", "m/b"]
    checked = _invoke(host, "amsc", "check", out)
    assert (checked.exit_code, checked.stdout) == (0, f"{out}: 2 rows, all readable by the "
                                                      "dashboard\n")
    bad = _invoke(host, "amsc", run, "--config", "c", "--warmup", "-1")
    assert bad.exit_code == 2
    assert error_line(bad) == "error: invalid value for '--warmup': must be 0 or more, got -1"


@pytest.mark.parametrize("args, usage", [
    (["amsc"], "Usage: ezpz amsc [export] RUN_DIR... --config LABEL [OPTIONS]"),
    (["export-amsc"], "Usage: ezpz export-amsc RUN_DIR... --config LABEL [OPTIONS]"),
])
def test_bare_calls_under_the_host_show_the_host_path(args, usage):
    result = _invoke(_ezpz(), *args)
    assert result.exit_code == 2 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0] == usage
    prog = " ".join(["ezpz", *args])
    assert lines[-1] == f"error: missing RUN_DIR; try '{prog} -h' for help"


def test_export_amsc_help_under_the_host_shows_the_check_mode():
    page = _invoke(_ezpz(), "export-amsc", "--help").stdout
    assert page.splitlines()[:2] == [
        "Usage: ezpz export-amsc RUN_DIR... --config LABEL [OPTIONS]",
        "       ezpz export-amsc --check RESULTS_CSV"]


# ----------------------------------------------------------------------- cheap to load


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
    assert ours == {"ezpz_amsc", "ezpz_amsc.version", "ezpz_amsc.errors", "ezpz_amsc.text",
                    "ezpz_amsc.hook",
                    "ezpz_amsc.options", "ezpz_amsc.results", "ezpz_amsc.results.schema",
                    "ezpz_amsc.cli", "ezpz_amsc.cli.group", "ezpz_amsc.cli.edge",
                    "ezpz_amsc.cli.help", "ezpz_amsc.cli.params", "ezpz_amsc.cli.export_command",
                    "ezpz_amsc.cli.output"}
    assert "click" in new  # the one dependency the CLI may load, so the check sees imports


def test_importing_the_package_does_not_load_the_hook():
    code = "import sys, ezpz_amsc; print(sorted(m for m in sys.modules if m.startswith('ezpz')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO)
    assert out.stdout.split() == ["['ezpz_amsc',", "'ezpz_amsc.version']"]
    assert callable(__import__("ezpz_amsc").install)


# ---------------------------------------------------------------------- broken plugins


@pytest.fixture
def broken_site(tmp_path, monkeypatch):
    """Installed plugins that fail in each way a host meets, next to ours."""
    _write_dist(tmp_path / "site", "amsc-test-broken-plugins", "\n".join([
        "[ezpz.commands]",
        "raises = amsc_test_raising_plugin:cmd",
        "missing = amsc_test_no_such_module:cmd",
        "notacommand = ezpz_amsc.cli.group:main",
        "launch = ezpz_amsc.cli.group:export_amsc",
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
        "TypeError: ezpz_amsc.cli.group:main is not a click command")

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
        f"ezpz-amsc: note: {NO_THROUGHPUT_NOTE}",
        "ezpz-amsc: note: mfu is 0.0 on every step (ezpz writes 0.0 when it does not know the "
        "device's peak FLOPS); left empty",
        # INFO would not show with the root at WARNING: the where line is a warning then
        f"ezpz-amsc: wrote the 'minimal/hooked' row for {run} to {run / 'amsc.csv'}, its "
        f"provenance record to {run / 'amsc.json'}"]


@pytest.mark.parametrize("target, reason", [
    ("amsc_test_raising_plugin:cmd", "RuntimeError: plugin exploded on import"),
    ("amsc_test_no_such_module:cmd", "ModuleNotFoundError: No module named "
                                     "'amsc_test_no_such_module'"),
    ("ezpz_amsc.cli.group:main", "TypeError: ezpz_amsc.cli.group:main is not a click command"),
])
def test_a_broken_replacement_keeps_the_builtin_with_one_warning(tmp_path, monkeypatch, capsys,
                                                                  target, reason):
    _write_dist(tmp_path / "site", "amsc-test-broken-export", f"[{TEST_GROUP}]\n"
                f"export-amsc = {target}\n",
                {"amsc_test_raising_plugin": "raise RuntimeError('plugin exploded on import')\n"})
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    host = _ezpz(TEST_GROUP)
    assert capsys.readouterr().err.splitlines() == [
        f"ezpz: warning: plugin 'export-amsc' failed to load, keeping the built-in command: "
        f"{reason}"]
    assert _invoke(host, "export-amsc", "x").stdout == "built-in export-amsc\n"
    assert _listed(_invoke(host, "--help").stdout).count("export-amsc") == 1
    # Loaded again in the same process (a second import path, a second CLI object): the
    # built-in stays, and the warning is not repeated.
    again = _ezpz(TEST_GROUP)
    assert capsys.readouterr().err == ""
    assert _invoke(again, "export-amsc", "x").stdout == "built-in export-amsc\n"


def test_a_plugin_named_like_a_fixed_builtin_is_never_imported(tmp_path, monkeypatch, capsys):
    _write_dist(tmp_path / "site", "amsc-test-launch", f"[{TEST_GROUP}]\n"
                "launch = amsc_test_counting_plugin:cmd\n",
                {"amsc_test_counting_plugin": "import click\ncmd = click.Command('launch')\n"})
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    host = _ezpz(TEST_GROUP)
    assert capsys.readouterr().err == ""
    assert "amsc_test_counting_plugin" not in sys.modules
    assert _invoke(host, "launch").stdout == "built-in launch\n"
