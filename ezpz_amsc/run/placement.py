"""Where the run ran — system, nodes, gpus (docs/numbers.md, "Provenance").

Three tiers, first hit wins per key: ``run_info.json`` → ``config.json`` →
the ``### Distributed`` section of a report. Explicit flags beat all of them.
Ranks are never counted from rank files: ranks ≠ GPUs in general.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ezpz_amsc.errors import AmscError, reason
from ezpz_amsc.fs.read import read_capped
from ezpz_amsc.results.schema import MAX_COUNT, MAX_PROVENANCE_BYTES, cell_problem
from ezpz_amsc.run.layout import RunFiles, rel_to
from ezpz_amsc.text import Message, Text, digits, joined, opt, plural

KEYS = ("MACHINE", "HOSTNAME", "NUM_NODES", "NGPUS", "GPUS_PER_NODE",
        "WORLD_SIZE_IN_USE", "world_size", "EZPZ_RUN_COMMAND")
# The flag that settles each count when provenance cannot.
COUNT_OPTION = {"NUM_NODES": "nodes", "GPUS_PER_NODE": "nodes", "NGPUS": "gpus",
                "WORLD_SIZE_IN_USE": "gpus", "world_size": "gpus"}
_COUNT = re.compile(r"\s*\+?(\d+)(?:\.0*)?\s*\Z")
# Launcher flags that give ranks per node: mpiexec/mpirun, srun, torchrun.
PPN_FLAGS = ("--ppn", "-ppn", "--npernode", "-npernode", "--ntasks-per-node",
             "--nproc_per_node", "--nproc-per-node")
# ``-N`` means ranks per node to Open MPI's mpirun (ezpz's Sophia line: ``mpirun -n=8
# -N=4``) and Cray's aprun, but nodes to srun (ezpz's Slurm line: ``srun -N4 -n8``).
PER_NODE_N_LAUNCHERS = ("mpirun", "mpiexec", "orterun", "prterun", "aprun")
NODES_N_LAUNCHERS = ("srun",)
NODES_FLAGS = ("--nodes",)  # srun's long form of -N
# Open MPI's placement policy, ``--map-by ppr:4:node`` (ezpz's line without a scheduler).
_PPR = re.compile(r"ppr:(\d+):node(?::|\Z)", re.IGNORECASE)
# The program's tensor-parallel size: ezpz's fsdp_tp ``--tp N``, and the spellings of other
# trainers (Megatron's ``--tensor-model-parallel-size``, vLLM-style ``--tensor-parallel-size``).
TP_FLAGS = ("--tp", "--tp-size", "--tp_size", "--tensor-parallel-size",
            "--tensor_parallel_size", "--tensor-model-parallel-size",
            "--tensor_model_parallel_size")
# Gradient accumulation asked for on the launch line: the flags and variables of the
# trainers ezpz launches (hf's --gradient_accumulation_steps, --grad-accum, GRAD_ACC=),
# never a word that merely contains "accum". Its count follows a space, "=", or the "', '"
# of an argv list written as text.
ACCUMULATION_FLAG = re.compile(
    r"(?<![\w-])(--grad(?:ient)?[-_]accum(?:ulation)?(?:[-_]steps)?|"
    r"GRAD(?:IENT)?_ACC(?:UM(?:ULATION)?)?(?:_STEPS)?)(?:=|\s+|'\s*,\s*')(\d+)(?!\w)")
_BULLET = re.compile(r"^\s*[-*]\s+\*\*(?P<key>[^*]+)\*\*:\s*(?P<val>.*?)\s*$")


@dataclass
class Provenance:
    """What the run's own files say of where it ran, each value with the file it came from."""

    values: dict[str, str] = field(default_factory=dict)
    source: dict[str, str] = field(default_factory=dict)  # key -> "run_info.json (path)"
    tiers: list[str] = field(default_factory=list)  # files that contributed
    notes: list[Text] = field(default_factory=list)


@dataclass
class Placement:
    """The row's system, nodes and gpus, and how each was decided."""

    system: str
    nodes: int
    gpus: int
    how: dict[str, Text]  # column -> one-line derivation, for --explain
    gpus_source: str = "flag"  # "flag", "world_size" (the ranks that ran) or "NGPUS" (allocation)
    # column (and "ranks_per_node") -> the provenance keys it came from, each with the count
    # read (None for MACHINE, HOSTNAME, and EZPZ_RUN_COMMAND's flag); absent: an option.
    used: dict[str, list[tuple[str, int | None]]] = field(default_factory=dict)
    per_node: tuple[int, str] | None = None  # ranks per node, and the key or launch flag (--ppn)
    launch: LaunchLayout = field(default_factory=lambda: LaunchLayout())  # EZPZ_RUN_COMMAND's

    @property
    def tp(self) -> tuple[int, str] | None:
        """The tensor-parallel size the launch line gives, and its flag: ``(2, "--tp 2")``."""
        return self.launch.tp


@dataclass(frozen=True)
class LaunchLayout:
    """What a launch line says of how the job ran: where the ranks went (ranks per node, or
    nodes), the program's tensor-parallel size and its gradient accumulation."""

    per_node: int | None = None
    per_node_flag: str = ""  # e.g. "--ppn 6", for messages
    nodes: int | None = None  # srun -N: nodes directly
    nodes_flag: str = ""
    tp: tuple[int, str] | None = None  # (2, "--tp 2"): TP_FLAGS, the last given
    accumulation: tuple[int, str] | None = None  # (8, "GRAD_ACC"): ACCUMULATION_FLAG's first


def ranks_per_node(command: str) -> tuple[int, str] | None:
    """Ranks per node from a launch line, and the flag that said so (see :func:`launch_layout`)."""
    got = launch_layout(command)
    return (got.per_node, got.per_node_flag) if got.per_node is not None else None


def launch_layout(command: str) -> LaunchLayout:
    """Ranks per node (or nodes) from a launch line, a shell string or a Python list repr.

    The forms ezpz's own launch builders write, and the usual ones by hand:
    ``--ppn N`` and its spellings (:data:`PPN_FLAGS`), Open MPI's ``-N N`` /
    ``-N=N`` and ``--map-by ppr:N:node``, srun's ``-N N`` / ``-NN`` /
    ``--nodes N`` (nodes, not ranks per node). Only the launcher's own options
    count: scanning stops at the program it starts (``python...``, a ``.py``
    file, ``--``), whose arguments are not its. The last value given wins. The program's
    tensor-parallel size (:data:`TP_FLAGS`) and gradient accumulation
    (:data:`ACCUMULATION_FLAG`) are read from the whole line.
    """
    words = _launch_words(command)
    launcher = ""
    per_node: tuple[int, str] | None = None
    nodes: tuple[int, str] | None = None
    tp: tuple[int, str] | None = None
    in_program = False
    for i, word in enumerate(words):
        flag, value = _option(words, i)
        if flag in TP_FLAGS:
            tp = _counted(value, flag) or tp
        base = os.path.basename(word)
        if i and (word == "--" or base.startswith("python") or word.endswith(".py")):
            in_program = True
        if in_program:
            continue
        if not launcher and base in (*PER_NODE_N_LAUNCHERS, *NODES_N_LAUNCHERS):
            launcher = base
            continue
        if flag in PPN_FLAGS:
            per_node = _counted(value, flag) or per_node
        elif flag == "--map-by" and (m := _PPR.match(value)) and (n := _counted(m.group(1))):
            per_node = (n[0], f"--map-by ppr:{n[0]}:node")
        elif flag == "-N" and launcher in PER_NODE_N_LAUNCHERS:
            per_node = _counted(value, "-N") or per_node
        elif (flag == "-N" and launcher in NODES_N_LAUNCHERS) or flag in NODES_FLAGS:
            nodes = _counted(value, flag) or nodes
    accum = ACCUMULATION_FLAG.search(command)
    return LaunchLayout(per_node=per_node[0] if per_node else None,
                        per_node_flag=per_node[1] if per_node else "",
                        nodes=nodes[0] if nodes else None, nodes_flag=nodes[1] if nodes else "",
                        tp=tp,
                        accumulation=(int(accum.group(2)), accum.group(1)) if accum else None)


def _launch_words(command: str) -> list[str]:
    import shlex

    text = command.strip()
    if text.startswith("["):
        import ast

        try:
            parsed = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            parsed = None
        if isinstance(parsed, list) and all(isinstance(w, str) for w in parsed):
            return parsed
    try:
        return shlex.split(text)
    except ValueError:  # unbalanced quotes
        return text.split()


def _option(words: list[str], i: int) -> tuple[str, str]:
    """The option at ``words[i]`` and its value: ``--ppn=6``, ``--ppn 6``, or ``-N4``."""
    word = words[i]
    flag, eq, value = word.partition("=")
    if eq:
        return flag, value
    if len(word) > 2 and word[0] == "-" and word[1].isalpha() and word[2:].isdigit():
        return word[:2], word[2:]  # a short option with its value attached (srun -N4)
    return word, words[i + 1] if i + 1 < len(words) else ""


def _counted(value: str, flag: str = "") -> tuple[int, str] | None:
    """A count from 1 to MAX_COUNT, with ``flag N`` for messages; None for anything else."""
    m = _COUNT.match(value)
    if m and 0 < int(m.group(1)) <= MAX_COUNT:
        return int(m.group(1)), f"{flag} {int(m.group(1))}"
    return None


def _read_text(path: Path, notes: list[Text]) -> str | None:
    try:
        data = read_capped(path, MAX_PROVENANCE_BYTES)
    except OSError as e:
        notes.append(f"skipped {path.name}: {reason(e)}")
        return None
    if len(data) > MAX_PROVENANCE_BYTES:
        notes.append(f"skipped {path.name}: larger than {MAX_PROVENANCE_BYTES >> 20} MiB")
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        notes.append(f"skipped {path.name}: not UTF-8")
        return None


def _scalar(v: Any) -> str | None:
    """Provenance values as strings, as ezpz writes them in run_info.json."""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, (int, float, str)):
        return str(v).strip()
    return None


def _from_json(path: Path, section: str | None, notes: list[Text]) -> dict[str, str] | None:
    text = _read_text(path, notes)
    if text is None:
        return None
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        notes.append(f"skipped {path.name}: not valid JSON")
        return None
    if section is not None:
        doc = doc.get(section) if isinstance(doc, dict) else None
    if not isinstance(doc, dict):
        if section is not None:
            notes.append(f"{path.name} has no {section!r} section")
        else:
            notes.append(f"skipped {path.name}: not a JSON object")
        return None
    out = {}
    command = doc.get("EZPZ_RUN_COMMAND")
    if isinstance(command, list):  # config.json keeps native types: the argv list
        doc = {**doc, "EZPZ_RUN_COMMAND": repr([str(w) for w in command])}
    for k in KEYS:
        s = _scalar(doc.get(k))
        if s:
            out[k] = s
    return out


def _from_report(path: Path, notes: list[Text]) -> dict[str, str] | None:
    text = _read_text(path, notes)
    if text is None:
        return None
    out: dict[str, str] = {}
    inside = False
    for line in text.splitlines():
        if line.startswith("#"):
            if inside:
                break
            inside = line.strip().lstrip("#").strip() == "Distributed"
            continue
        if inside:
            m = _BULLET.match(line)
            if m and m.group("key").strip() in KEYS and m.group("val"):
                out[m.group("key").strip()] = m.group("val")
    return out if out else None


def load_provenance(files: RunFiles) -> Provenance:
    """Merge the three tiers, first hit per key; never reads more than needed."""
    prov = Provenance()
    tiers: list[tuple[str, list[Path]]] = [
        ("run_info.json", files.run_info),
        ("config.json", files.config),
        ("report", files.reports),
    ]
    for label, paths in tiers:
        if all(k in prov.values for k in KEYS):
            break
        for path in paths:
            if label == "run_info.json":
                got = _from_json(path, "Distributed", prov.notes)
            elif label == "config.json":
                got = _from_json(path, None, prov.notes)
            else:
                got = _from_report(path, prov.notes)
            if not got:
                continue
            rel = rel_to(files.root, path)
            used = False
            for k, v in got.items():
                if k not in prov.values:
                    prov.values[k] = v
                    prov.source[k] = rel
                    used = True
            if used:
                prov.tiers.append(rel)
            break  # one file per tier: the one next to the metrics
    return prov


def _count(prov: Provenance, key: str, allow_zero: bool = False) -> int | None:
    """A positive integer count from provenance; notes and ignores anything else."""
    raw = prov.values.get(key)
    if raw is None:
        return None
    # Plain decimal digits only ("12", "12.0"): float() would also take "1_000",
    # "1e3" or " nan ", none of which ezpz writes for a count.
    m = _COUNT.match(raw)
    val = int(m.group(1)) if m else -1
    if val < 0 or (val == 0 and not allow_zero):
        prov.notes.append(f"ignored {key}={raw!r} from {prov.source[key]}: not a usable count")
        return None
    if val > MAX_COUNT:
        raise AmscError(f"{key}={digits(raw.strip())} from {prov.source[key]} is not a "
                        f"plausible count (more than {MAX_COUNT:,}); pass "
                        + opt(COUNT_OPTION[key], "N"))
    return val


def _check_system_cell(system: str, key: str, source: str) -> None:
    """The system cell taken from ``key`` must be one a results file can hold."""
    why = cell_problem(system)
    if why:
        raise AmscError(f"{key} from {source} {why}; pass " + opt("system", "NAME"))


def resolve_placement(prov: Provenance, system: str | None, nodes: int | None,
                      gpus: int | None) -> Placement:
    """Apply flags, then the provenance rules; one error naming every missing flag."""
    how: dict[str, Text] = {}
    used: dict[str, list[tuple[str, int | None]]] = {}
    missing: list[Message] = []

    # ``how`` reads "column value = where it came from", e.g. for --explain:
    # "gpus 12 = max(WORLD_SIZE_IN_USE 12, world_size 12)".
    gpus_flag, nodes_flag = gpus is not None, nodes is not None
    command = prov.values.get("EZPZ_RUN_COMMAND")
    launch = launch_layout(command) if command else LaunchLayout()
    for key in ("MACHINE", "HOSTNAME"):
        val = prov.values.get(key)
        if val and not system and not val.isprintable():
            # A line break would split the row; a lone surrogate cannot even be written.
            prov.notes.append(f"ignored {key}={val!r} from {prov.source[key]}: "
                              "not a single line of printable text")
            del prov.values[key]
    if system:
        how["system"] = f"system {system} = " + opt("system")
    elif prov.values.get("MACHINE"):
        system = prov.values["MACHINE"]
        _check_system_cell(system, "MACHINE", prov.source["MACHINE"])
        how["system"] = f"system {system} = MACHINE from {prov.source['MACHINE']}"
        used["system"] = [("MACHINE", None)]
    elif prov.values.get("HOSTNAME"):
        from ezpz_amsc._ezpz import get_machine

        host = prov.values["HOSTNAME"]
        system, by = get_machine(host)
        _check_system_cell(system, "HOSTNAME", prov.source["HOSTNAME"])
        how["system"] = (f"system {system} = {by}(HOSTNAME {host!r} from "
                         f"{prov.source['HOSTNAME']})")
        used["system"] = [("HOSTNAME", None)]
        known = "" if system != host else ", which names no known facility"
        prov.notes.append(f"no MACHINE recorded; system {system!r} from HOSTNAME {host!r} "
                          f"by {by}{known}; pass " + opt("system") + " to override")
    else:
        missing.append(opt("system", "NAME"))

    # Counts are parsed only when a rule needs them, so an irrelevant odd value
    # (NGPUS=0 on a CPU host) raises no note.
    wsiu = None if gpus is not None else _count(prov, "WORLD_SIZE_IN_USE")
    ws = None if gpus is not None else _count(prov, "world_size")
    gpn = None if nodes is not None else _count(prov, "GPUS_PER_NODE", allow_zero=True)

    gpus_source = "flag"
    if gpus is not None:
        how["gpus"] = f"gpus {gpus} = " + opt("gpus")
    elif wsiu is not None or ws is not None:
        # Under torchrun WORLD_SIZE_IN_USE reads 1 while world_size is right.
        gpus = max(x for x in (wsiu, ws) if x is not None)
        gpus_source = "world_size"
        used["gpus"] = [(k, v) for k, v in (("WORLD_SIZE_IN_USE", wsiu), ("world_size", ws))
                        if v is not None]
        how["gpus"] = (f"gpus {gpus} = max(WORLD_SIZE_IN_USE {wsiu if wsiu is not None else '?'}"
                       f", world_size {ws if ws is not None else '?'})")
    elif (ngpus := _count(prov, "NGPUS")) is not None:
        gpus = ngpus
        gpus_source = "NGPUS"
        used["gpus"] = [("NGPUS", ngpus)]
        how["gpus"] = f"gpus {gpus} = NGPUS (the allocation; no world size recorded)"
    else:
        missing.append(opt("gpus", "N"))

    if nodes is not None:
        how["nodes"] = f"nodes {nodes} = " + opt("nodes")
    elif gpus is not None and (nodes := _nodes_from_ranks(prov, launch, gpus, gpn, how,
                                                           used)) is not None:
        pass
    elif (num_nodes := _count(prov, "NUM_NODES")) is not None:
        nodes = num_nodes
        used["nodes"] = [("NUM_NODES", num_nodes)]
        why = "GPUS_PER_NODE is 0" if gpn == 0 else "GPUS_PER_NODE unknown"
        how["nodes"] = f"nodes {nodes} = NUM_NODES ({why})"
        if gpus is not None and nodes > gpus and not gpus_flag:
            raise AmscError(
                f"NUM_NODES {nodes} exceeds the {plural(gpus, 'rank')} that ran: it describes "
                "the allocation, not the run; pass " + opt("nodes", "N")
            )
    else:
        missing.append(opt("nodes", "N"))

    if missing:
        looked = ", ".join(prov.tiers) if prov.tiers else (
            "no run_info.json, config.json or report with ### Distributed found")
        raise AmscError(
            f"cannot tell {', '.join(m.options()[0].name for m in missing)} of this run "
            f"(provenance: {looked}); pass " + joined(" ", missing)
        )
    assert system is not None and nodes is not None and gpus is not None
    if gpn is None:
        gpn = _count(prov, "GPUS_PER_NODE", allow_zero=True)
    if nodes > gpus and (nodes_flag or gpus_flag):
        prov.notes.append(f"nodes {nodes} exceeds gpus {gpus}: some nodes ran no rank")
    if gpus_flag and gpn and gpus % gpn:
        prov.notes.append(opt("gpus", gpus) + f" is not a multiple of GPUS_PER_NODE {gpn}")
    per_node = None
    if "ranks_per_node" in used:
        key, n = used["ranks_per_node"][0]
        assert n is not None
        per_node = (n, key if key != "EZPZ_RUN_COMMAND" else launch.per_node_flag.split()[0])
    return Placement(system=system, nodes=nodes, gpus=gpus, how=how, gpus_source=gpus_source,
                     used=used, per_node=per_node, launch=launch)


def placement_sources(placement: Placement, prov: Provenance) -> dict[str, Any]:
    """What the row's system, nodes, gpus and ranks per node came from, for a provenance
    record: ``{"value": 2, "option": "gpus"}`` for a value passed as an option, else
    ``{"value": 2, "from": [{"file": "run_info.json", "field": "world_size", "value": 2}]}``.

    Only what the row used, in forms that hold no text from the run: the counts read
    (integers), the field's name and the file's path inside the run; the launch line
    is named by the flag that gave the ranks per node (``--ppn``), never copied.
    """
    out: dict[str, Any] = {}
    values: dict[str, int | str | None] = {
        "system": placement.system, "nodes": placement.nodes, "gpus": placement.gpus,
        "ranks_per_node": placement.per_node[0] if placement.per_node else None}
    for column, value in values.items():
        if column not in placement.used:
            if column != "ranks_per_node":
                out[column] = {"value": value, "option": column}
            continue
        came = []
        for key, count in placement.used[column]:
            entry: dict[str, Any] = {"file": prov.source.get(key), "field": key}
            if count is not None:
                entry["value"] = count
            if key == "EZPZ_RUN_COMMAND" and placement.per_node and column == "ranks_per_node":
                entry["flag"] = placement.per_node[1]
            came.append(entry)
        out[column] = {"value": value, "from": came}
    return out


def _nodes_from_ranks(prov: Provenance, layout: LaunchLayout, gpus: int, gpn: int | None,
                      how: dict[str, Text], used: dict[str, list[tuple[str, int | None]]]
                      ) -> int | None:
    """ceil(ranks / ranks per node), from the launch line, else from GPUS_PER_NODE; or
    the nodes the launch line names (srun ``-N``).

    ezpz runs fewer ranks per node than GPUS_PER_NODE when asked (``--ppn 6``
    on a 12-tile Aurora node), so the launch line wins. NUM_NODES is the
    allocation: the result may be below it (with a note when nothing says how
    the ranks were spread), never above it.
    """
    if layout.per_node is not None:
        per_node, why = layout.per_node, f"{layout.per_node_flag} in EZPZ_RUN_COMMAND"
    elif layout.nodes is not None:
        used["nodes"] = [("EZPZ_RUN_COMMAND", None)]
        return _launched_nodes(prov, gpus, layout, how)
    elif gpn:
        per_node, why = gpn, "GPUS_PER_NODE"
    else:
        return None
    nodes = -(-gpus // per_node)
    key: tuple[str, int | None] = (("EZPZ_RUN_COMMAND", per_node) if layout.per_node
                                   else ("GPUS_PER_NODE", per_node))
    used["nodes"] = used["ranks_per_node"] = [key]
    how["nodes"] = f"nodes {nodes} = ceil({gpus} / " + (
        f"{plural(per_node, 'rank')} per node, {why})" if layout.per_node else
        f"GPUS_PER_NODE {gpn})")
    num_nodes = _count(prov, "NUM_NODES")
    if num_nodes is None:
        return nodes
    if nodes > num_nodes:
        raise AmscError(f"{gpus} ranks at {per_node} per node ({why}) need {nodes} nodes, but "
                        f"the job had NUM_NODES {num_nodes}; pass " + opt("nodes", "N"))
    if nodes < num_nodes and layout.per_node is None:
        prov.notes.append(f"nodes {nodes} assumes {plural(per_node, 'rank')} per node "
                          f"(GPUS_PER_NODE); the job had {num_nodes} nodes (NUM_NODES); "
                          "pass " + opt("nodes", num_nodes) + " if the ranks were spread thinner")
    return nodes


def _launched_nodes(prov: Provenance, gpus: int, layout: LaunchLayout,
                    how: dict[str, Text]) -> int:
    """The nodes srun was asked for (``-N``); a node runs at least one rank."""
    assert layout.nodes is not None
    why = f"{layout.nodes_flag} in EZPZ_RUN_COMMAND"
    nodes = min(layout.nodes, gpus)
    how["nodes"] = (f"nodes {nodes} = {why}" if nodes == layout.nodes else
                    f"nodes {nodes} = {plural(gpus, 'rank')}, one per node ({why})")
    num_nodes = _count(prov, "NUM_NODES")
    if num_nodes is not None and nodes > num_nodes:
        raise AmscError(f"{gpus} ranks on {nodes} nodes ({why}) need more nodes than the job "
                        f"had (NUM_NODES {num_nodes}); pass " + opt("nodes", "N"))
    return nodes


# run_info.json's Timings section (History.finalize(timings=...)): ezpz's examples
# pass the job's duration under these names, as text like "123.45s".
DURATION_KEYS = ("timings/end-to-end", "main/total")
_SECONDS = re.compile(r"\s*(\d+(?:\.\d*)?)\s*s?\s*\Z")


def job_duration_sec(run_info: Path) -> float | None:
    """How long the job ran, from ``run_info.json``'s Timings, when it says; else None."""
    text = _read_text(run_info, [])
    try:
        doc = json.loads(text) if text is not None else None
    except (ValueError, RecursionError):
        return None
    timings = doc.get("Timings") if isinstance(doc, dict) else None
    if not isinstance(timings, dict):
        return None
    for key in DURATION_KEYS:
        m = _SECONDS.match(str(timings.get(key, "")))
        if m and 0 < float(m.group(1)) < float("inf"):
            return float(m.group(1))
    return None
