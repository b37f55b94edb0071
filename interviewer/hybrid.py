"""The lexical half of hybrid retrieval, rank fusion and the reranking step.

Dense MiniLM vectors match meaning but also surface words ("bias" the statistic for "bias" the tensor, a
"Latency" section of an unrelated design for PagedAttention); BM25 matches the rare exact terms candidates use
(PagedAttention, E4M3, im2col, popcount) but not paraphrases. :class:`LexicalIndex` is BM25 (``bm25s``) over
the same chunks Chroma holds; :func:`rrf` fuses the two rankings by reciprocal rank; :class:`Reranker` rescores
the fused candidates by late interaction (each query word-piece against its best-matching passage word-piece,
MiniLM contextual vectors), which reads the passage in context instead of as one averaged vector.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from interviewer.text import RETRIEVAL_STOP_WORDS

# Words that carry no topic in a question ("how would you explain why ..."), dropped from BM25 queries.
_STOP = RETRIEVAL_STOP_WORDS
_TOKEN = re.compile(r"[a-z0-9]+(?:\+\+|#)?")


def _stem(word: str) -> str:
    """A light plural/verb suffix strip: enough for "reductions"/"reduction", "kernels"/"kernel"."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith("es") and word[-3] in "sxz":
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """Lower-cased, lightly stemmed word tokens without stopwords; hyphenated words also as one token
    ("e4m3", "cross-entropy" -> "cross", "entropy", "crossentropy")."""
    low = text.lower()
    out = [_stem(t) for t in _TOKEN.findall(low) if t not in _STOP]
    for compound in re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)+", low):
        out.append(compound.replace("-", ""))
    return out


class LexicalIndex:
    """BM25 over a fixed list of texts; scores can be masked to the texts a filter allows."""

    def __init__(self, texts: Sequence[str]) -> None:
        import bm25s

        self._n = len(texts)
        self._bm25 = bm25s.BM25()
        corpus = [tokenize(t) or ["_empty_"] for t in texts]
        self._bm25.index(corpus, show_progress=False)
        self._vocab: set[str] = set(self._bm25.vocab_dict)

    def __len__(self) -> int:
        return self._n

    def scores(self, query: str) -> np.ndarray:
        """A BM25 score per text (0 where no query term occurs)."""
        terms = [t for t in tokenize(query) if t in self._vocab]
        if not terms or not self._n:
            return np.zeros(self._n, dtype=np.float32)
        return np.asarray(self._bm25.get_scores(terms), dtype=np.float32)

    def top(self, query: str, n: int, allowed: np.ndarray | None = None) -> list[int]:
        """Indices of the ``n`` best-scoring texts with a positive score, best first."""
        s = self.scores(query)
        if allowed is not None:
            s = np.where(allowed, s, 0.0)
        order = np.argsort(-s, kind="stable")[:n]
        return [int(i) for i in order if s[i] > 0]


def rrf(rankings: Sequence[Sequence[str]], k: int = 60) -> dict[str, float]:
    """Reciprocal rank fusion: each id scores sum(1 / (k + rank)) over the rankings it appears in."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
    return fused


TokenEncoder = Callable[[list[str]], list[tuple[list[str], np.ndarray]]]


@dataclass(frozen=True)
class _View:
    content: np.ndarray  # unit vectors of content word-pieces


def _content_rows(tokens: list[str], vectors: np.ndarray) -> np.ndarray:
    keep = [
        i
        for i, t in enumerate(tokens)
        if re.search(r"[a-z0-9]", t) and t.removeprefix("##") not in _STOP and len(t.removeprefix("##")) > 1
    ]
    return vectors[keep] if keep else vectors


class Reranker:
    """Late-interaction rescoring with contextual token vectors; passage views are cached (LRU)."""

    def __init__(self, encode_tokens: TokenEncoder, cache_size: int = 4096) -> None:
        self._encode = encode_tokens
        self._cache: OrderedDict[str, _View] = OrderedDict()
        self._size = cache_size
        self._lock = threading.Lock()

    def _views(self, texts: list[str]) -> list[_View]:
        with self._lock:
            todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            encoded = self._encode(todo)
            with self._lock:
                for t, (tokens, vectors) in zip(todo, encoded, strict=True):
                    self._cache[t] = _View(_content_rows(tokens, vectors))
                while len(self._cache) > self._size:
                    self._cache.popitem(last=False)
        with self._lock:
            views = []
            for t in texts:
                self._cache.move_to_end(t)
                views.append(self._cache[t])
            return views

    def scores(self, query: str, passages: list[str]) -> np.ndarray:
        """Per passage: the mean over the query's content word-pieces of their best cosine in the passage."""
        if not passages:
            return np.zeros(0, dtype=np.float32)
        q = self._views([query])[0].content
        out = np.zeros(len(passages), dtype=np.float32)
        for i, view in enumerate(self._views(passages)):
            if len(q) and len(view.content):
                out[i] = float((q @ view.content.T).max(axis=1).mean())
        return out


def fuse_and_rerank(
    dense: list[str],
    lexical: list[str],
    texts: dict[str, str],
    query: str,
    reranker: Reranker | None,
    *,
    k: int,
    pool: int = 20,
    rerank_weight: float = 0.5,
) -> list[tuple[str, float]]:
    """The ``k`` best ids: RRF over both rankings, then (when given) the reranker over the top ``pool``.

    The final score mixes the normalised fused rank score and the rerank score, so a passage both retrievers
    agree on is not overturned by token overlap alone. The reranker always reads the same ``pool`` whatever
    ``k`` is, and any further ids follow in fused order, so the best 5 are the first 5 of the best 40 (a larger
    pool would renormalise the scores and reorder the top).
    """
    fused = rrf([dense, lexical])
    ranked = sorted(fused, key=lambda key: fused[key], reverse=True)
    if not ranked:
        return []
    if reranker is None or rerank_weight <= 0:
        return [(key, fused[key]) for key in ranked[:k]]
    head, tail = ranked[:pool], ranked[pool:k]
    f = np.array([fused[key] for key in head], dtype=np.float32)
    f = (f - f.min()) / (f.max() - f.min()) if f.max() > f.min() else np.ones_like(f)
    r = reranker.scores(query, [texts[key] for key in head])
    r = (r - r.min()) / (r.max() - r.min()) if r.max() > r.min() else np.ones_like(r)
    final = (1 - rerank_weight) * f + rerank_weight * r
    order = np.argsort(-final, kind="stable")[:k]
    out = [(head[int(i)], float(final[int(i)])) for i in order]
    # Beyond the reranked pool: fused order, scored below every reranked passage (and still in [0, 1]).
    floor = min((s for _, s in out), default=0.0)
    return out + [(key, floor * (1 - (i + 1) / (len(tail) + 1))) for i, key in enumerate(tail)]


def diversify(
    ranked: list[tuple[str, float]], source: Callable[[str], str], penalty: float
) -> list[tuple[str, float]]:
    """Greedy re-order: each pick's score loses ``penalty`` per passage already picked from its file.

    A soft alternative to a per-file cap: a third passage from one document still wins when it is clearly
    better than anything from another document. Returns the penalised scores (never below 0), which are
    non-increasing, so the result stays sorted best first.
    """
    left = list(ranked)
    seen: dict[str, int] = {}
    out: list[tuple[str, float]] = []
    while left:
        best = max(range(len(left)), key=lambda i: left[i][1] - penalty * seen.get(source(left[i][0]), 0))
        key, score = left.pop(best)
        out.append((key, max(0.0, score - penalty * seen.get(source(key), 0))))
        seen[source(key)] = seen.get(source(key), 0) + 1
    return out
