"""Code runs and the follow-up each one leads to (see :mod:`interviewer.code_followup`).

After "Run tests" the verdict and the code choose the next coding follow-up (a failing hidden case, the
efficiency flag, or the complexity, design or stability of the lines written); the model phrases it, vetted,
with the authored question as the fallback. It is stored with the run (``code_run``) and asked at the next
model move on the question (:meth:`~interviewer.engine.followups.FollowupWriter.write`).
"""

from __future__ import annotations

from typing import Any

from interviewer import code_followup
from interviewer.content import Question
from interviewer.engine.events import SessionLog
from interviewer.engine.ports import Ports


class CodeRuns:
    """Stores sandbox verdicts with the follow-up the run leads to."""

    def __init__(self, ports: Ports, log: SessionLog) -> None:
        self.ports = ports
        self.log = log

    def record(self, q: Question, verdict: dict[str, Any], code: str | None) -> None:
        """Emit ``code_run`` for ``q``; with the code, the follow-up (already vetted) is stored with it."""
        payload: dict[str, Any] = {"qid": q.id, "verdict": verdict}
        if code is not None and q.coding_task:
            payload |= self._followup(q, verdict, code)
        self.log.emit("code_run", payload)

    def _followup(self, q: Question, verdict: dict[str, Any], code: str) -> dict[str, Any]:
        from interviewer import checker

        st = self.log.state
        asked = [t.text for t in st.turns if t.qid == q.id and t.role == "interviewer"]
        kinds = [str(f.get("kind", "")) for f in st.code_followups.get(q.id, [])]
        assert q.coding_task is not None
        run, plan, fu = code_followup.followup_for_run(
            checker.get_task(q.coding_task),
            code,
            verdict,
            self.ports.model,
            asked=asked,
            asked_kinds=kinds,
            key=self.log.session_id,
            question=q,
        )
        return code_followup.event_payload(run, plan, fu)
