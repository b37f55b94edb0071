"""Grader for gpu-histogram: exact counts, atomics, and a per-block shared histogram (privatisation)."""

from __future__ import annotations

import numpy as np

from interviewer.checker.gpu_tasks.common import (
    Checker,
    KCase,
    KResult,
    grade_cases,
    prepare,
    shared_memory_test,
    spread_test,
)
from interviewer.checker.models import TaskInfo, TestResult, Verdict
from interviewer.checker.sandbox import Sandbox

__all__ = ["grade", "make_cases", "prepare"]


def make_cases(rng: np.random.Generator) -> list[tuple[str, KCase, Checker]]:
    n_odd = 32 * int(rng.integers(28, 34)) + int(rng.integers(1, 32))
    specs = [
        ("empty input (all bins 0)", np.zeros(0, np.int32), 16),
        ("one value", rng.integers(0, 4, 1).astype(np.int32), 4),
        ("n not a multiple of the block size", rng.integers(0, 10, n_odd).astype(np.int32), 10),
        (
            "more bins than threads per block",
            rng.integers(0, 300, int(rng.integers(2500, 3500))).astype(np.int32),
            300,
        ),
        (
            "every value in one bin (contention)",
            np.full(int(rng.integers(3500, 4500)), int(rng.integers(0, 8)), np.int32),
            8,
        ),
    ]
    out: list[tuple[str, KCase, Checker]] = []
    for i, (label, x, nbins) in enumerate(specs):
        want = np.bincount(x, minlength=nbins).astype(np.int64)
        case = KCase(f"case{i}", "histogram", {"x": x}, {"hist": ((nbins,), "int32")})

        def check(outs: dict[str, np.ndarray], want: np.ndarray = want) -> str | None:
            got = outs["hist"].astype(np.int64)
            if got.shape != want.shape:
                return f"`hist` has shape {got.shape}, expected {want.shape}"
            if np.array_equal(got, want):
                return None
            b = int(np.flatnonzero(got != want)[0])
            hint = " (hist arrives holding garbage: zero it on the device)" if abs(got[b]) > 1_000_000 else ""
            return (
                f"hist[{b}] is {got[b]}, expected {want[b]} ({int((got != want).sum())} of {want.size} bins wrong; "
                f"total {got.sum()} vs {want.sum()}){hint}"
            )

        out.append((f"{label}: n = {x.size}, {nbins} bins", case, check))
    return out


def privatisation_test(results: list[KResult]) -> TestResult:
    """Global atomics at most (blocks launched) x (bins): counts are gathered per block in shared memory."""
    name = "per-block shared histograms: at most one global atomic per bin per block"
    if all(r.error is not None for r in results):
        return TestResult(name=name, passed=False, message="not checked: no case ran")
    for r in results:
        if r.error is not None or r.case.inputs["x"].size == 0:
            continue
        nbins = r.case.outputs["hist"][0][0]
        atomics = int(r.num("arrays", "hist", "atomics"))
        bound = r.blocks_launched() * nbins
        if atomics > bound:
            return TestResult(
                name=name,
                passed=False,
                message=f"case {r.case.name}: {atomics} global atomics on hist (bound {bound}); count into a "
                "shared-memory histogram per block (shared atomics are cheap), then add each bin to hist once",
            )
    return TestResult(name=name, passed=True)


def _extra(results: list[KResult]) -> list[TestResult]:
    ran = [r for r in results if r.case.inputs["x"].size > 0]
    big = [r for r in results if r.case.inputs["x"].size >= 512]
    return [
        shared_memory_test(ran),
        privatisation_test(results),
        spread_test(
            big,
            "x",
            lambda r: max(64, r.case.inputs["x"].size // 16),
            lambda r: f"n = {r.case.inputs['x'].size}",
        ),
    ]


def grade(task: TaskInfo, code: str, sandbox: Sandbox, seed: int | None = None) -> Verdict:
    return grade_cases(task, code, sandbox, make_cases, _extra, seed)
