"""Secrets kept out of provenance records: by key name, and on launch lines.

A record copies ``run_info.json``'s sections and the launch command; a value
whose name says it is a secret is replaced by :data:`REDACTED` before it is.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "<redacted>"
# A key holding one of these words (any case) holds a secret: its value is never copied.
SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "CREDENTIAL")
# Secrets on a launch line: "--hf-token abc", "--api-key=abc", "'--hf-token', 'abc'" (a
# list repr), "HF_TOKEN=abc python ...". There a secret word must be a whole part of the
# name, so that "--tokenizer" or "--max-tokens" (settings worth keeping) stay as they are.
_FLAG_VALUE = re.compile(r"(--?[A-Za-z][\w.-]*)(=|\s+|',\s*')((?!-)[^\s',\"]+)")
_ASSIGN = re.compile(r"\b([A-Za-z_]\w*)=([^\s',\"]+)")
_SECRET_PARTS = frozenset({*(w.lower() for w in SECRET_WORDS), "credentials", "secrets",
                           "passwd", "apikey"})
_NAME_PARTS = re.compile(r"[-_.]+")


def is_secret(key: str) -> bool:
    upper = key.upper()
    return any(word in upper for word in SECRET_WORDS)


def _secret_name(name: str) -> bool:
    return any(part in _SECRET_PARTS for part in _NAME_PARTS.split(name.lower()))


def redact(value: Any) -> Any:
    """``value`` with every secret-looking key's value replaced, at any depth.

    Strings are also searched for secrets passed on a command line: the value
    of a flag or of a ``NAME=value`` whose name has a secret word as one of its
    parts.
    """
    if isinstance(value, dict):
        return {k: REDACTED if is_secret(str(k)) else redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    if isinstance(value, str):
        value = _FLAG_VALUE.sub(
            lambda m: f"{m[1]}{m[2]}{REDACTED}" if _secret_name(m[1]) else m[0], value)
        return _ASSIGN.sub(lambda m: f"{m[1]}={REDACTED}" if _secret_name(m[1]) else m[0],
                           value)
    return value
