"""Grader for gpu-online-softmax: row softmax, stable for huge and tiny logits, two reads of x at most."""

from __future__ import annotations

import math

import numpy as np

from interviewer.checker.gpu_tasks.common import (
    Checker,
    KCase,
    KResult,
    compare,
    grade_cases,
    loads_per_element_test,
    prepare,
    shared_memory_test,
    spread_test,
)
from interviewer.checker.models import TaskInfo, TestResult, Verdict
from interviewer.checker.sandbox import Sandbox

__all__ = ["expected", "grade", "make_cases", "prepare"]


def expected(x: np.ndarray) -> np.ndarray:
    """Row softmax in float64 with the max subtracted (the independent truth)."""
    x64 = x.astype(np.float64)
    m = np.max(x64, axis=1, keepdims=True)
    e = np.exp(x64 - m)
    return e / e.sum(axis=1, keepdims=True)


def make_cases(rng: np.random.Generator) -> list[tuple[str, KCase, Checker]]:
    def rows(r: int, c: int, scale: float = 1.0, shift: float = 0.0) -> np.ndarray:
        return (rng.standard_normal((r, c)) * scale + shift).astype(np.float32)

    masked = rows(3, int(rng.integers(60, 80)), 3.0)
    masked[rng.random(masked.shape) < 0.3] = -np.inf
    masked[:, 0] = rng.standard_normal(3).astype(np.float32)  # every row keeps a finite logit
    specs = [
        ("a single element", rows(1, 1)),
        ("rows shorter than the block", rows(3, int(rng.integers(3, 20)))),
        ("row length not a multiple of the block", rows(4, 64 * 2 + int(rng.integers(1, 63)))),
        ("wide rows", rows(2, int(rng.integers(280, 320)))),
        ("huge logits (~800: exp overflows unless the max is subtracted)", rows(3, 90, 5.0, 800.0)),
        ("very negative logits (~-800: every exp underflows to 0 without the max)", rows(3, 90, 5.0, -800.0)),
        ("masked logits (-inf entries, as in causal attention)", masked),
    ]
    out: list[tuple[str, KCase, Checker]] = []
    for i, (label, x) in enumerate(specs):
        case = KCase(f"case{i}", "softmax_rows", {"x": x}, {"out": (x.shape, "float32")})
        want = expected(x)

        def check(outs: dict[str, np.ndarray], want: np.ndarray = want) -> str | None:
            return compare(outs["out"], want, rtol=1e-4, atol=1e-6, what="out")

        out.append((label, case, check))
    return out


def _extra(results: list[KResult]) -> list[TestResult]:
    wide = [r for r in results if r.case.inputs["x"].shape[1] >= 64]
    return [
        shared_memory_test(results),
        loads_per_element_test(
            results,
            "x",
            2.0,
            "an online softmax reads x twice: one pass keeps a running max and a sum rescaled by "
            "exp(old_max - new_max) when the max grows, the second writes exp(x - max) / sum",
        ),
        spread_test(
            wide,
            "x",
            lambda r: 2 * math.ceil(r.case.inputs["x"].shape[1] / 32) + 2,
            lambda r: f"rows of {r.case.inputs['x'].shape[1]}: at least 32 threads per row",
        ),
    ]


def grade(task: TaskInfo, code: str, sandbox: Sandbox, seed: int | None = None) -> Verdict:
    return grade_cases(task, code, sandbox, make_cases, _extra, seed)
