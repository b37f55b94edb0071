"""Grader for ``cpp-output-prediction``: the candidate predicts what each snippet prints.

The snippets are read from the task statement itself (``#### Snippet `name` `` followed by a ```` ```cpp ````
block), so what the candidate reads is exactly what runs. The ground truth comes from compiling and
running every snippet in the sandbox; it is cached per process by snippet source, since the snippets are
fixed and deterministic, so only the first check pays for the compiles.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from interviewer.checker.cpp_tasks._build import BASE_FLAGS, CXX, Check, SandboxLike, to_verdict
from interviewer.checker.models import TaskInfo, Verdict
from interviewer.checker.sandbox import Limits, Sandbox
from interviewer.errors import CheckerError, ContentError, InputError

FLAGS = ("-O1", "-pthread")
SNIPPET = re.compile(
    r"^#+\s*Snippet\s+`(?P<name>[\w-]+)`\s*\n+```cpp\n(?P<code>.*?)\n```", re.MULTILINE | re.DOTALL
)
SECTION = re.compile(r"^[ \t]*===[ \t]*(?P<name>[\w-]+)[ \t]*===[ \t]*$", re.MULTILINE)
LIMITS = Limits(cpu_seconds=20.0, wall_seconds=60.0, memory_mb=1536)


@dataclass(frozen=True)
class Snippet:
    """One program shown to the candidate."""

    name: str
    code: str


def snippets(statement: str) -> list[Snippet]:
    """The snippets in a statement, in order; ContentError if there are none or a name repeats."""
    found = [Snippet(m.group("name"), m.group("code") + "\n") for m in SNIPPET.finditer(statement)]
    if not found:
        raise ContentError("the output-prediction statement has no '#### Snippet `name`' + ```cpp blocks")
    names = [s.name for s in found]
    if len(set(names)) != len(names):
        raise ContentError(f"the output-prediction statement repeats a snippet name: {names}")
    return found


def answer_template(items: Sequence[Snippet]) -> str:
    """The editor's starting text: one empty section per snippet."""
    return "".join(f"=== {s.name} ===\n\n" for s in items)


def split_answer(text: str, names: Sequence[str]) -> dict[str, list[str]]:
    """The predicted lines per snippet; InputError for unknown or repeated sections."""
    marks = list(SECTION.finditer(text))
    if not marks:
        raise InputError(
            "no sections found: write each prediction under a line `=== name ===` "
            f"(names: {', '.join(names)})"
        )
    out: dict[str, list[str]] = {}
    for k, m in enumerate(marks):
        name = m.group("name")
        if name not in names:
            raise InputError(f"unknown snippet {name!r}: the snippets are {', '.join(names)}")
        if name in out:
            raise InputError(f"the section for {name!r} appears twice: keep one")
        end = marks[k + 1].start() if k + 1 < len(marks) else len(text)
        out[name] = _lines(text[m.end() : end])
    return out


def _lines(text: str) -> list[str]:
    """Lines without trailing spaces, without leading and trailing blank lines."""
    lines = [ln.rstrip() for ln in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


_truth_cache: dict[str, list[str]] = {}
_truth_lock = threading.Lock()


def ground_truth(
    sandbox: SandboxLike, items: Sequence[Snippet], use_cache: bool = True
) -> dict[str, list[str]]:
    """Compile and run every snippet in one sandbox run (two at a time); their output lines by name."""
    keys = {s.name: hashlib.sha256("\0".join([s.code, *FLAGS]).encode()).hexdigest() for s in items}
    with _truth_lock:
        cached = {
            s.name: _truth_cache[keys[s.name]] for s in items if use_cache and keys[s.name] in _truth_cache
        }
    todo = [s for s in items if s.name not in cached]
    if not todo:
        return cached
    files: dict[str, str | bytes] = {}
    lines: list[str] = []
    for k, s in enumerate(todo):
        src, exe = f"s{k}.cpp", f"s{k}"
        files[src] = s.code
        build = shlex.join([CXX, *BASE_FLAGS, *FLAGS, "-o", exe, src])
        lines.append(f"({build} >{exe}.log 2>&1 && ./{exe} >{exe}.out 2>{exe}.err; echo $? >{exe}.rc) &")
        if k % 2 == 1:
            lines.append("wait")
    lines.append("wait")
    collect = [f"s{k}.{ext}" for k in range(len(todo)) for ext in ("out", "rc", "log")]
    res = sandbox.run(files, ["/bin/sh", "-c", "\n".join(lines)], LIMITS, collect=collect)
    out = dict(cached)
    for k, s in enumerate(todo):
        rc = res.files.get(f"s{k}.rc", b"").decode().strip()
        if rc != "0":
            log = res.files.get(f"s{k}.log", b"").decode("utf-8", "replace")[-800:]
            why = res.killed_reason or f"exit status {rc or 'unknown'}"
            raise CheckerError(
                f"snippet {s.name!r} did not build and run cleanly in the sandbox ({why}): {log.strip()} "
                "- the task content is broken; fix the snippet in task.yaml"
            )
        out[s.name] = _lines(res.files.get(f"s{k}.out", b"").decode("utf-8", "replace"))
        with _truth_lock:
            _truth_cache[keys[s.name]] = out[s.name]
    return out


def compare(name: str, predicted: list[str] | None, actual: list[str]) -> Check:
    """Line-by-line comparison with a message naming every wrong line (up to a few)."""
    if not predicted:
        return Check(name, False, f"no prediction: the program prints {len(actual)} line(s)")
    problems: list[str] = []
    for i in range(max(len(predicted), len(actual))):
        want = actual[i] if i < len(actual) else None
        got = predicted[i] if i < len(predicted) else None
        if want == got:
            continue
        if want is None:
            problems.append(
                f"line {i + 1}: you wrote {got!r}, but the program prints only {len(actual)} lines"
            )
        elif got is None:
            problems.append(f"line {i + 1}: missing; the program prints {want!r}")
        else:
            problems.append(f"line {i + 1}: you wrote {got!r}, the program prints {want!r}")
    if not problems:
        return Check(name, True, f"all {len(actual)} lines right")
    shown = problems[:4] + ([f"... and {len(problems) - 4} more"] if len(problems) > 4 else [])
    right = sum(1 for i, want in enumerate(actual) if i < len(predicted) and predicted[i] == want)
    return Check(name, False, f"{right}/{len(actual)} lines right; " + "; ".join(shown))


def grade_checks(statement: str, answer: str, sandbox: SandboxLike) -> list[Check]:
    """One check per snippet."""
    items = snippets(statement)
    predicted = split_answer(answer, [s.name for s in items])
    truth = ground_truth(sandbox, items)
    return [compare(s.name, predicted.get(s.name), truth[s.name]) for s in items]


def prepare(task: TaskInfo, sandbox: Sandbox) -> None:
    """Compute the ground truth ahead of the first check (optional hook, e.g. at app start)."""
    ground_truth(sandbox, snippets(task.statement))


def grade(task: TaskInfo, code: str, sandbox: Sandbox) -> Verdict:
    """The runner entry point (see interviewer/checker/README.md)."""
    start = time.monotonic()
    checks = grade_checks(task.statement, code, sandbox)
    return to_verdict(task.id, checks, time.monotonic() - start)
