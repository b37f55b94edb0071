"""The rubric scorer: deterministic checks + calibrated coverage, optionally quote extraction and an LLM judge.

How the methods combine (every score's ``notes`` spell out the numbers):

- coverage (offline, calibrated against human grades) gives the answer's level ``c``;
- deterministic checks (numbers with tolerances, required facts) pass a fraction ``k``; with checks the
  discussion level is ``0.75 * c + 0.25 * 4k``;
- with a judge model: quote extraction (verified quotes per key point) gives ``q`` and the rubric judge ``j``
  (median of samples); the judge may not exceed what the verified evidence supports by more than one level
  (``j <= max(c, q) + 1``), so a judge talked into full marks cannot carry the score alone; ``c``, ``q`` and
  ``j`` are averaged;
- a coding verdict from the sandbox is the score of record for correctness: half of the overall;
- truth caps (:mod:`interviewer.scoring.claims`): an answer that asserts one of the rubric's classic wrong
  claims has the criterion it touches capped at level 1 (every criterion when the claim names none) and the
  question at 1.5, and its asserting sentence is never quoted as evidence; an answer that is not about the
  question scores 0 when the relative rules decide it (nearer another bank question than its own, or meeting
  nothing of its rubric: every criterion is 0) and at most 0.5 when only its low similarity to the question
  and the rubric does; an empty one scores 0; an answer that is about the question only through a wrong claim
  (off-topic by the relevance rules otherwise, nothing stated right) keeps that off-topic cap, reported as the
  wrong claim: being wrong never scores above being about something else;
- a question that asks for one real past episode (``Question.episode``: "tell me about a time ...") is capped
  at ``NO_EPISODE_MAX`` (1.5) when none of its answers tells one (:mod:`interviewer.scoring.episode`: a
  principle, a habit or a plan in the conditional where a time was asked for), as its rubric scores "no real
  episode" at the bottom;
- reading probes (with a reader: :class:`~interviewer.scoring.probe_reader.ProbeReader` on a model, or any
  :data:`~interviewer.scoring.stages.Reader`): a model answers each key point's probes from the candidate's
  text and the rubric judges the readings (:mod:`interviewer.scoring.reader`). Per key point, a probe that
  contradicts it wins (unless another probe finds the true thing in the same sentence: then nothing is
  decided), else one that states it. The findings act only when the reader's measured agreement (its
  ``trust``, from ``interviewer calibrate --reader``) is at least ``MIN_READER_TRUST``; otherwise, or never
  measured, they are noted and change nothing. Acting, a contradicted key point caps its criterion at level
  1 and the question at 1.5 like a classic wrong claim, and the criterion says "you said \u201c<the
  candidate's sentence>\u201d; in fact: <what the probe holds true>"; a key point coverage credits (shared
  vocabulary) while the reader itself answers "not stated" to every probe of it keeps
  ``VOCABULARY_ONLY_CREDIT`` (half) of its share of the level, when one of those probes is of a kind the
  reader is trusted on at ``MIN_READER_TRUST`` by itself (a probe whose askings disagree, or whose
  reading the rubric does not judge, is undecided and halves nothing); a stated or contradicted key point
  means the answer is about the question, so neither the off-topic rule nor the relevance cap applies; on a
  why level, a contradicted key point means the level is not answered well and vocabulary-only key points
  count half;
- graded against a reference answer alone (:attr:`~interviewer.scoring.spec.RubricSpec.reference_only`), only the
  absolute relevance rule calls an answer off-topic, an answer of at most ``TERSE_WORDS`` content words is
  scored by coverage alone, and an answer that is one list of terms is scored like any sentence;
- the why levels (``why1``, ``why2`` of :class:`~interviewer.scoring.spec.Answers`) count in ``why_depth``: a level is answered well from a
  coverage of its authored key points of ``WELL_ANSWERED`` or half its points covered.

What the interviewer did on the question comes last, as :class:`~interviewer.scoring.models.Adjustment`
entries, also written to the notes (the rule lives in one place only: :func:`~interviewer.scoring.stages.push_bonus` and
:func:`~interviewer.scoring.stages.hint_costs`):

- a push step (``push``, the candidate's answer to the first authored ``Question.push`` step, the one the
  interviewer asks) is scored like a why level, against the push step's key points. Answered well, it adds
  ``PUSH_BONUS_MAX * coverage / 4`` (at most 0.5) to the overall, before the relevance cap; it never lifts an
  answer capped for a classic wrong claim, an off-topic or an empty answer, and a poor push answer adds
  nothing (it lowers the score only by asserting a classic wrong claim, which caps it like any answer does);
- every graded hint (``hints``: the level each was given at, 0 the main question, 1-2 a why level) costs
  ``HINT_COST`` (0.5) off the overall, at most ``HINT_COST_MAX`` (1.0) per question, after every cap and never
  below 0, so a hinted strong answer (3.8 - 0.5) still beats a weak unhinted one; a why level answered only
  after a hint earns no why-depth credit (depth counts the levels answered well unaided).

The candidate's text first goes through :func:`interviewer.scoring.guard.screen`, which drops passages
addressed to the grader; the score notes how many.

Each rule is a stage in :mod:`interviewer.scoring.stages` over a typed :class:`~interviewer.scoring.spec.RubricSpec`
and named :class:`~interviewer.scoring.spec.Answers`; :meth:`RubricScorer.score_spec` is their composition.
Grading files of answers (with or without the truth judge) is :mod:`interviewer.scoring.batch`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from interviewer.content.models import Question
from interviewer.embeddings import Embedder, default_embedder
from interviewer.native import native_call
from interviewer.scoring import stages
from interviewer.scoring.claims import ContradictionHit, explained_text
from interviewer.scoring.coverage import Calibration, TextEncoder, load_calibration, score_coverage
from interviewer.scoring.episode import tells_episode
from interviewer.scoring.guard import screen
from interviewer.scoring.models import KeyPointVerdict, QuestionScore
from interviewer.scoring.spec import Answers, RubricSpec
from interviewer.scoring.stages import (
    CONTRADICTED_ANSWER_MAX,
    CONTRADICTED_CRITERION_MAX,
    ELSEWHERE_MAX,
    GAP_FROM,
    GAP_OFF_TOPIC,
    HINT_COST,
    HINT_COST_MAX,
    MAX_EVIDENCE,
    NO_EPISODE_MAX,
    OFF_TOPIC_BELOW,
    OFF_TOPIC_MAX,
    PUSH_BONUS_MAX,
    RELEVANT_FROM,
    STORY_ROUNDS,
    UNMET_OFF_TOPIC_BELOW,
    WELL_ANSWERED,
    Reader,
    hint_costs,
    merge_verdicts,
    push_bonus,
    stated_probability,
)

__all__ = [  # the scoring rules' public names live in stages.py; these are re-exported for callers
    "CONTRADICTED_ANSWER_MAX",
    "CONTRADICTED_CRITERION_MAX",
    "ELSEWHERE_MAX",
    "GAP_FROM",
    "GAP_OFF_TOPIC",
    "HINT_COST",
    "HINT_COST_MAX",
    "MAX_EVIDENCE",
    "NO_EPISODE_MAX",
    "OFF_TOPIC_BELOW",
    "OFF_TOPIC_MAX",
    "PUSH_BONUS_MAX",
    "RELEVANT_FROM",
    "STORY_ROUNDS",
    "UNMET_OFF_TOPIC_BELOW",
    "WELL_ANSWERED",
    "Answers",
    "Reader",
    "RubricScorer",
    "RubricSpec",
    "grade_one",
    "hint_costs",
    "merge_verdicts",
    "push_bonus",
    "stated_probability",
]


class RubricScorer:
    """Scores a question's answers against its rubric; constructing it does no I/O."""

    def __init__(
        self,
        embedder: Embedder | None = None,
        judge_model: Any = None,
        use_judge: bool = False,
        *,
        calibration: Calibration | None = None,
        judge_samples: int = 3,
        use_quotes: bool = True,
        quote_min_similarity: float = 0.5,
        neighbours: Sequence[Question] | None = None,
        judge_weight: float = 0.5,
        reader: Reader | None = None,
        reader_trust: float | stages.ReaderTrust | None = None,
    ) -> None:
        self._embedder = embedder
        self._enc: TextEncoder | None = None
        self.judge_model = judge_model
        self.use_judge = use_judge and judge_model is not None
        self.use_quotes = use_quotes
        self.judge_samples = judge_samples
        self.quote_min_similarity = quote_min_similarity  # see stages.relevant_quotes
        self._calibration = calibration
        # How much a truth judge's per-key-point verdicts count against the offline ones (see merge_verdicts).
        self.judge_weight = judge_weight
        self._neighbours = stages.Neighbours(neighbours)
        self.reader = reader  # answers the questions' reading probes (none: no findings)
        # The reader model's measured agreement (reader_trust.load_trust) when the reader does not carry its
        # own ``trust``: findings act on the score only from MIN_READER_TRUST (see the module docstring).
        self.reader_trust = reader_trust
        # The listener reads every answer through off_topic and wrong_claims: each question's spec is built
        # once per (id, with the model answer as reference), and kept with the Question it came from so a
        # different Question under the same id (an edited or custom one) gets its own.
        self._specs: dict[tuple[str, bool], tuple[Question, RubricSpec]] = {}

    @property
    def encoder(self) -> TextEncoder:
        if self._enc is None:
            self._enc = TextEncoder(self._embedder or default_embedder())
        return self._enc

    @property
    def calibration(self) -> Calibration:
        if self._calibration is None:
            self._calibration = load_calibration()
        return self._calibration

    @property
    def _stories(self) -> set[str]:
        return self._neighbours.stories

    def _spec(self, question: Question, *, reference: bool = False) -> RubricSpec:
        """``question``'s spec (with its model answer as the reference when ``reference``), built once."""
        key = (question.id, reference)
        held = self._specs.get(key)
        if held is not None and held[0] is question:
            return held[1]
        spec = RubricSpec.from_question(question, reference=question.model_answer if reference else None)
        self._specs[key] = (question, spec)
        return spec

    # ------------------------------------------------------------------------------------------------
    @native_call()  # embeddings and NumPy on worker threads: not while the interpreter finalizes
    def score(
        self,
        question: Question,
        answers: Sequence[str] | Answers,
        passed: bool | None = None,
        judged: list[KeyPointVerdict] | None = None,
        hints: Sequence[int] = (),
        reader: Reader | None = None,
    ) -> QuestionScore:
        """Score ``answers`` against ``question``'s rubric, offline, merging a truth judge's verdicts if given.

        Args:
            question: the bank question (key points, criteria, checks, contradictions, push steps).
            answers: named :class:`Answers`, or the positional form [initial, why 1, why 2, push] (missing
                levels are fine).
            passed: the sandbox's verdict for a coding answer (None: not a coding answer).
            judged: per-key-point verdicts of a truth judge for the main answer (any subset of the key
                points); merged with the offline verdicts by :func:`merge_verdicts` at ``judge_weight``. A key
                point the merge calls contradicted caps its criterion at level 1 and the question at 1.5, like
                a rubric contradiction.
            hints: the level (0 main, 1-2 why) of each graded hint the interviewer gave on this question; each
                costs points (module docstring).
            reader: reads the question's probes off the answers for this call (default: the scorer's own);
                its ``trust`` attribute, when it has one, is the model's measured reading agreement.

        Returns:
            The question's score; ``verdicts`` holds one merged verdict per key point, in rubric order.
        """
        named = answers if isinstance(answers, Answers) else Answers.from_list(answers)
        return self.score_spec(RubricSpec.from_question(question), named, passed, judged, hints, reader)

    @native_call()
    def warm(self) -> None:
        """Load the sentence model and embed the bank's questions now (about 5 s), not on a candidate's answer."""
        self._neighbours.warm(self.encoder)
        self.encoder.sentences(["warm"])

    @native_call()
    def off_topic(self, question: Question, answer: str) -> str | None:
        """Why ``answer`` is not about ``question`` (None when it is), by the same rules as :meth:`score`.

        Offline (MiniLM, the bank's other questions, the rubric's checks): the interviewer asks it before a
        follow-up, so it redirects exactly the answers the report will call off-topic. An answer asserting one
        of the question's classic wrong claims is never off-topic: it is about the question, and wrong.
        """
        main = screen(answer or "").text
        if not main.strip():
            return None
        spec = self._spec(question, reference=True)
        if self._wrong_claims(spec, main):
            return None  # one of this question's classic wrong claims: to challenge, not to redirect
        explained, _ = explained_text(main)
        cov = score_coverage(
            self.encoder, explained, spec.key_points, spec.question_text, self.calibration, spec.reference
        )
        chk = stages.checks(spec, main)
        gap = self._neighbours.gap(self.encoder, spec, main)
        covered = any(m.covered for m in cov.matches)
        met = covered or any(ch.passed for ch in chk.results)
        return stages.off_topic_reason(
            stages.similarity(cov), gap, met=met, covered=covered, story=spec.story
        )

    def wrong_claims(self, question: Question, answer: str) -> list[ContradictionHit]:
        """The question's classic wrong claims that ``answer`` asserts, in an authored phrasing (the clause reader)
        or in other words (:mod:`interviewer.scoring.paraphrase`): what :meth:`score` caps on, so the interviewer
        challenges exactly what the report will hold against the candidate. Offline, MiniLM only."""
        return self._wrong_claims(self._spec(question), screen(answer or "").text)

    def _wrong_claims(self, spec: RubricSpec, text: str) -> list[ContradictionHit]:
        return stages.wrong_claims(self.encoder, spec, text)

    _off_topic_reason = staticmethod(stages.off_topic_reason)

    def score_spec(
        self,
        spec: RubricSpec,
        answers: Answers,
        passed: bool | None = None,
        judged: Sequence[KeyPointVerdict] | None = None,
        hints: Sequence[int] = (),
        reader: Reader | None = None,
    ) -> QuestionScore:
        """Score named ``answers`` against a rubric spec: the stages of :mod:`interviewer.scoring.stages`,
        composed in the order their notes appear (see :meth:`score` for the arguments)."""
        enc, cal = self.encoder, self.calibration
        seen = stages.screen_answers(answers)
        cov = stages.coverage(enc, cal, spec, seen)
        con = stages.contradictions(enc, spec, seen, cov, judged, self.judge_weight)
        gap = self._neighbours.gap(enc, spec, seen.main) if seen.answered else None
        chk = stages.checks(spec, seen.main)
        llm = self._llm_grading(spec, seen)
        reader = self.reader if reader is None else reader
        reads = stages.readings(spec, seen, reader)
        trust = getattr(reader, "trust", None)
        fnd = stages.findings(enc, spec, reads, cov.result, self.reader_trust if trust is None else trust)
        con.hits += fnd.hits
        con.level *= stages.vocabulary_factor(cov.result, fnd)
        level = stages.calibration(con.level, llm, chk, passed)
        results = chk.results + ([level.code] if level.code else [])
        stated = bool(con.merged and any(v.verdict == "stated" for v in con.merged))
        covered = (
            stated or bool(llm.quotes and llm.quotes.covered) or any(m.covered for m in cov.result.matches)
        )
        met = covered or any(ch.passed for ch in results)

        story_sim = stages.story_similarity(enc, spec, cov.explained) if seen.answered else 0.0

        def relevance(exempt: bool) -> stages.Relevance:
            return stages.relevance(
                cov.result,
                gap,
                exempt=exempt,
                covered=covered,
                met=met,
                reference_only=spec.reference_only,
                terse=stages.terse(seen.main),
                story=spec.story,
                also=story_sim,
            )

        rel = relevance(exempt=not seen.answered or con.claims_wrong or fnd.about_question)
        # Judged again without the wrong claim's exemption: an answer about the question only through a wrong
        # claim, stating nothing right, keeps the off-topic cap.
        wrong_only = None
        if seen.answered and (con.claims_wrong or fnd.about_question) and not fnd.states_a_point:
            wrong_only = relevance(exempt=False)
        kps = stages.with_findings(
            stages.key_points(spec, cov.result, con, llm.quotes, rel.off_topic), cov.result, fnd
        )
        crit = stages.cap_criteria(
            stages.criteria_scores(enc, spec, cov.result, con.level, llm, kps), con, cov, rel, seen, passed
        )
        depth, depth_notes = stages.depth(enc, cal, spec, seen, hints, fnd)
        capped = bool(con.hits) or crit.off_topic or not seen.answered
        pushed = stages.push(enc, cal, spec.push, seen.push, capped)
        adjustments = [pushed] if pushed else []
        # The push bonus comes before the caps: no lift past a relevance cap either.
        overall, held = stages.caps(
            level.overall + (pushed.delta if pushed else 0.0),
            wrong_claim=bool(con.hits),
            answered=seen.answered,
            off_topic=crit.off_topic,
            passed=passed,
            # the probes found the answer about this question: no relevance cap either
            rel=replace(rel, value=max(rel.value, RELEVANT_FROM), gap=None) if fnd.about_question else rel,
            wrong_only=wrong_only,
            no_episode=spec.episode and not any(tells_episode(a) for a in seen.given),
        )
        costs, overall = stages.hints(hints, overall)
        adjustments += costs
        verdicts = stages.key_point_verdicts(
            enc, cov.result, con.hits, kps.covered, spec.key_points, spec.criteria, crit.off_topic
        )
        parts: list[stages.Stage] = [seen, cov, con, chk, llm, reads, fnd, level, rel, crit]
        return QuestionScore(
            question_id=spec.question_id,
            overall=round(min(4.0, max(0.0, overall)), 2),
            adjustments=adjustments,
            verdicts=stages.verdicts_with_findings(
                con.merged if con.merged is not None and not crit.off_topic else verdicts, fnd
            ),
            criteria=crit.criteria,
            checks=results,
            key_points_covered=kps.covered,
            key_points_missed=kps.missed,
            why_depth=depth,
            methods=list(dict.fromkeys(m for p in parts for m in p.methods)),
            notes=[n for p in parts for n in p.notes]
            + depth_notes
            + [c.note for c in held]
            + [a.note for a in adjustments],
            caps=crit.caps + held,
        )

    def _llm_grading(self, spec: RubricSpec, seen: stages.ScreenedAnswers) -> stages.LLMGrading:
        """Quotes and the rubric judge from the judge model, when there is one and an answer to grade."""
        if not (self.use_judge and seen.answered):
            return stages.LLMGrading()
        return stages.llm_grading(
            self.encoder,
            self.judge_model,
            spec,
            seen.main,
            use_quotes=self.use_quotes,
            samples=self.judge_samples,
            quote_min_similarity=self.quote_min_similarity,
        )

    # ------------------------------------------------------------------------------------------------
    def grade_one(
        self,
        question_text: str,
        answer: str,
        reference_answer: str | None = None,
        rubric: Any = None,
        judged: list[KeyPointVerdict] | None = None,
    ) -> dict[str, Any]:
        """Score any question given a reference answer or a rubric; a JSON-ready dict (score on 0-4)."""
        spec = RubricSpec.from_rubric(question_text, reference_answer, rubric)
        return self.grade_spec(spec, answer, judged=judged)

    def grade_spec(
        self,
        spec: RubricSpec,
        answer: str,
        judged: list[KeyPointVerdict] | None = None,
        reader: Reader | None = None,
    ) -> dict[str, Any]:
        """:meth:`grade_one` for a rubric spec (a bank question's, with its probes for ``reader``)."""
        result = self.score_spec(spec, Answers(answer), judged=judged, reader=reader)
        evidence = list(dict.fromkeys(e for cs in result.criteria for e in cs.evidence))
        return {
            "score": result.overall,
            "level": math.floor(result.overall + 0.5),
            "evidence": evidence,
            "key_points_covered": result.key_points_covered,
            "key_points_missed": result.key_points_missed,
            "criteria": [cs.model_dump() for cs in result.criteria],
            "checks": [ch.model_dump() for ch in result.checks],
            "methods": result.methods,
            "notes": result.notes,
        }


_default_scorer: RubricScorer | None = None


def grade_one(
    question_text: str, answer: str, reference_answer: str | None = None, rubric: Any = None
) -> dict[str, Any]:
    """Score one answer to any question, offline, with the packaged embedder (see RubricScorer.grade_one)."""
    global _default_scorer
    if _default_scorer is None:
        _default_scorer = RubricScorer()
    return _default_scorer.grade_one(question_text, answer, reference_answer, rubric)
