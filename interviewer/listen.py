"""Reading an answer before asking: classify it against the rubric, then choose the interviewer's move.

Every answer is read with cheap offline signals before the follow-up is generated, so listening adds no model
call and the follow-up prompt keeps its cacheable prefix:

- a question back to the interviewer ("do you mean prefill or decode?") is answered from the scenario facts
  (:mod:`interviewer.clarify`) and the turn stays open;
- "I don't know" gets one graded hint (the authored one; it is recorded on the turn and costs points), or an
  invitation to guess when the rubric has none;
- an answer too short to probe gets one request to expand; an off-topic answer is redirected once, and so is
  a first answer to a "tell me about a time" question (``episode`` in its rubric) that tells no episode: it is
  asked for one specific time (:mod:`interviewer.scoring.episode`);
- a classic wrong claim (the rubric's contradictions, read clause by clause by
  :mod:`interviewer.scoring.claims`, plus a looser word match on the claim itself and, given the scorer's
  ``wrong_claims``, the claim in other words of :mod:`interviewer.scoring.paraphrase`) is challenged by name,
  quoting a few of the candidate's words, with the rubric's authored ``challenge``;
- when the answer already covers the next why-target, that target is skipped (go one level deeper), and after
  both whys are answered well an authored push step escalates.

Nothing here talks to a model: :class:`Listener` reads, :func:`choose` decides, :func:`leak` and
:func:`quotes_too_much` police whatever text the model or the rubric is about to show.
"""

from __future__ import annotations

import re
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from interviewer.clarify import answer_clarification
from interviewer.content.models import Question
from interviewer.embeddings import Embedder

# The shared clause reader: the scorer caps a criterion on the same reading the interviewer challenges.
from interviewer.scoring.claims import ATTRIBUTION, NEGATION, clauses, contradictions_asserted, sentences
from interviewer.scoring.episode import tells_episode
from interviewer.text import LISTEN_STOP_WORDS, plain_words, stems

Kind = Literal[
    "asks_back", "idk", "too_short", "off_topic", "no_episode", "contradicts", "covered", "partial", "answer"
]
Move = Literal[
    "clarify", "hint", "encourage", "expand", "redirect", "challenge", "deepen", "push", "why", "next"
]

_RECENT_READINGS = 64  # answers read lately (a few per candidate: the partial transcripts, then the answer)
PUSH_LEVEL = 3  # the level of an escalation (push) step, after why 1 and why 2
STAYS: frozenset[str] = frozenset({"clarify", "hint", "encourage", "expand", "redirect", "challenge"})

# -- words ----------------------------------------------------------------------------------------

_STOP = LISTEN_STOP_WORDS


def _words(text: str) -> list[str]:
    return text.split()


# -- reading signals ------------------------------------------------------------------------------

_IDK = re.compile(
    r"\b(?:i\s+(?:really\s+|honestly\s+|just\s+|simply\s+)?(?:do\s*not|don'?t|dont)\s+(?:really\s+)?know|no\s+idea|not\s+sure|no\s+clue|"
    r"(?:can'?t|cannot|don'?t)\s+remember|i\s+give\s+up|not\s+familiar|never\s+(?:heard|seen|used)|"
    r"i'?m\s+stuck|i\s+have\s+no\s+(?:idea|clue)|idk|pass)\b",
    re.IGNORECASE,
)
_ASK_BACK = re.compile(
    r"\b(?:do|did)\s+you\s+mean\b|\bwhat\s+do\s+you\s+mean\b|\b(?:can|could|should|may)\s+(?:i|we)\s+assume\b|"
    r"\bare\s+we\s+(?:talking|assuming|optimi[sz]ing)\b|\bcould\s+you\s+(?:clarify|repeat|rephrase)\b|"
    r"\bwhich\s+(?:one|case)\s+do\s+you\b|\bis\s+(?:it|that|this)\s+\w+\s+or\s+\w+\s*\?",
    re.IGNORECASE,
)
# Non-committal replies with nothing to probe, whatever the topic ("It depends.", "Yes, probably.").
_NONCOMMITTAL = re.compile(
    r"^\W*(?:(?:it|that)\s+depends|yes|yeah|yep|no|nope|maybe|probably|possibly|perhaps|sure|ok(?:ay)?|"
    r"right|correct|true|false|not really|kind of|sort of|i guess|i think so|i suppose|depends|fine)"
    r"(?:[\s,;.!]+(?:yes|no|maybe|probably|possibly|perhaps|sure|really|so|i guess|i think|it depends|"
    r"on the case|on the situation|on the context))*\W*$",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"\d")

COVERED_KP = 0.6  # a key point counts as covered when this share of its own content words is in the answer
WELL = 0.5  # a why-target counts as covered when at least half its key points are
MAX_QUOTE_WORDS = 8  # "a few" of the candidate's words
MIN_WORDS = 4  # fewer words (and no number, no key point) is too short to probe
OFF_TOPIC_SHARE = 0.25  # at most this share of the answer's topical words on the rubric's vocabulary
OFF_TOPIC_COSINE = 0.2
GENERIC_SHARE = 0.1  # a word in this share of the bank's rubrics carries no topic  # with an embedder: below this similarity to the question and its key points


CoverageFn = Callable[[str, Sequence[str], str], list[float]]
TopicFn = Callable[[Question, str], "str | None"]  # why an answer is off-topic, or None
ClaimsFn = Callable[[Question, str], Sequence[Any]]  # the classic wrong claims an answer asserts (hits)


def lexical_coverage(answer: str, key_points: Sequence[str], question: str) -> list[float]:
    """Per key point, the share of its content words (beyond what the question already says) in the answer."""
    said = stems(answer)
    asked = stems(question)
    out: list[float] = []
    for kp in key_points:
        own = stems(kp)
        new = own - asked or own
        out.append(len(new & said) / len(new) if new else 0.0)
    return out


@dataclass(frozen=True)
class Reading:
    """What an answer does, read offline: its kind, how much of each why-target it covers, and a quote."""

    kind: Kind
    covers: dict[int, float] = field(default_factory=dict)  # why level -> share of its key points covered
    hit: Any = None  # a ContradictionHit when the answer asserts a classic wrong claim
    quote: str = ""  # a few of the candidate's own words
    relevance: float = 1.0
    reason: str = ""
    main: float = 0.0  # share of the question's own key points covered
    extra: dict[str, Any] = field(default_factory=dict)  # what the reading probes found, when they ran

    def as_meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            **self.extra,
            "kind": self.kind,
            "covers": {str(k): round(v, 2) for k, v in self.covers.items()},
            "relevance": round(self.relevance, 3),
            "main": round(self.main, 2),
        }
        if self.hit is not None:
            meta["contradiction"] = self.hit.name
        if self.quote:
            meta["quote"] = self.quote
        if self.reason:
            meta["reason"] = self.reason
        return meta


def _quote(sentence: str, phrase: str | None = None, about: str = "") -> str:
    """At most :data:`MAX_QUOTE_WORDS` of the candidate's words: where ``phrase`` starts, else the window
    that says most of ``about`` (the claim), else the sentence's start."""
    words = _words(sentence.strip().rstrip(".!?;:,"))
    if len(words) <= MAX_QUOTE_WORDS:
        return " ".join(words)
    start = -1
    if phrase:
        first = plain_words(phrase)
        low = [" ".join(plain_words(w)) for w in words]
        for i, w in enumerate(low):
            if first and (w == first[0] or w.startswith(first[0] + " ")):
                start = max(0, min(i - 1, len(words) - MAX_QUOTE_WORDS))
                break
    if start < 0 and about:
        want = stems(about)
        hits = [bool(stems(w) & want) for w in words]
        best = max(range(len(words) - MAX_QUOTE_WORDS + 1), key=lambda i: sum(hits[i : i + MAX_QUOTE_WORDS]))
        start = best
        while start < len(words) - 1 and not hits[start] and sum(hits[start + 1 :]) >= sum(hits[start:]):
            start += 1  # begin at the claim's first word, not at a lead-in ("To be clear, ...")
    return " ".join(words[max(0, start) : max(0, start) + MAX_QUOTE_WORDS]).strip(",;:")


@dataclass
class _ClaimHit:
    """A claim matched by the looser word-overlap reading (same fields the engine uses from ContradictionHit)."""

    name: str
    claim: str
    criterion: str | None
    sentence: str
    challenge: str


def _right_statements(question: Question) -> list[set[str]]:
    """The stems of what the rubric holds true, clause by clause: its key points, the why-levels' and push steps'
    key points, and the model answer."""
    right = [
        *question.key_points,
        *(kp for step in question.why_chain for kp in step.key_points),
        *(kp for step in question.push for kp in step.key_points),
        question.model_answer or "",
    ]
    return [s for s in (stems(c.text) for t in right for c in clauses(t)) if len(s) >= 3]


def _loose_claims(answer: str, question: Question, found: set[str]) -> list[_ClaimHit]:
    """Claims asserted in other words: most of the claim's content words in one plain, unnegated sentence.

    A clause that reads at least as much like one of the rubric's right statements as like the claim is not
    taken for the claim: "a block can hold at most 1024 threads" shares most words with the wrong claim "a block
    can hold more than 1024 threads", and all of them with the key point it states.
    """
    out: list[_ClaimHit] = []
    asked = stems(question.question)
    right = _right_statements(question)
    for c in question.contradictions:
        if c.name in found:
            continue
        claim = stems(c.claim)
        own = claim - asked  # the claim's words beyond the question's: the part that makes it a claim
        if len(claim) < 3 or not own:
            continue
        polarity = len(NEGATION.findall(c.claim)) % 2  # "no synchronisation is needed" carries its own "no"
        for clause in clauses(answer):  # per clause: "X; BatchNorm instead reduces over the batch" is two
            if clause.question or len(NEGATION.findall(clause.text)) % 2 != polarity:
                continue
            if ATTRIBUTION.search(clause.sentence):  # "people think X": someone else's view, not a claim
                continue
            said = stems(clause.text)
            need = 1.0 if len(own) <= 3 else 0.75
            like_claim = len(claim & said) / len(claim)
            if like_claim >= 0.75 and len(own & said) / len(own) >= need:
                if any(len(r & said) / len(r) >= like_claim for r in right):
                    continue  # as close to something the rubric holds true
                out.append(_ClaimHit(c.name, c.claim, c.criterion, clause.sentence, c.challenge))
                break
    return out


class Listener:
    """Reads answers against a question's rubric. Offline and cheap; an embedder only sharpens off-topic."""

    def __init__(
        self,
        embedder: Embedder | None = None,
        coverage: CoverageFn | None = None,
        neighbours: Sequence[Question] = (),
        topic: TopicFn | None = None,
        claims: ClaimsFn | None = None,
    ) -> None:
        self.embedder = embedder
        self.coverage = coverage or lexical_coverage
        # The scorer's own off-topic rule (RubricScorer.off_topic): what the report will call off-topic is
        # what the interviewer redirects. Without it, a lexical share of the rubric's vocabulary decides.
        self.topic = topic
        # The scorer's wrong-claim reading (RubricScorer.wrong_claims), which also finds a claim in other words:
        # what the report caps is what the interviewer challenges. Without it, the clause and word readers here.
        self.claims = claims
        self._vocab: dict[str, set[str]] = {}
        # The bank's questions: words in many rubrics ("time", "three", "spent") say nothing about topic.
        self._neighbours = list(neighbours)
        self._generic: set[str] | None = None
        # The last readings (or the events of readings in progress): a spoken answer is read ahead, as its
        # transcript grows, so the one sent at the end of the turn is usually read already.
        self._recent: OrderedDict[tuple[str, int, str, str], Reading | threading.Event] = OrderedDict()
        self._recent_lock = threading.Lock()

    def _generic_words(self) -> set[str]:
        if self._generic is None:
            df: dict[str, int] = {}
            for q in self._neighbours:
                for w in self._rubric_vocab(q):
                    df[w] = df.get(w, 0) + 1
            cut = max(3, GENERIC_SHARE * len(self._neighbours))
            self._generic = {w for w, n in df.items() if n >= cut}
        return self._generic

    def _rubric_vocab(self, q: Question) -> set[str]:
        if q.id not in self._vocab:
            parts = [q.question, *q.variants, *q.key_points, q.model_answer, *q.common_mistakes, q.topic]
            for s in q.why_chain:
                parts += [s.target, s.fallback, *s.key_points, s.hint or ""]
            for p in q.push:
                parts += [p.ask, *p.key_points]
            for c in q.contradictions:
                parts += [c.claim, *c.any_of]
            if q.scenario:
                parts += [f"{k} {v}" for k, v in q.scenario.facts.items()] + list(q.scenario.candidate_call)
            self._vocab[q.id] = stems(" ".join(parts).replace("-", " ")) | stems(" ".join(parts))
        return self._vocab[q.id]

    def relevance(self, q: Question, answer: str, asked: str = "") -> float:
        """Share of the answer's content words that belong to the question's rubric (or the last question)."""
        said = (stems(answer.replace("-", " ")) | stems(answer)) - self._generic_words()
        if not said:
            return 0.0
        vocab = self._rubric_vocab(q) | stems(asked)
        lexical = len(said & vocab) / len(said)
        if self.embedder is None:
            return lexical
        vecs = self.embedder.embed([answer, f"{q.question}\n" + "\n".join(q.key_points)])
        cosine = float(np.dot(vecs[0], vecs[1]))
        # Either signal saying "on topic" is enough: redirecting a relevant answer is the worse mistake.
        return max(lexical, cosine / OFF_TOPIC_COSINE * OFF_TOPIC_SHARE)

    def read(self, q: Question, level: int, answer: str, asked: str = "") -> Reading:
        """Classify ``answer``, given at ``level`` (0 main, 1-2 whys, 3 push), to the interviewer's ``asked``.

        The same reading again (or one being made on another thread) is not made twice.
        """
        key = (q.id, level, answer, asked)
        while True:
            with self._recent_lock:
                got = self._recent.get(key)
                if got is None:
                    mine = self._recent[key] = threading.Event()
                    break
            if isinstance(got, Reading):
                return got
            got.wait(60)  # another thread reads this very answer: wait for it, then look again
        reading: Reading | None = None
        try:
            reading = self._read(q, level, answer, asked)
            return reading
        finally:
            with self._recent_lock:
                if reading is None:
                    self._recent.pop(key, None)  # it failed: the next caller reads for itself
                else:
                    self._recent[key] = reading
                    self._recent.move_to_end(key)
                    while len(self._recent) > _RECENT_READINGS:
                        self._recent.popitem(last=False)
            mine.set()

    def _read(self, q: Question, level: int, answer: str, asked: str) -> Reading:
        text = answer.strip()
        words = _words(text)
        sents = sentences(text)
        covers: dict[int, float] = {}
        for step in q.why_chain:
            fractions = self.coverage(text, step.key_points, q.question)
            covers[step.level] = sum(f >= COVERED_KP for f in fractions) / len(fractions)
        question_sents = [s for s in sents if s.endswith("?")]
        statement_words = sum(len(_words(s)) for s in sents if not s.endswith("?"))
        if question_sents and (statement_words < 6 or (_ASK_BACK.search(text) and len(words) <= 40)):
            return Reading("asks_back", covers, quote=_quote(question_sents[0]), reason="a question back")
        idk = _IDK.search(text)
        if idk is not None and len(stems(_IDK.sub(" ", text))) < 5:
            return Reading("idk", covers, quote=_quote(text), reason=f"says '{idk.group(0)}'")
        main_cover = self.coverage(text, q.key_points, q.question)
        touches = any(f >= 0.5 for f in main_cover) or any(v > 0 for v in covers.values())
        on_rubric = bool(stems(text) & (self._rubric_vocab(q) | stems(asked)))
        vague = bool(_NONCOMMITTAL.match(text))
        if vague or (len(words) < MIN_WORDS and not _DIGIT.search(text) and not touches and not on_rubric):
            # "It depends.", "Yes.": nothing to probe yet. A terse but topical "bandwidth saturates" is probed.
            return Reading("too_short", covers, quote=_quote(text), reason=f"{len(words)} word(s)")
        relevance = self.relevance(q, text, asked)
        # A rubric wrong claim first: an answer asserting one is about this question, and gets challenged.
        hits: list[Any] = list(contradictions_asserted(text, q))
        hits += _loose_claims(text, q, {h.name for h in hits})
        if self.claims is not None:
            hits += [h for h in self.claims(q, text) if h.name not in {g.name for g in hits}]
        if hits:
            hit = hits[0]
            phrase = next((p for c in q.contradictions if c.name == hit.name for p in c.any_of), None)
            return Reading(
                "contradicts",
                covers,
                hit=hit,
                quote=_quote(hit.sentence, phrase, hit.claim),
                relevance=relevance,
                reason=f"asserts '{hit.claim}'",
            )
        if level == 0 and q.episode and not tells_episode(text):
            # A principle or a habit where one real time was asked for: whatever its words, ask for the time.
            return Reading(
                "no_episode",
                covers,
                quote=_quote(sents[0] if sents else text),
                relevance=relevance,
                reason="tells no specific episode",
            )
        if len(stems(text) - self._generic_words()) >= 4 and not touches:
            if self.topic is not None:
                why = self.topic(q, text)
            elif relevance < OFF_TOPIC_SHARE:
                why = f"{relevance:.2f} of its content words are about this question"
            else:
                why = None
            if why is not None:
                return Reading(
                    "off_topic",
                    covers,
                    quote=_quote(sents[0] if sents else text),
                    relevance=relevance,
                    reason=why,
                )
        nxt = level + 1
        main = sum(f >= COVERED_KP for f in main_cover) / len(main_cover)
        if nxt in covers and covers[nxt] >= WELL:
            return Reading(
                "covered", covers, relevance=relevance, reason=f"covers why {nxt} already", main=main
            )
        if touches:
            return Reading("partial", covers, relevance=relevance, main=main)
        return Reading("answer", covers, relevance=relevance, main=main)


# -- what the reading probes found ---------------------------------------------------------------

SAME_CLAIM = 0.75  # share of a finding's claim words in one of the rubric's wrong claims: the same claim
_ASK_WORDS = stems("what which how does the candidate say says give gives compute computes name names")
CHALLENGE_ASK = "How sure are you of that? Walk me through how you would check it."  # reveals nothing


@dataclass(frozen=True)
class PointRead:
    """One key point as the reading probes found it in one answer (:mod:`interviewer.scoring.reader`)."""

    point: str  # main.<i>, why1.<i>, why2.<i>
    finding: str  # "stated", "contradicted" or "not stated"
    quote: str | None = None  # the candidate's sentence behind the finding
    read: Any = None  # what the contradicting probe read: the wrong claim, name or number
    ask: str = ""  # the contradicting probe's reading question
    mixed: bool = False  # another probe of the same point found it stated: no clear reading
    typed: bool = False  # the finding is a number or a name the candidate wrote (borne out by the text)


@dataclass(frozen=True)
class Findings:
    """What the reading probes found in the text ``text``: the key points of its own part (``main`` for the
    first answer, ``why<n>`` for a why answer) and of the next why level, read in the same text."""

    text: str
    points: dict[str, PointRead] = field(default_factory=dict)

    @classmethod
    def from_json(cls, text: str, parts: dict[str, Any]) -> Findings:
        """From ``Readings.to_json()`` per part (``{"main": ..., "why1@main": ...}``; the key's text before "@"
        names the part, so the point names stay apart).

        Every finding given counts: the probe kinds the reading model is not trusted on are never read
        (:meth:`interviewer.engine.probing.ProbeAhead.offer`), so they are not among them.
        """
        points: dict[str, PointRead] = {}
        for readings in parts.values():
            probes = [p for p in readings.get("probes", []) if isinstance(p, dict)]
            for point, got in dict(readings.get("points") or {}).items():
                own = [p for p in probes if p.get("point") == point]
                hit = next((p for p in own if p.get("finding") == got.get("finding")), {})
                points[point] = PointRead(
                    point,
                    str(got.get("finding") or "not stated"),
                    got.get("quote"),
                    hit.get("read"),
                    str(hit.get("ask") or ""),
                    mixed=got.get("finding") == "contradicted"
                    and any(p.get("finding") == "stated" for p in own),
                    typed=bool(hit) and hit.get("kind") in ("number", "named"),
                )
        return cls(text, points)

    def share(self, part: str, n_points: int) -> float | None:
        """The share of ``part``'s ``n_points`` key points found stated; None when no probe read that part, or
        one found a point contradicted (a wrong why-target is not a covered one)."""
        mine = [r for r in self.points.values() if r.point.split(".")[0] == part]
        if not mine or n_points <= 0 or any(r.finding == "contradicted" for r in mine):
            return None
        return sum(r.finding == "stated" for r in mine) / n_points

    def stated(self, part: str) -> bool:
        return any(r.point.split(".")[0] == part and r.finding == "stated" for r in self.points.values())

    def written(self, part: str) -> bool:
        """A key point of ``part`` found stated through a number or a name the candidate wrote: the text
        itself bears it out (a claim picked among options can be a small model's guess about another topic)."""
        return any(
            r.point.split(".")[0] == part and r.finding == "stated" and r.typed for r in self.points.values()
        )


def _in_text(quote: str, text: str) -> bool:
    """Whether ``quote`` is the candidate's own words in ``text`` (case, spacing and punctuation aside)."""
    q, t = " ".join(plain_words(quote)), " ".join(plain_words(text))
    return bool(q) and f" {q} " in f" {t} "


def _probe(q: Question, point: str, ask: str) -> Any:
    return next((p for p in q.probes if p.point == point and (not ask or p.ask == ask)), None)


def _read_phrase(read: Any, sentence: str) -> str | None:
    """Where in ``sentence`` the candidate says what the probe read: a name as written, or the number."""
    if isinstance(read, int | float) and not isinstance(read, bool):
        for w in _words(sentence):
            digits = re.sub(r"[^0-9.]", "", w.replace(",", ""))
            try:
                if digits and abs(float(digits.rstrip(".")) - float(read)) <= 1e-6 * max(
                    1.0, abs(float(read))
                ):
                    return w
            except ValueError:
                continue
        return None
    return str(read) if read else None


def _wrong_claim(q: Question, r: PointRead) -> tuple[str, str | None, str, str] | None:
    """(name, criterion, claim, challenge) for a contradicted point: the rubric's contradiction that says what
    the probe read when there is one (its authored challenge), else a challenge that names no answer."""
    probe = _probe(q, r.point, r.ask)
    said = str(r.read) if r.read is not None else ""
    # The claim as the probe puts it: what it read, in the terms of its question ("batching does to throughput").
    want = stems(said) | (stems(probe.ask if probe is not None else r.ask) - _ASK_WORDS)
    best, best_share = None, 0.0
    for c in q.contradictions:
        have = stems(" ".join([c.claim, *c.any_of]))
        share = len(want & have) / len(want) if want else 0.0
        if share > best_share:
            best, best_share = c, share
    if best is not None and best_share >= SAME_CLAIM:
        return best.name, best.criterion, best.claim, best.challenge
    ask = probe.ask if probe is not None else r.ask
    return f"reading:{r.point}", None, f"{ask} {said}".strip(), CHALLENGE_ASK


def _contradicted(q: Question, level: int, findings: Findings, answer: str) -> tuple[_ClaimHit, str] | None:
    """The first key point of this answer's own part the probes find contradicted, with a quote of the
    candidate's wrong sentence (a few of its words), or None when no finding is safe to challenge: no quote, a
    quote that is not in the answer as sent, a point another probe finds stated, or a quoted sentence that reads
    more like what the rubric holds true than like the wrong claim."""
    part = "main" if level == 0 else f"why{level}"
    for r in sorted(findings.points.values(), key=lambda r: r.point):
        if r.point.split(".")[0] != part or r.finding != "contradicted" or r.mixed:
            continue
        if not r.quote or not _in_text(r.quote, answer):
            continue
        if ATTRIBUTION.search(r.quote) or r.quote.rstrip().endswith("?"):
            continue  # someone else's view, or a question: not the candidate's claim
        probe = _probe(q, r.point, r.ask)
        if probe is not None and probe.kind == "option" and probe.true:
            said = stems(r.quote)
            wrong, true = stems(str(r.read or "")), stems(probe.true)
            if true and wrong and len(true & said) / len(true) >= len(wrong & said) / len(wrong):
                continue
        got = _wrong_claim(q, r)
        if got is None:
            continue
        name, criterion, claim, challenge = got
        phrase = _read_phrase(r.read, r.quote)
        quote = _quote(r.quote, phrase, claim if phrase is None else "")
        return _ClaimHit(name, claim, criterion, r.quote, challenge), quote
    return None


def heed(q: Question, level: int, reading: Reading, findings: Findings | None, answer: str) -> Reading:
    """``reading`` with what the reading probes found in ``answer`` (None: ``reading`` unchanged).

    - a key point of the answer's own part found contradicted, with the candidate's wrong sentence in the
      answer, becomes a challenge quoting a few words of that sentence (when the offline reading has none);
    - a why-target the probes find stated counts as covered, so it is never asked again;
    - an answer read as off-topic but where the probes find one of the question's key points is on topic.
    """
    if findings is None or reading.kind in ("asks_back", "idk"):
        return reading
    covers = dict(reading.covers)
    for step in q.why_chain:
        share = findings.share(f"why{step.level}", len(step.key_points))
        if share is not None and step.level > level:
            covers[step.level] = max(covers.get(step.level, 0.0), share)
    part = "main" if level == 0 else f"why{level}"
    n_own = len(q.key_points) if level == 0 else (len(q.why(level).key_points) if level <= 2 else 0)
    own = findings.share(part, n_own) or 0.0
    meta = {"findings": {r.point: r.finding for r in findings.points.values() if r.finding != "not stated"}}
    kind, hit, quote, reason = reading.kind, reading.hit, reading.quote, reading.reason
    if hit is None and kind != "too_short":
        found = _contradicted(q, level, findings, answer)
        if found is not None:
            hit, quote = found
            kind, reason = "contradicts", f"the reading probes find '{hit.claim}'"
    if kind == "off_topic" and findings.written(part):
        kind, reason, quote = "partial", "the reading probes find a key point stated", ""
    nxt = level + 1
    if kind in ("partial", "answer") and covers.get(nxt, 0.0) >= WELL:
        kind, reason = "covered", f"covers why {nxt} already"
    main = max(reading.main, own) if level == 0 else reading.main
    return Reading(kind, covers, hit, quote, reading.relevance, reason, main, extra=meta)


# -- choosing the move ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Done:
    """What already happened on this question (read from the turns' meta, so a resumed session agrees)."""

    hinted: frozenset[int] = frozenset()  # levels where a hint (or an invitation to guess) was given
    hints_used: int = 0
    expanded: frozenset[int] = frozenset()
    redirected: bool = False
    challenged: frozenset[str] = frozenset()
    well: frozenset[int] = frozenset()  # why levels answered well (or covered before they were asked)


def done_from(turn_metas: Sequence[tuple[str, int, dict[str, Any]]]) -> Done:
    """Build :class:`Done` from ``(role, level, meta)`` of one question's turns."""
    hinted: set[int] = set()
    expanded: set[int] = set()
    challenged: set[str] = set()
    well: set[int] = set()
    hints = 0
    redirected = False
    for role, level, meta in turn_metas:
        move = meta.get("move")
        if role == "interviewer":
            if move in ("hint", "encourage"):
                hinted.add(level)
                hints += move == "hint"
            elif move == "expand":
                expanded.add(level)
            elif move == "redirect":
                redirected = True
            elif move == "challenge" and meta.get("contradiction"):
                challenged.add(str(meta["contradiction"]))
        else:
            listen = meta.get("listen") or {}
            for lvl, share in (listen.get("covers") or {}).items():
                if int(lvl) >= level and float(share) >= WELL and listen.get("kind") not in ("contradicts",):
                    well.add(int(lvl))
    return Done(
        frozenset(hinted), hints, frozenset(expanded), redirected, frozenset(challenged), frozenset(well)
    )


@dataclass(frozen=True)
class Plan:
    """The interviewer's next move: which level it asks at, and its authored text when it has one."""

    move: Move
    level: int  # the level of the next interviewer turn (PUSH_LEVEL + 1: the next question)
    text: str | None = (
        None  # authored text to show (hint, challenge, ...); None: a why-follow-up at ``level``
    )
    ack: str | None = None  # a one-clause acknowledgement before the question
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def stays(self) -> bool:
        return self.move in STAYS

    def as_meta(self) -> dict[str, Any]:
        out: dict[str, Any] = {"move": self.move, "next_level": self.level}
        if self.text is not None:
            out["move_text"] = self.text
        if self.ack:
            out["ack"] = self.ack
        out.update(self.meta)
        return out


# Only after an answer that got somewhere: "OK." before every follow-up is filler, not listening.
_ACKS = ("Right.", "OK, that makes sense.", "Fair enough.")
_DEEPEN_ACK = "That already answers what I was going to ask next."
_PUSH_LEAD = "You've reasoned that through; let's push it further."
_REDIRECT_LEAD = "Let's stay on the question I asked."
_EPISODE_ASK = (
    "Let's make it concrete: tell me about one specific time from your own work. What was the situation, "
    "what did you do, and how did it turn out?"
)
_EXPAND = "Could you say a bit more: what's your reasoning there?"
_ENCOURAGE = "That's fine. What would your best guess be, and why?"
# Spoken only, before a model-written why that has no acknowledgement: a human interviewer bridges into the
# next question out loud rather than leave seconds of silence while it forms (on a laptop the model needs
# 1.5-3 s to write one). Neutral on purpose: no praise for an answer that may be weak or wrong.
_BRIDGES = (
    "Let me dig into that a little.",
    "I want to follow up on that.",
    "Let's take that one step further.",
    "Let me ask about your reasoning there.",
)
# Fixed sentences the interviewer opens a reply with: the voice synthesizes them once, ahead of time.
SPOKEN_LEADS: tuple[str, ...] = (
    *_ACKS,
    _DEEPEN_ACK,
    _PUSH_LEAD,
    _REDIRECT_LEAD,
    _EPISODE_ASK,
    _EXPAND,
    _ENCOURAGE,
    *_BRIDGES,
)


def acknowledgement(reading: Reading, answer: str, level: int) -> str | None:
    """A one-clause acknowledgement a human would give: after an answer that covers at least half of what
    was asked (the question's key points, or this why's). None otherwise, and never for a wrong claim."""
    if reading.kind not in ("covered", "partial"):
        return None
    share = reading.main if level == 0 else reading.covers.get(level, 0.0)
    if share < WELL:
        return None
    return _ACKS[zlib.crc32(answer.encode("utf-8")) % len(_ACKS)]


def _after(q: Question, level: int, reading: Reading, done: Done) -> tuple[Move, int]:
    """The next level once this answer moves the question on: skip covered why-targets, push when earned."""
    nxt = level + 1
    skipped = False
    while nxt <= 2 and (reading.covers.get(nxt, 0.0) >= WELL or nxt in done.well):
        nxt += 1
        skipped = True
    if nxt <= 2:
        return ("deepen" if skipped else "why"), nxt
    if level < PUSH_LEVEL and q.push:
        well = set(done.well) | {lvl for lvl, share in reading.covers.items() if share >= WELL}
        if (
            reading.kind not in ("idk", "off_topic", "no_episode", "too_short", "contradicts")
            and {1, 2} <= well
        ):
            return "push", PUSH_LEVEL
    return "next", PUSH_LEVEL + 1


def bridge(answer: str) -> str:
    """The spoken lead into a model-written why after an answer that earned no acknowledgement."""
    return _BRIDGES[zlib.crc32(answer.encode("utf-8")) % len(_BRIDGES)]


def choose(
    q: Question,
    level: int,
    reading: Reading,
    done: Done,
    answer: str,
    asked: str = "",
    *,
    spoken: bool = False,
) -> Plan:
    """The move after an answer at ``level``, from its :class:`Reading` and what was already done.

    With ``spoken`` (the answer was spoken), a model-written why always opens with a fixed lead (an
    acknowledgement, or else a neutral :func:`bridge`), which the voice has ready before the model starts.
    """
    last = asked if level > 0 and asked else q.question  # the opening carries a header; re-ask plainly
    if reading.kind == "asks_back":
        return Plan("clarify", level, answer_clarification(q, answer[:1000]))
    if reading.kind == "idk" and level not in done.hinted:
        hint = q.hint if level == 0 else (q.why(level).hint if level <= 2 else None)
        if hint:
            n = done.hints_used + 1
            text = f"That's fine; here's a hint: {hint.strip()} Where does that take you?"
            return Plan("hint", level, text, meta={"hint_level": level, "hints_used": n})
        return Plan("encourage", level, _ENCOURAGE)
    if reading.kind == "too_short" and level not in done.expanded:
        return Plan("expand", level, _EXPAND)
    if reading.kind == "off_topic" and not done.redirected:
        return Plan("redirect", level, f"{_REDIRECT_LEAD} {last}")
    if reading.kind == "no_episode" and not done.redirected:
        return Plan("redirect", level, _EPISODE_ASK)
    if reading.kind == "contradicts" and reading.hit is not None and reading.hit.name not in done.challenged:
        text = f"You said \u201c{reading.quote}\u201d. {reading.hit.challenge.strip()}"
        return Plan("challenge", level, text, meta={"contradiction": reading.hit.name})
    move, nxt = _after(q, level, reading, done)
    ack = acknowledgement(reading, answer, level)
    if move == "deepen":
        ack = _DEEPEN_ACK
    if move == "push":
        push = q.push[0]
        lead = _PUSH_LEAD if reading.kind != "answer" else None
        return Plan("push", nxt, push.ask, ack=lead, meta={"push": 0, "push_kind": push.kind})
    if move == "why" and ack is None and spoken:
        ack = bridge(answer)
    return Plan(move, nxt, None, ack=ack if move != "next" else None)


# -- what may be shown ----------------------------------------------------------------------------

LEAK_N = 5


def _ngrams(text: str, n: int = LEAK_N) -> set[tuple[str, ...]]:
    tokens = plain_words(text)
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def rubric_texts(q: Question) -> list[str]:
    """The rubric's private wording: key points, model answer, why-targets, push key points, wrong claims."""
    out = [*q.key_points, q.model_answer, *q.common_mistakes]
    for s in q.why_chain:
        out += [s.target, *s.key_points]
    for p in q.push:
        out += list(p.key_points)
    out += [c.claim for c in q.contradictions]
    return out


def shown_texts(q: Question) -> list[str]:
    """Everything the rubric's author wrote to be shown: the question, variants, fallbacks, hints, challenges."""
    out = [q.question, *q.variants, q.hint or ""]
    for s in q.why_chain:
        out += [s.fallback, s.hint or ""]
    out += [c.challenge for c in q.contradictions] + [p.ask for p in q.push]
    if q.scenario is not None:
        out += [f"{k}: {v}" for k, v in q.scenario.facts.items()] + list(q.scenario.candidate_call)
    return [t for t in out if t]


def leak(text: str, q: Question, said: Sequence[str] = (), *, authored: bool = False) -> str | None:
    """The first 5-word run ``text`` shares with the rubric's private wording, or None.

    Runs the question (and its variants) or the candidate's own words contain are not leaks. With
    ``authored`` (a fallback, hint, challenge or push ask shown as written), neither are runs the other authored
    shown texts contain: a set-up such as "a block of 1024 threads" may be in both. A model's text gets no such
    allowance: echoing the why-target is a leak even where a fallback shares its words.
    """
    grams = _ngrams(text)
    if not grams:
        return None
    allowed: set[tuple[str, ...]] = set()
    for t in (*(shown_texts(q) if authored else (q.question, *q.variants)), *said):
        allowed |= _ngrams(t)
    grams -= allowed
    if not authored:
        # A target of mostly small words ("what breaks when it is full") has few telling runs: an echo of most
        # of its words, with a 4-word run of it, is still the internal wording.
        for target in (s.target for s in q.why_chain):
            want = stems(target)
            if len(want) >= 2 and len(want & stems(text)) >= 0.8 * len(want):
                run = (_ngrams(text, 4) & _ngrams(target, 4)) - set().union(*(_ngrams(t, 4) for t in said))
                if run:
                    return " ".join(sorted(run)[0])
    grams = {g for g in grams if _telling(g)}
    for src in rubric_texts(q):
        common = grams & _ngrams(src)
        if common:
            return " ".join(sorted(common)[0])
    return None


def _telling(gram: tuple[str, ...]) -> bool:
    """A run says something only with 3+ content words ("what happens to the speedup" is just a question)."""
    return sum(1 for w in gram if w not in _STOP and w not in _QUESTION_WORDS) >= 3


_QUESTION_WORDS = frozenset("happens happen change changes go goes look looks".split())


def quotes_too_much(text: str, answer: str, limit: int = MAX_QUOTE_WORDS) -> bool:
    """Whether ``text`` copies more than ``limit`` consecutive words of the candidate's answer."""
    return bool(_ngrams(text, limit + 1) & _ngrams(answer, limit + 1))
