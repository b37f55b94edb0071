"""Scorer properties on fixed inputs: ordering, evidence, why-depth, grade_one / grade_file, calibration."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from interviewer.embeddings import HashingEmbedder, MiniLMEmbedder
from interviewer.errors import InputError
from interviewer.scoring.batch import grade_file
from interviewer.scoring.calibrate import group_folds, quadratic_kappa, run_calibration
from interviewer.scoring.coverage import load_calibration
from interviewer.scoring.scorer import (
    CONTRADICTED_ANSWER_MAX,
    HINT_COST,
    HINT_COST_MAX,
    PUSH_BONUS_MAX,
    RubricScorer,
)
from tests.scoring_samples import ANSWERS, DECODE_ID, LAYOUT_ID, WHY

FIXTURE = Path(__file__).parent / "fixtures" / "grading" / "answers.jsonl"


@pytest.fixture(scope="module")
def hashing_scorer() -> RubricScorer:
    return RubricScorer(HashingEmbedder())


@pytest.fixture(scope="module")
def minilm_scorer() -> RubricScorer:
    return RubricScorer(MiniLMEmbedder())


def _in_answer(quote: str, answers: list[str]) -> bool:
    return any(quote in a for a in answers)


@pytest.mark.parametrize("qid", [DECODE_ID, LAYOUT_ID])
def test_strong_beats_partial_beats_wrong_hashing(bank, hashing_scorer: RubricScorer, qid: str) -> None:
    q = bank.get(qid)
    s = {k: hashing_scorer.score(q, [a]) for k, a in ANSWERS[qid].items() if k != "wrong_topical"}
    assert s["strong"].overall > s["partial"].overall > s["wrong"].overall, {
        k: v.overall for k, v in s.items()
    }
    assert len(s["strong"].key_points_covered) > len(s["wrong"].key_points_covered)


@pytest.mark.slow
@pytest.mark.parametrize("qid", [DECODE_ID, LAYOUT_ID])
def test_strong_beats_partial_beats_wrong_minilm(bank, minilm_scorer: RubricScorer, qid: str) -> None:
    q = bank.get(qid)
    s = {k: minilm_scorer.score(q, [a]) for k, a in ANSWERS[qid].items() if k != "wrong_topical"}
    assert s["strong"].overall > s["partial"].overall > s["wrong"].overall, {
        k: v.overall for k, v in s.items()
    }
    assert s["strong"].overall >= 3.0 and s["strong"].overall - s["wrong"].overall >= 1.0
    strong = s["strong"]
    assert strong.methods[0] == "coverage" and "deterministic" in strong.methods
    for crit in strong.criteria:
        assert all(
            _in_answer(e, [ANSWERS[qid]["strong"]]) for e in crit.evidence
        )  # the candidate's own words
        assert crit.method == "coverage"
    assert set(strong.key_points_covered) | set(strong.key_points_missed) == set(q.key_points)
    assert len(s["wrong"].key_points_missed) >= len(q.key_points) - 1


@pytest.mark.slow
def test_every_round_sample_orders_model_answer_over_partial_over_mistakes(bank, minilm_scorer) -> None:
    """One question per round: the authored model answer > its first sentence > the common mistakes stated."""
    for round_ in bank.rounds():
        q = next((x for x in bank.by_round(round_) if x.common_mistakes), None)
        if q is None:
            continue
        sentences = [s for s in q.model_answer.replace("\n", " ").split(". ") if s.strip()]
        partial = sentences[0] + "."
        wrong = "I think " + "; and ".join(q.common_mistakes) + "."
        strong_s = minilm_scorer.score(q, [q.model_answer]).overall
        partial_s = minilm_scorer.score(q, [partial]).overall
        wrong_s = minilm_scorer.score(q, [wrong]).overall
        assert strong_s > partial_s, (q.id, strong_s, partial_s)
        assert strong_s > wrong_s, (q.id, strong_s, wrong_s)


def test_why_depth_counts_levels_answered_well(bank, hashing_scorer: RubricScorer) -> None:
    q = bank.get(DECODE_ID)
    strong = ANSWERS[DECODE_ID]["strong"]
    w1, w2 = WHY[DECODE_ID]
    assert hashing_scorer.score(q, [strong]).why_depth == 0
    assert hashing_scorer.score(q, [strong, w1]).why_depth == 1
    assert hashing_scorer.score(q, [strong, w1, w2]).why_depth == 2
    assert hashing_scorer.score(q, [strong, "I am not sure.", "No idea, sorry."]).why_depth == 0


def test_code_verdict_is_half_the_score(bank, hashing_scorer: RubricScorer) -> None:
    q = bank.get(LAYOUT_ID)
    a = ANSWERS[LAYOUT_ID]["strong"]
    passed = hashing_scorer.score(q, [a], passed=True)
    failed = hashing_scorer.score(q, [a], passed=False)
    assert passed.overall - failed.overall == pytest.approx(2.0, abs=0.01)
    assert "code-tests" in passed.methods
    assert any(c.criterion == "correctness (tests)" and c.level == 0 for c in failed.criteria)


def test_empty_answer_scores_zero(bank, hashing_scorer: RubricScorer) -> None:
    s = hashing_scorer.score(bank.get(DECODE_ID), [""])
    assert s.overall == 0.0 and not s.key_points_covered and s.why_depth == 0


# The answer to the decode question's first push step (derive the batch-32 ceiling), good and poor.
GOOD_PUSH = (
    "Each step still reads all the weights once, about 7 ms, but now yields 32 tokens, so the ceiling is "
    "about 4,500 tokens/s until compute or the KV-cache reads take over."
)
POOR_PUSH = "I am not sure; probably about the same as before, maybe a bit more."


def test_a_hint_costs_points_but_a_hinted_strong_answer_still_beats_a_weak_one(bank, hashing_scorer) -> None:
    q = bank.get(DECODE_ID)
    strong, partial = ANSWERS[DECODE_ID]["strong"], ANSWERS[DECODE_ID]["partial"]
    w1, w2 = WHY[DECODE_ID]
    plain = hashing_scorer.score(q, [strong, w1, w2])
    at_main = hashing_scorer.score(q, [strong, w1, w2], hints=[0])
    assert at_main.overall == pytest.approx(plain.overall - HINT_COST, abs=0.01)
    assert at_main.why_depth == plain.why_depth == 2  # a hint on the main question leaves the whys alone
    assert f"hint given at the main question: -{HINT_COST:.2f}" in at_main.notes
    assert [(a.kind, a.level, a.delta) for a in at_main.adjustments] == [("hint", 0, -HINT_COST)]
    # At a why level: the same cost, and that level earns no depth credit.
    at_why1 = hashing_scorer.score(q, [strong, w1, w2], hints=[1])
    assert at_why1.overall == pytest.approx(plain.overall - HINT_COST, abs=0.01) and at_why1.why_depth == 1
    assert f"hint given at why 1: -{HINT_COST:.2f}" in at_why1.notes
    assert any("why level 1" in n and "after a hint" in n for n in at_why1.notes)
    # Three hints cost at most HINT_COST_MAX, and the hinted strong answer still beats the unhinted partial.
    every = hashing_scorer.score(q, [strong, w1, w2], hints=[0, 1, 2])
    assert every.overall == pytest.approx(plain.overall - HINT_COST_MAX, abs=0.01) and every.why_depth == 0
    assert sum(a.delta for a in every.adjustments) == pytest.approx(-HINT_COST_MAX)
    assert every.overall > hashing_scorer.score(q, [partial, w1, w2]).overall
    # Never below 0.
    assert hashing_scorer.score(q, ["I don't know.", "", ""], hints=[0, 1]).overall == 0.0


def test_a_good_push_answer_lifts_the_score_and_a_poor_one_never_lowers_it(bank, hashing_scorer) -> None:
    q = bank.get(DECODE_ID)
    assert q.push, "the decode question has authored push steps"
    w1, w2 = WHY[DECODE_ID]
    for main in (ANSWERS[DECODE_ID]["partial"], ANSWERS[DECODE_ID]["strong"]):
        base = hashing_scorer.score(q, [main, w1, w2])
        good = hashing_scorer.score(q, [main, w1, w2, GOOD_PUSH])
        poor = hashing_scorer.score(q, [main, w1, w2, POOR_PUSH])
        assert base.overall < good.overall <= min(4.0, base.overall + PUSH_BONUS_MAX)
        assert poor.overall == base.overall
        assert not base.adjustments  # no push answer, no push note
        (push,) = good.adjustments
        assert push.kind == "push" and push.delta > 0 and push.note.startswith(f"push ({q.push[0].kind})")
        assert push.note in good.notes and "points: +" in push.note
        assert poor.adjustments[0].delta == 0 and "not enough for a bonus" in poor.adjustments[0].note
        assert good.why_depth == base.why_depth  # the push is not a why level
    # A strong answer can be lifted to full marks by the push, never past them.
    strong_good = hashing_scorer.score(q, [ANSWERS[DECODE_ID]["strong"], w1, w2, GOOD_PUSH])
    assert strong_good.overall <= 4.0 and not any("relevance" in n for n in strong_good.notes)


def test_a_push_never_lifts_a_capped_answer(bank, hashing_scorer) -> None:
    q = bank.get(DECODE_ID)
    w1, w2 = WHY[DECODE_ID]
    wrong = ANSWERS[DECODE_ID]["wrong_topical"]  # asserts the rubric's classic wrong claims
    base = hashing_scorer.score(q, [wrong, w1, w2])
    pushed = hashing_scorer.score(q, [wrong, w1, w2, GOOD_PUSH])
    assert base.overall <= CONTRADICTED_ANSWER_MAX and pushed.overall == base.overall
    assert "no bonus on a capped answer" in pushed.adjustments[0].note
    jira = "We tracked everything in Jira tickets and held daily standups during two-week sprints."
    off = hashing_scorer.score(q, [jira, w1, w2, GOOD_PUSH])
    assert any(n.startswith("off-topic") for n in off.notes)
    assert off.overall == hashing_scorer.score(q, [jira, w1, w2]).overall
    empty = hashing_scorer.score(q, ["", w1, w2, GOOD_PUSH])
    assert empty.overall == 0.0 and empty.adjustments[0].delta == 0


def test_grade_one_with_reference_and_with_rubric(hashing_scorer: RubricScorer) -> None:
    question = "What is the role of a prototype program in problem solving?"
    ref = "To simulate the behaviour of portions of the desired software product."
    good = hashing_scorer.grade_one(
        question, "It simulates the behaviour of portions of the desired product.", ref
    )
    bad = hashing_scorer.grade_one(question, "A prototype is the first line of a function.", ref)
    assert 0 <= bad["score"] < good["score"] <= 4
    assert good["evidence"] and all(
        e in "It simulates the behaviour of portions of the desired product." for e in good["evidence"]
    )
    rubric = {"key_points": ["simulates part of the product", "tests feasibility early"]}
    r = hashing_scorer.grade_one(
        question, "It simulates part of the product to test feasibility early.", rubric=rubric
    )
    assert r["score"] > bad["score"] and r["methods"] == ["coverage"]
    with pytest.raises(InputError):
        hashing_scorer.grade_one(question, "anything")
    with pytest.raises(InputError):
        hashing_scorer.grade_one(
            question, "x", rubric={"key_points": [], "criteria": [{"name": "c", "levels": {0: "a"}}]}
        )


def test_grade_file_on_fixture(tmp_path: Path, hashing_scorer: RubricScorer) -> None:
    out = tmp_path / "scored.jsonl"
    n = grade_file(FIXTURE, out, scorer=hashing_scorer)
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    src = [json.loads(x) for x in FIXTURE.read_text().splitlines() if x.strip()]
    assert n == len(rows) == len(src)
    for a, b in zip(src, rows, strict=True):
        assert {k: b[k] for k in a} == a  # input fields kept
        assert 0.0 <= b["score"] <= 4.0 and isinstance(b["evidence"], list)
        assert all(e in a["answer"] for e in b["evidence"])
    by_id = {r["id"]: r["score"] for r in rows}
    assert by_id["proto-good"] > by_id["proto-bad"]
    assert by_id["kv-good"] > by_id["kv-bad"]
    assert next(r for r in rows if r["id"] == "kv-good")["notes"]


def test_grade_file_reports_the_bad_line(tmp_path: Path, hashing_scorer: RubricScorer) -> None:
    bad = tmp_path / "in.jsonl"
    bad.write_text('{"question": "q", "answer": "a", "reference_answer": "r"}\n{"question": "q"}\n')
    with pytest.raises(InputError, match=r"in.jsonl:2"):
        grade_file(bad, tmp_path / "out.jsonl", scorer=hashing_scorer)


def test_shipped_calibration_is_readable() -> None:
    cal = load_calibration()
    assert len(cal.answer.weights) == len(cal.answer.features) >= 5
    assert 0 < cal.covered_threshold < 1
    assert cal.meta["cv_average"]["r"] > 0.5  # what the fit reported for itself, recorded with the data


def test_group_folds_never_split_a_question() -> None:
    groups = [f"q{i % 13}" for i in range(200)]
    fold = group_folds(groups, 5)
    for g in set(groups):
        assert len({int(f) for f, gg in zip(fold, groups, strict=True) if gg == g}) == 1
    assert len(set(fold.tolist())) == 5


def test_quadratic_kappa() -> None:
    assert quadratic_kappa([0, 1, 2, 3], [0, 1, 2, 3]) == pytest.approx(1.0)
    assert quadratic_kappa([0, 5, 0, 5], [5, 0, 5, 0]) < 0


def test_calibration_runs_end_to_end_on_a_small_csv(tmp_path: Path) -> None:
    rows = []
    for qi in range(6):
        ref = f"topic{qi} alpha{qi} beta{qi} gamma{qi} delta{qi}"
        for k in range(6):
            words = ref.split()[:k] + ["filler"] * (5 - k)
            rows.append([f"{qi}.1", f"Explain topic{qi}?", ref, " ".join(words), k, max(0, k - 1)])
    path = tmp_path / "graded.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "question_id",
                "question",
                "reference_answer",
                "student_answer",
                "score_grader1",
                "score_grader2",
            ]
        )
        w.writerows(rows)
    out = tmp_path / "calibration.json"
    seen: list[str] = []
    report = run_calibration(
        path, folds=3, progress=lambda s, d, t: seen.append(s), embedder=HashingEmbedder(), output=out
    )
    table = report.table()
    assert "grader 1 vs grader 2" in table and "coverage model" in table
    assert report.rows["scorer: coverage model (answer level)"]["average"]["r"] > 0.8
    assert {"embedding", "features", "cross-validation"} <= set(seen)
    data = json.loads(out.read_text())
    assert data["answer_model"]["features"] and data["n_questions"] == 6
    assert load_calibration(out).answer.fraction({n: 0.0 for n in data["answer_model"]["features"]}) >= 0


def test_the_scorers_text_cache_stays_within_its_byte_budget_and_returns_the_same_vectors():
    """A long-running app reads every answer and partial transcript: the encoder's caches must not grow
    without bound, and evicting a text must never change what it scores as."""
    from interviewer.scoring.coverage import TextEncoder

    embedder = HashingEmbedder()
    row = embedder.embed(["x"]).nbytes  # one sentence vector
    enc = TextEncoder(embedder, token_bytes=200 * row, sentence_bytes=50 * row)
    first = "the kv cache grows with sequence length and batch size"
    want_sent = enc.sentences([first])[0].copy()
    want_tok = enc.tokens([first])[0].vectors.copy()
    for i in range(400):  # many distinct answers, as a cohort's read-ahead would send
        text = (
            f"answer {i}: decode is bound by memory bandwidth at batch {i} because weights are read per token"
        )
        enc.sentences([text])
        enc.tokens([text])
        assert enc._sent.nbytes <= 50 * row and enc._tok.nbytes <= 200 * row
    assert len(enc._sent) <= 50
    assert first not in enc._sent.found([first])  # evicted long ago ...
    assert (enc.sentences([first])[0] == want_sent).all()  # ... and computed again the same
    assert (enc.tokens([first])[0].vectors == want_tok).all()
    # A batch larger than the budget is still answered whole (the cache just keeps its newest part).
    many = [f"sentence number {i} about prefill" for i in range(120)]
    assert enc.sentences(many).shape == (120, embedder.dim)


def test_a_recently_used_text_stays_cached():
    from interviewer.scoring.coverage import TextEncoder

    embedder = HashingEmbedder()
    row = embedder.embed(["x"]).nbytes
    enc = TextEncoder(embedder, sentence_bytes=10 * row)
    keep = "a key point the scorer reads with every answer"
    for i in range(100):
        enc.sentences([keep, f"distinct answer sentence {i}"])
    assert keep in enc._sent.found([keep])


def test_a_criterion_is_met_only_on_the_candidates_own_words_for_its_key_points(
    minilm_scorer: RubricScorer, bank
) -> None:
    """A criterion's level rests on its own key points: one whose points the answer misses is not "met" on the
    strength of the rest of the answer, and every criterion judges at least one key point."""
    q = bank.get("design.disaggregated-prefill-decode")
    part = (
        "Split the phases: prefill GPUs build the KV cache and the first token, then ship the cache to decode "
        "GPUs, and each pool picks its own batch size and parallelism."
    )
    for answer in (part, ANSWERS[DECODE_ID]["strong"]):
        question = q if answer == part else bank.get(DECODE_ID)
        got = minilm_scorer.score(question, [answer])
        assert all(c.evidence or c.missing for c in got.criteria), got.criteria
        assert all(c.evidence for c in got.criteria if c.status == "met"), got.criteria
    partly = minilm_scorer.score(q, [part])
    assert [c.status for c in partly.criteria].count("met") < len(partly.criteria)
    assert (
        minilm_scorer.score(bank.get(DECODE_ID), [ANSWERS[DECODE_ID]["strong"]]).criteria[0].status == "met"
    )
