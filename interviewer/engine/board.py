"""The design whiteboard in a session: the candidate's Mermaid diagram and the interviewer's question on it.

:mod:`interviewer.whiteboard` reads the diagram and compares it with the question's expected components; this
stores it (``diagram``) and the authored follow-up it leads to (``board_followup``, a turn that does not move
the why-chain, like a clarification's reply).
"""

from __future__ import annotations

from interviewer import whiteboard
from interviewer.content import Question
from interviewer.engine.events import SessionLog
from interviewer.errors import InputError

BOARD_ROUNDS = frozenset({"system-design", "inference-case"})


def has_whiteboard(q: Question | None) -> bool:
    """Whether ``q`` is drawn on the whiteboard: a design round's question with authored components."""
    return q is not None and q.round.value in BOARD_ROUNDS and bool(q.components)


class Board:
    """Takes the candidate's diagrams for the open question."""

    def __init__(self, log: SessionLog) -> None:
        self.log = log

    def submit(self, q: Question | None, text: str) -> str | None:
        """Store the diagram and the interviewer's question on it (None: nothing left to ask about it).

        Raises InputError when there is no design question open or the text is not a readable flowchart.
        """
        st = self.log.state
        if q is None or st.awaiting == "done" or not has_whiteboard(q):
            raise InputError("the open question has no whiteboard")
        if st.awaiting != "candidate":
            raise InputError("wait for the interviewer's question")
        diagram = whiteboard.parse(text)  # InputError says what to fix
        self.log.emit("diagram", {"qid": q.id, "text": text})
        review = whiteboard.compare(diagram, q)
        fu = whiteboard.next_question(review, q, self.log.state.board_asked.get(q.id, []))
        if fu is None:
            return None
        self.log.emit("board_followup", {"qid": q.id, "about": fu.about, "kind": fu.kind, "text": fu.text})
        return fu.text
