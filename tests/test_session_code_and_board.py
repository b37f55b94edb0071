"""Code-aware coding follow-ups and the design whiteboard, through the engine with a scripted model.

A real sandbox run ("Run tests" through the planner) stores the follow-up its verdict and the code lead to; the
next model move asks it; a diagram missing a component gets that component's authored question, at the same
why level; live state equals the replayed log; the report lists the runs and the whiteboard.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from interviewer import checker, planner
from interviewer.content import Bank, Question, load_question
from interviewer.engine.events import replay
from interviewer.errors import InputError
from interviewer.llm.client import ChatPort
from interviewer.llm.fake import ScriptedChatModel
from interviewer.report import build_report, render_html, render_markdown
from interviewer.session import Interview, Ports
from interviewer.store import SessionStore
from interviewer.whiteboard import parse

REPO = Path(__file__).parent.parent
CODING = REPO / "rubrics" / "phone-screen" / "phone.coding.merge-intervals.yaml"
DESIGN = REPO / "rubrics" / "system-design" / "design.fraud-scoring.yaml"


def _start(bank: Bank, tmp_path: Path, q: Question, *replies: str) -> tuple[Interview, ScriptedChatModel]:
    model = ScriptedChatModel().queue(*replies)
    ports = Ports(bank=bank, store=SessionStore(tmp_path / "s.db"), model=ChatPort(model, name="scripted"))
    it = Interview.start(ports, [q.round.value], question_ids=[q.id], extra_questions=[q])
    it.advance_all()
    return it, model


def _replayed(it: Interview):
    row = it.ports.store.get(it.session_id, owner=it.ports.owner)
    return replay(row.plan, it.ports.store.events(it.session_id))


def test_a_failing_run_asks_about_its_failing_case_at_the_next_follow_up(fixture_bank, tmp_path):
    q = load_question(CODING)
    asked = "Which overlapping lists does your loop merge wrongly, and why?"
    it, model = _start(fixture_bank, tmp_path, q, asked)
    task = checker.get_task(q.coding_task or "")
    verdict = planner.run_tests(it, task.starter_code)  # the real sandbox: the starter code fails
    assert not verdict.passed
    pending = it.state.pending_code_followup[q.id]
    assert pending["kind"] == "failing_case" and pending["source"] == "model", pending
    assert pending["text"] == asked
    prompt = str(model.calls[-1][-1].content)
    assert all(t.message not in prompt for t in verdict.tests if t.message)  # hidden cases stay hidden
    it.submit("I merge by walking both lists with two pointers.")
    text = it.advance_all()
    last = it.state.turns[-1]
    assert (
        text.endswith(asked)
        and last.meta["source"] == "code_run"
        and last.meta["code_followup"] == "failing_case"
    )
    assert q.id not in it.state.pending_code_followup and it.state.code_followups[q.id] == [pending]
    assert len(model.calls) == 1  # the follow-up was written with the run, not again
    assert it.state == _replayed(it)


def test_a_passing_run_asks_about_the_code_written_and_an_unusable_reply_falls_back(fixture_bank, tmp_path):
    q = load_question(CODING)
    it, _ = _start(fixture_bank, tmp_path, q, "Great job!")  # not a question: the authored one is asked
    task = checker.get_task(q.coding_task or "")
    assert planner.run_tests(it, task.reference_code()).passed
    pending = it.state.pending_code_followup[q.id]
    assert pending["kind"] in {"complexity", "design", "stability"} and pending["source"] == "fallback"
    it.submit("It sorts, then merges neighbours.")
    it.advance_all()
    assert it.state.turns[-1].meta["code_followup"] == pending["kind"]
    assert it.state.turns[-1].text.endswith(pending["text"])
    assert it.state == _replayed(it)


def test_a_diagram_missing_a_component_asks_about_it_without_moving_the_why_chain(fixture_bank, tmp_path):
    q = load_question(DESIGN)
    it, _ = _start(fixture_bank, tmp_path, q)
    left_out, second = q.components[1], q.components[2]
    names = [c.name for c in q.components if c.name not in (left_out.name, second.name)]
    text = "flowchart LR\n" + " --> ".join(f"n{i}[{n}]" for i, n in enumerate(names))
    with pytest.raises(InputError):
        it.board.submit(q, "flowchart LR\n  a[Gateway] -> b[Scorer]")
    assert q.id not in it.state.diagrams
    assert it.board.submit(q, text) == left_out.ask
    assert it.board.submit(q, text) == second.ask  # the same part is not asked twice
    st = it.state
    assert st.level == 0 and st.awaiting == "candidate" and st.diagrams[q.id] == text
    assert st.board_asked[q.id] == [left_out.name, second.name] and st.turns[-1].meta["board"]
    assert it.messages()[-1]["content"] == second.ask
    assert st == _replayed(it)
    md = render_markdown(build_report(it.ports.store, it.ports.bank, it.session_id))
    assert f"missing: {left_out.name}" in md and "#### Whiteboard" in md and "```mermaid" in md
    assert len(parse(text).nodes) == len(names)


def test_the_report_lists_each_test_run_with_the_follow_up_it_led_to(fixture_bank, tmp_path):
    q = load_question(CODING)
    asked = "Which overlapping lists does your loop merge wrongly, and why?"
    it, _ = _start(fixture_bank, tmp_path, q, asked)
    task = checker.get_task(q.coding_task or "")
    planner.run_tests(it, task.starter_code)
    planner.run_tests(it, task.reference_code())
    rep = build_report(it.ports.store, it.ports.bank, it.session_id)
    md, html = render_markdown(rep), render_html(rep)
    assert "#### Test runs" in md and "asked (failing case)" in md and "\n2. " in md and "(all)" in md
    assert "<h4>Test runs</h4>" in html and asked in html
    assert all(t.message not in md for t in checker.check(task.id, task.starter_code).tests if t.message)
