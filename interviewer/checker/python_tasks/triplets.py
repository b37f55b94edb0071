"""Grader for unique-triplets: the expected set is computed here; the large case enforces O(n^2).

A run that times out is told the growth rate its timed cases showed (e.g. O(n^3)).
"""

from __future__ import annotations

from typing import Any

from interviewer.checker.models import TaskInfo, Verdict
from interviewer.checker.python_tasks.common import Case, prewarm_harness
from interviewer.checker.python_tasks.complexity import Scaling
from interviewer.checker.python_tasks.listcases import as_int_rows, grade_list_task, rng, short
from interviewer.checker.sandbox import Sandbox


def expected_triplets(nums: list[int], target: int) -> set[tuple[int, int, int]]:
    """Independent of the reference: count values, pick a <= b, the third is forced."""
    from collections import Counter

    cnt = Counter(nums)
    vals = sorted(cnt)
    out: set[tuple[int, int, int]] = set()
    for i, a in enumerate(vals):
        for b in vals[i:]:
            c = target - a - b
            if c < b:
                break
            # Enough copies: a == b == c needs 3, a pair of equal values needs 2.
            if c in cnt and (a != b or cnt[a] >= 2) and (b != c or cnt[b] >= (3 if a == b else 2)):
                out.add((a, b, c))
    return out


# Growing sizes, run last and in order: an O(n^3) solution finishes the small ones (their CPU times show its
# growth) and runs out of time on the largest, which an O(n^2) one handles in well under a second.
LADDER = (100, 200, 400, 1000)
SCALING = Scaling(
    sizes={f"{n} numbers (timed)": n for n in LADDER[:-1]}
    | {f"{LADDER[-1]} numbers (needs O(n^2))": LADDER[-1]},
    expected=2,
    how="sort, then two pointers for each first value",
)


def make_cases() -> list[tuple[Case, dict[str, Any]]]:
    """Fresh random inputs each run, plus the classic edge cases."""
    g = rng()
    specs: list[tuple[str, list[int], int]] = [
        ("small with duplicates", [int(v) for v in g.integers(-6, 7, 14)], 0),
        ("all zeros", [0] * int(g.integers(3, 9)), 0),
        ("non-zero target", [int(v) for v in g.integers(-20, 21, 40)], int(g.integers(-10, 11))),
        ("no solution", [int(v) for v in g.integers(1, 5, 6)], 100),
        ("fewer than three numbers", [int(v) for v in g.integers(-3, 4, 2)], 0),
        ("many repeats of few values", [int(v) for v in g.choice([-2, -1, 0, 1, 2, 3], 60)], 1),
        (
            "negative target, wide range",
            [int(v) for v in g.integers(-1000, 1001, 120)],
            int(g.integers(-50, 0)),
        ),
        *((f"{n} numbers (timed)", [int(v) for v in g.integers(-3000, 3001, n)], 0) for n in LADDER[:-1]),
        (f"{LADDER[-1]} numbers (needs O(n^2))", [int(v) for v in g.integers(-3000, 3001, LADDER[-1])], 0),
    ]
    return [
        (
            Case(name=n, func="three_sum", scalars={"nums": nums, "target": t}, json=True),
            {"nums": nums, "target": t},
        )
        for n, nums, t in specs
    ]


def _check(case: Case, inp: dict[str, Any], value: Any) -> str | None:
    rows = as_int_rows(value, 3)
    if isinstance(rows, str):
        return rows
    exp = expected_triplets(inp["nums"], inp["target"])
    unsorted = [r for r in rows if list(r) != sorted(r)]
    if unsorted:
        return f"triplet {list(unsorted[0])} is not sorted ascending"
    if len(rows) != len(set(rows)):
        dup = next(r for r in rows if rows.count(r) > 1)
        return f"triplet {list(dup)} appears {rows.count(dup)} times; each distinct triplet once"
    got = set(rows)
    missing, extra = sorted(exp - got), sorted(got - exp)
    if extra:
        bad = extra[0]
        why = (
            "does not sum to the target"
            if sum(bad) != inp["target"]
            else "uses a value more often than it occurs"
        )
        return f"{list(bad)} is not a valid triplet ({why}); input: nums={short(inp['nums'])}, target={inp['target']}"
    if missing:
        return (
            f"missing {len(missing)} triplet(s), e.g. {list(missing[0])}; "
            f"input: nums={short(inp['nums'])}, target={inp['target']}"
        )
    return None


def grade(task: TaskInfo, code: str, sandbox: Sandbox) -> Verdict:
    """Run the hidden tests and compare sets of triplets here."""
    return grade_list_task(task, code, sandbox, make_cases(), _check, scaling=SCALING)


def prepare(task: TaskInfo, sandbox: Sandbox) -> None:
    """Pre-start a box with the harness loaded, so the next "Run tests" starts warm."""
    prewarm_harness(sandbox, task.limits.to_limits(), torch=False)
