"""Values that no other test pinned down, found by mutation testing (tools/mutate.py).

Each test here kills mutants that survived the rest of the suite: a changed
cell, a changed accept/refuse decision, a changed note, or a traceback. They
assert values, so a one-token change in the code they cover fails them.
"""

from __future__ import annotations

import math

import pytest

from ezpz_amsc.row import HEADER, build_row, dashboard_problems, fmt

# --- row.py: the cell formatter ---------------------------------------------------------------


@pytest.mark.parametrize("value,decimals,cell", [
    (0.0, 3, "0.000"),  # a median of exactly zero: the zero branch
    (0.0, 6, "0.000000"),
    (-0.0, 3, "0.000"),
    (-0.0004, 3, "0.000"),  # rounds to zero: never "-0.000"
    (0.0004, 3, "0.000"),
    (-1.5, 1, "-1.5"),
    (10.0, 3, "10.000"),  # zeros around a non-zero digit are kept
    (0.05, 1, "0.1"),
    (1234.5678, 3, "1234.568"),
])
def test_fmt_rounds_and_writes_zero_one_way(value, decimals, cell):
    assert fmt(value, decimals) == cell


@pytest.mark.parametrize("value", [None, math.nan, math.inf, -math.inf])
def test_fmt_leaves_an_unmeasured_value_empty_as_a_string(value):
    assert fmt(value, 3) == ""


def test_build_row_refuses_a_column_outside_the_schema():
    with pytest.raises(KeyError, match=r"not in the schema: \['mfu_pct', 'tps'\]"):
        build_row({"tps": 1, "mfu_pct": 2, "nodes": 1})


def test_build_row_orders_and_stringifies_every_column():
    row = build_row({"nodes": 2, "config": "c", "mfu": None})
    assert list(row) == list(HEADER)
    assert row["nodes"] == "2" and row["config"] == "c"
    assert all(row[c] == "" for c in HEADER if c not in ("nodes", "config"))


# --- row.py: the dashboard's own reading ------------------------------------------------------

GOOD = ["2026-11-29T22:18:43Z", "localhost", "c", "1", "2", "pass", "4.034", "3930.349",
        "1965.174", "", "0.014", "7.989204", "30", ""]


def test_a_short_row_lacks_its_last_required_cells_and_nothing_else():
    # Read as the dashboard reads a line with too few cells: the missing ones are
    # empty, not an error, and only the required ones are problems.
    assert dashboard_problems(GOOD[:4]) == ["gpus is empty", "status is empty",
                                            "wall_time_sec is empty"]
    assert dashboard_problems(GOOD[:7]) == []
    assert dashboard_problems([]) == [f"{c} is empty" for c in HEADER[:7]]


def test_a_row_as_a_mapping_may_lack_optional_columns():
    row = dict(zip(HEADER[:7], GOOD[:7], strict=True))
    assert dashboard_problems(row) == []
    assert dashboard_problems({k: v for k, v in row.items() if k != "nodes"}) == [
        "nodes is empty"]


@pytest.mark.parametrize("column,cell,problem", [
    ("nodes", "0", "nodes '0' is below 1"),
    ("gpus", "-3", "gpus '-3' is below 1"),
    ("nodes", "1", None),  # 1 is the smallest count there is
    ("tflops", "inf", "tflops 'inf' is not finite"),
    ("mfu", "nan", "mfu 'nan' is not finite"),
    ("final_loss", "-0.5", None),
])
def test_dashboard_problems_counts_and_numbers(column, cell, problem):
    row = dict(zip(HEADER, GOOD, strict=True)) | {column: cell}
    assert dashboard_problems(row) == ([problem] if problem else [])
