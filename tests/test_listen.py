"""An interviewer that listens: each answer is read offline and the next move reacts to it (fake model)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from interviewer.content import Bank, Question
from interviewer.embeddings import HashingEmbedder
from interviewer.engine.followups import intent
from interviewer.listen import (
    MAX_QUOTE_WORDS,
    Done,
    Listener,
    choose,
    leak,
    lexical_coverage,
    quotes_too_much,
)
from interviewer.llm.client import ChatPort
from interviewer.llm.fake import ScriptedChatModel
from interviewer.scoring.models import KeyPointVerdict, QuestionScore
from interviewer.scoring.scorer import HINT_COST, RubricScorer
from interviewer.session import Interview, Ports, clean_followup
from interviewer.store import SessionStore

WHY1_TARGET = "the assumption that every request in a batch arrives at the same moment"
WHY2_TARGET = "what happens to the first request when the batch waits to fill"
KEY_POINT = "batching raises throughput because the weights are read once per step for the whole batch"


def batching(**update) -> Question:
    data = {
        "id": "t.batching",
        "round": "inference-deep-dive",
        "topic": "batching",
        "difficulty": 2,
        "question": "Your decode service serves one request at a time. What does batching change, and for whom?",
        "key_points": [
            KEY_POINT,
            "a request that waits for the batch to fill pays queueing delay in its time to first token",
        ],
        "criteria": [{"name": "latency", "levels": {0: "none", 2: "some", 4: "all"}}],
        "why_chain": [
            {
                "level": 1,
                "target": WHY1_TARGET,
                "key_points": ["requests arrive spread out over time", "the scheduler waits for stragglers"],
                "fallback": "What are you assuming about when the requests in one batch arrive?",
                "hint": "Picture the very first request of the day landing on an idle server.",
            },
            {
                "level": 2,
                "target": WHY2_TARGET,
                "key_points": ["the early request queues until the batch fills", "its tail latency grows"],
                "fallback": "If the server holds a batch open for stragglers, who pays for that wait?",
            },
        ],
        "hint": "Think about what the GPU reads from memory for every generated token.",
        "push": [
            {
                "kind": "constraint",
                "ask": "Traffic grows tenfold overnight; what do you change first, and why?",
                "key_points": ["larger batches until the latency budget is hit"],
            }
        ],
        "contradictions": [
            {
                "name": "batching lowers every latency",
                "claim": "batching lowers the latency of every request",
                "any_of": [
                    "batching lowers every request's latency",
                    "batching reduces latency for all requests",
                ],
                "criterion": "latency",
                "challenge": "What happens to the first request that lands in an empty batch?",
            }
        ],
        "scenario": {
            "facts": {
                "phase": "decode only: prefill runs on a separate pool",
                "traffic": "200 requests/s at peak",
            },
            "candidate_call": ["the maximum batch size"],
        },
        "model_answer": (
            "Batching amortises the weight reads over the batch, so throughput rises, but a request that waits "
            "for the batch to fill pays queueing delay in its time to first token."
        ),
        "knowledge": ["knowledge/inference-deep-dive/batching.md"],
    }
    data.update(update)
    return Question.model_validate(data)


class CountingScorer:
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, question, answers, code_verdict_passed=None, hints=()) -> QuestionScore:
        self.calls.append((question.id, list(answers)))
        return QuestionScore(question_id=question.id, overall=2.0, why_depth=0)


def interview(tmp_path: Path, q: Question | None = None, model=None, scorer=None) -> Interview:
    q = q or batching()
    bank = Bank(root=tmp_path, questions={q.id: q})
    port = ChatPort(model, name="scripted") if model is not None else None
    ports = Ports(
        bank=bank, store=SessionStore(tmp_path / "s.db"), model=port, scorer=scorer, listener=Listener()
    )
    it = Interview.start(ports, ["inference-deep-dive"], question_ids=[q.id])
    it.advance_all()
    return it


def say(it: Interview, answer: str) -> str:
    it.submit(answer)
    return it.advance_all()


def last_asked(it: Interview) -> dict:
    return [e.payload for e in it.ports.store.events(it.session_id) if e.kind == "asked"][-1]


SOLID_MAIN = (
    "Batching lets one weight read serve many requests, so throughput goes up; a request that waits for "
    "the batch to fill pays queueing delay before its first token."
)


# -- reading ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        ("Do you mean prefill or decode?", "asks_back"),
        ("Before I answer: can I assume traffic is steady, or does it spike?", "asks_back"),
        ("I don't know.", "idk"),
        ("Honestly no idea, sorry.", "idk"),
        ("It depends.", "too_short"),
        (
            "We tracked everything in Jira tickets and held daily standups during two-week sprints.",
            "off_topic",
        ),
        ("I am sure batching lowers every request's latency, so it is always a win.", "contradicts"),
        ("Throughput is better and batching lowers the latency of every request too.", "contradicts"),
        (SOLID_MAIN, "partial"),
        ("Weights get read once for the whole batch, so tokens per second rise.", "partial"),
    ],
)
def test_answers_are_read_offline_into_kinds(answer, kind):
    assert Listener().read(batching(), 0, answer).kind == kind


def test_a_denied_or_attributed_wrong_claim_is_not_a_contradiction():
    lis = Listener()
    q = batching()
    assert (
        lis.read(q, 0, "It is not true that batching lowers every request's latency.").kind != "contradicts"
    )
    assert lis.read(q, 0, "People think batching lowers every request's latency; it does not.").kind != (
        "contradicts"
    )
    # someone else's view with a word between the people and the verb, and no denial after it
    assert (
        lis.read(q, 0, "Some engineers believe batching lowers every request's latency.").kind
        != "contradicts"
    )


def test_an_attempt_that_starts_unsure_is_an_answer_not_i_dont_know():
    reading = Listener().read(
        batching(), 0, "I'm not sure, but batching reads the weights once per step for the whole batch."
    )
    assert reading.kind in ("partial", "covered")


def test_an_answer_that_covers_the_next_target_is_read_as_covered():
    answer = (
        SOLID_MAIN
        + " That assumes requests arrive spread out over time and the scheduler waits for stragglers."
    )
    reading = Listener().read(batching(), 0, answer)
    assert reading.kind == "covered" and reading.covers[1] == 1.0


# -- moves, through the engine --------------------------------------------------------------------


def test_a_confident_wrong_claim_is_challenged_by_name_with_a_few_of_the_candidates_words(tmp_path):
    model = ScriptedChatModel()
    it = interview(tmp_path, model=model)
    text = say(
        it, "Easy: in practice batching lowers every request's latency, so we always batch as much as we can."
    )
    assert text.startswith("You said \u201c") and "What happens to the first request" in text
    quoted = text.split("\u201c")[1].split("\u201d")[0]
    assert "batching lowers every request's latency" in quoted and len(quoted.split()) <= MAX_QUOTE_WORDS
    assert not any(p in text.lower() for p in ("great", "good", "right.", "correct"))  # no praise
    assert it.level == 0 and model.calls == []  # the challenge stays on the turn; no model call for it
    meta = last_asked(it)
    assert meta["move"] == "challenge" and meta["contradiction"] == "batching lowers every latency"
    # Insisting does not loop: the same claim is not challenged twice; the why-chain goes on.
    again = say(it, "Still, batching lowers every request's latency in my experience with servers.")
    assert last_asked(it)["move"] == "why" and it.level == 1 and "You said" not in again


def test_a_covered_why_target_is_not_asked_again_and_strong_candidates_get_a_push(tmp_path):
    scorer = CountingScorer()
    model = ScriptedChatModel().queue("If those stragglers never come, who waits for the batch to fill?")
    it = interview(tmp_path, model=model, scorer=scorer)
    main = (
        SOLID_MAIN
        + " That assumes requests arrive spread out over time and the scheduler waits for stragglers."
    )
    text = say(it, main)
    assert it.level == 2 and last_asked(it)["move"] == "deepen"  # why 1 is already answered: skip it
    assert text.startswith("That already answers what I was going to ask next.")
    assert (
        f"probe: {intent(batching(), 2)}" in model.calls[0][1].content
    )  # the model is asked about why 2, not why 1
    push = say(it, "The early request queues until the batch fills, so its tail latency grows.")
    assert it.level == 3 and last_asked(it)["move"] == "push"
    assert push.endswith("Traffic grows tenfold overnight; what do you change first, and why?")
    closing = say(it, "Larger batches until the latency budget is hit, then more replicas.")
    assert it.finished and "end of this interview" in closing
    # The scorer still reads [main, why 1, why 2]: the skipped why 1 is credited to the answer that covered it.
    assert scorer.calls[0][1][:3] == [
        main,
        main,
        "The early request queues until the batch fills, so its tail latency grows.",
    ]


def test_no_push_without_authored_steps_or_without_two_good_whys(tmp_path):
    it = interview(tmp_path, q=batching(push=[]))
    say(it, SOLID_MAIN)
    say(it, "Requests arrive spread out over time and the scheduler waits for stragglers.")
    say(it, "The early request queues until the batch fills and its tail latency grows.")
    assert it.finished
    it2 = interview(tmp_path / "b")
    say(it2, SOLID_MAIN)
    say(it2, "Hmm, the GPU is fast with memory reads, the batching helps the weights.")
    say(it2, "The early request queues until the batch fills and its tail latency grows.")
    assert it2.finished  # why 1 was not answered well: no escalation


def test_i_dont_know_gets_one_graded_hint_recorded_on_the_turn(tmp_path):
    it = interview(tmp_path)
    text = say(it, "I don't know.")
    assert "Think about what the GPU reads from memory for every generated token." in text
    assert text.startswith("That's fine") and it.level == 0
    meta = last_asked(it)
    assert meta["move"] == "hint" and meta["hints_used"] == 1 and meta["hint_level"] == 0
    assert it.scoring.hints_used("t.batching") == 1
    say(it, "No idea still.")  # a second "I don't know" is not hinted again: the interview moves on
    assert it.level == 1 and it.scoring.hints_used("t.batching") == 1
    hint2 = say(it, "I really don't know.")
    assert "Picture the very first request" in hint2 and it.scoring.hints_used("t.batching") == 2
    assert last_asked(it)["hint_level"] == 1


def test_i_dont_know_without_an_authored_hint_is_invited_to_guess_and_costs_nothing(tmp_path):
    it = interview(tmp_path, q=batching(hint=None))
    text = say(it, "I don't know")
    assert "best guess" in text and it.level == 0
    assert last_asked(it)["move"] == "encourage" and it.scoring.hints_used("t.batching") == 0


def test_off_topic_is_redirected_once(tmp_path):
    it = interview(tmp_path)
    text = say(it, "We tracked everything in Jira tickets and held daily standups during two-week sprints.")
    assert text.startswith("Let's stay on the question I asked.") and "batching" in text and it.level == 0
    assert "Question 1 of 1" not in text  # the question itself, not the opening's header
    say(it, "Our retros were on Fridays and the coffee machine was always broken downstairs.")
    assert it.level == 1  # redirected once; then the interview goes on


EPISODE_QUESTION = "Tell me about a time batching made a request slower for someone. What happened?"
HABIT = "I always measure the time to first token per request before I turn batching on, and I keep the window short."
STORY = "Last spring we turned on batching and our first request of the morning waited 40 ms for stragglers."
ROUTINE = "At my last job we batched every request and checked the dashboards each morning with the on-call."


def test_a_first_answer_with_no_episode_is_asked_for_one_specific_time_once(tmp_path):
    it = interview(tmp_path, q=batching(id="t.batching-story", episode=True, question=EPISODE_QUESTION))
    text = say(it, HABIT)
    assert text.startswith("Let's make it concrete") and "one specific time" in text and it.level == 0
    assert last_asked(it)["move"] == "redirect"
    say(it, "Again, I measure first and keep the batching window short.")
    assert it.level == 1  # asked once; then the interview goes on


def test_a_story_answers_an_episode_question_and_a_habit_answers_any_other():
    listener = Listener()
    told = batching(id="t.batching-story", episode=True, question=EPISODE_QUESTION)
    assert listener.read(told, 0, STORY).kind != "no_episode"
    assert choose(told, 0, listener.read(told, 0, STORY), Done(), STORY).move != "redirect"
    assert listener.read(told, 0, HABIT).kind == "no_episode"
    assert listener.read(told, 0, ROUTINE).kind == "no_episode"  # a routine, even placed at a past job
    assert listener.read(batching(), 0, HABIT).kind != "no_episode"  # not asked for an episode
    assert listener.read(told, 1, HABIT).kind != "no_episode"  # a why answer may speak in general


def test_a_wrong_claim_with_no_episode_is_challenged_rather_than_asked_for_a_time():
    q = batching(id="t.batching-story", episode=True, question=EPISODE_QUESTION)
    wrong = "In my view batching reduces latency for all requests, so I turn it on everywhere."
    plan = choose(q, 0, Listener().read(q, 0, wrong), Done(), wrong)
    assert plan.move == "challenge"


def test_a_question_back_is_answered_from_the_scenario_without_advancing(tmp_path):
    model = ScriptedChatModel()
    it = interview(tmp_path, model=model)
    reply = say(it, "Do you mean prefill or decode?")
    assert "decode only: prefill runs on a separate pool" in reply
    assert it.level == 0 and it.awaiting == "candidate" and model.calls == []
    kinds = [e.kind for e in it.ports.store.events(it.session_id)]
    assert "answered" not in kinds and kinds[-1] == "clarified"
    # A resumed session shows the exchange and keeps the turn open.
    again = Interview.resume(it.ports, it.session_id)
    assert again.level == 0 and again.awaiting == "candidate"
    assert [m["content"] for m in again.messages()] == [m["content"] for m in it.messages()]
    say(again, SOLID_MAIN)
    assert again.level == 1 and again.state.answers["t.batching"] == [SOLID_MAIN]


def test_too_short_is_asked_to_expand_once(tmp_path):
    it = interview(tmp_path)
    text = say(it, "It depends.")
    assert "say a bit more" in text and it.level == 0
    say(it, "Yes, probably.")
    assert it.level == 1
    assert it.state.answers["t.batching"] == ["It depends.\nYes, probably."]  # one answer per level


def test_a_move_chosen_before_a_crash_is_replayed_from_the_log(tmp_path):
    it = interview(tmp_path)
    it.submit("I don't know.")  # the hint is chosen and stored with the answer, then the process dies
    again = Interview.resume(it.ports, it.session_id)
    assert again.awaiting == "interviewer"
    assert (
        "Think about what the GPU reads" in again.advance_all()
        and again.scoring.hints_used("t.batching") == 1
    )


def test_a_natural_turn_acknowledges_a_fair_answer_in_one_clause(tmp_path):
    model = ScriptedChatModel().queue("Great answer! When do the requests in your batch actually arrive?")
    it = interview(tmp_path, model=model)
    text = say(it, SOLID_MAIN)
    ack, _, question = text.partition(". ")
    assert ack in {"Right", "OK, that makes sense", "Fair enough"}
    assert question == "When do the requests in your batch actually arrive?"  # the model's praise is dropped
    # A thin answer gets no acknowledgement, just the question.
    model.queue("When do the requests in your batch actually arrive?")
    it2 = interview(tmp_path / "thin", model=model)
    assert (
        say(it2, "Throughput goes up with batching.") == "When do the requests in your batch actually arrive?"
    )


def test_a_spoken_why_always_opens_with_a_fixed_lead_the_voice_has_ready(tmp_path):
    """Spoken, a model-written why opens with a fixed lead yielded before the model starts; typed, it does not."""
    from interviewer.listen import SPOKEN_LEADS, bridge

    thin = "Throughput goes up with batching."
    for mode, expect_lead in (("spoken", True), ("typed", False)):
        model = ScriptedChatModel().queue("When do the requests in your batch actually arrive?")
        it = interview(tmp_path / mode, model=model)
        it.submit(thin, mode=mode)
        shown = list(it.advance())
        question = "When do the requests in your batch actually arrive?"
        if expect_lead:
            assert shown[0] == bridge(thin) and shown[0] in SPOKEN_LEADS  # before any model text
            assert shown[-1] == f"{bridge(thin)} {question}"
            assert last_asked(it)["source"] == "model" and last_asked(it)["move"] == "why"
        else:
            assert shown[-1] == question
    # A fair spoken answer keeps its acknowledgement; the bridge is only for answers without one.
    model = ScriptedChatModel().queue("When do the requests in your batch actually arrive?")
    it = interview(tmp_path / "fair", model=model)
    it.submit(SOLID_MAIN, mode="spoken")
    ack = it.advance_all().partition(". ")[0] + "."
    assert ack in SPOKEN_LEADS and ack != bridge(SOLID_MAIN)


def test_a_spoken_wrong_claim_or_off_topic_answer_gets_no_bridge():
    q = batching()
    listener = Listener()
    wrong = "batching reduces latency for all requests, full stop, it is always true."
    plan = choose(q, 0, listener.read(q, 0, wrong), Done(), wrong, spoken=True)
    assert plan.move == "challenge" and plan.ack is None
    off = "We tracked everything in Jira tickets and held daily standups during two-week sprints."
    plan = choose(q, 0, listener.read(q, 0, off), Done(), off, spoken=True)
    assert plan.move == "redirect" and plan.ack is None


@contextlib.contextmanager
def _typed_interview(tmp_path: Path, q: Question) -> Iterator[tuple[Any, Any, Interview, list[str]]]:
    """An interview on ``q`` against the stand-in server, asking for the first answer, with a listener whose
    every reading is recorded: (server, model port, interview, the answers read)."""
    from interviewer.config import load_settings
    from interviewer.llm.client import build_port
    from interviewer.llm.standin import StandinServer

    with StandinServer(keep_prompts=1000) as server:
        settings = load_settings(data_dir=tmp_path, base_url=server.base_url, timeout=10.0)
        port = build_port(settings, base_url=server.base_url, model="standin")
        assert port.prefiller is not None
        answers_read: list[str] = []

        def coverage(answer, key_points, question):
            answers_read.append(answer)
            return lexical_coverage(answer, key_points, question)

        ports = Ports(
            bank=Bank(root=tmp_path, questions={q.id: q}),
            store=SessionStore(tmp_path / "s.db"),
            model=port,
            listener=Listener(coverage=coverage),
        )
        it = Interview.start(ports, ["inference-deep-dive"], question_ids=[q.id])
        it.advance_all()
        yield server, port, it, answers_read


def _fresh_interview(it: Interview, q: Question) -> Interview:
    """Another interview on ``q`` with the same bank, store and model port, and a listener of its own."""
    p = it.ports
    fresh = Interview.start(
        Ports(bank=p.bank, store=p.store, model=p.model, listener=Listener()),
        ["inference-deep-dive"],
        question_ids=[q.id],
    )
    fresh.advance_all()
    return fresh


def test_typing_an_answer_that_skips_a_level_prefills_the_deeper_prompt(tmp_path):
    """A deepen names level 2 before the answer: prefill must send that prompt, not level 1's, or Send reads the
    whole answer again. The reading is made at a sentence's end and Send reuses it."""
    main = (
        SOLID_MAIN
        + " That assumes requests arrive spread out over time and the scheduler waits for stragglers."
    )
    q = batching()
    with _typed_interview(tmp_path, q) as (server, port, it, answers_read):
        assert port.prefiller.wait_idle(10)
        before = len(server.stats.prompts)
        words = main.split()
        for n in range(1, len(words) + 1):  # an input event per word; the last one without a trailing space
            it.prefill(" ".join(words[:n]) + ("" if n == len(words) else " "))
            assert port.prefiller.wait_idle(10)
        ahead = [p[-1]["content"] for p in server.stats.prompts[before:]]
        assert main in answers_read  # read ahead at the last sentence's end
        reads = len(answers_read)
        it.submit(main)
        it.advance_all()
        assert it.level == 2 and last_asked(it)["move"] == "deepen"
        final = next(
            p[-1]["content"]
            for p in server.stats.prompts
            if main + "\n</candidate_answer>" in p[-1]["content"]
        )
        assert f"probe: {intent(q, 2)}" in final
        # Before the first sentence ended, the next level was the guess; from then on, the level the reading
        # leads to. The last prompt sent ahead is the final one but for its last word.
        assert f"probe: {intent(q, 1)}" in ahead[0] and f"probe: {intent(q, 2)}" in ahead[-1]
        assert final.startswith(ahead[-1]) and final[len(ahead[-1]) :].lstrip().startswith(words[-1])
        assert len(answers_read) == reads, "Send read the answer again"
        # A typed answer that stays on the next level keeps its prompt (no reading flips it).
        it2 = _fresh_interview(it, q)
        thin = "Batching raises throughput. The weights are read once per step for the whole batch. "
        it2.prefill(thin)
        assert f"probe: {intent(q, 1)}" in it2.ahead.prefill_messages(thin)[-1].content  # type: ignore[index]


def test_an_answer_typed_without_its_last_full_stop_is_read_when_the_typing_pauses(tmp_path):
    """Mid-sentence text is not read while the candidate types; once they stop (``paused``) it is read, the
    prompt sent ahead names the level that reading leads to, and Send reuses the reading."""
    # Skips a level (the why-1 target is in it) and stops without a full stop, as chat messages often do.
    main = (
        SOLID_MAIN
        + " That assumes requests arrive spread out over time and the scheduler waits for stragglers"
    )
    q = batching()
    with _typed_interview(tmp_path, q) as (server, port, it, answers_read):
        words = main.split()
        for n in range(1, len(words) + 1):
            it.prefill(" ".join(words[:n]))
        assert main not in answers_read  # no sentence ended after the first
        before = len(server.stats.prompts)
        assert it.prefill(main, paused=True)
        assert main in answers_read
        assert port.prefiller.wait_idle(10)
        ahead = [p[-1]["content"] for p in server.stats.prompts[before:]]
        assert (
            ahead and f"probe: {intent(q, 2)}" in ahead[-1]
        )  # the deepen's prompt, read from the whole text
        reads = len(answers_read)
        it.submit(main)
        it.advance_all()
        assert it.level == 2 and last_asked(it)["move"] == "deepen"
        assert len(answers_read) == reads, "Send read the answer again"
        # Text that ends a sentence was read when the sentence ended; a pause after it sends nothing again.
        it2 = _fresh_interview(it, q)
        assert it2.prefill(SOLID_MAIN) and not it2.prefill(SOLID_MAIN, paused=True)


# -- no leaks -----------------------------------------------------------------------------------------


def test_a_follow_up_that_leaks_the_rubric_falls_back_to_the_authored_one(tmp_path):
    model = ScriptedChatModel().queue(f"So is it {WHY1_TARGET}?")
    it = interview(tmp_path, model=model)
    text = say(it, SOLID_MAIN)
    assert text.endswith("What are you assuming about when the requests in one batch arrive?")
    assert last_asked(it)["fallback_reason"].startswith("leaks the rubric's wording")


def test_a_follow_up_that_quotes_too_much_of_the_answer_falls_back(tmp_path):
    model = ScriptedChatModel().queue(
        "Why do you say one weight read serve many requests, so throughput goes up?"
    )
    it = interview(tmp_path, model=model)
    say(it, SOLID_MAIN)
    assert last_asked(it)["fallback_reason"] == "quotes too much of the answer"


def test_leak_and_quote_checks():
    q = batching()
    assert leak("Does " + KEY_POINT + "?", q) is not None
    assert leak("What is in a batch?", q) is None
    # The question's own words and the candidate's are not leaks.
    assert leak("What does batching change, and for whom, in your view?", q) is None
    said = ["batching raises throughput because the weights are read once"]
    assert (
        leak("You said batching raises throughput because the weights are read once; why?", q, said) is None
    )
    assert quotes_too_much(
        "So one two three four five six seven eight nine ten?",
        "one two three four five six seven eight nine ten",
    )
    assert not quotes_too_much("So one two three?", "one two three four")


def test_praise_is_not_kept_from_the_model():
    assert (
        clean_followup("Great answer! Exactly right. Why would the batch wait?")
        == "Why would the batch wait?"
    )


def test_choose_never_praises_a_contradiction():
    q = batching()
    reading = Listener().read(
        q, 0, "batching reduces latency for all requests, full stop, it is always true."
    )
    plan = choose(q, 0, reading, Done(), "x")
    assert plan.move == "challenge" and plan.ack is None


def test_with_the_scorers_rule_the_scorer_decides_what_is_off_topic():
    """Runtime gives the listener RubricScorer.off_topic: its verdict, not the word share, decides a redirect."""
    jira = "We tracked everything in Jira tickets and held daily standups during two-week sprints."
    asked: list[str] = []

    def scorer_rule(q, answer):
        asked.append(answer)
        return "relevance 0.12 to this question"

    reading = Listener(topic=scorer_rule).read(batching(), 0, jira)
    assert reading.kind == "off_topic" and reading.reason == "relevance 0.12 to this question"
    assert asked == [jira]
    # The scorer says on topic: no redirect, although the word share alone would have redirected it.
    assert Listener(topic=lambda q, a: None).read(batching(), 0, jira).kind != "off_topic"
    # An answer that covers a key point is never sent to the rule at all.
    asked.clear()
    assert Listener(topic=scorer_rule).read(batching(), 0, SOLID_MAIN).kind != "off_topic"
    assert asked == []


# -- hints and push steps in the score ------------------------------------------------------------------

WHY1_ANSWER = "Requests arrive spread out over time and the scheduler waits for stragglers."
WHY2_ANSWER = "The early request queues until the batch fills and its tail latency grows."
PUSH_ANSWER = (
    "Larger batches until the latency budget is hit: that is what I would change first, then replicas."
)


class InstantJudge:
    """A truth judge that rules at once: the key point is stated."""

    verdicts = (KeyPointVerdict(key_point=KEY_POINT, verdict="stated", confidence=0.9, method="llm-judge"),)

    def __init__(self) -> None:
        self.keys: list[str] = []

    def submit(self, key, question, answer, key_points, done):
        self.keys.append(key)
        done(list(self.verdicts))

    def wait(self, keys=None, *, timeout=None, progress=None) -> bool:
        return True


def hinted_session(tmp_path: Path, scorer, judge=None, last: bool = True) -> Interview:
    """'I don't know' -> the hint -> a solid answer, then both whys (the last one only submitted if ``last``)."""
    q = batching(push=[])
    bank = Bank(root=tmp_path, questions={q.id: q})
    ports = Ports(
        bank=bank, store=SessionStore(tmp_path / "s.db"), scorer=scorer, judge=judge, listener=Listener()
    )
    it = Interview.start(ports, ["inference-deep-dive"], question_ids=[q.id])
    it.advance_all()
    assert "here's a hint" in say(it, "I don't know.")
    say(it, SOLID_MAIN)
    assert it.level == 1
    say(it, WHY1_ANSWER)
    assert it.level == 2
    if last:
        say(it, WHY2_ANSWER)
        assert it.finished
    else:
        it.submit(WHY2_ANSWER)  # stored, then the process dies before the question is scored
    return it


def test_a_hint_costs_points_in_the_live_score(tmp_path):
    scorer = RubricScorer(HashingEmbedder())
    it = hinted_session(tmp_path, scorer)
    answers = it.state.answers["t.batching"]
    assert answers[0] == "I don't know.\n" + SOLID_MAIN
    live = it.scores["t.batching"]
    same_unhinted = scorer.score(it.question or batching(push=[]), answers)
    assert live.overall == pytest.approx(same_unhinted.overall - HINT_COST, abs=0.01)
    assert live.overall < same_unhinted.overall
    assert [(a.kind, a.level) for a in live.adjustments] == [("hint", 0)]
    assert f"hint given at the main question: -{HINT_COST:.2f}" in live.notes


def test_a_hint_still_costs_after_a_restart_and_in_the_truth_judges_rescore(tmp_path):
    scorer = RubricScorer(HashingEmbedder())
    it = hinted_session(tmp_path, scorer, last=False)
    assert "t.batching" not in it.scores
    judge = InstantJudge()
    ports = Ports(bank=it.ports.bank, store=it.ports.store, scorer=scorer, judge=judge, listener=Listener())
    again = Interview.resume(ports, it.session_id)  # scores (and judges) what the crash left unscored
    kinds = [e.kind for e in it.ports.store.events(it.session_id)]
    assert "scored" in kinds and "judged" in kinds and judge.keys == [f"{it.session_id}/t.batching"]
    judged = again.scores["t.batching"]
    assert "llm-judge" in judged.methods and [(a.kind, a.level) for a in judged.adjustments] == [("hint", 0)]
    answers = again.state.answers["t.batching"]
    q = again.ports.bank.get("t.batching")
    unhinted = scorer.score(q, answers, judged=list(InstantJudge.verdicts))
    assert judged.overall == pytest.approx(unhinted.overall - HINT_COST, abs=0.01)
    # A third process replays the stored events: the stored scores carry the cost.
    third = Interview.resume(ports, it.session_id, read_only=True)
    assert third.scores["t.batching"] == judged and third.scoring.hints_used("t.batching") == 1


def test_a_pushed_strong_candidate_is_scored_on_the_push_answer(tmp_path):
    scorer = RubricScorer(HashingEmbedder())
    it = interview(tmp_path, scorer=scorer)
    say(it, SOLID_MAIN)
    say(it, WHY1_ANSWER)
    assert it.level == 2
    say(it, WHY2_ANSWER)
    assert it.level == 3 and last_asked(it)["move"] == "push"
    say(it, PUSH_ANSWER)
    assert it.finished
    answers = it.state.answers["t.batching"]
    assert answers[3] == PUSH_ANSWER
    live = it.scores["t.batching"]
    without = scorer.score(batching(), answers[:3])
    assert live.overall > without.overall
    (push,) = live.adjustments
    assert push.kind == "push" and push.level == 3 and push.delta > 0
    assert push.note.startswith("push (constraint): coverage ")
