"""Failures a user can cause and the exit statuses (errors.py): one home for every exit code,
which every command's --help and the docs' table take from it."""

from __future__ import annotations

import re

import pytest
from helpers import REPO, run_group

from ezpz_amsc.errors import (
    AmscError,
    AmscUsageError,
    ExitStatus,
    NoStepTime,
    SeveralAttempts,
    os_error_text,
    reason,
)
from ezpz_amsc.text import opt


def test_the_exit_statuses():
    assert {s.name: int(s) for s in ExitStatus} == {
        "OK": 0, "FAILED": 1, "USAGE": 2, "NOTHING_COMPARABLE": 3, "INTERRUPTED": 130,
        "BROKEN_PIPE": 141}
    assert ExitStatus(2) is ExitStatus.USAGE  # from a number, as click's exit codes come
    assert AmscError("x").exit_code is ExitStatus.FAILED
    assert AmscUsageError("x").exit_code is ExitStatus.USAGE
    assert (NoStepTime("x").exit_code, SeveralAttempts("x", 2).exit_code) == (1, 1)


def test_an_error_names_its_options_as_data_and_each_edge_spells_them():
    e = AmscError("cannot tell gpus; pass " + opt("gpus", "N"))
    assert [(o.name, o.value) for o in e.options()] == [("gpus", "N")]
    assert str(e) == e.format_message() == "cannot tell gpus; pass --gpus N"
    assert e.render(lambda o: f"<{o.name}>") == "cannot tell gpus; pass <gpus>"
    assert AmscError("plain").options() == ()


def test_the_docs_table_lists_every_exit_status():
    text = (REPO / "docs" / "troubleshooting.md").read_text()
    table = text[text.index("## Exit codes"):text.index("## Common errors")]
    codes = re.findall(r"^\| (\d+) \|", table, flags=re.M)
    assert sorted(map(int, codes)) == sorted(int(s) for s in ExitStatus)


@pytest.mark.parametrize("command", ["export", "check", "describe", "report", "reproduce",
                                     "compare", "help", "version"])
def test_every_commands_help_lists_only_exit_statuses_that_exist(command):
    page = run_group(command, "-h").output
    section = page[page.index("Exit codes"):]
    codes = [int(c) for c in re.findall(r"^\s+(\d+)\s", section, flags=re.M)]
    assert codes and set(codes) <= {int(s) for s in ExitStatus}
    assert codes == sorted(codes)


def test_each_exit_status_says_what_it_means():
    assert {s.name: str(s.meaning) for s in ExitStatus} == {
        "OK": "success",
        "FAILED": "a run could not be exported, or a results file has problems; the error: "
                  "line says why and which flag settles it",
        "USAGE": "bad command line: unknown option, bad value, missing --config or RUN_DIR",
        "NOTHING_COMPARABLE": "nothing comparable (compare)",
        "INTERRUPTED": "interrupted (Ctrl-C)",
        "BROKEN_PIPE": "stdout was closed before everything was written"}
    assert ExitStatus.USAGE.meaning.options()[0].name == "config"  # type: ignore[union-attr]


@pytest.mark.parametrize("error, text", [
    (PermissionError(13, "Permission denied", "/x/runs.csv"), "Permission denied"),
    (OSError(5, "Input/output error"), "Input/output error"),
    (OSError("the file got shorter"), "the file got shorter"),  # raised without a reason
])
def test_an_os_errors_reason_is_the_systems_words_without_number_or_path(error, text):
    assert reason(error) == text


def test_a_denied_access_names_the_path_and_what_to_check():
    assert os_error_text(PermissionError(13, "Permission denied", "/x/runs.csv")) == (
        "/x/runs.csv: Permission denied (check its permissions and those of the folders "
        "above it)")
    assert os_error_text(OSError(5, "Input/output error")) == "Input/output error"
