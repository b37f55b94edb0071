"""Grader for gpu-transpose: exact values, coalesced global loads/stores, no shared bank conflicts."""

from __future__ import annotations

from typing import Any

import numpy as np

from interviewer.checker.gpu_tasks.common import (
    Checker,
    KCase,
    KResult,
    grade_cases,
    prepare,
    shared_memory_test,
)
from interviewer.checker.models import TaskInfo, TestResult, Verdict
from interviewer.checker.sandbox import Sandbox

__all__ = ["grade", "make_cases", "prepare"]

MAX_SECTORS = 8.0  # 32 float32 lanes touch 4 32-byte sectors when coalesced, 32 when strided
MAX_WAYS = 2  # shared-memory bank conflict degree allowed


def make_cases(rng: np.random.Generator) -> list[tuple[str, KCase, Checker]]:
    j = lambda lo, hi: int(rng.integers(lo, hi))  # noqa: E731
    specs = [
        ("1 x 1", (1, 1)),
        ("smaller than one tile", (j(2, 8), j(2, 8))),
        ("sides not multiples of the tile", (j(33, 48), j(65, 80))),
        ("multiples of 32", (32 * j(2, 4), 32 * j(2, 4))),
        ("drawn sides", (j(64, 97), j(64, 97))),
    ]
    out: list[tuple[str, KCase, Checker]] = []
    for i, (label, (r, c)) in enumerate(specs):
        a = rng.standard_normal((r, c)).astype(np.float32)
        want = a.T.copy()
        case = KCase(f"case{i}", "transpose", {"a": a}, {"out": ((c, r), "float32")})

        def check(outs: dict[str, np.ndarray], want: np.ndarray = want) -> str | None:
            got = outs["out"]
            if got.shape != want.shape:
                return f"`out` has shape {got.shape}, expected {want.shape}"
            bad = ~((got == want) | (np.isnan(got) & np.isnan(want)))
            if not bad.any():
                return None
            idx = tuple(int(v) for v in np.argwhere(bad)[0])
            hint = " (never written: outputs start as garbage)" if np.isnan(got[idx]) else ""
            return f"out{list(idx)} is {got[idx]}, expected {want[idx]} ({int(bad.sum())} of {want.size} wrong){hint}"

        out.append((f"{label} ({r} x {c})", case, check))
    return out


def coalescing_test(results: list[KResult]) -> TestResult:
    """Every case of at least 32 per side (several drawn shapes): a kernel cannot coalesce only at one shape."""
    name = f"coalesced global loads and stores (at most {MAX_SECTORS:g} 32-byte sectors per warp access, every case of 32+ per side)"
    big = [r for r in results if min(r.case.inputs["a"].shape) >= 32]
    if not big:
        return TestResult(name=name, passed=False, message="no case large enough to measure")
    for r in big:
        shape = "x".join(str(v) for v in r.case.inputs["a"].shape)
        if r.error is not None:
            return TestResult(
                name=name, passed=False, message=f"case {r.case.name} did not run: {r.error[:200]}"
            )
        msgs = []
        for arr, kind in (("a", "load"), ("out", "store")):
            req = r.num("arrays", arr, f"{kind}_requests")
            sec = r.num("arrays", arr, f"{kind}_sectors")
            if req == 0:
                msgs.append(f"no {kind}s of `{arr}` were recorded")
                continue
            per = sec / req
            if per > MAX_SECTORS:
                worst = r.arrays().get(arr, {}).get(f"worst_{kind}")
                line = f" (worst at line {worst[1]})" if isinstance(worst, list) and len(worst) == 2 else ""
                msgs.append(
                    f"{kind}s of `{arr}` touch {per:.1f} sectors per warp access{line}: consecutive threads "
                    f"(threadIdx.x) should {kind} consecutive addresses; go through a shared-memory tile"
                )
        if msgs:
            return TestResult(name=name, passed=False, message=f"{shape} input: " + "; ".join(msgs))
    return TestResult(name=name, passed=True)


def bank_conflict_test(results: list[KResult]) -> TestResult:
    name = f"shared-memory accesses at most {MAX_WAYS}-way bank conflicted"
    worst: tuple[int, str, Any] | None = None
    for r in results:
        for arr, st in r.shared().items():
            ways = st.get("max_ways", 1)
            if isinstance(ways, int) and ways > MAX_WAYS and (worst is None or ways > worst[0]):
                worst = (ways, arr, st.get("worst_conflict"))
    if worst is None:
        return TestResult(name=name, passed=True)
    ways, arr, detail = worst
    line = f" at line {detail[1]} ({detail[2]})" if isinstance(detail, list) and len(detail) == 3 else ""
    return TestResult(
        name=name,
        passed=False,
        message=f"{ways}-way bank conflict on `{arr}`{line}: a warp reading a column of a [32][32] float tile "
        "hits one bank 32 times; pad the row to 33 elements",
    )


def _extra(results: list[KResult]) -> list[TestResult]:
    return [shared_memory_test(results), coalescing_test(results), bank_conflict_test(results)]


def grade(task: TaskInfo, code: str, sandbox: Sandbox, seed: int | None = None) -> Verdict:
    return grade_cases(task, code, sandbox, make_cases, _extra, seed)
