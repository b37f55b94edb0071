"""Grader for gpu-reduce-sum: a block-level tree reduction in shared memory, combined across blocks."""

from __future__ import annotations

import time

import numpy as np

from interviewer.checker.gpu_tasks.common import (
    Checker,
    KCase,
    KResult,
    case_test,
    draw_seed,
    finish,
    limits,
    lint,
    not_power_of_two,
    prepare,
    run_cases,
    safety_tests,
    shared_memory_test,
    spread_test,
)
from interviewer.checker.models import TaskInfo, TestResult, Verdict
from interviewer.checker.sandbox import Sandbox

__all__ = ["grade", "make_cases", "prepare"]


def make_cases(rng: np.random.Generator) -> list[tuple[str, KCase]]:
    """Inputs drawn from the run's seed; sizes chosen for the edges a reduction gets wrong.

    The small sizes are never powers of two, so a tree that only works for those fails in every run,
    and the spread test runs on the two large sizes, both drawn.
    """
    sizes = [
        ("empty input (n = 0)", 0),
        ("one element", 1),
        ("fewer elements than one warp (not a power of two)", not_power_of_two(rng, 3, 32)),
        ("fewer elements than one block (not a power of two)", not_power_of_two(rng, 33, 128)),
        ("n not a multiple of the block size", 32 * int(rng.integers(28, 36)) + int(rng.integers(1, 32))),
        ("n a power of two", 2 ** int(rng.integers(11, 14))),
    ]
    out = []
    for i, (label, n) in enumerate(sizes):
        x = rng.standard_normal(n).astype(np.float32)
        if label == "n a power of two":
            x = (x + 3.0).astype(np.float32)  # all positive: an off-by-one loses a visible amount
        out.append((label, KCase(f"case{i}", "reduce_sum", {"x": x}, {"out": ((1,), "float32")})))
    return out


def expected(case: KCase) -> float:
    return float(case.inputs["x"].astype(np.float64).sum())


def _check_sum(case: KCase) -> Checker:
    x = case.inputs["x"].astype(np.float64)
    want = float(x.sum())
    tol = 2e-6 * float(np.abs(x).sum()) + 1e-6

    def check(outs: dict[str, np.ndarray]) -> str | None:
        got = outs["out"]
        if got.shape != (1,):
            return f"`out` has shape {got.shape}, expected (1,)"
        g = float(got[0])
        if not np.isfinite(g):
            return (
                f"out[0] is {g}, expected {want:.6g} (never written, or computed from unwritten memory: "
                "out and shared arrays start as garbage on the device)"
            )
        if abs(g - want) > tol:
            return f"out[0] is {g:.7g}, expected {want:.7g} (off by {g - want:.3g}; tolerance {tol:.2g})"
        return None

    return check


def atomics_test(results: list[KResult]) -> TestResult:
    """Blocks combine their partial sums: at most one atomic per launched block, not one per element."""
    name = "per-block partial sums: at most one atomic per block"
    if all(r.error is not None for r in results):
        return TestResult(name=name, passed=False, message="not checked: no case ran")
    for r in results:
        if r.error is not None:
            continue
        atomics, blocks = int(r.num("atomics")), r.blocks_launched()
        if atomics > blocks:
            return TestResult(
                name=name,
                passed=False,
                message=f"case {r.case.name}: {atomics} atomics from {blocks} block(s); reduce inside each block "
                "first (shared memory), then one atomic (or one store to a partials array) per block",
            )
    return TestResult(name=name, passed=True)


def grade(task: TaskInfo, code: str, sandbox: Sandbox, seed: int | None = None) -> Verdict:
    start = time.monotonic()
    bad = lint(task, code, start)
    if bad is not None:
        return bad
    seed = draw_seed(seed)
    labelled = make_cases(np.random.default_rng(seed))
    results, run = run_cases(sandbox, code, [c for _, c in labelled], limits(task))
    ordered = [results[c.name] for _, c in labelled]
    tests = [case_test(results[c.name], label, _check_sum(c)) for label, c in labelled]
    tests += safety_tests(ordered)
    ran = [r for r in ordered if r.case.inputs["x"].size > 0]
    tests.append(shared_memory_test(ran))
    tests.append(atomics_test(ordered))
    big = [r for r in ordered if r.case.inputs["x"].size >= 512]
    tests.append(
        spread_test(
            big,
            "x",
            lambda r: max(64, r.case.inputs["x"].size // 16),
            lambda r: f"n = {r.case.inputs['x'].size}",
        )
    )
    return finish(task, tests, run, start, ordered, seed)
