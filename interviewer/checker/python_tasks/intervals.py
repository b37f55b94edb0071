"""Grader for merge-intervals: the expected union is computed here from a coverage sweep."""

from __future__ import annotations

from typing import Any

import numpy as np

from interviewer.checker.models import TaskInfo, Verdict
from interviewer.checker.python_tasks.common import Case, prewarm_harness
from interviewer.checker.python_tasks.listcases import as_int_rows, grade_list_task, rng, short
from interviewer.checker.sandbox import Sandbox


def expected_union(a: list[list[int]], b: list[list[int]]) -> list[tuple[int, int]]:
    """Independent of the reference: sort all intervals together and sweep."""
    out: list[list[int]] = []
    for s, e in sorted([*map(tuple, a), *map(tuple, b)]):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def random_list(g: np.random.Generator, n: int, span: int) -> list[list[int]]:
    """n sorted, disjoint closed intervals (they may touch the other list's, never each other)."""
    if n == 0:
        return []
    cuts = np.sort(g.choice(np.arange(span), size=2 * n, replace=False))
    return [[int(cuts[2 * i]), int(cuts[2 * i + 1])] for i in range(n)]


def make_cases() -> list[tuple[Case, dict[str, Any]]]:
    """Fresh random inputs each run plus edge cases (empty, touching, nested, one list swallowing the other).

    Every case also checks that the inputs come back unmodified (the statement says so).
    """
    g = rng()
    specs: list[tuple[str, list[list[int]], list[list[int]]]] = [
        ("random overlapping lists", random_list(g, 8, 60), random_list(g, 7, 60)),
        ("first list empty", [], random_list(g, 5, 40)),
        ("both lists empty", [], []),
        ("touching intervals merge", [[1, 3], [8, 9]], [[3, 5], [9, 12]]),
        ("adjacent but not touching stay apart", [[1, 2], [6, 7]], [[3, 4], [8, 9]]),
        ("one interval swallows many", [[0, 100]], random_list(g, 10, 100)),
        ("nested and chained", [[1, 4], [6, 8], [10, 20]], [[2, 3], [4, 6], [8, 10], [21, 22]]),
        ("last interval kept", random_list(g, 3, 30), [[40, 41]]),
        ("long lists", random_list(g, 2000, 20000), random_list(g, 2000, 20000)),
    ]
    return [
        (
            Case(name=n, func="merge_intervals", scalars={"a": a, "b": b}, json=True, check_inputs=True),
            {"a": a, "b": b},
        )
        for n, a, b in specs
    ]


def _check(case: Case, inp: dict[str, Any], value: Any) -> str | None:
    rows = as_int_rows(value, 2)
    if isinstance(rows, str):
        return rows
    exp = expected_union(inp["a"], inp["b"])
    if rows == exp:
        return None
    where = f"input: a={short(inp['a'])}, b={short(inp['b'])}"
    for k, (g_, e_) in enumerate(zip(rows, exp, strict=False)):
        if g_ != e_:
            return f"interval {k} is {list(g_)}, expected {list(e_)}; {where}"
    if len(rows) < len(exp):
        return f"{len(rows)} intervals, expected {len(exp)}: {list(exp[len(rows)])} is missing; {where}"
    return f"{len(rows)} intervals, expected {len(exp)}: extra {list(rows[len(exp)])}; {where}"


def grade(task: TaskInfo, code: str, sandbox: Sandbox) -> Verdict:
    """Run the hidden tests and compare the unions here."""
    return grade_list_task(task, code, sandbox, make_cases(), _check)


def prepare(task: TaskInfo, sandbox: Sandbox) -> None:
    """Pre-start a box with the harness loaded, so the next "Run tests" starts warm."""
    prewarm_harness(sandbox, task.limits.to_limits(), torch=False)
