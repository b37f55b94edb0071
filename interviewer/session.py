"""The interview engine: a state machine over ports (model, retriever, scorer, store, clock). No UI inside.

Flow per question: ask (authored wording) -> answer -> why level 1 -> answer -> why level 2 -> answer -> score.
The model only phrases the why-follow-ups, grounded in the rubric's why-chain; when its follow-up is empty, not
a question, off target or the server fails, the engine asks the authored fallback instead, so a weak or absent
model degrades the style of the interview, never the interview itself.

State is never held only in memory: every step is an event in the :class:`~interviewer.store.SessionStore`,
and :meth:`Interview.resume` rebuilds the state by replaying them.
"""

from __future__ import annotations

import contextlib
import logging
import random
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from interviewer import listen, prompts
from interviewer.content import Bank, Question, Round
from interviewer.errors import InputError, InterviewerError, SessionNotFound
from interviewer.scoring.models import KeyPointVerdict, QuestionScore
from interviewer.store import SessionStore
from interviewer.text import FOLLOW_UP_STOP_WORDS, clean, is_blank

log = logging.getLogger(__name__)

# -- ports ----------------------------------------------------------------------------------------


class ChatModel(Protocol):
    """What the engine needs from a model: a name and streamed text (errors are ModelError)."""

    name: str

    def stream(self, messages: Sequence[BaseMessage], key: str | None = None) -> Iterator[str]: ...


class PassageLike(Protocol):
    @property
    def text(self) -> str: ...

    @property
    def source(self) -> str: ...


class Retriever(Protocol):
    def retrieve(
        self,
        query: str,
        *,
        round: str | None = None,
        topic: str | None = None,
        k: int = 4,
        kind: Literal["knowledge", "rubric"] | None = None,
    ) -> Sequence[PassageLike]: ...


class Scorer(Protocol):
    def score(
        self,
        question: Question,
        answers: list[str],
        passed: bool | None = None,
        judged: list[KeyPointVerdict] | None = None,
        hints: Sequence[int] = (),
    ) -> QuestionScore: ...


class TruthJudge(Protocol):
    """Judges key points in the background (interviewer/scoring/background.py); ``done`` gets the verdicts."""

    def submit(
        self, key: str, question: str, answer: str, key_points: Sequence[str], done: Callable[[Any], None]
    ) -> object: ...

    def wait(
        self, keys: Any = None, *, timeout: float | None = None, progress: Callable[[int, int], None] | None
    ) -> bool: ...


@dataclass
class Ports:
    """Everything the engine talks to. Only ``bank`` and ``store`` are required."""

    bank: Bank
    store: SessionStore
    model: ChatModel | None = None
    retriever: Retriever | None = None
    scorer: Scorer | None = None
    judge: TruthJudge | None = None  # rescores each question with the truth judge, off the critical path
    clock: Callable[[], float] = time.time
    answer_seconds: int | None = None  # optional per-answer timer
    max_answer_chars: int = 20_000
    owner: str = "local"
    # Reads each answer before the follow-up (challenge, hint, redirect, clarify, go deeper); None: the two
    # authored whys, whatever was said.
    listener: listen.Listener | None = None


# -- plan -----------------------------------------------------------------------------------------

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


# -- follow-up validation -------------------------------------------------------------------------

_STOP = FOLLOW_UP_STOP_WORDS
_WORD = re.compile(r"[a-z0-9][a-z0-9+\-_.]*")


def _content_words(text: str) -> set[str]:
    words = {w.strip(".-_") for w in _WORD.findall(text.lower())}
    return {w[:6] for w in words if len(w) > 2 and w not in _STOP}  # 6-char prefix: a cheap stem


MAX_FOLLOWUP_CHARS = 320


def followup_read(reply: str) -> bool:
    """Whether a model's reply so far holds all of it the engine reads: one question (or far too much)."""
    return "?" in reply or len(reply) > MAX_FOLLOWUP_CHARS * 2


# The text typed so far ends a sentence: where prefill reads the answer ahead (a candidate ends the answer with
# its last full stop and presses Send, so that reading is usually the one Send needs).
_MODEL_MOVES = ("why", "deepen")  # the moves whose question the model writes (the rest are authored text)
_SENTENCE_END = re.compile(r"[.?!][\"')\]]*\s*$")
_THIRD_PERSON = re.compile(r"\bthe candidate('s)?\b", re.I)  # talks about the candidate, not to them
_ANSWER_MARK = "\x00ANSWER\x00"  # where the candidate's answer goes; never in real text
_PROMPT_TAGS = re.compile(
    r"<\s*/?\s*(candidate_answer|history|question|key_points|why_chain|reference_material)\s*>", re.I
)


def _defang(text: str) -> str:
    """Candidate text cannot open or close the prompt's own sections (it stays readable for the model)."""
    return _PROMPT_TAGS.sub("[tag]", text)


_NARRATION = re.compile(r"^\W*(the )?(interviewer|candidate|assistant|user)\b", re.I)


# Small models often ask about "the candidate" instead of asking them; the usual forms are repaired here, and
# whatever third person is left makes the follow-up fall back to the authored wording.
_AUX = {"does": "do", "is": "are", "was": "were", "has": "have"}
_THIRD_AUX = re.compile(
    r"\b(does|did|is|was|has|would|could|should|will|can|might) the candidate\b(?!')", re.I
)
_THIRD_POSSESSIVE = re.compile(r"\bthe candidate's\b", re.I)


def _to_second_person(text: str) -> str:
    def aux(m: re.Match[str]) -> str:
        verb = m.group(1)
        new = _AUX.get(verb.lower(), verb.lower())
        return f"{new.capitalize() if verb[0].isupper() else new} you"

    return _THIRD_POSSESSIVE.sub("your", _THIRD_AUX.sub(aux, text))


_PRAISE = re.compile(
    r"^\s*(?:(?:great|good|nice|excellent|perfect|exactly|correct|right|absolutely|well done|awesome|"
    r"that's (?:right|correct|great|a (?:great|good) \w+))\b[^.!?]*[.!]\s*)+",
    re.I,
)


def clean_followup(raw: str) -> str:
    """The first question in the model's reply, without quotes, labels or trailing chatter, addressed to
    the candidate ("Why does the candidate assume X?" becomes "Why do you assume X?")."""
    text = raw.strip().strip('"').strip()
    text = re.sub(r"^(follow[- ]?up( question)?|interviewer|question)\s*[:\-]\s*", "", text, flags=re.I)
    unpraised = _PRAISE.sub("", text)  # the engine acknowledges; the model never praises
    if "?" in unpraised:
        text = unpraised
    q = text.find("?")
    if q >= 0:
        text = text[: q + 1]
    return _to_second_person(" ".join(text.split()))


def followup_problem(text: str, target_text: str, answer: str, asked: Sequence[str]) -> str | None:
    """Why a model follow-up is unusable, or None when it is fine."""
    if not text:
        return "empty"
    if "?" not in text:
        return "not a question"
    if len(text) > MAX_FOLLOWUP_CHARS:
        return "too long"
    if "<" in text and ">" in text:
        return "echoes markup"
    words = _content_words(text)
    if not words & (_content_words(target_text) | _content_words(answer)):
        return "off target"
    if _NARRATION.match(text) or _THIRD_PERSON.search(text):
        return "narrates instead of asking"
    for prev in asked:
        pw = _content_words(prev)
        # Containment, not Jaccard: a fragment copied out of a long question is still a repeat.
        if pw and len(words) >= 2 and len(words & pw) / len(words) >= 0.8:
            return "repeats an earlier question"
    return None


# -- state ----------------------------------------------------------------------------------------

Role = Literal["interviewer", "candidate"]


@dataclass
class Turn:
    role: Role
    text: str
    qid: str
    level: int
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class State:
    plan: list[str]
    rounds: list[str]
    idx: int = 0
    level: int = 0
    awaiting: Literal["interviewer", "candidate", "done"] = "interviewer"
    asked_at: float | None = None
    turns: list[Turn] = field(default_factory=list)
    answers: dict[str, list[str]] = field(default_factory=dict)
    scores: dict[str, QuestionScore] = field(default_factory=dict)
    judged: set[str] = field(default_factory=set)  # questions rescored with the truth judge's verdicts
    code_runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    budgets: dict[str, float] = field(default_factory=dict)  # round id -> minutes
    paused_at: float | None = None
    end_reason: str | None = None

    @property
    def qid(self) -> str | None:
        return self.plan[self.idx] if self.idx < len(self.plan) else None


def replay(plan: dict[str, Any], events: Sequence[Any]) -> State:
    """Rebuild the state from the event log (pure: no I/O)."""
    st = State(
        plan=list(plan["questions"]), rounds=list(plan["rounds"]), budgets=dict(plan.get("round_minutes", {}))
    )
    for ev in events:
        p = ev.payload
        if ev.kind == "judged":  # verdicts and their score in one event; may land after the end
            st.scores[p["qid"]] = QuestionScore.model_validate(p["score"])
            st.judged.add(p["qid"])
            continue
        if st.awaiting == "done":
            break  # an ended session stays ended, whatever a second writer appended later
        if ev.kind == "asked":
            st.turns.append(Turn("interviewer", p["text"], p["qid"], p["level"], p))
            st.level, st.awaiting, st.asked_at = p["level"], "candidate", ev.ts
        elif ev.kind == "answered":
            text = clean(p["text"])  # repairs sessions stored before text was cleaned at the boundary
            st.turns.append(Turn("candidate", text, p["qid"], p["level"], {**p, "text": text}))
            store_answer(st.answers.setdefault(p["qid"], []), p["level"], text)
            st.awaiting = "interviewer"
            nxt = (p.get("plan") or {}).get("next_level")
            if nxt is None:  # sessions from before the interviewer listened: two whys, then the next question
                nxt = p["level"] + 1 if p["level"] < 2 else listen.PUSH_LEVEL + 1
            if nxt <= listen.PUSH_LEVEL:
                st.level = nxt
            else:
                st.idx, st.level = st.plan.index(p["qid"]) + 1, 0
        elif ev.kind == "skipped":
            st.idx, st.level, st.awaiting = st.plan.index(p["qid"]) + 1, 0, "interviewer"
        elif ev.kind == "scored":
            st.scores[p["qid"]] = QuestionScore.model_validate(p["score"])
        elif ev.kind == "code_run":
            st.code_runs.setdefault(p["qid"], []).append(p["verdict"])
        elif ev.kind == "clarified":
            meta = {"clarify": True, "via": p["via"]} if p.get("via") else {"clarify": True}
            st.turns.append(Turn("candidate", clean(p["question"]), p["qid"], st.level, meta))
            st.turns.append(Turn("interviewer", p["reply"], p["qid"], st.level, {"clarify": True}))
        elif ev.kind == "paused":
            st.paused_at = ev.ts
        elif ev.kind == "resumed":
            if st.paused_at is not None and st.asked_at is not None:
                st.asked_at += ev.ts - st.paused_at  # a pause does not count as answering time
            st.paused_at = None
        elif ev.kind == "ended":
            st.awaiting, st.end_reason = "done", p["reason"]
    return st


def store_answer(answers: list[str], level: int, text: str) -> None:
    """Keep one answer per level (the scorer reads [0] main, [1] why 1, [2] why 2, [3] push).

    A second answer at the same level (after a hint, a challenge or a redirect) joins the first; a level
    skipped because an earlier answer already covered it holds that earlier answer.
    """
    if level < len(answers):
        answers[level] = f"{answers[level]}\n{text}"
        return
    while len(answers) < level:
        answers.append(answers[-1] if answers else "")
    answers.append(text)


def hinted_levels(turns: Sequence[Turn], qid: str) -> list[int]:
    """The level of each graded hint the interviewer gave on ``qid``, in order (what the scorer charges for).

    Read from the turns, so a session replayed from its events charges the same hints as the live one.
    """
    return [
        int(t.meta.get("hint_level", t.level))
        for t in turns
        if t.qid == qid and t.role == "interviewer" and t.meta.get("move") == "hint"
    ]


def plan_bank(bank: Bank, plan: dict[str, Any]) -> Bank:
    """The bank a session was planned from: the shared bank plus the questions stored with it (resume)."""
    extra = [Question.model_validate(q) for q in plan.get("extra_questions", [])]
    return bank.with_questions(extra) if extra else bank


# -- the interview --------------------------------------------------------------------------------


class Interview:
    """One candidate's interview over one or more rounds."""

    def __init__(self, ports: Ports, session_id: str, state: State) -> None:
        self.ports = ports
        self.session_id = session_id
        self.state = state
        self.notice: str | None = None  # the last fault the candidate should know about
        self._references: dict[str, str] = {}
        self._clarify_reply: str | None = None  # a question back, answered without advancing the turn
        # (question id, level answered, level its follow-up will ask) from the last reading of the text so far:
        # the level prefill names in the prompt, so a deepen (which skips a level) keeps its cached prompt.
        self._ahead: tuple[str, int, int] | None = None

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
        sid = ports.store.create(ports.owner, title, plan)
        ports.store.append(sid, "planned", plan, ts=ports.clock())
        return cls(
            ports, sid, State(plan=qids, rounds=round_ids, budgets=dict(plan.get("round_minutes", {})))
        )

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
        it._score_pending()
        if state.paused_at is not None:
            ev = ports.store.append(session_id, "resumed", {}, ts=ports.clock())
            if state.asked_at is not None:
                state.asked_at += ev.ts - state.paused_at
            state.paused_at = None
            ports.store.set_status(session_id, "active")
        return it

    # read-only views -------------------------------------------------------------------------------
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
        return self.state.awaiting

    @property
    def model_name(self) -> str:
        return self.ports.model.name if self.ports.model else "none (authored follow-ups only)"

    @property
    def progress(self) -> tuple[int, int]:
        return min(self.state.idx + 1, len(self.state.plan)), len(self.state.plan)

    def time_left(self) -> float | None:
        """Seconds left on the per-answer timer, or None when there is no timer or no open question."""
        if (
            self.ports.answer_seconds is None
            or self.state.awaiting != "candidate"
            or self.state.asked_at is None
        ):
            return None
        return self.ports.answer_seconds - (self.ports.clock() - self.state.asked_at)

    def messages(self) -> list[dict[str, str]]:
        """The transcript as chat messages (role: user/assistant)."""
        return [
            {"role": "assistant" if t.role == "interviewer" else "user", "content": t.text}
            for t in self.state.turns
        ]

    @property
    def scores(self) -> dict[str, QuestionScore]:
        return dict(self.state.scores)

    # the interviewer's turn ----------------------------------------------------------------------
    def advance(self) -> Iterator[str]:
        """Produce the interviewer's next message, yielding the text so far (the last yield is final).

        The message is stored before the generator finishes, so a crash after it loses nothing.
        """
        if self.state.awaiting == "done":
            return
        if self.state.awaiting != "interviewer":
            raise InputError("the interviewer is waiting for your answer to the current question")
        q = self.question
        if q is None:
            text = self._closing()
            yield text  # shown at once; the last question is scored while the candidate reads it
            self._score_pending()
            self._append("ended", {"reason": "completed"})
            self.state.awaiting, self.state.end_reason = "done", "completed"
            self.state.turns.append(Turn("interviewer", text, "", 0, {"closing": True}))
            return
        if self._clarify_reply is not None:
            text, self._clarify_reply = self._clarify_reply, None
            self.state.turns.append(Turn("interviewer", text, q.id, self.state.level, {"clarify": True}))
            self.state.awaiting = "candidate"
            yield text
            return
        plan = self._pending_plan(q)
        if self.state.level == 0 and plan is None:
            q = self._skip_over_budget(q)
            if q is None:
                yield from self.advance()
                return
            text = self._opening(q)
            self._record_asked(q, 0, text, {"source": "authored"})
            yield text
            # Score the previous question only now: the candidate already sees the next one.
            self._score_pending()
            return
        yield from self._followup(q, self.state.level, plan)

    def _pending_plan(self, q: Question) -> dict[str, Any] | None:
        """The move chosen with the last answer to ``q``, when the interviewer has not replied to it yet."""
        if not self.state.turns:
            return None
        last = self.state.turns[-1]
        if last.role != "candidate" or last.qid != q.id or last.meta.get("clarify"):
            return None
        plan = last.meta.get("plan")
        return plan if isinstance(plan, dict) else None

    def leaks(self, text: str) -> bool:
        """Whether ``text`` shares wording with the current question's private rubric (the check the engine
        runs on a model's follow-up before keeping it): the voice asks it of each piece it would speak early."""
        q = self.question
        return q is not None and listen.leak(text, q, self._said(q)) is not None

    def _said(self, q: Question) -> list[str]:
        """What the candidate said on ``q`` so far, in order."""
        return [t.text for t in self.state.turns if t.qid == q.id and t.role == "candidate"]

    def hints_used(self, qid: str) -> int:
        """Graded hints given on a question (each costs points in scoring)."""
        return len(hinted_levels(self.state.turns, qid))

    # time budgets (a loop's rounds have minutes each; only answering time counts, so pauses are free) ---
    def round_budget(self, round_id: str) -> float | None:
        minutes = self.state.budgets.get(round_id)
        return None if minutes is None else minutes * 60.0

    def round_elapsed(self, round_id: str) -> float:
        """Seconds spent answering in this round (the round's clock; it stops while the session is paused)."""
        return sum(
            float(t.meta.get("elapsed_s") or 0.0)
            for t in self.state.turns
            if t.role == "candidate" and t.qid and self.ports.bank.get(t.qid).round.value == round_id
        )

    def round_time_left(self) -> float | None:
        q = self.question
        if q is None or self.round_budget(q.round.value) is None:
            return None
        return self.round_budget(q.round.value) - self.round_elapsed(q.round.value)  # type: ignore[operator]

    def _skip_over_budget(self, q: Question) -> Question | None:
        """At a question boundary, skip the rest of a round whose time budget is spent."""
        current: Question | None = q
        while current is not None:
            budget = self.round_budget(current.round.value)
            if budget is None or self.round_elapsed(current.round.value) < budget:
                return current
            self._append("skipped", {"qid": current.id, "level": 0, "reason": "round time budget spent"})
            self.state.idx += 1
            current = self.question
        return None

    def pause(self) -> None:
        """Mark the session paused; :meth:`resume` continues it with its clock and order intact."""
        if not self.finished:
            self._append("paused", {})
            self.state.paused_at = self.ports.clock()
            self.ports.store.set_status(self.session_id, "paused")

    def advance_all(self) -> str:
        """Produce the interviewer's next message without streaming; returns its final text."""
        text = ""
        for text in self.advance():  # noqa: B007 - each snapshot replaces the last
            pass
        return text

    def _opening(self, q: Question) -> str:
        idx = self.state.idx
        prev = self.ports.bank.get(self.state.plan[idx - 1]) if idx > 0 else None
        n, total = idx + 1, len(self.state.plan)
        header = ""
        if prev is None or prev.round != q.round:
            header = f"**{q.round.title}.** "
        return f"{header}Question {n} of {total}: {q.question}"

    def _closing(self) -> str:
        answered = sum(1 for qid in self.state.plan if len(self.state.answers.get(qid, [])) >= 1)
        return (
            f"That's the end of this interview: {answered} question(s) answered. "
            "Open the report for your scores, the evidence behind them and what to study next."
        )

    def _authored(self, q: Question, level: int) -> str:
        """The authored question at ``level``: the main question, a why fallback, or the push step."""
        if level == 0:
            return q.question
        if level <= 2:
            return q.why(level).fallback
        return q.push[0].ask if q.push else q.why(2).fallback

    def _followup(self, q: Question, level: int, plan: dict[str, Any] | None = None) -> Iterator[str]:
        plan = plan or {}
        move = str(plan.get("move", "why"))
        said = self._said(q)
        answer = said[-1] if said else ""
        ack = str(plan["ack"]) if plan.get("ack") else ""
        lead = f"{ack} " if ack else ""
        carried = {k: v for k, v in plan.items() if k not in ("next_level", "move_text", "ack")}
        if move not in _MODEL_MOVES:
            # Hint, invitation to guess, expand, redirect, challenge, push: authored text, decided offline.
            text = str(plan.get("move_text") or self._authored(q, level))
            meta: dict[str, Any] = {"source": "authored", **carried}
            leaked = listen.leak(text, q, said, authored=True)
            if leaked is not None:
                meta["fallback_reason"] = f"leaks the rubric's wording ({leaked})"
                meta["rejected"] = text[:MAX_FOLLOWUP_CHARS]
                text = self._authored(q, level)
            text = lead + text
            self._record_asked(q, level, text, meta)
            yield text
            return
        step = q.why(level)
        asked = [t.text for t in self.state.turns if t.qid == q.id and t.role == "interviewer"]
        meta = {"source": "fallback", "target": step.target, **carried}
        text = ""
        if self.ports.model is not None:
            messages = self.followup_messages(q, level)
            started = time.perf_counter()
            buf = ""
            if lead:
                yield lead.strip()  # the acknowledgement is decided before the model starts
            try:
                for chunk in self.ports.model.stream(messages, key=self.session_id):
                    if not buf:
                        meta["first_token_s"] = round(time.perf_counter() - started, 3)
                    buf += chunk
                    yield lead + buf
                    if followup_read(buf):
                        break  # one question is all we want; closing the stream stops generation
                meta["model"] = self.ports.model.name
                meta["total_s"] = round(time.perf_counter() - started, 3)
                text = clean_followup(buf)
                problem = followup_problem(
                    text, f"{step.target} {' '.join(step.key_points)} {q.question}", answer, asked
                )
                if problem is None:
                    leaked = listen.leak(text, q, said)
                    if leaked is not None:
                        problem = f"leaks the rubric's wording ({leaked})"
                    elif listen.quotes_too_much(text, " ".join(said)):
                        problem = "quotes too much of the answer"
                if problem is None:
                    meta["source"] = "model"
                else:
                    meta["fallback_reason"] = problem
                    meta["rejected"] = text[:MAX_FOLLOWUP_CHARS]
            except InterviewerError as e:
                meta["fallback_reason"] = f"model error: {e}"
                self.notice = f"{e}. The interview goes on with the authored follow-up."
            except Exception as e:  # a broken adapter must not end the interview either
                meta["fallback_reason"] = f"model error: {type(e).__name__}: {e}"
                self.notice = (
                    "The model failed unexpectedly; the interview goes on with the authored follow-up."
                )
        else:
            meta["fallback_reason"] = "no model configured"
        if meta["source"] != "model":
            text = step.fallback
        text = lead + text
        self._record_asked(q, level, text, meta)
        yield text

    def _reference(self, q: Question) -> str:
        """Retrieved knowledge for a question, fetched once (the same text keeps the prompt prefix stable)."""
        if q.id in self._references:
            return self._references[q.id]
        reference = "(none)"
        if self.ports.retriever is not None:
            try:
                # Knowledge only: the rubric itself is already in the prompt.
                passages = self.ports.retriever.retrieve(
                    q.question, round=q.round.value, topic=q.topic, k=2, kind="knowledge"
                )
                reference = "\n\n".join(f"[{p.source}]\n{p.text}" for p in passages) or "(none)"
            except InterviewerError:
                return "(retrieval unavailable)"
        self._references[q.id] = reference
        return reference

    def followup_messages(
        self, q: Question, level: int, *, upcoming: bool = False, answer: str | None = None
    ) -> list[BaseMessage]:
        """The prompt for a why-follow-up: a stable prefix per question (cache-friendly), then the answers.

        With ``upcoming``, the prompt of the follow-up that will come after the candidate's next answer, cut
        just before that answer: sent ahead so the server's prompt cache holds everything but the answer.
        With ``answer`` (as :meth:`validate_answer` returns it), the whole prompt that will follow that
        answer, the very one built once it is submitted: a follow-up generated ahead (:meth:`speculate`).
        """
        step = q.why(level)
        reference = self._reference(q)
        system = prompts.render(
            "system",
            round_style=prompts.round_style(q.round.value),
            question=q.question,
            key_points="\n".join(f"- {k}" for k in q.key_points),
            why1_target=q.why(1).target,
            why2_target=q.why(2).target,
            reference=reference,
        )
        turns = [t for t in self.state.turns if t.qid == q.id and not t.meta.get("clarify")]

        def said(t: Turn) -> str:
            return _defang(t.text) if t.role == "candidate" else t.text

        ahead = upcoming or answer is not None  # the answer is not among the turns yet
        past = turns if ahead else turns[:-1]
        history_lines = [
            f"{'Interviewer' if t.role == 'interviewer' else 'Candidate'}: {said(t)}" for t in past
        ]
        if answer is not None and not upcoming:
            text = _defang(answer)
        elif turns and turns[-1].role == "candidate" and not ahead:
            text = said(turns[-1])
        else:
            text = _ANSWER_MARK
        human = prompts.render(
            "followup",
            answer=text,
            history="\n".join(history_lines) or "(nothing yet)",
            level=str(level),
            target=step.target,
        )
        if upcoming:
            human = human[: human.index(_ANSWER_MARK)]
        return [SystemMessage(content=system), HumanMessage(content=human)]

    def prefill_messages(self, partial: str) -> list[BaseMessage] | None:
        """The prompt of the follow-up that will answer the text typed or spoken so far, up to its last word.

        It is a prefix of the prompt :meth:`followup_messages` builds once the full answer is sent (the answer
        is the last thing before a fixed suffix, and the text is cut at a word boundary so the last token does
        not change), so a prefix-caching server that reads it now only reads the rest on Send. None when no
        follow-up comes next (the last why-level, or no open question).
        """
        q = self.question
        if q is None or self.state.awaiting != "candidate" or self.state.level >= 2:
            return None
        text = clean(partial)
        cut = max(text.rfind(" "), text.rfind("\n"))
        if cut <= 0:
            return None
        system, human = self.followup_messages(q, self._level_ahead(q), upcoming=True)
        assert isinstance(human.content, str)
        return [system, HumanMessage(content=human.content + _defang(text[:cut]))]

    def _level_ahead(self, q: Question) -> int:
        """The level the follow-up to the text so far will ask: the next one, unless the last reading of the
        text so far skips it (a deepen: the answer already covers the next level's target)."""
        level = self.state.level
        if self._ahead is not None and self._ahead[:2] == (q.id, level):
            return self._ahead[2]
        return level + 1

    def read_ahead(
        self, partial: str, *, spoken: bool = False
    ) -> tuple[str, tuple[listen.Reading, listen.Plan] | None] | None:
        """Read the text so far as Send would read it (the listener memoises the reading, so Send on the same
        text reads nothing again) and keep the level its follow-up will ask for the prefills that follow.

        None when no question waits for an answer; else the answer as :meth:`validate_answer` returns it and
        what :meth:`listen` made of it. Raises :class:`InputError` for text that could not be sent.
        """
        q = self.question
        if q is None or self.state.awaiting != "candidate":
            return None
        answer = self.validate_answer(partial)
        heard = self.listen(q, self.state.level, answer, spoken=spoken)
        if heard is not None and heard[1].move in _MODEL_MOVES:
            self._ahead = (q.id, self.state.level, heard[1].level)
        return answer, heard

    def prefill(self, partial: str) -> bool:
        """Offer the prompt so far to the model port's prefill queue; False when there is nothing to send.

        At the end of a sentence the text so far is read first (:meth:`read_ahead`: 1 ms to about 0.3 s here, by length), so the
        prompt names the level its follow-up will really ask: a deepen's prompt differs from the next level's
        before the answer, and a wrong guess would make Send read the whole answer again.
        """
        send = getattr(self.ports.model, "prefill", None)
        if send is None:
            return False
        if _SENTENCE_END.search(partial):
            with contextlib.suppress(InputError):
                self.read_ahead(partial)
        messages = self.prefill_messages(partial)
        if messages is None:
            return False
        send(self.session_id, messages)
        return True

    def speculate(self, partial: str, *, spoken: bool = True) -> bool:
        """Start the follow-up to ``partial`` now, as if the candidate had just submitted it (#13).

        Called at each pause of a spoken answer: the transcript is then usually the final one, so when the
        turn ends on it the model port hands out the reply it started here instead of sending a new request.
        ``partial`` is read as :meth:`submit` reads it (the listener remembers the reading); when the move is
        a model-written why, the prompt :meth:`_followup` will send is built and handed to the port's
        ``speculate`` (which prefills it when it cannot start it now); otherwise (authored text, no listener,
        a port that does not speculate) the prompt so far is prefilled. True when a speculation runs.
        An optimisation: it raises no interview error.
        """
        try:
            read = self.read_ahead(partial, spoken=spoken)
            q = self.question
            if read is None or q is None:
                return False
            answer, heard = read
            start = getattr(self.ports.model, "speculate", None)
            if heard is not None and start is not None and heard[1].move in _MODEL_MOVES:
                messages = self.followup_messages(q, heard[1].level, answer=answer)
                return bool(start(self.session_id, messages, until=followup_read))
            self.cancel_speculation()  # whatever was generated ahead answers other text
            self.prefill(partial + " ")
        except InputError:
            self.cancel_speculation()  # nothing that could be sent: nothing to answer ahead
        except InterviewerError as e:  # an optimisation only (a bug still raises, for the tests to see)
            log.debug("speculation failed: %s", e)
        return False

    def cancel_speculation(self) -> None:
        """Drop the follow-up generated ahead (the candidate speaks again): the server stops generating it."""
        cancel = getattr(self.ports.model, "cancel_speculation", None)
        if cancel is not None:
            try:
                cancel(self.session_id)
            except Exception as e:
                log.debug("cancelling the speculation failed: %s", e)

    def _prefetch_next_followup(self, q: Question, level: int) -> None:
        """While the candidate answers, let the server cache the next follow-up's prompt (all but the answer)."""
        prefill = getattr(self.ports.model, "prefill", None)  # the session's prefill queue: latest wins
        prefetch = getattr(self.ports.model, "prefetch", None)
        if (prefill is None and prefetch is None) or level >= 2:
            return
        try:
            messages = self.followup_messages(q, level + 1, upcoming=True)
            if prefill is not None:
                prefill(self.session_id, messages)
            elif prefetch is not None:
                prefetch(messages)
        except Exception as e:  # an optimisation only: never let it disturb the interview
            log.debug("prefetch failed: %s", e)

    def _record_asked(self, q: Question, level: int, text: str, meta: dict[str, Any]) -> None:
        payload = {"qid": q.id, "level": level, "text": text, **meta}
        ev = self.ports.store.append(self.session_id, "asked", payload, ts=self.ports.clock())
        self.state.turns.append(Turn("interviewer", text, q.id, level, payload))
        self.state.level, self.state.awaiting, self.state.asked_at = level, "candidate", ev.ts
        self._prefetch_next_followup(q, level)

    # the candidate's turn --------------------------------------------------------------------------
    def validate_answer(self, text: str) -> str:
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

    def submit(self, text: str, mode: str = "typed", extra: dict[str, Any] | None = None) -> None:
        """Store the candidate's answer to the open question (and score the question after its last level)."""
        if self.state.awaiting != "candidate":
            raise InputError(
                "there is no open question to answer"
                if self.finished
                else "wait for the interviewer's question"
            )
        answer = self.validate_answer(text)
        q = self.question
        assert q is not None
        now = self.ports.clock()
        elapsed = now - self.state.asked_at if self.state.asked_at is not None else None
        payload: dict[str, Any] = {"qid": q.id, "level": self.state.level, "text": answer, "mode": mode}
        if elapsed is not None:
            payload["elapsed_s"] = round(elapsed, 2)
            if self.ports.answer_seconds is not None:
                payload["over_time"] = elapsed > self.ports.answer_seconds
        payload.update(extra or {})
        level = self.state.level
        # Read the answer before anything is asked (offline and cheap: no model call, no latency added).
        heard = self.listen(q, level, answer, spoken=mode == "spoken")
        if heard is None:
            self.ports.store.append(self.session_id, "answered", payload, ts=now)
            self.state.turns.append(Turn("candidate", answer, q.id, level, payload))
            store_answer(self.state.answers.setdefault(q.id, []), level, answer)
            self.state.awaiting = "interviewer"
            if level < 2:
                self.state.level = level + 1
            else:
                self.state.idx, self.state.level = self.state.idx + 1, 0  # scored in advance()
            return
        reading, plan = heard
        if plan.move == "clarify":
            # A question back: answered from the scenario facts; the turn stays open at the same level.
            self._append("clarified", {"qid": q.id, "question": answer, "reply": plan.text, "via": "answer"})
            self.state.turns.append(
                Turn("candidate", answer, q.id, level, {"clarify": True, "via": "answer"})
            )
            self._clarify_reply = plan.text
            self.state.awaiting = "interviewer"
            return
        payload["listen"] = reading.as_meta()
        payload["plan"] = plan.as_meta()
        self.ports.store.append(self.session_id, "answered", payload, ts=now)
        self.state.turns.append(Turn("candidate", answer, q.id, level, payload))
        store_answer(self.state.answers.setdefault(q.id, []), level, answer)
        self.state.awaiting = "interviewer"
        if plan.level <= listen.PUSH_LEVEL:
            self.state.level = plan.level
        else:
            self.state.idx += 1
            self.state.level = 0  # the question is scored in advance(), once the next one is on screen

    def listen(
        self, q: Question, level: int, answer: str, *, spoken: bool = False
    ) -> tuple[listen.Reading, listen.Plan] | None:
        """Read ``answer`` (given at ``level``) against the rubric and choose the interviewer's next move.

        None when the ports have no listener (the authored two whys follow whatever was said).
        """
        if self.ports.listener is None:
            return None
        turns = [t for t in self.state.turns if t.qid == q.id]
        asked = next(
            (t.text for t in reversed(turns) if t.role == "interviewer" and not t.meta.get("clarify")), ""
        )
        reading = self.ports.listener.read(q, level, answer, asked)
        done = listen.done_from([(t.role, t.level, t.meta) for t in turns])
        return reading, listen.choose(q, level, reading, done, answer, asked, spoken=spoken)

    def reply(self, text: str, mode: str = "typed") -> Iterator[str]:
        """Submit an answer and stream the interviewer's next message."""
        self.submit(text, mode)
        yield from self.advance()

    def skip(self) -> None:
        """Move past the open question without answering the rest of its why-chain."""
        q = self.question
        if q is None or self.finished:
            return
        self._append("skipped", {"qid": q.id, "level": self.state.level})
        self.state.idx += 1
        self.state.level, self.state.awaiting = 0, "interviewer"
        if self.state.answers.get(q.id):
            self._score(q)

    def end(self, reason: str = "ended-early") -> None:
        """End the interview now; answered questions are scored, the rest are left unscored."""
        if self.finished:
            return
        q = self.question
        if q is not None and self.state.answers.get(q.id) and q.id not in self.state.scores:
            self._score(q)
        self._append("ended", {"reason": reason})
        self.state.awaiting, self.state.end_reason = "done", reason
        self.ports.store.set_status(self.session_id, reason)

    def record_code_run(self, verdict: dict[str, Any]) -> None:
        """Store a sandbox verdict for the open coding question (the score of record for correctness)."""
        q = self.question
        if q is None:
            raise InputError("there is no open question to attach the test run to")
        self._append("code_run", {"qid": q.id, "verdict": verdict})
        self.state.code_runs.setdefault(q.id, []).append(verdict)

    def record_clarification(self, question: str, reply: str) -> None:
        q = self.question
        if q is None:
            raise InputError("there is no open question to clarify")
        question = clean(question)
        self._append("clarified", {"qid": q.id, "question": question, "reply": reply})
        self.state.turns.append(Turn("candidate", question, q.id, self.state.level, {"clarify": True}))
        self.state.turns.append(Turn("interviewer", reply, q.id, self.state.level, {"clarify": True}))

    # scoring ---------------------------------------------------------------------------------------
    def _score(self, q: Question) -> None:
        if self.ports.scorer is None or q.id in self.state.scores:
            return
        runs = self.state.code_runs.get(q.id)
        passed = bool(runs[-1].get("passed")) if runs else None
        try:
            score = self.ports.scorer.score(
                q,
                list(self.state.answers.get(q.id, [])),
                passed,
                hints=hinted_levels(self.state.turns, q.id),
            )
        except Exception as e:  # scoring can be redone from the log; the interview must go on
            self.notice = f"Scoring this answer failed ({type(e).__name__}); it will be scored in the report."
            return
        self._append("scored", {"qid": q.id, "score": score.model_dump(mode="json")})
        self.state.scores[q.id] = score
        self._judge(q)

    def _judge(self, q: Question) -> None:
        """Queue the truth judge for a scored question; its verdicts rescore it in one "judged" event."""
        judge, scorer, answers = self.ports.judge, self.ports.scorer, list(self.state.answers.get(q.id, []))
        if judge is None or scorer is None or q.id in self.state.judged or not answers:
            return
        runs = self.state.code_runs.get(q.id)
        passed = bool(runs[-1].get("passed")) if runs else None
        hints = hinted_levels(self.state.turns, q.id)

        def done(verdicts: Any) -> None:
            score = scorer.score(q, answers, passed, judged=verdicts, hints=hints)
            payload = {"verdicts": [v.model_dump(mode="json") for v in verdicts]}
            self._append("judged", {"qid": q.id, **payload, "score": score.model_dump(mode="json")})
            self.state.scores[q.id] = score
            self.state.judged.add(q.id)

        judge.submit(f"{self.session_id}/{q.id}", q.question, answers[0], list(q.key_points), done)

    def wait_for_judge(
        self, timeout: float | None = None, progress: Callable[[int, int], None] | None = None
    ) -> bool:
        """Before the report: wait for this session's pending judgements (True when none is left)."""
        if self.ports.judge is None:
            return True
        self._score_pending()
        unjudged = [qid for qid in self.state.scores if qid not in self.state.judged]
        for qid in unjudged:  # what a crash, a failure or a full queue left unjudged (dupes are ignored)
            self._judge(self.ports.bank.get(qid))
        keys = [f"{self.session_id}/{qid}" for qid in unjudged]
        return self.ports.judge.wait(keys, timeout=timeout, progress=progress)

    def _score_pending(self) -> None:
        """After a crash between an answer and its score (or its judgement), score (judge) now."""
        for qid in self.state.plan[: self.state.idx]:
            if qid not in self.state.scores and self.state.answers.get(qid):
                self._score(self.ports.bank.get(qid))
            elif qid in self.state.scores and qid not in self.state.judged:
                self._judge(self.ports.bank.get(qid))

    def _append(self, kind: str, payload: dict[str, Any]) -> None:
        self.ports.store.append(self.session_id, kind, payload, ts=self.ports.clock())
