"""The front desk: the few calls a front end (the web UI) makes on interviews, over the runtime's services.

A front end only talks to this and to the :class:`~interviewer.engine.interview.Interview` it hands out; it
never reads the store, replays events or plans questions itself.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from interviewer import planner
from interviewer.engine.events import State, replay
from interviewer.engine.interview import Interview
from interviewer.errors import InputError
from interviewer.runtime import Runtime
from interviewer.store import SessionRow

if TYPE_CHECKING:
    from interviewer.checker import Verdict
    from interviewer.report import Report, SkillPoint


class Desk:
    """Starts, reopens and looks at one owner's interviews; every call names the owner it acts for."""

    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime

    def start(self, owner: str, choice: planner.Choice) -> Interview:
        """Plan and open a new interview; this process becomes its only writer."""
        it = planner.start(self.rt, owner, choice)
        self.rt.store.claim(it.session_id)
        return it

    def open(self, sid: str | None, owner: str) -> Interview:
        """Reopen a session to write to it: this process becomes its only writer (or says who is)."""
        if not sid:
            raise InputError("no interview yet: pick a round and press Start")
        self.rt.store.get(sid, owner=owner)  # a stranger's id is "not found" before any lease is touched
        self.rt.store.claim(sid)
        return planner.resume_session(self.rt, owner, sid)

    def look(self, sid: str, owner: str) -> Interview:
        """The session as stored, to read only (nothing is scored, a pause stays a pause)."""
        return planner.resume_session(self.rt, owner, sid, read_only=True)

    def state(self, sid: str, owner: str) -> State:
        """The session's state from its events alone (no ports: cheap enough for a clock tick)."""
        row = self.rt.store.get(sid, owner=owner)
        return replay(row.plan, self.rt.store.events(sid))

    def answer_time_left(self, sid: str, owner: str) -> float | None:
        """Seconds left on the per-answer timer (negative: over time); None when no answer is being timed."""
        seconds = self.rt.settings.answer_seconds
        if seconds is None:
            return None
        st = self.state(sid, owner)
        if st.awaiting != "candidate" or st.asked_at is None or st.paused_at is not None:
            return None
        return seconds - (time.time() - st.asked_at)

    def clarify(self, it: Interview, asked: str) -> str:
        return planner.clarify(it, asked)

    def run_tests(self, it: Interview, code: str) -> Verdict:
        return planner.run_tests(it, code)

    @staticmethod
    def has_whiteboard(it: Interview | None) -> bool:
        """Whether the open question is drawn on the design whiteboard."""
        from interviewer.engine.board import has_whiteboard

        return it is not None and not it.finished and has_whiteboard(it.question)

    def submit_diagram(self, it: Interview, text: str) -> str | None:
        """Store the candidate's diagram; the interviewer's question on it (None: nothing to ask about it)."""
        return it.board.submit(it.question, text)

    def sessions(self, owner: str) -> list[SessionRow]:
        return self.rt.store.list(owner=owner)

    def report(self, sid: str, owner: str) -> Report:
        """The session's report, once the truth judge has finished rescoring it (or three minutes passed)."""
        from interviewer.report import build_report

        self.rt.wait_for_judge(sid, timeout=180)
        return build_report(self.rt.store, self.rt.bank, sid, owner=owner, scorer=self.rt.scorer())

    def skills(self, owner: str) -> list[SkillPoint]:
        from interviewer.report import skill_map

        return skill_map(self.rt.store, self.rt.bank, owner=owner)
