"""Secrets kept out of provenance records: by the name they are under, and by their shape.

A record copies ``run_info.json``'s sections, the launch command and the
export's details; a secret in any of them is replaced by :data:`REDACTED`
before it is copied (docs/provenance.md, "Secrets"):

- **by name**: the value of a key that names a secret, at any depth (any case:
  ``HF_TOKEN``, ``Password``, ``MYSQL_PASSWD``, ``GITHUB_PAT``, ``COOKIE``);
- **on a command line**: the value after a flag whose name has a secret word as
  one of its parts, however it is written (``--hf-token X``, ``--api-key=X``,
  ``--hf-token "X"``, ``--accessToken X``, ``'--hf-token', 'X'`` in a list
  repr), and of a ``NAME=value`` whose name does (``AWS_SESSION_TOKEN="X"``);
  ``--tokenizer gpt2`` and ``--max-tokens 4096`` are settings and stay;
- **by shape**, anywhere in any string: the user and password of a URL
  (``postgres://me:pw@db/x``), a bearer token, and tokens whose format
  announces them (GitHub, GitLab, Hugging Face, AWS access key ids, Slack,
  OpenAI-style ``sk-``, JSON web tokens).
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "<redacted>"
# A key holding one of these (any case) holds a secret: its value is never copied.
SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASS", "CREDENTIAL", "COOKIE", "PRIVATE", "AUTH",
                "SIGNATURE")
# ... and so does a key with one of these as a whole part (GITHUB_PAT, DB_PWD, SENTRY_DSN).
SECRET_KEY_PARTS = frozenset({"pat", "pwd", "dsn", "otp"})
# Names that are no secret although they match: the shell's working folders.
NOT_SECRET_KEYS = frozenset({"PWD", "OLDPWD"})
# A flag or NAME= on a command line names a secret when it contains one of these anywhere
# (HF_TOKEN, MYSQLPASSWORD, --accessToken; but --tokenizer and --max-tokens are settings)...
_SECRET_INSIDE = re.compile(r"token(?!izer|s)|passw|passphrase|secret|credential|apikey|"
                            r"accesskey|privatekey|cookie", re.IGNORECASE)
# ... or has one of these as a whole part (--db-pass, GH_PAT, --api-key; not --passes, --path).
SECRET_PARTS = frozenset({"key", "pass", "pwd", "auth", "authorization", "pat", "dsn", "otp",
                          "bearer"})

_VALUE = r"(\"[^\"]*\"|'[^']*'|(?!-)[^\s'\",;]+)"
_FLAG_VALUE = re.compile(r"(--?[A-Za-z][\w.-]*)(=|\s+|',\s*'|\",\s*\")" + _VALUE)
_ASSIGN = re.compile(r"(?<![\w.-])([A-Za-z_][\w.-]*)=" + _VALUE)
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@'\"]+@")
_BEARER = re.compile(r"(?i)\b(bearer|token)(\s+)[A-Za-z0-9._~+/=-]{8,}")
_AUTH_HEADER = re.compile(r"(?i)\b(authorization\s*:\s*)[^'\"\n]+")
_KNOWN_TOKENS = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}|glpat-[\w-]{20,}|hf_[A-Za-z0-9]{30,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}|xox[abprs]-[\w-]{10,}|sk-[A-Za-z0-9_-]{20,}"
    r"|eyJ[\w-]{10,}\.[\w-]{10,}\.[\w-]{10,})")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NAME_PARTS = re.compile(r"[-_.\s]+")


def is_secret(key: str) -> bool:
    """Whether a key (of a section of run_info.json, at any depth) names a secret."""
    upper = key.upper()
    if upper in NOT_SECRET_KEYS:
        return False
    return any(word in upper for word in SECRET_WORDS) or not SECRET_KEY_PARTS.isdisjoint(
        _parts(key))


def _parts(name: str) -> list[str]:
    """``--accessToken`` → ``access, token``; ``HF_TOKEN`` → ``hf, token``."""
    return [p for p in _NAME_PARTS.split(_CAMEL.sub("_", name).lower()) if p]


def _secret_name(name: str) -> bool:
    """Whether a flag or a ``NAME=`` on a command line names a secret."""
    return not SECRET_PARTS.isdisjoint(_parts(name)) or bool(_SECRET_INSIDE.search(name))


def redact_text(text: str) -> str:
    """``text`` with every secret it holds by its shape, or after a secret name, replaced."""
    text = _URL_USERINFO.sub(lambda m: f"{m[1]}{REDACTED}@", text)
    text = _KNOWN_TOKENS.sub(REDACTED, text)
    text = _AUTH_HEADER.sub(lambda m: f"{m[1]}{REDACTED}", text)
    text = _BEARER.sub(lambda m: f"{m[1]}{m[2]}{REDACTED}", text)
    text = _FLAG_VALUE.sub(
        lambda m: f"{m[1]}{m[2]}{REDACTED}" if _secret_name(m[1]) else m[0], text)
    return _ASSIGN.sub(lambda m: f"{m[1]}={REDACTED}" if _secret_name(m[1]) else m[0], text)


def redact(value: Any, by_key: bool = True) -> Any:
    """``value`` with every secret replaced by :data:`REDACTED`, at any depth.

    Every string is searched by :func:`redact_text`; with ``by_key`` (data
    copied from the run), a dict's value under a secret key goes whole. Without
    it (the export's own details, whose keys are this tool's field names), only
    the strings are searched.
    """
    if isinstance(value, dict):
        return {k: REDACTED if by_key and is_secret(str(k)) else redact(v, by_key)
                for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, by_key) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value
