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
  question (low similarity to both the question and the rubric) is capped at 0.5, an empty one scores 0;
- the why levels (``answers[1]``, ``answers[2]``) count in ``why_depth``: a level is answered well from a
  coverage of its authored key points of ``WELL_ANSWERED`` or half its points covered.

What the interviewer did on the question (#12) comes last, as :class:`~interviewer.scoring.models.Adjustment`
entries, also written to the notes (the rule lives here only: :func:`push_bonus` and :func:`hint_costs`):

- a push step (``answers[3]``, the candidate's answer to the first authored ``Question.push`` step, the one the
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
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from pydantic import ValidationError

from interviewer.content.models import Contradiction, Criterion, FactCheck, NumericCheck, Question, Round
from interviewer.embeddings import Embedder, default_embedder
from interviewer.errors import InputError, ModelError
from interviewer.native import native_call
from interviewer.scoring.checks import run_checks
from interviewer.scoring.claims import ContradictionHit, explained_text, find_contradictions
from interviewer.scoring.coverage import (
    Calibration,
    CoverageResult,
    TextEncoder,
    load_calibration,
    score_coverage,
    split_sentences,
)
from interviewer.scoring.guard import screen
from interviewer.scoring.judge import QuoteResult, extract_quotes, run_judge
from interviewer.scoring.models import (
    Adjustment,
    CheckResult,
    CriterionScore,
    KeyPointVerdict,
    Method,
    QuestionScore,
    Status,
    Verdict,
)

WELL_ANSWERED = 2.5  # a why-level counts as answered well from this coverage level (of 4) up
MAX_EVIDENCE = 4
CONTRADICTED_CRITERION_MAX = 1  # a criterion touched by an asserted classic wrong claim
CONTRADICTED_ANSWER_MAX = 1.5  # the whole question when its answer asserts one
OFF_TOPIC_MAX = 0.5
HINT_COST = 0.5  # off the overall per graded hint (see the module docstring)
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
# Chosen on the trap set's dev questions only (the highest value that flags no dev strong, partial or wrong
# answer); the held-out figures are in BENCHMARKS.md.
UNMET_OFF_TOPIC_BELOW = 0.365
STORY_ROUNDS = frozenset({Round.BEHAVIORAL, Round.RECRUITER, Round.DEEP_DIVE})  # no relative relevance
_GENERIC = Criterion(
    name="correctness and coverage",
    levels={
        0: "Wrong or off-topic.",
        2: "Partly right; misses key points.",
        4: "Covers the key points correctly.",
    },
)


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
    ) -> None:
        self._embedder = embedder
        self._enc: TextEncoder | None = None
        self.judge_model = judge_model
        self.use_judge = use_judge and judge_model is not None
        self.use_quotes = use_quotes
        self.judge_samples = judge_samples
        # A verbatim quote must also be about its key point: the 1.5B model tends to copy the answer's
        # sentences in order, one per key point (MiniLM cosine: aligned quotes ~0.86, misaligned 0.2-0.4).
        self.quote_min_similarity = quote_min_similarity
        self._calibration = calibration
        # How much a truth judge's per-key-point verdicts count against the offline ones (see merge_verdicts).
        self.judge_weight = judge_weight
        # The bank's other questions, for relative relevance (is this an answer to a different question?).
        self._neighbours = list(neighbours or [])
        self._neighbour_vecs: np.ndarray | None = None
        # Stories: every "tell me about a time" answer resembles the other story questions, so closeness to
        # another of them says nothing (24 behavioral questions put strong stories 0.34-0.46 closer to a
        # sibling). Their off-topic rules are the absolute ones only.
        self._stories = {q.id for q in self._neighbours if q.round in STORY_ROUNDS}

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

    # ------------------------------------------------------------------------------------------------
    @native_call()  # embeddings and NumPy on worker threads: not while the interpreter finalizes
    def score(
        self,
        question: Question,
        answers: list[str],
        passed: bool | None = None,
        judged: list[KeyPointVerdict] | None = None,
        hints: Sequence[int] = (),
    ) -> QuestionScore:
        """Score ``answers`` against ``question``'s rubric, offline, merging a truth judge's verdicts if given.

        Args:
            question: the bank question (key points, criteria, checks, contradictions, push steps).
            answers: [0] the main answer, [1] why level 1, [2] why level 2, [3] the answer to the push step
                (missing levels are fine).
            passed: the sandbox's verdict for a coding answer (None: not a coding answer).
            judged: per-key-point verdicts of a truth judge for the main answer (any subset of the key
                points); merged with the offline verdicts by :func:`merge_verdicts` at ``judge_weight``. A key
                point the merge calls contradicted caps its criterion at level 1 and the question at 1.5, like
                a rubric contradiction.
            hints: the level (0 main, 1-2 why) of each graded hint the interviewer gave on this question; each
                costs points (module docstring).

        Returns:
            The question's score; ``verdicts`` holds one merged verdict per key point, in rubric order.
        """
        return self._score(
            question_id=question.id,
            question_text=question.question,
            key_points=list(question.key_points),
            criteria=list(question.criteria),
            numeric=list(question.numeric_checks),
            facts=list(question.fact_checks),
            contradictions=list(question.contradictions),
            answers=answers,
            why_steps=[(s.fallback + " " + s.target, list(s.key_points)) for s in question.why_chain],
            code_verdict_passed=passed,
            judged=judged,
            push_step=(question.push[0].kind, question.push[0].ask, list(question.push[0].key_points))
            if question.push
            else None,
            hints=list(hints),
        )

    @native_call()
    def warm(self) -> None:
        """Load the sentence model and embed the bank's questions now (about 5 s), not on a candidate's answer."""
        if self._neighbours and self._neighbour_vecs is None:
            self._neighbour_vecs = self.encoder.sentences(
                [_about(q.question, q.key_points) for q in self._neighbours]
            )
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
        if find_contradictions(main, list(question.contradictions)):
            return None  # one of this question's classic wrong claims: to challenge, not to redirect
        explained, _ = explained_text(main)
        cov = score_coverage(
            self.encoder,
            explained,
            list(question.key_points),
            question.question,
            self.calibration,
            question.model_answer,
        )
        checks = run_checks(
            main, list(question.numeric_checks), list(question.fact_checks), question.question
        )
        gap = self._relevance_gap(question.id, question.question, list(question.key_points), main)
        return self._off_topic_reason(
            _relevance(cov),
            gap,
            met=any(m.covered for m in cov.matches) or any(ch.passed for ch in checks),
            covered=any(m.covered for m in cov.matches),
        )

    @staticmethod
    def _off_topic_reason(relevance: float, gap: float | None, *, met: bool, covered: bool) -> str | None:
        """The off-topic rules in one place. ``covered``: a key point is covered; ``met``: that or a check."""
        if relevance < OFF_TOPIC_BELOW:
            return f"relevance {relevance:.2f} to this question"
        if gap is not None and gap >= GAP_OFF_TOPIC:
            return f"gap {gap:.2f} to another bank question"
        if gap is not None and gap >= GAP_FROM and not covered:
            # closer to another question than to this one, and none of this one's points
            return f"gap {gap:.2f} to another bank question and no key point covered"
        if relevance < UNMET_OFF_TOPIC_BELOW and not met:
            # about something near this question, but meets none of its rubric
            return f"relevance {relevance:.2f} and nothing of the rubric met"
        return None

    def _score(
        self,
        *,
        question_id: str,
        question_text: str,
        key_points: list[str],
        criteria: list[Criterion],
        numeric: list[NumericCheck],
        facts: list[FactCheck],
        answers: list[str],
        why_steps: list[tuple[str, list[str]]],
        code_verdict_passed: bool | None,
        reference: str | None = None,
        contradictions: list[Contradiction] | None = None,
        judged: list[KeyPointVerdict] | None = None,
        push_step: tuple[str, str, list[str]] | None = None,
        hints: Sequence[int] = (),
    ) -> QuestionScore:
        judge_verdicts = judged
        notes: list[str] = []
        methods: list[Method] = []
        screened = [screen(a or "") for a in answers] or [screen("")]
        removed = sum(len(s.removed) for s in screened)
        if removed:
            notes.append(f"ignored {removed} passage(s) addressed to the grader rather than answering")
        main = screened[0].text
        # Lists of terms or figures with nothing said about them, and repeated sentences, earn no coverage.
        explained, listed = explained_text(main)
        only_lists = bool(main.strip()) and not explained.strip()
        if listed:
            notes.append(
                f"no credit for {len(listed)} sentence(s) that only list terms or figures, or repeat: "
                + "; ".join(f"\u201c{x}\u201d" for x in listed[:3])
            )

        cov = score_coverage(self.encoder, explained, key_points, question_text, self.calibration, reference)
        if removed and screened[0].before_first and screened[0].before_first != main:
            # Once an answer starts talking to the grader, nothing after that point may raise its score.
            prefix = score_coverage(
                self.encoder,
                explained_text(screened[0].before_first)[0],
                key_points,
                question_text,
                self.calibration,
                reference,
            )
            if prefix.level < cov.level:
                cov = prefix
        methods.append("coverage")
        c = cov.level
        notes.append(f"coverage (calibrated on human grades): {c:.2f}/4")

        hits = find_contradictions("\n".join(sc.text for sc in screened), contradictions or [])
        # A rubric's classic wrong claim makes the answer about this question, whatever else it says.
        claims_wrong = bool(hits)
        merged: list[KeyPointVerdict] | None = None
        if judge_verdicts and main.strip() and key_points:
            pre = self._covered(cov, None, {h.sentence for h in hits})
            offline = self._verdicts(cov, hits, pre, key_points, criteria, False)
            merged = merge_verdicts(offline, judge_verdicts, self.judge_weight)
            judged_level = 4.0 * statistics.fmean(stated_probability(v) for v in merged)
            notes.append(
                f"truth judge: {sum(v.verdict == 'stated' for v in merged)}/{len(merged)} key points stated, "
                f"{sum(v.verdict == 'contradicted' for v in merged)} contradicted after merging "
                f"(weight {self.judge_weight:.2f}); level {judged_level:.2f}/4"
            )
            c = (1.0 - self.judge_weight) * c + self.judge_weight * judged_level
            methods.append("llm-judge")
            hits = hits + self._judge_hits(merged, hits, criteria, key_points)
        for h in hits:
            notes.append(f"asserts a classic wrong claim ({h.name}): \u201c{h.sentence}\u201d")
        relevance = _relevance(cov)
        gap = self._relevance_gap(question_id, question_text, key_points, main) if main.strip() else None

        checks: list[CheckResult] = (
            run_checks(main, numeric, facts, question_text) if (numeric or facts) else []
        )
        if checks:
            methods.append("deterministic")
            passed = sum(ch.passed for ch in checks)
            notes.append(f"checks passed: {passed}/{len(checks)}")

        quotes = None
        rubric_judged = None
        if self.use_judge and main.strip():
            try:
                if self.use_quotes:
                    quotes = self._relevant(
                        extract_quotes(self.judge_model, question_text, main, key_points), notes
                    )
                    methods.append("quote-extraction")
                    notes.append(
                        f"quote extraction: {len(quotes.covered)}/{len(key_points)} key points quoted"
                    )
                    if quotes.rejected:
                        notes.append(f"rejected {len(quotes.rejected)} quote(s) not found in the answer")
                rubric_judged = run_judge(
                    self.judge_model, question_text, main, criteria, key_points, samples=self.judge_samples
                )
                methods.append("llm-judge")
            except ModelError as e:
                notes.append(f"LLM grading unavailable, scored offline only: {e}")

        discussion = self._combine(
            c, quotes.level if quotes else None, rubric_judged.level if rubric_judged else None, notes
        )
        if checks:
            k = sum(ch.passed for ch in checks) / len(checks)
            discussion = 0.75 * discussion + 0.25 * 4.0 * k
        overall = discussion
        if code_verdict_passed is not None:
            methods.append("code-tests")
            checks.append(
                CheckResult(
                    name="code tests",
                    passed=code_verdict_passed,
                    expected="all tests pass",
                    found="passed" if code_verdict_passed else "failing tests",
                )
            )
            overall = 0.5 * (4.0 if code_verdict_passed else 0.0) + 0.5 * discussion

        stated = bool(merged and any(v.verdict == "stated" for v in merged)) or bool(
            quotes and quotes.covered
        )
        covered_any = stated or any(m.covered for m in cov.matches)
        reason = (
            self._off_topic_reason(
                relevance, gap, met=covered_any or any(ch.passed for ch in checks), covered=covered_any
            )
            if main.strip() and not claims_wrong
            else None
        )
        off_topic = reason is not None
        if reason is not None:
            notes.append(f"off-topic: {reason}")
        wrong_sentences = {h.sentence for h in hits if h.sentence}
        covered = self._covered(cov, quotes, wrong_sentences)
        fractions: dict[str, float] | None = None
        if merged is not None:
            covered = [v.key_point for v in merged if v.verdict == "stated"]
            fractions = {v.key_point: stated_probability(v) for v in merged}
        if off_topic:
            covered = []
        missed = [k for k in key_points if k not in covered]
        found = self._evidence(cov, quotes)
        if merged is not None:
            found.update({v.key_point: v.quote for v in merged if v.verdict == "stated" and v.quote})
        evidence_for = {k: e for k, e in found.items() if e not in wrong_sentences and k in covered}
        crit_scores = self._criteria(
            criteria, cov, rubric_judged, evidence_for, covered, missed, c, quotes, notes, fractions
        )
        crit_scores = self._truth_caps(crit_scores, hits, off_topic, bool(main.strip()))
        if only_lists:
            off_topic = True  # scored like an answer with nothing about this question in it
            notes.append(f"capped at {OFF_TOPIC_MAX}: the answer only lists terms or figures")
            crit_scores = [
                cs
                if cs.method == "code-tests"
                else cs.model_copy(
                    update={
                        "level": 0,
                        "evidence": [],
                        "status": "missing",
                        "reason": "missing: the answer lists terms or figures without explaining any of them",
                    }
                )
                for cs in crit_scores
            ]
        if code_verdict_passed is not None:
            crit_scores.append(
                CriterionScore(
                    criterion="correctness (tests)",
                    level=4 if code_verdict_passed else 0,
                    evidence=[],
                    missing=[] if code_verdict_passed else ["the sandboxed tests do not all pass"],
                    method="code-tests",
                )
            )

        depth = 0
        for level, (step_question, step_points) in enumerate(why_steps[:2], start=1):
            if len(screened) <= level or not screened[level].text.strip():
                continue
            step = score_coverage(
                self.encoder, screened[level].text, step_points, step_question, self.calibration
            )
            good = _answered_well(step, step_points)
            unaided = level not in hints
            notes.append(
                f"why level {level}: coverage {step.level:.2f}/4, {len(step.covered)}/{len(step_points)}"
                + ("" if unaided else " (answered after a hint: no depth credit)")
            )
            depth += int(good and unaided)
        adjustments: list[Adjustment] = []
        if push_step is not None and len(screened) > 3 and screened[3].text.strip():
            kind, ask, push_points = push_step
            pushed = score_coverage(self.encoder, screened[3].text, push_points, ask, self.calibration)
            adjustments.append(
                push_bonus(kind, pushed, push_points, bool(hits) or off_topic or not main.strip())
            )
            overall += adjustments[-1].delta  # before the caps below: no lift past a relevance cap either

        if hits:
            overall = min(overall, CONTRADICTED_ANSWER_MAX)
            notes.append(f"capped at {CONTRADICTED_ANSWER_MAX}: the answer asserts a classic wrong claim")
        if not main.strip():
            overall = 0.0 if code_verdict_passed is None else min(overall, 2.0)
        elif off_topic and code_verdict_passed is None:
            overall = min(overall, OFF_TOPIC_MAX)
        else:
            span = (relevance - OFF_TOPIC_BELOW) / (RELEVANT_FROM - OFF_TOPIC_BELOW)
            if gap is not None:
                span = min(span, (GAP_OFF_TOPIC - gap) / (GAP_OFF_TOPIC - GAP_FROM))
            cap = OFF_TOPIC_MAX + (4.0 - OFF_TOPIC_MAX) * min(1.0, max(0.0, span))
            if min(overall, 4.0) > cap:  # a push bonus past 4 is not a relevance cap
                notes.append(
                    f"relevance {relevance:.2f}, gap to the closest other question "
                    f"{'n/a' if gap is None else f'{gap:.2f}'}: capped at {cap:.2f} "
                    "(little of it is about this question)"
                )
                overall = cap
            if code_verdict_passed and off_topic:
                overall = max(overall, 2.0)  # passing tests stay the score of record for correctness
        overall = min(4.0, max(0.0, overall))
        adjustments += hint_costs(hints, overall)
        overall += sum(a.delta for a in adjustments if a.kind == "hint")
        notes.extend(a.note for a in adjustments)
        verdicts = self._verdicts(cov, hits, covered, key_points, criteria, off_topic)
        if merged is not None and not off_topic:
            verdicts = merged

        return QuestionScore(
            question_id=question_id,
            overall=round(min(4.0, max(0.0, overall)), 2),
            adjustments=adjustments,
            verdicts=verdicts,
            criteria=crit_scores,
            checks=checks,
            key_points_covered=covered,
            key_points_missed=missed,
            why_depth=depth,
            methods=list(dict.fromkeys(methods)),
            notes=notes,
        )

    def _relevance_gap(
        self, question_id: str, question_text: str, key_points: list[str], answer: str
    ) -> float | None:
        """How much closer the answer is to the best other bank question than to its own (None: no bank)."""
        others = [q for q in self._neighbours if q.id != question_id]
        if not others or question_id in self._stories:
            return None
        if self._neighbour_vecs is None:
            self._neighbour_vecs = self.encoder.sentences(
                [_about(q.question, q.key_points) for q in self._neighbours]
            )
        idx = [i for i, q in enumerate(self._neighbours) if q.id != question_id]
        own, a = self.encoder.sentences([_about(question_text, key_points), answer])
        return float((self._neighbour_vecs[idx] @ a).max() - own @ a)

    @staticmethod
    def _truth_caps(
        scores: list[CriterionScore], hits: list[ContradictionHit], off_topic: bool, answered: bool
    ) -> list[CriterionScore]:
        """Cap criteria touched by a classic wrong claim, zero everything off-topic, and say why per criterion."""
        out: list[CriterionScore] = []
        for cs in scores:
            if cs.method == "code-tests":
                status: Status = "met" if cs.level >= 3 else "missing"
                reason = (
                    "the sandboxed tests pass" if cs.level >= 3 else "the sandboxed tests do not all pass"
                )
                out.append(cs.model_copy(update={"status": status, "reason": reason}))
                continue
            hit = next((h for h in hits if h.criterion in (None, cs.criterion)), None)
            if not answered:
                out.append(
                    cs.model_copy(
                        update={
                            "level": 0,
                            "evidence": [],
                            "status": "missing",
                            "reason": "no answer was given",
                        }
                    )
                )
            elif off_topic:
                out.append(
                    cs.model_copy(
                        update={
                            "level": 0,
                            "evidence": [],
                            "status": "off-topic",
                            "reason": "the answer is about something other than this question",
                        }
                    )
                )
            elif hit is not None:
                out.append(
                    cs.model_copy(
                        update={
                            "level": min(cs.level, CONTRADICTED_CRITERION_MAX),
                            "evidence": [e for e in cs.evidence if e != hit.sentence],
                            "status": "contradicted",
                            "reason": f"contradicted: the answer says {hit.claim}",
                            "contradicted_by": hit.sentence,
                        }
                    )
                )
            else:
                status = "met" if cs.level >= 3 else "partial" if cs.level >= 2 or cs.evidence else "missing"
                if status == "met":
                    reason = "met" + (f": \u201c{cs.evidence[0]}\u201d" if cs.evidence else "")
                elif cs.missing:
                    reason = f"{status}: missing {'; '.join(cs.missing[:2])}"
                else:
                    reason = f"{status}: the answer stays general on this point"
                out.append(cs.model_copy(update={"status": status, "reason": reason}))
        return out

    def _verdicts(
        self,
        cov: CoverageResult,
        hits: list[ContradictionHit],
        covered: list[str],
        key_points: list[str],
        criteria: list[Criterion],
        off_topic: bool,
    ) -> list[KeyPointVerdict]:
        """Offline per-key-point verdicts: stated (covered), contradicted (a classic wrong claim against the
        key point closest to it) or absent."""
        fraction = {m.key_point: m.fraction for m in cov.matches}
        best = {m.key_point: m.best_sentence for m in cov.matches}
        contradicted: dict[str, ContradictionHit] = {}
        if hits and key_points and not off_topic:
            assignment = self._assign(criteria, key_points) if criteria else {}
            kp_vecs = self.encoder.sentences(key_points)
            for h in hits:
                pool = assignment.get(h.criterion or "", key_points) or key_points
                idx = [key_points.index(k) for k in pool]
                sims = kp_vecs[idx] @ self.encoder.sentences([h.claim])[0]
                contradicted.setdefault(pool[int(np.argmax(sims))], h)
        out: list[KeyPointVerdict] = []
        for k in key_points:
            if k in contradicted:
                out.append(
                    KeyPointVerdict(
                        key_point=k,
                        verdict="contradicted",
                        confidence=0.9,
                        quote=contradicted[k].sentence,
                        method="offline",
                    )
                )
            elif k in covered:
                out.append(
                    KeyPointVerdict(
                        key_point=k,
                        verdict="stated",
                        confidence=round(min(1.0, max(0.0, fraction.get(k, 0.0))), 3),
                        quote=best.get(k),
                        method="offline",
                    )
                )
            else:
                out.append(
                    KeyPointVerdict(
                        key_point=k,
                        verdict="absent",
                        confidence=round(1.0 - min(1.0, max(0.0, fraction.get(k, 0.0))), 3),
                        method="offline",
                    )
                )
        return out

    @staticmethod
    def _covered(cov: CoverageResult, quotes: Any, wrong_sentences: set[str]) -> list[str]:
        """Key points the offline signals count as covered (never by a sentence asserting a wrong claim)."""
        return [
            m.key_point
            for m in cov.matches
            if (m.covered and m.best_sentence not in wrong_sentences)
            or (quotes and quotes.quotes.get(m.key_point))
        ]

    def _judge_hits(
        self,
        merged: list[KeyPointVerdict],
        hits: list[ContradictionHit],
        criteria: list[Criterion],
        key_points: list[str],
    ) -> list[ContradictionHit]:
        """Key points the merged verdicts call contradicted (beyond the rubric's own contradictions), as hits
        on the criterion each key point belongs to, so they cap it like a classic wrong claim."""
        known = {h.sentence for h in hits}
        crit_of = {k: name for name, ks in self._assign(criteria, key_points).items() for k in ks}
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

    def _relevant(self, quotes: QuoteResult, notes: list[str]) -> QuoteResult:
        """Drop verified quotes that are not about their key point."""
        pairs = [(k, q) for k, q in quotes.quotes.items() if q]
        if not pairs:
            return quotes
        kp_vecs = self.encoder.sentences([k for k, _ in pairs])
        q_vecs = self.encoder.sentences([q for _, q in pairs])
        kept = dict(quotes.quotes)
        off = 0
        for (k, _), a, b in zip(pairs, kp_vecs, q_vecs, strict=True):
            if float(a @ b) < self.quote_min_similarity:
                kept[k] = None
                off += 1
        if off:
            notes.append(f"dropped {off} verbatim quote(s) that do not address their key point")
        return QuoteResult(kept, quotes.rejected)

    @staticmethod
    def _combine(c: float, q: float | None, j: float | None, notes: list[str]) -> float:
        parts = [c]
        if q is not None:
            parts.append(q)
        if j is not None:
            cap = max(parts) + 1.0
            if j > cap:
                notes.append(
                    f"LLM judge level {j:.2f} capped at {cap:.2f}: the verified evidence supports less"
                )
            parts.append(min(j, cap))
            notes.append(f"LLM judge (median of samples): {j:.2f}/4")
        return statistics.fmean(parts)

    @staticmethod
    def _evidence(cov: CoverageResult, quotes: Any) -> dict[str, str]:
        """Key point -> exact words of the candidate that cover it (verified quote first, else best sentence)."""
        out: dict[str, str] = {}
        for m in cov.matches:
            q = quotes.quotes.get(m.key_point) if quotes else None
            if q:
                out[m.key_point] = q
            elif m.covered and m.best_sentence:
                out[m.key_point] = m.best_sentence
        return out

    def _criteria(
        self,
        criteria: list[Criterion],
        cov: CoverageResult,
        judged: Any,
        evidence_for: dict[str, str],
        covered: list[str],
        missed: list[str],
        c: float,
        quotes: Any,
        notes: list[str],
        fractions: dict[str, float] | None = None,
    ) -> list[CriterionScore]:
        """One score per criterion: the judge's (capped) level when it ran, else calibrated coverage."""
        assignment = self._assign(criteria, [m.key_point for m in cov.matches])
        fraction = fractions or {m.key_point: m.fraction for m in cov.matches}
        judged_by_name = {jc.criterion: jc for jc in judged.criteria} if judged else {}
        support = max(c, quotes.level if quotes else 0.0)
        out: list[CriterionScore] = []
        for crit in criteria:
            points = assignment.get(crit.name, [])
            ev = list(dict.fromkeys(evidence_for[k] for k in points if k in evidence_for))
            if points:
                own = 4.0 * float(np.mean([fraction[k] for k in points]))
                if quotes:
                    own = (own + 4.0 * sum(1 for k in points if quotes.quotes.get(k)) / len(points)) / 2
                offline = 0.5 * c + 0.5 * own
            else:
                offline = c
            jc = judged_by_name.get(crit.name)
            if jc is not None:
                level = min(float(jc.level), support + 1.0)
                level = (level + offline) / 2
                ev = list(dict.fromkeys([*jc.evidence, *ev]))
                method: Method = "llm-judge"
            else:
                level = offline
                method = "quote-extraction" if quotes else "coverage"
            out.append(
                CriterionScore(
                    criterion=crit.name,
                    level=int(min(4, max(0, round(level)))),
                    evidence=ev[:MAX_EVIDENCE],
                    missing=[k for k in points if k in missed],
                    method=method,
                )
            )
        return out

    def _assign(self, criteria: list[Criterion], key_points: list[str]) -> dict[str, list[str]]:
        """Each key point goes to the criterion whose name and top anchor it is most similar to."""
        if not criteria or not key_points:
            return {}
        if len(criteria) == 1:
            return {criteria[0].name: list(key_points)}
        crit_vecs = self.encoder.sentences([f"{c.name}: {c.levels[4]}" for c in criteria])
        kp_vecs = self.encoder.sentences(key_points)
        best = (kp_vecs @ crit_vecs.T).argmax(axis=1)
        out: dict[str, list[str]] = {}
        for kp, i in zip(key_points, best, strict=True):
            out.setdefault(criteria[int(i)].name, []).append(kp)
        return out

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
        spec = _rubric_spec(question_text, reference_answer, rubric)
        result = self._score(answers=[answer], why_steps=[], code_verdict_passed=None, judged=judged, **spec)
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


_VERDICTS: tuple[Verdict, ...] = ("stated", "contradicted", "absent")


def _answered_well(step: CoverageResult, points: Sequence[str]) -> bool:
    """A why level or a push step is answered well from WELL_ANSWERED coverage or half its points covered."""
    return step.level >= WELL_ANSWERED or len(step.covered) * 2 >= len(points)


def push_bonus(kind: str, step: CoverageResult, points: Sequence[str], capped: bool) -> Adjustment:
    """What the answer to a push step adds to the overall (module docstring): ``PUSH_BONUS_MAX * coverage / 4``
    when answered well and the question is not capped for a wrong claim, off-topic or empty; else nothing."""
    seen = f"push ({kind}): coverage {step.level:.2f}/4, {len(step.covered)}/{len(points)} points"
    if capped:
        return Adjustment(kind="push", level=3, delta=0.0, note=f"{seen}: no bonus on a capped answer")
    if not _answered_well(step, points):
        return Adjustment(kind="push", level=3, delta=0.0, note=f"{seen}: not enough for a bonus")
    bonus = round(PUSH_BONUS_MAX * min(4.0, max(0.0, step.level)) / 4.0, 2)
    return Adjustment(kind="push", level=3, delta=bonus, note=f"{seen}: +{bonus:.2f}")


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


def _relevance(cov: CoverageResult) -> float:
    """The answer's relevance: the best of its similarity to the rubric, the question, and its best sentence's."""
    return max(
        cov.features.get("cos_reference", 0.0),
        cov.features.get("cos_question", 0.0),
        cov.features.get("max_sentence_sim", 0.0),
    )


def _distribution(v: KeyPointVerdict) -> dict[Verdict, float]:
    """A verdict as probabilities: its confidence on itself, the rest shared by the other two."""
    conf = min(1.0, max(0.0, v.confidence))
    return {x: conf if x == v.verdict else (1.0 - conf) / 2 for x in _VERDICTS}


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
        mix = {x: (1.0 - w) * po[x] + w * pj[x] for x in _VERDICTS}
        best = max(_VERDICTS, key=lambda x: (mix[x], x == o.verdict))
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


def _about(question: str, key_points: Sequence[str]) -> str:
    """What a question is about, as one text for relevance: the question and its key points."""
    return question + "\n" + "\n".join(key_points)


def _rubric_spec(question_text: str, reference: str | None, rubric: Any) -> dict[str, Any]:
    """Normalise a reference answer and/or a rubric (Question, dict, YAML/JSON text, or plain text)."""
    if not question_text or not question_text.strip():
        raise InputError("the question text is empty; every item needs a `question`")
    if rubric is None and not (reference and reference.strip()):
        raise InputError("give a `reference_answer` or a `rubric` to grade against")
    if isinstance(rubric, Question):
        q = rubric
        return {
            "question_id": q.id,
            "question_text": question_text,
            "key_points": list(q.key_points),
            "criteria": list(q.criteria),
            "numeric": list(q.numeric_checks),
            "facts": list(q.fact_checks),
            "contradictions": list(q.contradictions),
            "reference": reference,
        }
    data: Any = rubric
    if isinstance(rubric, str):
        try:
            data = yaml.safe_load(rubric)
        except yaml.YAMLError:
            data = rubric
        if not isinstance(data, dict | list):
            data = rubric
    key_points: list[str] = []
    criteria: list[Criterion] = []
    numeric: list[NumericCheck] = []
    facts: list[FactCheck] = []
    contradictions: list[Contradiction] = []
    try:
        if isinstance(data, dict):
            key_points = [str(k) for k in data.get("key_points", [])]
            criteria = [Criterion.model_validate(c) for c in data.get("criteria", [])]
            numeric = [NumericCheck.model_validate(c) for c in data.get("numeric_checks", [])]
            facts = [FactCheck.model_validate(c) for c in data.get("fact_checks", [])]
            contradictions = [Contradiction.model_validate(c) for c in data.get("contradictions", [])]
            reference = reference or data.get("model_answer") or data.get("reference_answer")
        elif isinstance(data, list):
            key_points = [str(k) for k in data]
        elif isinstance(data, str):
            lines = [ln.strip(" -*\t") for ln in data.splitlines() if ln.strip(" -*\t")]
            key_points = lines if len(lines) > 1 else split_sentences(data)
    except ValidationError as e:
        raise InputError(
            f"the rubric does not validate: {e.errors()[0]['msg']} at {e.errors()[0]['loc']}"
        ) from e
    if not key_points:
        key_points = split_sentences(reference or "")
    if not key_points:
        raise InputError("the rubric has no key points and there is no reference answer to take them from")
    return {
        "question_id": "adhoc",
        "question_text": question_text,
        "key_points": key_points,
        "criteria": criteria or [_GENERIC],
        "numeric": numeric,
        "facts": facts,
        "contradictions": contradictions,
        # A reference answer is what the coverage model was calibrated against; key points otherwise.
        "reference": reference if reference and reference.strip() else None,
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


def _read_jsonl(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    try:
        with path.open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    item = json.loads(line)
                except json.JSONDecodeError as e:
                    raise InputError(f"{path}:{n} is not valid JSON ({e.msg}); one object per line") from e
                if not isinstance(item, dict):
                    raise InputError(f"{path}:{n} is not a JSON object")
                yield n, item
    except OSError as e:
        raise InputError(f"cannot read {path}: {e}") from e


def grade_file(
    input_jsonl: Path | str,
    output_jsonl: Path | str,
    *,
    scorer: RubricScorer | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Grade every line of ``input_jsonl`` (question, reference_answer or rubric, answer); returns the count.

    Each output line is the input object plus ``score`` (0-4), ``evidence``, ``key_points_missed``,
    ``methods`` and ``notes``.
    """
    src, dst = Path(input_jsonl), Path(output_jsonl)
    items = list(_read_jsonl(src))
    scorer = scorer or RubricScorer()
    graded = 0
    dst.parent.mkdir(parents=True, exist_ok=True)
    with dst.open("w", encoding="utf-8") as out:
        for i, (n, item) in enumerate(items):
            if "answer" not in item or "question" not in item:
                raise InputError(
                    f"{src}:{n} needs `question` and `answer` (plus `reference_answer` or `rubric`)"
                )
            try:
                result = scorer.grade_one(
                    str(item["question"]),
                    str(item["answer"] or ""),
                    item.get("reference_answer"),
                    item.get("rubric"),
                )
            except InputError as e:
                raise InputError(f"{src}:{n}: {e}") from e
            row = {
                **item,
                "score": result["score"],
                "evidence": result["evidence"],
                "key_points_missed": result["key_points_missed"],
                "methods": result["methods"],
                "notes": result["notes"],
            }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            graded += 1
            if progress:
                progress(i + 1, len(items))
    return graded
