"""cpp-dependency-graph: the grader's model, its messages, and real runs of right and wrong graphs."""

from __future__ import annotations

import pytest

from interviewer.checker import check, get_task
from interviewer.checker.cpp_tasks import dependency_graph as G
from interviewer.checker.sandbox import Sandbox

TASK = "cpp-dependency-graph"


def _reference() -> str:
    return get_task(TASK).reference_code()


def _messages(v) -> dict[str, str]:
    return {t.name: t.message for t in v.tests if not t.passed}


def test_model_refuses_cycles_self_loops_duplicates_and_unknown_nodes() -> None:
    m = G.Model()
    for n in "abc":
        assert m.add_node(n)
    assert not m.add_node("a")
    assert m.add_edge("a", "b") and m.add_edge("b", "c")
    assert "closes the cycle c -> a -> b -> c" in (m.edge_refusal("c", "a") or "")
    assert not m.add_edge("c", "a") and not m.add_edge("a", "a") and not m.add_edge("a", "zz")
    assert not m.add_edge("a", "b")  # duplicate
    assert m.add_edge("a", "c")  # a shortcut, not a cycle
    assert m.remove_edge("a", "b") and not m.remove_edge("a", "b")


def test_order_check_reports_missing_repeated_and_misordered_nodes() -> None:
    sc = G.Scenario("t", [("N", "a"), ("N", "b"), ("E", "a", "b"), ("O",)])
    assert G.check_answers(sc, ["N 1", "N 1", "E 1", "O 2 a b"]) == (
        True,
        "all 4 operations answered correctly",
    )
    ok, msg = G.check_answers(sc, ["N 1", "N 1", "E 1", "O 2 b a"])
    assert not ok and "'b' (position 0) comes before 'a'" in msg
    ok, msg = G.check_answers(sc, ["N 1", "N 1", "E 1", "O 2 a a"])
    assert not ok and "missing ['b']" in msg and "repeated ['a']" in msg
    ok, msg = G.check_answers(sc, ["N 1", "N 1", "E 0", "O 2 a b"])
    assert not ok and "add_edge(a, b) returned false, expected true" in msg


def test_scenarios_are_fresh_per_seed_and_the_large_dag_refuses_only_its_backward_edges() -> None:
    a, b = G.scenarios(1), G.scenarios(2)
    assert a[1].ops != b[1].ops
    big = a[3]
    model = G.Model(rank=big.rank)
    reasons = []
    for op in big.ops:
        if op[0] == "N":
            model.add_node(op[1])
        elif op[0] == "E":
            why = model.edge_refusal(op[1], op[2])
            model.add_edge(op[1], op[2])
            if why:
                reasons.append(why)
    assert sum("closes the cycle" in r for r in reasons) == 5
    assert all("closes the cycle" in r or "already exists" in r for r in reasons)


@pytest.mark.sandbox
def test_reference_passes(sandbox: Sandbox) -> None:
    v = check(TASK, _reference(), sandbox=sandbox)
    assert v.passed, v.render_text()


@pytest.mark.sandbox
def test_graph_without_a_cycle_check_accepts_the_cycle(sandbox: Sandbox) -> None:
    code = _reference().replace("if (reaches(t->second, f->second)) return false;", "")
    v = check(TASK, code, sandbox=sandbox)
    msg = _messages(v)["basics: duplicates, self-loop, cycle, unknown node"]
    assert "returned true, expected false because it closes the cycle" in msg


@pytest.mark.sandbox
def test_refused_edge_left_in_the_graph_breaks_later_answers(sandbox: Sandbox) -> None:
    code = _reference().replace(
        "if (reaches(t->second, f->second)) return false;\n        out_[f->second].insert(t->second);",
        "out_[f->second].insert(t->second);\n        if (reaches(t->second, f->second)) return false;",
    )
    assert code != _reference()
    v = check(TASK, code, sandbox=sandbox)
    msg = _messages(v)["basics: duplicates, self-loop, cycle, unknown node"]
    assert "order()" in msg and "every node exactly once" in msg


@pytest.mark.sandbox
def test_insertion_order_is_not_a_dependency_order(sandbox: Sandbox) -> None:
    code = _reference().replace(
        "std::vector<std::string> order() const {",
        "std::vector<std::string> order() const {\n        return names_;",
    )
    v = check(TASK, code, sandbox=sandbox)
    msgs = _messages(v)
    assert any("but depends on it" in m for m in msgs.values()), v.render_text()


@pytest.mark.sandbox
def test_search_without_visited_set_times_out_on_the_diamond_ladder(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(G, "SCENARIO_SECONDS", 1.5)
    code = _reference().replace("if (!seen[t]) {", "{")
    v = check(TASK, code, sandbox=sandbox)
    msg = _messages(v)["diamond ladder: 40 layers, 2^40 paths (needs a visited set)"]
    assert "too slow (killed after 1.5 s" in msg
