"""The command line as a group: the default subcommand, first contact, help, completion.

What each subcommand does is in test_<name>_command.py; here, how the group reaches it:
``ezpz-amsc RUN_DIR ...`` runs export, ``python -m ezpz_amsc`` and the console
script behave alike, and loading the CLI stays cheap.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.shell_completion import ShellComplete
from helpers import REPO, RUNS, error_line, one_row, outcome, run_cli, run_group, runner

import ezpz_amsc
from ezpz_amsc.cli.group import cli, export_amsc

GOOD = RUNS / "fsdp_tp-2rank"


USAGE = ["Usage: ezpz-amsc [export] RUN_DIR... --config LABEL [OPTIONS]",
         "       ezpz-amsc check RESULTS_CSV... [--provenance DIR]",
         "       ezpz-amsc describe RESULTS_CSV...",
         "       ezpz-amsc report RESULTS_CSV... [--format FORMAT] [--plot FILE]",
         "       ezpz-amsc compare BASE_CSV NEW_CSV [--format FORMAT]",
         "       ezpz-amsc reproduce RECORD.json...",
         "       ezpz-amsc init [DIR]",
         "       ezpz-amsc COMMAND [ARGS]..."]


# ------------------------------------------------------------------ default subcommand


@pytest.mark.parametrize("args", [
    [GOOD, "--config", "c"],
    ["--config", "c", GOOD],
    ["-q", GOOD, "--config", "c"],
    [GOOD, "--config", "c", "--format", "json"],
    [RUNS / "does-not-exist", "--config", "c"],
    [GOOD, "--config", "c", "--warmup", "-1"],
    [GOOD, "--config", "c", "--bogus"],
])
def test_default_form_is_the_export_command(args):
    direct = run_cli(*args)
    assert outcome(run_group(*args)) == outcome(direct)
    assert outcome(run_group("export", *args)) == outcome(direct)


@pytest.mark.slow
def test_python_m_runs_the_group():
    p = subprocess.run([sys.executable, "-m", "ezpz_amsc", str(GOOD), "--config", "c"],
                       capture_output=True, text=True, cwd=REPO)
    assert (p.returncode, p.stdout, p.stderr) == outcome(run_cli(GOOD, "--config", "c"))
    p = subprocess.run([sys.executable, "-m", "ezpz_amsc", "check", str(REPO / "nothing.csv")],
                       capture_output=True, text=True, cwd=REPO)
    assert (p.returncode, p.stderr) == (1, f"error: {REPO / 'nothing.csv'}: no such file\n")


@pytest.mark.slow
def test_module_entry_and_console_script_print_one_error_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(RUNS.parents[1])}
    for cmd in ([sys.executable, "-m", "ezpz_amsc"],):
        p = subprocess.run([*cmd, str(tmp_path), "--config", "c"], capture_output=True,
                           text=True, env=env)
        assert p.returncode == 1
        assert p.stdout == ""
        assert p.stderr.splitlines() == [p.stderr.strip()]
        assert p.stderr.startswith("error: ") and "no metrics found" in p.stderr
        ok = subprocess.run([*cmd, str(GOOD), "--config", "c"], capture_output=True,
                            text=True, env=env)
        assert ok.returncode == 0 and ok.stdout.count("\n") == 2


@pytest.mark.parametrize("name", ["check", "export"])
def test_run_dir_named_like_a_subcommand(tmp_path, monkeypatch, name):
    shutil.copytree(GOOD, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    want = one_row(run_cli(GOOD, "--config", "c"))
    # Spelled out: `export NAME`, or a path that is not a bare command name.
    assert one_row(run_group("export", name, "--config", "c")) == want
    assert one_row(run_group(f"./{name}", "--config", "c")) == want
    assert one_row(run_group(f"{name}/", "--config", "c")) == want
    # Bare, the name is the subcommand; the error says how to mean the folder.
    result = run_group(name, "--config", "c")
    assert result.exit_code == 2
    assert error_line(result).endswith(
        f"('{name}' was read as the {name} command; to export the folder, write "
        f"'ezpz-amsc export {name}' or './{name}')")


def _typo(word: str, command: str) -> str:
    return (f"error: {word!r} is not a command, nor a directory here (did you mean "
            f"'ezpz-amsc {command}'?)")


@pytest.mark.parametrize("args, code, line", [
    (["chek", "results.csv"], 2, _typo("chek", "check")),
    (["chek", "--config", "c"], 2, _typo("chek", "check")),
    (["exportt", "--config", "c"], 2, _typo("exportt", "export")),
    # with a real run after it, the batch is refused before anything is read or written
    (["exprot", str(GOOD), "--config", "c", "--append", "r.csv"], 2, _typo("exprot", "export")),
    (["hlep"], 2, _typo("hlep", "help")),
    (["chess", "--config", "c"], 1, "error: chess: no such directory; pass the run directory "
                                    "ezpz wrote"),
])
def test_a_mistyped_command_is_named(tmp_path, monkeypatch, args, code, line):
    monkeypatch.chdir(tmp_path)
    result = run_group(*args)
    assert (result.exit_code, error_line(result)) == (code, line)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / args[0]).mkdir()  # an existing path is what the user meant: no guess
    assert "did you mean" not in run_group(*args).stderr


def test_no_folder_no_hint(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert error_line(run_group("check", "--config", "c")) == (
        "error: no such option '--config'.")


def test_missing_config_exits_2():
    result = run_group(GOOD)
    assert result.exit_code == 2
    assert error_line(result) == ("error: missing option '--config'. Pass the benchmark label, "
                                  "e.g. --config agpt-2b/bs1/seq2048/tp1")


@pytest.mark.parametrize("args", [["--check", ""], ["check", ""], ["", "--config", "c"]])
def test_empty_paths_are_refused(args):
    result = run_group(*args)
    assert result.exit_code == 2
    assert "empty path (is the variable that should hold it unset?)" in error_line(result)


# ----------------------------------------------------------------------- first contact


@pytest.mark.parametrize("cmd, prog, usage", [
    (cli, "ezpz-amsc", USAGE),
    (export_amsc, "ezpz-amsc export", ["Usage: ezpz-amsc export RUN_DIR... --config LABEL "
                                       "[OPTIONS]",
                                       "       ezpz-amsc export --check RESULTS_CSV"]),
])
def test_no_arguments_prints_usage_and_where_help_is(cmd, prog, usage):
    result = runner().invoke(cmd, [], prog_name=prog)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [*usage,
                                          f"error: missing RUN_DIR; try '{prog} -h' for help"]


def test_no_arguments_from_the_console_script():
    script = Path(sys.executable).with_name("ezpz-amsc")
    p = subprocess.run([script], capture_output=True, text=True)
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr.splitlines() == [*USAGE, "error: missing RUN_DIR; try 'ezpz-amsc -h' for help"]


def test_version():
    result = run_group("--version")
    assert outcome(result) == (0, f"ezpz-amsc {ezpz_amsc.__version__}\n", "")
    assert outcome(run_group("version")) == outcome(result)


@pytest.mark.parametrize("page", [[], ["export"], ["check"], ["describe"], ["report"],
                                  ["compare"], ["init"],
                                  ["reproduce"], ["help"], ["version"]])
def test_help_command_prints_the_help_pages(page):
    assert outcome(run_group("help", *page)) == outcome(run_group(*page, "--help"))


def test_help_of_no_such_command_names_the_commands():
    result = run_group("help", "chek")
    assert (result.exit_code, error_line(result)) == (
        2, "error: no such command 'chek' (did you mean 'check'?); the commands: export, "
           "check, describe, report, compare, reproduce, init, help, version")
    assert error_line(run_group("help", "zzz")) == (
        "error: no such command 'zzz'; the commands: export, check, describe, report, "
        "compare, reproduce, init, help, version")


@pytest.mark.slow
@pytest.mark.parametrize("args", [["report", "docs/report-example/sweep.csv", "--format", "json"],
                                  ["--help"],
                                  ["examples/runs/fsdp_tp-2rank", "--config", "c", "-q"]])
def test_a_closed_stdout_exits_quietly_with_141(args):
    """``... | head -1``: no traceback, no error line; 141 as for a process SIGPIPE ended."""
    script = Path(sys.executable).with_name("ezpz-amsc")
    p = subprocess.Popen([script, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         cwd=REPO)
    p.stdout.close()  # the reader is gone before the first write
    assert (p.wait(), p.stderr.read()) == (141, b"")
    p.stderr.close()
    head = subprocess.run(["bash", "-c", f"'{script}' {' '.join(args)} | head -c 1; "
                           "echo \" ${PIPESTATUS[0]}\""], capture_output=True, text=True,
                          cwd=REPO)
    assert head.stderr == "" and head.stdout[1:] in (" 0\n", " 141\n")


HELP_PAGES = [[], ["export"], ["check"]]


@pytest.mark.slow
@pytest.mark.parametrize("prog", [["ezpz-amsc"], ["python", "-m", "ezpz_amsc"]])
def test_help_fits_100_columns_on_a_wide_terminal(prog):
    argv = [str(Path(sys.executable).with_name(prog[0]))] if len(prog) == 1 else [
        sys.executable, *prog[1:]]
    for page in HELP_PAGES:
        for flag in ("--help", "-h"):
            p = subprocess.run([*argv, *page, flag], capture_output=True, text=True,
                               env={**os.environ, "COLUMNS": "250"})
            assert p.returncode == 0
            assert 80 < max(len(line) for line in p.stdout.splitlines()) <= 100
            assert "\nExit codes:\n  0  " in p.stdout


@pytest.mark.parametrize("page", [[], ["export"], ["check"], ["describe"], ["report"],
                                  ["compare"], ["init"],
                                  ["reproduce"], ["help"], ["version"]])
def test_every_help_page_fits_an_80_column_terminal(page):
    result = runner().invoke(cli, [*page, "--help"], prog_name="ezpz-amsc", terminal_width=80)
    assert result.exit_code == 0
    assert max(len(line) for line in result.stdout.splitlines()) <= 80


def test_group_help_shows_both_modes_and_examples():
    page = run_group("--help").stdout
    assert page.splitlines()[:len(USAGE)] == USAGE
    commands = page.split("Commands:\n")[1].split("\n\n")[0]
    assert [ln.split()[0] for ln in commands.splitlines()] == [
        "export", "check", "describe", "report", "compare", "reproduce", "init", "help",
        "version"]
    assert "  ezpz-amsc check runs.csv  " in page
    assert "2  bad command line" in page


def test_export_help_shows_check_mode_choices_and_fallbacks():
    page = run_group("export", "--help").stdout
    assert page.splitlines()[:2] == [
        "Usage: ezpz-amsc export RUN_DIR... --config LABEL [OPTIONS]",
        "       ezpz-amsc export --check RESULTS_CSV"]
    flat = " ".join(page.split())
    assert "--reducer [median|mean|max|min|last]" in page
    assert "Default: max(WORLD_SIZE_IN_USE, world_size), else NGPUS (the allocation)." in flat
    assert "json: JSON Lines, one object per run" in flat
    assert "ezpz-amsc export --check results.csv" in page
    # The default form answers --help with the export page.
    assert run_group(GOOD, "--help").stdout == page


# -------------------------------------------------------------------------- completion


def complete(cmd: click.Command, args: list[str], incomplete: str,
             prog: str = "ezpz-amsc") -> list[tuple[str, str]]:
    comp = ShellComplete(cmd, {}, prog, "_EZPZ_AMSC_COMPLETE")
    return [(item.type, item.value) for item in comp.get_completions(args, incomplete)]


@pytest.mark.parametrize("args, incomplete, expected", [
    # the path item first: click's bash script clears the list at it (see the bash test)
    ([], "", [("dir", ""), ("plain", "export"), ("plain", "check"), ("plain", "describe"),
              ("plain", "report"), ("plain", "compare"), ("plain", "reproduce"),
              ("plain", "init"), ("plain", "help"), ("plain", "version")]),
    ([], "ch", [("dir", "ch"), ("plain", "check")]),
    ([], "ru", [("dir", "ru")]),
    (["run1"], "", [("dir", "")]),
    (["run1", "run2"], "ru", [("dir", "ru")]),
    (["run1", "--append"], "", [("file", "")]),
    (["--config", "x"], "", [("dir", "")]),
    (["--check"], "res", [("file", "res")]),
    (["check"], "", [("file", "")]),
    (["export"], "", [("dir", "")]),
    (["export", "run1", "--append"], "r", [("file", "r")]),
    (["run1", "--provenance"], "", [("dir", "")]),
    (["reproduce"], "rec", [("file", "rec")]),
    (["reproduce", "r.json", "--run-dir"], "", [("dir", "")]),
    (["report", "r.csv", "--plot"], "s", [("file", "s")]),
    ([], "--c", [("plain", "--config"), ("plain", "--check")]),
    (["run1", "--reducer"], "m", [("plain", n) for n in ("median", "mean", "max", "min")]),
])
def test_completion(args, incomplete, expected):
    assert complete(cli, args, incomplete) == expected


def test_completion_of_the_command_a_host_loads():
    assert complete(export_amsc, [], "", "ezpz export-amsc") == [("dir", "")]
    assert complete(export_amsc, ["r", "--check"], "", "ezpz export-amsc") == [("file", "")]


def test_bash_completion_through_the_console_script():
    script = Path(sys.executable).with_name("ezpz-amsc")
    env = {**os.environ, "_EZPZ_AMSC_COMPLETE": "bash_complete", "COMP_WORDS": "ezpz-amsc ",
           "COMP_CWORD": "1"}
    p = subprocess.run([script], capture_output=True, text=True, env=env)
    assert (p.returncode, p.stdout.splitlines()) == (
        0, ["dir,", "plain,export", "plain,check", "plain,describe", "plain,report",
            "plain,compare", "plain,reproduce", "plain,init", "plain,help", "plain,version"])


# What docs/cli.md tells bash users to put in ~/.bashrc.
BASH_SETUP = 'eval "$(_EZPZ_AMSC_COMPLETE=bash_source ezpz-amsc)"'


@pytest.mark.slow
@pytest.mark.parametrize("words, expected", [
    (["ezpz-amsc", ""], "export check describe report compare reproduce init help version"),
    (["ezpz-amsc", "re"], "report reproduce"),
    (["ezpz-amsc", "ch"], "check"),
    (["ezpz-amsc", "examples/"], ""),  # no command matches: bash completes the folders itself
    (["ezpz-amsc", "examples/runs/minimal-1rank", "--red"], "--reducer"),
])
def test_bash_completes_subcommand_names_with_the_documented_setup(tmp_path, words, expected):
    """The real bash script click writes, run as bash would on TAB."""
    assert BASH_SETUP in (REPO / "docs" / "cli.md").read_text()
    scripts = str(Path(sys.executable).parent)
    cword = len(words) - 1
    line = " ".join(f"'{w}'" for w in words)
    code = (f"{BASH_SETUP}\nCOMP_WORDS=({line}); COMP_CWORD={cword}\n"
            "_ezpz_amsc_completion ezpz-amsc 2>/dev/null; echo \"${COMPREPLY[*]}\"")
    p = subprocess.run(["bash", "-c", code], capture_output=True, text=True, cwd=REPO,
                       env={**os.environ, "PATH": f"{scripts}{os.pathsep}{os.environ['PATH']}"})
    assert (p.returncode, p.stdout) == (0, expected + "\n")


# ------------------------------------------------------------------------ lazy loading


_HELP_AND_LIST = """
import json, sys
from ezpz_amsc.cli.group import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("ezpz", "numpy")))))
"""


@pytest.mark.slow
@pytest.mark.parametrize("argv, expected", [
    (["--version"], []),
    (["check", "--help"], ["ezpz_amsc.cli.params", "ezpz_amsc.cli.check_command"]),
    (["--help"], ["ezpz_amsc.cli.params", "ezpz_amsc.cli.check_command",
                  "ezpz_amsc.cli.describe_command", "ezpz_amsc.cli.export_command",
                  "ezpz_amsc.cli.report_command", "ezpz_amsc.cli.compare_command",
                  "ezpz_amsc.cli.reproduce_command", "ezpz_amsc.cli.init_command",
                  "ezpz_amsc.cli.help_command", "ezpz_amsc.cli.version_command"]),
])
def test_subcommands_load_only_when_needed(argv, expected):
    p = subprocess.run([sys.executable, "-c", _HELP_AND_LIST, *argv], capture_output=True,
                       text=True, cwd=REPO, check=True)
    # What loading the CLI costs: no pipeline, no numpy.
    base = ["ezpz_amsc", "ezpz_amsc.version", "ezpz_amsc.cli", "ezpz_amsc.cli.group",
            "ezpz_amsc.cli.edge", "ezpz_amsc.cli.help", "ezpz_amsc.cli.output", "ezpz_amsc.errors",
            "ezpz_amsc.options", "ezpz_amsc.results", "ezpz_amsc.results.schema",
            "ezpz_amsc.text"]
    assert json.loads(p.stdout.splitlines()[-1]) == sorted(base + expected)


# ------------------------------------------------------- paths below a folder you may not search

DENIED = "Permission denied (check its permissions and those of the folders above it)"


@pytest.mark.parametrize("args", [
    ["check", "{p}"],
    ["describe", "{p}"],
    ["report", "{p}"],
    ["reproduce", "{p}"],
    [GOOD, "--config", "c", "--append", "{p}"],
    [GOOD, "--config", "c", "--append", "{ok}", "--provenance", "{p}"],
    ["{p}", "--config", "c"],
])
def test_a_path_you_may_not_reach_is_one_error_line_and_nothing_written(tmp_path, monkeypatch,
                                                                       args):
    # stat() of anything below a folder without search permission fails with EACCES,
    # where pathlib's exists() and is_dir() raise instead of answering
    denied = tmp_path / "locked" / "target"
    ok = tmp_path / "ok.csv"
    real_stat = os.stat  # what Path.stat, exists() and is_dir() call too

    def stat(path, *a, **kw):
        if isinstance(path, (str, os.PathLike)) and Path(path) == denied:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_stat(path, *a, **kw)

    monkeypatch.setattr(os, "stat", stat)
    argv = [str(a).format(p=denied, ok=ok) for a in args]
    subcommand = argv[0] in ("check", "describe", "report", "reproduce")
    for result in [run_group(*argv)] + ([] if subcommand else [run_cli(*argv)]):
        assert (result.exit_code, result.stdout) == (1, "")
        assert result.stderr == f"error: {denied}: {DENIED}\n"
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ the smaller frictions


def test_ctrl_c_is_exit_130_and_one_line(monkeypatch, tmp_path):
    def interrupted(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr("ezpz_amsc.flow.export.export_run", interrupted)
    r = run_group(GOOD, "--config", "c")
    assert (r.exit_code, r.stdout, r.stderr) == (130, "", "error: interrupted\n")


@pytest.mark.slow
def test_a_real_sigint_exits_130_without_a_traceback(tmp_path):
    """SIGINT while an append waits at its first instant (the pause seam of fs/create.py)."""
    import signal

    from helpers import paused, wait_until_paused

    # tools/mutate.py measures subprocesses with coverage, which handles signals of its own.
    env = {**{k: v for k, v in os.environ.items() if k != "MUTATE_COV_DIR"},
           "PYTHONPATH": str(REPO), **paused(tmp_path, "opened")}
    p = subprocess.Popen([sys.executable, "-m", "ezpz_amsc", str(GOOD), "--config", "c",
                          "--append", str(tmp_path / "r.csv")], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         # as from a shell: a parent that ignores SIGINT (a test runner's
                         # worker) would pass that on, and Python then installs no handler
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    wait_until_paused(p, tmp_path, "opened")
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert (p.returncode, out) == (130, "")
    assert err.splitlines()[-1] == "error: interrupted" and "Traceback" not in err


def test_format_md_is_markdown(tmp_path):
    sweep = REPO / "docs" / "report-example" / "sweep.csv"
    md, markdown = run_group("report", sweep, "--format", "md"), run_group(
        "report", sweep, "--format", "markdown")
    assert md.exit_code == 0 and md.stdout == markdown.stdout
    assert md.stdout.startswith("## Scaling report\n")
