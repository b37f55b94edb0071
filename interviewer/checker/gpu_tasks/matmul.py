"""Grader for gpu-tiled-matmul: C = A @ B with shared-memory tiles; global loads counted and bounded."""

from __future__ import annotations

import numpy as np

from interviewer.checker.gpu_tasks.common import (
    Checker,
    KCase,
    KResult,
    compare,
    grade_cases,
    prepare,
    shared_memory_test,
)
from interviewer.checker.models import TaskInfo, TestResult, Verdict
from interviewer.checker.sandbox import Sandbox

__all__ = ["grade", "make_cases", "prepare"]

MIN_REUSE = 4.0  # the naive kernel loads 2*M*N*K elements; tiles must cut that at least this much


def make_cases(rng: np.random.Generator) -> list[tuple[str, KCase, Checker]]:
    j = lambda lo, hi: int(rng.integers(lo, hi))  # noqa: E731
    specs = [
        ("1 x 1 times 1 x 1", (1, 1, 1)),
        ("smaller than one tile", (j(3, 8), j(2, 6), j(5, 10))),
        ("sizes not multiples of the tile", (j(17, 24), j(33, 40), j(17, 24))),
        ("multiples of 16", (16 * j(2, 4), 16 * j(2, 4), 16 * j(2, 4))),
        ("drawn sizes", (j(24, 41), j(24, 41), j(24, 41))),
    ]
    out: list[tuple[str, KCase, Checker]] = []
    for i, (label, (m, k, n)) in enumerate(specs):
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        want = a.astype(np.float64) @ b.astype(np.float64)
        case = KCase(f"case{i}", "matmul", {"a": a, "b": b}, {"c": ((m, n), "float32")})

        def check(outs: dict[str, np.ndarray], want: np.ndarray = want, k: int = k) -> str | None:
            return compare(outs["c"], want, rtol=1e-4, atol=1e-5 * k, what="c")

        out.append((f"{label} (M, K, N = {m}, {k}, {n})", case, check))
    return out


def reuse_test(results: list[KResult]) -> TestResult:
    """On every case of at least 16 in each dimension (several drawn sizes), global loads of A and B at
    most naive / MIN_REUSE: a kernel cannot tile only at a size it expects."""
    name = f"tiles cut global loads of A and B at least {MIN_REUSE:g}x below the naive 2*M*N*K (every case of 16+ per side)"
    big = [r for r in results if min(*r.case.inputs["a"].shape, r.case.inputs["b"].shape[1]) >= 16]
    if not big:
        return TestResult(name=name, passed=False, message="no case large enough to measure")
    for r in big:
        m, k = r.case.inputs["a"].shape
        n = r.case.inputs["b"].shape[1]
        naive = 2 * m * n * k
        if r.error is not None:
            return TestResult(
                name=name, passed=False, message=f"case {r.case.name} did not run: {r.error[:200]}"
            )
        loads = int(r.num("arrays", "a", "loads") + r.num("arrays", "b", "loads"))
        if loads == 0:
            return TestResult(
                name=name, passed=False, message=f"no kernel loaded A or B in case {r.case.name}"
            )
        if loads > naive / MIN_REUSE:
            return TestResult(
                name=name,
                passed=False,
                message=f"at M, K, N = {m}, {k}, {n}, A and B were loaded {loads} times ({naive / loads:.1f}x below "
                f"naive {naive}); stage TILE x TILE blocks of A and B in shared memory so each loaded element "
                "is used TILE times",
            )
    return TestResult(name=name, passed=True)


def _extra(results: list[KResult]) -> list[TestResult]:
    return [shared_memory_test(results), reuse_test(results)]


def grade(task: TaskInfo, code: str, sandbox: Sandbox, seed: int | None = None) -> Verdict:
    return grade_cases(task, code, sandbox, make_cases, _extra, seed)
