"""The scorer's stages, each a function over the typed rubric spec and the screened answers.

:meth:`interviewer.scoring.scorer.RubricScorer.score` composes them in this order (the order of the notes a
score carries): screen, coverage, contradictions (with a truth judge's verdicts merged in), relevance
measured, checks, LLM grading, readings, calibration (the methods' levels combined into one), relevance
decided (off-topic or not), key points and criteria, criterion caps, why depth and the push step, the
question's caps, hints, and the per-key-point verdicts. The rules and their numbers are described in
:mod:`interviewer.scoring.scorer`; every constant lives here.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from interviewer.content.models import Criterion, Probe, Question
from interviewer.errors import ModelError
from interviewer.scoring.checks import run_checks
from interviewer.scoring.claims import (
    ContradictionHit,
    explained_text,
    find_contradictions,
)
from interviewer.scoring.coverage import (
    STOPWORDS,
    Calibration,
    CoverageResult,
    TextEncoder,
    score_coverage,
    split_sentences,
    words,
)
from interviewer.scoring.guard import Screened, screen
from interviewer.scoring.judge import JudgeResult, QuoteResult, extract_quotes, run_judge
from interviewer.scoring.models import (
    Adjustment,
    Cap,
    CheckResult,
    CriterionScore,
    KeyPointVerdict,
    Method,
    Status,
    Verdict,
)
from interviewer.scoring.paraphrase import paraphrased_contradictions
from interviewer.scoring.spec import STORY_ROUNDS, Answers, RubricSpec, StepSpec

WELL_ANSWERED = 2.5  # a why-level counts as answered well from this coverage level (of 4) up
MAX_EVIDENCE = 4
CONTRADICTED_CRITERION_MAX = 1  # a criterion touched by an asserted classic wrong claim
CONTRADICTED_ANSWER_MAX = 1.5  # the whole question when its answer asserts one
OFF_TOPIC_MAX = 0.5
NO_EPISODE_MAX = 1.5  # asked for one real time, every answer tells none: like a wrong claim, at most weak
HINT_COST = 0.5  # off the overall per graded hint (see the scorer's module docstring)
HINT_COST_MAX = 1.0  # all hints on one question together
PUSH_BONUS_MAX = 0.5  # a push step answered with full coverage
# Relevance = the highest of the answer's similarity to the rubric, to the question and of its best sentence
# to the rubric (MiniLM cosine). On Mohler (400 answers against their own question vs. another question's):
# 1% of real answers fall below 0.18 and 5% below 0.31, while half of the other-question pairs sit below 0.19
# and 90% below 0.36. Below OFF_TOPIC_BELOW an answer is treated as off-topic; up to RELEVANT_FROM the cap
# rises linearly to full marks.
OFF_TOPIC_BELOW = 0.20
RELEVANT_FROM = 0.25
# In the same field an absolute similarity cannot tell a weak answer from an answer to another question (the
# bank's own model answers reach 0.25-0.45 on behavioral questions; another question's answer, 0.34 at the
# median). Relative relevance can: the gap between the answer's similarity to the best *other* bank question
# and to its own. Bank model answers (our dev set, not the trap set): gap <= 0.18 for 90%, <= 0.38 for 99%;
# another question's model answer: >= 0.20 for 90% (same round), median 0.43. Full marks allowed up to
# GAP_FROM, off-topic from GAP_OFF_TOPIC, linear between.
GAP_FROM = 0.20
GAP_OFF_TOPIC = 0.35
# An answer that meets none of the rubric (no key point covered, no check passed) is off-topic below this
# relevance: an answer about the neighbouring topic ("radix sort uses a scan" to "how do you compute a scan").
# Chosen on the trap set's dev questions only: in technical rounds it flags 21 of their off-topic answers, one
# wrong answer and no strong or partial one; the held-out figures are in BENCHMARKS.md. Story rounds are exempt:
# there a genuine story shares little wording with the rubric, and on the dev questions of those rounds the rule
# flagged 10 strong, partial and wrong answers for 6 off-topic ones.
UNMET_OFF_TOPIC_BELOW = 0.365
# Closer to another bank question than to its own by this much, and meeting none of its rubric, an answer is
# about that other question: int8 weight quantization explained to a question on what fusing three elementwise
# kernels saves. Chosen on the trap set's dev questions only: with it the rules flag 85 of their 109
# off-topic answers (74 without), and 3 partial and 3 wrong ones (2 and 2 without).
GAP_UNMET = 0.10
# Graded against a reference answer alone (no authored key points, no bank, no probes), a terse answer ("log n"
# for "the height of the tree") shares too few words with anything for a low similarity to mean "about
# something else": it is scored by calibrated coverage alone, never called off-topic or capped for relevance.
# Chosen on the even-indexed half of the Mohler questions as the fewest content words that bring the answers
# the graders gave >= 2.5/5 and the scorer <= 0.5 to at most 1% (0 words: 11 of 1,073; 2 words: 8); the other
# half and the whole set are in BENCHMARKS.md. Longer answers keep the absolute rule (OFF_TOPIC_BELOW).
TERSE_WORDS = 2
VERDICTS: tuple[Verdict, ...] = ("stated", "contradicted", "absent")
# An answer the relative rules call off-topic (nearer another bank question than its own, or meeting nothing of
# its rubric) has shown what it is about: every criterion is 0 and so is the question. The absolute rule alone
# (low similarity to this rubric, nothing compared) keeps OFF_TOPIC_MAX as a hedge: on Mohler's reference-graded
# answers, where only that rule applies, a few answers the graders marked well fall under it.
ELSEWHERE_MAX = 0.0


@dataclass
class Stage:
    """What every stage adds to the score's explanation."""

    notes: list[str] = field(default_factory=list)
    methods: list[Method] = field(default_factory=list)


# -- screen ----------------------------------------------------------------------------------------------


@dataclass
class ScreenedAnswers(Stage):
    """The answers with passages addressed to the grader removed (:func:`interviewer.scoring.guard.screen`)."""

    initial: Screened = field(default_factory=lambda: screen(""))
    why: tuple[str | None, str | None] = (None, None)
    push: str | None = None
    given: list[str] = field(default_factory=list)  # every given answer's screened text, in order

    @property
    def main(self) -> str:
        return self.initial.text

    @property
    def answered(self) -> bool:
        return bool(self.main.strip())


def screen_answers(answers: Answers) -> ScreenedAnswers:
    """Screen every given answer; the note counts what was dropped."""
    texts = answers.given()
    screened = {a: screen(a) for a in dict.fromkeys(texts)}
    removed = sum(len(screened[a].removed) for a in texts)
    notes = [f"ignored {removed} passage(s) addressed to the grader rather than answering"] if removed else []

    def text(a: str | None) -> str | None:
        return None if a is None else screened[a].text

    return ScreenedAnswers(
        notes=notes,
        initial=screened[answers.initial],
        why=(text(answers.why1), text(answers.why2)),
        push=text(answers.push),
        given=[screened[a].text for a in texts],
    )


# -- coverage --------------------------------------------------------------------------------------------


@dataclass
class Coverage(Stage):
    """Calibrated key-point coverage of the initial answer (lists and repeats earn nothing)."""

    result: CoverageResult = field(default_factory=lambda: CoverageResult(0.0, 0.0, [], {}))
    only_lists: bool = False  # the answer is nothing but lists of terms or figures
    explained: str = ""  # the answer as scored: without the sentences that earn no credit

    @property
    def level(self) -> float:
        return self.result.level


def coverage(enc: TextEncoder, calibration: Calibration, spec: RubricSpec, seen: ScreenedAnswers) -> Coverage:
    """Coverage of the initial answer; once it starts talking to the grader, nothing after that may raise it."""
    notes: list[str] = []
    main = seen.main
    explained, listed = explained_text(main)
    if spec.reference_only and len(listed) == 1 and not explained.strip():
        # One list and nothing else, against a reference answer: naming what the question asks for ("public,
        # private, protected") is the answer; padding an answer with lists still earns nothing.
        explained, listed = main, []
    if listed:
        notes.append(
            f"no credit for {len(listed)} sentence(s) that only list terms or figures, or repeat: "
            + "; ".join(f"\u201c{x}\u201d" for x in listed[:3])
        )
    kps, question, ref = spec.key_points, spec.question_text, spec.reference
    cov = score_coverage(enc, explained, kps, question, calibration, ref)
    before = seen.initial.before_first
    if seen.initial.removed and before and before != main:
        prefix = score_coverage(enc, explained_text(before)[0], kps, question, calibration, ref)
        if prefix.level < cov.level:
            cov = prefix
    notes.append(f"coverage (calibrated on human grades): {cov.level:.2f}/4")
    return Coverage(notes, ["coverage"], cov, bool(main.strip()) and not explained.strip(), explained)


# -- contradictions --------------------------------------------------------------------------------------


@dataclass
class Contradictions(Stage):
    """Classic wrong claims asserted, and a truth judge's verdicts merged with the offline ones."""

    hits: list[ContradictionHit] = field(default_factory=list)  # the rubric's, then the judge's
    claims_wrong: bool = False  # one of the rubric's own classic wrong claims (never off-topic then)
    merged: list[KeyPointVerdict] | None = None  # None: no truth judge
    level: float = 0.0  # the coverage level, mixed with the judge's when there is one

    @property
    def wrong_sentences(self) -> set[str]:
        return {h.sentence for h in self.hits if h.sentence}


def wrong_claims(
    enc: TextEncoder, spec: RubricSpec, text: str, **thresholds: float
) -> list[ContradictionHit]:
    """The rubric's classic wrong claims in ``text``: in an authored phrasing, then in other words.

    ``thresholds`` (``similar``, ``closer_by``) replace the paraphrase reader's own, for comparing settings."""
    hits = find_contradictions(text, spec.contradictions)
    return hits + paraphrased_contradictions(
        enc,
        text,
        spec.contradictions,
        spec.right_statements(),
        spec.question_text,
        [h.name for h in hits],
        **thresholds,
    )


def contradictions(
    enc: TextEncoder,
    spec: RubricSpec,
    seen: ScreenedAnswers,
    cov: Coverage,
    judged: Sequence[KeyPointVerdict] | None,
    judge_weight: float,
) -> Contradictions:
    """The rubric's classic wrong claims in any answer; with a truth judge, its contradicted key points too."""
    hits = wrong_claims(enc, spec, "\n".join(seen.given))
    out = Contradictions(hits=list(hits), claims_wrong=bool(hits), level=cov.level)
    if judged and seen.answered and spec.key_points:
        pre = covered_key_points(cov.result, None, {h.sentence for h in hits})
        offline = key_point_verdicts(enc, cov.result, hits, pre, spec.key_points, spec.criteria, False)
        merged = merge_verdicts(offline, judged, judge_weight)
        judged_level = 4.0 * statistics.fmean(stated_probability(v) for v in merged)
        out.notes.append(
            f"truth judge: {sum(v.verdict == 'stated' for v in merged)}/{len(merged)} key points stated, "
            f"{sum(v.verdict == 'contradicted' for v in merged)} contradicted after merging "
            f"(weight {judge_weight:.2f}); level {judged_level:.2f}/4"
        )
        out.level = (1.0 - judge_weight) * out.level + judge_weight * judged_level
        out.methods.append("llm-judge")
        out.merged = merged
        out.hits = hits + judge_hits(enc, merged, hits, spec.criteria, spec.key_points)
    out.notes += [f"asserts a classic wrong claim ({h.name}): \u201c{h.sentence}\u201d" for h in out.hits]
    return out


def judge_hits(
    enc: TextEncoder,
    merged: list[KeyPointVerdict],
    hits: list[ContradictionHit],
    criteria: list[Criterion],
    key_points: list[str],
) -> list[ContradictionHit]:
    """Key points the merged verdicts call contradicted (beyond the rubric's own contradictions), as hits
    on the criterion each key point belongs to, so they cap it like a classic wrong claim."""
    known = {h.sentence for h in hits}
    crit_of = {k: name for name, ks in assign_key_points(enc, criteria, key_points).items() for k in ks}
    out: list[ContradictionHit] = []
    for v in merged:
        if v.verdict != "contradicted" or v.method == "offline" or (v.quote and v.quote in known):
            continue
        out.append(
            ContradictionHit(
                name="key point contradicted",
                claim=f"the opposite of: {v.key_point}",
                criterion=crit_of.get(v.key_point) if len(criteria) > 1 else None,
                sentence=v.quote or "",
                challenge="",
            )
        )
    return out


def _distribution(v: KeyPointVerdict) -> dict[Verdict, float]:
    """A verdict as probabilities: its confidence on itself, the rest shared by the other two."""
    conf = min(1.0, max(0.0, v.confidence))
    return {x: conf if x == v.verdict else (1.0 - conf) / 2 for x in VERDICTS}


def stated_probability(v: KeyPointVerdict) -> float:
    """How likely the key point is stated, from one verdict (its confidence, or the share left to "stated")."""
    return _distribution(v)["stated"]


def merge_verdicts(
    offline: Sequence[KeyPointVerdict], judged: Sequence[KeyPointVerdict], judge_weight: float
) -> list[KeyPointVerdict]:
    """Merge the offline per-key-point verdicts with a judge's, key point by key point.

    Each verdict is read as a distribution over stated / contradicted / absent (its confidence on its verdict,
    the remainder split evenly); the two are mixed as ``(1 - judge_weight) * offline + judge_weight * judged``
    and the most probable verdict wins (ties go to the offline verdict).

    Args:
        offline: one verdict per key point, as the scorer produces them (method "offline"); defines the order.
        judged: the judge's verdicts; key points it did not rule on keep the offline verdict, verdicts about
            key points not in ``offline`` are ignored.
        judge_weight: 0 ignores the judge, 1 takes it alone.

    Returns:
        One verdict per offline key point: the winning verdict, its mixed probability as confidence, the quote
        and method of the side that gave that verdict (the judge's when both did and it has a quote).
    """
    w = min(1.0, max(0.0, judge_weight))
    by_point = {j.key_point: j for j in judged}
    out: list[KeyPointVerdict] = []
    for o in offline:
        j = by_point.get(o.key_point)
        if j is None or w == 0.0:
            out.append(o)
            continue
        po, pj = _distribution(o), _distribution(j)
        mix = {x: (1.0 - w) * po[x] + w * pj[x] for x in VERDICTS}
        best = max(VERDICTS, key=lambda x: (mix[x], x == o.verdict))
        source = j if j.verdict == best and (j.quote or o.verdict != best) else o
        quote = source.quote if best != "absent" else None
        out.append(
            KeyPointVerdict(
                key_point=o.key_point,
                verdict=best,
                confidence=round(mix[best], 4),
                quote=quote,
                method=source.method,
            )
        )
    return out


# -- relevance -------------------------------------------------------------------------------------------


def about(question: str, key_points: Sequence[str]) -> str:
    """What a question is about, as one text for relevance: the question and its key points."""
    return question + "\n" + "\n".join(key_points)


class Neighbours:
    """The bank's other questions, for relative relevance (is this an answer to a different question?)."""

    def __init__(self, questions: Sequence[Question] | None = None) -> None:
        self.questions = list(questions or [])
        self.vectors: np.ndarray | None = None
        # Stories: every "tell me about a time" answer resembles the other story questions, so closeness to
        # another of them says nothing (24 behavioral questions put strong stories 0.34-0.46 closer to a
        # sibling). Their off-topic rules are the absolute ones only.
        self.stories = {q.id for q in self.questions if q.round in STORY_ROUNDS}

    def warm(self, enc: TextEncoder) -> None:
        """Embed the bank's questions now (once)."""
        if self.questions and self.vectors is None:
            self.vectors = enc.sentences([about(q.question, q.key_points) for q in self.questions])

    def gap(self, enc: TextEncoder, spec: RubricSpec, answer: str) -> float | None:
        """How much closer the answer is to the best other bank question than to its own (None: no bank)."""
        others = [q for q in self.questions if q.id != spec.question_id]
        if not others or spec.question_id in self.stories:
            return None
        self.warm(enc)
        assert self.vectors is not None
        idx = [i for i, q in enumerate(self.questions) if q.id != spec.question_id]
        own, a = enc.sentences([about(spec.question_text, spec.key_points), answer])
        return float((self.vectors[idx] @ a).max() - own @ a)


def similarity(cov: CoverageResult) -> float:
    """The answer's relevance: the best of its similarity to the rubric, the question, and its best sentence's."""
    return max(
        cov.features.get("cos_reference", 0.0),
        cov.features.get("cos_question", 0.0),
        cov.features.get("max_sentence_sim", 0.0),
    )


def story_similarity(enc: TextEncoder, spec: RubricSpec, explained: str) -> float:
    """A story question's answer (as scored: :attr:`Coverage.explained`) against its model answer, whole and by
    its best sentence (0 for any other question).

    A story shares little wording with the rubric's key points, so the key points alone put short genuine
    stories under the off-topic bar; the model answer tells one such story. The interviewer's off-topic check
    (:meth:`~interviewer.scoring.scorer.RubricScorer.off_topic`) reads the model answer too, so the report calls
    off-topic what the interviewer redirected."""
    if not (spec.story and spec.model_answer and explained.strip()):
        return 0.0
    vecs = enc.sentences([spec.model_answer, explained, *split_sentences(explained)])
    return float((vecs[1:] @ vecs[0]).max())


def terse(text: str) -> bool:
    """Whether an answer has at most TERSE_WORDS content words (too few for a similarity to judge)."""
    return len([w for w in words(text) if w not in STOPWORDS]) <= TERSE_WORDS


def off_topic_reason(
    relevance: float,
    gap: float | None,
    *,
    met: bool,
    covered: bool,
    reference_only: bool = False,
    story: bool = False,
) -> str | None:
    """The off-topic rules in one place: the absolute rule (a relevance under ``OFF_TOPIC_BELOW``), then the
    relative ones (:func:`elsewhere_reason`). ``covered``: a key point is covered; ``met``: that or a check."""
    return _absolute_reason(relevance) or elsewhere_reason(
        relevance, gap, met=met, covered=covered, reference_only=reference_only, story=story
    )


def _absolute_reason(relevance: float) -> str | None:
    return f"relevance {relevance:.2f} to this question" if relevance < OFF_TOPIC_BELOW else None


def elsewhere_reason(
    relevance: float,
    gap: float | None,
    *,
    met: bool,
    covered: bool,
    reference_only: bool = False,
    story: bool = False,
) -> str | None:
    """The relative off-topic rules: nearer another bank question than this one, or meeting none of its rubric.

    ``reference_only``: the key points are a reference answer's sentences, which a correct answer in other
    words ("push, pop" for "add and remove at the top") need not cover one by one; only the absolute rule
    decides then (on Mohler the "nothing of the rubric met" rule called 113 of 2,102 well-graded answers
    off-topic). ``story``: a story question (:data:`STORY_ROUNDS`); the unmet-rubric rule does not apply."""
    if gap is not None and gap >= GAP_OFF_TOPIC:
        return f"gap {gap:.2f} to another bank question"
    if gap is not None and gap >= GAP_FROM and not covered:
        # closer to another question than to this one, and none of this one's points
        return f"gap {gap:.2f} to another bank question and no key point covered"
    if gap is not None and gap >= GAP_UNMET and not met:
        return f"gap {gap:.2f} to another bank question and nothing of the rubric met"
    if relevance < UNMET_OFF_TOPIC_BELOW and not met and not reference_only and not story:
        # about something near this question, but meets none of its rubric
        return f"relevance {relevance:.2f} and nothing of the rubric met"
    return None


@dataclass
class Relevance(Stage):
    """How much the answer is about this question, and whether it is off-topic (with the reason)."""

    value: float = 0.0
    gap: float | None = None
    reason: str | None = None
    judged: bool = True  # False: a terse answer graded against a reference alone (TERSE_WORDS): no cap
    # off-topic by the relative rules (:func:`elsewhere_reason`), not only by the absolute one
    elsewhere: bool = False

    @property
    def off_topic(self) -> bool:
        return self.reason is not None

    @property
    def off_topic_max(self) -> float:
        """The most an off-topic answer scores: 0 when the relative rules decided, else the hedge cap."""
        return ELSEWHERE_MAX if self.elsewhere else OFF_TOPIC_MAX

    def cap(self) -> float:
        """The most the answer may score for being only partly about this question (linear between rules)."""
        if not self.judged:
            return 4.0
        span = (self.value - OFF_TOPIC_BELOW) / (RELEVANT_FROM - OFF_TOPIC_BELOW)
        if self.gap is not None:
            span = min(span, (GAP_OFF_TOPIC - self.gap) / (GAP_OFF_TOPIC - GAP_FROM))
        return OFF_TOPIC_MAX + (4.0 - OFF_TOPIC_MAX) * min(1.0, max(0.0, span))


def relevance(
    cov: CoverageResult,
    gap: float | None,
    *,
    exempt: bool,
    covered: bool,
    met: bool,
    reference_only: bool = False,
    terse: bool = False,
    story: bool = False,
    also: float = 0.0,
) -> Relevance:
    """Decide off-topic by :func:`off_topic_reason`; ``exempt``: an empty answer, or one that asserts one of
    the rubric's classic wrong claims (it is about the question, and wrong), is never off-topic.
    ``reference_only`` with ``terse``: the answer is too short to judge against a reference by similarity;
    coverage alone scores it. ``also``: another similarity that counts as relevance (:func:`story_similarity`)."""
    value = max(similarity(cov), also)
    if reference_only and terse:
        return Relevance(value=value, gap=gap, judged=False)
    relative = (
        None
        if exempt
        else elsewhere_reason(
            value, gap, met=met, covered=covered, reference_only=reference_only, story=story
        )
    )
    reason = None if exempt else _absolute_reason(value) or relative
    return Relevance(
        notes=[f"off-topic: {reason}"] if reason else [],
        value=value,
        gap=gap,
        reason=reason,
        elsewhere=relative is not None,
    )


# -- checks ----------------------------------------------------------------------------------------------


@dataclass
class Checks(Stage):
    """Deterministic checks: numbers with tolerances and required facts."""

    results: list[CheckResult] = field(default_factory=list)

    @property
    def passed_fraction(self) -> float | None:
        return sum(ch.passed for ch in self.results) / len(self.results) if self.results else None


def checks(spec: RubricSpec, main: str) -> Checks:
    """Run the rubric's numeric and fact checks on the initial answer."""
    if not (spec.numeric or spec.facts):
        return Checks()
    results = run_checks(main, spec.numeric, spec.facts, spec.question_text)
    if not results:
        return Checks()
    passed = sum(ch.passed for ch in results)
    return Checks([f"checks passed: {passed}/{len(results)}"], ["deterministic"], list(results))


def code_check(passed: bool) -> CheckResult:
    """The sandbox's verdict on a coding answer, as a check."""
    return CheckResult(
        name="code tests",
        passed=passed,
        expected="all tests pass",
        found="passed" if passed else "failing tests",
    )


# -- LLM grading (quote extraction and the rubric judge) -------------------------------------------------


@dataclass
class LLMGrading(Stage):
    """Verified quotes per key point and the rubric judge's levels (None when not run or unavailable)."""

    quotes: QuoteResult | None = None
    judged: JudgeResult | None = None


def llm_grading(
    enc: TextEncoder,
    model: object,
    spec: RubricSpec,
    main: str,
    *,
    use_quotes: bool,
    samples: int,
    quote_min_similarity: float,
) -> LLMGrading:
    """Ask the judge model for quotes and rubric levels; a model that fails leaves the offline score."""
    out = LLMGrading()
    try:
        if use_quotes:
            raw = extract_quotes(model, spec.question_text, main, spec.key_points)
            out.quotes = relevant_quotes(enc, raw, quote_min_similarity, out.notes)
            out.methods.append("quote-extraction")
            out.notes.append(
                f"quote extraction: {len(out.quotes.covered)}/{len(spec.key_points)} key points quoted"
            )
            if out.quotes.rejected:
                out.notes.append(f"rejected {len(out.quotes.rejected)} quote(s) not found in the answer")
        out.judged = run_judge(
            model, spec.question_text, main, spec.criteria, spec.key_points, samples=samples
        )
        out.methods.append("llm-judge")
    except ModelError as e:
        out.notes.append(f"LLM grading unavailable, scored offline only: {e}")
    return out


def relevant_quotes(
    enc: TextEncoder, quotes: QuoteResult, min_similarity: float, notes: list[str]
) -> QuoteResult:
    """Drop verified quotes that are not about their key point.

    A verbatim quote must also be about its key point: the 1.5B model tends to copy the answer's sentences in
    order, one per key point (MiniLM cosine: aligned quotes ~0.86, misaligned 0.2-0.4).
    """
    pairs = [(k, q) for k, q in quotes.quotes.items() if q]
    if not pairs:
        return quotes
    kp_vecs = enc.sentences([k for k, _ in pairs])
    q_vecs = enc.sentences([q for _, q in pairs])
    kept = dict(quotes.quotes)
    off = 0
    for (k, _), a, b in zip(pairs, kp_vecs, q_vecs, strict=True):
        if float(a @ b) < min_similarity:
            kept[k] = None
            off += 1
    if off:
        notes.append(f"dropped {off} verbatim quote(s) that do not address their key point")
    return QuoteResult(kept, quotes.rejected)


# -- readings --------------------------------------------------------------------------------------------

ReadingAnswer = str | float | None  # an option or a name, a number, or None for "not stated"
ReadingVerdict = Literal["stated", "contradicted", "absent"]


@dataclass(frozen=True)
class ReadingInput:
    """What a reader reads: the question, the candidate's answer for each part, and the probes to answer."""

    question: str
    answers: dict[str, str]  # "main", "why1", "why2" -> the screened answer (absent parts are left out)
    probes: list[Probe]
    question_id: str = ""


@dataclass(frozen=True)
class ReadingFinding:
    """One probe's reading of the answer and what the rubric makes of it."""

    probe: Probe
    read: ReadingAnswer  # what the reader says the candidate says
    verdict: ReadingVerdict  # the rubric's comparison: the true thing, a classic wrong one, or not stated
    quote: str | None = None  # the candidate's sentence behind a stated or contradicted reading
    # Absent for want of a reading, not because the reader found nothing: the askings disagreed, or it read
    # something the rubric does not judge. Only a reader that answered "not stated" itself halves credit.
    undecided: bool = False


@dataclass
class Readings(Stage):
    """The findings of the reading probes (none when the question has no probes or no reader is set)."""

    findings: list[ReadingFinding] = field(default_factory=list)


Reader = Callable[[ReadingInput], list[ReadingFinding]]


def readings(spec: RubricSpec, seen: ScreenedAnswers, reader: Reader | None) -> Readings:
    """Read the question's probes off the candidate's answers; no probes or no reader: no findings."""
    if reader is None or not spec.probes:
        return Readings()
    parts = {"main": seen.main, "why1": seen.why[0], "why2": seen.why[1]}
    answers = {k: v for k, v in parts.items() if v is not None}
    asked = ReadingInput(spec.question_text, answers, list(spec.probes), spec.question_id)
    try:
        found = list(reader(asked))
    except ModelError as e:  # the reading is extra evidence: the offline score stands
        return Readings(notes=[f"reading probes unavailable, scored without them: {e}"])
    # ReadingCancelled goes on up: a cancelled reading decides nothing, and the question is read again later
    return Readings(findings=found, methods=["reading-probes"] if found else [])


# -- findings: what the reading probes' findings do to the score -----------------------------------------

# A model's findings act on the score only from this measured agreement with hand labels (its weight from
# ``interviewer calibrate --reader``, :func:`interviewer.scoring.reader_trust.load_trust`); below it, or never
# measured, they are noted and change nothing. The embedded 1.5B model agrees on 76% of the probe set's dev
# half; a reader that gets more than one probe in three wrong would cap right answers as wrong too often.
MIN_READER_TRUST = 0.6
# A probe kind acts only from this agreement of its own: better than an even chance, far above the 25-33% of
# guessing among three or four choices. Chosen on the dev traps: the embedded model's option probes (52-59% on
# the probe set, whose option answers are built to echo the wrong claims) still cut wrong answers' scores and
# let the listener challenge them there, without capping a strong answer.
MIN_KIND_TRUST = 0.5


@dataclass(frozen=True)
class ReaderTrust:
    """A reading model's measured agreement with hand labels, overall and per probe kind where measured.

    Findings act per kind: a kind whose own agreement is below :data:`MIN_KIND_TRUST` (a small model reads
    typed numbers and names far better than it picks among worded claims) is noted and changes nothing, even
    when the model's overall agreement (at least :data:`MIN_READER_TRUST`) lets the other kinds act.
    """

    overall: float
    per_kind: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, trust: float | ReaderTrust | None) -> ReaderTrust | None:
        return ReaderTrust(float(trust)) if isinstance(trust, int | float) else trust

    def acts_on(self, kind: str) -> bool:
        return self.overall >= MIN_READER_TRUST and self.per_kind.get(kind, self.overall) >= MIN_KIND_TRUST

    def absent_on(self, kind: str) -> bool:
        """Whether this kind's "not stated" may halve a key point's credit: the kind itself is read as well as
        a model must read overall (:data:`MIN_READER_TRUST`)."""
        return self.acts_on(kind) and self.per_kind.get(kind, self.overall) >= MIN_READER_TRUST

    def quiet_kinds(self) -> list[str]:
        """The probe kinds measured below the bar (their findings are only noted)."""
        return sorted(k for k, v in self.per_kind.items() if v < MIN_KIND_TRUST)


# A key point credited by coverage (shared vocabulary) while every probe of it reads "not stated" keeps this
# share of its credit: the answer uses the key point's words without saying what it says. Only a probe kind
# trusted at MIN_READER_TRUST on its own says so (:meth:`ReaderTrust.absent_on`): a kind let act from
# MIN_KIND_TRUST caps on the wrong claims it reads, but its "not stated" is too often a right claim it missed.
# Chosen on the trap set's dev questions (re-read on the embedded model, its per-kind agreement): halvings by
# option probes alone hit 7 strong answers and 4 wrong ones, and ordered strong > partial > wrong on 2 fewer.
VOCABULARY_ONLY_CREDIT = 0.5


@dataclass(frozen=True)
class FindingHit(ContradictionHit):
    """A key point the probes find contradicted, as a hit on its criterion; ``said`` is the report's sentence."""

    said: str = ""


@dataclass
class Findings(Stage):
    """The probes' findings per key point, and what they change (nothing when the reader is not trusted)."""

    acting: bool = False  # the reader is trusted enough for the findings to change the score
    trust: float = 0.0  # the reader's measured agreement (0 when never measured)
    points: dict[str, ReadingVerdict] = field(default_factory=dict)  # main key point -> finding
    quotes: dict[str, str] = field(default_factory=dict)  # main key point -> the candidate's sentence
    hits: list[ContradictionHit] = field(default_factory=list)  # contradicted main key points (when acting)
    vocabulary_only: list[str] = field(default_factory=list)  # halved main key points (when acting)
    # why level -> key point -> finding (key points no probe could decide are left out)
    why: dict[int, dict[str, ReadingVerdict]] = field(default_factory=dict)

    # main key points whose finding the candidate's text itself bears out: a number or a name the candidate
    # wrote, or a claim read on a key point the answer's words also cover (an option read alone can be a
    # small model's guess about a text on something else)
    verified: set[str] = field(default_factory=set)

    @property
    def about_question(self) -> bool:
        """The probes found a key point stated or contradicted, borne out by the text: about this question."""
        return self.acting and any(self.points.get(k, "absent") != "absent" for k in self.verified)

    @property
    def states_a_point(self) -> bool:
        """The probes found a key point stated, borne out by the text: something right about this question."""
        return self.acting and any(self.points.get(k) == "stated" for k in self.verified)


def _true_thing(p: Probe) -> str:
    """What the rubric holds true for a probe, in words."""
    if p.kind == "option":
        return str(p.true)
    if p.kind == "number":
        value = f"{p.value:,.6g}" if p.value is not None and abs(p.value) < 1e6 else f"{p.value:,.0f}"
        return f"{value} {p.unit}".strip() if p.unit else value
    return p.accept[0]


def said_wrong(f: ReadingFinding) -> str:
    """The report's sentence for a contradicting finding: the candidate's own sentence, then what the rubric
    holds true ("you said \u201cprefill is memory-bound\u201d; in fact: prefill is compute-bound")."""
    said = f"you said \u201c{f.quote}\u201d" if f.quote else f"the answer gives {f.read}"
    return f"{said}; in fact: {_true_thing(f.probe)}"


def _key_point_of(spec: RubricSpec, point: str) -> tuple[str, int, str] | None:
    """``main.1`` -> ("main", 0, the key point's text); why levels as 1 and 2; None when out of range."""
    try:
        part, index = point.split(".")
        i = int(index)
        if part == "main":
            return part, 0, spec.key_points[i]
        level = int(part.removeprefix("why"))
        return part, level, spec.why_steps[level - 1].key_points[i]
    except (ValueError, IndexError):
        return None


def findings(
    enc: TextEncoder,
    spec: RubricSpec,
    reads: Readings,
    cov: CoverageResult,
    trust: float | ReaderTrust | None,
) -> Findings:
    """Per key point: contradicted if a probe contradicts it (unless another probe finds the true thing in the
    same sentence: the reading is mixed, nothing is decided), else stated if a probe states it, else absent.

    Only the probe kinds ``trust`` lets act are weighed (:meth:`ReaderTrust.acts_on`; a plain number is the
    same figure for every kind); the others' findings are noted. Acting on them: a contradicted main key
    point becomes a hit
    on the criterion it belongs to (capped like a classic wrong claim, the candidate's sentence recorded);
    a main key point coverage counts as covered while its probes find it not stated keeps
    :data:`VOCABULARY_ONLY_CREDIT` of its credit; a why level's findings go to :func:`depth`.
    """
    out = Findings()
    measured = ReaderTrust.of(trust)
    if not reads.findings:
        return out
    # A trusted model's findings of a kind measured below the bar are left out (noted), the rest weighed.
    trusted = measured is not None and measured.overall >= MIN_READER_TRUST
    used = [f for f in reads.findings if measured is None or not trusted or measured.acts_on(f.probe.kind)]
    quiet = len(reads.findings) - len(used)
    by_point: dict[str, list[ReadingFinding]] = {}
    for f in used:
        by_point.setdefault(f.probe.point, []).append(f)
    stated_quotes = {f.quote for f in used if f.verdict == "stated" and f.quote}
    # key points a probe trusted on "not stated" finds not stated (those may halve vocabulary-only credit)
    absent_read: set[str] = set()
    covered = {m.key_point for m in cov.matches if m.covered}
    wrong: dict[str, ReadingFinding] = {}
    undecided: set[str] = set()
    mixed = 0
    for point, fs in by_point.items():
        where = _key_point_of(spec, point)
        if where is None:
            continue
        part, level, key_point = where
        against = [
            f for f in fs if f.verdict == "contradicted" and not (f.quote and f.quote in stated_quotes)
        ]
        mixed += any(f.verdict == "contradicted" for f in fs) and not against
        verdict: ReadingVerdict = (
            "contradicted" if against else "stated" if any(f.verdict == "stated" for f in fs) else "absent"
        )
        if verdict == "absent" and any(f.undecided for f in fs):
            undecided.add(key_point)  # one probe found nothing, another could not tell: not shown absent
        if verdict == "absent" and any(measured is None or measured.absent_on(f.probe.kind) for f in fs):
            absent_read.add(key_point)
        if part != "main":
            if key_point not in undecided and (verdict != "absent" or key_point in absent_read):
                out.why.setdefault(level, {})[key_point] = verdict
            continue
        out.points[key_point] = verdict
        typed = any(f.verdict == verdict and f.probe.kind != "option" for f in fs)
        if verdict != "absent" and (typed or key_point in covered):
            out.verified.add(key_point)
        chosen = against[0] if against else next((f for f in fs if f.verdict == verdict and f.quote), None)
        if chosen is not None and chosen.quote:
            out.quotes[key_point] = chosen.quote
        if against:
            wrong[key_point] = against[0]
    count = {v: sum(x == v for x in out.points.values()) for v in VERDICTS}
    trust_text = "never measured" if measured is None else f"{measured.overall:.2f}"
    out.notes.append(
        f"reading probes (reader trust {trust_text}): {count['stated']}/{len(out.points)} key points stated, "
        f"{count['contradicted']} contradicted" + (f", {mixed} read both ways (not decided)" if mixed else "")
    )
    out.acting = trusted
    out.trust = measured.overall if measured is not None else 0.0
    if not out.acting:
        out.notes.append(
            "reading probes noted only: "
            + (
                "the model's reading was never measured (interviewer calibrate --reader)"
                if measured is None
                else f"the model's reading agreement {measured.overall:.2f} is below {MIN_READER_TRUST}"
            )
        )
        return out
    if quiet and measured is not None:
        out.notes.append(
            f"{quiet} probe reading(s) noted only: the model reads "
            + ", ".join(f"{k} probes at {measured.per_kind[k]:.2f}" for k in measured.quiet_kinds())
            + f", below {MIN_KIND_TRUST}"
        )
    crit_of = {
        k: name for name, ks in assign_key_points(enc, spec.criteria, spec.key_points).items() for k in ks
    }
    for key_point, f in wrong.items():
        hit = FindingHit(
            name="reading probe",
            claim=f"{f.read} ({f.probe.ask})",
            criterion=crit_of.get(key_point) if len(spec.criteria) > 1 else None,
            sentence=f.quote or "",
            challenge="",
            said=said_wrong(f),
        )
        out.hits.append(hit)
        out.notes.append(f"reading probe contradicts a key point: {hit.said}")
    out.vocabulary_only = [
        k
        for k, v in out.points.items()
        if v == "absent" and k in covered and k not in undecided and k in absent_read
    ]
    if out.vocabulary_only:
        out.notes.append(
            f"{len(out.vocabulary_only)} key point(s) share the rubric's words but their probes find them not "
            f"stated: {VOCABULARY_ONLY_CREDIT:g} of their credit"
        )
    return out


def vocabulary_factor(cov: CoverageResult, fnd: Findings) -> float:
    """The share of the coverage level kept: each vocabulary-only key point's share of the credit is cut to
    :data:`VOCABULARY_ONLY_CREDIT` (1.0 when none or not acting)."""
    if not fnd.acting or not fnd.vocabulary_only:
        return 1.0
    fraction = {m.key_point: max(0.0, m.fraction) for m in cov.matches}
    total = sum(fraction.values())
    if total <= 0:
        return 1.0
    share = sum(fraction.get(k, 0.0) for k in fnd.vocabulary_only) / total
    return 1.0 - (1.0 - VOCABULARY_ONLY_CREDIT) * share


def with_findings(kps: KeyPoints, cov: CoverageResult, fnd: Findings) -> KeyPoints:
    """Key points after the findings: vocabulary-only ones keep part of their fraction, contradicted ones
    none, and their evidence is never a sentence the probes found wrong."""
    if not fnd.acting or not fnd.points:
        return kps
    fraction = dict(kps.fractions or {m.key_point: m.fraction for m in cov.matches})
    for k in fnd.vocabulary_only:
        fraction[k] = fraction.get(k, 0.0) * VOCABULARY_ONLY_CREDIT
    wrong = {k for k, v in fnd.points.items() if v == "contradicted"}
    for k in wrong:
        fraction[k] = 0.0
    covered = [k for k in kps.covered if k not in wrong]
    missed = [k for k in kps.missed if k not in covered] + [k for k in kps.covered if k in wrong]
    evidence = {k: e for k, e in kps.evidence.items() if k not in wrong}
    return KeyPoints(covered, missed, evidence, fraction)


def verdicts_with_findings(verdicts: list[KeyPointVerdict], fnd: Findings) -> list[KeyPointVerdict]:
    """The per-key-point verdicts, with what the probes found stated or contradicted in place of the offline
    guess (when acting)."""
    if not fnd.acting:
        return verdicts
    out = []
    for v in verdicts:
        found = fnd.points.get(v.key_point)
        if found is None or found == "absent":
            out.append(v)
            continue
        out.append(
            KeyPointVerdict(
                key_point=v.key_point,
                verdict=found,
                confidence=round(min(1.0, fnd.trust), 4),
                quote=fnd.quotes.get(v.key_point),
                method="reading-probes",
            )
        )
    return out


# -- calibration: the methods' levels combined into one -------------------------------------------------


@dataclass
class Level(Stage):
    """The discussion level (coverage, quotes, judge, checks) and the overall before adjustments and caps."""

    discussion: float = 0.0
    overall: float = 0.0
    code: CheckResult | None = None  # the sandbox's verdict as a check (coding answers)


def combine(c: float, q: float | None, j: float | None, notes: list[str]) -> float:
    """Average coverage, quotes and the judge; the judge may exceed the verified evidence by one level only."""
    parts = [c]
    if q is not None:
        parts.append(q)
    if j is not None:
        cap = max(parts) + 1.0
        if j > cap:
            notes.append(f"LLM judge level {j:.2f} capped at {cap:.2f}: the verified evidence supports less")
        parts.append(min(j, cap))
        notes.append(f"LLM judge (median of samples): {j:.2f}/4")
    return statistics.fmean(parts)


def calibration(c: float, llm: LLMGrading, chk: Checks, passed: bool | None) -> Level:
    """Coverage ``c`` with the LLM methods, then the checks (a quarter), then a coding verdict (half)."""
    out = Level()
    q = llm.quotes.level if llm.quotes else None
    discussion = combine(c, q, llm.judged.level if llm.judged else None, out.notes)
    k = chk.passed_fraction
    if k is not None:
        discussion = 0.75 * discussion + 0.25 * 4.0 * k
    out.discussion = out.overall = discussion
    if passed is not None:
        out.methods.append("code-tests")
        out.code = code_check(passed)
        out.overall = 0.5 * (4.0 if passed else 0.0) + 0.5 * discussion
    return out


# -- key points and criteria -----------------------------------------------------------------------------


@dataclass
class KeyPoints:
    """Which key points the answer covers, with the candidate's words for each."""

    covered: list[str]
    missed: list[str]
    evidence: dict[str, str]  # key point -> the candidate's words that cover it
    fractions: dict[str, float] | None  # the merged verdicts' stated probability (with a truth judge)


def key_points(
    spec: RubricSpec, cov: CoverageResult, con: Contradictions, quotes: QuoteResult | None, off_topic: bool
) -> KeyPoints:
    """Covered and missed key points, from the offline signals or the merged verdicts; none when off-topic."""
    wrong = con.wrong_sentences
    covered = covered_key_points(cov, quotes, wrong)
    fractions: dict[str, float] | None = None
    if con.merged is not None:
        covered = [v.key_point for v in con.merged if v.verdict == "stated"]
        fractions = {v.key_point: stated_probability(v) for v in con.merged}
    if off_topic:
        covered = []
    found = evidence(cov, quotes)
    if con.merged is not None:
        found.update({v.key_point: v.quote for v in con.merged if v.verdict == "stated" and v.quote})
    evidence_for = {k: e for k, e in found.items() if e not in wrong and k in covered}
    return KeyPoints(covered, [k for k in spec.key_points if k not in covered], evidence_for, fractions)


def covered_key_points(
    cov: CoverageResult, quotes: QuoteResult | None, wrong_sentences: set[str]
) -> list[str]:
    """Key points the offline signals count as covered (never by a sentence asserting a wrong claim)."""
    return [
        m.key_point
        for m in cov.matches
        if (m.covered and m.best_sentence not in wrong_sentences)
        or (quotes and quotes.quotes.get(m.key_point))
    ]


def evidence(cov: CoverageResult, quotes: QuoteResult | None) -> dict[str, str]:
    """Key point -> exact words of the candidate that cover it (verified quote first, else best sentence)."""
    out: dict[str, str] = {}
    for m in cov.matches:
        q = quotes.quotes.get(m.key_point) if quotes else None
        if q:
            out[m.key_point] = q
        elif m.covered and m.best_sentence:
            out[m.key_point] = m.best_sentence
    return out


def assign_key_points(
    enc: TextEncoder, criteria: list[Criterion], key_points: list[str], *, every_criterion: bool = False
) -> dict[str, list[str]]:
    """Each key point goes to the criterion whose name and top anchor it is most similar to.

    ``every_criterion``: a criterion that no key point chose also judges the key point closest to it (which
    stays with its own criterion too), so a criterion's level rests on points of the rubric and never on the
    rest of the answer alone."""
    if not criteria or not key_points:
        return {}
    if len(criteria) == 1:
        return {criteria[0].name: list(key_points)}
    crit_vecs = enc.sentences([f"{c.name}: {c.levels[4]}" for c in criteria])
    kp_vecs = enc.sentences(key_points)
    sims = kp_vecs @ crit_vecs.T
    best = sims.argmax(axis=1)
    out: dict[str, list[str]] = {}
    for kp, i in zip(key_points, best, strict=True):
        out.setdefault(criteria[int(i)].name, []).append(kp)
    if every_criterion:
        for j, c in enumerate(criteria):
            out.setdefault(c.name, [key_points[int(sims[:, j].argmax())]])
    return out


def criteria_scores(
    enc: TextEncoder, spec: RubricSpec, cov: CoverageResult, c: float, llm: LLMGrading, kp: KeyPoints
) -> list[CriterionScore]:
    """One score per criterion: the judge's (capped) level when it ran, else calibrated coverage."""
    assignment = assign_key_points(
        enc, spec.criteria, [m.key_point for m in cov.matches], every_criterion=True
    )
    fraction = kp.fractions or {m.key_point: m.fraction for m in cov.matches}
    # A key point the answer misses adds nothing to its criterion, however close its words came: a criterion
    # whose points are all missed is not "met" on the strength of the rest of the answer.
    fraction = {k: f if k in kp.covered else 0.0 for k, f in fraction.items()}
    judged_by_name = {jc.criterion: jc for jc in llm.judged.criteria} if llm.judged else {}
    quotes = llm.quotes
    support = max(c, quotes.level if quotes else 0.0)
    out: list[CriterionScore] = []
    for crit in spec.criteria:
        points = assignment.get(crit.name, [])
        ev = list(dict.fromkeys(kp.evidence[k] for k in points if k in kp.evidence))
        offline = c
        if points:
            own = 4.0 * float(np.mean([fraction[k] for k in points]))
            if quotes:
                own = (own + 4.0 * sum(1 for k in points if quotes.quotes.get(k)) / len(points)) / 2
            offline = 0.5 * c + 0.5 * own
        jc = judged_by_name.get(crit.name)
        level, method = offline, "quote-extraction" if quotes else "coverage"
        if jc is not None:
            level = (min(float(jc.level), support + 1.0) + offline) / 2
            ev = list(dict.fromkeys([*jc.evidence, *ev]))
            method = "llm-judge"
        out.append(
            CriterionScore(
                criterion=crit.name,
                level=int(min(4, max(0, round(level)))),
                evidence=ev[:MAX_EVIDENCE],
                missing=[k for k in points if k in kp.missed],
                method=method,  # type: ignore[arg-type]
            )
        )
    return out


# -- caps ------------------------------------------------------------------------------------------------


def _capped(
    cs: CriterionScore, status: Status, reason: str, level: int = 0, **more: object
) -> CriterionScore:
    return cs.model_copy(update={"level": level, "evidence": [], "status": status, "reason": reason, **more})


def _status(
    cs: CriterionScore, hits: list[ContradictionHit], off_topic: bool, answered: bool
) -> CriterionScore:
    """One criterion's status and the sentence that says why, capped for what the answer got wrong."""
    if cs.method == "code-tests":
        ok = cs.level >= 3
        reason = "the sandboxed tests pass" if ok else "the sandboxed tests do not all pass"
        return cs.model_copy(update={"status": "met" if ok else "missing", "reason": reason})
    hit = next((h for h in hits if h.criterion in (None, cs.criterion)), None)
    if not answered:
        return _capped(cs, "missing", "no answer was given")
    if off_topic:
        return _capped(cs, "off-topic", "the answer is about something other than this question")
    if hit is not None:
        return _capped(
            cs,
            "contradicted",
            hit.said if isinstance(hit, FindingHit) else f"contradicted: the answer says {hit.claim}",
            min(cs.level, CONTRADICTED_CRITERION_MAX),
            evidence=[e for e in cs.evidence if e != hit.sentence],
            contradicted_by=hit.sentence or None,
        )
    status: Status = "met" if cs.level >= 3 else "partial" if cs.level >= 2 or cs.evidence else "missing"
    if status == "met":
        reason = "met" + (f": \u201c{cs.evidence[0]}\u201d" if cs.evidence else "")
    elif cs.missing:
        reason = f"{status}: missing {'; '.join(cs.missing[:2])}"
    else:
        reason = f"{status}: the answer stays general on this point"
    return cs.model_copy(update={"status": status, "reason": reason})


def truth_caps(
    scores: list[CriterionScore], hits: list[ContradictionHit], off_topic: bool, answered: bool
) -> list[CriterionScore]:
    """Cap criteria touched by a classic wrong claim, zero everything off-topic, and say why per criterion."""
    return [_status(cs, hits, off_topic, answered) for cs in scores]


@dataclass
class CriteriaCaps(Stage):
    """The criteria after the truth caps, and whether the answer now counts as off-topic (lists only)."""

    criteria: list[CriterionScore] = field(default_factory=list)
    off_topic: bool = False
    caps: list[Cap] = field(default_factory=list)  # the lists-only cap, also in ``notes``


def cap_criteria(
    scores: list[CriterionScore],
    con: Contradictions,
    cov: Coverage,
    rel: Relevance,
    seen: ScreenedAnswers,
    passed: bool | None,
) -> CriteriaCaps:
    """Truth caps per criterion; an answer that only lists terms scores like an off-topic one; the sandbox's
    verdict joins as its own criterion."""
    out = CriteriaCaps(
        criteria=truth_caps(scores, con.hits, rel.off_topic, seen.answered), off_topic=rel.off_topic
    )
    if cov.only_lists:
        out.off_topic = True
        out.caps.append(
            Cap(
                kind="lists-only",
                at=OFF_TOPIC_MAX,
                note=f"capped at {OFF_TOPIC_MAX}: the answer only lists terms or figures",
            )
        )
        out.notes.append(out.caps[-1].note)
        why = "missing: the answer lists terms or figures without explaining any of them"
        out.criteria = [
            cs if cs.method == "code-tests" else _capped(cs, "missing", why) for cs in out.criteria
        ]
    if passed is not None:
        out.criteria.append(
            CriterionScore(
                criterion="correctness (tests)",
                level=4 if passed else 0,
                evidence=[],
                missing=[] if passed else ["the sandboxed tests do not all pass"],
                method="code-tests",
            )
        )
    return out


def caps(
    overall: float,
    *,
    wrong_claim: bool,
    answered: bool,
    off_topic: bool,
    passed: bool | None,
    rel: Relevance,
    wrong_only: Relevance | None = None,
    no_episode: bool = False,
) -> tuple[float, list[Cap]]:
    """The question's caps: a classic wrong claim, no episode where one real time was asked for, no answer,
    off-topic, or partly about the question; the overall under them, and those that held it down with why (an
    empty or off-topic answer's own ceiling is told by its criteria instead).

    ``wrong_only``: the relevance rules applied as if the answer asserted no wrong claim. Being wrong never
    scores above being about something else: an answer that is about the question only through what it gets
    wrong (off-topic by those rules, nothing stated right) keeps the off-topic cap, reported as the wrong claim.
    """
    held: list[Cap] = []
    if wrong_claim:
        overall = min(overall, CONTRADICTED_ANSWER_MAX)
        held.append(
            Cap(
                kind="wrong-claim",
                at=CONTRADICTED_ANSWER_MAX,
                note=f"capped at {CONTRADICTED_ANSWER_MAX}: the answer asserts a classic wrong claim",
            )
        )
        if (
            wrong_only is not None
            and wrong_only.off_topic
            and passed is None
            and overall > wrong_only.off_topic_max
        ):
            overall = wrong_only.off_topic_max
            held.append(
                Cap(
                    kind="off-topic",
                    at=overall,
                    note=f"capped at {overall:g}: apart from the wrong claim the answer is not about this question "
                    f"({wrong_only.reason})",
                )
            )
    if no_episode and answered and overall > NO_EPISODE_MAX:
        overall = NO_EPISODE_MAX
        held.append(
            Cap(
                kind="no-episode",
                at=NO_EPISODE_MAX,
                note=f"capped at {NO_EPISODE_MAX}: a real time was asked for, and the answers tell none (a "
                "principle, a habit or a plan instead)",
            )
        )
    if not answered:
        overall = 0.0 if passed is None else min(overall, 2.0)
    elif off_topic and passed is None:
        overall = min(overall, rel.off_topic_max if rel.off_topic else OFF_TOPIC_MAX)
    else:
        cap = rel.cap()
        if min(overall, 4.0) > cap:  # a push bonus past 4 is not a relevance cap
            gap = "n/a" if rel.gap is None else f"{rel.gap:.2f}"
            held.append(
                Cap(
                    kind="relevance",
                    at=round(cap, 2),
                    note=f"relevance {rel.value:.2f}, gap to the closest other question {gap}: capped at {cap:.2f} "
                    "(little of it is about this question)",
                )
            )
            overall = cap
        if passed and off_topic:
            overall = max(overall, 2.0)  # passing tests stay the score of record for correctness
    return min(4.0, max(0.0, overall)), held


# -- why depth and the push step -------------------------------------------------------------------------


def answered_well(step: CoverageResult, points: Sequence[str]) -> bool:
    """A why level or a push step is answered well from WELL_ANSWERED coverage or half its points covered."""
    return step.level >= WELL_ANSWERED or len(step.covered) * 2 >= len(points)


def depth(
    enc: TextEncoder,
    cal: Calibration,
    spec: RubricSpec,
    seen: ScreenedAnswers,
    hints: Sequence[int],
    found: Findings | None = None,
) -> tuple[int, list[str]]:
    """Why levels answered well without a hint (at most 2), with a note per level answered.

    With trusted probe findings (``found``), a why level with a key point the probes find contradicted is
    not answered well, and a key point covered only through shared vocabulary (its probes: not stated)
    counts for :data:`VOCABULARY_ONLY_CREDIT` of a point and of its share of the level, as in the main answer.
    """
    notes: list[str] = []
    total = 0
    for level, step in enumerate(spec.why_steps[:2], start=1):
        text = seen.why[level - 1]
        if not text or not text.strip():
            continue
        got = score_coverage(enc, text, step.key_points, step.ask, cal)
        unaided = level not in hints
        notes.append(
            f"why level {level}: coverage {got.level:.2f}/4, {len(got.covered)}/{len(step.key_points)}"
            + ("" if unaided else " (answered after a hint: no depth credit)")
        )
        read = found.why.get(level, {}) if found is not None and found.acting else {}
        if any(v == "contradicted" for v in read.values()):
            notes.append(f"why level {level}: the probes find a key point contradicted (not answered well)")
            continue
        vocab = [k for k in got.covered if read.get(k) == "absent"]
        if vocab:
            kept = vocabulary_factor(got, Findings(acting=True, vocabulary_only=vocab))
            got = CoverageResult(got.level * kept, got.fraction, got.matches, got.features)
            points = len(got.covered) - (1.0 - VOCABULARY_ONLY_CREDIT) * len(vocab)
            well = got.level >= WELL_ANSWERED or points * 2 >= len(step.key_points)
            notes.append(f"why level {level}: {len(vocab)} key point(s) only in shared vocabulary")
            total += int(well and unaided)
            continue
        total += int(answered_well(got, step.key_points) and unaided)
    return total, notes


def push_bonus(kind: str, step: CoverageResult, points: Sequence[str], capped: bool) -> Adjustment:
    """What the answer to a push step adds to the overall (scorer docstring): ``PUSH_BONUS_MAX * coverage / 4``
    when answered well and the question is not capped for a wrong claim, off-topic or empty; else nothing."""
    seen = f"push ({kind}): coverage {step.level:.2f}/4, {len(step.covered)}/{len(points)} points"
    if capped:
        return Adjustment(kind="push", level=3, delta=0.0, note=f"{seen}: no bonus on a capped answer")
    if not answered_well(step, points):
        return Adjustment(kind="push", level=3, delta=0.0, note=f"{seen}: not enough for a bonus")
    bonus = round(PUSH_BONUS_MAX * min(4.0, max(0.0, step.level)) / 4.0, 2)
    return Adjustment(kind="push", level=3, delta=bonus, note=f"{seen}: +{bonus:.2f}")


def push(
    enc: TextEncoder, cal: Calibration, step: StepSpec | None, answer: str | None, capped: bool
) -> Adjustment | None:
    """The push step's adjustment, when the question has one and it was answered."""
    if step is None or not answer or not answer.strip():
        return None
    got = score_coverage(enc, answer, step.key_points, step.ask, cal)
    return push_bonus(step.kind, got, step.key_points, capped)


# -- hints -----------------------------------------------------------------------------------------------


def _where(level: int) -> str:
    return "the main question" if level == 0 else f"why {level}" if level <= 2 else "the push step"


def hint_costs(hints: Sequence[int], overall: float) -> list[Adjustment]:
    """One adjustment per graded hint, in the order given: ``HINT_COST`` each, ``HINT_COST_MAX`` in all, and
    never more than the ``overall`` (after every cap) they are taken from."""
    budget, floor = HINT_COST_MAX, max(0.0, overall)
    out: list[Adjustment] = []
    for level in hints:
        cost = round(min(HINT_COST, budget, floor), 2)
        why = ""
        if cost < HINT_COST:
            why = (
                f" (hints cost at most {HINT_COST_MAX:.2f} per question)"
                if budget < min(HINT_COST, floor)
                else " (the score cannot go below 0)"
            )
        budget, floor = budget - cost, floor - cost
        out.append(
            Adjustment(
                kind="hint",
                level=min(3, max(0, int(level))),
                delta=-cost,
                note=f"hint given at {_where(int(level))}: -{cost:.2f}{why}",
            )
        )
    return out


def hints(given: Sequence[int], overall: float) -> tuple[list[Adjustment], float]:
    """The hints' costs and the overall after them."""
    costs = hint_costs(given, overall)
    return costs, overall + sum(a.delta for a in costs)


# -- verdicts --------------------------------------------------------------------------------------------


def key_point_verdicts(
    enc: TextEncoder,
    cov: CoverageResult,
    hits: list[ContradictionHit],
    covered: list[str],
    key_points: list[str],
    criteria: list[Criterion],
    off_topic: bool,
) -> list[KeyPointVerdict]:
    """Offline per-key-point verdicts: stated (covered), contradicted (a classic wrong claim against the
    key point closest to it) or absent."""
    fraction = {m.key_point: min(1.0, max(0.0, m.fraction)) for m in cov.matches}
    best = {m.key_point: m.best_sentence for m in cov.matches}
    contradicted: dict[str, ContradictionHit] = {}
    if hits and key_points and not off_topic:
        assignment = assign_key_points(enc, criteria, key_points) if criteria else {}
        kp_vecs = enc.sentences(key_points)
        for h in hits:
            pool = assignment.get(h.criterion or "", key_points) or key_points
            idx = [key_points.index(k) for k in pool]
            sims = kp_vecs[idx] @ enc.sentences([h.claim])[0]
            contradicted.setdefault(pool[int(np.argmax(sims))], h)
    out: list[KeyPointVerdict] = []
    for k in key_points:
        f = fraction.get(k, 0.0)
        if k in contradicted:
            v = KeyPointVerdict(
                key_point=k,
                verdict="contradicted",
                confidence=0.9,
                quote=contradicted[k].sentence,
                method="offline",
            )
        elif k in covered:
            v = KeyPointVerdict(
                key_point=k, verdict="stated", confidence=round(f, 3), quote=best.get(k), method="offline"
            )
        else:
            v = KeyPointVerdict(key_point=k, verdict="absent", confidence=round(1.0 - f, 3), method="offline")
        out.append(v)
    return out
