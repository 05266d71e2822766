"""system from HOSTNAME via get_machine (SPEC §1.4), with and without an importable ezpz."""

from __future__ import annotations

import sys

import pytest
from conftest import error_line, one_row, run_cli, step, write_jsonl, write_run_info

from ezpz_amsc._ezpz import get_machine, machine_from_hostname

COPY = "a copy of ezpz.get_machine"

pytest_plugins = ("fake_ezpz",)  # the ezpz_pkg fixture


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


def test_no_machine_and_no_hostname_still_names_the_flag(tmp_path, ezpz_pkg):
    ezpz_pkg("absent")
    result = run_cli(_run_without_machine(tmp_path, HOSTNAME=None), "--config", "c")
    assert "pass --system NAME" in error_line(result)
