"""Both JSON paths of the step reader give the same records and the same row.

orjson (the ``fast`` extra) is used when importable; the stdlib path is the
scanner fast path with ``json.loads`` as the authority. Every test here runs
on each available path via the ``json_path`` fixture, and the differential
tests hold both to ``json.loads`` itself.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import FIXTURE_NAMES, RUNS, one_row, run_cli, step, write_jsonl, write_run_info
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ezpz_amsc import steps as steps_mod
from ezpz_amsc.discover import MetricsSource, find_run_files
from ezpz_amsc.steps import SERIES, read_steps

try:
    import orjson
except ImportError:  # the tool works without it; so must its tests
    orjson = None

PATHS = ["stdlib", pytest.param("orjson", marks=pytest.mark.skipif(
    orjson is None, reason="orjson not installed (extra 'fast')"))]


def _only_json_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference: every line through json.loads (scanner fast path and skim off)."""
    def refuse(text: str, idx: int):
        raise StopIteration(idx)

    monkeypatch.setattr(steps_mod, "FAST_LOADS", None)
    monkeypatch.setattr(steps_mod, "_scan_once", refuse)
    monkeypatch.setattr(steps_mod, "SKIM", False)  # and other ranks' lines parsed too


@pytest.fixture(params=PATHS)
def json_path(request, monkeypatch):
    monkeypatch.setattr(steps_mod, "FAST_LOADS", orjson.loads if request.param == "orjson"
                        else None)
    return request.param


def snapshot(s: steps_mod.Steps) -> dict:
    """Everything the reader reports, NaN-safe (arrays compared as bytes)."""
    return {
        "rank": s.rank, "step": s.step.tobytes(), "timestamp": s.timestamp.tobytes(),
        "series": {k: v.tobytes() for k, v in s.series.items()},
        "keys_used": s.keys_used, "step_key": s.step_key, "nonfinite": s.nonfinite,
        "files_read": [str(p) for p in s.files_read], "files_not_read": s.files_not_read,
        "bad_lines": s.bad_lines, "long_lines": s.long_lines,
        "truncated_last_line": s.truncated_last_line, "not_steps": s.not_steps,
        "other_ranks": s.other_ranks,
    }


def read_bytes_file(tmp_path: Path, data: bytes, interleaved: bool) -> steps_mod.Steps:
    if interleaved:
        p = tmp_path / "metrics.jsonl"
        p.write_bytes(data)
        return read_steps(MetricsSource("interleaved", tmp_path, single=p), max_line=1 << 16)
    p = tmp_path / "metrics-0.jsonl"
    p.write_bytes(data)
    return read_steps(MetricsSource("per-rank", tmp_path, per_rank={0: p}), max_line=1 << 16)


def test_env_var_forces_stdlib(monkeypatch):
    monkeypatch.setenv("EZPZ_AMSC_JSON", "stdlib")
    assert steps_mod._fast_loads() is None
    monkeypatch.setenv("EZPZ_AMSC_JSON", "")
    assert steps_mod._fast_loads() is (orjson.loads if orjson else None)


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_runs_read_like_json_loads(json_path, name, monkeypatch):
    source = find_run_files(RUNS / name).metrics
    got = snapshot(read_steps(source))
    _only_json_loads(monkeypatch)
    assert got == snapshot(read_steps(source))
    assert got["step"], "fixture has steps"


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_rows_identical_on_both_paths(name, monkeypatch):
    rows = []
    for loads in [None] + ([orjson.loads] if orjson else []):
        monkeypatch.setattr(steps_mod, "FAST_LOADS", loads)
        rows.append(one_row(run_cli(RUNS / name, "--config", "c")))
    assert all(r == rows[0] for r in rows)
    assert int(rows[0]["steps"]) > 0


# (line, expected) — expected: step value, loss value (None = NaN), counters.
HOSTILE = [
    ('{"metrics": {"train/iter": 1, "train/loss": NaN}}', dict(loss=None, nonfinite=1)),
    ('{"metrics": {"train/iter": 1, "train/loss": Infinity}}', dict(loss=None, nonfinite=1)),
    ('{"metrics": {"train/iter": 1, "train/loss": -Infinity}}', dict(loss=None, nonfinite=1)),
    ('{"metrics": {"train/iter": 1, "train/loss": 1e400}}', dict(loss=None, nonfinite=1)),
    ('{"metrics": {"train/iter": 1, "train/loss": ' + str(10**400) + '}}',
     dict(loss=None, nonfinite=1)),
    ('{"metrics": {"train/iter": 1, "train/loss": ' + str(2**64) + '}}', dict(loss=2.0**64)),
    ('{"metrics": {"train/iter": 1, "train/loss": true, "loss": 2.5}}', dict(loss=2.5)),
    ('{"metrics": {"train/iter": 1, "train/loss": "8.0", "loss": 3}}', dict(loss=3.0)),
    ('{"metrics": {"train/iter": "1", "iter": 4, "train/loss": 1.5}}', dict(step=4.0, loss=1.5)),
    ('\ufeff{"metrics": {"train/iter": 1, "train/loss": 1.5}}', dict(loss=1.5)),
    ('  {"metrics": {"train/iter": 1, "train/loss": 1.5}}  ', dict(loss=1.5)),
    ('{"metrics": {"train/iter": 1, "train/loss": 1.5, "s": "\\ud800"}}', dict(loss=1.5)),
    ('{"metrics": {"train/iter": 1, "train/loss": 1.5}} trailing', dict(bad=1)),
    ('{"metrics": {"train/iter": 1, "train/loss": 1.5}, "metrics": 7}', dict(not_steps=1)),
    ('[1, 2]', dict(bad=1)),
    ('{"metrics": {"precision/x": "bf16", "flag": true}}', dict(not_steps=1)),
    ('{"metrics": {"other/x": 1}}', dict(step=None, loss=None)),
    ("[" * 5000 + "]" * 5000, dict(bad=1)),
]


@pytest.mark.parametrize("line,expected", HOSTILE)
def test_hostile_lines(json_path, tmp_path, monkeypatch, line, expected):
    good = json.dumps(step(9, loss=0.5))
    data = (good + "\n" + line + "\n").encode("utf-8", "surrogatepass")
    s = read_bytes_file(tmp_path, data, interleaved=False)
    n_rows = 1 if expected.get("bad") or expected.get("not_steps") else 2
    assert len(s) == n_rows
    assert s.bad_lines == expected.get("bad", 0)
    assert s.not_steps == expected.get("not_steps", 0)
    assert s.nonfinite["loss"] == expected.get("nonfinite", 0)
    if n_rows == 2:
        want_step, want_loss = expected.get("step", 1.0), expected.get("loss")
        got_step, got_loss = s.step[1], s.series["loss"][1]
        assert math.isnan(got_step) if want_step is None else got_step == want_step
        assert math.isnan(got_loss) if want_loss is None else got_loss == want_loss
    got = snapshot(s)
    _only_json_loads(monkeypatch)
    assert got == snapshot(read_bytes_file(tmp_path, data, interleaved=False))


def test_utf16_line_is_read_by_json_loads_rules(json_path, tmp_path):
    # json.loads detects UTF-16 from the BOM; neither fast path does, so both defer.
    line = json.dumps(step(1, loss=1.5))  # one line, no newline byte to split UTF-16 on
    s = read_bytes_file(tmp_path, line.encode("utf-16"), interleaved=False)
    assert len(s) == 1 and s.series["loss"][0] == 1.5 and s.bad_lines == 0


@pytest.mark.parametrize("rank", [2**64, -(2**63) - 1, 10**30])
def test_huge_rank_stays_an_int_rank(json_path, tmp_path, rank):
    # orjson turns integers beyond 64 bits into floats; json keeps ints.
    recs = [step(1, loss=1.0), {**step(2, loss=2.0), "rank": rank}]
    p = write_jsonl(tmp_path / "metrics.jsonl", recs)
    s = read_steps(MetricsSource("interleaved", tmp_path, single=p))
    assert len(s) == 1
    assert s.other_ranks == {rank: 1}


def test_truncated_last_line_with_nan(json_path, tmp_path):
    data = (json.dumps(step(1, loss=1.0)) + '\n{"metrics": {"train/iter": 2, "train/loss": NaN'
            ).encode()
    s = read_bytes_file(tmp_path, data, interleaved=False)
    assert len(s) == 1 and s.truncated_last_line and s.bad_lines == 0


def test_cli_row_on_both_paths_with_nan_lines(json_path, tmp_path):
    run = tmp_path / "run"
    recs = [step(i, dt=0.5, tps=1000.0 * i, loss=1.0 / i) for i in range(1, 6)]
    lines = [json.dumps(r) for r in recs]
    lines.insert(3, '{"timestamp": 1795990003.5, "rank": 0, "metrics": {"train/iter": 3.5, '
                    '"train/dt": 0.5, "train/tps": NaN, "train/loss": Infinity}}')
    write_jsonl(run / "metrics-0.jsonl", lines)
    write_run_info(run)
    result = run_cli(run, "--config", "c")
    row = one_row(result)
    assert row["steps"] == "6"
    assert row["throughput_tokens_per_sec"] == "3500.000"  # median of 2000..5000, NaN dropped
    assert row["final_loss"] == "0.200000"
    assert "dropped 2 non-finite values (tps 1, loss 1)" in result.stderr


_scalar = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=True),
    st.booleans(), st.none(), st.text(max_size=3), st.lists(st.integers(), max_size=2))
_keys = st.sampled_from(
    [*steps_mod.STEP_KEYS, *(k for ks in steps_mod.SERIES_KEYS.values() for k in ks), "x/y"])
_record = st.fixed_dictionaries(
    {}, optional={"timestamp": _scalar, "rank": st.one_of(st.integers(0, 2), _scalar),
                  "metrics": st.one_of(st.dictionaries(_keys, _scalar, max_size=6), _scalar)})
_line = st.one_of(_record.map(json.dumps), st.text(max_size=20),
                  st.sampled_from(["NaN", "{", "[]", "\ufeff{}", "{\"metrics\": {}} x"]))


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_line, max_size=8), interleaved=st.booleans(), newline=st.booleans())
def test_random_lines_read_like_json_loads(json_path, tmp_path_factory, lines, interleaved,
                                           newline):
    tmp = tmp_path_factory.mktemp("h")
    data = ("\n".join(lines) + ("\n" if newline else "")).encode("utf-8", "surrogatepass")
    got = snapshot(read_bytes_file(tmp, data, interleaved))
    with pytest.MonkeyPatch.context() as mp:
        _only_json_loads(mp)
        want = snapshot(read_bytes_file(tmp, data, interleaved))
    assert got == want
    assert set(got["series"]) == set(SERIES)
