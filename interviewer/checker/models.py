"""Typed task descriptions and verdicts for the code checker."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from interviewer.checker.sandbox import Limits
from interviewer.errors import ContentError

TaskKind = Literal["numpy", "torch", "numeric", "python", "cpp", "cuda"]


class TaskLimits(BaseModel):
    """Per-task overrides of the sandbox limits (``limits:`` in task.yaml)."""

    model_config = ConfigDict(extra="forbid")

    cpu_seconds: float = Field(default=10.0, gt=0)
    wall_seconds: float = Field(default=20.0, gt=0)
    memory_mb: int = Field(default=1024, gt=0)

    def to_limits(self) -> Limits:
        return Limits(cpu_seconds=self.cpu_seconds, wall_seconds=self.wall_seconds, memory_mb=self.memory_mb)


class TaskInfo(BaseModel):
    """One coding task as authored in ``rubrics/coding/<id>/task.yaml``, plus its starter code."""

    model_config = ConfigDict(extra="forbid")

    id: str
    title: str
    statement: str
    language: Literal["python", "cpp", "text"]
    kind: TaskKind
    runner: str  # module exposing grade(task, code, sandbox) -> Verdict
    starter: str = ""  # file name of the starter code in the task dir ("" for numeric answers)
    starter_code: str = ""  # filled by the loader from `starter`
    reference: str = ""  # file name of the reference solution in the task dir
    limits: TaskLimits = Field(default_factory=TaskLimits)
    config: dict[str, Any] = Field(default_factory=dict)  # task-specific data for its runner
    path: Path = Path()  # the task dir; filled by the loader

    def read(self, name: str) -> str:
        """A file from the task dir (reference, harness...), as text."""
        p = self.path / name
        try:
            return p.read_text(encoding="utf-8")
        except OSError as e:
            raise ContentError(f"{p}: cannot read task file ({e.strerror})") from e

    def reference_code(self) -> str:
        if not self.reference:
            raise ContentError(f"{self.path / 'task.yaml'}: field 'reference' is not set")
        return self.read(self.reference)


class TestResult(BaseModel):
    """One hidden test: its name, pass/fail and a message a candidate can act on."""

    __test__ = False  # not a pytest class

    name: str
    passed: bool
    message: str = ""


class Verdict(BaseModel):
    """The score of record for correctness; ``passed`` is true only when every test passed and nothing broke."""

    task_id: str
    passed: bool = False
    tests: list[TestResult] = Field(default_factory=list)
    seconds: float = 0.0
    warnings: list[str] = Field(default_factory=list)
    error: str | None = None  # the code could not be run/graded at all (syntax error, time limit...)
    seed: int | None = None  # the hidden-input draw, for graders that take one (``--seed`` repeats it)

    @model_validator(mode="after")
    def _consistent(self) -> Verdict:
        # The flag is derived, never trusted from a caller: no tests or any failure or an error means fail.
        self.passed = bool(self.tests) and self.error is None and all(t.passed for t in self.tests)
        return self

    def render_text(self) -> str:
        """Plain text for the terminal (``interviewer check TASK FILE``) and the UI."""
        n_ok = sum(t.passed for t in self.tests)
        head = "PASSED" if self.passed else "FAILED"
        lines = [f"{self.task_id}: {head} ({n_ok}/{len(self.tests)} tests, {self.seconds:.2f} s)"]
        if self.seed is not None:
            lines.append(f"  hidden inputs drawn with seed {self.seed} (check again with --seed {self.seed})")
        lines += [f"  warning: {w}" for w in self.warnings]
        if self.error:
            lines.append(f"  error: {self.error}")
        for t in self.tests:
            mark = "ok  " if t.passed else "FAIL"
            lines.append(f"  [{mark}] {t.name}" + (f": {t.message}" if t.message and not t.passed else ""))
        return "\n".join(lines)
