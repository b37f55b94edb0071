"""Whether an answer tells a real past episode: sentences written for this test, not taken from any rubric."""

from __future__ import annotations

import pytest

from interviewer.scoring.episode import tells_episode

TOLD = [
    # short but genuine: one past-tense clause is enough
    "We had a 3 a.m. outage once; I rolled back the deploy and wrote the postmortem.",
    "My tech lead wanted dynamic batching and I pushed back with a replay test.",
    "The nightly job failed twice before anyone looked at the disk quota.",
    "I didn't agree with the plan, so I asked for a week to measure it.",
    "Honestly, it went badly at first.",
    # a story told in the present tense, anchored in time
    "So last year I'm on call, the p99 spikes, and I start bisecting the deploys one by one.",
    "Two years ago at a startup, the team is shipping a new ranking model every week and it keeps regressing.",
    "At my previous job the reviews take a month, so I set up a weekly office hour instead.",
    "In 2022 our cluster runs at forty percent utilisation and finance asks me why.",
    # a story told aloud in the present, with no time in it
    "So I'm at this startup, and my manager comes to me on a Thursday and says the demo is now on Monday.",
    "There's this customer who keeps filing the same latency bug, and my lead asks me to own it.",
    "The launch is two days out, my tech lead pings me and says the p99 is through the roof.",
    "I'm on this team building a recommender, and the PM walks in and tells us the deadline is next week.",
    # a routine that sets the scene for one time, or a routine word that describes a thing, not the telling
    "Every week the nightly build broke, and one night I finally bisected it to a stale cache key.",
    "We triaged on Mondays, but the week of the launch I skipped it and paired with the on-call instead.",
    "I wrote a small job that checks the loss curves every morning, and it caught the bad data shard.",
    "I used to think code review slowed us down, until a reviewer caught a race I had missed.",
]
NOT_TOLD = [
    "When priorities collide I rank them by what a week's delay would cost each one.",
    "I would first ask what cheaper means, then profile where the GPU hours go.",
    "I like teams that write short updates instead of holding daily stand-ups.",
    "We need to agree on one metric before anyone changes code.",
    "I've always found that measuring first saves time later.",
    "Good mentoring means pairing early and reviewing often, because the first month sets habits.",
    "For mixed precision keep master weights in FP32 and watch the loss for the first hundred steps.",
    "It depends on the team, but usually I prefer to settle disagreements with data.",
    "If I was wrong, I say so to the team and reverse the recommendation.",
    "I wish we measured more before choosing a kernel.",
    # the same people and verbs as a habit or a condition
    "When my manager asks me for an estimate, I give a range and the assumptions behind it.",
    "Usually my lead tells me what matters most and I plan the week from that.",
    "If a customer calls us about latency, I ask for a trace before anything else.",
    "I'm at my best on a team with clear owners.",
    # a routine, even in the past tense and placed at a job
    "At my previous company we wrote design docs, ran weekly reviews and demoed every Friday.",
    "Every sprint I picked the flakiest test and fixed it before anything else.",
    "At my last job I met each new hire every week for their first month.",
    "Each quarter we sat down with the product team and ranked the backlog together.",
]


@pytest.mark.parametrize("text", TOLD)
def test_a_past_tense_clause_or_a_time_anchor_tells_an_episode(text):
    assert tells_episode(text)


@pytest.mark.parametrize("text", NOT_TOLD)
def test_a_principle_a_habit_or_a_plan_tells_no_episode(text):
    assert not tells_episode(text)


def test_every_episode_question_has_a_model_answer_that_tells_one(bank):
    episodes = [q for q in bank.questions.values() if q.episode]
    assert len(episodes) >= 20
    assert {q.round.value for q in episodes} >= {"behavioral", "recruiter-screen"}
    for q in episodes:
        assert tells_episode(q.model_answer), q.id
    # A question about views or plans is not one: its answers are not asked for a past time.
    assert not bank.get("behavioral.field-direction").episode
    assert not bank.get("recruiter.would-you-stay").episode


HABIT = (
    "When I hold a strong technical position, such as hand-writing kernels instead of trusting the compiler, and a "
    "teammate challenges it, I agree with them up front on what evidence would convince me, rerun the benchmark "
    "myself, and if I was wrong I say so openly to the team and reverse my recommendation. Since then I hold "
    "opinions more loosely."
)
STORY = HABIT.replace("When I hold", "Two years ago I held").replace(" I agree ", " I agreed ")


def test_the_scorer_caps_an_answer_that_tells_no_episode_where_one_was_asked_for(bank, bank_scorer):
    from interviewer.scoring.stages import NO_EPISODE_MAX

    q = bank.get("behavioral.changed-mind")
    assert q.episode
    habit = bank_scorer.score(q, [HABIT])
    assert habit.overall == NO_EPISODE_MAX
    assert any(n.startswith(f"capped at {NO_EPISODE_MAX}: a real time was asked for") for n in habit.notes)
    assert [(c.kind, c.at) for c in habit.caps] == [("no-episode", NO_EPISODE_MAX)]
    # The same words as a story, or the habit on a question that asks for none, are not capped.
    story = bank_scorer.score(q, [STORY])
    assert story.overall > NO_EPISODE_MAX + 1 and not any("real time" in n for n in story.notes)
    assert story.caps == []
    views = bank_scorer.score(q.model_copy(update={"id": "t.views", "episode": False}), [HABIT])
    assert views.overall > NO_EPISODE_MAX + 1
    # Asked for a time, the candidate tells one: the answers at that level join, and nothing is capped.
    joined = bank_scorer.score(q, [f"{HABIT} {STORY}"])
    assert joined.overall > NO_EPISODE_MAX


def test_a_rubric_given_to_grade_can_ask_for_an_episode(bank_scorer):
    """``interviewer grade`` with an ad-hoc rubric: ``episode: true`` caps an answer that tells none."""
    from interviewer.scoring.stages import NO_EPISODE_MAX

    rubric = {
        "key_points": [
            "names the strongly held position and why it was held",
            "the evidence that changed it and how it was checked",
            "says so to the team and reverses the recommendation",
        ],
        "episode": True,
    }
    question = "Tell me about a time you changed your mind about a technical opinion you held strongly."
    capped = bank_scorer.grade_one(question, HABIT, rubric=rubric)
    assert capped["score"] == NO_EPISODE_MAX
    told = bank_scorer.grade_one(question, STORY, rubric=rubric)
    plain = bank_scorer.grade_one(question, HABIT, rubric={**rubric, "episode": False})
    assert told["score"] > NO_EPISODE_MAX and plain["score"] > NO_EPISODE_MAX
