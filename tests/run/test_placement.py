"""Where the run ran (run/placement.py, _ezpz.py): system, nodes and gpus from the
three tiers, the flags, get_machine, ranks per node, and counts that cannot be right."""

from __future__ import annotations

import errno
import json
import statistics
import sys

import pytest
from helpers import (
    HUGE,
    MFU_NOTE,
    PPN_6,
    aurora_run,
    edit_dist,
    error_line,
    fail_for,
    good_run,
    launch,
    launch_records,
    notes_of,
    one_row,
    run_cli,
    step,
    write_jsonl,
    write_run_info,
)

from ezpz_amsc._ezpz import get_machine, machine_from_hostname
from ezpz_amsc.run.placement import (
    TP_FLAGS,
    LaunchLayout,
    Provenance,
    launch_layout,
    ranks_per_node,
    resolve_placement,
)

# --------------------------------------------------------------------- the three tiers


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


def test_unreadable_run_info_falls_back_to_the_report_with_a_note(tmp_path, monkeypatch):
    run = good_run(tmp_path / "run")
    (run / "report-train.md").write_text(
        "### Distributed\n\n- **MACHINE**: Aurora\n- **world_size**: 24\n"
        "- **GPUS_PER_NODE**: 12\n")
    fail_for(monkeypatch, run / "run_info.json", errno.EACCES)
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    assert (row["system"], row["nodes"], row["gpus"]) == ("Aurora", "2", "24")
    assert "skipped run_info.json: Permission denied" in notes_of(r)




PROVENANCE_CAP = 16 << 20  # pragma: no mutate


@pytest.mark.parametrize("extra,system,nodes,gpus,skipped", [
    (0, "FromRunInfo", "2", "24", False),  # exactly 16 MiB: read
    (1, "FromConfig", "1", "4", True),     # one byte more: skipped, config.json answers
])
def test_provenance_file_cap_is_16_mib(tmp_path, extra, system, nodes, gpus, skipped):
    run = tmp_path / "r"
    _metrics(run)
    text = json.dumps({"Distributed": {**AURORA, "MACHINE": "FromRunInfo"}})
    (run / "run_info.json").write_bytes(
        text.encode() + b" " * (PROVENANCE_CAP + extra - len(text)))
    (run / "config.json").write_text(json.dumps(
        {"MACHINE": "FromConfig", "NUM_NODES": 1, "NGPUS": 4, "GPUS_PER_NODE": 4,
         "WORLD_SIZE_IN_USE": 4, "world_size": 4}))
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    assert (row["system"], row["nodes"], row["gpus"]) == (system, nodes, gpus)
    assert ("skipped run_info.json: larger than 16 MiB" in notes_of(r)) is skipped
# ------------------------------------------------------------ placement, and the flags


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


def test_flags_override_provenance(sunspot):
    row = one_row(run_cli(sunspot, "--config", "c", "--system", "Aurora", "--nodes", "2",
                          "--gpus", "24"))
    assert (row["system"], row["nodes"], row["gpus"]) == ("Aurora", "2", "24")


def test_allocation_nodes_exceeding_ranks_is_refused(tmp_path):
    run = _with_run_info(tmp_path, NUM_NODES="4", GPUS_PER_NODE="0", WORLD_SIZE_IN_USE="2",
                         world_size="2")
    line = error_line(run_cli(run, "--config", "c"))
    assert "NUM_NODES 4 exceeds the 2 ranks" in line and "pass --nodes N" in line


@pytest.mark.parametrize("extra", [[], ["--nodes", "2"]])
def test_gpus_not_a_multiple_of_gpus_per_node_is_allowed_but_noted(tmp_path, extra):
    run = good_run(tmp_path / "run", GPUS_PER_NODE="4", world_size="8", NUM_NODES="2")
    r = run_cli(run, "--config", "c", "--gpus", "6", *extra)
    row = one_row(r)
    assert (row["gpus"], row["nodes"]) == ("6", "2")
    assert "--gpus 6 is not a multiple of GPUS_PER_NODE 4" in notes_of(r)


EXCEEDS = "nodes {} exceeds gpus {}: some nodes ran no rank"
NOT_MULTIPLE = "--gpus {} is not a multiple of GPUS_PER_NODE {}"


@pytest.mark.parametrize("dist,flags,nodes,gpus,notes", [
    ({"GPUS_PER_NODE": "4"}, ["--nodes", "3", "--gpus", "2"], "3", "2",
     [EXCEEDS.format(3, 2), NOT_MULTIPLE.format(2, 4)]),
    ({"GPUS_PER_NODE": "4"}, ["--nodes", "2", "--gpus", "2"], "2", "2",
     [NOT_MULTIPLE.format(2, 4)]),
    ({"world_size": "2"}, ["--nodes", "3"], "3", "2", [EXCEEDS.format(3, 2)]),
    ({"world_size": "2", "NUM_NODES": "4", "GPUS_PER_NODE": "0"}, ["--gpus", "5"], "4", "5",
     []),
    ({"world_size": "2", "NUM_NODES": "3", "GPUS_PER_NODE": "0"}, ["--gpus", "2"], "3", "2",
     [EXCEEDS.format(3, 2)]),
    ({"GPUS_PER_NODE": "4"}, ["--nodes", "1", "--gpus", "8"], "1", "8", []),
    ({"GPUS_PER_NODE": "4"}, ["--nodes", "1", "--gpus", "6"], "1", "6",
     [NOT_MULTIPLE.format(6, 4)]),
    ({"GPUS_PER_NODE": "0"}, ["--nodes", "1", "--gpus", "6"], "1", "6", []),
    ({"GPUS_PER_NODE": "4", "world_size": "6", "NUM_NODES": "2"}, [], "2", "6", []),
], ids=["flags-exceed", "flags-equal", "nodes-flag-exceeds", "num-nodes-below-gpus-flag",
        "num-nodes-exceeds-gpus-flag", "multiple", "not-multiple", "gpn-0", "no-flags"])
def test_placement_notes_at_their_boundaries(tmp_path, dist, flags, nodes, gpus, notes):
    run = good_run(tmp_path / "run", **dist)
    r = run_cli(run, "--config", "c", *flags)
    row = one_row(r)
    assert (row["nodes"], row["gpus"]) == (nodes, gpus)
    derived = f"throughput_tokens_per_sec_per_gpu derived as global / {gpus} gpus (no per-GPU " \
        "throughput logged)"
    assert notes_of(r) == [*notes, derived]


# ----------------------------------------------------------- nodes from ranks per node


@pytest.mark.parametrize("command", [
    PPN_6,
    "['mpiexec', '--verbose', '--envall', '--np', '24', '--ppn', '6', 'python3', '-m', 'x']",
    "mpiexec --np 24 --ppn=6 python3 train.py",
])
def test_ranks_per_node_from_the_launch_line(tmp_path, command):
    r = run_cli(aurora_run(tmp_path, command), "--config", "c")
    row = one_row(r)
    assert (row["system"], row["nodes"], row["gpus"]) == ("Aurora", "4", "24")  # not 2
    tpg = [x["metrics"]["train/tps_per_gpu"] for x in launch_records()[1:]]
    assert row["throughput_tokens_per_sec"] == f"{statistics.median(t * 24 for t in tpg):.3f}"
    assert notes_of(r) == [MFU_NOTE]


@pytest.mark.parametrize(("command", "want"), [
    ("mpiexec --np 24 --ppn 6 python3 -m x --ppn 2", (6, "--ppn 6")),  # the script's own flag
    ("mpiexec -ppn 4 python3 x.py", (4, "-ppn 4")),
    ("mpirun --npernode 3 python3 x.py", (3, "--npernode 3")),
    ("mpirun -npernode=8 python3 x.py", (8, "-npernode 8")),
    ("srun --ntasks-per-node 4 python x.py", (4, "--ntasks-per-node 4")),
    ("torchrun --nproc_per_node=2 -m ezpz.examples.fsdp_tp", (2, "--nproc_per_node 2")),
    ("torchrun --nproc-per-node 8 train.py", (8, "--nproc-per-node 8")),
    ("['srun', '--ntasks-per-node=12', 'python3', 'x.py']", (12, "--ntasks-per-node 12")),
    ("mpirun -envall -np 2 python3 -m ezpz.examples.fsdp_tp", None),  # the fixtures' line
    ("/opt/src/ezpz/src/ezpz/examples/fsdp_tp.py", None),  # torchrun fixture: the script
    ("mpiexec --ppn 0 python3 x.py", None),
    ("mpiexec --ppn six python3 x.py", None),
    ('mpiexec "--ppn 6', None),  # unbalanced quote: words split on spaces, no value
    ("mpiexec --np 4 -- ./app --ppn 2", None),  # after "--": the program's own flags
    ("mpiexec ./train.py --ppn 2", None),  # after the script: its own flags
    ("mpiexec --ppn", None),  # a flag with no value at the end
    ("['mpiexec', '--ppn', 6, 'x']", None),  # a list, but not of strings: read as text
    ("mpiexec --ppn 1000000 python3 x.py", (1000000, "--ppn 1000000")),
    ("mpiexec --ppn 1000001 python3 x.py", None),
    ("mpiexec --ppn 1 python3 x.py", (1, "--ppn 1")),
    ("mpiexec --np 4 --ppn 2", (2, "--ppn 2")),  # the value is the last word
    ("mpiexec --ppn 6.0 python3 x.py", (6, "--ppn 6")),
    ("mpiexec --ppn=+6 python3 x.py", (6, "--ppn 6")),
])
def test_ranks_per_node_parser(command, want):
    assert ranks_per_node(command) == want


# ezpz 0.26.1's own launch builders (pbs.py, slurm.py, launch.py) write these lines.
SOPHIA = "mpirun -n=8 -N=4 --hostfile=/var/spool/pbs/aux/1 -x PATH -x LD_LIBRARY_PATH --verbose"
SLURM = "srun -u --verbose -N4 -n8 --gpus-per-node=2"
NO_SCHEDULER = "mpirun -np 16 --map-by ppr:4:node"
PBS = "mpiexec --envall --line-buffer --np=24 --ppn=6 --hostfile=/var/spool/pbs/aux/1"


@pytest.mark.parametrize(("command", "layout"), [
    (SOPHIA, LaunchLayout(per_node=4, per_node_flag="-N 4")),  # Open MPI: -N per node
    (SLURM, LaunchLayout(nodes=4, nodes_flag="-N 4")),  # srun: -N is nodes
    (NO_SCHEDULER, LaunchLayout(per_node=4, per_node_flag="--map-by ppr:4:node")),
    (PBS, LaunchLayout(per_node=6, per_node_flag="--ppn 6")),
    ("mpirun -N 3 python3 x.py", LaunchLayout(per_node=3, per_node_flag="-N 3")),
    ("mpiexec -N2 python3 x.py", LaunchLayout(per_node=2, per_node_flag="-N 2")),
    ("aprun -n 8 -N 4 ./x", LaunchLayout(per_node=4, per_node_flag="-N 4")),
    ("srun --nodes=2 -n 8 python x.py", LaunchLayout(nodes=2, nodes_flag="--nodes 2")),
    ("srun --nodes 3 --ntasks-per-node 4 python x.py",  # both: ranks per node win
     LaunchLayout(per_node=4, per_node_flag="--ntasks-per-node 4", nodes=3,
                  nodes_flag="--nodes 3")),
    ("env A=1 srun -N 2 python x.py", LaunchLayout(nodes=2, nodes_flag="-N 2")),
    ("mpirun --map-by=ppr:2:node:pe=4 -np 4 a.py", LaunchLayout(
        per_node=2, per_node_flag="--map-by ppr:2:node")),
    ("mpirun --map-by PPR:2:NODE -np 4 a.py", LaunchLayout(
        per_node=2, per_node_flag="--map-by ppr:2:node")),
    ("mpirun --map-by ppr:2:socket -np 4 a.py", LaunchLayout()),  # sockets per node unknown
    ("mpirun --map-by ppr:2:nodes -np 4 a.py", LaunchLayout()),
    ("srun -N 2-4 python x.py", LaunchLayout()),  # a range of nodes: no count
    ("torchrun -N 3 x.py", LaunchLayout()),  # -N means nothing to torchrun
    ("python3 -m x -N 4", LaunchLayout()),  # no launcher: the program's own -N
    ("mpirun python3 x.py -N 4", LaunchLayout()),  # after the program: its own flag
    ("['srun', '-N4', '-n8', 'python3', 'x.py']", LaunchLayout(nodes=4, nodes_flag="-N 4")),
    ("mpirun -N0 x", LaunchLayout()),
    ("mpirun -N 1000000 x", LaunchLayout(per_node=1000000, per_node_flag="-N 1000000")),
    ("mpirun -N 1000001 x", LaunchLayout()),
    ("mpirun -Nx x", LaunchLayout()),  # not a count attached
])
def test_launch_lines_as_ezpz_writes_them(command, layout):
    assert launch_layout(command) == layout


@pytest.mark.parametrize(("command", "ranks", "nodes", "how"), [
    # the three: jobs on 2, 4 and 4 nodes, once read as 1, 2 and 2
    (SOPHIA, "8", "2", "nodes 2 = ceil(8 / 4 ranks per node, -N 4 in EZPZ_RUN_COMMAND)"),
    (SLURM, "8", "4", "nodes 4 = -N 4 in EZPZ_RUN_COMMAND"),
    (NO_SCHEDULER, "16", "4",
     "nodes 4 = ceil(16 / 4 ranks per node, --map-by ppr:4:node in EZPZ_RUN_COMMAND)"),
    ("srun -N8 -n4 python x.py", "4", "4",
     "nodes 4 = 4 ranks, one per node (-N 8 in EZPZ_RUN_COMMAND)"),
])
def test_nodes_from_ezpz_s_own_launch_lines(tmp_path, command, ranks, nodes, how):
    run = tmp_path / "r"
    _metrics(run)
    write_run_info(run, MACHINE="M", GPUS_PER_NODE="8", NUM_NODES="8", world_size=ranks,
                   WORLD_SIZE_IN_USE=ranks, EZPZ_RUN_COMMAND=command)
    r = run_cli(run, "--config", "c", "--format", "json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert (data["row"]["nodes"], data["row"]["gpus"]) == (nodes, ranks)
    assert data["details"]["placement"]["nodes"] == how


def test_srun_nodes_beyond_the_allocation_are_refused(tmp_path):
    run = tmp_path / "r"
    _metrics(run)
    write_run_info(run, MACHINE="M", GPUS_PER_NODE="4", NUM_NODES="2", world_size="8",
                   WORLD_SIZE_IN_USE="8", EZPZ_RUN_COMMAND=SLURM)
    assert error_line(run_cli(run, "--config", "c")) == (
        "error: 8 ranks on 4 nodes (-N 4 in EZPZ_RUN_COMMAND) need more nodes than the job had "
        "(NUM_NODES 2); pass --nodes N")
    assert one_row(run_cli(run, "--config", "c", "--nodes", "2"))["nodes"] == "2"


def test_no_ranks_per_node_evidence_is_noted_with_the_allocation(tmp_path):
    r = run_cli(aurora_run(tmp_path, None), "--config", "c")
    row = one_row(r)
    assert (row["nodes"], row["gpus"]) == ("2", "24")
    assert notes_of(r) == [
        "nodes 2 assumes 12 ranks per node (GPUS_PER_NODE); the job had 4 nodes (NUM_NODES); "
        "pass --nodes 4 if the ranks were spread thinner", MFU_NOTE]


def test_nodes_matching_num_nodes_needs_no_note(tmp_path):
    r = run_cli(aurora_run(tmp_path, None, NUM_NODES="2"), "--config", "c")
    assert one_row(r)["nodes"] == "2"
    assert notes_of(r) == [MFU_NOTE]


@pytest.mark.parametrize(("command", "dist", "message"), [
    (PPN_6.replace("--ppn 6", "--ppn 3"), {},
     "24 ranks at 3 per node (--ppn 3 in EZPZ_RUN_COMMAND) need 8 nodes, but the job had "
     "NUM_NODES 4; pass --nodes N"),
    (None, {"NUM_NODES": "1"},
     "24 ranks at 12 per node (GPUS_PER_NODE) need 2 nodes, but the job had NUM_NODES 1; "
     "pass --nodes N"),
])
def test_nodes_above_num_nodes_is_refused(tmp_path, command, dist, message):
    r = run_cli(aurora_run(tmp_path, command, **dist), "--config", "c")
    assert error_line(r) == f"error: {message}"
    assert r.exit_code == 1
    assert one_row(run_cli(aurora_run(tmp_path / "b", command, **dist), "--config", "c",
                           "--nodes", "4"))["nodes"] == "4"


# --------------------------------------------------------- counts that cannot be right


@pytest.mark.parametrize("raw", ["1_000", "1e3", "nan", "-4", "1.5", "0x10", "four"])
def test_counts_must_be_plain_decimal(tmp_path, raw):
    run = _with_run_info(tmp_path, WORLD_SIZE_IN_USE=raw, world_size=None, NGPUS=None)
    line = error_line(run_cli(run, "--config", "c"))
    assert line.endswith("pass --gpus N")


@pytest.mark.parametrize("raw,gpus", [("12", "12"), (" 12 ", "12"), ("12.0", "12"), ("+8", "8")])
def test_plain_counts_are_read(tmp_path, raw, gpus):
    run = _with_run_info(tmp_path, WORLD_SIZE_IN_USE=raw, world_size=None)
    assert one_row(run_cli(run, "--config", "c"))["gpus"] == gpus


@pytest.mark.parametrize("dist,missing", [
    ({"world_size": "0", "WORLD_SIZE_IN_USE": "-2", "NGPUS": "0"}, "gpus"),
    ({"world_size": "-8", "WORLD_SIZE_IN_USE": None, "NGPUS": None}, "gpus"),
    ({"GPUS_PER_NODE": "-4", "NUM_NODES": "0"}, "nodes"),
    ({"GPUS_PER_NODE": "four", "NUM_NODES": "-1"}, "nodes"),
])
def test_counts_below_one_from_provenance_are_refused(tmp_path, dist, missing):
    run = good_run(tmp_path / "run", **dist)
    line = error_line(run_cli(run, "--config", "c"))
    assert f"cannot tell {missing} of this run" in line and f"pass --{missing} N" in line


def test_ignored_count_is_noted_when_another_source_answers(tmp_path):
    run = good_run(tmp_path / "run", world_size="-8", WORLD_SIZE_IN_USE="2")
    r = run_cli(run, "--config", "c")
    assert one_row(r)["gpus"] == "2"
    assert "ignored world_size='-8' from run_info.json: not a usable count" in notes_of(r)


@pytest.mark.parametrize("key,flag", [("world_size", "--gpus"), ("WORLD_SIZE_IN_USE", "--gpus"),
                                      ("NUM_NODES", "--nodes"), ("GPUS_PER_NODE", "--nodes"),
                                      ("NGPUS", "--gpus")])
@pytest.mark.parametrize("value", [HUGE, "1000001"])
def test_absurd_count_from_provenance_is_an_error_naming_the_flag(tmp_path, key, flag, value):
    dist = {key: value}
    if key == "NUM_NODES":
        dist["GPUS_PER_NODE"] = "0"  # so that NUM_NODES is the rule that reads it
    if key == "NGPUS":  # read only when no world size is recorded
        dist.update(WORLD_SIZE_IN_USE=None, world_size=None)
    run = good_run(tmp_path / "run", **dist)
    line = error_line(run_cli(run, "--config", "c"))
    shown = value if len(value) <= 20 else "100000000000... (401 digits)"
    assert line == (f"error: {key}={shown} from run_info.json is not a plausible count "
                    f"(more than 1,000,000); pass {flag} N")


def test_largest_plausible_count_is_accepted(tmp_path):
    run = good_run(tmp_path / "run", world_size="1000000", WORLD_SIZE_IN_USE="1000000",
                   GPUS_PER_NODE="12", NUM_NODES=None)
    row = one_row(run_cli(run, "--config", "c"))
    assert (row["gpus"], row["nodes"]) == ("1000000", "83334")
    assert row["throughput_tokens_per_sec_per_gpu"] == "0.001"  # 1002.0 / 1e6, kept non-zero


# ---------------- system from HOSTNAME (get_machine), and MACHINE that cannot be right


COPY = "a copy of ezpz.get_machine"


@pytest.mark.parametrize("hostname, machine", [
    ("frontier08321", "Frontier"),
    ("sophia-gpu-14", "Sophia"),
    ("thetagpu06", "ThetaGPU"),
    ("sunspot-uan-0010", "SunSpot"),
    ("x1921c0s3b0n0", "SunSpot"),
    ("aurora-uan-0012", "Aurora"),
    ("x4102c5s0b0n0.hostmgmt2102.cm.aurora.alcf.anl.gov", "Aurora"),
    ("login31", "Perlmutter"),
    ("nid001234", "Perlmutter"),
    ("x3006c0s13b1n0", "Polaris"),
    ("x3006c0s13b1n0.sirius.alcf.anl.gov", "Sirius"),
    ("localhost", "localhost"),          # unknown hosts come back unchanged, as in ezpz
    ("my-laptop.local", "my-laptop.local"),
    ("Aurora-uan-0012", "Aurora-uan-0012"),  # ezpz matches prefixes case-sensitively
    ("gpu-x4", "gpu-x4"),                    # a prefix, not a substring
])
def test_mapping_table(hostname, machine):
    assert machine_from_hostname(hostname) == machine


@pytest.mark.parametrize("pkg", ["absent", "namesake"])
def test_without_the_real_ezpz_our_copy_answers(ezpz_pkg, pkg):
    ezpz_pkg(pkg)
    assert get_machine("x4102c5s0b0n0") == ("Aurora", COPY)


def test_the_real_get_machine_is_asked_first(ezpz_pkg):
    ezpz_pkg("get_machine")
    assert get_machine("x4102c5s0b0n0") == ("Fake-x4102c5s0b0n0", "ezpz.get_machine")


@pytest.mark.parametrize("init", [
    "get_machine = 'not callable'\n",
    "def get_machine(hostname=None):\n    raise RuntimeError('no socket')\n",
    "def get_machine():\n    return 'Aurora'\n",            # takes no hostname
    "def get_machine(hostname=None):\n    return None\n",
    "def get_machine(hostname=None):\n    return '  '\n",
    "def __getattr__(name):\n    raise ImportError('torch')\n",  # lazy attribute that fails
    "print 'python 2 only'\n",                                  # namesake-era syntax
], ids=["not-callable", "raises", "no-arg", "returns-none", "returns-blank", "lazy-fails",
        "syntax-error"])
def test_an_odd_ezpz_falls_back_to_our_copy(ezpz_pkg, init):
    ezpz_pkg({"ezpz/__init__.py": init})
    assert get_machine("nid001234") == ("Perlmutter", COPY)


def _run_without_machine(tmp_path, **dist):
    run = tmp_path / "run"
    write_run_info(run, MACHINE=None, **dist)
    write_jsonl(run / "metrics-0.jsonl", [step(i, dt=0.5, loss=2.0 - i / 10) for i in range(1, 5)])
    return run


def test_export_names_the_system_from_hostname(tmp_path, ezpz_pkg):
    ezpz_pkg("absent")
    result = run_cli(_run_without_machine(tmp_path, HOSTNAME="x4102c5s0b0n0"), "--config", "c")
    assert one_row(result)["system"] == "Aurora"
    assert (f"note: no MACHINE recorded; system 'Aurora' from HOSTNAME 'x4102c5s0b0n0' by {COPY}; "
            "pass --system to override") in result.stderr.splitlines()


def test_export_says_when_the_hostname_names_no_facility(tmp_path, ezpz_pkg):
    ezpz_pkg("absent")
    result = run_cli(_run_without_machine(tmp_path, HOSTNAME="localhost"), "--config", "c")
    assert one_row(result)["system"] == "localhost"
    assert "which names no known facility" in result.stderr


def test_export_uses_the_real_get_machine_when_present(tmp_path, ezpz_pkg):
    ezpz_pkg("get_machine")
    result = run_cli(_run_without_machine(tmp_path, HOSTNAME="login31"), "--config", "c")
    assert one_row(result)["system"] == "Fake-login31"
    assert "by ezpz.get_machine" in result.stderr


def test_system_flag_and_machine_win_without_touching_ezpz(tmp_path, ezpz_pkg):
    ezpz_pkg("get_machine")
    run = _run_without_machine(tmp_path, HOSTNAME="login31")
    assert one_row(run_cli(run, "--config", "c", "--system", "Aurora"))["system"] == "Aurora"
    write_run_info(run, MACHINE="Polaris", HOSTNAME="login31")
    assert one_row(run_cli(run, "--config", "c"))["system"] == "Polaris"
    assert "ezpz" not in sys.modules


@pytest.mark.parametrize("machine", ["Aur\nora", "\ud800", "a\x00b", "x\u2028y"])
def test_unprintable_machine_is_ignored_and_system_asked_for(tmp_path, machine):
    """Regression (fuzzer): a line break split the row; a lone surrogate crashed the write."""
    run = good_run(tmp_path / "run", MACHINE=machine, HOSTNAME=None)
    assert "pass --system NAME" in error_line(run_cli(run, "--config", "c"))
    assert one_row(run_cli(run, "--config", "c", "--system", "Aurora"))["system"] == "Aurora"
    # With a HOSTNAME recorded, the bad MACHINE is treated as missing: get_machine(HOSTNAME).
    run = good_run(tmp_path / "run2", MACHINE=machine, HOSTNAME="x4102c5s0b0n0")
    result = run_cli(run, "--config", "c")
    assert one_row(result)["system"] == "Aurora"
    assert "ignored MACHINE=" in result.stderr


@pytest.mark.parametrize("machine", ["=HYPERLINK(\"x\")", "@SUM(1)", "-cmd", "+cmd",
                                     "-2+3+cmd|' /C calc'!A0", "-1+HYPERLINK(\"x\")", "+1e"])
def test_formula_like_machine_asks_for_system(tmp_path, machine):
    run = launch(tmp_path)
    edit_dist(run, MACHINE=machine)
    assert error_line(run_cli(run, "--config", "c")) == (
        f"error: MACHINE from run_info.json {machine[:40]!r} would run as a formula when the "
        "CSV is opened in a spreadsheet (it starts with =, +, -, @, a tab or a carriage return "
        "and is not a number); pass --system NAME")
    assert one_row(run_cli(run, "--config", "c", "--system", "Aurora"))["system"] == "Aurora"


@pytest.mark.parametrize("key", ["MACHINE", "HOSTNAME"])
def test_a_system_name_longer_than_a_cell_asks_for_system(tmp_path, key):
    """Regression: a 131,072-character MACHINE was exported, and then blocked every append."""
    run = launch(tmp_path)
    value = "A" * 200_000
    edit_dist(run, **({"MACHINE": value} if key == "MACHINE" else
                      {"MACHINE": None, "HOSTNAME": value}))
    assert error_line(run_cli(run, "--config", "c")) == (
        f"error: {key} from run_info.json is 200,000 characters long (a cell holds at most "
        "4,096); pass --system NAME")
    assert one_row(run_cli(run, "--config", "c", "--system", "Aurora"))["system"] == "Aurora"


@pytest.mark.parametrize("machine", ["A" * 4096, "-5", "+1.5"])
def test_a_system_name_at_the_cap_or_a_number_is_kept(tmp_path, machine):
    run = launch(tmp_path)
    edit_dist(run, MACHINE=machine)
    assert one_row(run_cli(run, "--config", "c"))["system"] == machine


# ------------------------------------------------------------ files that cannot answer


@pytest.mark.parametrize("name,data,note", [
    ("run_info.json", b"\xff\xfe{", "skipped run_info.json: not UTF-8"),
    ("run_info.json", b"{not json", "skipped run_info.json: not valid JSON"),
    ("run_info.json", b'{"Paths": {}}', "run_info.json has no 'Distributed' section"),
    ("config.json", b"[1, 2]", "skipped config.json: not a JSON object"),
])
def test_a_provenance_file_that_cannot_answer_is_named_in_a_note(tmp_path, name, data, note):
    run = tmp_path / "r"
    _metrics(run)
    (run / name).write_bytes(data)
    _report(run / "train" / "report-train.md", AURORA)
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    assert (row["system"], row["nodes"], row["gpus"]) == ("Aurora", "2", "24")
    assert note in notes_of(r)


def test_config_json_launch_line_as_a_list_gives_ranks_per_node(tmp_path):
    run = tmp_path / "r"
    _metrics(run)
    (run / "config.json").write_text(json.dumps({
        "MACHINE": "Aurora", "NUM_NODES": 4, "GPUS_PER_NODE": 12, "world_size": 24,
        "EZPZ_RUN_COMMAND": ["mpiexec", "--np", "24", "--ppn", "6", "python3", "x.py"]}))
    row = one_row(run_cli(run, "--config", "c"))
    assert (row["nodes"], row["gpus"]) == ("4", "24")  # ceil(24 / 6), not ceil(24 / 12)


def test_a_true_count_is_not_a_count(tmp_path):
    run = tmp_path / "r"
    _metrics(run)
    (run / "config.json").write_text(json.dumps(
        {"MACHINE": "M", "NUM_NODES": 1, "GPUS_PER_NODE": 0, "NGPUS": 4, "world_size": True}))
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    assert (row["nodes"], row["gpus"]) == ("1", "4")  # NGPUS: world_size true is no count
    assert "ignored world_size='True' from config.json: not a usable count" in notes_of(r)


def test_a_tier_that_adds_nothing_is_not_listed(tmp_path):
    run = tmp_path / "r"
    _metrics(run)
    write_run_info(run, HOSTNAME=None, NUM_NODES=None, NGPUS=None, GPUS_PER_NODE=None,
                   WORLD_SIZE_IN_USE=None, world_size=None, MACHINE="M")
    (run / "config.json").write_text(json.dumps({"MACHINE": "Other"}))
    line = error_line(run_cli(run, "--config", "c"))
    assert line == ("error: cannot tell gpus, nodes of this run (provenance: run_info.json); "
                    "pass --gpus N --nodes N")


# ------------------------------------------------------ every derivation, word for word


_FLAGS = ["--system", "S", "--gpus", "4", "--nodes", "2"]
_PPN_1 = "mpiexec --np 3 --ppn 1 python3 x.py"


@pytest.mark.parametrize("dist,flags,placement", [
    ({}, _FLAGS, ("system S = --system", "gpus 4 = --gpus", "nodes 2 = --nodes")),
    ({"MACHINE": None, "HOSTNAME": "x4102c5s0b0n0", "world_size": None,
      "WORLD_SIZE_IN_USE": "3", "NUM_NODES": "1", "GPUS_PER_NODE": None},
     [], (f"system Aurora = {COPY}(HOSTNAME 'x4102c5s0b0n0' from run_info.json)",
          "gpus 3 = max(WORLD_SIZE_IN_USE 3, world_size ?)",
          "nodes 1 = NUM_NODES (GPUS_PER_NODE unknown)")),
    ({"MACHINE": "Aurora", "WORLD_SIZE_IN_USE": None, "world_size": "24", "NUM_NODES": "4",
      "GPUS_PER_NODE": "12", "EZPZ_RUN_COMMAND": PPN_6},
     [], ("system Aurora = MACHINE from run_info.json",
          "gpus 24 = max(WORLD_SIZE_IN_USE ?, world_size 24)",
          "nodes 4 = ceil(24 / 6 ranks per node, --ppn 6 in EZPZ_RUN_COMMAND)")),
    ({"MACHINE": "M", "world_size": "3", "NUM_NODES": "3", "EZPZ_RUN_COMMAND": _PPN_1},
     [], ("system M = MACHINE from run_info.json",
          "gpus 3 = max(WORLD_SIZE_IN_USE 1, world_size 3)",
          "nodes 3 = ceil(3 / 1 rank per node, --ppn 1 in EZPZ_RUN_COMMAND)")),
    ({"MACHINE": "M", "world_size": "24", "NUM_NODES": "2", "GPUS_PER_NODE": "12"},
     [], ("system M = MACHINE from run_info.json",
          "gpus 24 = max(WORLD_SIZE_IN_USE 1, world_size 24)",
          "nodes 2 = ceil(24 / GPUS_PER_NODE 12)")),
    # An unreadable GPUS_PER_NODE is unknown, not 0.
    ({"MACHINE": "M", "GPUS_PER_NODE": "four"}, [],
     ("system M = MACHINE from run_info.json", "gpus 1 = max(WORLD_SIZE_IN_USE 1, world_size 1)",
      "nodes 1 = NUM_NODES (GPUS_PER_NODE unknown)")),
], ids=["flags", "hostname-num-nodes", "ppn-plural", "ppn-singular", "gpus-per-node",
        "gpn-unreadable"])
def test_every_placement_derivation_word_for_word(tmp_path, ezpz_pkg, dist, flags, placement):
    ezpz_pkg("absent")
    run = tmp_path / "r"
    _metrics(run)
    write_run_info(run, **dist)
    r = run_cli(run, "--config", "c", "--format", "json", *flags)
    assert r.exit_code == 0, r.stderr
    got = json.loads(r.stdout)["details"]["placement"]
    assert (got["system"], got["gpus"], got["nodes"]) == placement


def test_hostname_naming_no_facility_note_in_full(tmp_path, ezpz_pkg):
    ezpz_pkg("absent")
    r = run_cli(_run_without_machine(tmp_path, HOSTNAME="localhost"), "--config", "c")
    assert one_row(r)["system"] == "localhost"
    assert notes_of(r)[0] == (f"no MACHINE recorded; system 'localhost' from HOSTNAME "
                              f"'localhost' by {COPY}, which names no known facility; pass "
                              "--system to override")


@pytest.mark.parametrize("key", ["MACHINE", "HOSTNAME"])
def test_an_unprintable_name_alone_asks_for_system(tmp_path, key):
    dist = {"MACHINE": None, "HOSTNAME": None, key: "Aur\nora"}
    run = good_run(tmp_path / "run", **dist)
    r = run_cli(run, "--config", "c", "--system", "Aurora")
    assert one_row(r)["system"] == "Aurora"  # --system: nothing is read, nothing is noted
    assert not any("ignored" in n for n in notes_of(r))
    r = run_cli(run, "--config", "c")
    assert error_line(r) == ("error: cannot tell system of this run (provenance: run_info.json); "
                             "pass --system NAME")


@pytest.mark.parametrize("key", ["MACHINE", "HOSTNAME"])
def test_unprintable_name_is_noted_when_another_answers(tmp_path, ezpz_pkg, key):
    ezpz_pkg("absent")
    # An unprintable HOSTNAME with MACHINE recorded, or the other way round.
    other = {"MACHINE": "Aurora"} if key == "HOSTNAME" else {"HOSTNAME": "x4102c5s0b0n0"}
    run = good_run(tmp_path / "run", **{key: "a\x00b"}, **other)
    r = run_cli(run, "--config", "c")
    assert one_row(r)["system"] == "Aurora"
    assert (f"ignored {key}='a\\x00b' from run_info.json: not a single line of printable text"
            in notes_of(r))


@pytest.mark.parametrize("host", ["=cmd|'/c calc'!A1", "@SUM(1)"])
def test_formula_like_hostname_asks_for_system(tmp_path, ezpz_pkg, host):
    ezpz_pkg("absent")
    run = _run_without_machine(tmp_path, HOSTNAME=host)
    assert error_line(run_cli(run, "--config", "c")) == (
        f"error: HOSTNAME from run_info.json {host!r} would run as a formula when the CSV is "
        "opened in a spreadsheet (it starts with =, +, -, @, a tab or a carriage return and is "
        "not a number); pass --system NAME")
    assert one_row(run_cli(run, "--config", "c", "--system", "Aurora"))["system"] == "Aurora"


def test_allocation_nodes_exceeding_ranks_error_in_full(tmp_path):
    run = _with_run_info(tmp_path, NUM_NODES="4", GPUS_PER_NODE="0", WORLD_SIZE_IN_USE="1",
                         world_size="1")
    assert error_line(run_cli(run, "--config", "c")) == (
        "error: NUM_NODES 4 exceeds the 1 rank that ran: it describes the allocation, not the "
        "run; pass --nodes N")


def test_missing_flags_name_every_tier_that_answered(tmp_path):
    run = tmp_path / "r"
    _metrics(run)
    write_run_info(run, HOSTNAME=None, NUM_NODES=None, NGPUS=None, GPUS_PER_NODE=None,
                   WORLD_SIZE_IN_USE=None, world_size=None, MACHINE="M")
    (run / "config.json").write_text(json.dumps({"world_size": 2}))
    assert error_line(run_cli(run, "--config", "c")) == (
        "error: cannot tell nodes of this run (provenance: run_info.json, config.json); "
        "pass --nodes N")


@pytest.mark.parametrize("heading,nodes", [("### Distributed", "2"), ("###XDistributed", None)])
def test_only_the_distributed_heading_opens_the_section(tmp_path, heading, nodes):
    run = tmp_path / "r"
    _metrics(run)
    report = run / "train" / "report-train.md"
    report.parent.mkdir(parents=True)
    report.write_text(f"# History Report\n\n{heading}\n\n- **MACHINE**: Aurora\n"
                      "- **NUM_NODES**: 2\n- **world_size**: 24\n")
    r = run_cli(run, "--config", "c")
    if nodes is None:
        assert error_line(r) == ("error: cannot tell system, gpus, nodes of this run (provenance: "
                                 "no run_info.json, config.json or report with ### Distributed "
                                 "found); pass --system NAME --gpus N --nodes N")
    else:
        assert one_row(r)["nodes"] == nodes


# --------------------------------------------------------- the job's duration, for the hook


@pytest.mark.parametrize(("timings", "seconds"), [
    ({"timings/end-to-end": "61.50s"}, 61.5),
    ({"main/total": " 61.5 s "}, 61.5),
    ({"main/total": "12", "timings/end-to-end": "13.00s"}, 13.0),  # end-to-end first
    ({"timings/end-to-end": "0.00s"}, None),
    ({"timings/end-to-end": "-3.00s"}, None),
    ({"timings/end-to-end": "1e3s"}, None),
    ({"timings/end-to-end": 61.5}, 61.5),  # a number, not ezpz's text: still a duration
    ({"main/setup_torch": "3.00s"}, None),
    ("61.5s", None),
    (None, None),
])
def test_job_duration_from_run_info_timings(tmp_path, timings, seconds):
    from ezpz_amsc.run.placement import job_duration_sec

    info = write_run_info(tmp_path)
    if timings is not None:
        info.write_text(json.dumps({**json.loads(info.read_text()), "Timings": timings}))
    assert job_duration_sec(info) == seconds


def test_job_duration_of_a_broken_run_info_is_unknown(tmp_path):
    from ezpz_amsc.run.placement import job_duration_sec

    (tmp_path / "run_info.json").write_text("{not json")
    assert job_duration_sec(tmp_path / "run_info.json") is None
    assert job_duration_sec(tmp_path / "missing.json") is None


# --------------------------------------------------------------------- tensor parallel


@pytest.mark.parametrize(("command", "tp"), [
    ("mpiexec --np=48 --ppn=12 python3 -m ezpz.examples.fsdp_tp --tp 2", (2, "--tp 2")),
    ("python3 -m ezpz.examples.fsdp_tp --tp=4 --batch-size 2", (4, "--tp 4")),
    ("['mpiexec', '--np=8', 'python3', 'train.py', '--tensor-model-parallel-size', '8']",
     (8, "--tensor-model-parallel-size 8")),
    ("torchrun x.py --tp 2 --tp 4", (4, "--tp 4")),  # the last given wins
    ("torchrun x.py --tp 2 --tp zero", (2, "--tp 2")),  # a value that is no count is skipped
    ("python3 -m ezpz.examples.fsdp_tp --tp", None), ("python3 train.py --tpx 2", None),
    ("python3 train.py --tp 0", None), ("/home/user/src/ezpz/src/ezpz/examples/fsdp_tp.py", None),
])
def test_tensor_parallel_from_the_launch_line(command, tp):
    assert launch_layout(command).tp == tp


def test_every_tp_spelling_is_read():
    assert [launch_layout(f"python3 t.py {f} 2").tp for f in TP_FLAGS] == [
        (2, f"{f} 2") for f in TP_FLAGS]


def test_the_placement_carries_tp_from_ezpz_run_command():
    prov = Provenance(values={"MACHINE": "Aurora", "world_size": "48", "GPUS_PER_NODE": "12",
                              "EZPZ_RUN_COMMAND": "mpiexec --np=48 --ppn=12 python3 -m "
                                                  "ezpz.examples.fsdp_tp --tp 2"},
                      source=dict.fromkeys(("MACHINE", "world_size", "GPUS_PER_NODE",
                                            "EZPZ_RUN_COMMAND"), "run_info.json"))
    got = resolve_placement(prov, None, None, None)
    assert (got.system, got.nodes, got.gpus, got.tp) == ("Aurora", 4, 48, (2, "--tp 2"))
    del prov.values["EZPZ_RUN_COMMAND"]
    assert resolve_placement(prov, None, None, None).tp is None


@pytest.mark.parametrize("command, want", [
    ("GRAD_ACC=8 mpiexec --ppn 4 python3 accum.py --tp 2",
     LaunchLayout(per_node=4, per_node_flag="--ppn 4", tp=(2, "--tp 2"),
                  accumulation=(8, "GRAD_ACC"))),
    ("['mpiexec', '--ppn', '6', 'python3', 'hf.py', '--gradient_accumulation_steps', '4']",
     LaunchLayout(per_node=6, per_node_flag="--ppn 6",
                  accumulation=(4, "--gradient_accumulation_steps"))),
    # the program's own --ppn is not the launcher's; its --tp is the program's
    ("mpiexec -n 8 python3 t.py --ppn 2 --tp 4 --grad-accum=1",
     LaunchLayout(tp=(4, "--tp 4"), accumulation=(1, "--grad-accum"))),
])
def test_one_pass_over_the_launch_line_gives_layout_tp_and_accumulation(command, want):
    assert launch_layout(command) == want


def test_the_placement_keeps_the_launch_line_it_read():
    prov = Provenance(values={"MACHINE": "Aurora", "world_size": "24",
                              "EZPZ_RUN_COMMAND": "mpiexec --ppn 6 python3 t.py --grad-accum 8"},
                      source=dict.fromkeys(("MACHINE", "world_size", "EZPZ_RUN_COMMAND"),
                                           "run_info.json"))
    got = resolve_placement(prov, None, None, None)
    assert (got.nodes, got.per_node, got.launch.accumulation, got.tp) == (
        4, (6, "--ppn"), (8, "--grad-accum"), None)
