"""The listener acts on the reading probes' findings when they are ready before Send (no model needed: the
findings are given, or read by the real reader from a scripted model's JSON replies)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from interviewer.content import Bank, Question
from interviewer.content.models import Probe
from interviewer.engine.probing import ActsOn, ProbeAhead
from interviewer.listen import CHALLENGE_ASK, MAX_QUOTE_WORDS, Done, Findings, Listener, choose, heed
from interviewer.llm.client import ChatPort
from interviewer.llm.fake import ScriptedChatModel
from interviewer.session import Interview, Ports
from interviewer.store import SessionStore

from .test_listen import SOLID_MAIN, batching

ASK = "What does the candidate say batching does to throughput?"
PROBES = [
    {"point": "main.0", "kind": "option", "ask": ASK, "options": ["raises it", "lowers it"],
     "true": "raises it", "wrong": ["lowers it"]},
    {"point": "why1.0", "kind": "named", "ask": "How does the candidate say requests arrive?",
     "accept": ["spread out over time"], "reject": ["all at once"]},
    {"point": "why1.1", "kind": "named", "ask": "What does the candidate say the scheduler waits for?",
     "accept": ["stragglers"], "reject": ["nothing"]},
]  # fmt: skip
WRONG_SENTENCE = "Batching lowers throughput because every step has to do more arithmetic."
WRONG = f"Batching groups several requests into one step. {WRONG_SENTENCE}"


def question() -> Question:
    return batching(probes=PROBES)


def readings(points: dict[str, tuple[str, str | None, Any]]) -> dict[str, Any]:
    """Readings.to_json()-shaped findings: point -> (finding, quote, what the probe read)."""
    asks = {p["point"]: p["ask"] for p in PROBES}
    kinds = {p["point"]: p["kind"] for p in PROBES}
    return {
        "main": {
            "probes": [
                {"point": k, "ask": asks[k], "kind": kinds[k], "finding": f, "quote": q, "read": r}
                for k, (f, q, r) in points.items()
            ],
            "points": {k: {"finding": f, "quote": q} for k, (f, q, _) in points.items()},
        }
    }


def move(answer: str, findings: Findings | None, level: int = 0) -> Any:
    q = question()
    reading = heed(q, level, Listener().read(q, level, answer), findings, answer)
    return choose(q, level, reading, Done(), answer)


def test_a_contradicted_key_point_is_challenged_quoting_the_candidates_wrong_sentence():
    found = Findings.from_json(WRONG, readings({"main.0": ("contradicted", WRONG_SENTENCE, "lowers it")}))
    assert move(WRONG, None).move == "why"  # the offline reading alone hears no wrong claim here
    plan = move(WRONG, found)
    assert plan.move == "challenge" and plan.level == 0
    quoted = plan.text.split("\u201c")[1].split("\u201d")[0]
    assert (
        quoted in WRONG_SENTENCE and "lowers throughput" in quoted and len(quoted.split()) <= MAX_QUOTE_WORDS
    )
    assert (
        plan.text.endswith(CHALLENGE_ASK) and "raises" not in plan.text
    )  # the true answer is not given away
    assert plan.meta["contradiction"] == "reading:main.0"
    # Once challenged, the same finding is not challenged again.
    reading = heed(question(), 0, Listener().read(question(), 0, WRONG), found, WRONG)
    again = choose(question(), 0, reading, Done(challenged=frozenset({"reading:main.0"})), WRONG)
    assert again.move == "why"


def test_a_finding_that_matches_an_authored_wrong_claim_gets_its_authored_challenge():
    sentence = "Batching lowers the latency of every request in the queue."
    answer = f"Throughput goes up. {sentence}"
    q = batching(
        probes=[
            {"point": "main.1", "kind": "option", "ask": "What does the candidate say batching does to latency?",
             "options": ["raises the first request's wait", "lowers the latency of every request"],
             "true": "raises the first request's wait", "wrong": ["lowers the latency of every request"]},
        ]
    )  # fmt: skip
    found = Findings.from_json(
        answer,
        {"main": {"probes": [{"point": "main.1", "finding": "contradicted", "quote": sentence,
                              "read": "lowers the latency of every request"}],
                  "points": {"main.1": {"finding": "contradicted", "quote": sentence}}}},
    )  # fmt: skip
    reading = heed(q, 0, Listener().read(q, 0, answer), found, answer)
    plan = choose(q, 0, reading, Done(), answer)
    assert plan.move == "challenge" and plan.meta["contradiction"] == "batching lowers every latency"
    assert plan.text.endswith("What happens to the first request that lands in an empty batch?")


def test_no_challenge_without_the_candidates_wrong_sentence_or_with_a_stated_finding():
    cases = [
        {"main.0": ("contradicted", None, "lowers it")},  # no quote
        {
            "main.0": ("contradicted", "Batching lowers throughput a lot, sadly.", "lowers it")
        },  # not in the answer
        {"main.0": ("stated", WRONG_SENTENCE, "raises it")},  # the point is stated, not contradicted
    ]
    for points in cases:
        assert move(WRONG, Findings.from_json(WRONG, readings(points))).move != "challenge", points
    # Two probes of one point disagree (one finds it stated): no clear reading, no challenge.
    mixed = readings({"main.0": ("contradicted", WRONG_SENTENCE, "lowers it")})
    mixed["main"]["probes"].append({"point": "main.0", "ask": "x", "finding": "stated", "quote": None})
    assert move(WRONG, Findings.from_json(WRONG, mixed)).move != "challenge"
    # A quoted sentence that says what the rubric holds true is never challenged, whatever the probe read.
    right = "Batching raises throughput, it does not lower it."
    found = Findings.from_json(right, readings({"main.0": ("contradicted", right, "lowers it")}))
    assert move(right, found).move != "challenge"


def test_a_why_target_the_readings_find_stated_is_not_asked_again():
    answer = SOLID_MAIN
    assert move(answer, None).move == "why" and move(answer, None).level == 1
    found = Findings.from_json(
        answer,
        readings({"why1.0": ("stated", SOLID_MAIN, "spread out over time"), "why1.1": ("stated", None, "x")}),
    )
    plan = move(answer, found)
    assert plan.move == "deepen" and plan.level == 2
    # A why-target with a contradicted point is not taken as answered.
    wrong = readings({"why1.0": ("stated", None, "x"), "why1.1": ("contradicted", SOLID_MAIN, "nothing")})
    assert move(answer, Findings.from_json(answer, wrong)).level == 1


def test_with_no_findings_the_listener_decides_as_before():
    q = question()
    answers = [
        WRONG,
        SOLID_MAIN,
        "I don't know.",
        "It depends.",
        "We tracked everything in Jira tickets and held daily standups during two-week sprints.",
        "I am sure batching lowers every request's latency, so it is always a win.",
    ]
    lis = Listener()
    for answer in answers:
        reading = lis.read(q, 0, answer)
        assert heed(q, 0, reading, None, answer) is reading
    # Findings of nothing stated or contradicted change no move.
    empty = Findings.from_json(WRONG, readings({"main.0": ("not stated", None, None)}))
    for answer in answers:
        assert move(answer, empty).move == move(answer, None).move


def test_a_probe_kind_the_model_reads_poorly_is_never_read_so_its_finding_is_not_heeded():
    q = question()

    def read_ahead(acts_on: ActsOn | None) -> tuple[list[str], Findings]:
        model = ScriptedChatModel().queue(*[_reader_reply] * 12)
        probing = ProbeAhead(ChatPort(model, name="scripted reader"), acts_on=acts_on)
        assert probing.offer(q, 0, WRONG) and probing.wait_idle(10)
        found = probing.ready(q, 0, WRONG)
        assert found is not None
        return _asked_kinds(model), found

    asked, names_only = read_ahead(lambda kind: kind != "option")
    assert asked == ["NAME", "NAME"]  # the option probe was never asked
    assert set(names_only.points) == {"why1.0", "why1.1"}  # its key point is left out, not "not stated"
    # no challenge: the move is the one the answer gets without findings
    assert move(WRONG, names_only).move == move(WRONG, None).move != "challenge"
    asked, every = read_ahead(None)
    assert sorted(set(asked)) == ["CLAIM", "NAME"] and every.points["main.0"].finding == "contradicted"
    assert move(WRONG, every).move == "challenge"  # every kind read and heeded: challenged


def test_the_interview_heeds_only_the_kinds_its_reading_model_is_trusted_on(tmp_path):
    from interviewer.scoring.stages import MIN_KIND_TRUST, ReaderTrust

    model = ScriptedChatModel().queue(*[_reader_reply] * 12)
    it = _interview(
        tmp_path,
        ChatPort(model, name="scripted reader"),
        trust=ReaderTrust(0.8, {"option": MIN_KIND_TRUST - 0.05}),
    )
    it.ahead.read_ahead(WRONG)
    assert it.reading.probing.wait_idle(10)
    assert _asked_kinds(model) == ["NAME", "NAME"]  # only the kinds it is trusted on were asked
    it.submit(WRONG)
    it.advance_all()
    meta = [e.payload for e in it.ports.store.events(it.session_id) if e.kind == "asked"][-1]
    assert meta["move"] != "challenge"


def test_a_reading_model_trusted_on_no_probe_kind_of_the_question_is_never_asked(tmp_path):
    from interviewer.scoring.stages import MIN_KIND_TRUST, MIN_READER_TRUST, ReaderTrust

    model = ScriptedChatModel().queue(*[_reader_reply] * 12)
    it = _interview(
        tmp_path, ChatPort(model, name="scripted reader"), trust=ReaderTrust(MIN_READER_TRUST - 0.05)
    )
    q = question()
    assert not it.reading.probing.offer(q, 0, WRONG)  # below the overall bar: no kind acts
    it.ahead.read_ahead(WRONG)
    assert it.reading.probing.wait_idle(10) and not _asked_kinds(model)
    # trusted on numbers alone, and the question has no number probe: nothing to read either
    numbers = ReaderTrust(0.8, {"option": MIN_KIND_TRUST - 0.05, "named": MIN_KIND_TRUST - 0.05})
    assert not ProbeAhead(ChatPort(model, name="scripted reader"), acts_on=numbers.acts_on).offer(q, 0, WRONG)
    assert not model.calls
    it.submit(WRONG)
    it.advance_all()
    meta = [e.payload for e in it.ports.store.events(it.session_id) if e.kind == "asked"][-1]
    assert meta["move"] != "challenge"


# -- through the engine: read while typed, used at Send only when ready -----------------------------------


def _reader_reply(messages: Any) -> str:
    """The reader's reply to one reading question about PROBES: the letter of "lowers it" for the option (in
    whichever order it is listed), "not stated" for a name."""
    prompt = str(messages[-1].content).split("READING QUESTION")[-1]
    if "CLAIM:" not in prompt:
        return json.dumps({"name": "not stated"})
    letter = re.search(r"^([A-Z])\) lowers it$", prompt, re.M)
    assert letter is not None, prompt
    return letter.group(1) if "the letter alone" in prompt else json.dumps({"claim": letter.group(1)})


def _asked_kinds(model: ScriptedChatModel) -> list[str]:
    """What each reading question the model was asked reads, in order: "CLAIM", "NUMBER" or "NAME"."""
    prompts = [str(m[-1].content) for m in model.calls]
    return [p.split("READING QUESTION\n", 1)[1].split(":", 1)[0] for p in prompts if "READING QUESTION" in p]


def _interview(tmp_path: Path, reader: Any, trust: Any = None) -> Interview:
    q = question()
    ports = Ports(
        bank=Bank(root=tmp_path, questions={q.id: q}),
        store=SessionStore(tmp_path / "s.db"),
        listener=Listener(),
        reading_port=reader,
        reading_trust=trust,
    )
    it = Interview.start(ports, ["inference-deep-dive"], question_ids=[q.id])
    it.advance_all()
    return it


def test_the_answer_read_while_typed_turns_into_a_challenge_at_send(tmp_path):
    model = ScriptedChatModel().queue(*[_reader_reply] * 12)  # one reply per reading question asked
    it = _interview(tmp_path, ChatPort(model, name="scripted reader"))
    it.ahead.read_ahead(WRONG)  # the text so far ends a sentence: read in the background
    assert it.reading.probing.wait_idle(10)
    assert model.calls  # the answer's own probes and the next level's were read before Send
    it.submit(WRONG)
    text = it.advance_all()
    meta = [e.payload for e in it.ports.store.events(it.session_id) if e.kind == "asked"][-1]
    assert meta["move"] == "challenge" and it.level == 0
    assert "lowers throughput" in text.split("\u201c")[1] and "raises" not in text
    answered = [e.payload for e in it.ports.store.events(it.session_id) if e.kind == "answered"][-1]
    assert answered["listen"]["findings"] == {"main.0": "contradicted"}


def test_a_reading_of_nearly_all_the_answer_is_used_and_a_stale_one_is_not(tmp_path):
    reads: list[str] = []

    def read(
        port: Any, q: Question, level: int, text: str, cancel: threading.Event, probes: Sequence[Probe]
    ) -> dict[str, Any]:
        reads.append(text)
        return readings({"main.0": ("contradicted", WRONG_SENTENCE, "lowers it")})

    probing = ProbeAhead(object(), read=read)
    q = question()
    longer = WRONG + " Batch less."  # 19 of its 21 words were read: nearly all of it
    probing.offer(q, 0, WRONG)
    assert probing.wait_idle(10)
    assert probing.ready(q, 0, WRONG) is not None and probing.ready(q, 0, longer) is not None
    much_longer = WRONG + " " + " ".join(["and then some more words were typed"] * 3)
    assert probing.ready(q, 0, much_longer) is None  # most of it unread
    assert probing.ready(q, 0, "Batching groups several requests. " + WRONG_SENTENCE) is None  # edited
    assert probing.ready(q, 1, WRONG) is None  # another level
    assert reads == [WRONG]


def test_send_never_waits_for_a_reading_still_running(tmp_path):
    release = threading.Event()

    def slow(
        port: Any, q: Question, level: int, text: str, cancel: threading.Event, probes: Sequence[Probe]
    ) -> dict[str, Any]:
        release.wait(10)
        return readings({"main.0": ("contradicted", WRONG_SENTENCE, "lowers it")})

    it = _interview(tmp_path, reader=object())
    it.reading.probing = ProbeAhead(object(), read=slow)
    it.ahead.read_ahead(WRONG)
    it.submit(WRONG)  # the reading is not ready: the move is decided without it, as before
    it.advance_all()
    meta = [e.payload for e in it.ports.store.events(it.session_id) if e.kind == "asked"][-1]
    release.set()
    assert meta["move"] == "why" and it.level == 1
    assert it.reading.probing.wait_idle(10)


def test_a_failing_reader_leaves_the_interview_as_before(tmp_path):
    def broken(
        port: Any, q: Question, level: int, text: str, cancel: threading.Event, probes: Sequence[Probe]
    ) -> dict[str, Any]:
        raise RuntimeError("server down")

    it = _interview(tmp_path, reader=object())
    it.reading.probing = ProbeAhead(object(), read=broken)
    it.ahead.read_ahead(WRONG)
    assert it.reading.probing.wait_idle(10) and it.reading.probing.failures == 1
    it.submit(WRONG)
    it.advance_all()
    assert it.level == 1


def test_an_off_topic_answer_is_redirected_unless_the_text_bears_out_a_finding():
    elsewhere = "We tracked everything in Jira tickets and held daily standups during two-week sprints."
    assert move(elsewhere, None).move == "redirect"
    # a claim picked among options about a text on something else can be the model's guess: still redirected
    guessed = Findings.from_json(elsewhere, readings({"main.0": ("stated", elsewhere, "raises it")}))
    assert move(elsewhere, guessed).move == "redirect"
    # a name the candidate wrote is in the text itself: the answer is about the question after all
    named = {"why1.0": ("stated", elsewhere, "spread out over time")}
    written = Findings.from_json(elsewhere, {"main": readings(named)["main"]})
    assert written.written("why1") and not written.written("main")
