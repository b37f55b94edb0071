"""Grading against a reference answer alone (``interviewer grade``): short genuine answers are graded, not
called off-topic; answers about something else still are.

Real sentence model (MiniLM), the same ``grade_one`` path the CLI uses. Every answer here is written for this
test; none is a row of a public data set.
"""

from __future__ import annotations

import pytest

from interviewer.content import load_bank
from interviewer.embeddings import MiniLMEmbedder
from interviewer.scoring import stages
from interviewer.scoring.coverage import CoverageResult
from interviewer.scoring.scorer import RubricScorer
from interviewer.scoring.spec import RubricSpec
from tests.conftest import REPO
from tests.scoring_samples import DECODE_ID

BST = (
    "What is the worst-case time to find a key in a balanced binary search tree?",
    "Proportional to the height of the tree, because every comparison moves one level down.",
)
LINKED = (
    "Why would you pick a linked list over an array?",
    "A linked list can grow and shrink at run time without reallocating.",
)
ACCESS = ("Name the access levels a C++ class can give its members.", "Public, private and protected.")
WATERFALL = (
    "Which phases come after design in the waterfall model?",
    "Implementation comes next, then verification, and finally maintenance.",
)
OVERLOAD = (
    "How are two functions with the same name told apart by the compiler?",
    "By their signatures: the number, the types and the order of their parameters.",
)

# Right, in words the reference does not use; each is too short or too differently worded for a sentence
# similarity to find it close to the reference.
SHORT_GENUINE = [
    (*BST, "log n"),
    (*BST, "logarithmic"),
    (*LINKED, "it is growable"),
    (*LINKED, "no fixed capacity"),
    (*OVERLOAD, "by what you pass in"),
]
# A one-sentence list naming what the question asks for.
NAMING_LISTS = [(*ACCESS, "private, protected, public"), (*WATERFALL, "coding, testing, upkeep")]
OFF_TOPIC = [
    (
        *BST,
        "I really enjoyed the lecture on operating systems; the professor explained virtual memory and paging "
        "very clearly and the labs were fun.",
    ),
    (
        *LINKED,
        "My favourite pizza has mushrooms, extra cheese and a thin crust, baked in a wood oven for two minutes.",
    ),
    (*ACCESS, "mushrooms, cheese, crust"),
]


@pytest.fixture(scope="module")
def scorer() -> RubricScorer:
    return RubricScorer(MiniLMEmbedder())


def _flagged(result: dict) -> list[str]:
    return [n for n in result["notes"] if n.startswith(("off-topic", "capped at", "no credit", "relevance "))]


@pytest.mark.slow
@pytest.mark.parametrize(("question", "reference", "answer"), SHORT_GENUINE)
def test_a_short_genuine_answer_is_graded_not_called_off_topic(scorer, question, reference, answer) -> None:
    got = scorer.grade_one(question, answer, reference)
    assert got["score"] > stages.OFF_TOPIC_MAX, got["notes"]
    assert not _flagged(got), got["notes"]


@pytest.mark.slow
@pytest.mark.parametrize(("question", "reference", "answer"), NAMING_LISTS)
def test_a_one_sentence_list_against_a_reference_is_scored_as_an_answer(
    scorer, question, reference, answer
) -> None:
    got = scorer.grade_one(question, answer, reference)
    assert got["score"] >= 2.0, got["notes"]
    assert not _flagged(got), got["notes"]


@pytest.mark.slow
@pytest.mark.parametrize(("question", "reference", "answer"), OFF_TOPIC)
def test_an_answer_about_something_else_is_still_off_topic(scorer, question, reference, answer) -> None:
    got = scorer.grade_one(question, answer, reference)
    assert got["score"] <= stages.OFF_TOPIC_MAX, got["notes"]
    assert any(n.startswith("off-topic") for n in got["notes"]), got["notes"]


@pytest.mark.slow
def test_lists_padding_an_answer_against_a_reference_still_earn_nothing(scorer) -> None:
    question, reference = ACCESS
    padded = scorer.grade_one(
        question, "Members can be hidden. static, virtual, inline. friend, const, mutable.", reference
    )
    assert any(n.startswith("no credit for 2 sentence(s)") for n in padded["notes"]), padded["notes"]


@pytest.mark.slow
def test_a_bank_question_keeps_its_stricter_rules(scorer) -> None:
    """Bank questions keep every off-topic rule: a terse answer there is judged by relevance like any."""
    q = load_bank(REPO).get(DECODE_ID)
    spec = RubricSpec.from_question(q)
    assert not spec.reference_only
    got = scorer.score(q, ["pizza"])
    assert got.overall <= stages.OFF_TOPIC_MAX, got.notes


def test_only_a_reference_answer_makes_a_reference_only_spec() -> None:
    assert RubricSpec.from_rubric(*BST, None).reference_only
    assert not RubricSpec.from_rubric(BST[0], BST[1], {"key_points": ["height of the tree"]}).reference_only
    assert not RubricSpec.from_rubric(
        BST[0], None, "height of the tree\nlog of the node count"
    ).reference_only


def test_reference_only_relevance_drops_the_unmet_rule_and_skips_terse_answers() -> None:
    unmet = (stages.OFF_TOPIC_BELOW + stages.UNMET_OFF_TOPIC_BELOW) / 2
    assert stages.off_topic_reason(unmet, None, met=False, covered=False) is not None
    assert stages.off_topic_reason(unmet, None, met=False, covered=False, reference_only=True) is None
    low = stages.OFF_TOPIC_BELOW / 2
    assert stages.off_topic_reason(low, None, met=False, covered=False, reference_only=True) is not None
    assert (
        stages.terse("log n")
        and stages.terse("it is growable")
        and not stages.terse("coding, testing, upkeep")
    )
    nothing = CoverageResult(0.0, 0.0, [], {})
    short = stages.relevance(
        nothing, None, exempt=False, covered=False, met=False, reference_only=True, terse=True
    )
    assert not short.off_topic and short.cap() == 4.0
    assert stages.relevance(nothing, None, exempt=False, covered=False, met=False, terse=True).off_topic


def test_a_genuine_story_is_not_off_topic_for_sharing_little_wording_with_the_rubric(scorer) -> None:
    """Story rounds drop the unmet-rubric rule; the absolute relevance rule still applies to them."""
    unmet = (stages.OFF_TOPIC_BELOW + stages.UNMET_OFF_TOPIC_BELOW) / 2
    assert stages.off_topic_reason(unmet, None, met=False, covered=False, story=True) is None
    low = stages.OFF_TOPIC_BELOW / 2
    assert stages.off_topic_reason(low, None, met=False, covered=False, story=True) is not None
    from tests.support.traps import load_traps, question_split

    qid = "behavioral.failure-and-learning"  # a dev question of the trap set
    assert question_split(qid) == "dev"
    q = load_bank(REPO).get(qid)
    assert (
        RubricSpec.from_question(q).story
        and not RubricSpec.from_question(load_bank(REPO).get(DECODE_ID)).story
    )
    story = load_traps()[qid].texts()["strong"]
    got = scorer.score(q, [story])
    assert not any(n.startswith("off-topic") for n in got.notes), got.notes
    assert got.overall > 2.0
    assert scorer.off_topic(q, story) is None  # and the interviewer does not redirect it


SHORT_STORIES = [
    (
        "behavioral.failure-and-learning",
        "I shipped a cache change without a canary and took down search for an hour; now every change I make "
        "goes out behind a flag.",
    ),
    (
        "behavioral.mentoring",
        "I paired with our new grad on her first on-call week, and by the third incident she was leading the call.",
    ),
    (
        "behavioral.hard-feedback",
        "My lead told me my design docs were too long to review, so I started writing a one-page summary first.",
    ),
    ("recruiter.why-gpu-infra", "I got hooked when a fused kernel I wrote cut our serving bill in half."),
]
KITCHEN = "I spent the weekend repainting my kitchen; we chose a pale green and it took three coats to cover."


@pytest.mark.parametrize(("qid", "story"), SHORT_STORIES)
def test_a_short_genuine_story_is_not_off_topic_and_the_report_agrees_with_the_interviewer(
    bank, bank_scorer, qid, story
) -> None:
    """A story shares little wording with the rubric's key points: its relevance also reads the model answer,
    as the interviewer's off-topic check does, so a short genuine story keeps its credit."""
    q = bank.get(qid)
    got = bank_scorer.score(q, [story])
    assert not any(n.startswith("off-topic") for n in got.notes), got.notes
    assert got.overall > stages.OFF_TOPIC_MAX
    assert bank_scorer.off_topic(q, story) is None
    spec = RubricSpec.from_question(q)
    assert stages.story_similarity(bank_scorer.encoder, spec, story) > stages.OFF_TOPIC_BELOW
    # About something else entirely, it is still off-topic, and the interviewer redirects the same answer.
    off = bank_scorer.score(q, [KITCHEN])
    assert off.overall <= stages.OFF_TOPIC_MAX and bank_scorer.off_topic(q, KITCHEN) is not None
    # Technical questions keep their own relevance: the model answer is read for stories only.
    assert (
        stages.story_similarity(bank_scorer.encoder, RubricSpec.from_question(bank.get(DECODE_ID)), story)
        == 0
    )


def test_an_answer_about_something_else_scores_no_higher_for_also_getting_a_key_point_wrong(
    bank, bank_scorer
) -> None:
    """A wrong name the candidate wrote ties the text to the question only through what it gets wrong."""
    from interviewer.scoring.stages import (
        CONTRADICTED_ANSWER_MAX,
        OFF_TOPIC_MAX,
        ReadingFinding,
        ReadingInput,
    )

    q = bank.get("phone.hardware.amdahls-law")
    law = next(p for p in q.probes if p.kind == "named" and "Little's law" in p.reject)

    def reads_the_wrong_law(asked: ReadingInput) -> list[ReadingFinding]:
        return [
            ReadingFinding(p, "Little's law", "contradicted", asked.answers["main"])
            if p is law
            else ReadingFinding(p, None, "absent")
            for p in asked.probes
        ]

    reads_the_wrong_law.trust = 0.9  # type: ignore[attr-defined]
    queues = (
        "Little's law: the mean number of requests in flight is the arrival rate multiplied by the mean time "
        "each one waits, so a server that sees 200 requests per second at 50 ms holds ten at once."
    )
    alone = bank_scorer.score(q, [queues])
    assert any(c.status == "off-topic" for c in alone.criteria) and alone.overall <= OFF_TOPIC_MAX
    wrong = bank_scorer.score(q, [queues], reader=reads_the_wrong_law)
    assert any(c.status == "contradicted" for c in wrong.criteria)  # reported as the wrong claim ...
    assert wrong.overall <= OFF_TOPIC_MAX  # ... and scored no higher than the off-topic answer it also is
    assert any("apart from the wrong claim" in n for n in wrong.notes), wrong.notes
    # an answer about the question that names the wrong law keeps the wrong claim's own cap
    on_topic = (
        "Amdahl's law bounds the speedup by the serial part: with a fraction p parallel on N workers it is "
        "1 / ((1 - p) + p / N), so 95% parallel never beats 20x. When the problem grows with the workers, "
        "Little's law is the better model."
    )
    got = bank_scorer.score(q, [on_topic], reader=reads_the_wrong_law)
    assert OFF_TOPIC_MAX < got.overall <= CONTRADICTED_ANSWER_MAX
    assert not any("apart from the wrong claim" in n for n in got.notes)
