"""Answer a candidate's clarifying question from the question's authored scenario, never by invention.

The reply quotes the authored facts that match (keywords with a few interview synonyms, plus embedding
similarity when an embedder is given), says when the point is the candidate's call, and otherwise tells the
candidate to state an assumption. Deterministic: the same question gets the same reply.
"""

from __future__ import annotations

import re

import numpy as np

from interviewer.content.models import Question
from interviewer.embeddings import Embedder
from interviewer.errors import InputError
from interviewer.text import CLARIFY_STOP_WORDS

MAX_CLARIFY_CHARS = 1_000
NOT_SPECIFIED = "That's not specified; state your assumption and go on."
NO_SCENARIO = "This question has no further specifics; state your assumption and go on."

_STOP = CLARIFY_STOP_WORDS
# Interview words that mean the same requirement; each word maps to a canonical concept.
_SYNONYMS: dict[str, str] = {}
for _canon, _words in {
    "traffic": "traffic qps rps req/s requests load volume rate throughput peak spikes concurrent users calls",
    "latency": "latency slo sla p99 p95 p50 deadline fast response milliseconds ms budget",
    "availability": "availability uptime downtime failover outage reliability nines",
    "retention": "retention retain keep history storage store stored days archive",
    "payload": "payload size big large bytes kb mb body format",
    "hardware": "hardware gpu gpus machine machines node nodes host hosts server servers fleet cluster clusters",
    "metrics": "metrics metric counters signals telemetry measurements",
    "resolution": "resolution granularity interval sampling frequency second seconds",
    "model": "model models version versions update updates retrain retrains deploy rollout",
    "features": "features feature signals inputs",
    "users": "users user tenants tenant customers customer people accounts",
    "memory": "memory ram vram hbm gib gb capacity",
    "cost": "cost budget price money dollars spend",
    "accuracy": "accuracy quality precision recall error errors",
    "data": "data dataset rows records table tables schema database",
}.items():
    for _w in _words.split():
        _SYNONYMS.setdefault(_w, _canon)

_WORD = re.compile(r"[a-z0-9][a-z0-9/+\-.]*")


def _concepts(text: str) -> set[str]:
    out: set[str] = set()
    for raw in _WORD.findall(text.lower()):
        w = raw.strip(".-")
        if len(w) < 2 or w in _STOP:
            continue
        out.add(w[:5])  # a cheap stem: "retrains" meets "retrain"
        if w in _SYNONYMS:
            out.add("@" + _SYNONYMS[w])
        elif w.rstrip("s") in _SYNONYMS:
            out.add("@" + _SYNONYMS[w.rstrip("s")])
    return out


def _keyword_score(asked: set[str], key: str, value: str) -> float:
    key_c, value_c = _concepts(key), _concepts(value)
    # The fact's key names what it is about, so a match there counts double.
    return 2.0 * len(asked & key_c) + 1.0 * len(asked & (value_c - key_c))


def _cosines(embedder: Embedder, asked: str, texts: list[str]) -> np.ndarray:
    vectors = embedder.embed([asked, *texts])
    return vectors[1:] @ vectors[0]


def answer_clarification(question: Question, asked: str, embedder: Embedder | None = None) -> str:
    """The interviewer's reply to a clarifying question, from ``question.scenario`` only.

    Args:
        question: the open question (its ``scenario.facts`` and ``scenario.candidate_call`` are the source).
        asked: the candidate's clarifying question.
        embedder: optional; adds semantic similarity to the keyword match.

    Raises:
        InputError: the clarifying question is empty or too long.
    """
    if asked is None or not asked.strip():
        raise InputError("type the clarifying question you want to ask the interviewer")
    if len(asked) > MAX_CLARIFY_CHARS:
        raise InputError(
            f"the clarifying question is {len(asked):,} characters; keep it under {MAX_CLARIFY_CHARS:,}"
        )
    sc = question.scenario
    if sc is None or (not sc.facts and not sc.candidate_call):
        return NO_SCENARIO
    asked_c = _concepts(asked)
    facts = list(sc.facts.items())
    calls = list(sc.candidate_call)
    fact_scores = [_keyword_score(asked_c, k, v) for k, v in facts]
    call_scores = [_keyword_score(asked_c, c, "") for c in calls]  # the whole item names what it is about
    if embedder is not None and (facts or calls):
        sims = _cosines(embedder, asked, [f"{k}: {v}" for k, v in facts] + calls)
        # Similarity adds up to ~2 points: enough to break ties and catch paraphrases, not to invent matches.
        bonus = [max(0.0, float(s) - 0.25) * 4.0 for s in sims]
        fact_scores = [s + b for s, b in zip(fact_scores, bonus[: len(facts)], strict=True)]
        call_scores = [s + b for s, b in zip(call_scores, bonus[len(facts) :], strict=True)]
    best_fact = max(fact_scores, default=0.0)
    best_call = max(call_scores, default=0.0)
    threshold = 2.0
    if best_call >= threshold and best_call > best_fact:
        item = calls[call_scores.index(best_call)]
        return f"That's your call: {item} is up to you. Tell me what you'd choose and why."
    if best_fact < threshold:
        return NOT_SPECIFIED
    ranked = sorted(range(len(facts)), key=lambda i: (-fact_scores[i], i))
    chosen = [i for i in ranked[:2] if fact_scores[i] >= max(threshold, 0.75 * best_fact)]
    parts = [f"{facts[i][0][:1].upper()}{facts[i][0][1:]}: {facts[i][1].rstrip('.')}." for i in chosen]
    return " ".join(parts)
