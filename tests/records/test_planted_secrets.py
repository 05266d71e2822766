"""Planted secrets: no byte the tool writes or prints holds a secret from the run directory.

A black-box test, written from the docs alone (docs/provenance.md, docs/cli.md,
docs/ezpz-integration.md): it drives the documented commands and entry points and
never looks inside a record. Each FORM of secret is planted, each time as its own
random-looking token, in every place where an ezpz run directory holds such data
(copies of shipped real runs):

- run A (``minimal-1rank``, provenance from ``run_info.json``): its ``Environment
  Variables`` and ``Distributed`` sections, ``EZPZ_RUN_COMMAND``, the report's
  ``### Environment Variables`` and ``EZPZ_RUN_COMMAND`` bullets, a line of the
  structured log;
- run B (``minimal-logfreq5-1rank`` without ``run_info.json``, provenance from
  ``config.json``, what the csv tracker writes): a flat key, one under ``args``,
  ``EZPZ_RUN_COMMAND``;
- run C (``diffusion-1rank`` without ``run_info.json``, provenance from the report's
  ``### Distributed``): a bullet there and ``EZPZ_RUN_COMMAND``;
- run D (``minimal-default-warmup-1rank``, damaged as a torn write or a killed job
  leaves it): a ``run_info.json`` that is not JSON, a truncated last metrics line.

Then every documented way of writing rows and records runs on the four (export to
stdout as CSV with ``--explain`` and as JSON, ``--append --provenance``, ``check
--provenance``, ``reproduce`` before and after the run changed, ``describe``, and the
finalize hook in both of its modes), and the test asserts that no token, nor any
substring of 12 characters of one, is in stdout, stderr, or any file that is new or
changed anywhere under the test's folder (records, results file, datapackage.json,
caches, temporary files, what the hook leaves in the run directory). That holds
whatever a record's layout: a record that copies nothing it does not need cannot
leak by form.

Not planted: secrets in file NAMES. A record names the files a row came from by
their path inside the run directory, legitimately (``reproduce`` compares them by
path); a file named after a secret is the user's own publication of it, and the tool
cannot read a name without knowing it.

``python tests/records/test_planted_secrets.py`` prints, per form, how many of its
planted secrets reach which output (the figures for issue 34).
"""

from __future__ import annotations

import csv
import hashlib
import inspect
import io
import json
import os
import random
import re
import shlex
import shutil
import string
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
RUNS = REPO / "examples" / "runs"
WINDOW = 12          # any substring this long of a token counts as a leak
LABEL = "agpt-x/secrets"

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64URL = ALNUM + "-_"


# --------------------------------------------------------------------------- the forms


@dataclass(frozen=True)
class Form:
    """One way a secret sits in a run directory.

    ``key``: the name it is stored under (environment variable, config key); ``token``
    makes a fresh random secret; ``value`` is what the key holds; ``kind`` says how it
    sits on a launch command line: ``arg`` (``fragment`` appended to the program's
    arguments), ``env`` (``KEY=value`` before the launcher), ``after`` (``launcher &&
    fragment``), ``list`` (argv as a list). ``needles`` are the parts that must never
    appear (default: the token).
    """

    name: str
    key: str
    token: Callable[[random.Random], str]
    value: Callable[[str], str] = lambda t: t
    kind: str = "arg"
    fragment: Callable[[str], str] | None = None
    needles: Callable[[str], list[str]] = lambda t: [t]


def _chars(alphabet: str, n: int) -> Callable[[random.Random], str]:
    return lambda rng: "".join(rng.choice(alphabet) for _ in range(n))


def _prefixed(prefix: str, alphabet: str, n: int) -> Callable[[random.Random], str]:
    return lambda rng: prefix + _chars(alphabet, n)(rng)


def _two_halves(rng: random.Random) -> str:
    """A password with a ``/`` (as AWS secrets and generated passwords have): each side
    alone is longer than WINDOW, so it is found even if the slash is escaped."""
    return _chars(ALNUM, 16)(rng) + "/" + _chars(ALNUM, 16)(rng)


def _pem(rng: random.Random) -> str:
    return "\n".join(_chars(ALNUM + "+/", 64)(rng) for _ in range(4))


def _pem_value(body: str) -> str:
    return f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----"


def _jwt(rng: random.Random) -> str:
    head, claims, sig = (_chars(B64URL, n)(rng) for n in (33, 45, 43))
    return f"eyJ{head}.eyJ{claims}.{sig}"


def _sq(text: str) -> str:
    return shlex.quote(text)


FORMS: list[Form] = [
    # argv recorded as a list: a JSON list in run_info.json / config.json, a Python
    # list repr in the report (what str(list) gives)
    Form("argv-json-list", "EZPZ_ARGV", _chars(ALNUM, 32), kind="list",
         fragment=lambda t: json.dumps(["--hf-token", t])),
    Form("argv-list-repr-string", "EZPZ_ARGV", _chars(ALNUM, 32), kind="list-repr",
         fragment=lambda t: json.dumps(["--hf-token", t])),
    Form("flag-token-space", "TRAIN_ARGS", _chars(ALNUM, 32), value=lambda t: f"--token {t}"),
    Form("flag-password-equals-dash", "TRAIN_ARGS", _chars(ALNUM, 32),
         value=lambda t: f"--password=-{t}"),
    Form("flag-pw-space", "TRAIN_ARGS", _chars(ALNUM, 32), value=lambda t: f"--pw {t}"),
    Form("flag-camel-access-token", "TRAIN_ARGS", _chars(ALNUM, 32),
         value=lambda t: f"--accessToken {t}"),
    Form("flag-quoted-value-with-space", "TRAIN_ARGS",
         lambda rng: _chars(ALNUM, 16)(rng) + " " + _chars(ALNUM, 16)(rng),
         value=lambda t: f'--hf-token "{t}"', needles=lambda t: t.split(" ")),
    Form("env-DB_PW", "DB_PW", _chars(ALNUM, 32), kind="env"),
    Form("env-PGPASSWORD", "PGPASSWORD", _chars(ALNUM, 32), kind="env"),
    Form("env-HF_TOKEN", "HF_TOKEN", _prefixed("hf_", ALNUM, 34), kind="env"),
    Form("env-WANDB_API_KEY", "WANDB_API_KEY", _chars(HEX, 40), kind="env"),
    Form("env-AWS_SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY", _two_halves, kind="env"),
    Form("url-password-with-slash", "DATABASE_URL", _two_halves,
         value=lambda t: f"postgresql://trainer:{t}@db.internal.example:5432/runs",
         fragment=lambda t: f"--results-db postgresql://trainer:{t}@db.internal.example:5432/runs"),
    Form("url-user-only-dsn", "SENTRY_DSN", _chars(HEX, 32),
         value=lambda t: f"https://{t}@o4507.ingest.sentry.io/4508123",
         fragment=lambda t: f"--report-to https://{t}@o4507.ingest.sentry.io/4508123"),
    Form("webhook-slack", "ALERTS_URL", _chars(ALNUM, 24),
         value=lambda t: f"https://hooks.slack.com/services/T04AB12CD/B07XY34ZQ/{t}",
         fragment=lambda t: f"--notify https://hooks.slack.com/services/T04AB12CD/B07XY34ZQ/{t}"),
    Form("webhook-discord", "ON_FINISH", _chars(B64URL, 68),
         value=lambda t: f"https://discord.com/api/webhooks/1234567890123456789/{t}",
         fragment=lambda t: f"--on-finish https://discord.com/api/webhooks/1234567890123456789/{t}"),
    Form("json-inside-env-value", "TRAINER_CONFIG", _chars(ALNUM, 32), kind="env",
         value=lambda t: json.dumps({"lr": 0.0003, "logger": {"backend": "wandb", "api_key": t}})),
    Form("yaml-inside-env-value", "TRAINER_YAML", _chars(ALNUM, 32), kind="env",
         value=lambda t: f"project: amsc\nlogger:\n  backend: wandb\n  api_key: {t}\n"),
    Form("pem-key-innocent-name", "CLUSTER_NOTES", _pem, kind="env", value=_pem_value,
         needles=lambda t: t.split("\n")),
    Form("netrc-line", "NETRC_LINE", _chars(ALNUM, 32), kind="env",
         value=lambda t: f"machine api.wandb.ai login trainer password {t}"),
    Form("google-AIza-key", "GEO_CFG", _prefixed("AIza", B64URL, 35),
         fragment=lambda t: f"--geo {t}"),
    Form("npm-token", "NPM_CFG", _prefixed("npm_", ALNUM, 36), fragment=lambda t: f"--npm {t}"),
    Form("github-ghp-token", "GH_READ", _prefixed("ghp_", ALNUM, 36),
         fragment=lambda t: f"--gh {t}"),
    Form("gitlab-glpat-token", "GL_READ", _prefixed("glpat-", B64URL, 20),
         fragment=lambda t: f"--gl {t}"),
    Form("openai-sk-key", "JUDGE", _prefixed("sk-proj-", ALNUM, 48),
         fragment=lambda t: f"--judge {t}"),
    Form("slack-xoxb-token", "NOTIFY", lambda rng: "xoxb-" + _chars(string.digits, 12)(rng) + "-"
         + _chars(string.digits, 13)(rng) + "-" + _chars(ALNUM, 24)(rng),
         fragment=lambda t: f"--slack {t}"),
    Form("jwt", "SESSION", _jwt, fragment=lambda t: f"--session {t}"),
    Form("wandb-bare-40-hex", "RUN_LABEL", _chars(HEX, 40), fragment=lambda t: f"--wb {t}"),
    Form("wandb-login-command", "PRE_RUN", _chars(HEX, 40), kind="after",
         value=lambda t: f"wandb login {t}"),
    Form("curl-header-x-api-key", "PRE_RUN", _chars(ALNUM, 32), kind="after",
         value=lambda t: f"curl -s -H 'X-Api-Key: {t}' https://api.example.org/v1/start"),
    Form("curl-header-authorization-bearer", "PRE_RUN", _chars(ALNUM, 32), kind="after",
         value=lambda t: f"curl -s -H 'Authorization: Bearer {t}' https://api.example.org/v1/start"),
    Form("curl-header-cookie", "PRE_RUN", _chars(ALNUM, 32), kind="after",
         value=lambda t: f"curl -s -H 'Cookie: session={t}' https://api.example.org/v1/start"),
    Form("curl-user-password", "PRE_RUN", _chars(ALNUM, 32), kind="after",
         value=lambda t: f"curl -s -u trainer:{t} -o ckpt.pt https://artifacts.example.org/ckpt.pt"),
    Form("azure-sas-sig", "CKPT_URL", _chars(ALNUM, 43),
         value=lambda t: ("https://amscruns.blob.core.windows.net/ckpt/step100.pt?sv=2022-11-02"
                          f"&ss=b&srt=o&sp=r&se=2027-01-01T00:00:00Z&spr=https&sig={t}%3D"),
         fragment=lambda t: ("--ckpt-url 'https://amscruns.blob.core.windows.net/ckpt/step100.pt"
                             "?sv=2022-11-02&ss=b&srt=o&sp=r&se=2027-01-01T00:00:00Z&spr=https"
                             f"&sig={t}%3D'")),
]
FORM_BY_NAME = {f.name: f for f in FORMS}

# Where a secret is planted: (run, place). Every form goes into every place.
PLACES = (
    ("A", "run_info Environment Variables"),
    ("A", "run_info Distributed"),
    ("A", "run_info EZPZ_RUN_COMMAND"),
    ("A", "run_info Paths"),
    ("A", "report Environment Variables"),
    ("A", "report EZPZ_RUN_COMMAND"),
    ("A", "structured log"),
    ("A", "metrics string value"),
    ("A", ".hydra/config.yaml"),
    ("B", "config.json flat key"),
    ("B", "config.json args"),
    ("B", "config.json EZPZ_RUN_COMMAND"),
    ("C", "report Distributed"),
    ("C", "report EZPZ_RUN_COMMAND"),
    ("D", "run_info.json that is not JSON"),
    ("D", "truncated last metrics line"),
)
BASES = {"A": "minimal-1rank", "B": "minimal-logfreq5-1rank", "C": "diffusion-1rank",
         "D": "minimal-default-warmup-1rank"}


@dataclass
class Secret:
    form: str
    run: str
    place: str
    token: str
    needles: list[str]
    windows: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        for needle in self.needles:
            assert len(needle) >= WINDOW, (self.form, needle)
            self.windows |= {needle[i:i + WINDOW] for i in range(len(needle) - WINDOW + 1)}

    def found_in(self, text: str) -> str | None:
        """The first piece of this secret in ``text``, or None."""
        return next((w for w in sorted(self.windows) if w in text), None)


def secrets_of(form: Form) -> list[Secret]:
    out = []
    for run, place in PLACES:
        rng = random.Random(f"{form.name}|{run}|{place}")
        token = form.token(rng)
        out.append(Secret(form.name, run, place, token, form.needles(token)))
    return out


# --------------------------------------------------------------------------- planting


def _argv(base: str) -> list[str]:
    return shlex.split(base)


def command_line(form: Form, base: str, token: str, *, as_list: bool) -> str | list[str]:
    """The launch command holding the secret, as a shell string or an argv list."""
    value = form.value(token)
    if form.kind in ("list", "list-repr"):
        assert form.fragment is not None
        argv = _argv(base) + json.loads(form.fragment(token))
        return argv if as_list and form.kind == "list" else repr(argv)
    if form.kind == "env":
        text = f"{form.key}={_sq(value)} {base}"
    elif form.kind == "after":
        text = f"{base} && {value}"
    else:
        text = f"{base} {form.fragment(token) if form.fragment else value}"
    return text


def stored_value(form: Form, token: str) -> str:
    """What the form's key holds as an environment variable or config value."""
    if form.kind == "list":
        assert form.fragment is not None
        return form.fragment(token)
    if form.kind == "list-repr":
        assert form.fragment is not None
        return repr(json.loads(form.fragment(token)))
    return form.value(token)


def _as_text(cmd: str | list[str]) -> str:
    return repr(cmd) if isinstance(cmd, list) else cmd


def _bullet(key: str, value: str) -> str:
    return f"- **{key}**: {value}\n"


def plant(form: Form, work: Path) -> tuple[list[Path], list[Secret]]:
    """Copies of the four base runs in ``work`` holding this form's secrets."""
    secrets = secrets_of(form)
    by_place = {(s.run, s.place): s for s in secrets}
    runs = {}
    for run, base in BASES.items():
        dest = work / f"run{run}"
        shutil.copytree(RUNS / base, dest, symlinks=True)
        runs[run] = dest

    def tok(run: str, place: str) -> str:
        return by_place[(run, place)].token

    # run A: everything from run_info.json, as ezpz writes it
    a = runs["A"]
    info = json.loads((a / "run_info.json").read_text())
    base_a = info["Distributed"]["EZPZ_RUN_COMMAND"]
    info["Environment Variables"][form.key] = stored_value(
        form, tok("A", "run_info Environment Variables"))
    info["Distributed"][form.key] = stored_value(form, tok("A", "run_info Distributed"))
    info["Distributed"]["EZPZ_RUN_COMMAND"] = command_line(
        form, base_a, tok("A", "run_info EZPZ_RUN_COMMAND"), as_list=True)
    info["Paths"][form.key] = stored_value(form, tok("A", "run_info Paths"))
    (a / "run_info.json").write_text(json.dumps(info, indent=2))
    metrics = a / "metrics.jsonl"
    first, rest = metrics.read_text().split("\n", 1)
    record = json.loads(first)
    record["metrics"][f"wandb/{form.key.lower()}"] = stored_value(
        form, tok("A", "metrics string value"))
    metrics.write_text(json.dumps(record) + "\n" + rest)
    (a / ".hydra").mkdir()
    yaml_value = json.dumps(stored_value(form, tok("A", ".hydra/config.yaml")))  # YAML reads JSON
    (a / ".hydra" / "config.yaml").write_text(
        f"train:\n  lr: 0.0003\n  {form.key.lower()}: {yaml_value}\n")
    report = a / "train" / "report-train.md"
    text = report.read_text()
    env_head = "### Environment Variables\n\n"
    assert env_head in text
    text = text.replace(env_head, env_head + _bullet(
        form.key, stored_value(form, tok("A", "report Environment Variables"))), 1)
    text = _replace_command_bullet(text, _as_text(command_line(
        form, base_a, tok("A", "report EZPZ_RUN_COMMAND"), as_list=False)))
    report.write_text(text)
    (log,) = a.glob("*-rank0.jsonl")
    cmd = _as_text(command_line(form, base_a, tok("A", "structured log"), as_list=False))
    message = f"No active scheduler detected; falling back to local mpirun: {cmd}"
    with log.open("a") as f:
        f.write(json.dumps({"timestamp": "2026-11-29T22:21:26", "level": "INFO",
                            "message": message, "logger": "ezpz.launch", "module": "launch",
                            "function": "run"}) + "\n")

    # run B: config.json (the csv tracker: Distributed's keys flat, native types, args)
    b = runs["B"]
    dist = json.loads((b / "run_info.json").read_text())["Distributed"]
    (b / "run_info.json").unlink()
    config: dict[str, object] = {k: int(v) if v.isdigit() else v for k, v in dist.items()}
    config[form.key] = stored_value(form, tok("B", "config.json flat key"))
    config["EZPZ_RUN_COMMAND"] = command_line(
        form, dist["EZPZ_RUN_COMMAND"], tok("B", "config.json EZPZ_RUN_COMMAND"), as_list=True)
    args_value: object = stored_value(form, tok("B", "config.json args"))
    if form.kind == "list":
        args_value = json.loads(str(args_value))
    config["args"] = {"lr": 0.0003, "batch_size": 8, form.key.lower(): args_value}
    (b / "config.json").write_text(json.dumps(config, indent=2))

    # run C: only the report's ### Distributed
    c = runs["C"]
    (c / "run_info.json").unlink()
    report = c / "train" / "report-train.md"
    text = report.read_text()
    base_c = re.search(r"^- \*\*EZPZ_RUN_COMMAND\*\*: (.*)$", text, re.M)
    assert base_c is not None
    text = _replace_command_bullet(text, _as_text(command_line(
        form, base_c.group(1), tok("C", "report EZPZ_RUN_COMMAND"), as_list=False)))
    end = text.index("\n## ", text.index("### Distributed"))
    text = text[:end] + "\n" + _bullet(
        form.key, stored_value(form, tok("C", "report Distributed"))).rstrip("\n") + text[end:]
    report.write_text(text)

    # run D: damaged files, whose notes could quote them (a killed job, a torn write)
    d = runs["D"]
    info_text = (d / "run_info.json").read_text()
    env_line = '"Environment Variables": {'
    assert env_line in info_text
    torn = json.dumps(stored_value(form, tok("D", "run_info.json that is not JSON")))
    (d / "run_info.json").write_text(info_text.replace(
        env_line, f"{env_line}\n    {json.dumps(form.key)}: {torn} ,,", 1))
    metrics = d / "metrics.jsonl"
    cmd = _as_text(command_line(form, "python3 -m ezpz.examples.minimal",
                                tok("D", "truncated last metrics line"), as_list=False))
    with metrics.open("a") as f:
        f.write(json.dumps({"timestamp": 1796198150.31, "rank": 0,
                            "metrics": {"iter": 40, "launch": cmd, "loss": 675.0, "dt": 0.02,
                                        "tflops": 0.1}})[:-20])

    for secret in secrets:  # each token really is in its run's files, whole
        planted = "".join(p.read_text(errors="replace")
                          for p in runs[secret.run].rglob("*") if p.is_file())
        assert all(n in planted for n in secret.needles), (secret.run, secret.place)
    return [runs[r] for r in sorted(runs)], secrets


def _replace_command_bullet(text: str, cmd: str) -> str:
    new, n = re.subn(r"^- \*\*EZPZ_RUN_COMMAND\*\*: .*$",
                     lambda m: f"- **EZPZ_RUN_COMMAND**: {cmd}", text, count=1, flags=re.M)
    assert n == 1
    return new


# --------------------------------------------------------------------------- running


@dataclass
class Output:
    what: str
    text: str


def _snapshot(root: Path) -> dict[Path, str]:
    out = {}
    for p in root.rglob("*"):
        if p.is_file() and not p.is_symlink():
            out[p] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def written_files(root: Path, before: dict[Path, str]) -> Iterator[Output]:
    """Every regular file under ``root`` that is new or changed since ``before``."""
    for p, digest in sorted(_snapshot(root).items()):
        if before.get(p) != digest:
            yield Output(f"file {p.relative_to(root)}", p.read_bytes().decode("utf-8", "replace"))


def _env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EZPZ_AMSC_")}
    (work / "cache").mkdir(exist_ok=True)
    (work / "tmp").mkdir(exist_ok=True)
    env.update(XDG_CACHE_HOME=str(work / "cache"), TMPDIR=str(work / "tmp"), COLUMNS="100")
    return env


def _script() -> list[str]:
    exe = Path(sys.executable).with_name("ezpz-amsc")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "ezpz_amsc"]


class Subprocess:
    """``ezpz-amsc`` as a user runs it."""

    def __init__(self, work: Path) -> None:
        self.work, self.env = work, _env(work)

    def __call__(self, *args: object) -> tuple[int, str, str]:
        p = subprocess.run([*_script(), *map(str, args)], cwd=self.work, env=self.env,
                           capture_output=True, text=True, errors="replace", timeout=300)
        return p.returncode, p.stdout, p.stderr


class InProcess:
    """The documented ``ezpz.commands`` entry point ``amsc`` (the whole group), through
    click's CliRunner: the quick variant of the same test."""

    def __init__(self, work: Path) -> None:
        from click.testing import CliRunner

        (ep,) = [e for e in entry_points(group="ezpz.commands") if e.name == "amsc"]
        self.group = ep.load()
        old_click = "mix_stderr" in inspect.signature(CliRunner.__init__).parameters
        kwargs: dict[str, Any] = {"mix_stderr": False} if old_click else {}  # click < 8.2
        env: dict[str, str | None] = dict(_env(work))
        env.update({k: None for k in os.environ if k.startswith("EZPZ_AMSC_")})
        self.runner = CliRunner(env=env, **kwargs)

    def __call__(self, *args: object) -> tuple[int, str, str]:
        r = self.runner.invoke(self.group, [str(a) for a in args], prog_name="ezpz-amsc")
        if r.exception is not None and not isinstance(r.exception, SystemExit):
            raise r.exception
        return r.exit_code, r.stdout, r.stderr


HOOK_SCRIPT = r"""
import json, logging, os, sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="%(name)s: %(message)s")
(ep,) = [e for e in entry_points(group="ezpz.finalize") if e.name == "amsc"]
hook = ep.load()


class History:  # what the hook reads of ezpz's History (docs/ezpz-integration.md)
    pass


for run, metrics, report_dir, mode in json.loads(sys.argv[1]):
    for name in [k for k in os.environ if k.startswith("EZPZ_AMSC_")]:
        del os.environ[name]
    os.environ["EZPZ_AMSC_CONFIG"] = sys.argv[2]
    if mode == "shared":
        os.environ["EZPZ_AMSC_APPEND"] = sys.argv[3]
        os.environ["EZPZ_AMSC_PROVENANCE"] = sys.argv[4]
    h = History()
    h._rank = 0
    h._jsonl_path = Path(metrics)
    h._report_dir = Path(report_dir)
    print(f"hook {mode} {run}", file=sys.stderr)
    hook(h, Path(run))
"""


def _metrics_of(run: Path) -> Path:
    return run / "metrics.jsonl" if (run / "metrics.jsonl").exists() else run / "metrics-0.jsonl"


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def run_everything(cli: Callable[..., tuple[int, str, str]], work: Path, runs: list[Path], *,
                   full: bool, before: dict[Path, str]) -> list[Output]:
    """Every documented way of printing and writing rows and records, on ``runs``;
    returns what each printed. Asserts only that each path was really exercised.
    A file this function edits itself is brought up to date in ``before``."""
    outputs: list[Output] = []

    def run(what: str, *args: object, expect: int | None = 0) -> tuple[int, str, str]:
        code, out, err = cli(*args)
        outputs.extend([Output(f"{what}: stdout", out), Output(f"{what}: stderr", err)])
        assert expect is None or code == expect, f"{what} exited {code}:\n{err}"
        return code, out, err

    results, records = work / "results" / "runs.csv", work / "results" / "records"
    run("export --format json", *runs, "--config", LABEL, "--format", "json")
    run("export --append --provenance", *runs, "--config", LABEL, "--append", results,
        "--provenance", records)
    assert len(_rows(results)) == len(runs)
    assert [p for p in records.iterdir() if p.suffix == ".json"], "no record written"
    run("check --provenance", "check", results, "--provenance", records)
    run("reproduce", "reproduce", *sorted(records.glob("*.json")))
    if not full:
        return outputs
    run("export (csv) --explain", *runs, "--config", LABEL, "--explain")
    run("check --provenance --format json", "check", results, "--provenance", records,
        "--format", "json")
    run("reproduce --format json", "reproduce", *sorted(records.glob("*.json")), "--format", "json")
    run("describe", "describe", results, "--provenance", records)
    # a run that changed since: the messages that compare old and new
    metrics = _metrics_of(runs[0])
    lines = metrics.read_text().splitlines()
    last = json.loads(lines[-1])
    loss_key = "loss" if "loss" in last["metrics"] else "train/loss"
    last["metrics"][loss_key] = last["metrics"][loss_key] + 1.5
    metrics.write_text("\n".join([*lines[:-1], json.dumps(last)]) + "\n")
    before[metrics] = hashlib.sha256(metrics.read_bytes()).hexdigest()
    run("reproduce after an edit", "reproduce", *sorted(records.glob("*.json")), expect=1)
    run("reproduce --format json after an edit", "reproduce", *sorted(records.glob("*.json")),
        "--format", "json", expect=1)
    # the finalize hook: into the run directory, and into a shared results file
    plan = [(str(r), str(_metrics_of(r)), str(next(r.rglob("report*.md")).parent), mode)
            for mode in ("run-dir", "shared") for r in runs]
    hook_results = work / "hook" / "runs.csv"
    p = subprocess.run([sys.executable, "-c", HOOK_SCRIPT, json.dumps(plan), LABEL + "/hook",
                        str(hook_results), str(work / "hook" / "records")],
                       cwd=work, env=_env(work), capture_output=True, text=True, errors="replace",
                       timeout=600)
    outputs += [Output("finalize hook: stdout", p.stdout),
                Output("finalize hook: stderr", p.stderr)]
    assert p.returncode == 0, p.stderr
    assert all((r / "amsc.csv").exists() for r in runs), p.stderr
    assert len(_rows(hook_results)) == len(runs), p.stderr
    return outputs


def leaks_of(form: Form, work: Path, cli: Callable[..., tuple[int, str, str]], *,
             full: bool) -> list[tuple[Secret, str, str]]:
    """(secret, where, the piece found) for every planted secret that got out."""
    runs, secrets = plant(form, work)
    before = _snapshot(work)
    outputs = run_everything(cli, work, runs, full=full, before=before)
    outputs += list(written_files(work, before))
    found = []
    for secret in secrets:
        for output in outputs:
            piece = secret.found_in(output.text)
            if piece is not None:
                found.append((secret, output.what, piece))
    return found


def _describe(form: Form, leaks: list[tuple[Secret, str, str]]) -> str:
    n = len({(s.run, s.place) for s, _, _ in leaks})
    return f"{n} of {len(PLACES)} planted {form.name} secrets got out:\n" + "\n".join(
        f"  planted in run {s.run} {s.place}: found in {where} ({piece!r}...)"
        for s, where, piece in leaks)


# --------------------------------------------------------------------------- the tests


def test_the_table_plants_enough_distinct_secrets() -> None:
    secrets = [s for f in FORMS for s in secrets_of(f)]
    assert len(FORMS) >= 20 and len(secrets) >= 80
    assert len({s.token for s in secrets}) == len(secrets)
    windows = [w for s in secrets for w in s.windows]
    assert len(set(windows)) == len(windows), "two tokens share a piece: leaks misattributed"


@pytest.mark.parametrize("form", FORMS, ids=[f.name for f in FORMS])
def test_no_planted_secret_in_rows_records_or_messages(form: Form, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Quick: in-process through the ezpz.commands entry point; export, append with
    records, check and reproduce."""
    monkeypatch.chdir(tmp_path)
    leaks = leaks_of(form, tmp_path, InProcess(tmp_path), full=False)
    assert not leaks, _describe(form, leaks)


# The subprocess variant costs 15-35 s a form; the suite runs it on forms that differ in
# where a secret sits (a real list, a flag, an env value, a structured value, a file-like
# blob, a URL). `python tests/records/test_planted_secrets.py` runs every form this way.
THROUGH_EVERY_COMMAND = ["argv-json-list", "flag-password-equals-dash", "env-DB_PW",
                         "yaml-inside-env-value", "pem-key-innocent-name",
                         "url-password-with-slash"]


@pytest.mark.slow
@pytest.mark.parametrize("form", [FORM_BY_NAME[n] for n in THROUGH_EVERY_COMMAND],
                         ids=THROUGH_EVERY_COMMAND)
def test_no_planted_secret_anywhere_through_every_command(form: Form, tmp_path: Path) -> None:
    """Every documented command as a subprocess, the finalize hook in both modes, and
    every file anything left under tmp_path."""
    leaks = leaks_of(form, tmp_path, Subprocess(tmp_path), full=True)
    assert not leaks, _describe(form, leaks)


# --------------------------------------------------------------------------- the figures


def main(argv: list[str]) -> int:
    """Print, per form, how many planted secrets got out and where (all commands)."""
    import tempfile

    names = argv or [f.name for f in FORMS]
    total = leaked_total = forms_leaking = 0
    for name in names:
        form = FORM_BY_NAME[name]
        with tempfile.TemporaryDirectory() as tmp:
            leaks = leaks_of(form, Path(tmp), Subprocess(Path(tmp)), full=True)
        secrets = {(s.run, s.place) for s, _, _ in leaks}
        channels = sorted({re.sub(r"[^/]+\.json$", "*.json", where) for _, where, _ in leaks})
        total += len(PLACES)
        leaked_total += len(secrets)
        forms_leaking += bool(secrets)
        print(f"{name:36} {len(secrets):2}/{len(PLACES)} leaked"
              + (f"  from: {'; '.join(sorted(f'{r} {p}' for r, p in secrets))}" if secrets else ""))
        if secrets:
            print(f"{'':36} into: {', '.join(channels)}")
        sys.stdout.flush()
    print(f"\n{leaked_total} of {total} planted secrets leaked; "
          f"{forms_leaking} of {len(names)} forms leak")
    return 1 if leaked_total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
