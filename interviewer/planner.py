"""Turns a candidate's choices (round or loop, resume, job posting, weak topics) into a started interview.

Shared by the UI and the CLI so both plan the same way; pure orchestration over runtime services.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from interviewer.content import Question, Round
from interviewer.errors import InputError
from interviewer.runtime import Runtime
from interviewer.session import Interview, Ports

if TYPE_CHECKING:
    from interviewer.checker import Verdict

DEEP_DIVE_KINDS = ("performance", "hardware", "research", "senior-intro")


@dataclass(frozen=True)
class Choice:
    """What the candidate picked. ``round`` may be a round id or ``full-loop``; ``loop`` a preset id."""

    round: str | None = None
    per_round: int = 3
    loop: str | None = None
    resume_path: Path | None = None
    posting: str | None = None
    weak_first: bool = False
    seed: int | None = None


FULL_LOOP = "full-loop"
STANDARD_ROUNDS = [r.value for r in Round if r is not Round.DEEP_DIVE]


def _ports_with_resume(rt: Runtime, owner: str, ports: Ports) -> Ports:
    """Deep-dive follow-ups see the candidate's own resume passages first (their index only)."""
    from interviewer.resume import CombinedRetriever, ResumeIndex

    return replace(ports, retriever=CombinedRetriever(ports.retriever, ResumeIndex(owner, rt.settings)))


def ports_for(rt: Runtime, owner: str, plan: dict[str, object] | None = None) -> Ports:
    """Ports for one candidate; sessions with resume questions also retrieve from that candidate's resume."""
    ports = rt.ports(owner)
    if plan and plan.get("extra_questions"):
        ports = _ports_with_resume(rt, owner, ports)
    return ports


def _resume_questions(rt: Runtime, owner: str, choice: Choice, ports: Ports) -> list[Question]:
    from interviewer.deep_dive import deep_dive_mix
    from interviewer.resume import ResumeIndex, load_resume

    assert choice.resume_path is not None
    resume = load_resume(choice.resume_path, owner=owner)
    ResumeIndex(owner, rt.settings).add(resume)  # replaces this candidate's earlier upload
    kinds = [DEEP_DIVE_KINDS[i % len(DEEP_DIVE_KINDS)] for i in range(max(1, choice.per_round))]
    return deep_dive_mix(resume, kinds, model=ports.model)


def start(rt: Runtime, owner: str, choice: Choice) -> Interview:
    """Start the interview the candidate asked for.

    Raises:
        InputError: a bad combination (e.g. a resume deep dive without a resume) or bad resume file.
    """
    ports = rt.ports(owner)
    if choice.loop:
        from interviewer.loops import load_preset, resume_questions_for, start_loop
        from interviewer.resume import load_resume

        preset = load_preset(choice.loop)
        extra: list[Question] = []
        if choice.resume_path is not None:
            resume = load_resume(choice.resume_path, owner=owner)
            from interviewer.resume import ResumeIndex

            ResumeIndex(owner, rt.settings).add(resume)
            extra = resume_questions_for(preset, resume, model=ports.model)
            ports = _ports_with_resume(rt, owner, ports)
        return start_loop(ports, preset, extra, seed=choice.seed, posting=choice.posting or None)

    if choice.round == Round.DEEP_DIVE.value:
        if choice.resume_path is None:
            raise InputError("the resume deep dive needs your resume: upload a PDF, Markdown or text file")
        qs = _resume_questions(rt, owner, choice, ports)
        return Interview.start(
            _ports_with_resume(rt, owner, ports),
            [Round.DEEP_DIVE],
            question_ids=[q.id for q in qs],
            extra_questions=qs,
        )

    if choice.round is None and not choice.posting:
        raise InputError("pick a round, a loop, or paste a job posting")
    if choice.posting and choice.round is None:
        from interviewer.posting import plan_for_posting

        steered_rounds, steered = plan_for_posting(
            ports.bank, choice.posting, choice.per_round, seed=choice.seed
        )
        return Interview.start(ports, steered_rounds, question_ids=steered)

    rounds = STANDARD_ROUNDS if choice.round == FULL_LOOP else [str(choice.round)]
    qids: list[str] | None = None
    if choice.weak_first:
        from interviewer.report import next_plan

        qids = next_plan(ports.store, ports.bank, rounds, choice.per_round, owner=owner)
    elif choice.posting:
        # A round was picked too (the UI always has one): the posting steers the questions within it.
        from interviewer.posting import analyze_posting, rank_questions

        weights = analyze_posting(choice.posting).topic_weights
        qids = []
        for r in rounds:
            chosen = rank_questions(ports.bank.by_round(r), weights, choice.seed)[: max(1, choice.per_round)]
            qids.extend(q.id for q in sorted(chosen, key=lambda q: q.difficulty))
    it = Interview.start(ports, rounds, per_round=choice.per_round, seed=choice.seed, question_ids=qids)
    if choice.resume_path is not None:
        it.notice = (
            "Your resume is used by the resume deep dive and by loops with a deep-dive round; "
            "this round asks questions from the bank."
        )
    return it


def resume_session(rt: Runtime, owner: str, session_id: str, *, read_only: bool = False) -> Interview:
    """Reopen a session with the ports it needs (its resume questions and index included)."""
    row = rt.store.get(session_id, owner=owner)
    return Interview.resume(ports_for(rt, owner, row.plan), session_id, read_only=read_only)


def clarify(it: Interview, asked: str) -> str:
    """Answer a clarifying question from the open question's authored scenario, and store the exchange."""
    from interviewer.clarify import answer_clarification

    q = it.question
    if q is None or it.finished:
        raise InputError("there is no open question to clarify")
    if not asked.strip():
        raise InputError("type your clarifying question first")
    reply = answer_clarification(q, asked.strip())
    it.record_clarification(asked.strip(), reply)
    return reply


def run_tests(it: Interview, code: str) -> Verdict:
    """Run the open question's hidden tests on ``code`` in the sandbox and store the verdict with the turn."""
    from interviewer import checker

    q = it.question
    if q is None or not q.coding_task:
        raise InputError("the open question has no coding task")
    verdict = checker.check(q.coding_task, code)
    it.record_code_run(verdict.model_dump(mode="json"), code=code)
    return verdict
