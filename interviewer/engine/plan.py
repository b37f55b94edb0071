"""The plan of an interview and how it advances: which questions, in what order, within which time budgets,
and the interviewer's next message (opening, follow-up, clarification reply, closing).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from interviewer.content import Bank, Question, Round
from interviewer.engine.events import SessionLog, State, pending_plan
from interviewer.engine.followups import FollowupWriter
from interviewer.engine.ports import Ports
from interviewer.engine.scoring import QuestionScoring
from interviewer.errors import InputError

DEFAULT_PER_ROUND = 3


def plan_questions(
    bank: Bank,
    rounds: Sequence[Round | str],
    per_round: int = DEFAULT_PER_ROUND,
    seed: int | None = None,
    prefer: Sequence[str] = (),
) -> list[str]:
    """Pick ``per_round`` questions per round, easy to hard; ids in ``prefer`` (weak topics) go first."""
    rng = random.Random(seed)
    plan: list[str] = []
    for r in rounds:
        pool = bank.by_round(r)
        if not pool:
            raise InputError(f"the round '{r}' has no questions in {bank.root / 'rubrics'}")
        preferred = [q for q in pool if q.id in prefer]
        rest = [q for q in pool if q.id not in prefer]
        rng.shuffle(rest)
        chosen = (preferred + rest)[: max(1, per_round)]
        plan.extend(q.id for q in sorted(chosen, key=lambda q: q.difficulty))
    return plan


def plan_bank(bank: Bank, plan: dict[str, Any]) -> Bank:
    """The bank a session was planned from: the shared bank plus the questions stored with it (resume)."""
    extra = [Question.model_validate(q) for q in plan.get("extra_questions", [])]
    return bank.with_questions(extra) if extra else bank


def opening(state: State, bank: Bank, q: Question) -> str:
    """The main question, numbered, with the round's name when a new round starts."""
    idx = state.idx
    prev = bank.get(state.plan[idx - 1]) if idx > 0 else None
    header = f"**{q.round.title}.** " if prev is None or prev.round != q.round else ""
    return f"{header}Question {idx + 1} of {len(state.plan)}: {q.question}"


def closing(state: State) -> str:
    answered = sum(1 for qid in state.plan if len(state.answers.get(qid, [])) >= 1)
    return (
        f"That's the end of this interview: {answered} question(s) answered. "
        "Open the report for your scores, the evidence behind them and what to study next."
    )


class Timing:
    """The per-answer timer and the rounds' time budgets (only answering time counts: pauses are free)."""

    def __init__(self, ports: Ports, log: SessionLog) -> None:
        self.ports = ports
        self.log = log

    def time_left(self) -> float | None:
        """Seconds left on the per-answer timer, or None when there is no timer or no open question."""
        st = self.log.state
        if self.ports.answer_seconds is None or st.awaiting != "candidate" or st.asked_at is None:
            return None
        return self.ports.answer_seconds - (self.ports.clock() - st.asked_at)

    def round_budget(self, round_id: str) -> float | None:
        minutes = self.log.state.budgets.get(round_id)
        return None if minutes is None else minutes * 60.0

    def round_elapsed(self, round_id: str) -> float:
        """Seconds spent answering in this round (the round's clock; it stops while the session is paused)."""
        return sum(
            float(t.meta.get("elapsed_s") or 0.0)
            for t in self.log.state.turns
            if t.role == "candidate" and t.qid and self.ports.bank.get(t.qid).round.value == round_id
        )

    def round_time_left(self) -> float | None:
        qid = self.log.state.qid
        budget = None if qid is None else self.round_budget(self.ports.bank.get(qid).round.value)
        if qid is None or budget is None:
            return None
        return budget - self.round_elapsed(self.ports.bank.get(qid).round.value)

    def spent(self, q: Question) -> bool:
        """Whether ``q``'s round has used up its time budget."""
        budget = self.round_budget(q.round.value)
        return budget is not None and self.round_elapsed(q.round.value) >= budget


class Advancer:
    """Produces the interviewer's next message and stores it (as an event) before the last yield."""

    def __init__(
        self,
        ports: Ports,
        log: SessionLog,
        followups: FollowupWriter,
        scoring: QuestionScoring,
        timing: Timing,
        asked: Callable[[Question, int], None],
    ) -> None:
        self.ports = ports
        self.log = log
        self.followups = followups
        self.scoring = scoring
        self.timing = timing
        self.asked = asked  # after each stored question: work ahead on the answer to it
        # A question back, answered from the scenario (stored with its reply), not yet shown: the next message.
        self.pending_reply: str | None = None

    def _question(self) -> Question | None:
        qid = self.log.state.qid
        return self.ports.bank.get(qid) if qid else None

    def advance(self) -> Iterator[str]:
        """The next message, yielding the text so far (the last yield is final)."""
        q = self._question()
        if q is None:
            yield from self._close()
            return
        if self.pending_reply is not None:
            text, self.pending_reply = self.pending_reply, None
            yield text
            return
        plan = pending_plan(self.log.state, q.id)
        if self.log.state.level == 0 and plan is None:
            yield from self._open_next(q)
            return
        asked = yield from self.followups.write(q, self.log.state.level, plan)
        self._ask(q, self.log.state.level, asked.text, asked.meta)
        yield asked.text

    def _close(self) -> Iterator[str]:
        text = closing(self.log.state)
        yield text  # shown at once; the last question is scored while the candidate reads it
        self.scoring.score_pending()
        self.log.emit("ended", {"reason": "completed", "text": text})

    def _open_next(self, q: Question) -> Iterator[str]:
        """Ask the next main question (past any round whose time budget is spent)."""
        while self.timing.spent(q):
            self.log.emit("skipped", {"qid": q.id, "level": 0, "reason": "round time budget spent"})
            nxt = self._question()
            if nxt is None:
                yield from self._close()
                return
            q = nxt
        text = opening(self.log.state, self.ports.bank, q)
        self._ask(q, 0, text, {"source": "authored"})
        yield text
        self.scoring.score_pending()  # the previous question, only now: the candidate already sees the next one

    def _ask(self, q: Question, level: int, text: str, meta: dict[str, Any]) -> None:
        self.log.emit("asked", {"qid": q.id, "level": level, "text": text, **meta})
        self.asked(q, level)
