"""Retrieval and resume indexes against a real Chroma server (`chroma run`), as a shared deployment uses them.

The server is the one chromadb ships (the `chroma` command in the venv), started on a free loopback port in a
temp dir and stopped after the module.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from interviewer.config import Settings
from interviewer.content.loader import load_bank
from interviewer.embeddings import HashingEmbedder
from interviewer.resume import ResumeIndex, delete_resume_index, parse_resume
from interviewer.retrieval import Retriever

from .resume_samples import OTHER_MD, RESUME_MD
from .support.services import chroma_server
from .test_retrieval import make_content


@pytest.fixture(scope="module")
def chroma_url() -> Iterator[str]:
    with chroma_server() as url:
        yield url


def test_the_bank_index_lives_on_the_server_and_a_second_replica_reuses_it(
    chroma_url: str, tmp_path: Path
) -> None:
    content = make_content(tmp_path / "content")
    bank = load_bank(content)
    emb = HashingEmbedder()
    # Two app replicas: different local data dirs, one Chroma server.
    one = Settings(content_dir=content, data_dir=tmp_path / "a", chroma_url=chroma_url)
    two = Settings(content_dir=content, data_dir=tmp_path / "b", chroma_url=chroma_url)
    first = Retriever(one, embedder=emb, bank=bank, progress=False).build()
    assert first.rebuilt and first.location == chroma_url
    second_retriever = Retriever(two, embedder=emb, bank=bank, progress=False)
    second = second_retriever.build()
    assert not second.rebuilt and second.chunks == first.chunks  # the server already holds it
    top = second_retriever.retrieve("SRAM HBM tiled matmul", k=3, kind="knowledge")
    assert top and top[0].source == "knowledge/phone-screen/sram-hbm.md"
    assert not (tmp_path / "a" / "chroma").exists() and not (tmp_path / "b" / "chroma").exists()


def test_resume_collections_on_the_server_are_isolated_by_owner(chroma_url: str, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", chroma_url=chroma_url)
    emb = HashingEmbedder()
    a = ResumeIndex("dana@example.com", settings, embedder=emb)
    b = ResumeIndex("lee@example.com", settings, embedder=emb)
    assert a.add(parse_resume(RESUME_MD, owner="dana@example.com")) >= 3
    assert b.add(parse_resume(OTHER_MD, owner="lee@example.com")) >= 1
    hits = b.retrieve("CUDA kernel p99 latency 480 ms A10G speech-to-text", k=10)
    assert hits and all("480 ms" not in h.text for h in hits)
    # Another replica (its own settings object, same server) sees Dana's index and only Dana's.
    again = ResumeIndex(
        "dana@example.com", Settings(data_dir=tmp_path / "other", chroma_url=chroma_url), embedder=emb
    )
    assert again.count() == a.count() and "480 ms" in again.retrieve("fused CUDA kernel latency", k=1)[0].text
    assert delete_resume_index("dana@example.com", settings) is True
    assert again.count() == 0 and b.count() >= 1
