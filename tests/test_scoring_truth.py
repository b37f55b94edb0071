"""Scores that read truth (#11): classic wrong claims capped, off-topic and empty answers at the bottom.

The answers here are written as a candidate would speak, in the topic's vocabulary, independently of the
rubrics' wording. Each classic mistake the seeds name gets a confident wrong answer (scored <= 1 on the
criterion it touches) and a right answer that mentions the same wrong claim only to deny it (not capped).
"""

from __future__ import annotations

import pytest

from interviewer.scoring.claims import contradictions_asserted
from interviewer.scoring.scorer import CONTRADICTED_ANSWER_MAX, OFF_TOPIC_MAX, RubricScorer
from interviewer.scoring.spec import RubricSpec
from interviewer.scoring.stages import GAP_FROM, GAP_UNMET

# question id -> (criterion the mistake touches, confident wrong answer, right answer that denies the mistake)
CLASSIC = {
    "case.stage-vs-end-to-end": (
        "arithmetic",
        "Honestly this is a nice win. The forward pass went from 60 down to 30 milliseconds, which is the bulk "
        "of the work, so the service is twice as fast now and I'd be comfortable announcing that. Latency is "
        "halved, and throughput should double along with it since the GPU is free sooner.",
        "The forward pass halved, 60 to 30 ms, but the other 40 ms didn't move, so a request now takes about "
        "70 ms. That's a 30% cut, roughly 1.43x. I would not say the service is 2x faster; only the model step "
        "is. And this harness runs one request at a time, so it tells us nothing about queueing or p99 under load.",
    ),
    "inference.data.object-storage-rename": (
        "correctness",
        "The slowness is mostly Spark listing the files. The rename itself is fine: on S3 renames are atomic, so "
        "the commit either happens or it doesn't and readers never see a half-written table. I'd just raise the "
        "listing parallelism and keep the temporary-prefix pattern.",
        "S3 has no real directories, so a rename is a server-side copy of every object and then a delete of the "
        "original, one request pair per object, and the bytes really get copied. People often think renames are "
        "atomic on S3, but they are not: if the job dies halfway, some objects exist under both prefixes and a "
        "reader can see a mix. I'd use an S3-aware committer or a table format with a single metadata commit.",
    ),
    "cpp.tiled-transpose": (
        "correct tiled loop",
        "I'd loop over blocks of 64 by 64, and inside each block copy A[i][j] into B[j][i]. There's no need to "
        "handle the remainder, since in practice N is always a multiple of the tile, so the loops are just "
        "ii from 0 to N step 64 and i from ii to ii plus 64. Then I'd time it against the naive version.",
        "Four loops: ii and jj step by T, then i runs from ii to min(ii + T, N) and j from jj to min(jj + T, N), "
        "so the last partial tile is handled when N is not a multiple of T. I'd pick T around 32 so two tiles "
        "fit in L1, and check the output against the naive transpose for N = 1000 as well as 1024.",
    ),
    "case.async-timing-and-warmup": (
        "asynchrony",
        "The 0.2 ms is the real latency, the engine is just that fast once it's loaded. Kernel launches are "
        "synchronous from Python's point of view, so time.time() around the call is enough. The 128.5 ms run "
        "was probably noise from another job on the box, so I'd rerun it a few times and take the best.",
        "The launch returns before the GPU has done the work, so a host clock around it measures the launch, "
        "about 0.2 ms. You have to record CUDA events on the stream or synchronise before reading the clock. "
        "The 128.5 ms mean is dragged up by a cold first iteration with compilation and allocation, so warm up, "
        "then report the median and the spread over many runs.",
    ),
}


@pytest.mark.parametrize("qid", sorted(CLASSIC))
def test_the_seeds_classic_mistakes_score_at_most_one_on_their_criterion(bank, bank_scorer, qid: str) -> None:
    criterion, wrong, right = CLASSIC[qid]
    q = bank.get(qid)
    bad = bank_scorer.score(q, [wrong])
    touched = next(c for c in bad.criteria if c.criterion == criterion)
    assert touched.level <= 1 and touched.status == "contradicted", touched
    assert touched.contradicted_by and touched.contradicted_by in wrong
    assert bad.overall <= CONTRADICTED_ANSWER_MAX, bad.notes
    quoted = {e for c in bad.criteria for e in c.evidence}
    assert touched.contradicted_by not in quoted, (
        "a sentence asserting the wrong claim was quoted as evidence"
    )
    assert any(v.verdict == "contradicted" and v.quote == touched.contradicted_by for v in bad.verdicts)

    good = bank_scorer.score(q, [right])
    assert not contradictions_asserted(right, q), "denying the classic mistake is not asserting it"
    assert all(c.status != "contradicted" for c in good.criteria)
    assert good.overall > bad.overall + 1.0, (good.overall, bad.overall)


def test_an_answer_to_another_question_is_off_topic(bank, bank_scorer) -> None:
    """A fluent, correct answer to a different question scores <= 0.5 and quotes nothing.

    A neighbour on the same topic (two latency-measurement questions of the inference case) shares enough
    key-point vocabulary that it is only capped, not zeroed: measured, and asserted as such.
    """
    pairs = [
        ("inference.data.object-storage-rename", "inference.batching.decode-bandwidth-bound"),
        ("case.release-recommendation", "cpp.row-vs-column-major"),
    ]
    for asked, answered in pairs:
        q, other = bank.get(asked), bank.get(answered)
        s = bank_scorer.score(q, [other.model_answer])
        assert s.overall <= OFF_TOPIC_MAX, (asked, answered, s.overall, s.notes)
        assert all(c.status == "off-topic" and not c.evidence for c in s.criteria)
        assert not s.key_points_covered
        own = bank_scorer.score(q, [q.model_answer])
        assert own.overall >= 2.5, (asked, own.overall, own.notes)
    # Behavioral stories are the hard case (a mentoring story told for "a failure" covers some of its points):
    # see the bank-wide rate below and BENCHMARKS.md.
    near = bank_scorer.score(
        bank.get("case.stage-vs-end-to-end"), [bank.get("case.async-timing-and-warmup").model_answer]
    )
    assert near.overall <= 1.6 and any("capped" in n for n in near.notes), near.notes


def test_an_empty_answer_scores_zero_and_says_so(bank, bank_scorer) -> None:
    s = bank_scorer.score(bank.get("case.stage-vs-end-to-end"), ["   "])
    assert s.overall == 0.0
    assert all(c.level == 0 and c.status == "missing" and "no answer" in c.reason for c in s.criteria)


def test_every_criterion_says_why(bank, bank_scorer) -> None:
    q = bank.get("case.stage-vs-end-to-end")
    s = bank_scorer.score(q, [CLASSIC[q.id][2]])
    for c in s.criteria:
        assert c.status in {"met", "partial", "missing"} and c.reason.startswith(c.status)
        if c.status == "met" and c.evidence:
            assert c.evidence[0] in c.reason
    assert {v.key_point for v in s.verdicts} == set(q.key_points)


def test_bank_wide_other_question_answers_sit_at_the_bottom(bank, bank_scorer) -> None:
    """Forty bank questions (fixed sample), each given another same-round question's model answer.

    Measured when written: 31 of 40 (77.5%) scored <= 0.5, mean 0.85; the questions' own model answers scored
    >= 3.1 for 95%. The bounds below leave a small margin for embedding-library noise.
    """
    import random

    rng = random.Random(3)
    qs = list(bank.questions.values())
    low, total, own_ok = 0, 0.0, 0
    sample = rng.sample(qs, 40)
    for q in sample:
        other = rng.choice([x for x in qs if x.round == q.round and x.id != q.id])
        s = bank_scorer.score(q, [other.model_answer]).overall
        low += s <= OFF_TOPIC_MAX
        total += s
        own_ok += bank_scorer.score(q, [q.model_answer]).overall >= 2.5
    assert low >= 28, f"only {low}/40 other-question answers scored <= {OFF_TOPIC_MAX}"
    assert total / 40 <= 1.0, f"mean {total / 40:.2f} for answers to other questions"
    assert own_ok >= 37, f"only {own_ok}/40 model answers scored >= 2.5"


def test_the_report_never_quotes_a_wrong_claim_as_evidence_and_ranks_by_capped_scores(
    bank, bank_scorer, tmp_path
):
    """A live round on the real scorer: the confident 2x answer is capped, named as the contradiction, never
    listed as evidence nor as a strongest question."""
    from interviewer.content.loader import Bank
    from interviewer.report import build_report, render_html, render_markdown
    from interviewer.session import Interview, Ports
    from interviewer.store import SessionStore

    q = bank.get("case.stage-vs-end-to-end")
    one = Bank(root=bank.root, questions={q.id: q})
    store = SessionStore(tmp_path / "s.db")
    it = Interview.start(
        Ports(bank=one, store=store, scorer=bank_scorer, owner="me"), ["inference-case"], per_round=1
    )
    wrong = CLASSIC[q.id][1]
    for answer in (wrong, "Stages run one after another.", "Nothing really breaks."):
        it.advance_all()
        it.submit(answer)
    it.advance_all()
    rep = build_report(store, one, it.session_id, owner="me")
    assert not rep.strongest, rep.strongest
    md = render_markdown(rep)
    claim = "so the service is twice as fast now and I'd be comfortable announcing that."
    assert "contradicted by" in md and "contradicted: the answer says" in md
    assert f"evidence: \u201c{claim}" not in md and "evidence: \u201cThe forward pass went from 60" not in md
    assert "contradicted by" in render_html(rep)


def test_an_answer_that_meets_nothing_of_the_rubric_is_off_topic_below_the_relevance_bar() -> None:
    """The unmet-rubric rule: low relevance alone is a weak answer; with nothing of the rubric met, off-topic."""
    reason = RubricScorer._off_topic_reason
    assert reason(0.30, None, met=False, covered=False) == "relevance 0.30 and nothing of the rubric met"
    assert (
        reason(0.30, None, met=True, covered=False) is None
    )  # a check passed: a weak answer, not another topic
    assert reason(0.40, None, met=False, covered=False) is None
    assert reason(0.15, None, met=True, covered=True) is not None  # absolute relevance still rules
    assert reason(0.60, 0.25, met=True, covered=False) is not None  # closer to another question, no key point
    assert reason(0.60, 0.25, met=True, covered=True) is None
    # Nearer another question by a smaller gap: off-topic only when nothing of this rubric is met.
    assert reason(0.60, 0.12, met=False, covered=False) is not None
    assert reason(0.60, 0.12, met=True, covered=False) is None
    assert reason(0.60, 0.08, met=False, covered=False) is None


def test_an_answer_about_a_neighbouring_question_meeting_none_of_this_one_is_off_topic(
    bank, bank_scorer
) -> None:
    """Asked what fusing three elementwise kernels saves, the candidate explains int8 weight quantization: in the
    field, nearer another bank question than this one, and nothing of this rubric met."""
    q = bank.get("gpu.fusion.elementwise-fusion")
    answer = (
        "Storing the weights in int8 instead of fp16 halves the bytes they take in memory, and on tensor cores "
        "the int8 peak is about twice the fp16 peak, so a weight-quantized model can serve larger batches."
    )
    gap = bank_scorer._neighbours.gap(bank_scorer.encoder, RubricSpec.from_question(q), answer)
    assert GAP_UNMET <= gap < GAP_FROM  # only the unmet-rubric gap rule can call it off-topic
    assert "nothing of the rubric met" in (bank_scorer.off_topic(q, answer) or "")
    got = bank_scorer.score(q, [answer])
    assert got.overall == 0 and all(c.status == "off-topic" for c in got.criteria), (
        got.notes
    )  # placed elsewhere


def test_story_rounds_are_not_judged_by_closeness_to_another_story(bank) -> None:
    """Every "tell me about a time" answer resembles the other story questions: no relative relevance there."""
    stories = [q for q in bank.questions.values() if q.round.value in ("behavioral", "recruiter-screen")]
    technical = bank.get("inference.batching.decode-bandwidth-bound")
    sc = RubricScorer(neighbours=list(bank.questions.values()))
    for q in stories[:3]:  # returns before any embedding: no model is loaded for this
        assert sc._neighbours.gap(sc.encoder, RubricSpec.from_question(q), q.model_answer) is None
    assert technical.id not in sc._stories and stories[0].id in sc._stories


@pytest.mark.parametrize(
    "qid", ["cpp.api-vs-abi", "inference.kv-cache.prefix-caching", "design.recsys-ranking-serving"]
)
def test_a_classic_wrong_claim_alone_is_challenged_and_capped_not_called_off_topic(
    bank, bank_scorer, qid
) -> None:
    """A short answer stating only one of the rubric's wrong claims meets nothing of the rubric, but it is about
    the question: the report caps it as a wrong claim and the interviewer challenges it (no redirect)."""
    from interviewer.listen import Listener

    q = bank.get(qid)
    answer = f"I'm confident about this one: {q.contradictions[0].any_of[0]}."
    assert bank_scorer.off_topic(q, answer) is None
    s = bank_scorer.score(q, [answer])
    assert s.overall <= 1.5
    assert not any(n.startswith("off-topic") for n in s.notes), s.notes
    assert any("classic wrong claim" in n for n in s.notes), s.notes
    listener = Listener(neighbours=list(bank.questions.values()), topic=bank_scorer.off_topic)
    assert listener.read(q, 0, answer).kind == "contradicts"
