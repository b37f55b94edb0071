"""A rubric's classic wrong claim in the candidate's own words (interviewer.scoring.paraphrase), on MiniLM."""

from __future__ import annotations

import pytest

from interviewer.embeddings import MiniLMEmbedder
from interviewer.listen import Listener
from interviewer.scoring import paraphrase
from interviewer.scoring.claims import contradictions_asserted, find_assertion
from interviewer.scoring.coverage import TextEncoder
from interviewer.scoring.paraphrase import CLOSER_BY, SIMILAR, paraphrased_contradictions
from interviewer.scoring.scorer import CONTRADICTED_ANSWER_MAX
from interviewer.scoring.spec import RubricSpec

# "higher throughput means lower latency", said without any of the rubric's phrasings.
THROUGHPUT_AS_LATENCY = (
    "Whichever engine serves more requests per second also gets each user's request done faster, "
    "so throughput is the only figure we need."
)


def test_a_classic_wrong_claim_in_other_words_is_capped_and_challenged(bank, bank_scorer) -> None:
    q = bank.get("case.benchmark-contract")
    assert not contradictions_asserted(
        THROUGHPUT_AS_LATENCY, q
    )  # no authored phrasing: the clause reader misses it
    hits = bank_scorer.wrong_claims(q, THROUGHPUT_AS_LATENCY)
    assert [h.name for h in hits] == ["throughput equals latency"]
    assert hits[0].sentence == THROUGHPUT_AS_LATENCY and hits[0].challenge
    s = bank_scorer.score(q, [THROUGHPUT_AS_LATENCY])
    assert s.overall <= CONTRADICTED_ANSWER_MAX
    assert any("classic wrong claim (throughput equals latency)" in n for n in s.notes), s.notes
    assert [(c.kind, c.at) for c in s.caps] == [("wrong-claim", CONTRADICTED_ANSWER_MAX)]
    assert bank_scorer.off_topic(q, THROUGHPUT_AS_LATENCY) is None  # about the question, and wrong
    listener = Listener(
        neighbours=list(bank.questions.values()), topic=bank_scorer.off_topic, claims=bank_scorer.wrong_claims
    )
    reading = listener.read(q, 0, THROUGHPUT_AS_LATENCY)
    assert reading.kind == "contradicts" and reading.hit is not None
    assert reading.hit.name == "throughput equals latency"
    # Without the scorer's reading, the listener's own clause and word readers do not see it.
    assert Listener().read(q, 0, THROUGHPUT_AS_LATENCY).kind != "contradicts"


@pytest.mark.parametrize(
    "answer",
    [
        "More throughput does not mean faster requests.",
        "A bigger batch raises throughput, but a single user on an idle server waits just as long: throughput "
        "alone does not make each request faster.",
        "People often assume that more throughput makes every request faster, and that is the trap here.",
        "Many engineers assume that more throughput makes every request faster.",
        "Does more throughput make each request faster? Only the latency percentiles can say.",
    ],
)
def test_a_denied_attributed_or_asked_claim_is_not_asserted(bank, bank_scorer, answer: str) -> None:
    assert bank_scorer.wrong_claims(bank.get("case.benchmark-contract"), answer) == []


@pytest.mark.parametrize(
    "answer",
    [
        "When throughput rises, each user's latency drops.",
        "If the server's throughput goes up, the latency of every request goes down.",
    ],
)
def test_a_wrong_claim_told_with_other_words_for_its_direction_is_found(
    bank, bank_scorer, answer: str
) -> None:
    """ "Rises" and "goes down" are the authored "higher" and "lower" said another way."""
    hits = bank_scorer.wrong_claims(bank.get("case.benchmark-contract"), answer)
    assert [h.name for h in hits] == ["throughput equals latency"]


@pytest.mark.parametrize(
    "answer",
    [
        "Throughput can rise while each user's latency rises too.",
        "Throughput goes up with the batch, and per-request latency goes up as well.",
        "We set up the benchmark and broke down the latency by phase.",
    ],
)
def test_a_claim_with_only_one_of_its_directions_is_not_found(bank, bank_scorer, answer: str) -> None:
    """The wrong claim has throughput and latency moving opposite ways; a clause where both rise, or where "up"
    and "down" name no movement, does not assert it."""
    assert bank_scorer.wrong_claims(bank.get("case.benchmark-contract"), answer) == []


def test_a_clause_close_to_a_wrong_claim_without_its_telling_words_is_not_taken_for_it(bank) -> None:
    """The right IoU reads like "IoU divides the intersection by the sum of the two areas" to sentence vectors;
    it shares none of the claim's telling words ("divides", "sum"), so it is not the claim."""
    enc = TextEncoder(MiniLMEmbedder())
    q = bank.get("mlcode.iou-nms")
    spec = RubricSpec.from_question(q)
    right = "IoU is the intersection over the union, where the union is both areas added together minus their overlap."
    wrong = "IoU divides the overlap by the sum of the two box areas."
    claim = next(c for c in q.contradictions if "sum" in c.claim)
    vecs = enc.sentences([right, claim.claim, *spec.right_statements()])
    to_claim = float(vecs[0] @ vecs[1])
    assert to_claim >= SIMILAR  # close enough in vectors that only the word check holds it back
    assert to_claim - float((vecs[2:] @ vecs[0]).max()) >= CLOSER_BY
    args = (q.contradictions, spec.right_statements(), q.question)
    assert paraphrased_contradictions(enc, right, *args) == []
    assert [h.name for h in paraphrased_contradictions(enc, wrong, *args)] == [claim.name]
    # A claim the clause reader already found is not looked for again.
    assert paraphrased_contradictions(enc, wrong, *args, skip=[claim.name]) == []


def test_a_clause_as_close_to_a_right_statement_as_to_the_claim_is_held_back_by_the_margin(bank) -> None:
    """ "Batching makes each decode step proportionally slower" says the claim in its own telling words, but one
    of the rubric's right statements ("batch-1 decode roughly doubles ...") reads as close to it in vectors. The
    margin (``closer_by``) holds it back; with the margin lifted (a negative ``closer_by``) it is taken."""
    enc = TextEncoder(MiniLMEmbedder())
    q = bank.get("inference.batching.decode-bandwidth-bound")
    spec = RubricSpec.from_question(q)
    args = (q.contradictions, spec.right_statements(), q.question)
    clause = "Batching makes each decode step proportionally slower."
    assert paraphrased_contradictions(enc, clause, *args) == []
    loose = paraphrased_contradictions(enc, clause, *args, closer_by=-0.10)
    assert [h.name for h in loose] == ["batching slows each token proportionally"]
    # A bar on the cosine nothing reaches reads nothing, margin or not.
    assert paraphrased_contradictions(enc, clause, *args, similar=0.99, closer_by=-0.10) == []


def test_a_wrong_claim_inside_a_long_sentence_is_compared_on_its_own(bank, bank_scorer) -> None:
    """Joined to a method and a consequence, the claim's clause reads unlike it as a whole; cut where the reason
    and the consequence begin (", since", ", so"), the claim stands alone and is found."""
    q = bank.get("case.benchmark-contract")
    answer = (
        "We used one long prompt for every run and compared the averages, since whichever engine serves more "
        "requests per second also gets each user's request done faster, so throughput is the only figure we need "
        "and percentiles are noise."
    )
    hits = bank_scorer.wrong_claims(q, answer)
    assert [h.name for h in hits] == ["throughput equals latency"] and hits[0].sentence == answer


def test_a_numeric_wrong_claim_needs_its_number_stated(bank, monkeypatch) -> None:
    """ "The scale is the full range divided by 255 steps" reads like the classic "divide by 256" to sentence
    vectors and shares its telling word ("divided"); only the number tells them apart. A clause asserts a numeric
    claim only when it states the claim's number, in digits or in words."""
    enc = TextEncoder(MiniLMEmbedder())
    q = bank.get("inference.quant.asymmetric-int8")
    spec = RubricSpec.from_question(q)
    claim = next(c for c in q.contradictions if "256" in c.claim)
    args = (q.contradictions, spec.right_statements(), q.question)
    right = "The scale is the full range divided by 255 steps."
    assert paraphrased_contradictions(enc, right, *args) == []
    for wrong in (
        "The scale is the full range divided by 256 steps.",
        "The scale is the full range divided by two hundred and fifty six steps.",
    ):
        assert [h.name for h in paraphrased_contradictions(enc, wrong, *args)] == [claim.name], wrong
    # The number is what holds the right clause back: without the check it is taken for the claim.
    monkeypatch.setattr(paraphrase, "states_numbers", lambda piece, needed: True)
    assert [h.name for h in paraphrased_contradictions(enc, right, *args)] == [claim.name]


@pytest.mark.parametrize(
    ("text", "directions"),
    [
        ("Latency goes down as the batch shrinks.", {1}),
        ("Cost rises increasingly fast while quality lowers.", {0, 1}),
        ("More replicas, less queueing.", {0, 1}),
        ("We set up the cache and broke down the cost by phase.", set()),
    ],
)
def test_direction_words_are_read_from_the_word_its_stem_or_a_verb_of_motion(
    text: str, directions: set[int]
) -> None:
    assert paraphrase._directions(text, paraphrase._stems(text)) == directions


def test_a_plural_the_right_statements_use_in_the_singular_is_not_a_telling_word(bank, bank_scorer) -> None:
    """The rubric's right statements say "NaN"; the wrong claim says "NaNs are just noise". "NaNs" tells nothing
    apart, so a right cause of NaNs, close to the claim in vectors, is not taken for it; the claim still is."""
    q = bank.get("phone.applied.nan-loss-debugging")
    assert bank_scorer.wrong_claims(q, "NaNs mostly come from a learning rate that is too high.") == []
    hits = bank_scorer.wrong_claims(q, "Those NaNs are just noise; skip the batch and carry on.")
    assert [h.name for h in hits] == ["NaNs are random noise"]


@pytest.mark.parametrize(
    "answer",
    [
        "The trick in SmoothQuant is clipping the outlier channels so the rest of the range gets used.",
        "SmoothQuant handles outliers by simply clipping those few big channels down to the normal range.",
    ],
)
def test_a_telling_word_said_in_a_longer_form_is_found(bank, bank_scorer, answer: str) -> None:
    """ "clipping" stems to "clipp", the claim's "clips" to "clip": one word, as one stem begins the other."""
    q = bank.get("inference.quant.smoothquant")
    assert not contradictions_asserted(answer, q)  # no authored phrasing
    assert [h.name for h in bank_scorer.wrong_claims(q, answer)] == ["smoothquant clips"]


def test_stems_are_one_word_only_from_four_letters_on() -> None:
    assert paraphrase._shared({"clip", "speedu", "ram"}, {"clipp", "speed", "ra", "rams"}) == {
        "clip",
        "speedu",
    }
    assert paraphrase._shared({"cost"}, {"co", "coat"}) == set()


@pytest.mark.parametrize(
    "answer",
    [
        "My guess is SmoothQuant might be clipping the outlier channels, but I would have to check the paper.",
        "One hypothesis: SmoothQuant is clipping the outlier channels; maybe it rescales them instead.",
    ],
)
def test_a_hedged_clause_asserts_no_wrong_claim(bank, bank_scorer, answer: str) -> None:
    """A possibility offered to check is not a claim to challenge."""
    q = bank.get("inference.quant.smoothquant")
    assert bank_scorer.wrong_claims(q, answer) == []
    assert bank_scorer.wrong_claims(q, paraphrase.HEDGE.sub("", answer)) != []  # the same words, asserted


THROUGHPUT_FASTER = "more throughput makes every request faster"


@pytest.mark.parametrize(
    "answer",
    [
        f"A common belief is that {THROUGHPUT_FASTER}.",
        f"You\u2019d think {THROUGHPUT_FASTER}.",
        "You'd expect more throughput to make every request faster.",
        "Higher throughput isn't free and doesn't make every request faster.",
        f"Two hypotheses to test: {THROUGHPUT_FASTER}, or the queue hides the cost.",
        f"What I suspect: {THROUGHPUT_FASTER}.",
    ],
)
def test_a_belief_a_second_negated_predicate_or_a_hedged_heading_asserts_no_wrong_claim(
    bank, bank_scorer, answer: str
) -> None:
    """Someone else's belief (also "you'd think"), a claim denied by its own "and doesn't" after a first
    negation (the two cues deny one predicate each, they do not cancel), and a list of suspects after a colon are
    not the candidate's claims; said flatly, the same claim is read."""
    q = bank.get("case.benchmark-contract")
    assert bank_scorer.wrong_claims(q, answer) == []
    assert [
        h.name for h in bank_scorer.wrong_claims(q, f"{THROUGHPUT_FASTER[0].upper()}{THROUGHPUT_FASTER[1:]}.")
    ] == ["throughput equals latency"]


@pytest.mark.parametrize(
    ("played_down", "flat"),
    [
        (
            "With a bigger batch each step gets marginally slower.",
            "With a bigger batch each step gets proportionally slower.",
        ),
        (
            "Each step gets slightly slower as the batch grows.",
            "Each step gets proportionally slower as the batch grows.",
        ),
    ],
)
def test_a_change_played_down_is_not_a_claim_of_a_strong_degree(
    bank, bank_scorer, played_down: str, flat: str
) -> None:
    """ "Slightly slower" moves the same way as "proportionally slower" but does not claim it."""
    q = bank.get("inference.batching.decode-bandwidth-bound")
    assert bank_scorer.wrong_claims(q, played_down) == []
    assert [h.name for h in bank_scorer.wrong_claims(q, flat)] == ["batching slows each token proportionally"]


def test_a_second_negated_predicate_keeps_its_own_negation_in_the_clause_reader() -> None:
    assert find_assertion("FlashAttention isn't an approximation and doesn't cut FLOPs.", "cut flops") is None
    assert find_assertion("FlashAttention is exact and cuts FLOPs.", "cuts flops") is not None
    assert (
        find_assertion("It is not true that it isn't atomic.", "isn't atomic") is None
    )  # one outer negation
    assert find_assertion("It never helps, and it is not slow either.", "helps") is None


def test_the_rubrics_own_words_are_never_read_as_its_wrong_claim(bank, bank_scorer) -> None:
    """A candidate who repeats a model answer (the report shows them) is not challenged for it: a long piece of
    a right statement, word for word, is that statement. "many gradients ... are smaller" shares a direction with
    "loss scaling shrinks gradients", and a later push step's key point ("the last partial tile covers 3 rows")
    is as true as the first step's."""
    mixed = bank.get("phone.hardware.mixed-precision-loss-scaling")
    assert bank_scorer.wrong_claims(mixed, mixed.model_answer) == []
    tiled = bank.get("cpp.tiled-transpose")
    later = [k for p in tiled.push[1:] for k in p.key_points]
    assert later and all(bank_scorer.wrong_claims(tiled, k) == [] for k in later)
    assert set(later) <= set(RubricSpec.from_question(tiled).right_statements())
    # A wrong claim said beside the recited answer is still found.
    wrong = "To be clear, loss scaling shrinks the gradients."
    hits = bank_scorer.wrong_claims(mixed, f"{mixed.model_answer} {wrong}")
    assert [h.name for h in hits] == ["scaling prevents overflow"] and hits[0].sentence == wrong


@pytest.mark.slow
def test_no_model_answer_in_the_bank_is_read_as_one_of_its_wrong_claims(bank, bank_scorer) -> None:
    bad = [
        f"{q.id}: '{h.claim}' in {h.sentence[:80]!r}"
        for q in bank.questions.values()
        for h in bank_scorer.wrong_claims(q, q.model_answer)
    ]
    assert not bad, "\n".join(bad)
