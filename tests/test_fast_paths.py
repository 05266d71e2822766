"""The speed-motivated replacements compute exactly what they replaced."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import step, write_jsonl
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ezpz_amsc.discover import RankFiles, find_run_files
from ezpz_amsc.reduce import median_sorted, percentile_sorted, reduce_steps
from ezpz_amsc.steps import SERIES, Steps

_finite = hnp.arrays(np.float64, st.integers(1, 40),
                     elements=st.floats(allow_nan=False, allow_infinity=False, width=64))


@given(x=_finite)
def test_median_is_numpy_median(x):
    with np.errstate(over="ignore", invalid="ignore"):
        want = float(np.median(x))
    got = median_sorted(np.sort(x))
    assert got == want or (np.isnan(got) and np.isnan(want))


@given(x=_finite, q=st.sampled_from([0, 10, 33.3, 50, 90, 100]))
def test_percentile_is_numpy_percentile(x, q):
    with np.errstate(over="ignore", invalid="ignore"):
        want = float(np.percentile(x, q))
    got = percentile_sorted(np.sort(x), q)
    assert got == want or (np.isnan(got) and np.isnan(want))


def _steps(step_values: list[float], ts: list[float]) -> Steps:
    s = Steps()
    for i, (k, t) in enumerate(zip(step_values, ts, strict=True)):
        s.step.append(k)
        s.counter.append(0)
        s.timestamp.append(1795990000.0 + t)
        for name in SERIES:
            s.series[name].append(float(i + 1))
    s.step_key = "train/iter"
    return s


@pytest.mark.parametrize("step_values,ts,order_note,attempts", [
    ([1, 2, 3, 4], [4, 3, 2, 1], False, 1),  # in order by step; timestamps do not matter
    ([1, 2, 2, 3], [1, 2, 3, 4], False, 2),  # a repeated step starts a second attempt
    ([1, 2, 2, 3], [1, 3, 2, 4], True, 2),  # tie broken by timestamp: swapped
    ([3, 1, 2], [1, 2, 3], True, 1),  # out of order, no repeat: one attempt, sorted
    ([1, float("nan"), 2], [1, 2, 3], True, 1),  # missing step sorts last
    ([1, 2, float("nan")], [1, 2, 3], False, 1),
])
def test_order_notes_and_attempts(step_values, ts, order_note, attempts):
    red = reduce_steps(_steps(step_values, ts), 0, "last")
    assert any("out of order" in n for n in red.notes) == order_note
    assert len(red.segments) == attempts
    finite = [k for k in step_values if k == k]
    assert [v for v in red.step_values if v == v] == sorted(finite)


def test_rank_files_mapping(tmp_path):
    for r in (0, 1, 2, 10):
        write_jsonl(tmp_path / f"metrics-{r}.jsonl", [step(1, loss=1.0, rank=r)])
    source = find_run_files(tmp_path).metrics
    files = source.per_rank
    assert isinstance(files, RankFiles)
    assert sorted(files) == [0, 1, 2, 10] and len(files) == 4
    assert files[10] == tmp_path / "metrics-10.jsonl"
    assert dict(files.items()) == {r: tmp_path / f"metrics-{r}.jsonl" for r in (0, 1, 2, 10)}
    assert 3 not in files
    with pytest.raises(KeyError):
        files[3]
