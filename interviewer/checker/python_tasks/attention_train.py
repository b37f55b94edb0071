"""Grader for attention-train: the parameters after one and two steps must equal plain SGD, and loss must fall."""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path

import numpy as np

from interviewer.checker import channel
from interviewer.checker.models import TaskInfo, TestResult, Verdict
from interviewer.checker.python_tasks.common import (
    SignedRun,
    missing_reason,
    read_signed_run,
    run_error,
    syntax_error,
    verdict,
)
from interviewer.checker.sandbox import RunResult, Sandbox

_HERE = Path(__file__).parent
NAMES = ("wq", "wk", "wv", "wo")
ARGV = [sys.executable, "-I", "harness.py"]


def _box_program() -> dict[str, bytes | str]:
    return {
        "harness.py": (_HERE / "train_box.py").read_bytes(),
        "relay.py": (_HERE / "harness_box.py").read_bytes(),
        "train_model.py": (_HERE / "train_model.py").read_bytes(),
    }


def prepare(task: TaskInfo, sandbox: Sandbox) -> None:
    """Pre-start a box with torch imported, so the next "Run tests" skips the import."""
    sandbox.prewarm(_box_program(), ARGV, task.limits.to_limits())


def make_problem(rng: np.random.Generator, d: int = 8, seq: int = 6, batch: int = 32, batches: int = 4) -> dict[str, np.ndarray]:  # fmt: skip
    """Fresh student weights and data labelled by a teacher layer with other weights."""
    import torch

    from interviewer.checker.python_tasks.train_model import TinyAttention, load_weights

    teacher = TinyAttention(d).double()
    load_weights(teacher, {n: rng.standard_normal((d, d)) / np.sqrt(d) for n in NAMES})
    x = rng.standard_normal((batches, batch, seq, d))
    with torch.no_grad():
        y = teacher(torch.from_numpy(x)).numpy()
    student = {n: rng.standard_normal((d, d)) / np.sqrt(d) for n in NAMES}
    return {"x": x, "y": y, **student}


def _sgd(weights: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray, lr: float, steps: int, *, zero_grad: bool = True) -> tuple[list[dict[str, np.ndarray]], list[float]]:  # fmt: skip
    """Plain SGD in the grader: the weights after each step and the loss before each update."""
    import torch

    from interviewer.checker.python_tasks.train_model import TinyAttention, dump_weights, load_weights

    model = TinyAttention(x.shape[-1]).double()
    load_weights(model, weights)
    loss_fn = torch.nn.MSELoss()
    after, losses = [], []
    for i in range(steps):
        if zero_grad or i == 0:
            model.zero_grad(set_to_none=True)
        loss = loss_fn(model(torch.from_numpy(x[i % len(x)])), torch.from_numpy(y[i % len(y)]))
        loss.backward()
        # Plain SGD by hand: torch.optim would import torch._dynamo here (seconds) for the same update.
        with torch.no_grad():
            for prm in model.parameters():
                assert prm.grad is not None
                prm.sub_(lr * prm.grad)
        after.append(dump_weights(model))
        losses.append(loss.item())
    return after, losses


def _full_loss(weights: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray) -> float:
    import torch

    from interviewer.checker.python_tasks.train_model import TinyAttention, load_weights

    model = TinyAttention(x.shape[-1]).double()
    load_weights(model, weights)
    with torch.no_grad():
        return float(torch.nn.functional.mse_loss(model(torch.from_numpy(x)), torch.from_numpy(y)))


def _weights(data: bytes | None) -> dict[str, np.ndarray] | None:
    if data is None:
        return None
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            w = {n: np.array(npz[n], dtype=np.float64) for n in NAMES}
    except Exception:  # hostile or truncated file: treated as missing
        return None
    return w


def _max_diff(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> float:
    return max(
        float(np.max(np.abs(a[n] - b[n]))) if a[n].shape == b[n].shape else float("inf") for n in NAMES
    )


def _two_step_tests(
    signed: SignedRun, run: RunResult, w0: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray, lr: float
) -> list[TestResult]:
    """The loss returned, one step equal to SGD, and gradients zeroed between steps, from the two-step run."""
    exp, exp_losses = _sgd(w0, x, y, lr, 2)
    acc, _ = _sgd(w0, x, y, lr, 2, zero_grad=False)
    tests: list[TestResult] = []
    two = signed.records.get("two")
    w1, w2 = _weights(signed.arrays.get("two1")), _weights(signed.arrays.get("two2"))
    if two is None or "error" in two or w1 is None:
        why = two.get("error") if two and "error" in two else missing_reason(run)
        for name in ("returns the loss before the update", "one step equals SGD", "gradients are zeroed between steps"):  # fmt: skip
            tests.append(TestResult(name=name, passed=False, message=str(why)))
    else:
        losses = two.get("losses") or []
        got = float(losses[0]) if losses and isinstance(losses[0], (int, float)) else float("nan")
        ok = bool(np.isclose(got, exp_losses[0], rtol=1e-6))
        tests.append(TestResult(name="returns the loss before the update", passed=ok,
                                message="" if ok else f"returned {got:.6g}; the loss of model(x) vs y before the step is {exp_losses[0]:.6g}"))  # fmt: skip
        d1 = _max_diff(w1, exp[0])
        if d1 <= 1e-8:
            msg = ""
        elif _max_diff(w1, w0) <= 1e-12:
            msg = ("the parameters did not change after one step: compute the loss, call loss.backward(), then "
                   "optimizer.step() (zero_grad before backward, not between backward and step)")  # fmt: skip
        else:
            msg = f"after one step the parameters differ from plain SGD (max abs difference {d1:.3g})"
        tests.append(TestResult(name="one step equals SGD", passed=not msg, message=msg))
        if w2 is None:
            msg = "no parameters came back after the second step"
        else:
            d2 = _max_diff(w2, exp[1])
            msg = ""
            if d2 > 1e-8:
                msg = f"after two steps the parameters differ from plain SGD (max abs difference {d2:.3g})"
                if _max_diff(w2, acc[1]) <= 1e-8:
                    msg = "gradients accumulate across steps: call optimizer.zero_grad() in every step"
        tests.append(TestResult(name="gradients are zeroed between steps", passed=not msg, message=msg))
    return tests


def grade(task: TaskInfo, code: str, sandbox: Sandbox) -> Verdict:
    """Run the candidate's train_step in the box; recompute every expectation here."""
    start = time.monotonic()
    err = syntax_error(code)
    if err:
        return verdict(task, [], start, error=err)
    import torch

    torch.set_num_threads(1)
    lr, steps = float(task.config.get("lr", 0.3)), int(task.config.get("steps", 40))
    prob = make_problem(np.random.default_rng())
    buf = io.BytesIO()
    np.savez(buf, **prob)  # type: ignore[arg-type]
    key = channel.new_key()
    files: dict[str, bytes | str] = {
        **_box_program(),
        "solution.py": code,
        "inputs.npz": buf.getvalue(),
        "spec.json": json.dumps({"lr": lr, "steps": steps}),
        channel.KEY_FILE: key,
    }
    run = sandbox.run(files, ARGV, limits=task.limits.to_limits(),
                      collect=["results.jsonl", *(f"a{i}.npz" for i in range(8))])  # fmt: skip
    signed = read_signed_run(run, key)
    if signed.problem is not None:
        return verdict(task, [], start, error=signed.problem)
    recs = signed.records
    if "__import__" in recs:
        return verdict(
            task,
            [],
            start,
            error=f"importing your code failed: {str(recs['__import__'].get('error'))[:1000]}",
        )

    w0 = {n: prob[n] for n in NAMES}
    x, y = prob["x"], prob["y"]
    tests = _two_step_tests(signed, run, w0, x, y, lr)

    tr = recs.get("train")
    wn = _weights(signed.arrays.get("train"))
    if tr is None or "error" in tr or wn is None:
        why = tr.get("error") if tr and "error" in tr else missing_reason(run)
        tests.append(TestResult(name=f"loss falls over {steps} steps", passed=False, message=str(why)))
    else:
        l0, ln = _full_loss(w0, x, y), _full_loss(wn, x, y)
        ok = bool(np.isfinite(ln) and ln < 0.5 * l0)
        tests.append(TestResult(name=f"loss falls over {steps} steps", passed=ok,
                                message="" if ok else f"loss on the training data went from {l0:.4g} to {ln:.4g} (recomputed by the checker); expected below {0.5 * l0:.4g}"))  # fmt: skip
    return verdict(task, tests, start, error=run_error(run))
