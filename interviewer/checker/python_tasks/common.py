"""Shared grading machinery for Python tasks: ship inputs into the box, read data back, compare outside."""

from __future__ import annotations

import ast
import hashlib
import io
import json
import sys
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from interviewer.checker import channel
from interviewer.checker.models import TaskInfo, TestResult, Verdict
from interviewer.checker.python_tasks import harness_box as policy
from interviewer.checker.sandbox import Limits, RunResult, Sandbox

HARNESS = Path(__file__).with_name("harness_box.py")
_MAX_NPZ_BYTES = 64 * 1024 * 1024


@dataclass
class Case:
    """One hidden test: the candidate's function called with these arguments."""

    name: str
    func: str
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    scalars: dict[str, Any] = field(default_factory=dict)
    json: bool = False  # the result is lists/numbers (JSON), not arrays
    check_inputs: bool = False  # JSON cases: the box sends the scalars back as they are after the call

    def describe(self) -> str:
        """The input, briefly, for a failure message."""
        parts = [f"{k} shape {tuple(v.shape)} {v.dtype}" for k, v in self.arrays.items()]
        parts += [f"{k}={v!r}" for k, v in self.scalars.items()]
        return ", ".join(parts)


@dataclass
class CaseOutput:
    """What came back for one case: arrays, a JSON value, or an error text."""

    arrays: list[np.ndarray] | None = None
    value: Any = None
    error: str | None = None
    cpu_seconds: float | None = None  # the call's CPU time as the box measured it (a hint, never a verdict)
    inputs_after: Any = None  # with ``Case.check_inputs``: the scalar arguments after the call


def syntax_error(code: str) -> str | None:
    """The first syntax error as a message, parsed here (nothing is executed)."""
    try:
        ast.parse(code)
    except SyntaxError as e:
        return f"syntax error at line {e.lineno}: {e.msg}"
    return None


def find_loops(code: str) -> list[tuple[int, str]]:
    """Python-level loops in ``code`` (statements, comprehensions, np.vectorize & co. under any name,
    recursion), by line. The same rule is applied at run time to code compiled then (see harness_box.py)."""
    return policy.loop_problems(ast.parse(code))


# What a NumPy-only task may import, and names that run or reach code the syntax tree cannot see.
NUMPY_ONLY_IMPORTS = {"numpy", "math", "typing", "__future__"}
_DYNAMIC_NAMES = {
    "exec", "eval", "compile", "__import__", "getattr", "setattr", "delattr", "globals", "locals", "vars",
    "breakpoint", "open", "input", "__builtins__", "__loader__", "__spec__", "importlib",
}  # fmt: skip


def numpy_only_problems(code: str) -> list[tuple[int, str]]:
    """Ways ``code`` steps outside plain NumPy (other imports, dynamic code, private attributes, names that
    reach the interpreter's internals such as ``gc`` or a frame), by line.

    This is the first half of the rule; the harness enforces the rest at run time (see harness_box.py).
    """
    found: list[tuple[int, str]] = []
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.partition(".")[0] not in NUMPY_ONLY_IMPORTS:
                    found.append((node.lineno, f"import of {alias.name!r} (only NumPy and math)"))
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level or mod.partition(".")[0] not in NUMPY_ONLY_IMPORTS:
                found.append((node.lineno, f"import from {mod or '.'!r} (only NumPy and math)"))
        elif isinstance(node, ast.Name) and node.id in _DYNAMIC_NAMES:
            found.append((node.lineno, f"use of {node.id}() (code the checker cannot read)"))
    seen = set(found)
    found += [p for p in policy.internals_problems(tree) if p not in seen]
    return sorted(set(found))


def _npz_arrays(data: bytes) -> list[np.ndarray]:
    """Arrays from an untrusted .npz: size-checked before decompression, no pickle, numeric dtypes only."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        if sum(i.file_size for i in zf.infolist()) > _MAX_NPZ_BYTES:
            raise ValueError("the returned arrays are larger than 64 MiB")
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        keys = sorted(npz.files, key=lambda k: int(k[1:]) if k[1:].isdigit() else 1 << 30)
        out = [np.array(npz[k]) for k in keys]
    for a in out:
        if a.dtype.kind not in "biufc":
            raise ValueError(f"returned dtype {a.dtype}; expected numbers")
    return out


def run_cases(
    sandbox: Sandbox,
    code: str,
    cases: list[Case],
    limits: Limits,
    *,
    torch: bool = False,
    policy: str | None = None,
) -> tuple[dict[str, CaseOutput], RunResult]:
    """Run every case in one sandbox run; return per-case outputs (missing cases get an error).

    ``policy="numpy"``: the harness refuses, at run time, what a NumPy-only task forbids (see harness_box).
    A run whose results file holds lines the harness did not sign, or that broke the policy, gets the
    reason as the error of every case it affects (see :func:`parse_outputs`).
    """
    inputs: dict[str, np.ndarray] = {}
    for c in cases:
        for k, v in c.arrays.items():
            inputs[f"{c.name}__{k}"] = v
    buf = io.BytesIO()
    np.savez(buf, **inputs)  # type: ignore[arg-type]
    spec = {
        "torch": torch,
        "policy": policy,
        "cases": [
            {
                "name": c.name,
                "func": c.func,
                "arrays": list(c.arrays),
                "scalars": c.scalars,
                "json": c.json,
                "check_inputs": c.check_inputs,
            }
            for c in cases
        ],
    }
    key = channel.new_key()
    files: dict[str, bytes | str] = {
        "solution.py": code,
        "harness.py": HARNESS.read_bytes(),
        "inputs.npz": buf.getvalue(),
        "spec.json": json.dumps(spec),
        channel.KEY_FILE: key,
    }
    collect = ["results.jsonl"] + [f"a{i}.npz" for i in range(len(cases) + 1)]
    run = sandbox.run(files, harness_argv(torch), limits=limits, collect=collect)
    return parse_outputs(run, cases, key), run


def harness_argv(torch: bool) -> list[str]:
    """The box command; ``--torch`` imports torch before waiting for ``.go`` (so a warm box has it loaded)."""
    return [sys.executable, "-I", "harness.py", *(["--torch"] if torch else [])]


def prewarm_harness(sandbox: Sandbox, limits: Limits, *, torch: bool) -> bool:
    """Pre-start a box with the harness (and torch) loaded for the next run of a task with these limits."""
    return sandbox.prewarm({"harness.py": HARNESS.read_bytes()}, harness_argv(torch), limits)


@dataclass
class SignedRun:
    """The harness's verified records by case (first wins), arrays by case, and a whole-run problem."""

    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    arrays: dict[str, bytes | None] = field(default_factory=dict)  # None: the file was changed afterwards
    problem: str | None = None


def read_signed_run(run: RunResult, key: str) -> SignedRun:
    """Verify ``results.jsonl`` line by line; never raises on what the box wrote."""
    signed = channel.read_signed(run.files.get("results.jsonl", b""), key)
    out = SignedRun(problem=channel.forged_message(signed.forged) if signed.forged else None)
    for item in signed.items:
        if "violation" in item:
            out.problem = out.problem or f"rule broken at run time: {str(item['violation'])[:500]}"
            continue
        if "oversize" in item:
            out.problem = out.problem or f"the run was stopped: {str(item['oversize'])[:300]}"
            continue
        try:
            rec = channel.loads_bounded(str(item.get("msg", "")))
        except channel.ResultError as e:
            out.problem = out.problem or str(e)
            continue
        if not isinstance(rec, dict) or not isinstance(rec.get("case"), str) or rec["case"] in out.records:
            continue  # first record wins: later lines cannot overwrite
        out.records[rec["case"]] = rec
        name = item.get("npz")
        if isinstance(name, str):
            data = run.files.get(name)
            ok = data is not None and hashlib.sha256(data).hexdigest() == item.get("sha256")
            out.arrays[rec["case"]] = data if ok else None
    return out


def parse_outputs(run: RunResult, cases: list[Case], key: str) -> dict[str, CaseOutput]:
    """Match the box's signed records to the cases; anything forged, malformed or missing is an error.

    Never raises on what the box wrote: deep, huge or malformed values become that case's error.
    """
    signed = read_signed_run(run, key)
    imp = signed.records.get("__import__")
    import_error = str(imp.get("error", "import failed"))[:1000] if imp else None
    out: dict[str, CaseOutput] = {}
    for c in cases:
        rec = signed.records.get(c.name)
        if signed.problem is not None:
            out[c.name] = CaseOutput(error=signed.problem)
        elif import_error is not None:
            out[c.name] = CaseOutput(error=f"importing your code failed: {import_error}")
        elif rec is None:
            out[c.name] = CaseOutput(error=missing_reason(run))
        elif "error" in rec:
            out[c.name] = CaseOutput(error=str(rec["error"])[:1000])
        elif c.json:
            out[c.name] = CaseOutput(value=rec.get("value"), inputs_after=rec.get("inputs_after"))
        else:
            out[c.name] = _case_arrays(signed, c.name)
        cpu = rec.get("cpu_seconds") if rec is not None else None
        if isinstance(cpu, (int, float)) and not isinstance(cpu, bool) and 0 <= cpu < 1e6:
            out[c.name].cpu_seconds = float(cpu)
    return out


def _case_arrays(signed: SignedRun, name: str) -> CaseOutput:
    if name not in signed.arrays:
        return CaseOutput(error="no output arrays came back for this case")
    data = signed.arrays[name]
    if data is None:
        return CaseOutput(error="the returned arrays were changed after the harness wrote them: not counted")
    try:
        return CaseOutput(arrays=_npz_arrays(data))
    except Exception as e:  # a malformed or hostile file is a failed case, never a crash
        return CaseOutput(error=f"the returned data is unusable ({e})")


def missing_reason(run: RunResult) -> str:
    """Why a case produced no result: a limit, a crash, or an early exit."""
    if run.killed_reason:
        return f"no result: the run was stopped ({run.killed_reason})"
    tail = run.stderr.strip().splitlines()[-1:] if run.stderr.strip() else []
    if run.returncode not in (0, None):
        return f"no result: the process died (exit {run.returncode}){': ' + tail[0] if tail else ''}"
    return "no result: the program exited before this case ran (an early exit does not pass)"


def compare_array(
    got: np.ndarray,
    expected: np.ndarray,
    case: Case,
    *,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    what: str = "",
) -> str | None:
    """None when equal within tolerance, else a message with shape, dtype, max abs error and the input."""
    label = f"{what} " if what else ""
    if got.shape != expected.shape:
        return f"{label}shape {tuple(got.shape)}, expected {tuple(expected.shape)} (input: {case.describe()})"
    if expected.dtype.kind == "f" and got.dtype.kind not in "fiu":
        return f"{label}dtype {got.dtype}, expected a float array"
    g = got.astype(np.float64)
    e = expected.astype(np.float64)
    if not np.all(np.isfinite(g)) and np.all(np.isfinite(e)):
        bad = np.argwhere(~np.isfinite(g))[0]
        return f"{label}non-finite value at index {tuple(int(i) for i in bad)} (input: {case.describe()})"
    if np.allclose(g, e, rtol=rtol, atol=atol, equal_nan=True):
        return None
    err = np.abs(g - e)
    err = np.where(np.isnan(err), np.inf, err)
    idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(err)), err.shape))
    return (
        f"{label}max abs error {float(err[idx]):.3g} at index {idx} (got {g[idx]:.6g}, expected {e[idx]:.6g}; "
        f"tolerance rtol={rtol:g}, atol={atol:g}); input: {case.describe()}"
    )


def verdict(task: TaskInfo, tests: list[TestResult], start: float, *, warnings: list[str] | None = None,
            error: str | None = None) -> Verdict:  # fmt: skip
    """Assemble the verdict (``passed`` is derived from the tests)."""
    return Verdict(
        task_id=task.id,
        tests=tests,
        seconds=time.monotonic() - start,
        warnings=warnings or [],
        error=error,
    )


def run_error(run: RunResult) -> str | None:
    """A whole-run problem worth stating on the verdict (a limit hit)."""
    if run.killed_reason:
        return f"your code was stopped: {run.killed_reason}"
    return None
