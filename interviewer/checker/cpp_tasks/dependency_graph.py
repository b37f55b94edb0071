"""Grader for ``cpp-dependency-graph``: replays fresh random operations and checks every answer.

The harness in the box only records what the candidate's class returned; this module keeps its own model
of the graph, so it knows which edges must be refused, and checks each ``order()`` against every edge.
"""

from __future__ import annotations

import random
import secrets
import time
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from interviewer.checker.cpp_tasks._build import (
    Check,
    SandboxLike,
    build_separately_and_run,
    check_source,
    compile_summary,
    describe_failure,
    harness_object,
    tail,
    to_verdict,
)
from interviewer.checker.models import TaskInfo, Verdict
from interviewer.checker.sandbox import Limits, Sandbox

FLAGS = ("-O1",)
# Appended to the candidate's file (not secret): the hidden harness calls the class through these, so the
# candidate's unit can be compiled in a box that does not hold the harness.
BRIDGE = """

// --- appended by the checker: the test harness reaches your class through these functions ---
namespace interviewer_bridge {
DependencyGraph* make() { return new DependencyGraph(); }
bool add_node(DependencyGraph* g, const std::string& name) { return g->add_node(name); }
bool add_edge(DependencyGraph* g, const std::string& from, const std::string& to) { return g->add_edge(from, to); }
bool remove_edge(DependencyGraph* g, const std::string& from, const std::string& to) {
    return g->remove_edge(from, to);
}
std::vector<std::string> order(const DependencyGraph* g) { return g->order(); }
}  // namespace interviewer_bridge
"""
RUN_LIMITS = Limits(cpu_seconds=6.0, wall_seconds=25.0, memory_mb=1024)
SCENARIO_SECONDS = 4.0  # per scenario process: the reference needs ~0.1 s for the largest one
MAX_SHOWN = 6


@dataclass
class Model:
    """The grader's own graph: what each operation must return, and the edges every order must respect."""

    nodes: list[str] = field(default_factory=list)
    node_set: set[str] = field(default_factory=set)
    out: dict[str, set[str]] = field(default_factory=dict)
    # While every accepted edge goes forward in `rank`, a forward edge cannot close a cycle: no search needed.
    rank: dict[str, int] = field(default_factory=dict)
    all_forward: bool = True

    def add_node(self, name: str) -> bool:
        if name in self.node_set:
            return False
        self.nodes.append(name)
        self.node_set.add(name)
        self.out[name] = set()
        return True

    def path(self, start: str, goal: str) -> list[str] | None:
        """A shortest path start -> ... -> goal, or None."""
        prev: dict[str, str | None] = {start: None}
        queue = deque([start])
        while queue:
            v = queue.popleft()
            if v == goal:
                p: list[str] = []
                cur: str | None = v
                while cur is not None:
                    p.append(cur)
                    cur = prev[cur]
                return p[::-1]
            for t in self.out[v]:
                if t not in prev:
                    prev[t] = v
                    queue.append(t)
        return None

    def edge_refusal(self, a: str, b: str) -> str | None:
        """Why add_edge(a, b) must be refused, or None when it must succeed."""
        if a not in self.node_set or b not in self.node_set:
            missing = a if a not in self.node_set else b
            return f"node {missing!r} does not exist"
        if a == b:
            return "a self-loop is a cycle"
        if b in self.out[a]:
            return "that edge already exists"
        if self.all_forward and self.rank.get(a, -1) < self.rank.get(b, -1):
            return None
        p = self.path(b, a)
        if p is not None:
            cycle = [a, *p]
            if len(cycle) > 8:
                cycle = [*cycle[:4], f"... ({len(cycle) - 7} more) ...", *cycle[-3:]]
            return "it closes the cycle " + " -> ".join(cycle)
        return None

    def add_edge(self, a: str, b: str) -> bool:
        if self.edge_refusal(a, b) is not None:
            return False
        self.out[a].add(b)
        if not self.rank.get(a, -1) < self.rank.get(b, -1):
            self.all_forward = False
        return True

    def remove_edge(self, a: str, b: str) -> bool:
        if a in self.out and b in self.out[a]:
            self.out[a].remove(b)
            return True
        return False

    def edges(self) -> Iterable[tuple[str, str]]:
        for a, targets in self.out.items():
            for b in targets:
                yield a, b


Op = tuple[str, ...]


@dataclass(frozen=True)
class Scenario:
    """One named test: operations to replay (the expected answers come from the model at check time)."""

    name: str
    ops: list[Op]
    rank: dict[str, int] = field(default_factory=dict)  # a known topological order, when there is one


def _names(rng: random.Random, n: int) -> list[str]:
    """Distinct node names that look like build targets and carry no hint of the hidden order."""
    stems = ["lib", "svc", "pkg", "mod", "job", "task", "tool", "core", "net", "db"]
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < n:
        name = f"{rng.choice(stems)}_{rng.randrange(16**5):05x}"
        if name not in seen:
            seen.add(name)
            out.append(name)
    return out


def _basics(rng: random.Random) -> Scenario:
    a, b, c, d = _names(rng, 4)
    ops: list[Op] = [
        ("N", a), ("N", b), ("N", c), ("N", a),  # a duplicate node is refused
        ("E", a, b), ("E", b, c), ("E", a, b),  # a duplicate edge is refused
        ("O",),
        ("E", c, a),  # closes a -> b -> c -> a
        ("E", b, b),  # self-loop
        ("E", a, d),  # unknown node
        ("O",),  # the refused edges must have left no trace
        ("N", d), ("E", d, a), ("R", a, b), ("R", a, b), ("E", c, a), ("O",),
    ]  # fmt: skip
    return Scenario("basics: duplicates, self-loop, cycle, unknown node", ops)


def _random_graph(rng: random.Random, n: int, attempts: int) -> Scenario:
    """Random edges in both directions, so some close cycles and some only look like they might."""
    names = _names(rng, n)
    ops: list[Op] = [("N", x) for x in names]
    for k in range(attempts):
        a, b = rng.sample(names, 2)
        roll = rng.random()
        if roll < 0.1:
            ops.append(("R", a, b))
        else:
            ops.append(("E", a, b))
        if k % 25 == 24:
            ops.append(("O",))
    ops.append(("O",))
    return Scenario(f"random graph: {n} nodes, {attempts} edge operations", ops)


def _large_dag(rng: random.Random, n: int, m: int) -> Scenario:
    """A large DAG (edges forward in a hidden order) plus a few edges that close long cycles."""
    names = _names(rng, n)
    order = names[:]
    rng.shuffle(order)
    ops: list[Op] = [("N", x) for x in names]
    chain = [("E", order[i], order[i + 1]) for i in range(n - 1)]  # a path through every node
    extra = []
    for _ in range(m):
        i, j = sorted(rng.sample(range(n), 2))
        extra.append(("E", order[i], order[j]))
    edges = chain + extra
    rng.shuffle(edges)
    ops += edges
    for _ in range(5):
        i, j = sorted(rng.sample(range(n), 2))
        ops.append(("E", order[j], order[i]))  # every backward edge closes a cycle along the chain
    ops.append(("O",))
    rank = {x: i for i, x in enumerate(order)}
    return Scenario(f"large DAG: {n} nodes, {n - 1 + m} edge attempts, 5 cycle attempts", ops, rank)


def _diamonds(rng: random.Random, layers: int) -> Scenario:
    """A ladder of diamonds: 2^layers paths, so a search without a visited set never finishes."""
    names = _names(rng, 2 * layers + 2)
    top, lone = names[0], names[-1]
    ops: list[Op] = [("N", x) for x in names]
    prev = [top]
    for k in range(layers):
        layer = names[1 + 2 * k : 3 + 2 * k]
        ops += [("E", p, q) for p in prev for q in layer]
        prev = layer
    # Neither closes a cycle, but each makes a naive search walk every path from the top.
    ops += [("E", lone, top), ("E", prev[0], lone), ("O",)]
    return Scenario(f"diamond ladder: {layers} layers, 2^{layers} paths (needs a visited set)", ops)


def scenarios(seed: int) -> list[Scenario]:
    """The hidden tests for one run; fresh names and edges for every seed."""
    rng = random.Random(seed)
    return [
        _basics(rng),
        _random_graph(rng, 12, 60),
        _random_graph(rng, 80, 400),
        _large_dag(rng, 2000, 6000),
        _diamonds(rng, 40),
    ]


def _fmt(op: Op) -> str:
    kind, *args = op
    call = {"N": "add_node", "E": "add_edge", "R": "remove_edge", "O": "order"}[kind]
    return f"{call}({', '.join(args)})"


def check_answers(sc: Scenario, answers: list[str]) -> tuple[bool, str]:
    """Replay ``sc`` on the model and compare each recorded answer; (passed, message)."""
    model = Model(rank=sc.rank)
    for k, op in enumerate(sc.ops):
        if k >= len(answers):
            return False, f"no answer for operation {k + 1} ({_fmt(op)})"
        got = answers[k].split()
        kind = op[0]
        if not got or got[0] != kind:
            return False, f"operation {k + 1} ({_fmt(op)}): unreadable answer {answers[k][:80]!r}"
        if kind == "O":
            problem = _check_order(model, got[1:])
            if problem:
                return False, f"operation {k + 1}, order(): {problem}"
            continue
        returned = got[1:] == ["1"]
        if kind == "N":
            want = model.add_node(op[1])
            why = "the node already exists" if not want else "it is a new node"
        elif kind == "E":
            refusal = model.edge_refusal(op[1], op[2])
            want = model.add_edge(op[1], op[2])
            why = refusal or "it is a valid new edge"
        else:
            want = model.remove_edge(op[1], op[2])
            why = "the edge exists" if want else "there is no such edge"
        if returned != want:
            return False, (
                f"operation {k + 1}: {_fmt(op)} returned {str(returned).lower()}, expected "
                f"{str(want).lower()} because {why}"
            )
    return True, f"all {len(sc.ops)} operations answered correctly"


def _check_order(model: Model, got: list[str]) -> str | None:
    try:
        count = int(got[0])
    except (IndexError, ValueError):
        return "unreadable answer"
    names = got[1:]
    if count != len(names):
        return "names with spaces are not used here; the answer is malformed"
    if len(names) != len(model.nodes) or set(names) != model.node_set:
        missing = [x for x in model.nodes if x not in set(names)][:MAX_SHOWN]
        dup = sorted(x for x, c in Counter(names).items() if c > 1)[:MAX_SHOWN]
        parts = [f"returned {len(names)} names for {len(model.nodes)} nodes"]
        if missing:
            parts.append(f"missing {missing}")
        if dup:
            parts.append(f"repeated {dup}")
        return "; ".join(parts) + " (every node exactly once)"
    pos = {x: i for i, x in enumerate(names)}
    for a, b in model.edges():
        if pos[a] > pos[b]:
            return f"{b!r} (position {pos[b]}) comes before {a!r} (position {pos[a]}) but depends on it (edge {a} -> {b})"
    return None


def grade_checks(
    task_dir: Path, code: str, sandbox: SandboxLike, seed: int | None = None, limits: Limits = RUN_LIMITS
) -> list[Check]:
    """Every check of the task, in order."""
    check_source(code)
    harness = (task_dir / "harness.cpp").read_text(encoding="utf-8")
    seed = secrets.randbits(62) if seed is None else seed
    scs = scenarios(seed)
    files: dict[str, str | bytes] = {}
    for i, sc in enumerate(scs):
        files[f"ops{i}.txt"] = "\n".join(" ".join(op) for op in sc.ops) + "\n"
    # One process per scenario so a hang in one test does not hide the answers of the others.
    script_runs = " ; ".join(
        f"timeout -s KILL {SCENARIO_SECONDS:g} ./prog ops{i}.txt ans{i}.txt 2>err{i}.txt; echo $? >rc{i}.txt"
        for i in range(len(scs))
    )
    collect = [f"{kind}{i}.txt" for i in range(len(scs)) for kind in ("ans", "rc", "err")]
    # The candidate's unit is compiled in a box without the hidden harness, then linked with its object.
    obj = harness_object(sandbox, "graph_harness", harness, FLAGS)
    run = build_separately_and_run(
        sandbox,
        {"solution.cpp": code + BRIDGE},
        {"harness": obj},
        files,
        FLAGS,
        ["/bin/sh", "-c", script_runs],
        limits=limits,
        collect=collect,
    )
    if not run.built:
        return [Check("compiles", False, "compile error:\n" + compile_summary(run.build_log))]
    checks = [Check("compiles", True, "compiled with g++ -std=c++17 -O1")]
    for i, sc in enumerate(scs):
        lines = run.files.get(f"ans{i}.txt", b"").decode("utf-8", "replace").splitlines()
        finished = bool(lines) and lines[-1] == "END"
        ok, msg = check_answers(sc, lines[:-1] if finished else lines)
        if not finished and (ok or msg.startswith("no answer")):
            done = len(lines)
            at = _fmt(sc.ops[done]) if done < len(sc.ops) else "the end"
            rc = run.files.get(f"rc{i}.txt", b"").decode().strip()
            ok, msg = False, f"stopped after {done} of {len(sc.ops)} operations, at {at}: {_how_it_ended(rc)}"
            err = run.files.get(f"err{i}.txt", b"").decode("utf-8", "replace")
            err = "\n".join(ln for ln in err.splitlines() if ln.strip() not in ("", "Killed"))
            if err.strip():
                msg += "\n" + tail(err, 5)
        checks.append(Check(sc.name, ok, msg))
    if run.result.timed_out:
        checks.append(Check("time limit", False, describe_failure(run)))
    return checks


def _how_it_ended(rc: str) -> str:
    """The exit status of ``timeout ... ./prog`` in words."""
    if rc in ("124", "137"):
        return f"too slow (killed after {SCENARIO_SECONDS:g} s; is the cycle check exponential?)"
    if rc.isdigit() and int(rc) > 128:
        sig = int(rc) - 128
        names = {
            6: "SIGABRT (abort or uncaught exception)",
            11: "SIGSEGV (invalid memory access or stack overflow)",
        }
        return f"crashed with {names.get(sig, f'signal {sig}')}"
    return f"the program exited with status {rc or 'unknown'} before the end"


def grade(task: TaskInfo, code: str, sandbox: Sandbox) -> Verdict:
    """The runner entry point (see interviewer/checker/README.md)."""
    start = time.monotonic()
    checks = grade_checks(task.path, code, sandbox, limits=task.limits.to_limits())
    return to_verdict(task.id, checks, time.monotonic() - start)


def prepare(task: TaskInfo, sandbox: Sandbox) -> None:
    """Compile the hidden harness ahead of the first check."""
    harness_object(sandbox, "graph_harness", (task.path / "harness.cpp").read_text(encoding="utf-8"), FLAGS)
