"""C++ coding tasks: one runner module per task (see README.md in this folder)."""

from __future__ import annotations

import importlib

from interviewer.checker.models import TaskInfo
from interviewer.checker.sandbox import Sandbox


def prepare(task: TaskInfo, sandbox: Sandbox) -> bool:
    """Run a task runner's optional ``prepare`` hook (compiles what later checks reuse); False if none."""
    hook = getattr(importlib.import_module(task.runner), "prepare", None)
    if hook is None:
        return False
    hook(task, sandbox)
    return True
