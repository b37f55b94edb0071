"""Steer a practice loop by a job posting: which rounds and topics it stresses.

Deterministic keyword weighting, not a model: the posting's terms (TensorRT, CUDA, C++, Spark, calibration...)
add weight to rounds and to topic tags; a question's topic weight is the sum over the tags found in its id,
topic and seed topics. Unrecognised postings fall back to a general loop, and the profile says so.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from interviewer.content import Bank, Question, Round
from interviewer.errors import InputError

MAX_POSTING_CHARS = 50_000

# term pattern -> (round boosts, topic-tag boosts). Tags match substrings of a question's id, topic and seed topics.
_TERMS: tuple[tuple[str, dict[str, float], dict[str, float]], ...] = (
    (
        r"tensor\s?rt|trt-llm|tensorrt-llm",
        {"inference-deep-dive": 2.0, "cpp-systems": 1.5, "inference-case": 1.0},
        {"quant": 2.0, "int8": 2.0, "pruning": 1.0, "kernel": 1.5, "batching": 1.0, "kv-cache": 1.0},
    ),
    (
        r"quantiz\w*|int8|fp8|int4|low[- ]precision|mixed[- ]precision",
        {"inference-deep-dive": 1.5, "ml-coding": 0.5},
        {"quant": 2.0, "int8": 2.0},
    ),
    (
        r"cuda|kernels?|triton|cutlass|gpu programming|ptx",
        {"inference-deep-dive": 1.0, "phone-screen": 1.0, "cpp-systems": 1.0, "gpu-kernels": 1.5},
        {"kernel": 1.5, "threads-per-block": 1.5, "sram": 1.5, "tiled": 1.5, "roofline": 1.0, "gpu": 1.0},
    ),
    (
        r"c\+\+|cpp\b|modern c\+\+|systems programming",
        {"cpp-systems": 2.5},
        {"cpp": 1.5, "transpose": 1.0, "dependency-graph": 1.0, "leak": 1.0, "race": 1.0, "overloading": 1.0},
    ),
    (
        r"inference|serving|latency|throughput|vllm|nim\b|triton inference",
        {"inference-deep-dive": 1.0, "inference-case": 1.5, "system-design": 1.0},
        {"batching": 1.0, "latency": 1.0, "kv-cache": 1.0, "benchmark": 1.0, "serving": 1.0},
    ),
    (
        r"distributed|multi-gpu|tensor parallel\w*|pipeline parallel\w*|nccl",
        {"inference-deep-dive": 1.0, "system-design": 0.5},
        {"parallel": 2.0},
    ),
    (
        r"pytorch|numpy|implement\w* (models|layers)|transformers?|attention",
        {"ml-coding": 2.0},
        {"attention": 1.5, "conv": 1.0, "training": 1.0},
    ),
    (
        r"spark|data pipelines?|etl|kafka|object storage|s3\b|data platform|lakehouse|parquet",
        {"inference-deep-dive": 1.0, "system-design": 1.5},
        {"spark": 2.0, "ingestion": 2.0, "object-storage": 2.0, "telemetry": 1.0},
    ),
    (
        r"telemetry|observability|monitoring|metrics|dashboards?|prometheus",
        {"system-design": 1.5},
        {"telemetry": 2.0, "dashboard": 2.0, "utilization": 1.0},
    ),
    (
        r"system design|architecture|scalab\w*|distributed systems|high availability",
        {"system-design": 2.0},
        {"design": 0.5},
    ),
    (
        r"calibrat\w*|drift|a/b test\w*|experimentation|recommend\w*|ranking|applied (ml|machine learning)",
        {"phone-screen": 1.5, "ml-coding": 0.5},
        {"calibration": 2.0, "drift": 2.0, "bias-variance": 1.0, "business": 1.0},
    ),
    (
        r"optimi[sz]ation theory|convex\w*|gradient descent|statistics|probability",
        {"phone-screen": 1.5},
        {"convexity": 1.5, "sgd": 1.5, "gradient": 1.0},
    ),
    (
        r"senior|staff|principal|lead\b|mentor\w*|technical leadership",
        {"behavioral": 1.0, "system-design": 1.0, "resume-deep-dive": 2.0},
        {"senior": 1.5, "leadership": 1.5, "mentoring": 1.0},
    ),
    (
        r"new grad\w*|graduate|university|master'?s|ph\.?d|intern",
        {"phone-screen": 1.0, "ml-coding": 1.5},
        {"theory": 1.0},
    ),
)
_COMPILED = tuple((re.compile(rf"\b(?:{p})", re.I), r, t) for p, r, t in _TERMS)

LOOP_ORDER: tuple[Round, ...] = (
    Round.RECRUITER,
    Round.PHONE,
    Round.ML_CODING,
    Round.INFERENCE,
    Round.DEEP_DIVE,
    Round.CPP,
    Round.GPU,
    Round.CASE,
    Round.DESIGN,
    Round.BEHAVIORAL,
)
DEFAULT_ROUNDS: tuple[Round, ...] = (Round.PHONE, Round.ML_CODING, Round.DESIGN, Round.BEHAVIORAL)
ROUND_THRESHOLD = 2.0  # a round needs this much weight from the posting to enter the loop


@dataclass(frozen=True)
class PostingProfile:
    """What a posting stresses: round weights, topic-tag weights and the terms that produced them."""

    round_weights: dict[str, float]
    topic_weights: dict[str, float]
    matched: tuple[str, ...] = field(default_factory=tuple)

    @property
    def recognised(self) -> bool:
        return bool(self.matched)


def _check(text: str) -> str:
    if text is None or not text.strip():
        raise InputError("the job posting is empty: paste its text, or leave the box blank to skip steering")
    if len(text) > MAX_POSTING_CHARS:
        raise InputError(
            f"the job posting is {len(text):,} characters; the limit is {MAX_POSTING_CHARS:,}. "
            "Paste only the role description and requirements"
        )
    return text


def analyze_posting(text: str) -> PostingProfile:
    """Round and topic weights from the posting's terms (each term counts once, however often it appears)."""
    _check(text)
    rounds: dict[str, float] = {}
    topics: dict[str, float] = {}
    matched: list[str] = []
    for pattern, rw, tw in _COMPILED:
        m = pattern.search(text)
        if m is None:
            continue
        matched.append(m.group(0))
        for r, w in rw.items():
            rounds[r] = rounds.get(r, 0.0) + w
        for t, w in tw.items():
            topics[t] = topics.get(t, 0.0) + w
    return PostingProfile(rounds, topics, tuple(dict.fromkeys(matched)))


def weights_from_posting(text: str) -> dict[str, float]:
    """Round id -> weight from the posting; rounds it never touches are absent."""
    return analyze_posting(text).round_weights


def question_weight(q: Question, topic_weights: dict[str, float]) -> float:
    """How much a posting's topics favour ``q``."""
    hay = " ".join([q.id, q.topic, q.track or "", *q.seed_topics]).lower().replace(" ", "-")
    return sum(w for tag, w in topic_weights.items() if tag in hay)


def rank_questions(
    pool: Sequence[Question], topic_weights: dict[str, float], seed: int | None = None
) -> list[Question]:
    """Posting-favoured questions first; ties shuffled by ``seed`` (deterministic for a given seed)."""
    rng = random.Random(seed)
    keyed = [(question_weight(q, topic_weights), rng.random(), q) for q in pool]
    return [q for _, _, q in sorted(keyed, key=lambda t: (-t[0], t[1]))]


def plan_for_posting(
    bank: Bank, posting: str, per_round: int = 2, *, seed: int | None = None
) -> tuple[list[str], list[str]]:
    """Rounds (in loop order) and question ids for a practice loop shaped by the posting.

    Rounds whose weight reaches ``ROUND_THRESHOLD`` are included; the heaviest round gets one extra question.
    A posting with no recognised terms gives the general loop (phone screen, ML coding, design, behavioral).
    The resume deep dive needs generated questions, so it is never planned from the bank here.
    """
    if per_round < 1:
        raise InputError("ask for at least one question per round")
    profile = analyze_posting(posting)
    present = set(bank.rounds())
    weights = {r: w for r, w in profile.round_weights.items() if w >= ROUND_THRESHOLD}
    rounds: list[Round] = [
        r for r in LOOP_ORDER if r.value in weights and r in present and r is not Round.DEEP_DIVE
    ]
    if not rounds:
        rounds = [r for r in DEFAULT_ROUNDS if r in present]
    heaviest = max(rounds, key=lambda r: weights.get(r.value, 0.0))
    qids: list[str] = []
    for r in rounds:
        n = per_round + (1 if r == heaviest and weights else 0)
        chosen = rank_questions(bank.by_round(r), profile.topic_weights, seed)[:n]
        qids.extend(q.id for q in sorted(chosen, key=lambda q: q.difficulty))
    return [r.value for r in rounds], qids
