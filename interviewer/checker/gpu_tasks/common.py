"""Grading machinery for the GPU kernel tasks: run the simulator box, read its data, judge it here.

The box (``simbox.py``) returns each case's output arrays and its measurements (launches, races, barrier
divergence, uninitialised shared reads, global loads/stores and sectors, shared bank conflicts). Everything
that decides a pass lives in this process: the expected values, the tolerances and the bounds.
"""

from __future__ import annotations

import io
import json
import math
import secrets
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from interviewer.checker import channel
from interviewer.checker.models import TaskInfo, TestResult, Verdict
from interviewer.checker.python_tasks.common import _npz_arrays, missing_reason, read_signed_run, run_error
from interviewer.checker.sandbox import Limits, RunResult, Sandbox

from . import policy

HARNESS = Path(__file__).with_name("simbox.py")
RELAY = Path(__file__).parents[1] / "python_tasks" / "harness_box.py"  # shipped as relay.py
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
    voided: bool = False  # the whole run does not count (forged results, a refused file write...)

    def num(self, *path: str) -> float:
        """A number from the report (0 when missing or malformed: the box is untrusted)."""
        cur: Any = self.report
        for p in path:
            cur = cur.get(p) if isinstance(cur, dict) else None
        if isinstance(cur, bool) or not isinstance(cur, (int, float)):
            return 0.0
        return float(cur) if math.isfinite(cur) else 0.0

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
            if isinstance(g, list) and len(g) == 3 and all(type(x) is int and 0 < x <= MAX_COUNT for x in g):
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
    key = channel.new_key()
    files: dict[str, bytes | str] = {
        **_box_program(),
        "solution.py": code,
        "inputs.npz": buf.getvalue(),
        "spec.json": json.dumps(spec),
        channel.KEY_FILE: key,
    }
    # The relay names a case's arrays a<seq>.npz after the record that follows them (one per case, plus
    # the import failure record).
    collect = ["results.jsonl"] + [f"a{i}.npz" for i in range(len(cases) + 1)]
    run = sandbox.run(files, ARGV, limits=limits, collect=collect)
    return _parse(run, cases, key), run


def _box_program() -> dict[str, bytes | str]:
    return {"harness.py": HARNESS.read_bytes(), "relay.py": RELAY.read_bytes()}


# Bounds on what a case's report may hold: counts of events in one case of at most 65,536 threads each.
MAX_COUNT = 10**12
_REPORT_LISTS = ("launches", "races", "divergence", "uninit", "host_errors")
_REPORT_DICTS = ("arrays", "shared")


def report_problem(report: Any, path: str = "report") -> str | None:
    """Why a case's measurements are unusable (a number that is not a count, a wrong type), else None.

    The box is untrusted: every number must be a plain integer in [0, MAX_COUNT]; floats (inf, nan), bools
    and anything huge make the case fail with this message instead of reaching a comparison.
    """
    if isinstance(report, bool):
        return f"{path} is a boolean, expected a count"
    if isinstance(report, int):
        return None if 0 <= report <= MAX_COUNT else f"{path} = {report} is out of range"
    if isinstance(report, float):
        return f"{path} = {report!r} is not an integer count"
    if report is None or isinstance(report, str):
        return None
    if isinstance(report, list):
        for i, v in enumerate(report[:10_000]):
            bad = report_problem(v, f"{path}[{i}]")
            if bad:
                return bad
        return None if len(report) <= 10_000 else f"{path} has {len(report)} items"
    if isinstance(report, dict):
        for k, v in list(report.items())[:10_000]:
            bad = report_problem(v, f"{path}.{k}")
            if bad:
                return bad
        return None if len(report) <= 10_000 else f"{path} has {len(report)} keys"
    return f"{path} has type {type(report).__name__}"


def _check_report(report: Any) -> str | None:
    if not isinstance(report, dict):
        return "the report is not a mapping"
    bad = report_problem(report)
    if bad:
        return bad
    for k in _REPORT_LISTS:
        if not isinstance(report.get(k, []), list):
            return f"report.{k} is not a list"
    for k in _REPORT_DICTS:
        v = report.get(k, {})
        if not isinstance(v, dict) or not all(isinstance(d, dict) for d in v.values()):
            return f"report.{k} is not a mapping of mappings"
    return None


def _parse(run: RunResult, cases: list[KCase], key: str) -> dict[str, KResult]:
    """Match the relay's signed records to the cases; anything forged, malformed or missing is an error.

    Never raises on what the box wrote: a forged line, a refused file write, a non-finite or out-of-range
    measurement becomes the error of the cases it affects, with the reason.
    """
    signed = read_signed_run(run, key)
    imp = signed.records.get("__import__")
    import_error = str(imp.get("error", "import failed"))[:1000] if imp else None
    out: dict[str, KResult] = {}
    for c in cases:
        rec = signed.records.get(c.name)
        if signed.problem is not None:
            out[c.name] = KResult(c, error=f"not counted: {signed.problem}", voided=True)
            continue
        if import_error is not None:
            out[c.name] = KResult(c, error=f"importing your code failed: {import_error}")
            continue
        if rec is None:
            out[c.name] = KResult(c, error=missing_reason(run))
            continue
        report = rec.get("report", {})
        bad = _check_report(report)
        if bad is not None:
            out[c.name] = KResult(
                c, error=f"the measurements from the box are unusable ({bad[:200]}): not counted"
            )
            continue
        sec = rec.get("seconds")
        ok = isinstance(sec, (int, float)) and not isinstance(sec, bool) and 0 <= sec < 1e6  # NaN fails
        seconds = float(sec) if ok and sec is not None else 0.0
        mods = rec.get("modified_inputs", [])
        modified = [str(m)[:100] for m in mods[:20] if isinstance(m, str)] if isinstance(mods, list) else []
        res = KResult(c, report=report, seconds=seconds, modified=modified)
        if "error" in rec:
            res.error = str(rec["error"])[:1200]
        else:
            try:
                if c.name not in signed.arrays:
                    raise ValueError("no output arrays came back")
                data = signed.arrays[c.name]
                if data is None:
                    raise ValueError("the output arrays were changed after the harness wrote them")
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


def root_cause(res: KResult) -> str | None:
    """The first race, barrier divergence or uninitialised read of a case: what makes its output undefined."""
    for key in ("races", "divergence", "uninit"):
        items = res.texts(key)
        if items:
            return items[0]
    return None


def case_test(res: KResult, label: str, check: Callable[[dict[str, np.ndarray]], str | None]) -> TestResult:
    """The correctness test of one case: its error, else what ``check`` says about the outputs.

    When the case also raced (or diverged at a barrier, or read unwritten shared memory), the message leads
    with that: a wrong or garbage value is its symptom, and the race is what to fix.
    """
    name = f"{label} [{res.case.describe()}]"
    if res.error is not None:
        msg: str | None = res.error
    else:
        assert res.outputs is not None
        msg = check(res.outputs)
    if msg is None:
        return TestResult(name=name, passed=True)
    cause = root_cause(res) if not res.voided else None
    if cause:
        msg = f"{cause}. The output is undefined after that; in this run: {msg}"
    return TestResult(name=name, passed=False, message=msg)


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
    """The sanitizer-style checks every kernel task gets: races, barriers, uninitialised shared, inputs.

    Each needs at least one case that reported back: a run that produced no measurements shows nothing
    to be clean of.
    """
    if not any(r.report for r in results):
        why = next((r.error for r in results if r.error), None) or "no case reported back"
        names = (
            "no data races (racecheck)",
            "every thread of a block reaches every cuda.syncthreads() (synccheck)",
            "no reads of uninitialised shared memory or unwritten device memory (initcheck)",
            "inputs are left unchanged",
        )
        return [TestResult(name=n, passed=False, message=f"not checked: {why[:300]}") for n in names]
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
            name="no reads of uninitialised shared memory or unwritten device memory (initcheck)",
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


def spread_test(
    results: KResult | list[KResult],
    array: str,
    bound: Callable[[KResult], int],
    what: Callable[[KResult], str],
) -> TestResult:
    """In every given case, no thread loads more than ``bound(case)`` elements of ``array``.

    Run on several cases of drawn sizes, so a kernel cannot spread the work only at one size it expects.
    """
    group = results if isinstance(results, list) else [results]
    bounds = sorted({bound(r) for r in group})
    shown = f"{bounds[0]}" if len(bounds) == 1 else f"{bounds[0]}-{bounds[-1]}, by size"
    name = f"the work is spread over threads (no thread loads more than {shown} elements of `{array}`)"
    if not group:
        return TestResult(name=name, passed=False, message="no case to measure")
    for res in group:
        b = bound(res)
        if res.error is not None:
            return TestResult(
                name=name, passed=False, message=f"case {res.case.name} did not run: {res.error[:200]}"
            )
        got = int(res.num("arrays", array, "max_loads_per_thread"))
        if got == 0:
            return TestResult(
                name=name, passed=False, message=f"no kernel read `{array}` in case {res.case.name}"
            )
        if got > b:
            return TestResult(
                name=name,
                passed=False,
                message=f"one thread loaded {got} elements of `{array}` in case {res.case.name} ({what(res)}; "
                f"the bound there is {b}); launch enough threads that each handles a small share",
            )
    return TestResult(name=name, passed=True)


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


def finish(
    task: TaskInfo,
    tests: list[TestResult],
    run: RunResult,
    start: float,
    results: Iterable[KResult] = (),
    seed: int | None = None,
) -> Verdict:
    voided = next((r.error for r in results if r.voided), None)
    return Verdict(
        task_id=task.id,
        tests=tests,
        seconds=time.monotonic() - start,
        error=voided or run_error(run),
        seed=seed,
    )


def not_power_of_two(rng: np.random.Generator, lo: int, hi: int) -> int:
    """A size in [lo, hi) that is not a power of two: a tree that assumes one must fail every run."""
    while True:
        n = int(rng.integers(lo, hi))
        if n & (n - 1):
            return n


def draw_seed(seed: int | None) -> int:
    """The seed of this run's hidden inputs: the one asked for (to repeat a verdict), else a fresh one."""
    return secrets.randbits(62) if seed is None else int(seed)


def limits(task: TaskInfo) -> Limits:
    return task.limits.to_limits()


def prepare(task: TaskInfo, sandbox: Sandbox) -> None:
    """Pre-start a box with NumPy, Numba's simulator and greenlet imported."""
    sandbox.prewarm(_box_program(), ARGV, limits(task))


Checker = Callable[[dict[str, np.ndarray]], str | None]


def grade_cases(
    task: TaskInfo,
    code: str,
    sandbox: Sandbox,
    make_cases: Callable[[np.random.Generator], list[tuple[str, KCase, Checker]]],
    extra: Callable[[list[KResult]], list[TestResult]],
    seed: int | None = None,
) -> Verdict:
    """The common flow: policy check, cases drawn from the run's seed, one box for all of them, correctness
    per case, then ``extra`` tests. The verdict carries the seed, so ``--seed`` repeats the same inputs."""
    start = time.monotonic()
    bad = lint(task, code, start)
    if bad is not None:
        return bad
    seed = draw_seed(seed)
    labelled = make_cases(np.random.default_rng(seed))
    results, run = run_cases(sandbox, code, [c for _, c, _ in labelled], limits(task))
    ordered = [results[c.name] for _, c, _ in labelled]
    tests = [case_test(results[c.name], label, chk) for label, c, chk in labelled]
    tests += safety_tests(ordered)
    tests += extra(ordered)
    return finish(task, tests, run, start, ordered, seed)


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
