"""Coding tasks checked by deterministic hidden tests in a sandbox; the grader, never the model, decides.

Public API used by the CLI and the UI: :func:`list_tasks`, :func:`get_task`, :func:`check`.
"""

from __future__ import annotations

import importlib
import inspect
import time
from pathlib import Path

import yaml
from pydantic import ValidationError

from interviewer.checker.models import TaskInfo, TestResult, Verdict
from interviewer.checker.sandbox import Limits, RunResult, Sandbox
from interviewer.errors import CheckerError, ConfigError, ContentError, InputError

__all__ = [
    "Limits",
    "RunResult",
    "Sandbox",
    "TaskInfo",
    "TestResult",
    "Verdict",
    "check",
    "default_sandbox",
    "get_task",
    "list_tasks",
    "prepare",
]

MAX_CODE_CHARS = 100_000
WEAK_WARNING = (
    "WEAK SANDBOX: strict isolation is unavailable here ({reason}); this code ran as your user without "
    "namespaces or seccomp because INTERVIEWER_SANDBOX=weak"
)


def _tasks_dir() -> Path:
    from interviewer.config import Settings

    return Settings().content_dir / "rubrics" / "coding"


def _load_task(path: Path) -> TaskInfo:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise ContentError(f"{path}: cannot read task ({e})") from e
    if not isinstance(data, dict):
        raise ContentError(f"{path}: expected a mapping of task fields")
    data.setdefault("id", path.parent.name)
    if data["id"] != path.parent.name:
        raise ContentError(f"{path}: field 'id' is '{data['id']}' but the folder is '{path.parent.name}'")
    data["path"] = path.parent
    try:
        task = TaskInfo.model_validate(data)
    except ValidationError as e:
        raise ContentError(f"{path}: {e}") from e
    if task.starter:
        task.starter_code = task.read(task.starter)
    return task


def list_tasks() -> list[TaskInfo]:
    """Every task under ``<content_dir>/rubrics/coding/*/task.yaml``, sorted by id."""
    base = _tasks_dir()
    return [_load_task(p) for p in sorted(base.glob("*/task.yaml"))]


def get_task(task_id: str) -> TaskInfo:
    """One task by id; ContentError naming the known ids if it does not exist."""
    path = _tasks_dir() / task_id / "task.yaml"
    if "/" in task_id or not path.is_file():
        known = ", ".join(t.id for t in list_tasks())
        raise ContentError(f"no coding task '{task_id}'; known tasks: {known}")
    return _load_task(path)


_SANDBOXES: dict[str, Sandbox] = {}


def default_sandbox() -> Sandbox:
    """Strict unless the user opted into ``INTERVIEWER_SANDBOX=weak``; one per mode, so warm boxes are reused."""
    from interviewer.config import load_settings

    try:
        mode = load_settings().sandbox
    except ConfigError as e:
        raise CheckerError(str(e)) from e  # names the bad variable, e.g. INTERVIEWER_SANDBOX=off
    if mode not in _SANDBOXES:
        _SANDBOXES[mode] = Sandbox(mode=mode)
    return _SANDBOXES[mode]


def prepare(task_id: str, *, sandbox: Sandbox | None = None) -> None:
    """Optional: call when a task is shown; tasks with slow imports (torch) pre-start a box in the background.

    Does nothing for tasks without a ``prepare`` in their runner, or when strict isolation is unavailable.
    """
    task = get_task(task_id)
    runner = importlib.import_module(task.runner)
    prep = getattr(runner, "prepare", None)
    if prep is not None:
        prep(task, sandbox or default_sandbox())


def check(
    task_id: str, code: str, *, sandbox: Sandbox | None = None, prewarm: bool = True, seed: int | None = None
) -> Verdict:
    """Grade ``code`` for a task with its hidden tests.

    With ``prewarm`` (the UI), a box for the next run of this task is pre-started afterwards; one-shot
    callers (the CLI) pass ``prewarm=False``. ``seed`` repeats the hidden-input draw of an earlier verdict
    (``Verdict.seed``), for graders whose ``grade`` takes one; by default each run draws a fresh seed.

    Returns:
        The verdict (failing tests, a compile error or a time limit are verdicts, not exceptions).
    Raises:
        ContentError: unknown task or a broken task definition.
        InputError: empty or oversized code.
        SandboxUnavailable: strict isolation cannot be set up and weak mode was not chosen.
    """
    task = get_task(task_id)
    if not code.strip():
        raise InputError("the submission is empty: paste your code (or answer) and run the tests again")
    if len(code) > MAX_CODE_CHARS:
        raise InputError(f"the submission has {len(code)} characters; the limit is {MAX_CODE_CHARS}")
    sb = sandbox or default_sandbox()
    try:
        runner = importlib.import_module(task.runner)
    except ImportError as e:
        raise ContentError(
            f"{task.path / 'task.yaml'}: runner '{task.runner}' cannot be imported ({e})"
        ) from e
    takes_seed = "seed" in inspect.signature(runner.grade).parameters
    if seed is not None and not takes_seed:
        raise InputError(f"task '{task_id}' does not take a seed (its hidden inputs are not drawn from one)")
    start = time.monotonic()
    verdict: Verdict = runner.grade(task, code, sb, seed=seed) if takes_seed else runner.grade(task, code, sb)
    if verdict.seconds == 0.0:
        verdict.seconds = time.monotonic() - start
    prep = getattr(runner, "prepare", None)
    if prewarm and prep is not None:
        prep(task, sb)  # the next "Run tests" on this task starts warm
    if sb.mode == "weak" and task.kind != "numeric":
        ok, reason = sb.status()
        if not ok:
            verdict.warnings.insert(0, WEAK_WARNING.format(reason=reason))
    return verdict
