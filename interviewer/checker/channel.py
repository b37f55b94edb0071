"""The box's results channel as the grader reads it: signed lines, bounded in size, depth and number size.

A harness in the box signs every line it writes with a per-run key (HMAC-SHA256) that candidate code never
holds: the grader puts the key in the box, the trusted harness reads and deletes it after starting the
candidate's process and before letting it run, and that process cannot read the harness's memory. So a
line the candidate writes (or rewrites) into the results file fails verification, and whatever it returned
is parsed here with limits: a malformed, deep, huge or oversized value is a failed case with a message,
never an exception in the grader or a huge stored verdict.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass, field
from typing import Any

KEY_FILE = ".key"
MAX_LINE_BYTES = 1 << 20  # one record (a returned JSON value included)
MAX_DEPTH = 32
MAX_INT_DIGITS = 100
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")


class ResultError(ValueError):
    """An unusable value from the box; the message says what was wrong with it."""


def new_key() -> str:
    """A fresh per-run key, hex (written into the box as ``.key``)."""
    return secrets.token_hex(32)


def sign(key: str, payload: bytes) -> str:
    """The tag of one line (the harness in the box computes the same with the stdlib)."""
    return hmac.new(bytes.fromhex(key), payload, hashlib.sha256).hexdigest()


def _depth(text: str) -> int:
    stripped = _STRINGS.sub('""', text)
    depth = best = 0
    for ch in _BRACKETS.findall(stripped):
        depth += 1 if ch in "[{" else -1
        best = max(best, depth)
    return best


def _parse_int(s: str) -> int:
    digits = len(s.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise ResultError(f"a returned integer has {digits} digits (the limit is {MAX_INT_DIGITS})")
    return int(s)


def loads_bounded(text: str) -> Any:
    """``json.loads`` with limits: size, nesting depth, integer digits. Raises ResultError with the reason."""
    if len(text) > MAX_LINE_BYTES:
        raise ResultError(f"the returned value is {len(text)} characters (the limit is {MAX_LINE_BYTES})")
    depth = _depth(text)
    if depth > MAX_DEPTH:
        raise ResultError(f"the returned value is nested {depth} levels deep (the limit is {MAX_DEPTH})")
    try:
        return json.loads(text, parse_int=_parse_int)
    except ResultError:
        raise
    except (ValueError, RecursionError) as e:  # JSONDecodeError is a ValueError
        raise ResultError(f"the returned data is not valid JSON ({str(e)[:200]})") from e


@dataclass
class Records:
    """Verified records in file order, and what was wrong with the rest."""

    items: list[dict[str, Any]] = field(default_factory=list)
    forged: int = 0  # lines without a valid tag: written by something other than the harness
    problems: list[str] = field(default_factory=list)


def read_signed(data: bytes, key: str) -> Records:
    """Every line ``<hex tag> <json>`` whose tag verifies; others are counted, never trusted or parsed."""
    out = Records()
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        tag, _, payload = raw.partition(b" ")
        if len(raw) > MAX_LINE_BYTES + 80 or not hmac.compare_digest(tag, sign(key, payload).encode()):
            out.forged += 1
            continue
        try:
            rec = loads_bounded(payload.decode("utf-8"))
        except (ResultError, UnicodeDecodeError) as e:
            out.problems.append(str(e))
            continue
        if isinstance(rec, dict):
            out.items.append(rec)
    return out


def forged_message(n: int) -> str:
    return (
        f"{n} line(s) in the results file were not written by the test harness (the results channel is "
        "signed with a key your code never sees): the run does not count"
    )
