"""Reading the candidate's answer: validated at the boundary, then read by the listener against the rubric,
which chooses the interviewer's next move (why, deepen, hint, challenge, redirect, clarify, push).

Offline and cheap: no model call, no latency added before the follow-up starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from interviewer import listen
from interviewer.content import Question
from interviewer.engine.events import SessionLog
from interviewer.engine.ports import Ports
from interviewer.engine.probing import ProbeAhead
from interviewer.errors import InputError
from interviewer.text import clean, is_blank

Heard = tuple[listen.Reading, listen.Plan]


@dataclass(frozen=True)
class Taken:
    """An answer as it goes into the log: the event, and the reply to a question back (clarify) if any."""

    kind: str  # "answered", or "clarified" when the answer asked a question back
    payload: dict[str, Any]
    ts: float
    reply: str | None = None


class AnswerReader:
    """Validates answers and reads them with the ports' listener (None: the authored two whys follow)."""

    def __init__(self, ports: Ports, log: SessionLog, probing: ProbeAhead | None = None) -> None:
        self.ports = ports
        self.log = log
        # The reading probes' findings on the answer so far, when they are ready before Send.
        trust = ports.reading_trust
        self.probing = probing or ProbeAhead(
            ports.reading_port, acts_on=trust.acts_on if trust is not None else None
        )

    def validate(self, text: str) -> str:
        """The answer as stored, or InputError with a message for the candidate."""
        if is_blank(text):  # zero-width or control characters only count as empty too
            raise InputError('the answer is empty: type or say something (even "I don\'t know") to go on')
        text = clean(text)
        if len(text) > self.ports.max_answer_chars:
            raise InputError(
                f"the answer is {len(text):,} characters; the limit is {self.ports.max_answer_chars:,}. "
                "Trim it to the part you would say out loud"
            )
        return text.strip()

    def listen(self, q: Question, level: int, answer: str, *, spoken: bool = False) -> Heard | None:
        """Read ``answer`` (given at ``level``) against the rubric and choose the interviewer's next move.

        None when the ports have no listener (the authored two whys follow whatever was said).
        """
        if self.ports.listener is None:
            return None
        turns = [t for t in self.log.state.turns if t.qid == q.id]
        asked = next(
            (t.text for t in reversed(turns) if t.role == "interviewer" and not t.meta.get("clarify")), ""
        )
        reading = self.ports.listener.read(q, level, answer, asked)
        # Never waits: a reading of the answer (or nearly all of it) made while it was typed or spoken, or none.
        reading = listen.heed(q, level, reading, self.probing.ready(q, level, answer), answer)
        done = listen.done_from([(t.role, t.level, t.meta) for t in turns])
        return reading, listen.choose(q, level, reading, done, answer, asked, spoken=spoken)

    def take(self, q: Question, text: str, mode: str, extra: dict[str, Any] | None) -> Taken:
        """The event that stores ``text`` as the answer to the open question ``q`` (read by the listener)."""
        answer = self.validate(text)
        state = self.log.state
        level = state.level
        now = self.ports.clock()
        payload: dict[str, Any] = {"qid": q.id, "level": level, "text": answer, "mode": mode}
        if state.asked_at is not None:
            elapsed = now - state.asked_at
            payload["elapsed_s"] = round(elapsed, 2)
            if self.ports.answer_seconds is not None:
                payload["over_time"] = elapsed > self.ports.answer_seconds
        payload.update(extra or {})
        heard = self.listen(q, level, answer, spoken=mode == "spoken")
        if heard is None:
            return Taken("answered", payload, now)
        reading, plan = heard
        if plan.move == "clarify":
            # A question back: answered from the scenario facts; the turn stays open at the same level.
            return Taken(
                "clarified",
                {"qid": q.id, "question": answer, "reply": plan.text, "via": "answer"},
                now,
                plan.text,
            )
        return Taken("answered", {**payload, "listen": reading.as_meta(), "plan": plan.as_meta()}, now)
