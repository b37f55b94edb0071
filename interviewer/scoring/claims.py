"""Reading what an answer asserts, one clause at a time: negation, contrast, attribution and questions.

Vocabulary is not truth: "there is no object slicing here" contains "object slicing", and "the model is 2x
faster, not the service" contains "the service ... 2x faster" in the wrong order. The scorer's fact checks,
numeric checks and contradiction checks all ask this module whether a phrase (or a number) is *asserted*:

- the text is cut into sentences, and sentences into clauses at contrast markers ("X, not Y", "but",
  "whereas", "rather than", "instead of", ";");
- a clause is *denied* when a negation cue ("not", "no", "never", "n't", "without", "neither", "nor", "false",
  "myth", "wrong") comes before the phrase in the same clause; "not Y" after a contrast comma denies Y; a
  second predicate with its own negation ("isn't an approximation and doesn't cut FLOPs") starts a new scope,
  so its cue denies it instead of cancelling the first;
- a clause is *attributed* when the candidate reports someone else's view ("people think", "a common mistake
  is", "a common belief is", "you'd think", "some say", "it's a myth that", "contrary to") rather than making
  the claim;
- a sentence that ends with "?" asks, it does not assert.

A phrase that carries its own negation ("not 2x", "isn't atomic") is matched as written: its polarity is part
of what the rubric asks for, so only a second, outer negation ("it's not true that it isn't atomic") flips it.
Pure functions, no model: cheap enough to run on every answer while the interviewer decides its next move.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from interviewer.content.models import Contradiction, Question

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# Clause boundaries: a contrast marker starts a new clause (kept with it so "not Y" stays visible).
_CONTRAST = re.compile(
    r"\s*(?:;|,\s*(?=not\b|but\b|whereas\b|while\b|although\b|though\b|rather than\b|instead of\b|"
    r"as opposed to\b|unlike\b)|\s(?=but\b|whereas\b|rather than\b|instead of\b|as opposed to\b))\s*",
    re.IGNORECASE,
)
NEGATION = re.compile(
    r"\b(?:not|no|never|none|nothing|neither|nor|without|cannot|false|untrue|myth|wrong|incorrect|"
    r"isn't|aren't|wasn't|weren't|doesn't|don't|didn't|won't|wouldn't|can't|couldn't|shouldn't|hasn't|"
    r"haven't|hardly|rather than|instead of|as opposed to|unlike)\b|n't\b",
    re.IGNORECASE,
)
ATTRIBUTION = re.compile(
    r"\b(?:people|folks|many|some|others|juniors?|beginners?|newcomers?|someone|they)\s+"
    r"(?:\w+\s+)?(?:(?:often|usually|sometimes|still|wrongly|mistakenly|naively)\s+)?"
    r"(?:think|thinks|believe|believes|assume|assumes|say|says|claim|claims|expect|expects)\b|"
    r"\b(?:common|classic|typical|usual)\s+(?:mistake|misconception|trap|error|pitfall|myth)\b|"
    r"\bit(?:'s| is) a myth\b|\bcontrary to\b|\bthe naive (?:answer|view|reading)\b|"
    r"\b(?:common|popular|widespread|naive)\s+(?:belief|assumption|intuition)\b|"
    r"\bmisconception\b|\b(?:you|one|we)(?:['’]d| might| may| could| would) (?:think|assume|say|expect)\b|"
    r"\bit (?:looks|seems) like\b|\bit(?:'s| is) tempting to (?:say|think|assume)\b",
    re.IGNORECASE,
)
# A second predicate with its own negation ("isn't an approximation and doesn't cut FLOPs"): the first
# negation does not reach past it, so the two cues deny one predicate each and do not cancel out.
NEGATED_PREDICATE = (
    r"(?:and|or)\s+(?:(?:does|do|did|is|are|was|were|will|can|would|should)\s+not|never|"
    r"(?:does|do|did|is|are|was|were|wo|ca|would|should)n['’]t)\b"
)
_NEW_SCOPE = re.compile(r"\b(?=" + NEGATED_PREDICATE + ")", re.IGNORECASE)
_TURN = re.compile(r"(?:but|whereas|while|although|though|however|not|rather|instead)\b", re.IGNORECASE)
_WORDS = re.compile(r"[a-z0-9]+(?:'[a-z]+)?(?:[+#]+)?|[%×]")
_ARTICLES = {"a", "an", "the"}


@dataclass(frozen=True)
class Clause:
    """One clause of one sentence, with what the sentence does (asks or asserts)."""

    text: str
    sentence: str
    question: bool


@dataclass(frozen=True)
class Assertion:
    """A phrase found asserted: the candidate's sentence and the clause it sits in."""

    phrase: str
    sentence: str
    clause: str


@dataclass(frozen=True)
class ContradictionHit:
    """An answer asserting one of the rubric's classic wrong claims."""

    name: str
    claim: str
    criterion: str | None
    sentence: str  # the candidate's own sentence that asserts it
    challenge: str


def sentences(text: str) -> list[str]:
    """Sentences (or lines) of ``text``, stripped, in order."""
    return [s.strip() for s in _SENTENCE.split(text or "") if s and s.strip()]


def clauses(text: str) -> list[Clause]:
    """Every clause of every sentence, in order."""
    out: list[Clause] = []
    for s in sentences(text):
        asks = s.rstrip().endswith("?")
        for part in _CONTRAST.split(s):
            if part and part.strip():
                out.append(Clause(part.strip(), s, asks))
    return out


def _norm(text: str) -> str:
    """Lower-case words, hyphens as spaces, articles dropped ("a COPY and a DELETE" = "copy and delete")."""
    tokens = _WORDS.findall(text.lower().replace("’", "'").replace("-", " "))
    return " ".join(t for t in tokens if t not in _ARTICLES)


def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    tokens = [re.escape(t) for t in _norm(phrase).split()]
    return re.compile(r"(?<![a-z0-9])" + r"\s+".join(tokens) + r"(?![a-z0-9])")


def _negations(text: str) -> int:
    return len(NEGATION.findall(text))


_SCOPE_WORDS = 6  # a negation cue reaches this many words ahead ("it is not the case that X")


def negated_before(prefix: str, scope: int = _SCOPE_WORDS) -> bool:
    """Whether the ``scope`` words just before something (same clause) deny it: an odd number of cues since
    the last negated predicate of its own began ("... and doesn't")."""
    window = " ".join(_norm(prefix).split()[-scope:])
    starts = [m.start() for m in _NEW_SCOPE.finditer(window)]
    window = window[starts[-1] :] if starts else window
    return _negations(window) % 2 == 1


def find_assertion(text: str, phrase: str) -> Assertion | None:
    """The first clause of ``text`` that asserts ``phrase``: present, not denied, not attributed, not asked.

    Matching ignores case, hyphens and spacing and needs whole words. ``None`` when every occurrence is denied
    ("no object slicing"), reported as someone else's view ("people think renames are atomic"), sits in a
    question ("is it 2x faster?"), or does not occur at all.
    """
    if not _norm(phrase):
        return None
    pattern = _phrase_pattern(phrase)
    for c in clauses(text):
        if c.question:
            continue
        norm = _norm(c.text)
        for m in pattern.finditer(norm):
            if negated_before(norm[: m.start()]):
                continue
            # "people think X, but Y": the contrast ends the reported view, Y is the candidate's own.
            end = c.sentence.find(c.text)
            own = _TURN.match(c.text) or end < 0
            scope = c.text if own else c.sentence[: end + len(c.text)]
            if ATTRIBUTION.search(scope):
                continue
            return Assertion(phrase, c.sentence, c.text)
    return None


def mentions(text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs at all (asserted or not): for telling "denied" from "absent"."""
    return bool(_phrase_pattern(phrase).search(_norm(text)))


def contradictions_asserted(answer: str, question: Question) -> list[ContradictionHit]:
    """The rubric's classic wrong claims that ``answer`` asserts, each with the candidate's sentence.

    One hit per contradiction (its first asserting phrasing). Cheap: regular expressions only, so the
    interviewer can call it on every answer before choosing a follow-up, and the scorer uses the same reading.
    """
    return find_contradictions(answer, question.contradictions)


def find_contradictions(answer: str, contradictions: Sequence[Contradiction]) -> list[ContradictionHit]:
    """:func:`contradictions_asserted` for a bare list of rubric contradictions."""
    hits: list[ContradictionHit] = []
    for c in contradictions:
        for phrase in c.any_of:
            a = find_assertion(answer, phrase)
            if a is not None:
                hits.append(ContradictionHit(c.name, c.claim, c.criterion, a.sentence, c.challenge))
                break
    return hits


_LIST_SPLIT = re.compile(r"\s*(?:,|;|/|\||\u00b7|\u2022|\band\b|\s-\s)\s*", re.IGNORECASE)
# Words that turn a list of terms into an explanation: a cause, a purpose, a consequence or a comparison.
_EXPLAINS = re.compile(
    r"\b(?:because|since|so|so that|therefore|which|that|means|meaning|caused?|causes|to|by|when|if|"
    r"until|because of|due to|instead|than|while|where|whereas|until|showed|found|went|dropped|rose|"
    r"cut|moved|was|were|is|are|did|does|made|makes|let|lets)\b",
    re.IGNORECASE,
)
_LIST_ITEM_WORDS = 3  # a list item is a term or a figure: at most this many words


def is_unexplained_list(sentence: str) -> bool:
    """Whether a sentence only lists terms or figures ("nsight, baseline, profiled, A/B") without saying
    what they did, why or what followed: three or more short items and no word that explains."""
    items = [p for p in _LIST_SPLIT.split(sentence.strip().rstrip(".!?:")) if p and p.strip()]
    if len(items) < 3 or any(len(p.split()) > _LIST_ITEM_WORDS for p in items):
        return False
    return not _EXPLAINS.search(sentence)


def explained_text(text: str) -> tuple[str, list[str]]:
    """``text`` without the sentences that earn no evidence credit, and those sentences.

    Dropped: lists of terms or figures with no explanation (:func:`is_unexplained_list`) and sentences that
    repeat an earlier one word for word. What remains keeps its order and line breaks between sentences.
    """
    kept: list[str] = []
    dropped: list[str] = []
    seen: set[str] = set()
    for s in sentences(text):
        key = _norm(s)
        if is_unexplained_list(s) or (key and key in seen):
            dropped.append(s)
        else:
            kept.append(s)
        seen.add(key)
    return "\n".join(kept), dropped
