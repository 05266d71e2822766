"""The options module (one home for names and validation) and the plain pipeline error."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys

import click
import pytest
from helpers import REPO, RUNS, parse_csv, run_group

from ezpz_amsc import options as options_mod
from ezpz_amsc.errors import AmscError, AmscUsageError
from ezpz_amsc.hook import finalize_hook
from ezpz_amsc.options import (
    HASH_BUDGET_BYTES,
    ExportOptions,
    OptionError,
    PublishOptions,
    check_lock_timeout,
    default_of,
    hash_budget_from_env,
    lock_timeout_from_env,
)
from ezpz_amsc.results.schema import MAX_COUNT
from ezpz_amsc.text import about, spelled

GOOD = RUNS / "fsdp_tp-2rank"


@pytest.mark.parametrize("field, ok, bad, reason", [
    ("warmup", 0, -1, "must be 0 or more, got -1"),
    ("nodes", 1, 0, "must be 1 or more, got 0"),
    ("gpus", 1, -2, "must be 1 or more, got -2"),
    ("nodes", MAX_COUNT, MAX_COUNT + 1, "1000001 is not a plausible count (more than 1,000,000)"),
    ("gpus", MAX_COUNT, 10**400, "100000000000... (401 digits) is not a plausible count "
                                 "(more than 1,000,000)"),
    # 20 digits are shown whole, 21 shortened
    ("nodes", MAX_COUNT, 10**19, "10000000000000000000 is not a plausible count "
                                 "(more than 1,000,000)"),
    ("nodes", MAX_COUNT, 10**20, "100000000000... (21 digits) is not a plausible count "
                                 "(more than 1,000,000)"),
    ("wall_time_sec", 5e-324, 0.0, "must be a positive number of seconds, got 0.0"),
    ("wall_time_sec", 1.7e308, math.inf, "must be a positive number of seconds, got inf"),
    ("wall_time_sec", 1.0, math.nan, "must be a positive number of seconds, got nan"),
    ("reducer", "last", "avg", "must be one of median, mean, max, min, last, got 'avg'"),
    ("status", "fail", "ok", "must be pass or fail, got 'ok'"),
    ("timestamp", "2019-12-31T23:59:59Z", "2019-12-31T23:59:60Z",
     "must look like 2026-08-11T17:11:17Z, got '2019-12-31T23:59:60Z'"),
    ("timestamp", "2015-01-01T00:00:00Z", "2014-12-31T23:59:59Z",
     "2014-12-31T23:59:59Z is before 2015 or later than now"),
    ("attempt", "last", "0", "must be 'last' or a number from 1, got '0'"),
    ("attempt", "2", 2, "must be 'last' or a number from 1, got 2"),  # a hand-edited record
    ("attempt", "1000000", "1000001", "must be 'last' or a number from 1, got '1000001'"),
    ("error", "-1", "-1 rank lost", "'-1 rank lost' would run as a formula when the CSV is "
                                    "opened in a spreadsheet (it starts with =, +, -, @, a tab or "
                                    "a carriage return and is not a number)"),
    ("error", "x" * 4096, "x" * 4097, "is 4,097 characters long (a cell holds at most 4,096)"),
    ("config", "x", " ", "must not be empty; pass the benchmark label, e.g. "
                         "--config agpt-2b/bs1/seq2048/tp1"),
    ("system", "Aurora", "Aur\nora", "must be a single line of printable text, got 'Aur\\nora'"),
])
def test_each_rule_at_its_edge(field, ok, bad, reason):
    base = {"config": "c"}
    assert getattr(ExportOptions(**{**base, field: ok}), field) == ok
    with pytest.raises(OptionError) as info:
        ExportOptions(**{**base, field: bad})
    e = info.value
    assert (e.name, spelled(e.reason), e.exit_code) == (field, reason, 2)
    assert str(e) == e.format_message() == f"--{field.replace('_', '-')} {reason}"


@pytest.mark.parametrize("ahead_sec, ok", [(0, True), (600, True), (601, False)])
def test_timestamp_may_run_ten_minutes_ahead_of_this_clock(monkeypatch, ahead_sec, ok):
    # Another host's clock may be a little ahead: up to 600 s is skew, more is a typo.
    import time

    from ezpz_amsc.results.schema import format_timestamp
    now = 1_800_000_000.0
    monkeypatch.setattr(time, "time", lambda: now)
    text = format_timestamp(now + ahead_sec)
    if ok:
        assert ExportOptions(config="c", timestamp=text).timestamp == text
    else:
        with pytest.raises(OptionError) as info:
            ExportOptions(config="c", timestamp=text)
        assert info.value.format_message() == (
            "--timestamp 2027-01-15T08:10:01Z is before 2015 or later than now")


def test_options_are_frozen_so_they_stay_valid():
    opts = ExportOptions(config="c")
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.warmup = -1  # type: ignore[misc]
    assert dataclasses.replace(opts, warmup=3).warmup == 3
    with pytest.raises(OptionError):
        dataclasses.replace(opts, warmup=-3)


@pytest.mark.parametrize("value, ok", [(0.0, True), (0.25, True), (-0.001, False),
                                       (86400.0, True), (86400.001, False), (1e300, False),
                                       (math.inf, False), (-math.inf, False), (math.nan, False)])
def test_lock_timeout(value, ok):
    if ok:
        assert check_lock_timeout(value) == value
    else:
        with pytest.raises(OptionError) as e:
            check_lock_timeout(value)
        assert str(e.value) == f"--lock-timeout must be 0 to 86,400 seconds (a day), got {value}"


# ------------------------------------------------------------------ the hook's environment


@pytest.mark.parametrize("env, expected", [
    ({}, None),
    ({"EZPZ_AMSC_CONFIG": ""}, None),
    ({"EZPZ_AMSC_CONFIG": "c"}, ExportOptions(config="c")),
    ({"EZPZ_AMSC_CONFIG": "c", "EZPZ_AMSC_STATUS": " fail ", "EZPZ_AMSC_WALL_TIME_SEC": " 61.5"},
     ExportOptions(config="c", status="fail", wall_time_sec=61.5)),
    ({"EZPZ_AMSC_CONFIG": "c", "EZPZ_AMSC_STATUS": "", "EZPZ_AMSC_WALL_TIME_SEC": " "},
     ExportOptions(config="c")),
])
def test_from_env(env, expected):
    assert ExportOptions.from_env(env) == expected


@pytest.mark.parametrize("env, message", [
    ({"EZPZ_AMSC_CONFIG": "  "}, "EZPZ_AMSC_CONFIG='  ' is not a one-line label"),
    ({"EZPZ_AMSC_CONFIG": "a\tb"}, "EZPZ_AMSC_CONFIG='a\\tb' is not a one-line label"),
    ({"EZPZ_AMSC_STATUS": "ok"}, "EZPZ_AMSC_STATUS must be pass or fail, got 'ok'"),
    ({"EZPZ_AMSC_WALL_TIME_SEC": "1h"},
     "EZPZ_AMSC_WALL_TIME_SEC must be a positive number of seconds, got '1h'"),
    ({"EZPZ_AMSC_WALL_TIME_SEC": "-5"},
     "EZPZ_AMSC_WALL_TIME_SEC must be a positive number of seconds, got '-5'"),
    ({"EZPZ_AMSC_WALL_TIME_SEC": "inf"},
     "EZPZ_AMSC_WALL_TIME_SEC must be a positive number of seconds, got 'inf'"),
])
def test_from_env_errors_name_the_variable(env, message):
    with pytest.raises(OptionError) as info:
        ExportOptions.from_env({"EZPZ_AMSC_CONFIG": "c", **env})
    assert info.value.format_message() == message
    assert info.value.name == {"EZPZ_AMSC_CONFIG": "config", "EZPZ_AMSC_STATUS": "status",
                               "EZPZ_AMSC_WALL_TIME_SEC": "wall_time_sec"}[next(iter(env))]


# ------------------------------------------------------------------ one home, validated once


def test_names_and_limits_have_one_home():
    from ezpz_amsc.results import schema as row
    from ezpz_amsc.run import placement as provenance
    from ezpz_amsc.run import reduce, steps

    assert reduce.REDUCERS is options_mod.REDUCERS
    assert row.STATUSES is options_mod.STATUSES
    assert provenance.MAX_COUNT is options_mod.MAX_COUNT
    assert ExportOptions(config="c").max_line_bytes == steps.MAX_LINE_BYTES


def test_cli_choices_and_defaults_are_the_options_own():
    from ezpz_amsc.cli.group import COMMANDS, load_command
    from ezpz_amsc.options import REDUCERS, STATUSES, PublishOptions, default_of

    params = {p.name: p for p in load_command(COMMANDS["export"]).params}
    assert tuple(params["reducer"].type.choices) == REDUCERS
    assert tuple(params["status"].type.choices) == STATUSES
    for name in ("status", "error", "warmup", "reducer"):
        assert params[name].default == default_of(ExportOptions, name), name
    assert params["lock_timeout"].default == default_of(PublishOptions, "lock_timeout") == 60.0
    assert default_of(ExportOptions, "warmup") == 1
    with pytest.raises(KeyError) as missing:
        default_of(ExportOptions, "config")
    assert missing.value.args == ("ExportOptions.config has no default",)
    with pytest.raises(KeyError) as unknown:
        default_of(ExportOptions, "nope")
    assert unknown.value.args == ("ExportOptions has no field nope",)


def _count_validations(monkeypatch) -> list[object]:
    calls: list[object] = []
    real = options_mod.validate_options

    def counting(opts):
        calls.append(opts)
        real(opts)

    monkeypatch.setattr(options_mod, "validate_options", counting)
    return calls


def test_cli_validates_once_for_a_batch(monkeypatch):
    calls = _count_validations(monkeypatch)
    result = run_group(GOOD, RUNS / "minimal-1rank", "--config", "c")
    assert len(parse_csv(result.stdout)) == 2
    assert len(calls) == 1


def test_hook_validates_once(fixture_run, monkeypatch):
    calls = _count_validations(monkeypatch)
    run = fixture_run("minimal-1rank")
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "hooked")
    for name in ("EZPZ_AMSC_APPEND", "EZPZ_AMSC_STATUS", "EZPZ_AMSC_WALL_TIME_SEC", "RANK"):
        monkeypatch.delenv(name, raising=False)
    finalize_hook(object(), run)
    assert [r["config"] for r in parse_csv((run / "amsc.csv").read_text())] == ["hooked"]
    assert len(calls) == 1


def test_options_module_loads_neither_click_nor_numpy():
    code = ("import json, sys; import ezpz_amsc.options; "
            "print(json.dumps(sorted(m for m in ('click', 'numpy') if m in sys.modules)))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=True, cwd=REPO)
    assert json.loads(p.stdout) == []


# ------------------------------------------------------------------ the plain error


def test_pipeline_error_is_a_plain_exception():
    assert not issubclass(AmscError, click.ClickException)
    e = AmscError("x: no such directory")
    assert (str(e), e.format_message(), e.exit_code) == ("x: no such directory",) * 2 + (1,)
    assert AmscUsageError("bad").exit_code == 2
    assert issubclass(OptionError, AmscUsageError)


@pytest.mark.parametrize("path, message, shown", [
    ("runs/a", "runs/a: no such directory", "runs/a: no such directory"),
    ("runs/a/", "runs/a: no such directory", "runs/a: no such directory"),
    ("./runs/a", "runs/a: not a directory", "runs/a: not a directory"),
    ("runs/a", "runs/a/metrics-0.jsonl: cannot read", "runs/a/metrics-0.jsonl: cannot read"),
    ("runs/a", "runs/ab: elsewhere", "runs/a: runs/ab: elsewhere"),
    ("runs/a", "cannot tell gpus", "runs/a: cannot tell gpus"),
])
def test_about_names_a_path_once(path, message, shown):
    assert about(path, message) == shown


def test_options_cannot_change_after_validation():
    # validated once when built: a field set later would skip every check
    opts = ExportOptions(config="c")
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.nodes = 0  # type: ignore[misc]
    assert opts.nodes is None


LOCK, BUDGET = "EZPZ_AMSC_LOCK_TIMEOUT", "EZPZ_AMSC_HASH_BUDGET"


@pytest.mark.parametrize("read, var, raw, want", [
    (lock_timeout_from_env, LOCK, None, 60.0), (lock_timeout_from_env, LOCK, "", 60.0),
    (lock_timeout_from_env, LOCK, " 2.5 ", 2.5), (lock_timeout_from_env, LOCK, "0", 0.0),
    *[(hash_budget_from_env, BUDGET, raw, budget) for raw, budget in [
        (None, 1 << 30), ("", 1 << 30), ("  ", 1 << 30), ("0", 0), ("512", 512),
        (" 512K ", 512 << 10), ("3m", 3 << 20), ("2G", 2 << 30), ("2GiB", 2 << 30),
        ("2gb", 2 << 30), ("1 T", 1 << 40), ("7B", 7), ("8kib", 8 << 10)]],
])
def test_the_hooks_variables_else_their_defaults(read, var, raw, want):
    env = {} if raw is None else {var: raw}
    assert read(env) == want
    assert type(read(env)) is type(want)


def test_the_hooks_defaults_have_one_home():
    assert lock_timeout_from_env({}) == default_of(PublishOptions, "lock_timeout")
    assert hash_budget_from_env({}) == HASH_BUDGET_BYTES == 1 << 30  # 1 GiB, docs say so


@pytest.mark.parametrize("read, var, name, raw, reason", [
    *[(lock_timeout_from_env, LOCK, "lock_timeout", raw,
       "must be 0 to 86,400 seconds (a day)")
      for raw in ["soon", "-0.1", "nan", "inf", "-inf", "1e300", "86401", "Infinity", "1e999"]],
    *[(hash_budget_from_env, BUDGET, "hash_budget", raw,
       "must be a number of bytes (e.g. 512M, 2G, or 0 to hash no metrics file)")
      for raw in ["lots", "-1", "1.5G", "1e9", "G", "5X", "٣", "2²", "kb", "1KK"]],
])
def test_a_bad_hook_variable_is_named(read, var, name, raw, reason):
    with pytest.raises(OptionError) as e:
        read({var: raw})
    assert str(e.value) == f"{var} {reason}, got {raw!r}"
    assert (e.value.name, e.value.exit_code) == (name, 2)


@pytest.mark.parametrize("kwargs, message", [
    ({"append": "r.csv", "skip_existing": True, "allow_duplicate": True},
     "--skip-existing and --allow-duplicate contradict each other; pass one"),
    ({"provenance": "records"},
     "--provenance needs --append PATH: a record is the evidence of a row in a results file (to "
     "see what a record would hold, pass --format json)"),
])
def test_publish_options_that_cannot_go_together(kwargs, message):
    with pytest.raises(OptionError) as e:
        PublishOptions(**kwargs)
    assert (str(e.value), e.value.standalone) == (message, True)
    PublishOptions(append="r.csv", provenance="records", skip_existing=True)  # these can
