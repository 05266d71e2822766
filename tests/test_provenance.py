"""system/nodes/gpus: the three tiers, the traps of SPEC §1.3, and the flags."""

from __future__ import annotations

import json

import pytest
from conftest import error_line, one_row, run_cli, step, write_jsonl, write_run_info


def _metrics(run):
    write_jsonl(run / "metrics-0.jsonl", [step(i, dt=1.0, tps=100.0) for i in range(1, 4)])


def _report(path, dist: dict[str, str]):
    path.parent.mkdir(parents=True, exist_ok=True)
    bullets = "\n".join(f"- **{k}**: {v}" for k, v in dist.items())
    path.write_text(f"# History Report\n\n## Environment\n\n### Distributed\n\n{bullets}\n\n"
                    "## Metric Overview\n\n- **NUM_NODES**: 999\n")


AURORA = {"MACHINE": "Aurora", "NUM_NODES": "2", "NGPUS": "24", "GPUS_PER_NODE": "12",
          "WORLD_SIZE_IN_USE": "24", "world_size": "24"}


def test_tier1_run_info(tmp_path):
    run = tmp_path / "r"
    write_run_info(run, **AURORA)
    _metrics(run)
    row = one_row(run_cli(run, "--config", "c"))
    assert (row["system"], row["nodes"], row["gpus"]) == ("Aurora", "2", "24")


def test_tier2_config_json_native_types(tmp_path):
    run = tmp_path / "r"
    _metrics(run)
    (run / "config.json").write_text(json.dumps({
        "MACHINE": "Polaris", "NUM_NODES": 2, "NGPUS": 8, "GPUS_PER_NODE": 4,
        "WORLD_SIZE_IN_USE": 8, "world_size": 8, "args": {"lr": 1e-3}}))
    row = one_row(run_cli(run, "--config", "c"))
    assert (row["system"], row["nodes"], row["gpus"]) == ("Polaris", "2", "8")


def test_tier3_report_distributed_section_only(tmp_path):
    run = tmp_path / "r"
    _metrics(run)
    _report(run / "train" / "report-train.md", AURORA)
    row = one_row(run_cli(run, "--config", "c"))
    # The NUM_NODES bullet after the next heading must not leak in.
    assert (row["system"], row["nodes"], row["gpus"]) == ("Aurora", "2", "24")


def test_tiers_in_order_run_info_beats_config_beats_report(tmp_path):
    run = tmp_path / "r"
    _metrics(run)
    write_run_info(run, MACHINE="FromRunInfo", HOSTNAME=None, NUM_NODES=None, NGPUS=None,
                   GPUS_PER_NODE=None, WORLD_SIZE_IN_USE=None, world_size="4")
    (run / "config.json").write_text(json.dumps({"MACHINE": "FromConfig", "GPUS_PER_NODE": 2}))
    _report(run / "train" / "report-train.md", {"MACHINE": "FromReport", "NUM_NODES": "7"})
    row = one_row(run_cli(run, "--config", "c"))
    # MACHINE from run_info; GPUS_PER_NODE only in config.json: ceil(4 / 2).
    assert (row["system"], row["nodes"], row["gpus"]) == ("FromRunInfo", "2", "4")


def _with_run_info(tmp_path, **dist):
    run = tmp_path / "r"
    _metrics(run)
    write_run_info(run, **dist)
    return run


@pytest.mark.parametrize("dist,nodes,gpus", [
    # A 1-node run inside a 4-node job: NUM_NODES/NGPUS describe the allocation.
    ({"MACHINE": "Aurora", "NUM_NODES": "4", "NGPUS": "48", "GPUS_PER_NODE": "12",
      "WORLD_SIZE_IN_USE": "12", "world_size": "12"}, "1", "12"),
    # CPU host: GPUS_PER_NODE is 0, so nodes come from NUM_NODES.
    ({"NUM_NODES": "1", "GPUS_PER_NODE": "0", "WORLD_SIZE_IN_USE": "2", "world_size": "2"},
     "1", "2"),
    # No world size recorded: the allocation's NGPUS.
    ({"MACHINE": "Aurora", "NUM_NODES": "2", "NGPUS": "24", "GPUS_PER_NODE": "12",
      "WORLD_SIZE_IN_USE": None, "world_size": None}, "2", "24"),
], ids=["allocation-trap", "cpu-host", "ngpus-fallback"])
def test_placement_traps(tmp_path, dist, nodes, gpus):
    row = one_row(run_cli(_with_run_info(tmp_path, **dist), "--config", "c"))
    assert (row["nodes"], row["gpus"]) == (nodes, gpus)


def test_gpus_never_counted_from_rank_files(tmp_path):
    run = tmp_path / "r"
    for r in range(4):
        write_jsonl(run / f"metrics-{r}.jsonl", [step(1, rank=r, dt=1.0)])
    # No provenance at all: four rank files must not become gpus=4.
    line = error_line(run_cli(run, "--config", "c"))
    assert "pass --system NAME --gpus N --nodes N" in line


@pytest.mark.parametrize("dist,flags", [
    ({"MACHINE": None}, "--system NAME"),
    ({"WORLD_SIZE_IN_USE": None, "world_size": None, "NGPUS": None}, "--gpus N"),
    ({"NUM_NODES": None, "GPUS_PER_NODE": None}, "--nodes N"),
    ({"NUM_NODES": "four", "GPUS_PER_NODE": "0"}, "--nodes N"),
])
def test_missing_provenance_names_exactly_the_flags(tmp_path, dist, flags):
    run = tmp_path / "r"
    _metrics(run)
    write_run_info(run, HOSTNAME=None, **dist)
    line = error_line(run_cli(run, "--config", "c"))
    assert line.endswith(f"pass {flags}")


def test_missing_provenance_satisfied_by_flags(tmp_path):
    run = tmp_path / "r"
    _metrics(run)
    row = one_row(run_cli(run, "--config", "c", "--system", "Sunspot", "--nodes", "1",
                          "--gpus", "12"))
    assert (row["system"], row["nodes"], row["gpus"]) == ("Sunspot", "1", "12")


def test_allocation_nodes_exceeding_ranks_is_refused(tmp_path):
    run = _with_run_info(tmp_path, NUM_NODES="4", GPUS_PER_NODE="0", WORLD_SIZE_IN_USE="2",
                         world_size="2")
    line = error_line(run_cli(run, "--config", "c"))
    assert "NUM_NODES 4 exceeds the 2 ranks" in line and "pass --nodes N" in line


@pytest.mark.parametrize("raw", ["1_000", "1e3", "nan", "-4", "1.5", "0x10", "four"])
def test_counts_must_be_plain_decimal(tmp_path, raw):
    run = _with_run_info(tmp_path, WORLD_SIZE_IN_USE=raw, world_size=None, NGPUS=None)
    line = error_line(run_cli(run, "--config", "c"))
    assert line.endswith("pass --gpus N")


@pytest.mark.parametrize("raw,gpus", [("12", "12"), (" 12 ", "12"), ("12.0", "12"), ("+8", "8")])
def test_plain_counts_are_read(tmp_path, raw, gpus):
    run = _with_run_info(tmp_path, WORLD_SIZE_IN_USE=raw, world_size=None)
    assert one_row(run_cli(run, "--config", "c"))["gpus"] == gpus
