"""Writing and vetting the interviewer's follow-ups.

The model only phrases the why-follow-ups, grounded in the rubric's why-chain; when its follow-up is empty,
not a question, off target, leaks the private rubric, or the server fails, the authored fallback is asked
instead, so a weak or absent model degrades the style of the interview, never the interview itself. The
listener's other moves (hint, challenge, redirect, push, ...) are authored text, vetted by the same leak guard.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from interviewer import listen, prompts
from interviewer.content import Question
from interviewer.engine.events import SessionLog, Turn, said
from interviewer.engine.ports import Ports
from interviewer.errors import InterviewerError
from interviewer.text import FOLLOW_UP_STOP_WORDS

# -- vetting a model's follow-up ------------------------------------------------------------------

_STOP = FOLLOW_UP_STOP_WORDS
_WORD = re.compile(r"[a-z0-9][a-z0-9+\-_.]*")


def _content_words(text: str) -> set[str]:
    words = {w.strip(".-_") for w in _WORD.findall(text.lower())}
    return {w[:6] for w in words if len(w) > 2 and w not in _STOP}  # 6-char prefix: a cheap stem


MAX_FOLLOWUP_CHARS = 320
MODEL_MOVES = ("why", "deepen")  # the moves whose question the model writes (the rest are authored text)


def followup_read(reply: str) -> bool:
    """Whether a model's reply so far holds all of it the engine reads: one question (or far too much)."""
    return "?" in reply or len(reply) > MAX_FOLLOWUP_CHARS * 2


_THIRD_PERSON = re.compile(r"\bthe candidate('s)?\b", re.I)  # talks about the candidate, not to them
ANSWER_MARK = "\x00ANSWER\x00"  # where the candidate's answer goes; never in real text
_PROMPT_TAGS = re.compile(
    r"<\s*/?\s*(candidate_answer|history|question|key_points|why_chain|reference_material)\s*>", re.I
)


def defang(text: str) -> str:
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


def authored(q: Question, level: int) -> str:
    """The authored question at ``level``: the main question, a why fallback, or the push step."""
    if level == 0:
        return q.question
    if level <= 2:
        return q.why(level).fallback
    return q.push[0].ask if q.push else q.why(2).fallback


# What each why level is for, in words that belong to no rubric: the model is told the intent, never the
# rubric's private wording (its key points and why-targets), which it would echo and the leak guard then discard.
INTENTS = {
    1: "which assumption their latest answer rests on, and why it holds",
    2: "what breaks, or what they would change, if that assumption did not hold",
}


def intent(q: Question, level: int) -> str:
    """The intent of the why follow-up at ``level``, with the authored question as an example when it shares
    no wording with the private rubric (a fallback may share a set-up with the why-target)."""
    fallback = q.why(level).fallback
    if listen.leak(fallback, q) is None:
        return f'{INTENTS[level]} (the kind of question meant: "{fallback}")'
    return INTENTS[level]


# -- writing one --------------------------------------------------------------------------------


@dataclass
class Asked:
    """A follow-up ready to be asked: its text and how it was written (stored with the "asked" event)."""

    text: str
    meta: dict[str, Any] = field(default_factory=dict)


class FollowupWriter:
    """Builds the follow-up prompts and writes (or falls back to) the interviewer's next question."""

    def __init__(self, ports: Ports, log: SessionLog, tell: Callable[[str], None]) -> None:
        self.ports = ports
        self.log = log
        self.tell = tell  # a fault the candidate should know about (the interview goes on)
        self._grounding = threading.Lock()  # prefill threads and the live turn may both build a prompt

    def leaks(self, text: str) -> bool:
        """Whether ``text`` shares wording with the open question's private rubric (the check run on a model's
        follow-up before keeping it): the voice asks it of each piece it would speak early."""
        qid = self.log.state.qid
        if qid is None:
            return False
        return listen.leak(text, self.ports.bank.get(qid), said(self.log.state, qid)) is not None

    def write(
        self, q: Question, level: int, plan: dict[str, Any] | None = None
    ) -> Generator[str, None, Asked]:
        """Yield the follow-up's text as it streams; return it as it will be asked."""
        plan = plan or {}
        ack = str(plan["ack"]) if plan.get("ack") else ""
        lead = f"{ack} " if ack else ""
        carried = {k: v for k, v in plan.items() if k not in ("next_level", "move_text", "ack")}
        pending = self.log.state.pending_code_followup.get(q.id)
        if str(plan.get("move", "why")) not in MODEL_MOVES:
            asked = self._authored_move(q, level, plan, carried)
        elif pending:  # the last test run's follow-up, vetted when the run was stored
            meta = {**carried, "source": "code_run", "code_followup": pending.get("kind", ""),
                    "code_source": pending.get("source", ""), "lines": pending.get("lines", [])}  # fmt: skip
            asked = Asked(str(pending["text"]), meta)
        else:
            asked = yield from self._model_why(q, level, lead, carried)
        return Asked(lead + asked.text, asked.meta)

    def _authored_move(self, q: Question, level: int, plan: dict[str, Any], carried: dict[str, Any]) -> Asked:
        """Hint, invitation to guess, expand, redirect, challenge, push: authored text, decided offline."""
        text = str(plan.get("move_text") or authored(q, level))
        meta: dict[str, Any] = {"source": "authored", **carried}
        leaked = listen.leak(text, q, said(self.log.state, q.id), authored=True)
        if leaked is not None:
            meta["fallback_reason"] = f"leaks the rubric's wording ({leaked})"
            meta["rejected"] = text[:MAX_FOLLOWUP_CHARS]
            text = authored(q, level)
        return Asked(text, meta)

    def _model_why(
        self, q: Question, level: int, lead: str, carried: dict[str, Any]
    ) -> Generator[str, None, Asked]:
        """The model's why-follow-up, streamed; the authored fallback when it is unusable or fails."""
        step = q.why(level)
        meta: dict[str, Any] = {"source": "fallback", "target": step.target, **carried}
        model = self.ports.model
        if model is None:
            meta["fallback_reason"] = "no model configured"
            return Asked(step.fallback, meta)
        messages = self.messages(q, level)
        started = time.perf_counter()
        buf = ""
        if lead:
            yield lead.strip()  # the acknowledgement is decided before the model starts
        try:
            for chunk in model.stream(messages, key=self.log.session_id):
                if not buf:
                    meta["first_token_s"] = round(time.perf_counter() - started, 3)
                buf += chunk
                yield lead + buf
                if followup_read(buf):
                    break  # one question is all we want; closing the stream stops generation
            meta["model"] = model.name
            meta["total_s"] = round(time.perf_counter() - started, 3)
            text = clean_followup(buf)
            problem = self._problem(q, level, text)
            if problem is None:
                return Asked(text, {**meta, "source": "model"})
            meta["fallback_reason"] = problem
            meta["rejected"] = text[:MAX_FOLLOWUP_CHARS]
        except InterviewerError as e:
            meta["fallback_reason"] = f"model error: {e}"
            self.tell(f"{e}. The interview goes on with the authored follow-up.")
        except Exception as e:  # a broken adapter must not end the interview either
            meta["fallback_reason"] = f"model error: {type(e).__name__}: {e}"
            self.tell("The model failed unexpectedly; the interview goes on with the authored follow-up.")
        return Asked(step.fallback, meta)

    def _problem(self, q: Question, level: int, text: str) -> str | None:
        """Why the model's follow-up cannot be asked (the leak guard included), or None."""
        state = self.log.state
        step = q.why(level)
        spoken = said(state, q.id)
        answer = spoken[-1] if spoken else ""
        asked = [t.text for t in state.turns if t.qid == q.id and t.role == "interviewer"]
        problem = followup_problem(
            text, f"{step.target} {' '.join(step.key_points)} {q.question}", answer, asked
        )
        if problem is not None:
            return problem
        leaked = listen.leak(text, q, spoken)
        if leaked is not None:
            return f"leaks the rubric's wording ({leaked})"
        if listen.quotes_too_much(text, " ".join(spoken)):
            return "quotes too much of the answer"
        return None

    # -- the prompt -------------------------------------------------------------------------------
    def reference(self, q: Question) -> str:
        """Retrieved knowledge for a question, fixed by the first prompt that needs it.

        The same text keeps the prompt prefix stable across the question's follow-ups. It is stored as a
        ``grounded`` event before any prompt carries it, so a resumed session, or another replica after a
        failover, sends the same prefix even when its own retrieval would answer differently (an index still
        building, a Chroma server that timed out).
        """
        with self._grounding:
            stored = self.log.state.references.get(q.id)
            if stored is not None:
                return stored
            reference = self._retrieve(q)
            self.log.emit("grounded", {"qid": q.id, "reference": reference})
            # An ended session's log takes no more events: its prompts use what was just retrieved.
            return self.log.state.references.get(q.id, reference)

    def _retrieve(self, q: Question) -> str:
        if self.ports.retriever is None:
            return "(none)"
        try:
            # Knowledge only: the rubric itself is already in the prompt.
            passages = self.ports.retriever.retrieve(
                q.question, round=q.round.value, topic=q.topic, k=2, kind="knowledge"
            )
        except InterviewerError:
            return "(retrieval unavailable)"
        return "\n\n".join(f"[{p.source}]\n{p.text}" for p in passages) or "(none)"

    def messages(
        self, q: Question, level: int, *, upcoming: bool = False, answer: str | None = None
    ) -> list[BaseMessage]:
        """The prompt for a why-follow-up: a stable prefix per question (cache-friendly), then the answers.

        With ``upcoming``, the prompt of the follow-up that will come after the candidate's next answer, cut
        just before that answer: sent ahead so the server's prompt cache holds everything but the answer.
        With ``answer`` (as the answer reader validates it), the whole prompt that will follow that answer,
        the very one built once it is submitted: a follow-up generated ahead (speculation).
        """
        system = prompts.render(
            "system",
            round_style=prompts.round_style(q.round.value),
            question=q.question,
            why1_intent=intent(q, 1),
            why2_intent=intent(q, 2),
            reference=self.reference(q),
        )
        history, text = self._history(
            q, ahead=upcoming or answer is not None, answer=answer, upcoming=upcoming
        )
        human = prompts.render(
            "followup",
            answer=text,
            history="\n".join(history) or "(nothing yet)",
            level=str(level),
            intent=intent(q, level),
        )
        if upcoming:
            human = human[: human.index(ANSWER_MARK)]
        return [SystemMessage(content=system), HumanMessage(content=human)]

    def _history(
        self, q: Question, *, ahead: bool, answer: str | None, upcoming: bool
    ) -> tuple[list[str], str]:
        """The exchange so far on ``q`` (clarifications aside) and the answer the follow-up is about."""
        turns = [t for t in self.log.state.turns if t.qid == q.id and not t.meta.get("clarify")]

        def spoken(t: Turn) -> str:
            return defang(t.text) if t.role == "candidate" else t.text

        past = turns if ahead else turns[:-1]  # ahead: the answer is not among the turns yet
        lines = [f"{'Interviewer' if t.role == 'interviewer' else 'Candidate'}: {spoken(t)}" for t in past]
        if answer is not None and not upcoming:
            return lines, defang(answer)
        if turns and turns[-1].role == "candidate" and not ahead:
            return lines, spoken(turns[-1])
        return lines, ANSWER_MARK
