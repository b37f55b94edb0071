"""Coding follow-ups grounded in the candidate's run: the verdict and the code decide what is asked next.

After "Run tests", :class:`CodeRun` keeps only the public side of the verdict (counts, the first failing case's
authored name, its input shapes and edge kind, flags such as slow or untiled), :func:`code_facts` reads the
code without running it (loops and their depth, allocating NumPy calls, ``exp`` without the max subtracted,
barriers, shared arrays, locks, atomics, each with its lines), :func:`choose` picks the kind of question
deterministically, and :func:`write` has the model phrase it, vetted like every model follow-up plus
:func:`leaks_hidden`, with an authored question per kind when the reply is unusable.

The failure messages of a verdict name expected values and hidden inputs: they never reach the prompt.
"""

from __future__ import annotations

import ast
import datetime as dt
import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from langchain_core.messages import BaseMessage, HumanMessage

from interviewer import prompts
from interviewer.checker.models import TaskInfo, Verdict
from interviewer.content.models import Question
from interviewer.errors import InterviewerError
from interviewer.scoring.guard import fence

Kind = Literal["failing_case", "efficiency", "complexity", "design", "stability"]
KINDS: tuple[Kind, ...] = ("failing_case", "efficiency", "complexity", "design", "stability")
MAX_FOLLOWUP_CHARS = 320
MAX_CODE_CHARS = 6000  # what the prompt quotes of the code; the lines named by the plan come first
MAX_QUOTED_WORDS = 12  # a question may quote a short line of code, not whole blocks


class ChatStream(Protocol):
    """The part of the chat port this module uses (``interviewer.llm.client.ChatPort``)."""

    name: str

    def stream(self, messages: Sequence[BaseMessage], key: str | None = None) -> Iterable[str]: ...


# -- the run ---------------------------------------------------------------------------------------

# Tests that judge how the code runs rather than what it returns, by their authored names; each maps to a flag.
# The first match wins. Any other failing test is a hidden case: its input has a property worth asking about.
_CHECK_TESTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^no python loops", re.I), "loops"),
    (re.compile(r"^numpy only", re.I), "not-numpy-only"),
    (re.compile(r"^no data races|threadsanitizer", re.I), "races"),
    (re.compile(r"^every thread of a block reaches", re.I), "barrier"),
    (re.compile(r"^no reads of uninitiali[sz]ed", re.I), "uninitialised"),
    (re.compile(r"^inputs are left unchanged", re.I), "mutates-inputs"),
    (re.compile(r"bank.conflict", re.I), "bank-conflict"),
    (re.compile(r"^coalesced", re.I), "uncoalesced"),
    (re.compile(r"\batomics?\b", re.I), "atomics"),
    (re.compile(r"^uses shared memory|^tiles cut|^reads each element of .* at most", re.I), "untiled"),
    (re.compile(r"^the work is spread over threads", re.I), "serial"),
    (re.compile(r"^faster than|^timing", re.I), "slow"),
    (re.compile(r"addresssanitizer|leaksanitizer|ubsan|memcheck", re.I), "memory-safety"),
)
# A timed case ("400 numbers (timed)") is a flag only when it failed for time, not for a wrong answer.
_TIMED_CASE = re.compile(r"\(timed\)|needs o\(", re.I)
_TIME_MESSAGE = re.compile(r"time limit|timed out|too slow|slower|cpu time|did not finish|killed", re.I)
_WARNING_FLAGS = re.compile(r"too slow|slower than|time limit", re.I)
EFFICIENCY_FLAGS = frozenset(
    {"slow", "loops", "untiled", "serial", "atomics", "bank-conflict", "uncoalesced"}
)
# Flags that are wrong behaviour, not slowness: asked about like a failing case, on the lines that cause them.
PROPERTY_FLAGS = frozenset(
    {"races", "barrier", "uninitialised", "mutates-inputs", "memory-safety", "not-numpy-only"}
)

_FLAG_WORDS = {
    "slow": "too slow on the large inputs",
    "loops": "running Python-level loops",
    "untiled": "not reusing loaded data (no tiling through shared memory)",
    "serial": "giving too much of the work to too few threads",
    "atomics": "leaning on many atomic operations",
    "bank-conflict": "hitting shared-memory bank conflicts",
    "uncoalesced": "making uncoalesced global memory accesses",
    "races": "having a data race",
    "barrier": "having threads that miss a barrier",
    "uninitialised": "reading shared memory before it is written",
    "mutates-inputs": "modifying its inputs",
    "not-numpy-only": "using more than NumPy",
    "memory-safety": "tripping a memory-safety check",
}

# The authored case names say which edge a case probes; the first match wins.
_EDGES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bempty\b|\bno (elements|intervals|numbers)\b|n ?= ?0\b", re.I), "empty input"),
    (
        re.compile(
            r"fewer than|one element|single (element|value|row|column|number|interval)|\bn ?= ?1\b|one (interval|row|column|value)\b",
            re.I,
        ),
        "tiny input",
    ),
    (
        re.compile(
            r"power of two|power-of-two|not a multiple|ragged|remainder|odd|partial (tile|block)", re.I
        ),
        "size that is not a multiple of the block or tile",
    ),
    (re.compile(r"negative", re.I), "negative values"),
    (
        re.compile(r"large magnitude|huge|overflow|extreme|big values|large values|1e\d", re.I),
        "large magnitudes",
    ),
    (re.compile(r"all zeros?|constant|all equal|zero (row|channel|range)", re.I), "all-equal or zero values"),
    (re.compile(r"duplicate|repeat", re.I), "repeated values"),
    (
        re.compile(r"touching|adjacent|nested|swallow|chained|boundary|last", re.I),
        "boundary between neighbours",
    ),
    (re.compile(r"stride|padding|dilation", re.I), "stride or padding"),
    (re.compile(r"mask|causal|bias", re.I), "masking"),
    (re.compile(r"long|large|many|\(timed\)|\d{3,} (numbers|elements)", re.I), "large input size"),
    (re.compile(r"per-channel|per-tensor|axis", re.I), "the axis it works along"),
    (re.compile(r"no solution", re.I), "an input with no answer"),
)

_SHAPE = re.compile(r"\b([A-Za-z_]\w*) (?:shape )?\((\d+(?:, ?\d+)*,?)\) ([a-z]+\d+)\b")
_ERROR_KINDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"time limit|timed out|cpu time", re.I), "time limit"),
    (re.compile(r"memory limit|out of memory|memoryerror", re.I), "memory limit"),
    (re.compile(r"syntaxerror|syntax error|indentation", re.I), "syntax error"),
    (re.compile(r"compil|error:.*expected|undefined reference", re.I), "compile error"),
    (re.compile(r"not allowed|forbidden|refused|policy", re.I), "disallowed construct"),
)


@dataclass(frozen=True)
class FailingCase:
    """The public face of a failing hidden test: its authored name, input shapes and the edge it probes."""

    name: str
    edge: str | None = None
    shapes: tuple[str, ...] = ()  # "x (4, 3, 9, 9) float64": input shapes and dtypes only

    def describe(self) -> str:
        bits = [f'"{self.name}"']
        if self.edge:
            bits.append(f"({self.edge})")
        if self.shapes:
            bits.append("with inputs " + ", ".join(self.shapes))
        return " ".join(bits)


@dataclass(frozen=True)
class CodeRun:
    """A verdict reduced to what may be said to the candidate and to the model."""

    task_id: str
    passed: bool
    n_passed: int
    n_failed: int
    failing: FailingCase | None = None  # the first failing correctness case
    flags: tuple[str, ...] = ()
    error_kind: str | None = None  # syntax error, compile error, time limit...; never the error text

    @classmethod
    def from_verdict(cls, verdict: Verdict | Mapping[str, Any]) -> CodeRun:
        v = verdict if isinstance(verdict, Verdict) else Verdict.model_validate(dict(verdict))
        flags: list[str] = []
        failing: FailingCase | None = None
        for t in v.tests:
            if t.passed:
                continue
            flag = _flag_of(t.name)
            if flag is None and _TIMED_CASE.search(t.name) and _TIME_MESSAGE.search(t.message):
                flag = "slow"
            if flag is not None:
                if flag not in flags:
                    flags.append(flag)
            elif failing is None:
                failing = _failing_case(t.name, t.message)
        error_kind = None
        if v.error:
            error_kind = next((k for p, k in _ERROR_KINDS if p.search(v.error)), "crash")
            if error_kind == "time limit" and "slow" not in flags:
                flags.insert(0, "slow")
        if any(_WARNING_FLAGS.search(w) for w in v.warnings) and "slow" not in flags:
            flags.append("slow")
        n_ok = sum(t.passed for t in v.tests)
        return cls(v.task_id, v.passed, n_ok, len(v.tests) - n_ok, failing, tuple(flags), error_kind)

    def summary(self) -> str:
        """Plain text for the prompt and the report: counts, flags and the first failing case's public side."""
        total = self.n_passed + self.n_failed
        lines = [f"{'PASSED' if self.passed else 'FAILED'}: {self.n_passed} of {total} hidden tests passed."]
        if self.error_kind:
            lines.append(f"The run stopped with a {self.error_kind}.")
        if self.failing is not None:
            lines.append(f"First failing hidden case: {self.failing.describe()}.")
        if self.flags:
            lines.append("Flags: " + "; ".join(f"{f} ({_FLAG_WORDS.get(f, f)})" for f in self.flags) + ".")
        return "\n".join(lines)

    def as_meta(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "n_passed": self.n_passed,
            "n_failed": self.n_failed,
            "failing": None
            if self.failing is None
            else {"name": self.failing.name, "edge": self.failing.edge, "shapes": list(self.failing.shapes)},
            "flags": list(self.flags),
            "error_kind": self.error_kind,
        }


def _flag_of(name: str) -> str | None:
    return next((f for p, f in _CHECK_TESTS if p.search(name)), None)


def _failing_case(name: str, message: str) -> FailingCase:
    label, _, bracket = name.partition(" [")
    shapes = [f"{m.group(1)} ({m.group(2)}) {m.group(3)}" for m in _SHAPE.finditer(bracket)]
    _, sep, inputs = message.partition("input:")
    if sep:  # only the input part of a message: the rest names the expected output
        shapes += [f"{m.group(1)} ({m.group(2)}) {m.group(3)}" for m in _SHAPE.finditer(inputs)]
    label = label.strip()
    edge = next((e for p, e in _EDGES if p.search(label)), None)
    if edge is None:
        edge = _edge_of_shapes(shapes)
    if edge is None:  # "shape 1x37", "7 x 5": the sides an authored name states
        sides = [f"({m.group(1)}, {m.group(2)})" for m in re.finditer(r"(\d+) ?x ?(\d+)", label)]
        edge = _edge_of_shapes([f"n {d} int" for d in sides])
    return FailingCase(label, edge, tuple(dict.fromkeys(shapes)))


def _edge_of_shapes(shapes: Sequence[str]) -> str | None:
    dims = [int(d) for s in shapes for d in re.findall(r"\d+", s.split("(")[1].split(")")[0])]
    if not dims:
        return None
    if 0 in dims:
        return "empty input"
    if 1 in dims:
        return "a dimension of size one"
    if any(d > 8 and d & (d - 1) for d in dims):
        return "size that is not a multiple of the block or tile"
    return None


# -- the code ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fact:
    """Something the code does, with the lines that do it (1-based)."""

    kind: str
    lines: tuple[int, ...]
    detail: str


_ALLOCATING = frozenset(
    "zeros empty ones full zeros_like empty_like ones_like full_like array concatenate stack vstack hstack "
    "pad copy tile repeat einsum tensordot matmul dot outer kron where broadcast_to ascontiguousarray "
    "meshgrid arange linspace".split()
)


def code_facts(code: str, language: str, kind: str = "") -> list[Fact]:
    """Static facts about the candidate's code (never executed): loops, allocations, stability, sync.

    Args:
        code: the candidate's code.
        language: the task's language (python, cpp or text).
        kind: the task's kind (numpy, torch, cuda...), which sharpens what is worth noting.
    Returns:
        Facts in a fixed order (loops first), each naming its lines; [] for text answers or unparsable code.
    """
    if language == "python":
        return _python_facts(code, kind)
    if language == "cpp":
        return _cpp_facts(code)
    return []


def _call_name(node: ast.Call) -> str:
    f = node.func
    parts: list[str] = []
    while isinstance(f, ast.Attribute):
        parts.append(f.attr)
        f = f.value
    if isinstance(f, ast.Name):
        parts.append(f.id)
    return ".".join(reversed(parts))


def _python_facts(code: str, kind: str) -> list[Fact]:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    loops: dict[int, int] = {}  # line -> nesting depth
    comps: list[int] = []

    def walk(node: ast.AST, depth: int) -> None:
        for child in ast.iter_child_nodes(node):
            d = depth
            if isinstance(child, (ast.For, ast.While, ast.AsyncFor)):
                d = depth + 1
                loops[child.lineno] = d
            elif isinstance(child, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                d = depth + len(child.generators)
                comps.append(child.lineno)
                loops[child.lineno] = max(loops.get(child.lineno, 0), d)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                d = 0  # a kernel or helper body starts afresh
            walk(child, d)

    walk(tree, 0)
    facts: list[Fact] = []
    if loops:
        deepest = max(loops.values())
        lines = tuple(sorted(ln for ln, d in loops.items() if d >= 2)) or tuple(sorted(loops))
        what = f"loops nested {deepest} deep" if deepest >= 2 else "a loop"
        facts.append(Fact("nested-loops" if deepest >= 2 else "loop", lines[:4], what))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    names = [(n.lineno, _call_name(n)) for n in calls]
    sorts = sorted({ln for ln, nm in names if nm.split(".")[-1] in ("sort", "sorted", "argsort")})
    if sorts:
        facts.append(Fact("sort", tuple(sorts[:3]), "a sort"))
    if kind != "cuda":
        allocs = sorted(
            {ln for ln, nm in names if nm.startswith(("np.", "numpy.")) and nm.split(".")[-1] in _ALLOCATING}
        )
        allocs += [
            n.lineno for n in ast.walk(tree) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult)
        ]
        allocs = sorted(set(allocs))
        if allocs:
            facts.append(Fact("allocations", tuple(allocs[:4]), "NumPy calls that allocate new arrays"))
        windows = sorted({ln for ln, nm in names if nm.endswith(("sliding_window_view", "as_strided"))})
        if windows:
            facts.append(Fact("strided-view", tuple(windows[:3]), "a strided view of the input"))
    exps = sorted({ln for ln, nm in names if nm.split(".")[-1] in ("exp", "softmax", "log_softmax")})
    if exps:
        maxed = any(nm.split(".")[-1] in ("max", "amax", "nanmax") for _, nm in names) or any(
            isinstance(n, ast.Attribute) and n.attr in ("max", "amax") for n in ast.walk(tree)
        )
        facts.append(
            Fact(
                "exp" if maxed else "exp-without-max",
                tuple(exps[:3]),
                "an exponential after subtracting the maximum"
                if maxed
                else "an exponential of the raw values",
            )
        )
    roots = sorted({ln for ln, nm in names if nm.split(".")[-1] in ("sqrt", "rsqrt", "log", "var", "std")})
    if roots:
        facts.append(Fact("sqrt-log", tuple(roots[:3]), "a square root, log or variance"))
    if kind == "cuda":
        sync = sorted({ln for ln, nm in names if nm.endswith("syncthreads")})
        shared = sorted({ln for ln, nm in names if ".shared.array" in nm or nm.endswith("shared.array")})
        atomics = sorted({ln for ln, nm in names if ".atomic." in nm})
        if shared:
            facts.append(Fact("shared-array", tuple(shared[:3]), "a shared-memory array"))
        if sync:
            facts.append(Fact("syncthreads", tuple(sync[:4]), "cuda.syncthreads() barriers"))
        if atomics:
            facts.append(Fact("atomics", tuple(atomics[:3]), "atomic updates"))
    return facts


_CPP_TOKEN = re.compile(r"[A-Za-z_]\w*(?:::\w+)*|\S")


def _cpp_tokens(code: str) -> list[tuple[str, int]]:
    """Identifiers and single punctuation with their lines, comments and literals removed (newlines kept)."""

    def blank(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group())

    text = re.sub(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", blank, code, flags=re.S)
    out = []
    for ln, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("#"):
            continue
        out += [(m.group(), ln) for m in _CPP_TOKEN.finditer(line)]
    return out


def _cpp_loop_depths(toks: list[tuple[str, int]]) -> dict[int, int]:
    """The nesting depth of each loop header in the C++ tokens, by the line it starts on."""
    loops: dict[int, int] = {}

    def skip_parens(i: int) -> int:
        depth = 0
        while i < len(toks):
            if toks[i][0] == "(":
                depth += 1
            elif toks[i][0] == ")":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        return i

    def statement(i: int, depth: int) -> int:
        """Parse one statement from token i at loop depth ``depth``; the index after it."""
        if i >= len(toks):
            return i
        tok, line = toks[i]
        if tok in ("for", "while"):
            loops[line] = max(loops.get(line, 0), depth + 1)
            j = skip_parens(i + 1)
            if j < len(toks) and toks[j][0] == ";":  # the `while (...)` of a do-while
                return j + 1
            return statement(j, depth + 1)
        if tok == "do":
            loops[line] = max(loops.get(line, 0), depth + 1)
            return statement(i + 1, depth + 1)
        if tok == "{":
            i += 1
            while i < len(toks) and toks[i][0] != "}":
                i = statement(i, depth)
            return i + 1
        paren = 0
        while i < len(toks):  # an ordinary statement, or a header before a block (if, a function, a class)
            tok = toks[i][0]
            if tok == "(":
                paren += 1
            elif tok == ")":
                paren -= 1
            elif (paren == 0 and tok in ("for", "while", "do")) or (paren == 0 and tok == "{"):
                return statement(i, depth)
            elif paren == 0 and tok in (";", "}"):
                return i + 1 if tok == ";" else i
            i += 1
        return i

    i = 0
    while i < len(toks):
        nxt = statement(i, 0)
        i = max(nxt, i + 1)
    return loops


def _cpp_facts(code: str) -> list[Fact]:
    toks = _cpp_tokens(code)
    loops = _cpp_loop_depths(toks)
    facts: list[Fact] = []
    if loops:
        deepest = max(loops.values())
        lines = tuple(sorted(ln for ln, d in loops.items() if d >= 2)) or tuple(sorted(loops))
        what = f"loops nested {deepest} deep" if deepest >= 2 else "a loop"
        facts.append(Fact("nested-loops" if deepest >= 2 else "loop", lines[:4], what))

    def lines_of(pattern: str) -> tuple[int, ...]:
        rx = re.compile(pattern)
        return tuple(sorted({ln for t, ln in toks if rx.fullmatch(t)}))[:4]

    for kind, pattern, what in (
        ("new-delete", r"new|delete|malloc|free|std::make_unique|std::make_shared", "heap allocation"),
        ("mutex", r"std::mutex|std::lock_guard|std::unique_lock|std::scoped_lock|mutex", "a mutex"),
        ("atomics", r"std::atomic|atomic|fetch_add|compare_exchange_\w+", "atomic operations"),
        ("threads", r"std::thread|std::async|std::jthread", "threads"),
        (
            "containers",
            r"std::vector|std::unordered_map|std::map|std::unordered_set|std::set|std::deque|"
            r"std::priority_queue|std::queue",
            "standard containers",
        ),
        ("sort", r"std::sort|std::stable_sort|sort", "a sort"),
    ):
        lines = lines_of(pattern)
        if lines:
            facts.append(Fact(kind, lines, what))
    return facts


# -- the choice -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FollowupPlan:
    """What the next coding follow-up asks about, decided without the model."""

    kind: Kind
    target: str  # what the question must probe, in one sentence (shown to the model, never a hidden value)
    lines: tuple[int, ...] = ()  # the candidate's lines to ask about
    facts: tuple[Fact, ...] = ()
    case: FailingCase | None = None
    flags: tuple[str, ...] = ()

    def as_meta(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "target": self.target,
            "lines": list(self.lines),
            "facts": [f.kind for f in self.facts],
            "case": None if self.case is None else self.case.name,
        }


def _first(facts: Sequence[Fact], *kinds: str) -> Fact | None:
    for k in kinds:
        for f in facts:
            if f.kind == k:
                return f
    return None


def _lines(*facts: Fact | None) -> tuple[int, ...]:
    return tuple(sorted({ln for f in facts if f is not None for ln in f.lines}))[:4]


def choose(run: CodeRun, facts: Sequence[Fact], task: TaskInfo, asked: Sequence[str] = ()) -> FollowupPlan:
    """The next follow-up's kind, target and lines, from the run and the code; deterministic.

    A failing correctness case asks about that case's property; efficiency flags (slow, loops, untiled...) or a
    time limit ask the efficiency why; a pass asks about the stability, complexity or design of the lines
    written, skipping kinds in ``asked`` (the kinds of earlier coding follow-ups on this task) while others fit.
    """
    facts = tuple(facts)
    loops = _first(facts, "nested-loops", "loop")
    if not run.passed:
        return _failing_plan(run, facts, loops)
    return _passing_plan(run, facts, loops, task.language == "text", asked)


def _failing_plan(run: CodeRun, facts: tuple[Fact, ...], loops: Fact | None) -> FollowupPlan:
    """The follow-up for a run that did not pass: its efficiency, its property flags or its failing case."""
    eff = [f for f in run.flags if f in EFFICIENCY_FLAGS]
    if run.error_kind == "time limit" or (eff and run.failing is None):
        flag = eff[0] if eff else "slow"
        used = _first(facts, "nested-loops", "loop", "allocations", "containers", "sort") if flag in (
            "slow", "loops") else _first(facts, "shared-array", "nested-loops", "loop", "atomics")  # fmt: skip
        return FollowupPlan(
            "efficiency",
            f"why the code is {_FLAG_WORDS.get(flag, flag)}: what its cost grows with on the large inputs, "
            "which of the named lines dominate, and what the candidate would change",
            _lines(used),
            tuple(f for f in (used,) if f is not None),
            flags=tuple(eff or ["slow"]),
        )
    prop = [f for f in run.flags if f in PROPERTY_FLAGS]
    if run.failing is None and prop:
        if prop[0] in ("races", "barrier", "uninitialised"):
            used = _first(facts, "syncthreads", "shared-array", "atomics", "mutex", "threads")
            why = "which threads touch the same data on the named lines, and how the candidate orders those accesses"
        else:
            used = _first(facts, "new-delete", "containers", "allocations", "nested-loops", "loop")
            why = "which of the named lines cause it, and how the candidate would find and fix it"
        return FollowupPlan(
            "failing_case",
            f"why the checker finds the code {_FLAG_WORDS[prop[0]]}: {why}",
            _lines(used),
            tuple(f for f in (used,) if f is not None),
            flags=tuple(prop),
        )
    case = run.failing
    if case is None:
        what = run.error_kind or "failure"
        return FollowupPlan(
            "failing_case",
            f"what in the code leads to the {what} the run reported, and how the candidate would find it",
            _lines(loops),
            tuple(f for f in (loops,) if f is not None),
            flags=run.flags,
        )
    edge = f" ({case.edge})" if case.edge else ""
    return FollowupPlan(
        "failing_case",
        f'what is special about the input of the failing hidden case "{case.name}"{edge} and which lines '
        "of the code mishandle it (ask about the input's shape or edge, never about the expected output)",
        _lines(loops),
        tuple(f for f in (loops,) if f is not None),
        case=case,
        flags=run.flags,
    )


def _passing_plan(
    run: CodeRun, facts: tuple[Fact, ...], loops: Fact | None, numeric_task: bool, asked: Sequence[str]
) -> FollowupPlan:
    """The follow-up for a passing run: its efficiency flags, else a kind not yet in ``asked`` that fits the code."""
    eff = [f for f in run.flags if f in EFFICIENCY_FLAGS]
    if eff:
        used = _first(facts, "nested-loops", "loop", "allocations")
        return FollowupPlan(
            "efficiency",
            f"why the code is {_FLAG_WORDS.get(eff[0], eff[0])} although it passes, and what the candidate would change",
            _lines(used),
            tuple(f for f in (used,) if f is not None),
            flags=tuple(eff),
        )
    options: list[FollowupPlan] = []
    stab = _first(facts, "exp-without-max", "exp", "sqrt-log")
    if stab is not None:
        what = (
            "what happens to the named exponential for very large or very negative inputs, and how to keep it finite"
            if stab.kind == "exp-without-max"
            else f"why the code computes {stab.detail} this way on the named lines, and when it would overflow, "
            "underflow or lose precision"
        )
        options.append(FollowupPlan("stability", what, stab.lines, (stab,)))
    if loops is not None or _first(facts, "sort"):
        used = loops or _first(facts, "sort")
        srt = _first(facts, "sort")
        options.append(
            FollowupPlan(
                "complexity",
                "the time and memory complexity of the named lines as the input grows, and whether a better "
                "bound exists",
                _lines(used, srt),
                tuple(f for f in (used, srt) if f is not None),
            )
        )
    design = _first(facts, "shared-array", "allocations", "strided-view", "new-delete", "mutex", "atomics",
                    "threads", "containers", "syncthreads")  # fmt: skip
    if design is not None:
        options.append(
            FollowupPlan(
                "design",
                f"why the code uses {design.detail} on the named lines: the memory traffic it causes and the "
                "alternative the candidate considered",
                design.lines,
                (design,),
            )
        )
    if numeric_task:
        options.append(
            FollowupPlan(
                "design",
                "which assumption behind the candidate's answer matters most, and how the result changes when "
                "it stops holding",
            )
        )
    if not options:
        options.append(
            FollowupPlan(
                "complexity",
                "the time and memory complexity of the solution as the input grows, and which part sets it",
            )
        )
    fresh = [p for p in options if p.kind not in asked]
    return (fresh or options)[0]


# -- the leak guard ---------------------------------------------------------------------------------

_NUM = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?!\d)")  # "4.71x" is 4.71
# What a failure message says the right output was: "expected [1, 12]", "expected -4.375", "expected below 0.3",
# "the loss ... before the step is 2.31", "expected (4, 5)".
_EXPECTED = re.compile(
    r"(?:\bexpected|\bshould be|\bbefore the step is|\bvs)\s+(?:below |above |at most |at least |about )?"
    r"(\([^()]*\)|\[[^\[\]]*(?:\[[^\[\]]*\][^\[\]]*)*\]|'[^']*'|\"[^\"]*\"|[^\s;,()]+)",
    re.I,
)
_INPUT = re.compile(r"\binput:\s*(.+)$", re.I)
_BRACKETED = re.compile(r"\[[^\[\]]*(?:\[[^\[\]]*\][^\[\]]*)*\]")


# "line 11", "lines 11, 17 and 26", "lines 4-9": places in the candidate's own code, never a hidden value
_LINE_REFS = re.compile(r"\blines?\s+\d+(?:\s*(?:,|-|–|to|and|,\s*and)\s*\d+)*", re.I)


def _numbers(text: str) -> list[float]:
    out = []
    for m in _NUM.finditer(text):
        try:
            v = float(m.group())
        except ValueError:
            continue
        if math.isfinite(v):
            out.append(v)
    return out


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


@dataclass
class Hidden:
    """What a follow-up must not say: expected values (with their tolerances), hidden outputs and inputs."""

    numbers: list[tuple[float, float]] = field(default_factory=list)  # (value, tolerance)
    strings: list[str] = field(default_factory=list)  # compared without whitespace, case-insensitive


def hidden_values(task: TaskInfo, verdict: Verdict | Mapping[str, Any] | None = None) -> Hidden:
    """The task's hidden answers and, from a verdict's messages, the expected values and inputs they quote."""
    h = Hidden()
    for a in task.config.get("answers", []) or []:
        if isinstance(a, Mapping) and isinstance(a.get("value"), (int, float)):
            tol = max(float(a.get("tolerance", 0) or 0), 1e-9 * abs(float(a["value"])))
            h.numbers.append((float(a["value"]), tol))
            h.numbers += [
                (float(x), tol) for x in a.get("also_accept", []) or [] if isinstance(x, (int, float))
            ]
    if task.language == "text" and task.reference:
        try:
            ref = task.reference_code()
        except InterviewerError:
            ref = ""
        for line in ref.splitlines():
            s = line.strip()
            if not s or s.startswith("==="):
                continue
            if re.search(r"[A-Za-z]", s) and len(s) >= 3:
                h.strings.append(s)
            else:
                h.numbers += [(v, 0.0) for v in _numbers(s) if abs(v) >= 2]
    if verdict is not None:
        v = verdict if isinstance(verdict, Verdict) else Verdict.model_validate(dict(verdict))
        for t in v.tests:
            if t.passed or not t.message:
                continue
            for m in _EXPECTED.finditer(t.message):
                frag = m.group(1).strip(" .:")
                if frag[:1] in "[('\"" and len(_squash(frag)) >= 4:
                    h.strings.append(frag.strip("'\""))
                h.numbers += [
                    (x, 0.0 if x == int(x) else 0.005 * abs(x))
                    for x in _numbers(frag)
                    if abs(x) >= 2 or x != int(x)
                ]
            for m in _INPUT.finditer(t.message):
                h.strings += [b for b in _BRACKETED.findall(m.group(1)) if len(_squash(b)) >= 6]
    return h


def leaks_hidden(
    text: str,
    task: TaskInfo,
    verdict: Verdict | Mapping[str, Any] | None = None,
    allowed: Sequence[str] = (),
) -> bool:
    """Whether ``text`` states a hidden answer, expected output or hidden input of ``task``.

    Numbers count when within the answer's tolerance (``4.71`` leaks ``4.7059 ± 0.03``); small integers
    (below 2) never count. A number or string the ``allowed`` texts contain (the candidate's own code, the
    public facts the plan names) is not a leak: the candidate already has it.
    """
    h = hidden_values(task, verdict)
    low = _squash(text).lower()
    allowed_low = _squash(" ".join(allowed)).lower()
    for s in h.strings:
        sq = _squash(s).lower()
        if sq and sq in low and sq not in allowed_low:
            return True
    given = set(_numbers(" ".join(allowed)))
    for x in _numbers(_LINE_REFS.sub(" ", text)):
        if x in given or (abs(x) < 2 and x == int(x)):
            continue
        for value, tol in h.numbers:
            if abs(abs(x) - abs(value)) <= max(tol, 1e-9):  # a sign dropped in rephrasing still tells
                return True
    return False


# -- the question -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CodeFollowup:
    """The follow-up asked after a run, and how it came about (stored with the run)."""

    text: str
    kind: Kind
    source: Literal["model", "fallback"]
    lines: tuple[int, ...] = ()
    fallback_reason: str | None = None
    rejected: str | None = None
    model: str | None = None
    seconds: float | None = None

    def as_meta(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "text": self.text,
            "kind": self.kind,
            "source": self.source,
            "lines": list(self.lines),
        }
        for k in ("fallback_reason", "rejected", "model", "seconds"):
            v = getattr(self, k)
            if v is not None:
                out[k] = v
        return out


def _line_words(lines: Sequence[int]) -> str:
    if not lines:
        return ""
    if len(lines) == 1:
        return f"line {lines[0]}"
    return "lines " + ", ".join(str(n) for n in lines[:-1]) + f" and {lines[-1]}"


def fallback(plan: FollowupPlan, task: TaskInfo) -> str:
    """The authored question for a plan: public facts only (case name, edge, flags, line numbers)."""
    at = _line_words(plan.lines)
    on = f" on {at}" if at else ""
    text_answer = task.language == "text"
    if plan.kind == "failing_case":
        if plan.case is not None:
            if text_answer and task.kind == "numeric":
                return (
                    f"Your answer for `{plan.case.name}` does not check out. Which quantities did you start from, "
                    "and which relation connects them to it?"
                )
            if text_answer:
                return (
                    f'Your prediction for "{plan.case.name}" differs from what the program prints. Which line of '
                    "that program is the subtle one, and which language rule decides what it prints?"
                )
            edge = f", which probes {plan.case.edge}" if plan.case.edge else ""
            return (
                f'Your code fails the hidden case "{plan.case.name}"{edge}. What is special about that input, '
                f"and where{on} does your code treat it differently from the usual case?"
            )
        if plan.flags:
            flag = plan.flags[0]
            if flag in ("races", "barrier", "uninitialised"):
                return (
                    f"The checker finds your code {_FLAG_WORDS[flag]}. Which threads touch the same data{on}, "
                    "and what ordering between them does your code rely on?"
                )
            return (
                f"The checker finds your code {_FLAG_WORDS.get(flag, flag)}. Which part of your code{on} causes "
                "that, and how would you confirm the fix?"
            )
        return (
            "The run stopped before the tests could finish. What in your code do you think caused that, and how "
            "would you find out?"
        )
    if plan.kind == "efficiency":
        flag = plan.flags[0] if plan.flags else "slow"
        where = f"Looking at {at}, how" if at else "How"
        return (
            f"The checker flags your code as {_FLAG_WORDS.get(flag, flag)}. {where} does its cost grow with the "
            "input size, and what would you change first?"
        )
    if plan.kind == "stability":
        fact = plan.facts[0] if plan.facts else None
        if fact is not None and fact.kind == "exp":
            return (
                f"You subtract the maximum before the exponential{on}. Why does that keep the result finite, and "
                "what happens to a row whose entries are all masked to minus infinity?"
            )
        if fact is not None and fact.kind == "sqrt-log":
            return (
                f"You compute a square root, log or variance{on}. When could that lose precision or divide by "
                "zero, and how does your code guard against it?"
            )
        return (
            f"You take an exponential of the raw values{on}. What happens there with very large or very negative "
            "inputs, and how would you keep it finite?"
        )
    if plan.kind == "design":
        if plan.facts:
            return (
                f"You use {plan.facts[0].detail}{on}. Why that choice, and how much memory traffic does it cost "
                "compared with the alternative?"
            )
        if text_answer and task.kind == "numeric":
            return (
                "Which assumption behind your answer matters most, and how would the result change if it stopped "
                "holding?"
            )
        if text_answer:
            return "Which of those outputs was hardest to predict, and which language rule decides it?"
        return "Why did you structure your solution this way, and what alternative did you consider?"
    if at:
        return (
            f"Looking at {at}: what are the time and memory complexity of your solution as the input grows, and "
            "is there a better bound?"
        )
    return "What are the time and memory complexity of your solution as the input grows, and is there a better bound?"


def _numbered(code: str, lines: Sequence[int]) -> str:
    """The code with line numbers (the model names lines as the candidate sees them), capped in size."""
    rows = code.splitlines()
    width = len(str(len(rows)))
    numbered = [f"{i:>{width}} | {r}" for i, r in enumerate(rows, start=1)]
    text = "\n".join(numbered)
    if len(text) <= MAX_CODE_CHARS:
        return text
    keep = {i for ln in lines for i in range(ln - 4, ln + 5)}
    return "\n".join(r for i, r in enumerate(numbered, start=1) if i in keep or i <= 20)[:MAX_CODE_CHARS]


def messages(plan: FollowupPlan, task: TaskInfo, code: str, run: CodeRun) -> list[BaseMessage]:
    """The prompt: the plan, the public run summary and the code fenced as data; never a hidden test."""
    block, _, _ = fence(_numbered(code, plan.lines) if code.strip() else "(no code)")
    text = prompts.render(
        "code_followup",
        title=task.title,
        run_summary=run.summary(),
        kind=plan.kind.replace("_", " "),
        target=plan.target,
        lines=_line_words(plan.lines) or "(the solution as a whole)",
        code=block,
    )
    return [HumanMessage(content=text)]


def write(
    plan: FollowupPlan,
    port: ChatStream | None,
    *,
    task: TaskInfo,
    code: str,
    run: CodeRun,
    verdict: Verdict | Mapping[str, Any] | None = None,
    asked: Sequence[str] = (),
    key: str | None = None,
    question: Question | None = None,
) -> CodeFollowup:
    """One short question for ``plan``: the model's, vetted, else the authored one for the plan's kind.

    Args:
        plan: from :func:`choose`.
        port: the chat port (``Ports.model``), or None to use the authored question.
        task, code, run: the task, the code that ran and its :class:`CodeRun`.
        verdict: the full verdict, used only by the leak guard (its messages name the expected values).
        asked: the interviewer's earlier questions on this task (a repeat is rejected).
        key: the session id, which pins the request to the session's server slot.
        question: the coding question, whose rubric wording a question must not echo (``listen.leak``).
    Returns:
        The question with its source; a model failure or a rejected reply falls back, never raises.
    """
    from interviewer.session import clean_followup, followup_problem  # the vetting every model follow-up gets

    authored = fallback(plan, task)
    public = [code, plan.case.describe() if plan.case else "", authored]
    if port is None:
        return CodeFollowup(
            authored, plan.kind, "fallback", plan.lines, fallback_reason="no model configured"
        )
    started = time.perf_counter()
    buf = ""
    try:
        for chunk in port.stream(messages(plan, task, code, run), key=key):
            buf += chunk
            if "?" in buf or len(buf) > MAX_FOLLOWUP_CHARS * 2:
                break
    except Exception as e:  # a model failure must not end the interview: the authored question is asked
        reason = (
            f"model error: {e}"
            if isinstance(e, InterviewerError)
            else f"model error: {type(e).__name__}: {e}"
        )
        return CodeFollowup(authored, plan.kind, "fallback", plan.lines, fallback_reason=reason[:200])
    seconds = round(time.perf_counter() - started, 3)
    text = clean_followup(buf)
    target_text = " ".join([plan.target, *(f.detail for f in plan.facts), plan.case.name if plan.case else "",
                            "code line lines loop complexity memory input case test"])  # fmt: skip
    problem = followup_problem(text, target_text, code, asked)
    if problem is None and leaks_hidden(text, task, verdict, allowed=public):
        problem = "states a hidden test's expected value or input"
    if problem is None and question is not None:
        from interviewer import listen

        leaked = listen.leak(text, question, [code])
        if leaked is not None:
            problem = f"leaks the rubric's wording ({leaked})"
    if problem is None and off_kind(text, plan):
        problem = f"off the plan ({plan.kind.replace('_', ' ')})"
    if problem is None and _quotes_code(text, code):
        problem = "quotes too much of the code"
    if problem is not None:
        return CodeFollowup(
            authored, plan.kind, "fallback", plan.lines, fallback_reason=problem,
            rejected=text[:MAX_FOLLOWUP_CHARS], model=port.name, seconds=seconds,
        )  # fmt: skip
    return CodeFollowup(text, plan.kind, "model", plan.lines, model=port.name, seconds=seconds)


# A question of the plan's kind uses one of its words; a small model's generic "what does this line do?" does not.
_KIND_WORDS: dict[str, tuple[str, ...]] = {
    "efficiency": ("slow", "fast", "cost", "grow", "scal", "complexit", "o(", "time", "efficien", "memory", "loop",
                   "tile", "tiling", "cache", "coalesc", "bank", "atomic", "traffic", "quadratic", "cubic", "n^",
                   "bandwidth", "shared", "thread", "speed", "long", "large", "expensive", "quick"),
    "complexity": ("complexit", "o(", "grow", "scal", "time", "memory", "bound", "quadratic", "linear", "cubic",
                   "n^", "log", "cost", "space"),
    "stability": ("overflow", "underflow", "stab", "finite", "inf", "nan", "precision", "large", "negative",
                  "max", "round", "cancel", "zero", "epsilon", "eps"),
    "design": ("why", "choos", "chose", "alternative", "instead", "trade", "memory", "traffic", "design",
               "assum", "rule"),
}  # fmt: skip


def off_kind(text: str, plan: FollowupPlan) -> bool:
    """Whether a question misses what the plan asks about: the failing case's property, or its kind's words."""
    low = text.lower()
    if plan.kind == "failing_case":
        if plan.case is None:
            return False
        want = re.findall(r"[a-z]{4,}", f"{plan.case.name} {plan.case.edge or ''}".lower())
        return not any(w[:5] in low for w in want if w not in _GENERIC_CASE_WORDS)
    return not any(w in low for w in _KIND_WORDS[plan.kind])


_GENERIC_CASE_WORDS = frozenset("with than that this into from case cases input inputs output".split())


def _quotes_code(text: str, code: str) -> bool:
    tokens = re.findall(r"\w+", code.lower())
    grams = {tuple(tokens[i : i + MAX_QUOTED_WORDS + 1]) for i in range(len(tokens) - MAX_QUOTED_WORDS)}
    said = re.findall(r"\w+", text.lower())
    return any(
        tuple(said[i : i + MAX_QUOTED_WORDS + 1]) in grams for i in range(len(said) - MAX_QUOTED_WORDS)
    )


def followup_for_run(
    task: TaskInfo,
    code: str,
    verdict: Verdict | Mapping[str, Any],
    port: ChatStream | None,
    *,
    asked: Sequence[str] = (),
    asked_kinds: Sequence[str] = (),
    key: str | None = None,
    question: Question | None = None,
) -> tuple[CodeRun, FollowupPlan, CodeFollowup]:
    """The whole step after "Run tests": summarise the run, read the code, choose, write."""
    run = CodeRun.from_verdict(verdict)
    plan = choose(run, code_facts(code, task.language, task.kind), task, asked_kinds)
    fu = write(
        plan, port, task=task, code=code, run=run, verdict=verdict, asked=asked, key=key, question=question
    )
    return run, plan, fu


def event_payload(run: CodeRun, plan: FollowupPlan, followup: CodeFollowup) -> dict[str, Any]:
    """What to store beside the verdict in the ``code_run`` event (and read back by :func:`run_history_markdown`)."""
    return {"run": run.as_meta(), "plan": plan.as_meta(), "followup": followup.as_meta()}


# -- the report -------------------------------------------------------------------------------------


def _md(text: str) -> str:
    return re.sub(r"([\\`*_\[\]<>|])", r"\\\1", " ".join(str(text).split()))


def run_history_markdown(runs: Sequence[Mapping[str, Any]]) -> str:
    """The report's run history: each run's time, counts, flags and the follow-up it led to.

    Args:
        runs: ``code_run`` event payloads in order; each has ``verdict`` and optionally ``at`` (epoch seconds
            or ISO text, e.g. the event's ``ts``), ``run`` and ``followup`` (as :func:`event_payload` makes).
    """
    if not runs:
        return "_No test runs._"
    out = []
    for i, r in enumerate(runs, start=1):
        meta = r.get("run")
        if not isinstance(meta, Mapping):
            v = r.get("verdict")
            meta = CodeRun.from_verdict(v).as_meta() if isinstance(v, Mapping) else {}
        at = r.get("at")
        if isinstance(at, (int, float)):
            when = dt.datetime.fromtimestamp(at, tz=dt.UTC).strftime("%H:%M:%S UTC")
        else:
            when = str(at) if at else "time not recorded"
        total = int(meta.get("n_passed", 0)) + int(meta.get("n_failed", 0))
        head = f"{meta.get('n_passed', 0)}/{total} passed" + (" (all)" if meta.get("passed") else "")
        bits = [f"{i}. {when}: {head}"]
        if meta.get("error_kind"):
            bits.append(f"stopped with a {_md(meta['error_kind'])}")
        failing = meta.get("failing")
        if isinstance(failing, Mapping) and failing.get("name"):
            edge = f" ({_md(failing['edge'])})" if failing.get("edge") else ""
            bits.append(f"first failing case: {_md(failing['name'])}{edge}")
        if meta.get("flags"):
            bits.append("flags: " + ", ".join(_md(f) for f in meta["flags"]))
        line = "; ".join(bits)
        fu = r.get("followup")
        if isinstance(fu, Mapping) and fu.get("text"):
            line += f'\n   - asked ({_md(str(fu.get("kind", "")).replace("_", " "))}): "{_md(fu["text"])}"'
        out.append(line)
    return "\n".join(out)


def history_from_events(events: Iterable[Any], qid: str) -> list[dict[str, Any]]:
    """A question's ``code_run`` events from the session store, as :func:`run_history_markdown` reads them."""
    return [
        {"at": e.ts, **e.payload}
        for e in events
        if getattr(e, "kind", None) == "code_run" and e.payload.get("qid") == qid
    ]
