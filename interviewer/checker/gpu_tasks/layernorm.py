"""Grader for gpu-layernorm: per-row mean and biased variance, stable far from zero."""

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

EPS = 1e-5


def expected(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=1, keepdims=True)  # biased, as LayerNorm uses
    return (x64 - mean) / np.sqrt(var + eps) * gamma.astype(np.float64) + beta.astype(np.float64)


def make_cases(rng: np.random.Generator) -> list[tuple[str, KCase, Checker]]:
    def rows(r: int, c: int, shift: float = 0.0) -> np.ndarray:
        return (rng.standard_normal((r, c)) + shift).astype(np.float32)

    # Variance near eps: with variance ~1 the place of eps (inside or outside the square root) moves the
    # output by ~5e-6, below any float32 tolerance; at variance ~eps it changes the output by ~40%.
    tiny = (rng.standard_normal((3, int(rng.integers(70, 100)))) * float(rng.uniform(2e-3, 5e-3))).astype(
        np.float32
    )
    specs = [
        ("one column (variance 0: the output is beta)", rows(2, 1), 1e-4),
        ("rows shorter than the block", rows(3, int(rng.integers(3, 20))), 1e-4),
        ("row length not a multiple of the block", rows(4, 64 * 2 + int(rng.integers(1, 63))), 1e-4),
        ("values far from zero (mean 1e4, std 1: E[x^2] - E[x]^2 cancels)", rows(3, int(rng.integers(200, 260)), 1e4), 5e-3),
        ("variance near eps (std ~3e-3: eps belongs inside the square root, 1 / sqrt(var + eps))", tiny, 1e-4),
    ]  # fmt: skip
    out: list[tuple[str, KCase, Checker]] = []
    for i, (label, x, tol) in enumerate(specs):
        c = x.shape[1]
        gamma = (1.0 + 0.5 * rng.standard_normal(c)).astype(np.float32)
        beta = (0.5 * rng.standard_normal(c)).astype(np.float32)
        want = expected(x, gamma, beta, EPS)
        case = KCase(
            f"case{i}",
            "layernorm",
            {"x": x, "gamma": gamma, "beta": beta},
            {"out": (x.shape, "float32")},
            {"eps": EPS},
        )

        def check(outs: dict[str, np.ndarray], want: np.ndarray = want, tol: float = tol) -> str | None:
            return compare(outs["out"], want, rtol=1e-4, atol=tol, what="out")

        out.append((label, case, check))
    return out


def _extra(results: list[KResult]) -> list[TestResult]:
    wide = [r for r in results if r.case.inputs["x"].shape[1] >= 64]
    return [
        shared_memory_test(results),
        loads_per_element_test(
            results,
            "x",
            3.0,
            "a two-pass LayerNorm reads x three times (mean, variance, output); Welford twice",
        ),
        spread_test(
            wide,
            "x",
            lambda r: 3 * math.ceil(r.case.inputs["x"].shape[1] / 32) + 3,
            lambda r: f"rows of {r.case.inputs['x'].shape[1]}: at least 32 threads per row",
        ),
    ]


def grade(task: TaskInfo, code: str, sandbox: Sandbox, seed: int | None = None) -> Verdict:
    return grade_cases(task, code, sandbox, make_cases, _extra, seed)
