"""Checker fixtures: one real strict sandbox per session, and a copy of a task with short limits."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
import yaml

from interviewer.checker.sandbox import Sandbox

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "rubrics" / "coding"


@pytest.fixture(scope="session")
def sandbox() -> Sandbox:
    """The real strict sandbox; its absence is a failure with the reason, not a silent skip."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the strict sandbox needs Linux")
    sb = Sandbox("strict")
    ok, reason = sb.status()
    assert ok, f"strict sandbox unavailable: {reason}"
    return sb


def reference(task_id: str) -> str:
    return (TASKS / task_id / "reference.py").read_text()


@pytest.fixture
def fast_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A content dir holding merge-intervals and numpy-conv2d with tight limits, so attacks end quickly."""
    for tid in ("merge-intervals", "numpy-conv2d"):
        dst = tmp_path / "rubrics" / "coding" / tid
        shutil.copytree(TASKS / tid, dst)
        meta = yaml.safe_load((dst / "task.yaml").read_text())
        meta["limits"] = {"cpu_seconds": 2, "wall_seconds": 4, "memory_mb": 384}
        (dst / "task.yaml").write_text(yaml.safe_dump(meta))
    monkeypatch.setenv("INTERVIEWER_CONTENT_DIR", str(tmp_path))
    return tmp_path
