"""Embeddings: the hashing fake carries meaning, MiniLM refuses unverified weights, adapters keep shapes."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from interviewer.embeddings import (
    ChromaEmbeddingFunction,
    Embedder,
    HashingEmbedder,
    LangChainEmbeddings,
    MiniLMEmbedder,
    default_embedder,
)
from interviewer.errors import EmbeddedModelError


def test_hashing_vectors_are_unit_float32_deterministic_and_meaningful() -> None:
    e = HashingEmbedder()
    texts = ["the gradient of the loss", "loss gradients", "C++ virtual dispatch through a vtable", ""]
    v = e.embed(texts)
    assert v.shape == (4, 512) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(v, HashingEmbedder().embed(texts))  # stable across instances
    sims = v @ v.T
    assert sims[0, 1] > 0.8 > 0.2 > abs(sims[0, 2])
    assert e.embed([]).shape == (0, 512)
    assert isinstance(e, Embedder)


def test_hashing_id_changes_with_its_parameters() -> None:
    assert HashingEmbedder().id != HashingEmbedder(dim=256).id
    assert HashingEmbedder().id == HashingEmbedder().id


def test_minilm_constructor_does_no_io(tmp_path: Path) -> None:
    e = MiniLMEmbedder(tmp_path / "does-not-exist")
    assert not e.loaded and e.dim == 384 and e.id.startswith("all-MiniLM-L6-v2@53aa51172d14")


def test_minilm_refuses_weights_with_the_wrong_hash(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"not the real weights")
    e = MiniLMEmbedder(tmp_path)
    with pytest.raises(EmbeddedModelError, match="sha256") as err:
        e.embed(["hello"])
    assert str(tmp_path / "model.safetensors") in str(err.value) and "--force-reinstall" in str(err.value)
    assert not e.loaded


def test_minilm_missing_weights_says_how_to_reinstall(tmp_path: Path) -> None:
    with pytest.raises(EmbeddedModelError, match="reinstall"):
        MiniLMEmbedder(tmp_path).embed(["hello"])


def test_adapters_wrap_any_embedder() -> None:
    e = HashingEmbedder(dim=64)
    lc = LangChainEmbeddings(e)
    docs = lc.embed_documents(["a b", "c d"])
    assert len(docs) == 2 and len(docs[0]) == 64
    assert lc.embed_query("a b") == pytest.approx(docs[0])
    ef = ChromaEmbeddingFunction(e)
    out = ef(["a b"])
    assert len(out) == 1 and len(out[0]) == 64
    rebuilt = ChromaEmbeddingFunction.build_from_config(ef.get_config())
    assert rebuilt.embedder.id == e.id


def test_default_embedder_is_shared() -> None:
    assert default_embedder() is default_embedder()


@pytest.mark.slow
def test_real_minilm_is_normalised_semantic_and_thread_safe() -> None:
    e = MiniLMEmbedder()
    v = e.embed(
        [
            "How does SGD noise help escape sharp minima?",
            "Stochastic gradient noise and flat minima",
            "A recipe for bread",
        ]
    )
    assert v.shape == (3, 384) and v.dtype == np.float32 and e.loaded
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.3
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(e.embed(["tiled matmul in shared memory"] * 8))
        except BaseException as ex:  # collected so a thread failure fails the test
            errors.append(ex)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 4
    np.testing.assert_allclose(results[0], results[3], atol=1e-5)
