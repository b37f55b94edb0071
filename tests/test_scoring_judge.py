"""LLM judge and quote extraction over scripted chat models: schema, median, verified quotes, fallbacks."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.outputs import ChatResult
from pydantic import Field

from interviewer.content import load_bank
from interviewer.embeddings import HashingEmbedder
from interviewer.errors import ModelError
from interviewer.llm.fake import ScriptedChatModel
from interviewer.scoring.judge import (
    extract_quotes,
    judge_schema,
    quote_schema,
    run_judge,
    verify_quote,
)
from interviewer.scoring.scorer import RubricScorer
from tests.conftest import REPO
from tests.scoring_samples import ANSWERS, DECODE_ID


class RecordingModel(ScriptedChatModel):
    """Also records the keyword arguments of every call (response_format, temperature...)."""

    kwargs_log: list[dict[str, Any]] = Field(default_factory=list)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:  # type: ignore[override]
        self.kwargs_log.append(dict(kwargs))
        return super()._generate(messages, stop, run_manager, **kwargs)


@pytest.fixture(scope="module")
def question():
    return load_bank(REPO).get(DECODE_ID)


def _strings_bounded(schema: Any) -> bool:
    if isinstance(schema, dict):
        if schema.get("type") == "string" and "maxLength" not in schema:
            return False
        return all(_strings_bounded(v) for v in schema.values())
    if isinstance(schema, list):
        return all(_strings_bounded(v) for v in schema)
    return True


def test_schemas_use_enums_and_bound_every_string(question) -> None:
    js = judge_schema(question.criteria)
    item = js["properties"]["criteria"]["items"]["properties"]
    assert item["level"]["enum"] == [0, 1, 2, 3, 4]
    assert item["name"]["enum"] == [c.name for c in question.criteria]
    assert js["properties"]["criteria"]["minItems"] == len(question.criteria)
    assert _strings_bounded(js) and _strings_bounded(quote_schema(5))


@pytest.mark.parametrize(
    ("quote", "ok"),
    [
        ("every decode step has to stream all of the weights", True),
        ("EVERY decode step  has to\nstream all of the weights", True),  # case and spacing aside
        ("each decode step streams all weights", False),  # a paraphrase is not a quote
        ("the answer explains the KV cache in depth", False),  # invented
        ("weights", False),  # too short to prove anything
    ],
)
def test_verify_quote(quote: str, ok: bool) -> None:
    assert verify_quote(quote, ANSWERS[DECODE_ID]["strong"]) is ok


def test_extract_quotes_keeps_only_verified_ones(question) -> None:
    answer = ANSWERS[DECODE_ID]["strong"]
    real = "14 GB divided by 2 TB/s gives 7 ms per token"
    invented = "the KV cache is evicted to host memory between steps"
    model = RecordingModel().queue(json.dumps({"quotes": ["", real, "", invented, ""]}))
    result = extract_quotes(model, question.question, answer, question.key_points)
    kp = question.key_points
    assert result.quotes[kp[1]] == real and result.quotes[kp[3]] is None
    assert result.rejected == {kp[3]: invented}
    assert result.level == pytest.approx(4 * 1 / 5) and result.method == "quote-extraction"
    rf = model.kwargs_log[-1]["response_format"]
    assert (
        rf["type"] == "json_schema" and rf["json_schema"]["schema"]["properties"]["quotes"]["maxItems"] == 5
    )
    assert model.kwargs_log[-1]["temperature"] == 0.0


def test_judge_takes_the_median_of_samples_and_verifies_evidence(question) -> None:
    answer = ANSWERS[DECODE_ID]["strong"]

    def reply(level: int, evidence: str) -> str:
        return json.dumps(
            {
                "criteria": [
                    {"name": "bandwidth estimate", "level": level, "evidence": evidence},
                    {"name": "batching effect", "level": 2, "evidence": ""},
                ],
                "missed": ["prefill scheduling"] if level < 4 else [],
            }
        )

    model = RecordingModel().queue(
        reply(1, "it is compute bound"),
        reply(4, "14 GB divided by 2 TB/s gives 7 ms per token"),
        reply(3, ""),
    )
    result = run_judge(model, question.question, answer, question.criteria, question.key_points, samples=3)
    by = {c.criterion: c for c in result.criteria}
    assert by["bandwidth estimate"].level == 3 and by["bandwidth estimate"].samples == [1, 4, 3]
    assert by["bandwidth estimate"].evidence == ["14 GB divided by 2 TB/s gives 7 ms per token"]
    assert result.missed == ["prefill scheduling"] and result.method == "llm-judge"
    assert len(model.calls) == 3
    user = str(model.calls[0][-1].content)
    assert user.rfind("</candidate_answer") < user.find("RUBRIC")  # the rubric comes last


def test_server_without_json_schema_gets_a_plain_retry(question) -> None:
    model = RecordingModel().queue(
        RuntimeError("400: response_format json_schema is not supported"),
        "```json\n" + json.dumps({"quotes": ["", "", "", "", ""]}) + "\n```",
    )
    result = extract_quotes(model, question.question, "short answer", question.key_points)
    assert result.covered == []
    assert "response_format" in model.kwargs_log[0] and "response_format" not in model.kwargs_log[1]


def test_invalid_json_is_a_model_error(question) -> None:
    model = RecordingModel().queue("level: 4", "not json either")
    with pytest.raises(ModelError, match="valid JSON"):
        extract_quotes(model, question.question, "answer", question.key_points)


def test_scorer_falls_back_to_offline_when_the_judge_fails(question) -> None:
    model = RecordingModel(default="no json here")
    offline = RubricScorer(HashingEmbedder()).score(question, [ANSWERS[DECODE_ID]["partial"]])
    with_judge = RubricScorer(HashingEmbedder(), judge_model=model, use_judge=True).score(
        question, [ANSWERS[DECODE_ID]["partial"]]
    )
    assert with_judge.overall == offline.overall
    assert "llm-judge" not in with_judge.methods and any("unavailable" in n for n in with_judge.notes)


def test_scorer_with_judge_names_each_method(question) -> None:
    answer = ANSWERS[DECODE_ID]["strong"]
    quote = "14 GB divided by 2 TB/s gives 7 ms per token"
    judge = json.dumps(
        {
            "criteria": [
                {"name": "bandwidth estimate", "level": 4, "evidence": quote},
                {
                    "name": "batching effect",
                    "level": 4,
                    "evidence": "Batching more sequences reuses each weight read",
                },
            ],
            "missed": [],
        }
    )
    model = RecordingModel().queue(json.dumps({"quotes": ["", quote, "", "", ""]}), judge, judge, judge)
    score = RubricScorer(HashingEmbedder(), judge_model=model, use_judge=True).score(question, [answer])
    assert score.methods[:1] == ["coverage"] and {"quote-extraction", "llm-judge"} <= set(score.methods)
    assert all(c.method == "llm-judge" for c in score.criteria)
    assert quote in [e for c in score.criteria for e in c.evidence]
    assert question.key_points[1] in score.key_points_covered


def test_verbatim_quotes_about_another_point_do_not_count(question) -> None:
    answer = ANSWERS[DECODE_ID]["partial"]
    off_topic = "Batching helps throughput since several requests share the work."  # real words, wrong point
    model = RecordingModel().queue(
        json.dumps({"quotes": [off_topic, "", "", "", ""]}),
        *[
            json.dumps(
                {
                    "criteria": [
                        {"name": "bandwidth estimate", "level": 1, "evidence": ""},
                        {"name": "batching effect", "level": 2, "evidence": ""},
                    ],
                    "missed": [],
                }
            )
        ]
        * 3,
    )
    score = RubricScorer(HashingEmbedder(), judge_model=model, use_judge=True).score(question, [answer])
    assert question.key_points[0] not in score.key_points_covered
    assert any("do not address their key point" in n for n in score.notes)
