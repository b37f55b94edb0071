"""The interview façade: one candidate's interview over one or more rounds, as the UI and the CLI see it.

Flow per question: ask (authored wording) -> answer -> why level 1 -> answer -> why level 2 -> answer -> score.
Each job lives in its own module, and this class only wires them:

- :mod:`~interviewer.engine.events`: the event types, :func:`apply` (the only place state changes), replay;
- :mod:`~interviewer.engine.plan`: the plan, time budgets, and the interviewer's next message;
- :mod:`~interviewer.engine.reading`: validating the answer and reading it with the listener;
- :mod:`~interviewer.engine.followups`: writing and vetting the follow-ups (leak guard, fallbacks);
- :mod:`~interviewer.engine.ahead`: prefill and speculation over the model port's capabilities;
- :mod:`~interviewer.engine.scoring`: when questions are scored, and the background truth judge;
- :mod:`~interviewer.engine.coding`: code runs and the follow-up each one leads to;
- :mod:`~interviewer.engine.board`: the design whiteboard's diagrams and the questions on them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from interviewer.content import Question, Round
from interviewer.engine.ahead import WorkAhead
from interviewer.engine.board import Board
from interviewer.engine.coding import CodeRuns
from interviewer.engine.events import SessionLog, State, initial_state, replay
from interviewer.engine.followups import FollowupWriter
from interviewer.engine.plan import DEFAULT_PER_ROUND, Advancer, Timing, plan_bank, plan_questions
from interviewer.engine.ports import Ports
from interviewer.engine.reading import AnswerReader
from interviewer.engine.scoring import QuestionScoring
from interviewer.errors import InputError, SessionNotFound
from interviewer.scoring.models import QuestionScore


class Interview:
    """One candidate's interview. Components: ``reading``, ``followups``, ``ahead``, ``scoring``, ``timing``,
    ``coding`` (test runs), ``board`` (the whiteboard: ``it.board.submit(it.question, text)``)."""

    def __init__(self, ports: Ports, session_id: str, state: State) -> None:
        self.ports = ports
        self.session_id = session_id
        self.log = SessionLog(ports.store, session_id, state, ports.clock)
        self.notice: str | None = None  # the last fault the candidate should know about

        def tell(notice: str) -> None:
            self.notice = notice

        self.reading = AnswerReader(ports, self.log)
        self.followups = FollowupWriter(ports, self.log, tell)
        self.scoring = QuestionScoring(ports, self.log, tell)
        self.timing = Timing(ports, self.log)
        self.coding = CodeRuns(ports, self.log)
        self.board = Board(self.log)
        self.ahead = WorkAhead(ports, self.log, self.reading, self.followups)
        self._advancer = Advancer(
            ports, self.log, self.followups, self.scoring, self.timing, self.ahead.prefetch_next_followup
        )

    # construction --------------------------------------------------------------------------------
    @classmethod
    def start(
        cls,
        ports: Ports,
        rounds: Sequence[Round | str],
        *,
        per_round: int = DEFAULT_PER_ROUND,
        seed: int | None = None,
        question_ids: Sequence[str] | None = None,
        title: str | None = None,
        extra_plan: dict[str, Any] | None = None,
        extra_questions: Sequence[Question] = (),
    ) -> Interview:
        """Plan the questions and open a new session in the store.

        ``extra_questions`` (e.g. generated from the candidate's resume) are stored with the session, so it
        resumes even though they are not in the bank.
        """
        round_ids = [Round(r).value for r in rounds]
        if not round_ids:
            raise InputError("pick at least one round")
        if extra_questions:
            ports = replace(ports, bank=ports.bank.with_questions(list(extra_questions)))
        qids = list(question_ids) if question_ids else plan_questions(ports.bank, round_ids, per_round, seed)
        for q in qids:
            ports.bank.get(q)  # fail now on an unknown id, not mid-interview
        plan = {"rounds": round_ids, "questions": qids, **(extra_plan or {})}
        if extra_questions:
            plan["extra_questions"] = [q.model_dump(mode="json") for q in extra_questions]
        if title is None:
            title = " + ".join(Round(r).title for r in round_ids)
        it = cls(ports, ports.store.create(ports.owner, title, plan), initial_state(plan))
        it.log.emit("planned", plan)
        return it

    @classmethod
    def resume(cls, ports: Ports, session_id: str, *, read_only: bool = False) -> Interview:
        """Rebuild an interview from its events; it continues at the last completed turn.

        ``read_only``: only look (a view of the transcript): no pending scoring, a pause stays a pause.
        """
        row = ports.store.get(session_id, owner=ports.owner)
        ports = replace(ports, bank=plan_bank(ports.bank, row.plan))
        state = replay(row.plan, ports.store.events(session_id))
        for qid in state.plan:
            if qid not in ports.bank.questions:
                raise SessionNotFound(
                    f"session '{session_id}' asks question '{qid}', which is no longer in the bank"
                )
        it = cls(ports, session_id, state)
        if read_only:
            return it
        it.scoring.score_pending()
        if state.paused_at is not None and not it.finished:  # an ended session stays ended (and not "active")
            it.log.emit("resumed", {})
            ports.store.set_status(session_id, "active")
        return it

    # read-only views -------------------------------------------------------------------------------
    @property
    def state(self) -> State:
        return self.log.state

    @property
    def finished(self) -> bool:
        return self.state.awaiting == "done"

    @property
    def question(self) -> Question | None:
        qid = self.state.qid
        return self.ports.bank.get(qid) if qid else None

    @property
    def level(self) -> int:
        return self.state.level

    @property
    def awaiting(self) -> str:
        # A question back is stored with its reply; the reply is the interviewer's next message all the same.
        return "interviewer" if self._advancer.pending_reply is not None else self.state.awaiting

    @property
    def progress(self) -> tuple[int, int]:
        return min(self.state.idx + 1, len(self.state.plan)), len(self.state.plan)

    def messages(self) -> list[dict[str, str]]:
        """The transcript as chat messages (role: user/assistant), as shown so far."""
        turns = self.state.turns[:-1] if self._advancer.pending_reply is not None else self.state.turns
        return [
            {"role": "assistant" if t.role == "interviewer" else "user", "content": t.text} for t in turns
        ]

    @property
    def scores(self) -> dict[str, QuestionScore]:
        return dict(self.state.scores)

    # the interviewer's turn ----------------------------------------------------------------------
    def advance(self) -> Iterator[str]:
        """Produce the interviewer's next message, yielding the text so far (the last yield is final).

        The message is stored before the generator finishes, so a crash after it loses nothing.
        """
        if self.finished:
            return
        if self.awaiting != "interviewer":
            raise InputError("the interviewer is waiting for your answer to the current question")
        yield from self._advancer.advance()

    def advance_all(self) -> str:
        """Produce the interviewer's next message without streaming; returns its final text."""
        text = ""
        for text in self.advance():  # noqa: B007 - each snapshot replaces the last
            pass
        return text

    # the candidate's turn --------------------------------------------------------------------------
    def submit(self, text: str, mode: str = "typed", extra: dict[str, Any] | None = None) -> None:
        """Store the candidate's answer to the open question (read by the listener; scored later, once the
        next question is on screen, by :meth:`advance`)."""
        if self.awaiting != "candidate":
            raise InputError(
                "there is no open question to answer"
                if self.finished
                else "wait for the interviewer's question"
            )
        q = self.question
        assert q is not None
        taken = self.reading.take(q, text, mode, extra)
        self.log.emit(taken.kind, taken.payload, ts=taken.ts)
        self._advancer.pending_reply = taken.reply

    def reply(self, text: str, mode: str = "typed") -> Iterator[str]:
        """Submit an answer and stream the interviewer's next message."""
        self.submit(text, mode)
        yield from self.advance()

    def skip(self) -> None:
        """Move past the open question without answering the rest of its why-chain."""
        q = self.question
        if q is None or self.finished:
            return
        self.log.emit("skipped", {"qid": q.id, "level": self.state.level})
        if self.state.answers.get(q.id):
            self.scoring.score(q)

    def end(self, reason: str = "ended-early") -> None:
        """End the interview now; answered questions are scored, the rest are left unscored."""
        if self.finished:
            return
        self.scoring.score_pending()  # an answered question whose score waited for the next one on screen
        q = self.question
        if q is not None and self.state.answers.get(q.id):
            self.scoring.score(q)
        self.log.emit("ended", {"reason": reason})
        self.ports.store.set_status(self.session_id, reason)

    def pause(self) -> None:
        """Mark the session paused; :meth:`resume` continues it with its clock and order intact."""
        if not self.finished:
            self.log.emit("paused", {})
            self.ports.store.set_status(self.session_id, "paused")

    def record_code_run(self, verdict: dict[str, Any], code: str | None = None) -> None:
        """Store a sandbox verdict for the open coding question (the score of record for correctness); with
        the ``code`` that ran, the follow-up the run leads to is written (model, vetted) and stored with it."""
        q = self.question
        if q is None:
            raise InputError("there is no open question to attach the test run to")
        self.coding.record(q, verdict, code)

    def record_clarification(self, question: str, reply: str) -> None:
        q = self.question
        if q is None:
            raise InputError("there is no open question to clarify")
        self.log.emit("clarified", {"qid": q.id, "question": question, "reply": reply})

    def wait_for_judge(
        self, timeout: float | None = None, progress: Callable[[int, int], None] | None = None
    ) -> bool:
        """Before the report: wait for this session's pending judgements (True when none is left)."""
        return self.scoring.wait_for_judge(timeout, progress)

    # working ahead of the candidate (optimisations: see interviewer/engine/ahead.py) ----------------------
    def prefill(self, partial: str, *, paused: bool = False) -> bool:
        """Offer the follow-up's prompt so far (the text typed so far) to the model server; ``paused``: the
        candidate has stopped typing, so the text so far is read ahead even mid-sentence."""
        return self.ahead.prefill(partial, paused=paused)

    def speculate(self, partial: str, *, spoken: bool = True) -> bool:
        """Start the follow-up to the spoken text so far, as if it had just been sent."""
        return self.ahead.speculate(partial, spoken=spoken)

    def cancel_speculation(self) -> None:
        """Drop the follow-up generated ahead (the candidate speaks again)."""
        self.ahead.cancel_speculation()
