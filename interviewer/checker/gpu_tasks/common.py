"""Grading machinery for the GPU kernel tasks: run the simulator box, read its data, judge it here.

The box (``simbox.py``) returns each case's output arrays and its measurements (launches, races, barrier
divergence, uninitialised shared reads, global loads/stores and sectors, shared bank conflicts). Everything
that decides a pass lives in this process: the expected values, the tolerances and the bounds.
"""

from __future__ import annotations

import io
import json
import math
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from interviewer.checker.models import TaskInfo, TestResult, Verdict
from interviewer.checker.python_tasks.common import _npz_arrays, missing_reason, run_error
from interviewer.checker.sandbox import Limits, RunResult, Sandbox

from . import policy

HARNESS = Path(__file__).with_name("simbox.py")
ARGV = [sys.executable, "-I", "harness.py"]


@dataclass
class KCase:
    """One hidden test: the candidate's host function called with device arrays."""

    name: str
    func: str
    inputs: dict[str, np.ndarray]
    outputs: dict[str, tuple[tuple[int, ...], str]]
    scalars: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        parts = [f"{k} {tuple(v.shape)} {v.dtype}" for k, v in self.inputs.items()]
        parts += [f"{k}={v!r}" for k, v in self.scalars.items()]
        return ", ".join(parts)


@dataclass
class KResult:
    """What came back for one case."""

    case: KCase
    outputs: dict[str, np.ndarray] | None = None
    error: str | None = None
    report: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    modified: list[str] = field(default_factory=list)

    def num(self, *path: str) -> float:
        """A number from the report (0 when missing or malformed: the box is untrusted)."""
        cur: Any = self.report
        for p in path:
            cur = cur.get(p) if isinstance(cur, dict) else None
        return float(cur) if isinstance(cur, (int, float)) and not isinstance(cur, bool) else 0.0

    def texts(self, key: str) -> list[str]:
        v = self.report.get(key)
        return [str(x)[:600] for x in v] if isinstance(v, list) else []

    def arrays(self) -> dict[str, dict[str, Any]]:
        v = self.report.get("arrays")
        return {str(k): d for k, d in v.items() if isinstance(d, dict)} if isinstance(v, dict) else {}

    def shared(self) -> dict[str, dict[str, Any]]:
        v = self.report.get("shared")
        return {str(k): d for k, d in v.items() if isinstance(d, dict)} if isinstance(v, dict) else {}

    def launches(self) -> list[dict[str, Any]]:
        v = self.report.get("launches")
        return [d for d in v if isinstance(d, dict)] if isinstance(v, list) else []

    def blocks_launched(self) -> int:
        total = 0
        for ln in self.launches():
            g = ln.get("grid")
            if isinstance(g, list) and all(isinstance(x, int) for x in g):
                total += math.prod(g)
        return total


def run_cases(
    sandbox: Sandbox, code: str, cases: list[KCase], limits: Limits
) -> tuple[dict[str, KResult], RunResult]:
    """Run every case in one box; return per-case results (a missing case gets an error)."""
    inputs: dict[str, np.ndarray] = {}
    for c in cases:
        for k, v in c.inputs.items():
            inputs[f"{c.name}__{k}"] = v
    buf = io.BytesIO()
    np.savez(buf, **inputs)  # type: ignore[arg-type]
    spec = {
        "cases": [
            {
                "name": c.name,
                "func": c.func,
                "inputs": list(c.inputs),
                "outputs": {k: [list(s), d] for k, (s, d) in c.outputs.items()},
                "scalars": c.scalars,
            }
            for c in cases
        ]
    }
    files: dict[str, bytes | str] = {
        "solution.py": code,
        "harness.py": HARNESS.read_bytes(),
        "inputs.npz": buf.getvalue(),
        "spec.json": json.dumps(spec),
    }
    collect = ["results.jsonl"] + [f"out{i}.npz" for i in range(len(cases))]
    run = sandbox.run(files, ARGV, limits=limits, collect=collect)
    return _parse(run, cases), run


def _parse(run: RunResult, cases: list[KCase]) -> dict[str, KResult]:
    records: dict[str, dict[str, Any]] = {}
    import_error: str | None = None
    for line in run.files.get("results.jsonl", b"").decode("utf-8", "replace").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(rec, dict) or not isinstance(rec.get("case"), str):
            continue
        if rec["case"] == "__import__":
            import_error = str(rec.get("error", "import failed"))
        records.setdefault(rec["case"], rec)
    out: dict[str, KResult] = {}
    for i, c in enumerate(cases):
        rec = records.get(c.name)
        if import_error is not None:
            out[c.name] = KResult(c, error=f"importing your code failed: {import_error}")
            continue
        if rec is None:
            out[c.name] = KResult(c, error=missing_reason(run))
            continue
        report = rec.get("report") if isinstance(rec.get("report"), dict) else {}
        sec = rec.get("seconds")
        seconds = float(sec) if isinstance(sec, (int, float)) else 0.0
        modified = [str(m) for m in rec.get("modified_inputs", []) if isinstance(m, str)]
        res = KResult(c, report=report or {}, seconds=seconds, modified=modified)
        if "error" in rec:
            res.error = str(rec["error"])[:1200]
        else:
            data = run.files.get(f"out{i}.npz")
            try:
                if data is None:
                    raise ValueError("no output arrays came back")
                arrays = _npz_arrays(data)
                if len(arrays) != len(c.outputs):
                    raise ValueError(f"{len(arrays)} arrays came back, expected {len(c.outputs)}")
                res.outputs = dict(zip(c.outputs, arrays, strict=True))
            except Exception as e:  # hostile or broken data is a failed case, never a crash
                res.error = f"the output is unusable ({e})"
        out[c.name] = res
    return out


# ------------------------------------------------------------------------------------------------ checks
def compare(got: np.ndarray, expected: np.ndarray, *, rtol: float, atol: float, what: str) -> str | None:
    """None when equal within tolerance, else where and by how much it differs."""
    if got.shape != expected.shape:
        return f"`{what}` has shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
    g = got.astype(np.float64)
    e = expected.astype(np.float64)
    bad_nan = ~np.isfinite(g) & np.isfinite(e)
    if bad_nan.any():
        idx = tuple(int(i) for i in np.argwhere(bad_nan)[0])
        hint = (
            " (NaN: never written, or an overflow/0/0; outputs start as garbage, like cudaMalloc'd memory)"
            if np.isnan(g[idx])
            else " (overflow)"
        )
        return f"`{what}`{list(idx)} is {g[idx]}, expected {e[idx]:.6g}{hint}"
    ok = np.isclose(g, e, rtol=rtol, atol=atol) | (np.isnan(g) & np.isnan(e)) | (g == e)
    if ok.all():
        return None
    err = np.where(ok, 0.0, np.abs(g - e))
    err = np.where(np.isnan(err), np.inf, err)
    idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(err)), err.shape))
    n_bad = int((~ok).sum())
    return (
        f"`{what}`{list(idx)} is {g[idx]:.6g}, expected {e[idx]:.6g} ({n_bad} of {g.size} elements off; "
        f"tolerance rtol={rtol:g}, atol={atol:g})"
    )


def case_test(res: KResult, label: str, check: Callable[[dict[str, np.ndarray]], str | None]) -> TestResult:
    """The correctness test of one case: its error, else what ``check`` says about the outputs."""
    name = f"{label} [{res.case.describe()}]"
    if res.error is not None:
        return TestResult(name=name, passed=False, message=res.error)
    assert res.outputs is not None
    msg = check(res.outputs)
    return TestResult(name=name, passed=msg is None, message=msg or "")


def _first(results: Iterable[KResult], key: str, count_key: str | None = None) -> tuple[str | None, int]:
    first, total = None, 0
    for r in results:
        items = r.texts(key)
        n = int(r.num(count_key)) if count_key else len(items)
        total += n
        if items and first is None:
            first = f"{items[0]} (case {r.case.name})"
    return first, total


def safety_tests(results: list[KResult]) -> list[TestResult]:
    """The sanitizer-style checks every kernel task gets: races, barriers, uninitialised shared, inputs."""
    tests = []
    race, n_race = _first(results, "races", "race_count")
    tests.append(
        TestResult(
            name="no data races (racecheck: same element, same barrier interval, two threads, one writes)",
            passed=race is None,
            message="" if race is None else f"{race}; {n_race} conflicting access(es) in all",
        )
    )
    div, _ = _first(results, "divergence")
    tests.append(
        TestResult(
            name="every thread of a block reaches every cuda.syncthreads() (synccheck)",
            passed=div is None,
            message=div or "",
        )
    )
    un, n_un = _first(results, "uninit", "uninit_count")
    tests.append(
        TestResult(
            name="no reads of uninitialised shared memory (initcheck)",
            passed=un is None,
            message="" if un is None else f"{un}; {n_un} such read(s) in all",
        )
    )
    changed = [f"{r.case.name}: {', '.join(r.modified)}" for r in results if r.modified]
    tests.append(
        TestResult(
            name="inputs are left unchanged",
            passed=not changed,
            message="" if not changed else f"your kernels wrote into the inputs ({'; '.join(changed[:3])})",
        )
    )
    return tests


def shared_memory_test(results: list[KResult], *, need_barrier: bool = True) -> TestResult:
    """The kernel must stage data in shared memory (and synchronise) in every case that launched work."""
    ran = [r for r in results if r.error is None and r.launches()]
    bad = []
    for r in ran:
        loads = sum(
            float(s.get("loads", 0) or 0)
            for s in r.shared().values()
            if isinstance(s.get("loads", 0), (int, float))
        )
        if loads <= 0 or (need_barrier and r.num("barriers") <= 0):
            bad.append(r.case.name)
    passed = bool(ran) and not bad
    msg = ""
    if not ran:
        msg = "no case ran a kernel"
    elif bad:
        msg = (
            f"in case {bad[0]} no shared array was read"
            + (" or no cuda.syncthreads() completed" if need_barrier else "")
            + ": this task asks for a block-level algorithm in shared memory (cuda.shared.array + cuda.syncthreads())"
        )
    return TestResult(name="uses shared memory" + (" and cuda.syncthreads()" if need_barrier else ""),
                      passed=passed, message=msg)  # fmt: skip


def spread_test(res: KResult, array: str, bound: int, what: str) -> TestResult:
    """No thread loads more than ``bound`` elements of ``array``: the work is split over many threads."""
    name = f"the work is spread over threads (no thread loads more than {bound} elements of `{array}`)"
    if res.error is not None:
        return TestResult(
            name=name, passed=False, message=f"case {res.case.name} did not run: {res.error[:200]}"
        )
    got = int(res.num("arrays", array, "max_loads_per_thread"))
    if got == 0:
        return TestResult(
            name=name, passed=False, message=f"no kernel read `{array}` in case {res.case.name}"
        )
    return TestResult(
        name=name,
        passed=got <= bound,
        message=""
        if got <= bound
        else f"one thread loaded {got} elements of `{array}` in case {res.case.name} "
        f"({what}); launch enough threads that each handles a small share",
    )


def lint(task: TaskInfo, code: str, start: float) -> Verdict | None:
    """The policy check as a verdict when it fails (nothing ran), else None."""
    problems = policy.check(code)
    if not problems:
        return None
    shown = "; ".join(problems[:8]) + (f"; and {len(problems) - 8} more" if len(problems) > 8 else "")
    return Verdict(
        task_id=task.id,
        seconds=time.monotonic() - start,
        error=f"not run: the code goes outside the CUDA-Python subset this task accepts: {shown}",
    )


def finish(task: TaskInfo, tests: list[TestResult], run: RunResult, start: float) -> Verdict:
    return Verdict(task_id=task.id, tests=tests, seconds=time.monotonic() - start, error=run_error(run))


def limits(task: TaskInfo) -> Limits:
    return task.limits.to_limits()


def prepare(task: TaskInfo, sandbox: Sandbox) -> None:
    """Pre-start a box with NumPy, Numba's simulator and greenlet imported."""
    sandbox.prewarm({"harness.py": HARNESS.read_bytes()}, ARGV, limits(task))


Checker = Callable[[dict[str, np.ndarray]], str | None]


def grade_cases(
    task: TaskInfo,
    code: str,
    sandbox: Sandbox,
    labelled: list[tuple[str, KCase, Checker]],
    extra: Callable[[list[KResult]], list[TestResult]],
) -> Verdict:
    """The common flow: policy check, one box for all cases, correctness per case, then ``extra`` tests."""
    start = time.monotonic()
    bad = lint(task, code, start)
    if bad is not None:
        return bad
    results, run = run_cases(sandbox, code, [c for _, c, _ in labelled], limits(task))
    ordered = [results[c.name] for _, c, _ in labelled]
    tests = [case_test(results[c.name], label, chk) for label, c, chk in labelled]
    tests += safety_tests(ordered)
    tests += extra(ordered)
    return finish(task, tests, run, start)


def loads_per_element_test(results: list[KResult], array: str, limit: float, why: str) -> TestResult:
    """Global loads of ``array`` divided by its size, over all cases, at most ``limit``."""
    loads = sum(r.num("arrays", array, "loads") for r in results if r.error is None)
    size = sum(r.case.inputs[array].size for r in results if r.error is None)
    name = f"reads each element of `{array}` from global memory at most {limit:g} times"
    if size == 0:
        return TestResult(name=name, passed=False, message="no case ran")
    per = loads / size
    return TestResult(
        name=name,
        passed=per <= limit + 1e-9,
        message="" if per <= limit + 1e-9 else f"`{array}` was read {per:.2f} times per element; {why}",
    )
