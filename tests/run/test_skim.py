"""Skimming a shared metrics file (run/skim.py) passes over exactly the lines it may.

Every reading here is compared with the full parse (``steps.SKIM`` off): the
records of the chosen rank, and every count the notes and ``--explain``
report, must be the same.
"""

from __future__ import annotations

import io
import json
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from helpers import notes_of, one_row, run_cli, snapshot, write_run_info
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ezpz_amsc.run import skim as skim_mod
from ezpz_amsc.run import steps as steps_mod
from ezpz_amsc.run.layout import MetricsSource
from ezpz_amsc.run.lines import iter_lines
from ezpz_amsc.run.skim import RankCounts, classify_block, other_rank, skim_lines
from ezpz_amsc.run.steps import read_steps

_SETTINGS = settings(max_examples=200, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture,
                                            HealthCheck.too_slow])


def rec(rank: int, step: int, extra: dict | None = None) -> dict:
    """A record shaped like ezpz's hf example writes them (~250 bytes)."""
    return {"timestamp": 1795990723.0 + step * 0.31 + rank * 1e-5, "rank": rank,
            "metrics": {"train/step": step, "train/loss": 8.0 / step, "train/dt": 0.31,
                        "train/tokens_per_sec": 4096.0 * 8 / 0.31, "train/mfu": 41.5,
                        "train/tflops": 94.25, **(extra or {})}}


def line(r: dict) -> str:
    return json.dumps(r) + "\n"


def read(path: Path, skim: bool, max_line: int = 1 << 20) -> steps_mod.Steps:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(steps_mod, "SKIM", skim)
        return read_steps(MetricsSource("interleaved", path.parent, single=path), max_line)


def records_part(snap: dict) -> dict:
    """What the row is made of: the chosen rank's records (not the counts of others)."""
    return {k: v for k, v in snap.items() if k not in ("bad_lines", "other_ranks", "not_steps")}


def assert_reads_like_full_parse(path: Path, max_line: int = 1 << 20) -> dict:
    got = snapshot(read(path, True, max_line))
    assert got == snapshot(read(path, False, max_line))
    return got


# (what, line, the rank it is certainly a record of when rank 0 is wanted; None: parse it)
GOOD = line(rec(5, 7))


def rank_written(text: str) -> str:
    """GOOD with its rank written as ``text``: ``"rank"`` + ``text``."""
    return GOOD.replace('"rank": 5', '"rank"' + text)


ADVERSARIAL = [
    ("rank 0", line(rec(0, 7)), None),
    ("rank 1", line(rec(1, 7)), 1),
    ("rank 10", line(rec(10, 7)), 10),
    ("rank 100", line(rec(100, 7)), 100),
    ("rank 1000", line(rec(1000, 7)), 1000),
    ("rank 1234567, 7 digits", line(rec(1234567, 7)), 1234567),
    ("rank 12345678, 8 digits", line(rec(12345678, 7)), None),
    ('"rank": 0 inside metrics of rank 1', line(rec(1, 7, {"rank": 0})), 1),
    ('"rank": 10 inside metrics of rank 0', line(rec(0, 8, {"rank": 10})), None),
    ("rank first", json.dumps({"rank": 5, "timestamp": 1.0, "metrics": {"train/step": 7}})
     + "\n", None),
    ("rank last, 0", json.dumps({"timestamp": 1.0, "metrics": {"train/step": 9}, "rank": 0})
     + "\n", None),
    ("rank repeated, last 0", GOOD[:-2] + ', "rank": 0}\n', None),
    ("rank 0, then rank 5", rank_written(': 0, "rank": 5'), 5),
    ("rank 5, then rank 0", rank_written(': 5, "rank": 0'), None),
    ("a key that starts like rank", line(rec(5, 7, {"ranking": 3})), 5),
    ("rank 5 repeated", GOOD.replace('"metrics": {', '"metrics": {"x": 1}, "rank": 5, '
                                     '"metrics": {', 1), None),
    ("compact separators", json.dumps(rec(5, 7), separators=(",", ":")) + "\n", None),
    ("compact, rank 0", json.dumps(rec(0, 9), separators=(",", ":")) + "\n", None),
    ("two spaces", rank_written(':  5'), None),
    ("tab", rank_written(':\t5'), None),
    ("rank a string", rank_written(': "5"'), None),
    ("rank a string 0", rank_written(': "0"'), None),
    ("rank a float", rank_written(': 5.0'), None),
    ("rank 0.0", rank_written(': 0.0'), None),
    ("rank 5e0", rank_written(': 5e0'), None),
    ("rank -0", rank_written(': -0'), None),
    ("rank -5", rank_written(': -5'), None),
    ("rank 05", rank_written(': 05'), None),
    ("rank true", rank_written(': true'), None),
    ("rank null", rank_written(': null'), None),
    ("no rank", GOOD.replace('"rank": 5, ', ""), None),
    ("escaped rank key, 0", GOOD[:-2] + ', "r\\u0061nk": 0}\n', None),
    ("escaped string", GOOD.replace('"train/mfu"', '"train/\\u03bcfu"'), None),
    ("non-ASCII key, raw UTF-8", GOOD.replace('"train/mfu"', '"train/μfu"'), 5),
    ("non-ASCII, rank 0", line(rec(0, 9)).replace('"train/mfu"', '"train/μfu"'), None),
    ("CRLF", GOOD[:-1] + "\r\n", None),
    ("CRLF, rank 0", line(rec(0, 9))[:-1] + "\r\n", None),
    ("cut after the metrics brace", GOOD[:GOOD.index("{", 2) + 5] + "\n", None),
    ("cut, then the next record", GOOD[:60] + line(rec(6, 7)), None),
    ("cut in the timestamp, then rank 0", GOOD[:20] + line(rec(0, 9)), None),
    ("cut in rank 0, then rank 6", line(rec(0, 9))[:70] + line(rec(6, 7)), None),
    ("two records on a line", GOOD[:-1] + line(rec(0, 9)), None),
    ("NUL byte", GOOD.replace("train/dt", "train/\0dt"), None),
    ("NUL hole", GOOD[:40] + "\0" * 40 + GOOD[80:], None),
    ("nested object", GOOD.replace('"train/mfu": 41.5', '"train/mfu": {"a": 1}'), None),
    ("all strings (precision)", json.dumps({"timestamp": 1.0, "rank": 5, "metrics": {
        "precision/x": "bf16"}}) + "\n", None),
    ("last value a list", GOOD[:-3] + ', "opt/iter": [1]}}\n', None),
    ("last value NaN", GOOD[:-3] + ', "x": NaN}}\n', None),
    ("metrics not an object", json.dumps({"timestamp": 1.0, "rank": 5, "metrics": 3}) + "\n",
     None),
    ("empty metrics", json.dumps({"timestamp": 1.0, "rank": 5, "metrics": {}}) + "\n", None),
    ("aggregated after metrics", GOOD[:-2] + ', "aggregated": {"a/mean": 1.0}}\n', None),
    ("another key than metrics", GOOD.replace('"metrics"', '"metriks"'), None),
    ("another key than timestamp", GOOD.replace('"timestamp"', '"timestXYZ"'), None),
    ("a member after metrics", json.dumps({"timestamp": 1.0, "rank": 5, "metrics": {
        "p": "bf16"}, "b": 12}) + "\n", None),
    ("metrics opens with a space", GOOD.replace('"metrics": {', '"metrics": { '), 5),
    ("a byte over 0x7f that ends in a digit", rank_written(': 5\udcb5'),
     None),
    ("blank", "   \n", None),
    ("not JSON", "garbage\n", None),
]


@pytest.mark.parametrize("what,text,rank", ADVERSARIAL, ids=[a[0] for a in ADVERSARIAL])
def test_adversarial_line_reads_like_full_parse(tmp_path, what, text, rank):
    data = text.encode("utf-8", "surrogateescape")  # \udcXX: the raw byte XX
    assert other_rank(data, 0) == rank
    buf = bytearray(data) + bytearray(64)
    _, _, skip, ranks = classify_block(buf, len(data), 0, 1 << 20)
    assert (int(ranks[0]) if skip[0] else None) == rank

    # Among rank 0's steps and other ranks' records, with the line in the middle.
    lines = [line(rec(0, 1)), line(rec(3, 1)), text, line(rec(0, 2)), line(rec(2, 2))]
    path = tmp_path / "metrics.jsonl"
    path.write_bytes("".join(lines).encode("utf-8", "surrogateescape"))
    got = assert_reads_like_full_parse(path)
    assert got["rank"] == 0
    # ... and where rank 0 logged nothing, so the line may decide the rank used.
    path.write_bytes("".join([line(rec(3, 1)), text, line(rec(2, 1))]).encode(
        "utf-8", "surrogateescape"))
    assert_reads_like_full_parse(path)


def test_wanted_records_behind_a_rank_0_marker_are_all_read(tmp_path):
    lines = [line(rec(4, 1)), GOOD[:-2] + ', "rank": 0}\n', line(rec(0, 2)),
             json.dumps(rec(0, 3), separators=(",", ":")) + "\n",
             GOOD[:-2] + ', "r\\u0061nk": 0}\n']
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(lines))
    s = read(path, True)
    assert list(s.step) == [7.0, 2.0, 3.0, 7.0]  # the repeated keys' last value is rank 0
    assert s.other_ranks == {4: 1}


def test_counts_of_other_ranks_and_bad_lines_are_exact(tmp_path):
    lines = [line(rec(r, st)) for st in range(1, 4) for r in (0, 1, 2, 70000)]
    lines += [GOOD[:60] + line(rec(6, 7)),  # a cut line continued by the next record
              json.dumps({"timestamp": 1.0, "rank": 2, "metrics": {"p/x": "bf16"}}) + "\n",
              "\n", line(rec(9, 1))[:50]]  # a truncated last line
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(lines))
    s = read(path, True)
    assert s.other_ranks == {1: 3, 2: 3, 70000: 3}
    assert (s.bad_lines, s.truncated_last_line, len(s)) == (1, True, 3)
    assert_reads_like_full_parse(path)


def test_a_line_broken_by_hand_inside_counts_as_its_rank(tmp_path):
    """The one thing the skim cannot see without parsing (module docstring).

    A line that starts and ends like a record of rank 5 but is not JSON in
    between is counted as rank 5's record instead of as an unparsable line.
    The row does not change: only other ranks' lines are ever passed over.
    """
    broken = GOOD.replace('"train/mfu": 41.5', '"train/mfu": tru')
    assert other_rank(broken.encode(), 0) == 5
    run = tmp_path / "run"
    write_run_info(run)
    path = run / "metrics.jsonl"
    path.write_text(line(rec(0, 1)) + broken + line(rec(0, 2)))
    skimmed, full = read(path, True), read(path, False)
    assert (skimmed.bad_lines, skimmed.other_ranks) == (0, {5: 1})
    assert (full.bad_lines, full.other_ranks) == (1, {})
    assert records_part(snapshot(skimmed)) == records_part(snapshot(full))
    # The skim is on by default: the broken line is rank 5's record, not an unparsable one.
    assert notes_of(run_cli(run, "--config", "c", "--warmup", "0")) == [
        "throughput_tokens_per_sec_per_gpu derived as global / 1 gpu (no per-GPU throughput "
        "logged)"]
    with pytest.MonkeyPatch.context() as mp:
        rows = []
        for on in (True, False):
            mp.setattr(steps_mod, "SKIM", on)
            rows.append(one_row(run_cli(run, "--config", "c", "--warmup", "0")))
    assert rows[0] == rows[1]


def test_rank_0_silent_fallback_uses_the_full_parse(tmp_path):
    # Rank 1's lines look like records but are broken inside: a full parse
    # finds no record of rank 1, so rank 2 is used; so must the skimmed read.
    broken = [line(rec(1, i)).replace('"train/mfu": 41.5', '"train/mfu": tru')
              for i in (1, 2)]
    path = tmp_path / "metrics.jsonl"
    path.write_text(broken[0] + line(rec(2, 1)) + broken[1] + line(rec(2, 2)) + line(rec(3, 2)))
    s = read(path, True)
    assert s.rank == 2 and list(s.step) == [1.0, 2.0]
    assert (s.bad_lines, s.other_ranks) == (2, {3: 1})
    assert snapshot(s) == snapshot(read(path, False))


@pytest.mark.parametrize("over", [-1, 0, 1, 200])
@pytest.mark.parametrize("last_unterminated", [False, True])
def test_long_lines_are_never_passed_over(tmp_path, over, last_unterminated):
    other = line(rec(5, 7, {"pad": "x" * 300, "z": 1}))
    assert other_rank(other.encode(), 0) == 5
    limit = len(other) - 1 - over  # the line's length without its newline is limit + over
    assert len(line(rec(0, 2))) < limit
    path = tmp_path / "metrics.jsonl"
    # Short lines of rank 6 around them, so that the file is skimmed to its end.
    text = line(rec(0, 1)) + line(rec(6, 1)) * 3 + other + line(rec(0, 2)) + line(rec(6, 2)) * 3
    text += other
    path.write_text(text[:-1] if last_unterminated else text)
    got = assert_reads_like_full_parse(path, max_line=limit)
    long = over >= 0
    assert got["long_lines"] == (2 if long else 0)
    assert got["other_ranks"] == ({6: 6} if long else {5: 2, 6: 6})


def test_per_rank_shaped_file_is_classified_once(tmp_path, monkeypatch):
    """A file of mostly wanted lines goes back to the plain reader after one block."""
    calls = []
    real = skim_mod.classify_block
    monkeypatch.setattr(skim_mod, "classify_block",
                        lambda *a: calls.append(a[1]) or real(*a))
    data = "".join(line(rec(0, i)) for i in range(1, 400)).encode()
    passed: dict[int, int] = {}
    got = list(skim_lines(io.BytesIO(data), 1 << 20, 0, passed, block_bytes=4096))
    assert got == list(iter_lines(io.BytesIO(data), 1 << 20))
    assert len(calls) == 1 and passed == {}


def test_unseekable_file_keeps_skimming(monkeypatch):
    class NoSeek(io.BytesIO):
        def seek(self, *a):
            raise io.UnsupportedOperation("seek")

    monkeypatch.setattr(skim_mod, "MIN_SKIPPED_SHARE", 2.0)  # try to stop after every block
    data = "".join(line(rec(1 + r % 2, r)) for r in range(1, 200)).encode()  # ranks 1, 2
    passed: dict[int, int] = {}
    got = list(skim_lines(NoSeek(data), 1 << 20, 1, passed, block_bytes=512))
    assert got == [line(rec(1, r)).encode() for r in range(2, 200, 2)]
    assert passed == {2: 100}


def test_rank_counts_dense_and_sparse():
    import tracemalloc

    import numpy as np

    c = RankCounts()
    c.add(np.array([3, 1, 3], dtype=np.int64))
    c.add(np.array([], dtype=np.int64))
    tracemalloc.start()
    c.add(np.array([70000, 3, 9999999, 70000], dtype=np.int64))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1 << 20  # a huge rank is not counted in an array as long as the rank
    out = {3: 10}
    c.drain_into(out)
    assert out == {3: 13, 1: 1, 70000: 2, 9999999: 1}
    assert sum(out.values()) - 10 == 7
    again: dict[int, int] = {}
    c.drain_into(again)  # drained: nothing is counted twice
    assert again == {}


# -- properties ---------------------------------------------------------------

_templates = st.sampled_from([line(rec(r, s)) for r in (0, 1, 2, 10, 999, 1234567)
                              for s in (1, 2)] + [GOOD, ADVERSARIAL[9][1]])
_noise = st.sampled_from(['"rank": 0', '"rank"', "{", "}", "\n", "\r", "\0", "\\", '"', ",",
                          ": ", "0", "7", "}}", ', "metrics": {"', '{"timestamp": ', "μ"])


@st.composite
def _mutated(draw) -> str:
    text = draw(_templates)
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "cut"]))
        if op == "insert":
            text = text[:i] + draw(_noise) + text[i:]
        elif op == "delete":
            text = text[:i] + text[i + draw(st.integers(1, 8)):]
        else:
            text = text[:i]
    return text


@pytest.mark.slow
@_SETTINGS
@given(lines=st.lists(st.one_of(_templates, _mutated()), min_size=1, max_size=12),
       want=st.sampled_from([0, 1, 2, 10, 1234567, -1, 2**70]))
def test_block_rule_is_the_line_rule(lines, want):
    data = "".join(lines).encode("utf-8")
    if not data.endswith(b"\n"):
        data += b"\n"
    buf = bytearray(data) + bytearray(64)
    starts, ends, skip, ranks = classify_block(buf, len(data), want, 1 << 20)
    assert ends.size == data.count(b"\n")
    for s, e, k, r in zip(starts.tolist(), ends.tolist(), skip.tolist(), ranks.tolist(),
                          strict=True):
        assert (r if k else None) == other_rank(data[s:e + 1], want)


@pytest.mark.slow
@_SETTINGS
@given(lines=st.lists(st.one_of(_templates, _mutated(), st.just("x" * 300 + "\n")),
                      max_size=30),
       want=st.sampled_from([0, 1, 10]), limit=st.integers(40, 700),
       block=st.integers(16, 1500), share=st.sampled_from([0.0, 0.25, 2.0]))
def test_skim_lines_is_iter_lines_less_what_it_counts(lines, want, limit, block, share):
    data = "".join(lines).encode("utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(skim_mod, "MIN_SKIPPED_SHARE", share)
        passed: dict[int, int] = {}
        got = list(skim_lines(io.BytesIO(data), limit, want, passed, block_bytes=block))
    full = list(iter_lines(io.BytesIO(data), limit))
    # ``got`` is ``full`` with some lines left out, each certainly another rank's.
    left_out: list[bytes] = []
    it = iter(got)
    nxt = next(it, StopIteration)
    for item in full:
        if nxt is not StopIteration and item == nxt:
            nxt = next(it, StopIteration)
        else:
            assert item is not None and other_rank(item, want) is not None
            left_out.append(item)
    assert nxt is StopIteration
    assert passed == dict(Counter(other_rank(x, want) for x in left_out))


def _interleaved(rng: random.Random, ranks: int, steps: int, rank0: bool) -> list[str]:
    out = []
    for s in range(1, steps + 1):
        order = list(range(1, ranks))
        if rank0:
            order.insert(rng.randrange(ranks), 0)
        out += [line(rec(r, s)) for r in order]
    return out


def _realistic_fault(rng: random.Random, lines: list[str]) -> None:
    """What crashes and interrupted appends leave: cut lines, NUL holes, CRLF, blanks."""
    i = rng.randrange(len(lines))
    kind = rng.choice(["cut-continued", "cut-last", "nul-hole", "crlf", "blank", "nan",
                       "strings", "non-ascii", "duplicate"])
    text = lines[i]
    if kind == "cut-continued":  # (a blank line inserted before is 1 character: kept whole)
        lines[i] = text[:rng.randrange(1, max(2, len(text)))]
    elif kind == "cut-last":
        lines[-1] = lines[-1][:rng.randrange(1, max(2, len(lines[-1])))]
    elif kind == "nul-hole":
        a = rng.randrange(len(text))
        b = rng.randrange(a, len(text) + 40)
        joined = "".join(lines)
        start = sum(len(x) for x in lines[:i]) + a
        joined = joined[:start] + "\0" * (b - a) + joined[start + (b - a):]
        lines[:] = [joined]
    elif kind == "crlf":
        lines[i] = text[:-1] + "\r\n" if text.endswith("\n") else text
    elif kind == "blank":
        lines.insert(i, rng.choice(["\n", "  \n", "\r\n"]))
    elif kind == "nan":
        lines[i] = text.replace('"train/tflops": 94.25', '"train/tflops": NaN')
    elif kind == "strings":
        lines.insert(i, json.dumps({"timestamp": 1.0, "rank": rng.randrange(4),
                                    "metrics": {"precision/x": "bf16"}}) + "\n")
    elif kind == "non-ascii":
        lines[i] = text.replace("train/mfu", "train/μfu")
    else:
        lines.insert(i, text)


def _any_fault(rng: random.Random, lines: list[str]) -> None:
    """Anything at all, including edits by hand that only a parser can see."""
    i = rng.randrange(len(lines))
    text = lines[i]
    j = rng.randrange(len(text) + 1)
    lines[i] = text[:j] + rng.choice(["tru", "", "}", "{", '"', ",", "\\", '"rank": 0, ',
                                      "\n"]) + text[j + rng.randrange(3):]


@pytest.mark.slow
@_SETTINGS
@given(seed=st.integers(0, 2**32 - 1), ranks=st.integers(1, 40), steps=st.integers(1, 6),
       rank0=st.booleans(), faults=st.integers(0, 4), realistic=st.booleans())
def test_generated_interleaved_files_read_like_full_parse(tmp_path_factory, seed, ranks, steps,
                                                          rank0, faults, realistic):
    rng = random.Random(seed)
    lines = _interleaved(rng, ranks, steps, rank0)
    for _ in range(faults):
        if lines:
            (_realistic_fault if realistic else _any_fault)(rng, lines)
    path = tmp_path_factory.mktemp("il") / "metrics.jsonl"
    path.write_bytes("".join(lines).encode("utf-8"))
    got, want = snapshot(read(path, True)), snapshot(read(path, False))
    if realistic:
        assert got == want
    else:
        assert records_part(got) == records_part(want)


def test_explain_and_json_report_the_same_counts(tmp_path):
    run = tmp_path / "run"
    write_run_info(run, NGPUS="12", GPUS_PER_NODE="12", WORLD_SIZE_IN_USE="12",
                   world_size="12")
    rng = random.Random(3)
    lines = _interleaved(rng, 12, 20, True)
    lines.insert(30, "not json\n")
    lines.append(line(rec(4, 21))[:40])
    (run / "metrics.jsonl").write_text("".join(lines))
    outs = []
    with pytest.MonkeyPatch.context() as mp:
        for on in (True, False):
            mp.setattr(steps_mod, "SKIM", on)
            r = run_cli(run, "--config", "c", "--format", "json")
            assert r.exit_code == 0, r.stderr
            outs.append((r.stdout, r.stderr))
    assert outs[0] == outs[1]
    details = json.loads(outs[0][0])["details"]
    assert details["other_rank_records"] == 11 * 20
    assert "skipped 1 unparsable line" in outs[0][1]


@pytest.mark.parametrize("lines,paired", [
    ([line(rec(0, 1)), line(rec(5, 1)), line(rec(6, 1))], True),
    (["x" + line(rec(5, 1)), line(rec(6, 1))], False),  # the block does not start with '{'
    ([line(rec(5, 1)), line(rec(6, 1))[:-1] + ", \"a\": {}}\n"], False),  # a third '{'
    ([line(rec(5, 1)), line(rec(6, 1)).replace('"train/mfu"', '{"train/mfu"')], False),  # odd
    ([line(rec(5, 1)), '{"a": 1}\n'], False),  # odd: the last line has one '{'
    ([line(rec(5, 1))[:-1] + "\n\n", line(rec(6, 1))], False),  # a newline more
    ([line(rec(5, 1)).replace(", ", "\n", 1) + line(rec(6, 1))], False),  # a line split
])
def test_paired_lines_only_when_every_line_holds_two_braces_from_its_start(lines, paired):
    import numpy as np

    data = "".join(lines).encode()
    buf = bytearray(data) + bytearray(64)
    a = np.frombuffer(buf, dtype=np.uint8)
    braces = skim_mod._positions(a[:len(data)], ord("{"))
    got = skim_mod._paired_lines(a, a[:len(data)], braces)
    assert (got is not None) == paired
    if paired:
        starts, ends, second = got
        want_ends = [i for i, b in enumerate(data) if b == ord("\n")]
        assert ends.tolist() == want_ends
        assert starts.tolist() == [0] + [e + 1 for e in want_ends[:-1]]
        assert second.tolist() == [data.index(b"{", s + 1) for s in starts.tolist()]


def test_a_block_of_paired_lines_is_not_searched_for_newlines(monkeypatch):
    searched = []
    real = skim_mod._positions
    monkeypatch.setattr(skim_mod, "_positions", lambda d, b: searched.append(b) or real(d, b))
    data = "".join(line(rec(r, 1)) for r in range(50)).encode()
    _, ends, skip, ranks = classify_block(bytearray(data) + bytearray(64), len(data), 0, 1 << 20)
    assert searched == [ord("{")]
    assert skip.tolist() == [False] + [True] * 49 and ranks.tolist()[1:] == list(range(1, 50))


# --- the exact bytes of the shape, byte by byte -----------------------------------------------

def _corrupted() -> list[tuple[str, bytes]]:
    """GOOD (rank 5) with one byte of a fixed part changed in its lowest or highest bit."""
    good = GOOD.encode()
    parts = [(b'{"timestamp": ', 0), (b'"rank": ', good.index(b'"rank": ')),
             (b', "metrics": ', good.index(b', "metrics": '))]
    cases = []
    for part, at in parts:
        for i in range(len(part)):
            for bit in (0x01, 0x80):
                b = bytearray(good)
                b[at + i] ^= bit
                cases.append((f"{part.decode()!r}[{i}] ^ {bit:#04x}", bytes(b)))
    return cases


@pytest.mark.parametrize(("what", "data"), _corrupted(), ids=[c[0] for c in _corrupted()])
def test_one_changed_byte_of_the_shape_is_never_passed_over(what, data):
    # The rule asks for these bytes exactly; the block classifier compares them as
    # masked 8-byte words, so each byte and each bit of it must count.
    assert other_rank(data, 0) is None
    _, _, skip, _ = classify_block(bytearray(data) + bytearray(64), len(data), 0, 1 << 20)
    assert not skip[0]


@pytest.mark.parametrize("digits", range(1, 8))
@pytest.mark.parametrize("odd", [b"/", b":", b"\xb0", b"\xb9", b" ", b"X"])
def test_a_rank_with_a_byte_that_is_not_a_digit_is_never_passed_over(digits, odd):
    # '/' and ':' sit either side of the digits in ASCII; 0xb0 and 0xb9 are digits with the
    # top bit set: each lane of the word-at-a-time digit test must tell them apart.
    for at in range(digits):
        rank = bytearray(str(10 ** (digits - 1) + 1).encode())  # 1, 11, 101, ...
        rank[at:at + 1] = odd
        data = GOOD.encode().replace(b'"rank": 5,', b'"rank": ' + bytes(rank) + b",")
        assert other_rank(data, 0) is None, (digits, odd, at)
        _, _, skip, _ = classify_block(bytearray(data) + bytearray(64), len(data), 0, 1 << 20)
        assert not skip[0], (digits, odd, at)


@pytest.mark.parametrize(("last", "rank"), [(b"9", 5), (b"0", 5), (b":", None), (b"/", None)])
def test_the_byte_before_the_closing_braces(last, rank):
    data = GOOD.encode()
    data = data[:-4] + last + data[-3:]  # ...94.2X}}
    assert other_rank(data, 0) == rank
    _, _, skip, ranks = classify_block(bytearray(data) + bytearray(64), len(data), 0, 1 << 20)
    assert (int(ranks[0]) if skip[0] else None) == rank


@pytest.mark.parametrize("digits", range(1, 8))
def test_every_rank_length_is_decoded(digits):
    rank = int("9876543"[:digits])
    data = GOOD.encode().replace(b'"rank": 5,', f'"rank": {rank},'.encode())
    assert other_rank(data, 0) == rank
    _, _, skip, ranks = classify_block(bytearray(data) + bytearray(64), len(data), 0, 1 << 20)
    assert skip[0] and int(ranks[0]) == rank


@pytest.mark.parametrize("blank", [8, 9, 17, 64])
def test_runs_of_blank_lines_and_braces_read_like_full_parse(tmp_path, blank):
    # Eight newlines in a row pack into one byte with every bit set (and so may braces).
    lines = [line(rec(0, 1)), line(rec(3, 1)), "\n" * blank, line(rec(0, 2)),
             "{" * blank + "\n", line(rec(2, 2)), "\n" * blank]
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(lines))
    got = assert_reads_like_full_parse(path)
    assert got["other_ranks"] == {3: 1, 2: 1} and got["bad_lines"] == 1


@pytest.mark.parametrize("low", [200, 9_999_999])
def test_a_high_rank_is_read_when_rank_0_logged_nothing(tmp_path, low):
    # The lowest rank that logged is the one read: its lines must not be passed over.
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(line(rec(r, s)) for s in (1, 2, 3) for r in (low + 1, low)))
    got = assert_reads_like_full_parse(path)
    assert got["rank"] == low and got["other_ranks"] == {low + 1: 3}
    assert got["step"] == np.array([1.0, 2.0, 3.0]).tobytes()
