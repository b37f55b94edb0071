"""Name the growth rate of a solution that ran out of time, from the CPU times of cases of growing size.

The times come from the box, so they are a hint for the message only: a pass or a fail never rests on them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

_MIN_SECONDS = 0.002  # below this, timer resolution and start-up noise swamp the growth


@dataclass(frozen=True)
class Scaling:
    """Which cases form the size ladder of a task, and the complexity the task expects."""

    sizes: dict[str, int]  # case name -> input size n, smallest first
    expected: int  # the exponent of the expected O(n^k)
    how: str  # the expected approach, e.g. "sort, then two pointers"


def fitted_exponent(points: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of log(time) against log(n); None without two usable sizes."""
    pts = [(math.log(n), math.log(t)) for n, t in points if n > 0 and t >= _MIN_SECONDS]
    if len({x for x, _ in pts}) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx


def growth_note(scaling: Scaling, cpu: dict[str, float], limit_s: float) -> str | None:
    """One sentence for a run stopped at its time limit: the measured growth and the expected complexity.

    None when every size of the ladder finished (the time went elsewhere, so there is nothing to say).

    Args:
        scaling: the task's size ladder.
        cpu: CPU seconds per case name, for the cases that finished.
        limit_s: the run's CPU limit, for the extrapolation.
    """
    points = [(n, cpu[name]) for name, n in scaling.sizes.items() if name in cpu]
    unfinished = [n for name, n in scaling.sizes.items() if name not in cpu]
    want = f"the expected is O(n^{scaling.expected}) ({scaling.how})"
    if not unfinished:
        return None
    stuck = min(unfinished)
    k = fitted_exponent(points)
    if k is None:
        return f"it did not finish the input of size n={stuck}; {want}"
    n_last, t_last = max(points)
    seen = ", ".join(f"{t:.2f} s at n={n}" for n, t in points if t >= _MIN_SECONDS)
    guess = t_last * (stuck / n_last) ** k
    growth = (
        f"its CPU time grew like n^{k:.1f} ({seen}), which predicts about {guess:.0f} s at n={stuck} against "
        f"a {limit_s:g} s limit"
    )
    looks = round(k)
    if looks > scaling.expected:
        return f"your solution looks O(n^{looks}): {growth}; {want}"
    return (
        f"its CPU time grew like n^{k:.1f} ({seen}), which is not worse than expected, yet it did not finish "
        f"n={stuck}: look for a large constant factor (copying or sorting inside the loop) or an input that "
        f"makes it slower; {want}"
    )
