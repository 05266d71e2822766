"""Each column's type, bounds and description (results/fields.py): the Table Schema of a
results file, and the bounds check enforces."""

from __future__ import annotations

import dataclasses
import re
import sys

import pytest
from helpers import REPO, expected_row

from ezpz_amsc.results.fields import (
    BOUNDED,
    COLUMNS,
    FINITE_MAX,
    MFU_MAX_PCT,
    NOT_BLANK,
    bound_problems,
    field,
    field_type,
    table_schema,
)
from ezpz_amsc.results.schema import HEADER, KEY_COLUMNS, dashboard_problems
from ezpz_amsc.run import reduce
from ezpz_amsc.text import spelled

ROW = expected_row("fsdp_tp-2rank")


def test_every_column_is_described_once_in_header_order():
    assert tuple(COLUMNS) == HEADER


def test_the_column_table_cannot_be_changed_in_place():
    with pytest.raises(dataclasses.FrozenInstanceError):
        COLUMNS["mfu"].maximum = 200  # type: ignore[misc]


def test_the_bounded_columns_are_the_numbers_but_nodes_and_gpus():
    assert BOUNDED == ("wall_time_sec", "throughput_tokens_per_sec",
                       "throughput_tokens_per_sec_per_gpu", "mfu", "tflops", "final_loss", "steps")


def test_a_column_the_row_lacks_is_not_judged():
    row = {c: v for c, v in ROW.items() if c not in ("mfu", "steps", "wall_time_sec")}
    assert bound_problems(row) == []
    assert bound_problems({**row, "mfu": "101"}) == ["mfu '101' is above 100"]


def test_the_schema_is_the_header_with_types_and_the_run_identity_as_primary_key():
    schema = table_schema()
    assert [f["name"] for f in schema["fields"]] == list(HEADER)
    assert [f["type"] for f in schema["fields"]] == [
        "datetime", "string", "string", "integer", "integer", "string", "number", "number",
        "number", "number", "number", "number", "integer", "string"]
    assert schema["missingValues"] == [""]
    assert schema["primaryKey"] == list(KEY_COLUMNS) == ["timestamp", "system", "config",
                                                          "nodes", "gpus"]


def test_each_field_carries_the_constraints_check_enforces():
    by_name = {f["name"]: f for f in table_schema()["fields"]}
    assert by_name["timestamp"] == {
        "name": "timestamp", "type": "datetime",
        "description": spelled(COLUMNS["timestamp"].description),
        "constraints": {"required": True}}
    assert by_name["system"]["constraints"] == {"required": True, "pattern": NOT_BLANK}
    assert by_name["config"]["constraints"] == {"required": True, "pattern": NOT_BLANK}
    assert by_name["nodes"]["constraints"] == {"required": True, "minimum": 1}
    assert by_name["gpus"]["constraints"] == {"required": True, "minimum": 1}
    assert by_name["status"]["constraints"] == {"required": True, "enum": ["pass", "fail"]}
    assert by_name["wall_time_sec"]["constraints"] == {"required": True, "minimum": 0,
                                                       "maximum": FINITE_MAX}
    for name in ("throughput_tokens_per_sec", "throughput_tokens_per_sec_per_gpu", "tflops"):
        assert by_name[name]["constraints"] == {"minimum": 0, "maximum": FINITE_MAX}
    assert by_name["mfu"]["constraints"] == {"minimum": 0, "maximum": 100}
    assert by_name["final_loss"]["constraints"] == {"minimum": -FINITE_MAX,
                                                    "maximum": FINITE_MAX}
    assert by_name["steps"]["constraints"] == {"minimum": 1}
    assert "constraints" not in by_name["error"]
    assert sys.float_info.max == FINITE_MAX


@pytest.mark.parametrize("text, blank", [("a", False), (" a ", False), ("a\nb", False),
                                         ("", True), (" ", True), ("\t\n", True)])
def test_the_not_blank_pattern_is_what_check_calls_empty(text, blank):
    # Table Schema patterns match the whole cell
    assert (re.fullmatch(NOT_BLANK, text) is None) == blank == (not text.strip())


def test_types_follow_the_schema_modules_column_lists():
    assert [field_type(c) for c in ("timestamp", "system", "status", "error")] == [
        "datetime", "string", "string", "string"]
    assert [field_type(c) for c in ("nodes", "gpus", "steps")] == ["integer"] * 3
    assert [field_type(c) for c in ("wall_time_sec", "mfu", "final_loss")] == ["number"] * 3


def test_mfu_bound_is_the_one_the_exporter_drops_steps_above():
    assert reduce.MFU_MAX_PCT is MFU_MAX_PCT == 100.0
    assert field("mfu")["constraints"]["maximum"] == MFU_MAX_PCT


def test_a_row_the_exporter_writes_is_within_every_bound():
    assert bound_problems(ROW) == []


@pytest.mark.parametrize("column, value, problem", [
    ("mfu", "100.001", "mfu '100.001' is above 100"),
    ("mfu", "-0.5", "mfu '-0.5' is below 0"),
    ("throughput_tokens_per_sec", "-1", "throughput_tokens_per_sec '-1' is below 0"),
    ("throughput_tokens_per_sec_per_gpu", "-0.001",
     "throughput_tokens_per_sec_per_gpu '-0.001' is below 0"),
    ("tflops", "-3", "tflops '-3' is below 0"),
    ("wall_time_sec", "-0.5", "wall_time_sec '-0.5' is below 0"),
    ("steps", "0", "steps '0' is below 1"),
    ("steps", "30.0", "steps '30.0' is not a whole number"),
    ("steps", "1e3", "steps '1e3' is not a whole number"),
])
def test_bound_problems(column, value, problem):
    assert bound_problems({**ROW, column: value}) == [problem]


@pytest.mark.parametrize("column, value", [
    ("mfu", "100"), ("mfu", "0"), ("mfu", "0.0"), ("mfu", ""), ("wall_time_sec", "0"),
    ("final_loss", "-3.5"), ("final_loss", "1e300"), ("steps", "1"), ("steps", " 7 "),
    ("throughput_tokens_per_sec", "0.0000123"), ("tflops", "0"),
    # judged by dashboard_problems, not again here:
    ("nodes", "0"), ("gpus", "x"), ("mfu", "nan"), ("tflops", "inf"), ("steps", "many"),
    ("error", "-1"), ("config", "-5"),
])
def test_no_bound_problem(column, value):
    assert bound_problems({**ROW, column: value}) == []


def test_nodes_and_gpus_bounds_are_the_dashboard_rule():
    # one rule, stated once: the schema's minimum is what dashboard_problems refuses below
    for name in ("nodes", "gpus"):
        low = field(name)["constraints"]["minimum"]
        assert dashboard_problems({**ROW, name: str(low)}) == []
        assert dashboard_problems({**ROW, name: str(low - 1)}) == [
            f"{name} '{low - 1}' is below {low}"]


# ---------------------------------------------------------- descriptions and the docs


NUMBERS = (REPO / "docs" / "numbers.md").read_text()


def test_every_column_has_a_one_line_description():
    for name in HEADER:
        text = spelled(COLUMNS[name].description)
        assert text.endswith(".") and "\n" not in text and len(text) <= 150, name


def test_units_are_in_the_descriptions():
    assert "percent (0-100) per GPU" in spelled(COLUMNS["mfu"].description)
    assert spelled(COLUMNS["tflops"].description).startswith("TFLOPS per GPU")
    assert spelled(COLUMNS["wall_time_sec"].description).startswith("Seconds")
    assert spelled(COLUMNS["throughput_tokens_per_sec"].description).startswith(
        "Tokens per second, all GPUs together")
    assert spelled(COLUMNS["throughput_tokens_per_sec_per_gpu"].description).startswith(
        "Tokens per second per GPU")
    assert "UTC" in spelled(COLUMNS["timestamp"].description)


@pytest.mark.parametrize("name", HEADER)
def test_descriptions_cite_the_sources_docs_numbers_names(name):
    # Every flag, metric key and provenance key a description names is in docs/numbers.md,
    # whose table says where each column comes from.
    assert f"| `{name}`" in NUMBERS or f", `{name}`" in NUMBERS
    cited = re.findall(r"--[a-z][\w-]+|train/\w+|\b[A-Z][A-Z_]{3,}\b|run_info\.json",
                       spelled(COLUMNS[name].description))
    missing = [c for c in cited if c not in NUMBERS and c not in ("UTC", "TFLOPS", "GPUS")]
    assert missing == []
