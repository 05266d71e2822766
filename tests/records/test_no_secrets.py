"""No secret reaches a record, a row or a message, whatever its form: a table of forms,
each planted in every place of a run a record could copy from. Records hold only what
``reproduce`` needs and what the row used (records/record.py), so the test asserts the
absence of every planted value, not a redaction."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import parse_csv, records_in, run_cli

pytestmark = pytest.mark.usefixtures("clean_hook_env")

RUN = "fsdp_tp-2rank"

# (form, how a value S looks in it): each is planted in each of the PLACES below.
FORMS: list[tuple[str, str]] = [
    ("token variable", "{S}"),
    ("short password name", "{S}"),
    ("URL password with a slash", "postgres://me:pw/{S}@db.example/x"),
    ("webhook URL", "https://hooks.slack.com/services/T0000/B0000/{S}"),
    ("JSON inside a value", '{{"user": "me", "password": "{S}"}}'),
    ("YAML inside a value", "user: me\npassword: {S}\n"),
    ("PEM key under an innocent name",
     "-----BEGIN PRIVATE KEY-----\n{S}\n-----END PRIVATE KEY-----"),
    ("netrc line", "machine h.example login me password {S}"),
    ("Google API key", "AIza{S}"),
    ("npm token", "npm_{S}"),
    ("bare hex key", "{S}0123456789abcdef0123456789abcdef"),
    ("API key header", "curl -H 'X-Api-Key: {S}' https://api.example"),
    ("curl user:pass", "curl -u me:{S} https://api.example"),
    ("wandb login", "wandb login {S}"),
    ("SAS signature", "https://acct.blob.core.windows.net/c?sv=2020&sig={S}"),
    ("flag and value", "--hf-token {S}"),
    ("flag=value starting with -", "--password=-{S}"),
    ("short flag", "--pw {S}"),
    ("bearer token", "Authorization: Bearer {S}"),
    ("GitHub token", "ghp_{S}"),
    ("JSON web token", "eyJhbGciOiJIUzI1NiJ9.eyJ{S}.c2lnbmF0dXJl"),
    ("cookie", "session={S}; Path=/"),
    ("a list repr of argv", "['--api-key', '{S}']"),
    ("AWS secret", "aws_secret_access_key = {S}"),
]
# Where each form is planted in run_info.json: a section and key (or the launch command).
PLACES = ["Environment Variables", "Distributed", "Python", "Torch", "launch"]


def _secret(form: int, place: int) -> str:
    return f"zq{form:02d}p{place}SeKrEtVaLuE"


def _plant(run: Path) -> list[str]:
    info = json.loads((run / "run_info.json").read_text())
    launch = [info["Distributed"]["EZPZ_RUN_COMMAND"]]
    argv = ["mpiexec", "--np", "2"]
    planted = []
    for f, (_, shape) in enumerate(FORMS):
        for p, place in enumerate(PLACES):
            s = _secret(f, p)
            value = shape.format(S=s)
            planted.append(s)
            if place == "launch":
                launch.append(json.dumps(value))
                argv += ["--x", value]
            elif place == "Python":
                info.setdefault("Python", {}).setdefault("plugins", []).append({"cfg": value})
            else:
                info.setdefault(place, {})[f"SETTING_{f}"] = value
    info["Distributed"]["EZPZ_RUN_COMMAND"] = " ".join(launch)
    info["Environment Variables"]["EZPZ_RUN_COMMAND"] = argv  # a command recorded as a list
    info["Environment Variables"]["DB_PW"] = "zqdbpwSeKrEtVaLuE"
    planted.append("zqdbpwSeKrEtVaLuE")
    (run / "run_info.json").write_text(json.dumps(info))
    (run / "config.json").write_text(json.dumps({"wandb_key": "zqcfgSeKrEtVaLuE"}))
    planted.append("zqcfgSeKrEtVaLuE")
    return planted


def test_the_table_has_enough_forms_and_secrets():
    assert len(FORMS) >= 20 and len(FORMS) * len(PLACES) + 2 >= 80


@pytest.mark.slow
def test_no_planted_secret_reaches_a_record_a_row_or_a_message(fixture_run, tmp_path):
    run = fixture_run(RUN)
    row_before = parse_csv(run_cli(run, "--config", "agpt/x").stdout)
    planted = _plant(run)
    assert len(planted) >= 80
    results, folder = tmp_path / "res.csv", tmp_path / "records"
    cli = [sys.executable, "-m", "ezpz_amsc"]
    said = []
    for args in (lambda: [str(run), "--config", "agpt/x", "--append", str(results),
                          "--provenance", str(folder)],
                 lambda: ["check", str(results), "--provenance", str(folder)],
                 lambda: ["reproduce", *map(str, records_in(folder))],
                 lambda: ["reproduce", "--format", "json", *map(str, records_in(folder))]):
        p = subprocess.run([*cli, *args()], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        said.append(p.stdout + p.stderr)
    (record,) = records_in(folder)
    assert parse_csv(results.read_text()) == row_before  # the secrets changed nothing
    texts = {"record": record.read_text(), "rows": results.read_text(),
             **{f"messages {i}": t for i, t in enumerate(said)}}
    leaked = {where: [s for s in planted if s in text or s.lower() in text.lower()]
              for where, text in texts.items()}
    assert leaked == {where: [] for where in texts}
