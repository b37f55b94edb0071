"""Per-key-point verdicts: the offline ones the scorer produces, and merging a truth judge's into the score."""

from __future__ import annotations

import pytest

from interviewer.content import load_bank
from interviewer.embeddings import HashingEmbedder
from interviewer.scoring.models import KeyPointVerdict
from interviewer.scoring.scorer import (
    CONTRADICTED_ANSWER_MAX,
    CONTRADICTED_CRITERION_MAX,
    RubricScorer,
    merge_verdicts,
)
from tests.conftest import REPO
from tests.scoring_samples import ANSWERS, DECODE_ID


def _v(kp: str, verdict: str, conf: float, quote: str | None = None, method: str = "offline"):
    return KeyPointVerdict(key_point=kp, verdict=verdict, confidence=conf, quote=quote, method=method)  # type: ignore[arg-type]


def test_merge_keeps_offline_order_and_uses_the_judge_by_weight() -> None:
    offline = [_v("a", "stated", 0.6, "we batch"), _v("b", "absent", 0.7), _v("c", "stated", 0.9, "x")]
    judged = [
        _v("b", "contradicted", 0.95, "b is false", "llm-judge"),
        _v("a", "absent", 0.9, None, "llm-judge"),
        _v("zzz", "stated", 1.0, "ignored", "llm-judge"),
    ]
    none = merge_verdicts(offline, judged, 0.0)
    assert none == offline
    half = merge_verdicts(offline, judged, 0.5)
    assert [v.key_point for v in half] == ["a", "b", "c"]
    # a: stated .6/.2/.2 vs absent .9 -> absent (.55) wins, no quote
    assert half[0].verdict == "absent" and half[0].quote is None and half[0].method == "llm-judge"
    # b: absent .7 vs contradicted .95 -> contradicted (.55), the judge's quote
    assert half[1].verdict == "contradicted" and half[1].quote == "b is false"
    assert half[1].confidence == pytest.approx(0.5 * 0.15 + 0.5 * 0.95)
    # c: not judged -> unchanged
    assert half[2] == offline[2]
    # a weak judge cannot overturn a confident offline verdict
    low = merge_verdicts(offline, judged, 0.2)
    assert low[1].verdict == "absent" and low[1].method == "offline"


def test_merge_ties_go_to_the_offline_verdict() -> None:
    offline = [_v("a", "stated", 0.8, "q")]
    judged = [_v("a", "contradicted", 0.8, "q", "llm-judge")]
    assert merge_verdicts(offline, judged, 0.5)[0].verdict == "stated"


@pytest.fixture(scope="module")
def setup():
    bank = load_bank(REPO)
    return bank.get(DECODE_ID), RubricScorer(HashingEmbedder())


def test_offline_verdicts_cover_every_key_point(setup) -> None:
    q, scorer = setup
    s = scorer.score(q, [ANSWERS[DECODE_ID]["strong"]])
    assert [v.key_point for v in s.verdicts] == list(q.key_points)
    assert {v.method for v in s.verdicts} == {"offline"}
    stated = [v.key_point for v in s.verdicts if v.verdict == "stated"]
    assert stated == s.key_points_covered
    for v in s.verdicts:
        if v.quote:
            assert v.quote in ANSWERS[DECODE_ID]["strong"]


def test_judged_contradiction_caps_its_criterion_and_the_question(setup) -> None:
    q, scorer = setup
    answer = ANSWERS[DECODE_ID]["strong"]
    base = scorer.score(q, [answer])
    target = q.key_points[0]
    sentence = next(s for s in answer.split(". ") if s)
    judged = [_v(target, "contradicted", 1.0, sentence, "llm-judge")]
    capped = RubricScorer(HashingEmbedder(), judge_weight=0.9).score(q, [answer], judged=judged)
    assert capped.overall <= CONTRADICTED_ANSWER_MAX < base.overall, (base.overall, capped.notes)
    hit = [c for c in capped.criteria if c.status == "contradicted"]
    assert hit and all(c.level <= CONTRADICTED_CRITERION_MAX for c in hit)
    assert all(sentence not in c.evidence for c in capped.criteria)
    merged = {v.key_point: v for v in capped.verdicts}
    assert merged[target].verdict == "contradicted" and merged[target].method == "llm-judge"
    assert "llm-judge" in capped.methods


def test_judged_stated_points_raise_a_weak_offline_score(setup) -> None:
    q, scorer = setup
    answer = ANSWERS[DECODE_ID]["partial"]
    base = scorer.score(q, [answer])
    quote = answer.split(". ")[0]
    judged = [_v(k, "stated", 1.0, quote, "llm-judge") for k in q.key_points]
    lifted = RubricScorer(HashingEmbedder(), judge_weight=0.8).score(q, [answer], judged=judged)
    assert lifted.overall > base.overall
    assert lifted.key_points_covered == list(q.key_points)
    # And the judge's absent verdicts lower it.
    judged_absent = [_v(k, "absent", 1.0, None, "llm-judge") for k in q.key_points]
    lowered = RubricScorer(HashingEmbedder(), judge_weight=0.8).score(q, [answer], judged=judged_absent)
    assert lowered.overall < base.overall and not lowered.key_points_covered


# #15 item 15: a list of numbers and buzzwords says nothing about what was done, why, or what followed.
BUZZ = (
    "Nsight, baseline, profiled, A/B. 3.2x, 40%, p99, 120 ms. KV cache, batching, FP8, TensorRT-LLM. "
    "Nsight, baseline, profiled, A/B."
)


def test_a_list_of_buzzwords_and_numbers_earns_no_evidence(setup) -> None:
    q, scorer = setup
    s = scorer.score(q, [BUZZ])
    assert s.overall <= 0.5, s.notes
    assert not s.key_points_covered
    assert all(not c.evidence and c.level == 0 and c.status == "missing" for c in s.criteria)
    assert all("lists terms" in c.reason for c in s.criteria)
    assert any("only list terms" in n for n in s.notes)


def test_buzzwords_added_to_an_answer_add_nothing(setup) -> None:
    q, scorer = setup
    strong = ANSWERS[DECODE_ID]["strong"]
    plain = scorer.score(q, [strong])
    padded = scorer.score(q, [strong + " " + BUZZ])
    assert padded.overall <= plain.overall + 0.05, (plain.overall, padded.overall)
    quoted = {e for c in padded.criteria for e in c.evidence}
    assert not any("Nsight" in e or "3.2x" in e for e in quoted)


def test_a_list_with_its_explanation_still_counts() -> None:
    from interviewer.scoring.claims import explained_text, is_unexplained_list

    assert is_unexplained_list("Nsight, baseline, profiled, A/B.")
    assert is_unexplained_list("3.2x, 40%, p99, 120 ms")
    assert not is_unexplained_list(
        "I profiled with Nsight, which showed the copy kernel was 40% of the step."
    )
    assert not is_unexplained_list("We cut p99 from 180 to 120 ms by batching, so the SLO held.")
    kept, dropped = explained_text(
        "Batching helps because weights are read once. Nsight, FP8, A/B. Nsight, FP8, A/B."
    )
    assert kept == "Batching helps because weights are read once." and len(dropped) == 2
