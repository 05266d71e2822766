"""The host loader against a stand-in ezpz that has its own built-in ``export-amsc``.

Real ezpz 0.26+ ships a built-in ``export-amsc``; the loader in
``docs/ezpz-integration.md`` must let this package's plugin take that name, and
fall back to the built-in (with one warning line) when the plugin is broken.
"""

from __future__ import annotations

import sys

import click
import pytest
from conftest import _runner, error_line, one_row, parse_csv, run_cli
from host_loader import REPLACEABLE, load_plugins
from test_plugin import _write_dist

from ezpz_amsc.cli import cli as amsc_group
from ezpz_amsc.cli import export_amsc

TEST_GROUP = "amsc-test.commands"  # broken plugins only: our own entry points are not in it


def _ezpz(group: str = "ezpz.commands", replaceable: frozenset[str] = REPLACEABLE) -> click.Group:
    """An ezpz-like CLI: a plain click group with built-ins, then plugins loaded."""

    @click.group("ezpz")
    def main() -> None:
        pass

    @main.command("launch")
    def launch() -> None:
        click.echo("built-in launch")

    @main.command("export-amsc", context_settings={"ignore_unknown_options": True,
                                                   "allow_extra_args": True})
    def builtin_export() -> None:
        click.echo("built-in export-amsc")  # ezpz's own, earlier exporter

    load_plugins(main, group, replaceable)
    return main


def _invoke(host: click.Group, *args: object):
    return _runner().invoke(host, [str(a) for a in args], prog_name="ezpz",
                            catch_exceptions=False)


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


@pytest.mark.parametrize("target, reason", [
    ("amsc_test_raising_plugin:cmd", "RuntimeError: plugin exploded on import"),
    ("amsc_test_no_such_module:cmd", "ModuleNotFoundError: No module named "
                                     "'amsc_test_no_such_module'"),
    ("ezpz_amsc.cli:main", "TypeError: ezpz_amsc.cli:main is not a click command"),
])
def test_a_broken_replacement_keeps_the_builtin_with_one_warning(tmp_path, monkeypatch, capsys,
                                                                  target, reason):
    _write_dist(tmp_path / "site", "amsc-test-broken-export", f"[{TEST_GROUP}]\n"
                f"export-amsc = {target}\n",
                {"amsc_test_raising_plugin": "raise RuntimeError('plugin exploded on import')\n"})
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    host = _ezpz(TEST_GROUP)
    assert capsys.readouterr().err.splitlines() == [
        f"warning: plugin 'export-amsc' failed to load, keeping the built-in command: {reason}"]
    assert _invoke(host, "export-amsc", "x").stdout == "built-in export-amsc\n"
    assert _listed(_invoke(host, "--help").stdout).count("export-amsc") == 1


def test_a_plugin_named_like_a_fixed_builtin_is_never_imported(tmp_path, monkeypatch, capsys):
    _write_dist(tmp_path / "site", "amsc-test-launch", f"[{TEST_GROUP}]\n"
                "launch = amsc_test_counting_plugin:cmd\n",
                {"amsc_test_counting_plugin": "import click\ncmd = click.Command('launch')\n"})
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    host = _ezpz(TEST_GROUP)
    assert capsys.readouterr().err == ""
    assert "amsc_test_counting_plugin" not in sys.modules
    assert _invoke(host, "launch").stdout == "built-in launch\n"


def test_entry_points_name_the_export_command_and_the_group():
    from importlib.metadata import entry_points

    ours = {ep.name: ep for ep in entry_points(group="ezpz.commands")
            if ep.value.startswith("ezpz_amsc")}
    assert {n: ep.value for n, ep in ours.items()} == {
        "export-amsc": "ezpz_amsc.cli:export_amsc", "amsc": "ezpz_amsc.cli:cli"}
    export = ours["export-amsc"].load()
    assert not isinstance(export, click.Group)
    assert export is amsc_group.get_command(click.Context(amsc_group), "export")
    assert ours["amsc"].load() is amsc_group
    assert amsc_group.list_commands(click.Context(amsc_group))[:2] == ["export", "check"]
