"""Shared grading for tasks whose answers are lists of integers (JSON data, never objects)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from interviewer.checker.models import TaskInfo, TestResult, Verdict
from interviewer.checker.python_tasks.common import (
    Case,
    CaseOutput,
    run_cases,
    run_error,
    syntax_error,
    verdict,
)
from interviewer.checker.python_tasks.complexity import Scaling, growth_note
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


def changed_inputs(case: Case, out: CaseOutput) -> str | None:
    """For a ``check_inputs`` case: which argument the call modified, as a message; None when all are intact."""
    after = out.inputs_after
    if isinstance(after, str):
        return after
    if not isinstance(after, dict):
        return "the arguments did not come back after the call, so they cannot be checked for changes"
    for name, before in case.scalars.items():
        now = after.get(name)
        if now == before:
            continue
        where = f"{case.func}() modified its argument `{name}`"
        if isinstance(before, list) and isinstance(now, list):
            if len(now) != len(before):
                where += f" (len({name}) was {len(before)}, now {len(now)})"
            else:
                k = next(i for i, (u, v) in enumerate(zip(before, now, strict=True)) if u != v)
                where += f" ({name}[{k}] was {short(before[k], 40)}, now {short(now[k], 40)})"
        return (
            f"{where}: the caller's data must stay as it was; build new lists (sorting or extending an "
            "argument in place, or appending the input's own inner lists and then editing them, changes it)"
        )
    return None


def grade_list_task(
    task: TaskInfo,
    code: str,
    sandbox: Sandbox,
    cases: list[tuple[Case, dict[str, Any]]],
    check_one: Callable[[Case, dict[str, Any], Any], str | None],
    *,
    scaling: Scaling | None = None,
) -> Verdict:
    """Run JSON cases in one box run; ``check_one(case, inputs, value)`` returns a failure message or None.

    Cases with ``check_inputs`` also fail when the call modified its arguments. With ``scaling``, a run
    stopped at a time limit gets a note naming the growth rate its cases showed.
    """
    start = time.monotonic()
    err = syntax_error(code)
    if err:
        return verdict(task, [], start, error=err)
    limits = task.limits.to_limits()
    outputs, run = run_cases(sandbox, code, [c for c, _ in cases], limits)
    tests = []
    for c, inputs in cases:
        out = outputs[c.name]
        msg = out.error if out.error is not None else check_one(c, inputs, out.value)
        if out.error is None and c.check_inputs:
            changed = changed_inputs(c, out)
            if changed:
                msg = changed if msg is None else f"{changed}; also {msg}"
        tests.append(TestResult(name=c.name, passed=msg is None, message=msg or ""))
    error = run_error(run)
    if error and scaling is not None:
        cpu = {name: o.cpu_seconds for name, o in outputs.items() if o.cpu_seconds is not None}
        note = growth_note(scaling, cpu, limits.cpu_seconds)
        error = f"{error}; {note}" if note else error
    return verdict(task, tests, start, error=error)


def rng() -> np.random.Generator:
    return np.random.default_rng()
