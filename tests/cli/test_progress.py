"""The progress line of long batches (render/progress.py), on a fake terminal with a fake
clock: shown after 2 s on a terminal only, redrawn in place, erased before other output."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
from helpers import FIXTURE_NAMES, copy_run, run_cli, run_group

from ezpz_amsc.cli import progress as progress_module
from ezpz_amsc.cli.progress import DELAY_SEC, EVERY_SEC, Progress

ERASE = "\r\x1b[K"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    """Each reading is the next of ``times``; the last one repeats."""

    def __init__(self, *times: float) -> None:
        self.times: Iterator[float] = iter(times)
        self.now = 0.0

    def __call__(self) -> float:
        self.now = next(self.times, self.now)
        return self.now


def test_nothing_before_two_seconds():
    out = Terminal()
    p = Progress(3, "runs", "exported", out, clock=Clock(0.0, 0.5, 1.0, DELAY_SEC - 0.01))
    for n in (1, 2, 3):
        p.update(n)
    p.clear()
    assert out.getvalue() == ""


def test_after_two_seconds_a_line_redrawn_in_place_and_erased_at_the_end():
    out = Terminal()
    p = Progress(4, "runs", "exported", out, clock=Clock(10.0, 11.0, 12.0, 12.5, 13.0))
    for n in (1, 2, 3, 4):
        p.update(n)
    p.clear()
    assert out.getvalue() == (f"{ERASE}exported 2 of 4 runs{ERASE}exported 3 of 4 runs"
                              f"{ERASE}exported 4 of 4 runs{ERASE}")


def test_redraws_at_most_every_tenth_of_a_second_but_always_the_last():
    out = Terminal()
    step = EVERY_SEC / 4
    p = Progress(5, "records", "reproduced", out,
                 clock=Clock(0.0, DELAY_SEC, DELAY_SEC + step, DELAY_SEC + 2 * step,
                             DELAY_SEC + EVERY_SEC, DELAY_SEC + EVERY_SEC + step))
    for n in (1, 2, 3, 4, 5):
        p.update(n)
    assert out.getvalue() == (f"{ERASE}reproduced 1 of 5 records{ERASE}reproduced 4 of 5 records"
                              f"{ERASE}reproduced 5 of 5 records")


def test_a_redraw_exactly_every_sec_after_the_last_one(monkeypatch):
    monkeypatch.setattr(progress_module, "EVERY_SEC", 0.25)  # exact in binary
    out = Terminal()
    p = Progress(3, "runs", "exported", out, clock=Clock(0.0, 2.0, 2.25))
    p.update(1)
    p.update(2)
    assert out.getvalue() == f"{ERASE}exported 1 of 3 runs{ERASE}exported 2 of 3 runs"


def test_clear_lets_other_output_through_and_the_next_update_redraws():
    out = Terminal()
    p = Progress(3, "records", "reproduced", out, clock=Clock(0.0, 5.0, 5.01, 5.02))
    p.update(1)
    p.clear()
    out.write("a line of the report\n")
    p.clear()  # nothing drawn: nothing to erase
    p.update(2)  # within 0.1 s of the last drawing, but the line was erased: drawn again
    assert out.getvalue() == (f"{ERASE}reproduced 1 of 3 records{ERASE}a line of the report\n"
                              f"{ERASE}reproduced 2 of 3 records")


@pytest.mark.parametrize("stream, quiet", [(io.StringIO(), False), (Terminal(), True)])
def test_never_on_a_pipe_or_with_quiet(stream, quiet):
    p = Progress(2, "runs", "exported", stream, quiet=quiet, clock=Clock(0.0, 100.0))
    p.update(1)
    p.update(2)
    p.clear()
    assert stream.getvalue() == ""


def test_the_default_clock_is_monotonic_time(monkeypatch):
    readings = iter([100.0, 103.0])
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: next(readings))
    out = Terminal()
    p = Progress(1, "runs", "exported", out)
    p.update(1)
    assert out.getvalue() == f"{ERASE}exported 1 of 1 runs"


# ------------------------------------------------------------------ in the commands


@pytest.fixture
def slow_terminal(monkeypatch):
    """stderr is a terminal, and every clock reading is 1.5 s after the one before."""
    ticks = iter(range(1000))
    monkeypatch.setattr(progress_module, "is_terminal", lambda stream: True)
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: 1.5 * next(ticks))


def test_a_batch_export_shows_progress_on_a_terminal(tmp_path, slow_terminal, clean_hook_env):
    runs = [copy_run(n, tmp_path) for n in FIXTURE_NAMES[:3]]
    r = run_cli(*runs, "--config", "c", "--append", tmp_path / "r.csv")
    assert r.exit_code == 0
    # readings 0 (start), 1.5, 3.0, 4.5: the first after 2 s is the second run
    head = f"{ERASE}exported 2 of 3 runs{ERASE}exported 3 of 3 runs{ERASE}"
    assert r.stderr.startswith(head)
    assert all(ln.startswith("note: ") for ln in r.stderr[len(head):].splitlines())
    assert ERASE not in run_cli(*runs, "--config", "c", "-q").stderr
    assert ERASE not in run_cli(runs[0], "--config", "c").stderr  # one run: no batch


def test_one_run_shows_no_progress_however_long_it_takes(tmp_path, monkeypatch,
                                                         clean_hook_env):
    # every clock reading 5 s after the one before: past the delay at the first update
    ticks = iter(range(1000))
    monkeypatch.setattr(progress_module, "is_terminal", lambda stream: True)
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: 5.0 * next(ticks))
    runs = [copy_run(n, tmp_path) for n in FIXTURE_NAMES[:2]]
    one = run_cli(runs[0], "--config", "c")
    assert one.exit_code == 0 and one.stderr.startswith("note: ") and ERASE not in one.stderr
    two = run_cli(*runs, "--config", "c")
    assert two.stderr.startswith(f"{ERASE}exported 1 of 2 runs{ERASE}exported 2 of 2 runs{ERASE}")


def test_reproduce_erases_its_progress_before_each_result(tmp_path, slow_terminal,
                                                          clean_hook_env):
    runs = [copy_run(n, tmp_path) for n in FIXTURE_NAMES[:3]]
    folder = tmp_path / "records"
    assert run_cli(*runs, "--config", "c", "--append", tmp_path / "r.csv", "--provenance",
                   folder, "-q").exit_code == 0
    records = sorted(folder.glob("*.json"))
    r = run_group("reproduce", *records)
    assert r.exit_code == 0
    assert r.stderr == (f"{ERASE}reproduced 2 of 3 records{ERASE}"
                        f"{ERASE}reproduced 3 of 3 records{ERASE}")
    assert [ln.split(": ")[1].split(";")[0] for ln in r.stdout.splitlines()] == [
        "identical row (14 cells)"] * 3
    assert run_group("reproduce", *records, "-q").stderr == ""
