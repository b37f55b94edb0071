"""The session as a fold over its events: :func:`apply` is the only place session state changes.

Every change to a session is an event in the :class:`~interviewer.store.SessionStore`. The live engine emits
events through :class:`SessionLog` (append to the store, then apply), and :func:`replay` folds the stored
events with the same :func:`apply`, so a resumed session is the live one. Event kinds and their payloads:

- ``planned``: the plan (rounds, question ids, round minutes, generated questions); written once at the start.
- ``asked``: ``qid``, ``level``, ``text`` and how it was written (``source``, ``move``, ...).
- ``answered``: ``qid``, ``level``, ``text``, ``mode``; ``elapsed_s``/``over_time`` under a timer; ``listen``
  and ``plan`` (the move chosen, with ``next_level``) when the listener read it.
- ``clarified``: ``qid``, ``question``, ``reply`` (``via: "answer"`` when the answer box asked it).
- ``skipped``: ``qid``, ``level`` (``reason`` when a round's time budget was spent).
- ``scored`` / ``judged``: ``qid`` and ``score`` (``judged`` also has the truth judge's ``verdicts``; it may
  arrive after the end, from the background judge).
- ``code_run``: ``qid`` and the sandbox ``verdict``; ``run``, ``plan`` and ``followup`` (the follow-up the run
  leads to, already vetted: asked at the next model move, see :mod:`interviewer.code_followup`) when the code was
  read.
- ``diagram``: ``qid`` and the whiteboard ``text`` (Mermaid) the candidate sent.
- ``board_followup``: ``qid``, ``about``, ``kind``, ``text``: the interviewer's question on that diagram (a turn
  that does not change the why level, like a clarification's reply).
- ``grounded``: ``qid`` and ``reference``: the retrieved knowledge every follow-up prompt on that question carries,
  fixed by the first prompt that needs it (the first one recorded wins), so a resumed session, or another replica
  after a failover, sends the same prompt prefix and the model server's prefix cache keeps serving it.
- ``paused`` / ``resumed``: nothing (their time stamps stop and restart the answer clock).
- ``ended``: ``reason`` (and the closing ``text`` when the interview ran to its end).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from interviewer import listen
from interviewer.scoring.models import QuestionScore
from interviewer.store import Event, SessionStore
from interviewer.text import clean

Role = Literal["interviewer", "candidate"]
Awaiting = Literal["interviewer", "candidate", "done"]


@dataclass
class Turn:
    role: Role
    text: str
    qid: str
    level: int
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class State:
    """Everything a session knows; built only by :func:`apply` (treat it as read-only)."""

    plan: list[str]
    rounds: list[str]
    idx: int = 0
    level: int = 0
    awaiting: Awaiting = "interviewer"
    asked_at: float | None = None
    turns: list[Turn] = field(default_factory=list)
    answers: dict[str, list[str]] = field(default_factory=dict)
    scores: dict[str, QuestionScore] = field(default_factory=dict)
    judged: set[str] = field(default_factory=set)  # questions rescored with the truth judge's verdicts
    code_runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    budgets: dict[str, float] = field(default_factory=dict)  # round id -> minutes
    code_followups: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # qid -> follow-ups of runs
    pending_code_followup: dict[str, dict[str, Any]] = field(default_factory=dict)  # qid -> not asked yet
    diagrams: dict[str, str] = field(default_factory=dict)  # qid -> the last diagram sent
    board_asked: dict[str, list[str]] = field(default_factory=dict)  # qid -> ``about`` of board follow-ups
    references: dict[str, str] = field(default_factory=dict)  # qid -> knowledge its follow-up prompts carry
    paused_at: float | None = None
    end_reason: str | None = None

    @property
    def qid(self) -> str | None:
        return self.plan[self.idx] if self.idx < len(self.plan) else None


def initial_state(plan: dict[str, Any]) -> State:
    """The state of a session that has its plan and nothing else."""
    return State(
        plan=list(plan["questions"]), rounds=list(plan["rounds"]), budgets=dict(plan.get("round_minutes", {}))
    )


# -- the fold -------------------------------------------------------------------------------------
# Each handler returns a new State (shallow copy, new containers where it changes them): a reader on another
# thread holding the old state never sees it half-changed.


def _asked(st: State, p: dict[str, Any], ts: float) -> State:
    turn = Turn("interviewer", p["text"], p["qid"], p["level"], p)
    st = replace(st, turns=[*st.turns, turn], level=p["level"], awaiting="candidate", asked_at=ts)
    if p.get("code_followup") and p["qid"] in st.pending_code_followup:
        pending = {k: v for k, v in st.pending_code_followup.items() if k != p["qid"]}
        st = replace(st, pending_code_followup=pending)
    return st


def _answered(st: State, p: dict[str, Any], ts: float) -> State:
    text = clean(p["text"])  # repairs sessions stored before text was cleaned at the boundary
    turn = Turn("candidate", text, p["qid"], p["level"], {**p, "text": text})
    answers = {**st.answers, p["qid"]: store_answer(st.answers.get(p["qid"], []), p["level"], text)}
    st = replace(st, turns=[*st.turns, turn], answers=answers, awaiting="interviewer")
    nxt = (p.get("plan") or {}).get("next_level")
    if nxt is None:  # no listener (and sessions from before it): two whys, then the next question
        nxt = p["level"] + 1 if p["level"] < 2 else listen.PUSH_LEVEL + 1
    if nxt <= listen.PUSH_LEVEL:
        return replace(st, level=nxt)
    return replace(st, idx=st.plan.index(p["qid"]) + 1, level=0)  # scored once the next one is on screen


def _skipped(st: State, p: dict[str, Any], ts: float) -> State:
    return replace(st, idx=st.plan.index(p["qid"]) + 1, level=0, awaiting="interviewer")


def _scored(st: State, p: dict[str, Any], ts: float) -> State:
    return replace(st, scores={**st.scores, p["qid"]: QuestionScore.model_validate(p["score"])})


def _judged(st: State, p: dict[str, Any], ts: float) -> State:
    return replace(_scored(st, p, ts), judged=st.judged | {p["qid"]})


def _code_run(st: State, p: dict[str, Any], ts: float) -> State:
    runs = {**st.code_runs, p["qid"]: [*st.code_runs.get(p["qid"], []), p["verdict"]]}
    st = replace(st, code_runs=runs)
    fu = p.get("followup")
    if isinstance(fu, dict) and fu.get("text"):  # logs from before code follow-ups have none
        done = {**st.code_followups, p["qid"]: [*st.code_followups.get(p["qid"], []), fu]}
        st = replace(
            st, code_followups=done, pending_code_followup={**st.pending_code_followup, p["qid"]: fu}
        )
    return st


def _diagram(st: State, p: dict[str, Any], ts: float) -> State:
    return replace(st, diagrams={**st.diagrams, p["qid"]: p["text"]})


def _board_followup(st: State, p: dict[str, Any], ts: float) -> State:
    """The interviewer's question on the diagram: a turn at the same level (it does not advance the why-chain)."""
    asked = {**st.board_asked, p["qid"]: [*st.board_asked.get(p["qid"], []), p["about"]]}
    meta = {"board": True, "kind": p["kind"], "about": p["about"]}
    turn = Turn("interviewer", p["text"], p["qid"], st.level, meta)
    return replace(st, board_asked=asked, turns=[*st.turns, turn])


def _clarified(st: State, p: dict[str, Any], ts: float) -> State:
    """A question back and its answer from the scenario facts; the turn stays open at the same level."""
    meta = {"clarify": True, "via": p["via"]} if p.get("via") else {"clarify": True}
    asked = Turn("candidate", clean(p["question"]), p["qid"], st.level, meta)
    reply = Turn("interviewer", p["reply"], p["qid"], st.level, {"clarify": True})
    return replace(st, turns=[*st.turns, asked, reply])


def _paused(st: State, p: dict[str, Any], ts: float) -> State:
    return replace(st, paused_at=ts)


def _resumed(st: State, p: dict[str, Any], ts: float) -> State:
    asked_at = st.asked_at
    if st.paused_at is not None and asked_at is not None:
        asked_at += ts - st.paused_at  # a pause does not count as answering time
    return replace(st, asked_at=asked_at, paused_at=None)


def _ended(st: State, p: dict[str, Any], ts: float) -> State:
    st = replace(st, awaiting="done", end_reason=p["reason"])
    if p.get("text"):  # the closing message (stored since the fold; older logs end without it)
        st = replace(st, turns=[*st.turns, Turn("interviewer", p["text"], "", 0, {"closing": True})])
    return st


def _grounded(st: State, p: dict[str, Any], ts: float) -> State:
    if p["qid"] in st.references:  # two writers raced (a failover): the prompts already sent used the first
        return st
    return replace(st, references={**st.references, p["qid"]: str(p["reference"])})


Handler = Callable[[State, dict[str, Any], float], State]
# "planned" changes nothing: the plan is the session row's, and the initial state already holds it.
HANDLERS: dict[str, Handler] = {
    "asked": _asked,
    "answered": _answered,
    "clarified": _clarified,
    "skipped": _skipped,
    "scored": _scored,
    "judged": _judged,
    "code_run": _code_run,
    "diagram": _diagram,
    "board_followup": _board_followup,
    "grounded": _grounded,
    "paused": _paused,
    "resumed": _resumed,
    "ended": _ended,
}


_AFTER_THE_END = frozenset(("scored", "judged"))


def apply(state: State, event: Event) -> State:
    """The state after ``event`` (pure: ``state`` is not changed).

    An ended session stays ended, whatever a second writer appended later; only scores (an answer scored
    on reopening, the truth judge's verdicts from the background) still land after the end. Unknown kinds
    are ignored (a newer writer's).
    """
    if state.awaiting == "done" and event.kind not in _AFTER_THE_END:
        return state
    handler = HANDLERS.get(event.kind)
    return state if handler is None else handler(state, event.payload, event.ts)


def replay(plan: dict[str, Any], events: Sequence[Event]) -> State:
    """Rebuild the state from the event log: the fold of :func:`apply` (pure: no I/O)."""
    st = initial_state(plan)
    for ev in events:
        st = apply(st, ev)
    return st


class SessionLog:
    """One session's state and the one way to change it: :meth:`emit` appends an event, then applies it.

    Thread-safe: the background truth judge emits through here too, under the same lock, so the store's order
    is the order the events were applied in.
    """

    def __init__(
        self, store: SessionStore, session_id: str, state: State, clock: Callable[[], float]
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.clock = clock
        self._state = state
        self._lock = threading.RLock()

    @property
    def state(self) -> State:
        return self._state

    def emit(self, kind: str, payload: dict[str, Any], ts: float | None = None) -> Event:
        """Store one event (committed before this returns) and apply it to the state; ``ts``: now."""
        with self._lock:
            ev = self.store.append(self.session_id, kind, payload, ts=self.clock() if ts is None else ts)
            # Applied as a reader of the log will see it (JSON: lists, string keys), so live == replayed.
            ev = Event(ev.seq, ev.ts, ev.kind, json.loads(json.dumps(ev.payload)))
            self._state = apply(self._state, ev)
            return ev


# -- reading the state ----------------------------------------------------------------------------


def store_answer(answers: Sequence[str], level: int, text: str) -> list[str]:
    """The answers to one question with ``text`` given at ``level`` (one answer per level: the scorer reads
    [0] main, [1] why 1, [2] why 2, [3] push).

    A second answer at the same level (after a hint, a challenge or a redirect) joins the first; a level
    skipped because an earlier answer already covered it holds that earlier answer.
    """
    out = list(answers)
    if level < len(out):
        out[level] = f"{out[level]}\n{text}"
        return out
    while len(out) < level:
        out.append(out[-1] if out else "")
    out.append(text)
    return out


def hinted_levels(turns: Sequence[Turn], qid: str) -> list[int]:
    """The level of each graded hint the interviewer gave on ``qid``, in order (what the scorer charges for).

    Read from the turns, so a session replayed from its events charges the same hints as the live one.
    """
    return [
        int(t.meta.get("hint_level", t.level))
        for t in turns
        if t.qid == qid and t.role == "interviewer" and t.meta.get("move") == "hint"
    ]


def last_code_run_passed(state: State, qid: str) -> bool | None:
    """Whether the last sandbox run on ``qid`` passed (the score of record for correctness); None: no run."""
    runs = state.code_runs.get(qid)
    return bool(runs[-1].get("passed")) if runs else None


def pending_plan(state: State, qid: str) -> dict[str, Any] | None:
    """The move chosen with the last answer to ``qid``, when the interviewer has not replied to it yet."""
    if not state.turns:
        return None
    last = state.turns[-1]
    if last.role != "candidate" or last.qid != qid or last.meta.get("clarify"):
        return None
    plan = last.meta.get("plan")
    return plan if isinstance(plan, dict) else None


def said(state: State, qid: str) -> list[str]:
    """What the candidate said on ``qid`` so far, in order."""
    return [t.text for t in state.turns if t.qid == qid and t.role == "candidate"]
