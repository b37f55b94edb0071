"""Runner for numeric-answer tasks: parse ``name: number`` lines and compare with tolerances (no sandbox)."""

from __future__ import annotations

import math
import re
import time

from pydantic import ValidationError

from interviewer.checker.models import TaskInfo, TestResult, Verdict
from interviewer.checker.sandbox import Sandbox
from interviewer.content.models import NumericCheck
from interviewer.errors import ContentError

_NUMBER = re.compile(r"[-+]?(?:\d+(?:[.,]\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


def answers_of(task: TaskInfo) -> list[NumericCheck]:
    """The authored answers in ``config.answers``, validated."""
    try:
        return [NumericCheck.model_validate(a) for a in task.config.get("answers", [])]
    except ValidationError as e:
        raise ContentError(f"{task.path / 'task.yaml'}: config.answers: {e}") from e


def parse_answers(text: str, names: list[str]) -> dict[str, float]:
    """``name: number`` per line; a lone number answers a single-answer task."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        key = key.strip().strip("`*- ").lower()
        if not sep or key not in names:
            continue
        m = _NUMBER.search(rest)
        if m:
            found.setdefault(key, float(m.group().replace(",", "")))
    if len(names) == 1 and names[0] not in found:
        m = _NUMBER.search(text)
        if m:
            found[names[0]] = float(m.group().replace(",", ""))
    return found


def _fmt(v: float) -> str:
    return f"{v:g}"


def grade(task: TaskInfo, code: str, sandbox: Sandbox) -> Verdict:
    """Each authored answer is one test: within tolerance of the value or of an ``also_accept`` value."""
    start = time.monotonic()
    checks = answers_of(task)
    if not checks:
        raise ContentError(f"{task.path / 'task.yaml'}: config.answers is empty")
    got = parse_answers(code, [c.name.lower() for c in checks])
    tests = []
    for c in checks:
        unit = f" {c.unit}" if c.unit else ""
        v = got.get(c.name.lower())
        if v is None:
            tests.append(TestResult(name=c.name, passed=False,
                                    message=f"no number found: write a line `{c.name}: <number>`"))  # fmt: skip
            continue
        targets = [c.value, *c.also_accept]
        tol = max(c.tolerance, 1e-9 * abs(c.value))
        ok = any(math.isfinite(v) and abs(v - t) <= tol for t in targets)
        msg = ""
        if not ok:
            msg = f"{_fmt(v)} is not within {_fmt(c.tolerance)}{unit} of the expected value"
            if c.unit == "%" and abs(v * 100 - c.value) <= tol:
                msg += f" (give a percentage: {_fmt(v * 100)}, not the fraction {_fmt(v)})"
        tests.append(TestResult(name=c.name, passed=ok, message=msg))
    return Verdict(task_id=task.id, tests=tests, seconds=time.monotonic() - start)
