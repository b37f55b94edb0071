"""Key-point coverage with the offline embedding model, mapped to a level by a calibrated model.

The signal is a BERTScore-style alignment: every content word-piece of the reference (or of one key point)
is matched to its most similar word-piece of the answer, using MiniLM's contextual token vectors. Recall of
the reference, precision of the answer, the part of the reference that the question does not already say,
and a few sentence-level cosines go into a small logistic model whose parameters are fitted against human
grades by :mod:`interviewer.scoring.calibrate` and shipped as ``calibration.json`` next to this file.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

import numpy as np

from interviewer.embeddings import Embedder
from interviewer.errors import ContentError
from interviewer.text import STOP_WORDS

V = TypeVar("V")

CALIBRATION_PATH = Path(__file__).with_name("calibration.json")

# Function words carry no topic; recall over them is measured separately (the "_all" features).
STOPWORDS = STOP_WORDS

# The features the calibrated answer model reads, in order; calibrate.py fits one weight per name. The
# answer model reads the same recall-type features as the key-point model: with off-topic negatives in the
# fit, precision, echo, cosines and length lowered question-level CV on Mohler (r 0.638 vs 0.658, AUC right vs
# wrong 0.895 vs 0.904, two negatives per question) -- they rewarded fluent text about the topic, not coverage.
ANSWER_FEATURES: tuple[str, ...] = (
    "tok_recall",
    "tok_recall_all",
    "tok_recall_new",
    "tok_recall_new_all",
    "max_sentence_sim",
)
# For one key point inside a longer answer only recall-type features make sense (precision and length would
# punish an answer for covering the other key points too).
KEY_POINT_FEATURES: tuple[str, ...] = (
    "tok_recall",
    "tok_recall_all",
    "tok_recall_new",
    "tok_recall_new_all",
    "max_sentence_sim",
)

_WORD = re.compile(r"[A-Za-z0-9]+(?:[+#]+)?")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")
_CHUNK_WORDS = 150  # MiniLM reads at most 256 word-pieces; 150 words stay under that for ordinary prose


@runtime_checkable
class TokenEmbedder(Protocol):
    """An embedder that also returns contextual token vectors (MiniLMEmbedder does)."""

    def embed_tokens(self, texts: list[str]) -> list[tuple[list[str], np.ndarray]]: ...


def words(text: str) -> list[str]:
    """Lower-cased word tokens."""
    return [w.lower() for w in _WORD.findall(text)]


def split_sentences(text: str) -> list[str]:
    """Sentences (or lines) of ``text``, stripped, in order; the whole text if it has no boundary."""
    parts = [p.strip() for p in _SENTENCE_END.split(text) if p and p.strip()]
    return parts or ([text.strip()] if text.strip() else [])


def _chunks(text: str) -> list[str]:
    """Sentence-aligned pieces of at most ~150 words, so token vectors keep their context without truncation."""
    out: list[str] = []
    current: list[str] = []
    count = 0
    for sentence in split_sentences(text):
        n = len(sentence.split())
        if current and count + n > _CHUNK_WORDS:
            out.append(" ".join(current))
            current, count = [], 0
        if n > _CHUNK_WORDS:  # one huge "sentence" (e.g. pasted code): cut by words
            tokens = sentence.split()
            for i in range(0, len(tokens), _CHUNK_WORDS):
                out.append(" ".join(tokens[i : i + _CHUNK_WORDS]))
            continue
        current.append(sentence)
        count += n
    if current:
        out.append(" ".join(current))
    return out


@dataclass(frozen=True)
class TokenView:
    """A text as token vectors: ``content`` marks tokens that are neither punctuation nor stopwords."""

    tokens: list[str]
    vectors: np.ndarray
    alnum: np.ndarray  # bool per token: has a letter or digit
    content: np.ndarray  # bool per token: alnum and not a stopword

    def rows(self, content_only: bool) -> np.ndarray:
        """Vectors of content tokens (or all alphanumeric ones), falling back to whatever exists."""
        for mask in (self.content, self.alnum) if content_only else (self.alnum,):
            if mask.any():
                return self.vectors[mask]
        return self.vectors


def _view(tokens: list[str], vectors: np.ndarray) -> TokenView:
    alnum = np.array([bool(re.search(r"[a-z0-9]", t)) for t in tokens], dtype=bool)
    content = np.array(
        [a and t.removeprefix("##") not in STOPWORDS for t, a in zip(tokens, alnum, strict=True)], dtype=bool
    )
    return TokenView(tokens, vectors, alnum.reshape(-1), content.reshape(-1))


class _LRU(Generic[V]):
    """Least-recently-used values, bounded by their total size in bytes (None: unbounded); thread-safe."""

    def __init__(self, max_bytes: int | None, size: Callable[[V], int]) -> None:
        self.max_bytes = max_bytes
        self._size = size
        self._items: OrderedDict[str, V] = OrderedDict()
        self._lock = threading.Lock()
        self.nbytes = 0

    def __len__(self) -> int:
        return len(self._items)

    def found(self, keys: Iterable[str]) -> dict[str, V]:
        """The cached values among ``keys`` (now the most recently used)."""
        with self._lock:
            out = {k: self._items[k] for k in keys if k in self._items}
            for k in out:
                self._items.move_to_end(k)
            return out

    def put(self, key: str, value: V) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.nbytes -= self._size(old)
            self._items[key] = value
            self.nbytes += self._size(value)
            while self.max_bytes is not None and self.nbytes > self.max_bytes and len(self._items) > 1:
                _, dropped = self._items.popitem(last=False)
                self.nbytes -= self._size(dropped)


# What the scorer keeps between answers. A long-running app reads every candidate's answers (and, spoken, every
# partial transcript: about 100 kB of token vectors each), so an unbounded cache grows with every answer.
TOKEN_CACHE_BYTES = 64 * 2**20
SENTENCE_CACHE_BYTES = 16 * 2**20


class TextEncoder:
    """Caches sentence vectors and token views of texts for one embedder (scoring re-reads the same texts).

    The caches are least-recently-used and bounded in bytes (``None``: unbounded, for a one-off calibration).
    """

    def __init__(
        self,
        embedder: Embedder,
        *,
        token_bytes: int | None = TOKEN_CACHE_BYTES,
        sentence_bytes: int | None = SENTENCE_CACHE_BYTES,
    ) -> None:
        self.embedder = embedder
        self._sent: _LRU[np.ndarray] = _LRU(sentence_bytes, lambda v: int(v.nbytes))
        self._tok: _LRU[TokenView] = _LRU(token_bytes, lambda v: int(v.vectors.nbytes))

    def sentences(self, texts: list[str]) -> np.ndarray:
        """Unit sentence vectors for ``texts`` (cached)."""
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        have = self._sent.found(texts)
        todo = sorted(set(texts) - have.keys())
        if todo:
            for t, v in zip(todo, self.embedder.embed(todo), strict=True):
                self._sent.put(t, v)
                have[t] = v
        return np.stack([have[t] for t in texts])

    def tokens(self, texts: list[str]) -> list[TokenView]:
        """Token views for ``texts`` (cached); word vectors from ``embed`` when the embedder has no tokens."""
        have = self._tok.found(texts)
        todo = sorted(set(texts) - have.keys())
        if todo:
            for t, view in self._compute_tokens(todo).items():
                self._tok.put(t, view)
                have[t] = view
        return [have[t] for t in texts]

    def _compute_tokens(self, todo: list[str]) -> dict[str, TokenView]:
        out: dict[str, TokenView] = {}
        if isinstance(self.embedder, TokenEmbedder):
            pieces = {t: _chunks(t) for t in todo}
            flat = sorted({c for cs in pieces.values() for c in cs})
            got = dict(zip(flat, self.embedder.embed_tokens(flat), strict=True))
            for t in todo:
                toks: list[str] = []
                vecs: list[np.ndarray] = []
                for c in pieces[t]:
                    toks.extend(got[c][0])
                    vecs.append(got[c][1])
                matrix = np.concatenate(vecs) if vecs else np.zeros((0, self.embedder.dim), np.float32)
                out[t] = _view(toks, matrix)
        else:
            per_text = {t: words(t) for t in todo}
            vocab = sorted({w for ws in per_text.values() for w in ws})
            vectors = dict(zip(vocab, self.sentences(vocab), strict=True)) if vocab else {}
            for t, ws in per_text.items():
                matrix = (
                    np.stack([vectors[w] for w in ws]) if ws else np.zeros((0, self.embedder.dim), np.float32)
                )
                out[t] = _view(ws, matrix)
        return out


def _align(
    reference: TokenView, answer: TokenView, question: TokenView, content_only: bool
) -> dict[str, float]:
    ref = reference.rows(content_only)
    ans = answer.rows(content_only)
    q = question.rows(content_only)
    if len(ref) == 0 or len(ans) == 0 or not answer.alnum.any():
        return {"recall": 0.0, "precision": 0.0, "recall_new": 0.0, "echo": 0.0}
    sim = ref @ ans.T
    per_ref = sim.max(axis=1)
    recall = float(per_ref.mean())
    precision = float(sim.max(axis=0).mean())
    if len(q):
        # Reference tokens that the question already says are free to repeat; weight the rest.
        weight = np.clip(1.0 - (ref @ q.T).max(axis=1), 0.0, None)
        recall_new = float((per_ref * weight).sum() / weight.sum()) if weight.sum() > 1e-6 else recall
        echo = float((ans @ q.T).max(axis=1).mean())
    else:
        recall_new, echo = recall, 0.0
    return {"recall": recall, "precision": precision, "recall_new": recall_new, "echo": echo}


def answer_features(enc: TextEncoder, answer: str, reference: str, question: str) -> dict[str, float]:
    """The calibrated model's features for one answer against one reference text."""
    a, r, q = enc.tokens([answer, reference, question])
    content = _align(r, a, q, content_only=True)
    every = _align(r, a, q, content_only=False)
    va, vr, vq = enc.sentences([answer, reference, question])
    n_answer, n_reference = len(words(answer)), len(words(reference))
    sentences = split_sentences(answer)
    max_sent = float((enc.sentences(sentences) @ vr).max()) if sentences else 0.0
    return {
        "tok_recall": content["recall"],
        "tok_recall_all": every["recall"],
        "tok_precision": content["precision"],
        "tok_precision_all": every["precision"],
        "tok_recall_new": content["recall_new"],
        "tok_recall_new_all": every["recall_new"],
        "question_echo": content["echo"],
        "cos_reference": float(va @ vr) if n_answer else 0.0,
        "cos_question": float(va @ vq) if n_answer else 0.0,
        "len_ratio": math.log((1 + n_answer) / (1 + n_reference)),
        "max_sentence_sim": max_sent,
    }


@dataclass(frozen=True)
class LogisticLevel:
    """``scale * sigmoid(bias + sum(w * (x - mean) / std))``: a fraction of full marks from features."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    std: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float

    def fraction(self, values: dict[str, float]) -> float:
        """Predicted fraction of full marks in [0, 1]."""
        z = self.bias
        for name, m, s, w in zip(self.features, self.mean, self.std, self.weights, strict=True):
            z += w * (values[name] - m) / s
        return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))

    def to_json(self) -> dict[str, Any]:
        return {
            "features": list(self.features),
            "mean": [round(x, 6) for x in self.mean],
            "std": [round(x, 6) for x in self.std],
            "weights": [round(x, 6) for x in self.weights],
            "bias": round(self.bias, 6),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LogisticLevel:
        model = cls(
            features=tuple(data["features"]),
            mean=tuple(float(x) for x in data["mean"]),
            std=tuple(float(x) for x in data["std"]),
            weights=tuple(float(x) for x in data["weights"]),
            bias=float(data["bias"]),
        )
        if not len(model.features) == len(model.mean) == len(model.std) == len(model.weights):
            raise ValueError("features, mean, std and weights must have the same length")
        return model


@dataclass(frozen=True)
class Calibration:
    """The shipped parameters: the answer-level model, the key-point model and its coverage threshold."""

    answer: LogisticLevel
    key_point: LogisticLevel
    covered_threshold: float  # key-point fraction at or above which the point counts as covered
    meta: dict[str, Any] = field(default_factory=dict)


def load_calibration(path: Path | None = None) -> Calibration:
    """Read calibration.json (the package's copy by default)."""
    return _load_calibration(str(path or CALIBRATION_PATH))


@cache
def _load_calibration(path: str) -> Calibration:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return Calibration(
            answer=LogisticLevel.from_json(data["answer_model"]),
            key_point=LogisticLevel.from_json(data["key_point_model"]),
            covered_threshold=float(data["covered_threshold"]),
            meta={k: v for k, v in data.items() if k not in {"answer_model", "key_point_model"}},
        )
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ContentError(
            f"the scorer's calibration at {path} is missing or malformed ({e}); "
            "rerun `interviewer calibrate` or reinstall the package"
        ) from e


@dataclass(frozen=True)
class KeyPointMatch:
    """How well one key point is covered, with the answer sentence closest to it."""

    key_point: str
    fraction: float  # calibrated, 0-1
    covered: bool
    best_sentence: str | None
    similarity: float


@dataclass(frozen=True)
class CoverageResult:
    """Offline coverage of an answer: a 0-4 level, per-key-point matches and the features behind them."""

    level: float
    fraction: float
    matches: list[KeyPointMatch]
    features: dict[str, float]

    @property
    def covered(self) -> list[str]:
        return [m.key_point for m in self.matches if m.covered]

    @property
    def missed(self) -> list[str]:
        return [m.key_point for m in self.matches if not m.covered]


def score_coverage(
    enc: TextEncoder,
    answer: str,
    key_points: list[str],
    question: str,
    calibration: Calibration,
    reference: str | None = None,
) -> CoverageResult:
    """Level 0-4 for ``answer`` against the key points (joined, or ``reference`` when given)."""
    reference = reference or "\n".join(key_points)
    if not words(answer):
        return CoverageResult(0.0, 0.0, [KeyPointMatch(k, 0.0, False, None, 0.0) for k in key_points], {})
    feats = answer_features(enc, answer, reference, question)
    fraction = calibration.answer.fraction(feats)
    sentences = split_sentences(answer)
    sent_vecs = enc.sentences(sentences)
    kp_vecs = enc.sentences(key_points) if key_points else np.zeros((0, sent_vecs.shape[1]))
    matches: list[KeyPointMatch] = []
    for i, kp in enumerate(key_points):
        kp_feats = answer_features(enc, answer, kp, question)
        kp_fraction = calibration.key_point.fraction(kp_feats)
        sims = sent_vecs @ kp_vecs[i]
        j = int(sims.argmax())
        covered = kp_fraction >= calibration.covered_threshold
        matches.append(KeyPointMatch(kp, kp_fraction, covered, sentences[j], float(sims[j])))
    return CoverageResult(round(4.0 * fraction, 3), fraction, matches, feats)
