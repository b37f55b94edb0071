"""Shared grading for tasks whose answers are lists of integers (JSON data, never objects)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from interviewer.checker.models import TaskInfo, TestResult, Verdict
from interviewer.checker.python_tasks.common import Case, run_cases, run_error, syntax_error, verdict
from interviewer.checker.sandbox import Sandbox


def as_int_rows(value: Any, width: int) -> list[tuple[int, ...]] | str:
    """Validate untrusted JSON as a list of integer rows of a given width; a message when it is not."""
    if not isinstance(value, list):
        return f"returned {type(value).__name__}; expected a list of [{', '.join('x' * width)}] lists"
    rows = []
    for r in value:
        if not (isinstance(r, list) and len(r) == width and all(isinstance(v, int) and not isinstance(v, bool) for v in r)):  # fmt: skip
            return f"item {r!r} is not a list of {width} integers"
        rows.append(tuple(r))
    return rows


def short(v: Any, limit: int = 160) -> str:
    s = repr(v)
    return s if len(s) <= limit else s[:limit] + "..."


def grade_list_task(
    task: TaskInfo,
    code: str,
    sandbox: Sandbox,
    cases: list[tuple[Case, dict[str, Any]]],
    check_one: Callable[[Case, dict[str, Any], Any], str | None],
) -> Verdict:
    """Run JSON cases in one box run; ``check_one(case, inputs, value)`` returns a failure message or None."""
    start = time.monotonic()
    err = syntax_error(code)
    if err:
        return verdict(task, [], start, error=err)
    outputs, run = run_cases(sandbox, code, [c for c, _ in cases], task.limits.to_limits())
    tests = []
    for c, inputs in cases:
        out = outputs[c.name]
        msg = out.error if out.error is not None else check_one(c, inputs, out.value)
        tests.append(TestResult(name=c.name, passed=msg is None, message=msg or ""))
    return verdict(task, tests, start, error=run_error(run))


def rng() -> np.random.Generator:
    return np.random.default_rng()
