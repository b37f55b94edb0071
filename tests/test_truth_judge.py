"""The truth judge (issue 11): one short constrained reply per key point over a shared prompt prefix, run in
the background of a live round and stored as an event, so a crash or a cancel only means judging again."""

from __future__ import annotations

import json
import math
import threading
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from interviewer.errors import ModelError
from interviewer.llm.client import ChatPort
from interviewer.llm.fake import ScriptedChatModel
from interviewer.scoring.background import BackgroundJudge
from interviewer.scoring.judge import (
    NO_LOGPROBS_CONFIDENCE,
    TruthCost,
    TruthJudgement,
    _verdict_probs,
    judge_truth,
    verdict_schema,
)
from interviewer.scoring.models import KeyPointVerdict, QuestionScore
from interviewer.session import Interview, Ports, replay
from interviewer.store import SessionStore

from .conftest import FIXTURE_CONTENT

QUESTION = "Why is LLM decode memory-bandwidth bound at batch size 1?"
ANSWER = "Each generated token streams every weight from memory once, so bandwidth, not FLOPs, sets the pace."
POINTS = [
    "each decode step reads all the weights",
    "batching amortises the weight reads over many sequences",
    "prefill is compute bound",
]


class RecordingModel(ScriptedChatModel):
    """Records the keyword arguments of each call; optionally returns logprobs like an OpenAI server."""

    kwargs_log: list[dict[str, Any]] = Field(default_factory=list)
    logprobs: list[dict[str, Any] | None] = Field(default_factory=list)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:  # type: ignore[override]
        self.kwargs_log.append(dict(kwargs))
        text = self._next(messages)
        meta = {"logprobs": self.logprobs.pop(0)} if self.logprobs else {}
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(content=text, response_metadata=meta))]
        )


WORD = {"stated": "yes", "absent": "no", "contradicted": "opposite"}  # the judge's question: "says it?"


def _reply(verdict: str) -> str:
    return json.dumps({"says": WORD[verdict]})


def _tokens(word: str, alternatives: dict[str, float]) -> dict[str, Any]:
    """An OpenAI-style logprobs block for `{"says": "<word>"}` split into tokens."""
    first, rest = word[:2], word[2:]
    toks = ['{"', "says", '":', ' "', first, rest, '"}']
    content = [{"token": t, "logprob": 0.0, "top_logprobs": [{"token": t, "logprob": 0.0}]} for t in toks]
    content[4]["top_logprobs"] = [{"token": t, "logprob": math.log(p)} for t, p in alternatives.items()]
    content[4]["logprob"] = math.log(alternatives[first])
    return {"content": content}


# -- the prompts and the reply ----------------------------------------------------------------------


def test_prompts_for_one_answer_share_the_prefix_and_differ_only_in_the_key_point_at_the_end():
    model = RecordingModel().queue(_reply("stated"), _reply("absent"), _reply("contradicted"))
    judge_truth(model, QUESTION, ANSWER, POINTS)
    assert len(model.calls) == len(POINTS)
    systems = {m[0].content for m in model.calls}
    assert len(systems) == 1 and isinstance(model.calls[0][0], SystemMessage)
    users = [str(m[1].content) for m in model.calls]
    assert all(isinstance(m[1], HumanMessage) for m in model.calls)
    head = users[0][: -len(POINTS[0])]
    assert ANSWER in head and QUESTION in head  # the question and the fenced answer are in the shared part
    for user, point in zip(users, POINTS, strict=True):
        assert user == head + point  # identical up to the key point, which is the last thing in the prompt
    # the fence's random id is drawn once per answer, not per key point (it would break the cache)
    assert head.count("<candidate_answer id=") == 1
    fresh = RecordingModel().queue(_reply("stated"))
    judge_truth(fresh, QUESTION, ANSWER, POINTS[:1])
    assert str(fresh.calls[0][1].content) != users[0]  # a new answer gets a new fence id


def test_each_key_point_gets_one_short_schema_constrained_reply_at_temperature_zero():
    model = RecordingModel().queue(*[_reply("stated")] * 3)
    judge_truth(model, QUESTION, ANSWER, POINTS)
    for kw in model.kwargs_log:
        fmt = kw["response_format"]
        assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == verdict_schema()
        assert kw["temperature"] == 0.0 and kw["max_tokens"] <= 48
        assert kw["logprobs"] is True and kw["top_logprobs"] >= 3
    assert verdict_schema()["properties"]["says"]["enum"] == ["yes", "no", "opposite"]


def test_verdicts_are_read_from_the_reply_per_key_point():
    model = RecordingModel().queue(
        _reply("stated"), "```json\n" + _reply("contradicted") + "\n```", _reply("absent")
    )
    result = judge_truth(model, QUESTION, ANSWER, POINTS)
    assert [v.verdict for v in result.verdicts] == ["stated", "contradicted", "absent"]
    assert [v.key_point for v in result.verdicts] == POINTS
    assert all(v.method == "llm-judge" and v.confidence == NO_LOGPROBS_CONFIDENCE for v in result.verdicts)
    assert result.cost.calls == 3 and result.cost.logprobs == 0


def test_an_invalid_reply_is_asked_again_with_less_and_then_fails_clearly():
    model = RecordingModel().queue('{"verdict": "maybe"}', _reply("absent"))
    result = judge_truth(model, QUESTION, ANSWER, POINTS[:1])
    assert result.verdicts[0].verdict == "absent"
    assert "logprobs" not in model.kwargs_log[1]  # the second try drops the optional logprobs
    bad = RecordingModel().queue("stated", "no idea", "{}")
    with pytest.raises(ModelError, match="no valid verdict"):
        judge_truth(bad, QUESTION, ANSWER, POINTS[:1])


def test_confidence_comes_from_the_logprobs_at_the_verdict_token():
    probs = {"ye": 0.6, "op": 0.3, "no": 0.05, "xx": 0.05}  # "xx" begins no answer and is left out
    got = _verdict_probs(_tokens("yes", probs))
    assert got is not None
    assert got["stated"] == pytest.approx(0.6 / 0.95) and got["contradicted"] == pytest.approx(0.3 / 0.95)
    assert got["absent"] == pytest.approx(0.05 / 0.95)
    model = RecordingModel().queue(_reply("contradicted"))
    model.logprobs.append(_tokens("opposite", {"op": 0.8, "ye": 0.2}))
    result = judge_truth(model, QUESTION, ANSWER, POINTS[:1])
    assert result.verdicts[0].verdict == "contradicted"
    assert result.verdicts[0].confidence == pytest.approx(0.8)
    assert result.cost.logprobs == 1
    assert _verdict_probs(None) is None
    assert _verdict_probs({"content": [{"token": '{"x": "yes"}', "logprob": 0.0}]}) is None  # no `says` field


def test_an_empty_answer_is_absent_everywhere_without_asking_the_model():
    model = RecordingModel()
    result = judge_truth(model, QUESTION, "   ", POINTS)
    assert [v.verdict for v in result.verdicts] == ["absent"] * 3 and not model.calls


# -- in the background of a live round -----------------------------------------------------------


class VerdictScorer:
    """The scorer port: offline score 2.0; with verdicts, 4 * stated fraction (so the rescore is visible)."""

    def __init__(self) -> None:
        self.judged_calls = 0

    def score(self, question, answers, code_verdict_passed=None, judged=None, hints=()) -> QuestionScore:
        if judged is None:
            return QuestionScore(question_id=question.id, overall=2.0)
        self.judged_calls += 1
        stated = sum(v.verdict == "stated" for v in judged)
        return QuestionScore(question_id=question.id, overall=4.0 * stated / len(judged), verdicts=judged)


def _scripted_judge(verdict: str, gate: threading.Event | None = None, calls: list[str] | None = None):
    def judge(question: str, answer: str, key_points) -> TruthJudgement:
        if calls is not None:
            calls.append(answer)
        if gate is not None:
            assert gate.wait(10), "the test never opened the gate"
        return TruthJudgement(
            [
                KeyPointVerdict(key_point=k, verdict=verdict, confidence=0.9, method="llm-judge")
                for k in key_points
            ],  # type: ignore[arg-type]
            TruthCost(),
        )

    return judge


def _round(bank, store: SessionStore, judge: BackgroundJudge | None, scorer: VerdictScorer) -> Interview:
    ports = Ports(bank=bank, store=store, scorer=scorer, judge=judge)
    it = Interview.start(ports, ["phone-screen"])
    it.advance_all()
    for answer in ("Amdahl: about 4.7x.", "The parallel part scales.", "Bandwidth saturates."):
        it.submit(answer)
        it.advance_all()
    return it


def _kinds(store: SessionStore, sid: str) -> list[str]:
    return [e.kind for e in store.events(sid)]


def test_a_question_is_judged_in_the_background_and_rescored_in_one_stored_event(fixture_bank, tmp_path):
    store, scorer = SessionStore(tmp_path / "s.db"), VerdictScorer()
    calls: list[str] = []
    judge = BackgroundJudge(judge=_scripted_judge("stated", calls=calls))
    it = _round(fixture_bank, store, judge, scorer)
    assert it.wait_for_judge(timeout=10)
    assert calls == ["Amdahl: about 4.7x."]  # the main answer, judged once
    kinds = _kinds(store, it.session_id)
    assert kinds.index("scored") < kinds.index("judged")  # the offline score first, the judged one later
    score = it.scores["fx.amdahl"]
    assert score.overall == 4.0 and {v.verdict for v in score.verdicts} == {"stated"}
    rebuilt = replay(store.get(it.session_id).plan, store.events(it.session_id))
    assert rebuilt.judged == {"fx.amdahl"} and rebuilt.scores["fx.amdahl"].overall == 4.0
    judge.close()


def test_the_candidate_never_waits_for_the_judge(fixture_bank, tmp_path):
    gate = threading.Event()
    judge = BackgroundJudge(judge=_scripted_judge("absent", gate=gate))
    store = SessionStore(tmp_path / "s.db")
    it = _round(fixture_bank, store, judge, VerdictScorer())  # returns although the judge is blocked
    assert it.finished and "judged" not in _kinds(store, it.session_id)
    assert it.scores["fx.amdahl"].overall == 2.0  # the offline score stands meanwhile
    seen: list[tuple[int, int]] = []
    gate.set()
    assert it.wait_for_judge(timeout=10, progress=lambda d, t: seen.append((d, t)))
    assert seen[0] == (0, 1) and seen[-1] == (1, 1)
    assert it.scores["fx.amdahl"].overall == 0.0
    judge.close()


def test_an_interrupted_judgement_is_redone_on_resume(fixture_bank, tmp_path):
    gate = threading.Event()
    first = BackgroundJudge(judge=_scripted_judge("contradicted", gate=gate))
    store = SessionStore(tmp_path / "s.db")
    it = _round(fixture_bank, store, first, VerdictScorer())
    first.close(cancel=True)  # the app stops while the model is still answering
    gate.set()
    assert first.wait(timeout=10)  # the model's late answer arrived and was dropped
    assert "judged" not in _kinds(store, it.session_id)  # nothing half-done is stored
    calls: list[str] = []
    second = BackgroundJudge(judge=_scripted_judge("stated", calls=calls))
    scorer = VerdictScorer()
    resumed = Interview.resume(
        Ports(bank=fixture_bank, store=store, scorer=scorer, judge=second), it.session_id
    )
    assert resumed.wait_for_judge(timeout=10)
    assert calls == ["Amdahl: about 4.7x."] and scorer.judged_calls == 1
    assert _kinds(store, it.session_id).count("judged") == 1
    again = Interview.resume(
        Ports(bank=fixture_bank, store=store, scorer=scorer, judge=second), it.session_id
    )
    assert again.wait_for_judge(timeout=10) and calls == ["Amdahl: about 4.7x."]  # judged once, not twice
    second.close()


def test_a_failed_judgement_keeps_the_offline_score_and_is_tried_again_before_the_report(
    fixture_bank, tmp_path
):
    attempts: list[int] = []

    def flaky(question: str, answer: str, key_points) -> TruthJudgement:
        attempts.append(1)
        if len(attempts) == 1:
            raise ModelError("the model at http://127.0.0.1:1/v1 failed")
        return _scripted_judge("stated")(question, answer, key_points)

    judge = BackgroundJudge(judge=flaky)
    store = SessionStore(tmp_path / "s.db")
    it = _round(fixture_bank, store, judge, VerdictScorer())
    judge.wait(timeout=10)
    assert it.scores["fx.amdahl"].overall == 2.0 and judge.failures
    assert it.wait_for_judge(timeout=10)  # the report's wait queues it again
    assert it.scores["fx.amdahl"].overall == 4.0 and not judge.failures
    judge.close()


def test_the_queue_is_bounded_and_a_refused_question_is_judged_later():
    gate = threading.Event()
    judge = BackgroundJudge(judge=_scripted_judge("stated", gate=gate), max_pending=1)
    done: list[str] = []
    assert judge.submit("a", QUESTION, ANSWER, POINTS, lambda v: done.append("a")) is not None
    assert judge.submit("a", QUESTION, ANSWER, POINTS, lambda v: done.append("dupe")) is not None
    assert judge.submit("b", QUESTION, ANSWER, POINTS, lambda v: done.append("b")) is None  # full
    assert judge.pending() == ["a"]
    assert not judge.wait(timeout=0.05)
    gate.set()
    assert judge.wait(timeout=10) and done == ["a"]
    assert judge.submit("b", QUESTION, ANSWER, POINTS, lambda v: done.append("b")) is not None
    assert judge.wait(timeout=10) and done == ["a", "b"]
    judge.close()
    assert judge.submit("c", QUESTION, ANSWER, POINTS, lambda v: done.append("c")) is None  # closed


def test_the_runner_judges_with_a_chat_port_over_the_fake_model():
    model = RecordingModel().queue(_reply("stated"), _reply("contradicted"), _reply("absent"))
    judge = BackgroundJudge(ChatPort(model, name="scripted"))
    got: list[list[KeyPointVerdict]] = []
    judge.submit("k", QUESTION, ANSWER, POINTS, got.append)
    assert judge.wait(timeout=10)
    assert [v.verdict for v in got[0]] == ["stated", "contradicted", "absent"]
    judge.close()


def test_judge_is_a_setting_on_by_default(monkeypatch):
    from interviewer.config import load_settings

    assert load_settings().judge is True
    monkeypatch.setenv("INTERVIEWER_JUDGE", "0")
    assert load_settings().judge is False


# -- interviewer grade --judge, through the real OpenAI client against the local stand-in server -----------


def test_grade_with_the_judge_merges_verdicts_through_a_real_server(tmp_path):
    from typer.testing import CliRunner

    from interviewer.cli import app
    from interviewer.llm.standin import Behaviour, StandinServer

    def verdict(messages: list[dict[str, Any]]) -> str:
        user = str(messages[-1]["content"])
        return _reply("absent" if "turtles" in user else "stated")

    ref = "It is the integer that real zero maps to, so zero is represented exactly."
    rows = [
        {"question": "What does a zero point do in int8 quantization?", "reference_answer": ref, "answer": a}
        for a in ("The zero point is the integer code that 0.0 maps to, so zero is exact.", "I like turtles.")
    ]
    src, out = tmp_path / "answers.jsonl", tmp_path / "scored.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows))
    with StandinServer(behaviour=Behaviour(reply=verdict)) as server:
        result = CliRunner().invoke(
            app,
            ["grade", "--judge", "--input", str(src), "--output", str(out), "--base-url", server.base_url],
            env={"INTERVIEWER_DATA_DIR": str(tmp_path)},
        )
        prompts = list(server.stats.prompts)
    assert result.exit_code == 0, result.output
    scored = [json.loads(line) for line in out.read_text().splitlines()]
    assert [{v["verdict"] for v in s["verdicts"]} for s in scored] == [{"stated"}, {"absent"}]
    assert all("llm-judge" in s["methods"] for s in scored)
    assert scored[0]["score"] > scored[1]["score"]
    assert len(prompts) == sum(len(s["verdicts"]) for s in scored)  # one request per key point
    points = [v["key_point"] for v in scored[0]["verdicts"]]
    first = [str(p[-1]["content"]) for p in prompts if "0.0 maps to" in str(p[-1]["content"])]
    assert [f[len(f) - len(k) :] for f, k in zip(first, points, strict=True)] == points  # key point last
    assert len({f[: len(f) - len(k)] for f, k in zip(first, points, strict=True)}) == 1  # one shared prefix
    assert "with the truth judge" in " ".join(result.output.split())


@pytest.mark.embedded
@pytest.mark.slow
def test_the_real_embedded_server_reads_the_shared_prefix_from_its_cache(tmp_path):
    """SmolLM2 in-process: three constrained replies with logprobs; the server reports the prefix as cached."""
    from interviewer.config import load_settings
    from interviewer.llm.client import reading_port
    from interviewer.llm.embedded import EmbeddedServer

    settings = load_settings(embedded_model="smollm2-135m", data_dir=tmp_path, timeout=120)
    with EmbeddedServer(settings, n_parallel=1) as server:
        url = server.start()
        model = reading_port(settings, base_url=url, model=server.served_model_id, slots=server.slots).model
        cached = judge_truth(model, QUESTION, ANSWER, POINTS)
        control = judge_truth(
            model, QUESTION, ANSWER + " Really.", POINTS, extra_body={"cache_prompt": False}
        )
    assert len(cached.verdicts) == 3 and all(
        v.verdict in ("stated", "contradicted", "absent") for v in cached.verdicts
    )
    assert cached.cost.calls == 3 and cached.cost.logprobs == 3  # confidence from the server's probabilities
    assert all(0.0 < v.confidence <= 1.0 for v in cached.verdicts)
    # The 2nd and 3rd prompts differ from the 1st only in the key point: most of each is read from the cache.
    assert cached.cost.cached_tokens > 0.5 * cached.cost.prompt_tokens
    # The control reads everything itself. Its prompts are as long give or take the fence's random id, whose
    # token count varies from answer to answer (878 vs 890 seen), so compare lengths within 10%.
    assert control.cost.cached_tokens == 0
    assert control.cost.prompt_tokens >= 0.9 * cached.cost.prompt_tokens


def test_rounds_get_a_background_judge_by_default_and_none_when_switched_off(tmp_path):
    from interviewer.config import load_settings
    from interviewer.runtime import ModelChoice, Runtime

    port = ChatPort(RecordingModel(), name="scripted")
    choice = ModelChoice("http://127.0.0.1:1/v1", "scripted", "scripted", embedded=False)
    for on in (True, False):
        rt = Runtime(
            load_settings(data_dir=tmp_path / str(on), content_dir=FIXTURE_CONTENT, judge=on, retrieval=False)
        )
        rt.set_model(port, choice)
        ports = rt.ports("me")
        assert isinstance(ports.judge, BackgroundJudge) is on
        if on:
            assert rt.ports("you").judge is ports.judge  # one runner per model, shared by the rounds
            assert rt.scorer().judge_weight == rt.settings.judge_weight  # type: ignore[union-attr]
        assert rt.ports("me", with_model=False).judge is None
        rt.close()


def test_the_judge_keeps_a_server_slot_of_its_own_beside_the_candidates(tmp_path):
    """On a server with slots the judge's requests never land on a candidate's slot (its cached prompt)."""
    from interviewer.config import load_settings
    from interviewer.llm.client import BACKGROUND_KEY, build_port
    from interviewer.llm.standin import Behaviour, StandinServer

    with StandinServer(keep_prompts=100) as server:
        server.behaviour = Behaviour(reply=lambda messages: _reply("stated"))
        settings = load_settings(data_dir=tmp_path, base_url=server.base_url, timeout=10.0)
        port = build_port(settings, base_url=server.base_url, model="standin")
        port.slots = 3
        candidates = [port.slot("session-a"), port.slot("session-b")]
        judge = BackgroundJudge(port)
        try:
            judged: list[list[KeyPointVerdict]] = []
            judge.submit(
                "session-a/q1",
                "Why?",
                "Because of the memory bandwidth.",
                ["kp one", "kp two"],
                judged.append,
            )
            assert judge.wait(timeout=30)
        finally:
            judge.close()
        assert len(judged) == 1 and len(judged[0]) == 2
        assert server.stats.slots, "the judge sent nothing"
        assert set(server.stats.slots) == {port.slot(BACKGROUND_KEY)}
        assert not set(server.stats.slots) & set(candidates)
