"""Loop presets, a full loop paused and resumed, job-posting steering, and clarifying questions."""

from __future__ import annotations

from pathlib import Path

import pytest

from interviewer.clarify import NO_SCENARIO, NOT_SPECIFIED, answer_clarification
from interviewer.content import Round
from interviewer.deep_dive import deep_dive_questions
from interviewer.embeddings import HashingEmbedder
from interviewer.errors import ContentError, InputError
from interviewer.loops import (
    custom_loop,
    list_presets,
    load_preset,
    load_preset_file,
    plan_loop,
    resume_questions_for,
    start_loop,
)
from interviewer.posting import analyze_posting, plan_for_posting, weights_from_posting
from interviewer.report import build_report
from interviewer.resume import parse_resume
from interviewer.session import Interview, Ports
from interviewer.store import SessionStore

from .conftest import REPO
from .resume_samples import RESUME_MD

LOOPS = REPO / "loops"


class Clock:
    def __init__(self) -> None:
        self.t = 1_000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture(scope="module")
def resume():
    return parse_resume(RESUME_MD, owner="dana")


# -- presets ----------------------------------------------------------------------------------------


def test_presets_load_and_mirror_the_reported_loops(bank, resume):
    presets = {p.id: p for p in list_presets(LOOPS)}
    assert set(presets) == {"inference-optimization", "applied-ml", "platform-data", "new-graduate", "senior"}

    inf = presets["inference-optimization"]
    assert inf.rounds[0].round is Round.PHONE  # the screen, then seven onsite rounds
    onsite = inf.rounds[1:]
    assert len(onsite) == 7 and sum(r.round is Round.CPP for r in onsite) == 3
    assert sum(r.round is Round.GPU for r in onsite) == 1
    assert inf.round_minutes()["cpp-systems"] == 180  # the three C++ rounds share one clock

    assert len(presets["applied-ml"].rounds) == 4
    platform = presets["platform-data"]
    assert len(platform.rounds) == 9 and {r.minutes for r in platform.rounds} == {60}
    platform_topics = {t for r in platform.rounds for t in r.topics}
    assert {"spark", "telemetry", "object-storage"} <= platform_topics
    assert {r.round for r in presets["new-graduate"].rounds} >= {Round.ML_CODING, Round.PHONE}
    senior = presets["senior"]
    assert senior.needs_resume and Round.DESIGN in {r.round for r in senior.rounds}

    # Every preset plans on the real bank, with the topics its rounds ask for.
    for p in presets.values():
        plan = plan_loop(bank, p, resume_questions_for(p, resume), seed=3)
        assert not plan.notes, (p.id, plan.notes)
        assert len(plan.question_ids) == len(set(plan.question_ids)) == sum(r.questions for r in p.rounds)
        assert plan.round_minutes == p.round_minutes()
    plan = plan_loop(bank, platform, seed=3)
    assert {"inference.data.spark-skew", "design.telemetry-collector"} <= set(plan.question_ids)
    assert {"inference.data.object-storage-rename", "design.runaway-query-guard"} <= set(plan.question_ids)
    assert load_preset("senior", LOOPS) == senior


def _copy_with(tmp_path: Path, name: str, old: str, new: str) -> Path:
    d = tmp_path / "loops"
    d.mkdir(exist_ok=True)
    text = (LOOPS / f"{name}.yaml").read_text()
    assert old in text
    p = d / f"{name}.yaml"
    p.write_text(text.replace(old, new, 1))
    return p


def test_a_malformed_preset_names_the_file_and_the_field(tmp_path):
    p = _copy_with(tmp_path, "applied-ml", "minutes: 45", "minutes: -5")
    with pytest.raises(ContentError) as e:
        load_preset_file(p)
    assert str(p) in str(e.value) and "field 'rounds.1.minutes'" in str(e.value)

    p = _copy_with(tmp_path, "applied-ml", "round: ml-coding", "round: knitting")
    with pytest.raises(ContentError, match=r"applied-ml\.yaml: field 'rounds\.3\.round'"):
        load_preset_file(p)

    p = _copy_with(tmp_path, "applied-ml", "questions: 2\n", "questions: 2\n    colour: red\n")
    with pytest.raises(ContentError, match=r"field 'rounds\.0\.colour'"):
        list_presets(tmp_path / "loops")

    p = _copy_with(
        tmp_path,
        "senior",
        "round: inference-deep-dive",
        "round: inference-deep-dive\n    deep_dive: [hardware]",
    )
    with pytest.raises(ContentError, match="deep_dive kinds only apply"):
        load_preset_file(p)

    p = _copy_with(tmp_path, "new-graduate", "id: new-graduate", "id: new-grad")
    with pytest.raises(ContentError, match=r"field 'id' is 'new-grad' but the file is 'new-graduate.yaml'"):
        load_preset_file(p)

    with pytest.raises(InputError, match=r"no loop preset 'nope'.*known: applied-ml"):
        load_preset("nope", LOOPS)


def test_topic_filters_that_match_nothing_are_reported(bank, tmp_path):
    p = _copy_with(tmp_path, "applied-ml", "topics: [theory]", "topics: [underwater-basket-weaving]")
    with pytest.raises(InputError, match=r"round 3 \(phone-screen\): topics \['underwater-basket-weaving'\]"):
        plan_loop(bank, load_preset_file(p))


def test_custom_loop(bank):
    loop = custom_loop(["phone-screen", "cpp-systems"], [30, 50], questions=1)
    assert [r.minutes for r in loop.rounds] == [30, 50] and loop.id == "custom"
    plan = plan_loop(bank, loop, seed=1)
    assert plan.rounds == ["phone-screen", "cpp-systems"] and len(plan.question_ids) == 2
    with pytest.raises(InputError, match="2 round\\(s\\) but 1 time"):
        custom_loop(["phone-screen", "cpp-systems"], [30])
    with pytest.raises(InputError, match="'chess' is not a round"):
        custom_loop(["chess"], 30)
    with pytest.raises(InputError, match=r"custom loop is invalid.*minutes"):
        custom_loop(["behavioral"], 0)


def test_without_a_resume_the_deep_dive_round_is_skipped_with_a_note(bank, tmp_path):
    senior = load_preset("senior", LOOPS)
    ports = Ports(bank=bank, store=SessionStore(tmp_path / "s.db"))
    it = start_loop(ports, senior, seed=2)
    assert "resume-deep-dive" not in it.state.rounds
    assert it.notice and "upload a resume" in it.notice
    assert ports.store.get(it.session_id).plan["loop_notes"] == [it.notice]


# -- a full loop, paused and resumed --------------------------------------------------------------


def test_a_full_loop_paused_and_resumed_keeps_its_clock_and_order(bank, resume, tmp_path):
    senior = load_preset("senior", LOOPS)
    resume_qs = resume_questions_for(senior, resume)
    assert [q.track for q in resume_qs] == ["performance", "hardware"]
    clock = Clock()
    db = tmp_path / "s.db"
    it = start_loop(Ports(bank=bank, store=SessionStore(db), clock=clock), senior, resume_qs, seed=7)
    plan = list(it.state.plan)
    assert it.state.rounds == [
        "recruiter-screen",
        "resume-deep-dive",
        "inference-deep-dive",
        "system-design",
        "behavioral",
    ]
    assert plan[2:4] == [q.id for q in resume_qs]
    assert it.state.budgets == {
        "recruiter-screen": 30,
        "resume-deep-dive": 45,
        "inference-deep-dive": 60,
        "system-design": 60,
        "behavioral": 45,
    }

    # Day one: the recruiter round and the first deep-dive question (3 levels each), 2 minutes per answer.
    for _ in range(2 * 3 + 3):
        it.advance_all()
        clock.t += 120
        it.submit("An answer with numbers: 480 ms to 190 ms on the A10G, measured with Nsight.")
    assert it.question.id == plan[3] and it.level == 0
    deep_dive_elapsed = it.timing.round_elapsed("resume-deep-dive")
    assert deep_dive_elapsed == pytest.approx(360)
    it.pause()
    assert it.ports.store.get(it.session_id).status == "paused"

    # Two days later, a new process: same order, same clock, next question is the hardware deep dive.
    clock.t += 2 * 86_400
    again = Interview.resume(Ports(bank=bank, store=SessionStore(db), clock=clock), it.session_id)
    assert again.state.plan == plan and again.state.budgets == it.state.budgets
    assert again.timing.round_elapsed("resume-deep-dive") == pytest.approx(deep_dive_elapsed)
    assert again.timing.round_elapsed("recruiter-screen") == pytest.approx(720)
    assert again.timing.round_time_left() == pytest.approx(45 * 60 - 360)
    text = again.advance_all()
    assert again.question.id == plan[3] and "Parcel Robotics" in text

    for _ in range(3):  # the hardware deep dive, then into the inference round
        clock.t += 30
        again.submit("Short.")
        text = again.advance_all()
    assert again.question.id == plan[4]
    clock.t += 61 * 60  # one answer eats the inference round's 60 minutes
    again.submit("A very long answer.")
    asked_rounds = []
    while not again.finished:
        text = again.advance_all()
        if again.finished:
            break
        if again.level == 0:
            asked_rounds.append(again.question.round.value)
        clock.t += 30
        again.submit("Short.")
    assert "end of this interview" in text
    # The rest of the inference round was skipped at the next question boundary; the loop went on in order.
    assert asked_rounds == ["system-design", "system-design", "behavioral", "behavioral"]
    skipped = [e.payload for e in again.ports.store.events(again.session_id) if e.kind == "skipped"]
    assert [(p["qid"], p["reason"]) for p in skipped] == [(plan[5], "round time budget spent")]

    report = build_report(again.ports.store, again.ports.bank, again.session_id)
    assert [r.round for r in report.rounds] == it.state.rounds


# -- job postings -----------------------------------------------------------------------------------


TENSORRT_POSTING = """
Senior Deep Learning Inference Engineer. Optimize LLM inference with TensorRT and TensorRT-LLM: write CUDA
kernels, apply INT8 and FP8 quantization, and profile end-to-end latency. Strong modern C++ required.
"""


def test_a_tensorrt_posting_weights_inference_cpp_and_quantization(bank):
    w = weights_from_posting(TENSORRT_POSTING)
    assert w["inference-deep-dive"] > w.get("system-design", 0) and w["cpp-systems"] >= 2.5
    profile = analyze_posting(TENSORRT_POSTING)
    assert profile.topic_weights["quant"] >= 4 and "TensorRT" in profile.matched
    rounds, qids = plan_for_posting(bank, TENSORRT_POSTING, per_round=2, seed=0)
    # A phone screen and ML coding get too little weight from this posting to enter the loop.
    assert rounds == ["inference-deep-dive", "cpp-systems", "inference-case", "system-design"]
    inference = [q for q in qids if q.startswith("inference.")]
    assert len(inference) == 3  # the heaviest round gets one more question
    assert sum("quant" in q for q in inference) >= 2  # the quantization questions come first
    assert all(bank.get(q).round.value in rounds for q in qids)


def test_an_unrecognised_posting_gives_the_general_loop(bank):
    rounds, qids = plan_for_posting(bank, "We sell artisanal bread to cafes.", per_round=1, seed=0)
    assert rounds == ["phone-screen", "ml-coding", "system-design", "behavioral"] and len(qids) == 4
    assert not analyze_posting("We sell artisanal bread to cafes.").recognised
    with pytest.raises(InputError, match="job posting is empty"):
        weights_from_posting("  ")


def test_a_posting_steers_a_presets_question_choice(bank):
    loop = custom_loop(["inference-deep-dive"], 30, questions=2)
    plan = plan_loop(bank, loop, seed=5, posting="Spark pipelines on object storage, S3 and parquet")
    assert set(plan.question_ids) <= {
        "inference.data.spark-skew",
        "inference.data.object-storage-rename",
        "inference.data.idempotent-ingestion",
    }


# -- clarifying questions ---------------------------------------------------------------------------


@pytest.mark.parametrize("embedder", [None, HashingEmbedder()], ids=["keywords", "embeddings"])
def test_clarifications_come_from_the_authored_scenario(bank, embedder):
    fraud = bank.get("design.fraud-scoring")
    ask = lambda text: answer_clarification(fraud, text, embedder)  # noqa: E731
    assert ask("What request rate should I plan for?") == (
        "Traffic: 10,000 req/s steady, 3x during holiday peaks, spikes can arrive within a minute."
    )
    assert ask("What p99 latency do we need?").startswith("Latency: p99 under 50 ms")
    assert "90 days" in ask("How long do we keep the decisions?")
    assert ask("Should I serve on GPU or CPU?") == (
        "That's your call: model family and CPU versus GPU serving is up to you. Tell me what you'd choose and why."
    )
    assert ask("What colour is the company logo?") == NOT_SPECIFIED
    telemetry = bank.get("design.telemetry-collector")
    assert answer_clarification(telemetry, "How many GPUs are in the fleet?", embedder).startswith(
        "Fleet: 10,000 GPUs"
    )
    assert "your call: push versus pull" in answer_clarification(telemetry, "Push or pull?", embedder)
    # Deterministic, and honest where there is no scenario at all.
    assert ask("What request rate should I plan for?") == ask("What request rate should I plan for?")
    assert answer_clarification(bank.get("phone.hardware.amdahls-law"), "Any constraints?") == NO_SCENARIO
    with pytest.raises(InputError, match="type the clarifying question"):
        ask("   ")


def test_a_clarification_is_recorded_in_the_session(bank, tmp_path):
    ports = Ports(bank=bank, store=SessionStore(tmp_path / "s.db"))
    it = Interview.start(ports, ["system-design"], question_ids=["design.telemetry-collector"])
    it.advance_all()
    reply = answer_clarification(it.question, "How long is the retention?")
    it.record_clarification("How long is the retention?", reply)
    assert reply.startswith("Retention: 1-second data for 7 days")
    kinds = [e.kind for e in ports.store.events(it.session_id)]
    assert kinds[-1] == "clarified"


def test_generated_questions_for_a_loop_follow_each_slot(resume):
    loop = custom_loop(["resume-deep-dive"], 20, questions=2)
    qs = resume_questions_for(loop, resume)
    assert [q.id for q in qs] == [q.id for q in deep_dive_questions(resume, 2)]
    senior = load_preset("senior", LOOPS)
    assert [q.track for q in resume_questions_for(senior, resume)] == ["performance", "hardware"]
