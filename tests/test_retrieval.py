"""Retrieval: chunking, filters, rebuild-on-change, client choice, damaged stores, and real recall@5."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from interviewer.config import Settings
from interviewer.content.loader import load_bank
from interviewer.embeddings import HashingEmbedder
from interviewer.errors import IndexError_
from interviewer.retrieval import (
    MAX_K,
    Retriever,
    build_index,
    chunk_bank,
    chunk_knowledge,
    make_client,
    split_sections,
    where_filter,
)

REPO = Path(__file__).resolve().parents[1]
CANDIDATES = REPO / "benchmarks" / "data" / "candidate_questions.yaml"
CANDIDATE_RECALL_MIN = (
    0.9  # recall@5 of each half, queried as the app queries (BENCHMARKS.md has the figures)
)
REALISTIC_RECALL_MIN = (
    0.9  # the target; measured 0.952 with the fundamentals documents (BENCHMARKS.md)
)

GPU_DOC = """\
# GPU memory hierarchy: SRAM versus HBM

Intro line before any section.

## Bandwidth
On-chip SRAM is small and fast; HBM is large and slower. A tiled matmul keeps a tile in SRAM and reuses it.

## Worked example
```python
## not a heading: inside a code fence
tile = 128
```
Reuse of each tile cuts HBM traffic by the tile width.
"""

AMDAHL_DOC = """\
# Amdahl's law and end-to-end speedup

## The formula
Speedup is one over the serial fraction plus the parallel fraction divided by the parallel speedup.

## Worked example
A stage that is sixty percent of the request made twice as fast gives a thirty percent latency cut.
"""

DISPATCH_DOC = """\
# C++ virtual dispatch

## The vtable
A virtual call loads the vtable pointer from the object and jumps through the function slot.
"""


def _rubric(
    qid: str, round_: str, topic: str, question: str, knowledge: list[str], **extra: Any
) -> dict[str, Any]:
    return {
        "id": qid,
        "round": round_,
        "topic": topic,
        "difficulty": 1,
        "question": question,
        "variants": extra.get("variants", []),
        "key_points": extra.get("key_points", ["first point about " + topic, "second point about " + topic]),
        "criteria": [{"name": "depth", "levels": {0: "nothing", 2: "some", 4: "all"}}],
        "why_chain": [
            {"level": 1, "target": "assumption", "key_points": ["k"], "fallback": "Why?"},
            {"level": 2, "target": "breakage", "key_points": ["k"], "fallback": "What breaks?"},
        ],
        "model_answer": extra.get("model_answer", f"A model answer about {topic}."),
        "knowledge": knowledge,
    }


def make_content(root: Path) -> Path:
    """A small content tree: two rounds, three knowledge documents, three rubrics."""
    docs = {
        "knowledge/phone-screen/sram-hbm.md": GPU_DOC,
        "knowledge/phone-screen/amdahl.md": AMDAHL_DOC,
        "knowledge/cpp-systems/virtual-dispatch.md": DISPATCH_DOC,
    }
    for rel, text in docs.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    rubrics = [
        _rubric(
            "phone.sram-hbm",
            "phone-screen",
            "gpu-memory",
            "Why is a tiled matmul faster on a GPU, in terms of SRAM and HBM?",
            ["knowledge/phone-screen/sram-hbm.md"],
            variants=["Explain the GPU memory hierarchy for matmul tiling."],
        ),
        _rubric(
            "phone.amdahl",
            "phone-screen",
            "amdahl",
            "A stage is 60 ms of a 100 ms request. What does halving it do end to end?",
            ["knowledge/phone-screen/amdahl.md"],
        ),
        _rubric(
            "cpp.dispatch",
            "cpp-systems",
            "virtual-dispatch",
            "What does a C++ virtual call cost compared with a direct call?",
            ["knowledge/cpp-systems/virtual-dispatch.md"],
        ),
    ]
    for r in rubrics:
        path = root / "rubrics" / r["round"] / f"{r['id']}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(r, sort_keys=False), encoding="utf-8")
    return root


class CountingEmbedder(HashingEmbedder):
    """The hashing fake, counting how many texts it embedded."""

    def __init__(self, dim: int = 512, fail_after: int | None = None) -> None:
        super().__init__(dim)
        self.calls = 0
        self.texts = 0
        self.fail_after = fail_after

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if self.fail_after is not None and self.texts + len(texts) > self.fail_after:
            raise RuntimeError("simulated crash mid-build")
        self.texts += len(texts)
        return super().embed(texts)


@pytest.fixture
def content(tmp_path: Path) -> Path:
    return make_content(tmp_path / "content")


@pytest.fixture
def settings(content: Path, tmp_path: Path) -> Settings:
    return Settings(content_dir=content, data_dir=tmp_path / "data")


def _retriever(settings: Settings, embedder: HashingEmbedder | None = None) -> Retriever:
    return Retriever(settings, embedder=embedder or HashingEmbedder(), progress=False)


# --------------------------------------------------------------------------------------------- chunking


def test_sections_keep_title_and_heading_and_ignore_fenced_headings(tmp_path: Path) -> None:
    title, sections = split_sections(GPU_DOC)
    assert title == "GPU memory hierarchy: SRAM versus HBM"
    assert [h for h, _ in sections] == ["Overview", "Bandwidth", "Worked example"]
    root = make_content(tmp_path)
    chunks = chunk_knowledge(
        root / "knowledge/phone-screen/sram-hbm.md", root, round_="phone-screen", topics=["gpu-memory"]
    )
    assert len(chunks) == 3
    for c, heading in zip(chunks, ["Overview", "Bandwidth", "Worked example"], strict=True):
        assert c.text.startswith(f"{title}\n## {heading}\n")
        assert c.part == heading
    assert "## not a heading" in chunks[2].text  # the fenced line stayed in its section
    assert chunks[1].metadata() == {
        "kind": "knowledge",
        "round": "phone-screen",
        "topic": "gpu-memory",
        "topics": ["gpu-memory", "sram-hbm"],
        "source": "knowledge/phone-screen/sram-hbm.md",
        "part": "Bandwidth",
        "question_id": "",
    }


def test_long_section_splits_on_paragraphs_with_heading_repeated(tmp_path: Path) -> None:
    para = " ".join(["word"] * 100)
    doc = tmp_path / "knowledge" / "phone-screen" / "long.md"
    doc.parent.mkdir(parents=True)
    doc.write_text(f"# Long\n\n## Big section\n{para}\n\n{para}\n\n{para}\n", encoding="utf-8")
    chunks = chunk_knowledge(doc, tmp_path, round_="phone-screen", topics=[], max_words=180)
    assert len(chunks) == 3
    assert all(c.text.startswith("Long\n## Big section\n") for c in chunks)
    assert chunks[0].topic == "long"  # no question links it: the file name is its topic
    assert len({c.id for c in chunks}) == 3


def test_rubrics_become_typed_chunks(content: Path) -> None:
    chunks = chunk_bank(load_bank(content))
    rub = [c for c in chunks if c.question_id == "phone.sram-hbm"]
    assert [c.part for c in rub] == ["question", "variant", "key_points", "model_answer"]
    assert all(c.kind == "rubric" and c.round == "phone-screen" and c.topic == "gpu-memory" for c in rub)
    assert rub[0].source == "rubrics/phone-screen/phone.sram-hbm.yaml"
    assert "first point about gpu-memory" in rub[2].text and rub[2].text.startswith("Why is a tiled matmul")
    know = [c for c in chunks if c.kind == "knowledge"]
    assert {c.source for c in know} == {
        "knowledge/phone-screen/sram-hbm.md",
        "knowledge/phone-screen/amdahl.md",
        "knowledge/cpp-systems/virtual-dispatch.md",
    }
    assert {c.topic for c in know if c.source.endswith("amdahl.md")} == {"amdahl"}
    assert len({c.id for c in chunks}) == len(chunks)


def test_where_filter_shapes() -> None:
    assert where_filter() is None
    assert where_filter(round="cpp-systems") == {"round": "cpp-systems"}
    assert where_filter(round="phone-screen", topic="amdahl", kind="knowledge") == {
        "$and": [{"round": "phone-screen"}, {"topics": {"$contains": "amdahl"}}, {"kind": "knowledge"}]
    }
    with pytest.raises(ValueError):
        where_filter(round="no-such-round")


# --------------------------------------------------------------------------------------------- retrieval


def test_retrieve_ranks_by_meaning_and_filters(settings: Settings) -> None:
    r = _retriever(settings)
    top = r.retrieve("SRAM HBM tiled matmul", k=3, kind="knowledge")
    assert top[0].source == "knowledge/phone-screen/sram-hbm.md"
    assert top[0].score > top[-1].score
    assert all(p.kind == "knowledge" for p in top)

    cpp = r.retrieve("SRAM HBM tiled matmul", round="cpp-systems", k=10)
    assert cpp and all(p.round == "cpp-systems" for p in cpp)

    amdahl = r.retrieve("tiled matmul", topic="amdahl", k=10)
    assert amdahl and {p.source for p in amdahl} == {
        "knowledge/phone-screen/amdahl.md",
        "rubrics/phone-screen/phone.amdahl.yaml",
    }
    rub = r.retrieve("virtual call cost", kind="rubric", round="cpp-systems", k=10)
    assert {p.question_id for p in rub} == {"cpp.dispatch"} and len(rub) == 3  # question, key points, answer
    assert r.retrieve("   ") == []
    assert len(r.retrieve("matmul", k=2)) == 2


def test_per_source_cap_diversifies_and_still_fills_k(settings: Settings) -> None:
    r = _retriever(settings)
    uncapped = r.retrieve("SRAM HBM tiled matmul", kind="knowledge", k=3, per_source=None)
    assert [p.source for p in uncapped] == ["knowledge/phone-screen/sram-hbm.md"] * 3
    assert r.retrieve("SRAM HBM tiled matmul", kind="knowledge", k=3) == uncapped  # no cap by default
    capped = r.retrieve("SRAM HBM tiled matmul", kind="knowledge", k=3, per_source=2)
    assert [p.source for p in capped].count("knowledge/phone-screen/sram-hbm.md") == 2
    assert [p.score for p in capped] == sorted((p.score for p in capped), reverse=True)
    one = r.retrieve("SRAM HBM tiled matmul", round="phone-screen", kind="knowledge", k=5, per_source=1)
    assert len(one) == 5  # only two files qualify: the cap yields, slots are filled best-first
    assert {p.source for p in one} == {
        "knowledge/phone-screen/sram-hbm.md",
        "knowledge/phone-screen/amdahl.md",
    }
    two = r.retrieve("SRAM HBM tiled matmul", round="phone-screen", kind="knowledge", k=2, per_source=1)
    assert {p.source for p in two} == {
        "knowledge/phone-screen/sram-hbm.md",
        "knowledge/phone-screen/amdahl.md",
    }


def test_search_with_precomputed_vector_matches_retrieve(settings: Settings) -> None:
    emb = HashingEmbedder()
    r = _retriever(settings, emb)
    by_text = r.retrieve("virtual dispatch vtable", k=3)
    by_vec = r.search(emb.embed(["virtual dispatch vtable"])[0], k=3, query="virtual dispatch vtable")
    assert by_text == by_vec


def test_langchain_vectorstore_reads_the_same_collection(settings: Settings) -> None:
    store = _retriever(settings).as_vectorstore()
    docs = store.similarity_search("vtable pointer virtual call", k=1, filter={"kind": "knowledge"})
    assert docs[0].metadata["source"] == "knowledge/cpp-systems/virtual-dispatch.md"


# --------------------------------------------------------------------------------------------- rebuilds


def test_index_rebuilds_only_when_content_or_embedder_changes(settings: Settings, content: Path) -> None:
    emb = CountingEmbedder()
    first = Retriever(settings, embedder=emb, progress=False).build()
    assert first.rebuilt and first.chunks == emb.texts > 0

    emb2 = CountingEmbedder()
    again = Retriever(settings, embedder=emb2, progress=False).build()
    assert not again.rebuilt and emb2.texts == 0 and again.fingerprint == first.fingerprint
    assert again.chunks == first.chunks

    doc = content / "knowledge/phone-screen/amdahl.md"
    doc.write_text(doc.read_text() + "\n## Gustafson\nScaled speedup grows with the problem size.\n")
    emb3 = CountingEmbedder()
    changed = Retriever(settings, embedder=emb3, progress=False).build()
    assert changed.rebuilt and changed.fingerprint != first.fingerprint and changed.chunks == first.chunks + 1
    hits = Retriever(settings, embedder=HashingEmbedder(), progress=False).retrieve("Gustafson scaled", k=1)
    assert hits[0].part == "Gustafson"  # the new section is searchable, old index replaced

    task = content / "rubrics" / "coding" / "some-task" / "task.yaml"
    task.parent.mkdir(parents=True)
    task.write_text("id: some-task\n")  # changes Bank.fingerprint(), but nothing that is indexed
    emb4 = CountingEmbedder()
    unrelated = Retriever(settings, embedder=emb4, progress=False).build()
    assert unrelated.fingerprint != changed.fingerprint and not unrelated.rebuilt and emb4.texts == 0

    other = Retriever(settings, embedder=HashingEmbedder(dim=256), progress=False).build()
    assert other.rebuilt  # a different embedder means different vectors

    forced = Retriever(settings, embedder=HashingEmbedder(dim=256), progress=False).build(force=True)
    assert forced.rebuilt and forced.chunks == changed.chunks


def test_stored_vectors_belong_to_their_own_chunks(settings: Settings) -> None:
    import chromadb

    import interviewer.retrieval as retrieval

    emb = HashingEmbedder()
    Retriever(settings, embedder=emb, progress=False).build()
    got = (
        chromadb.PersistentClient(path=str(settings.chroma_dir))
        .get_collection(retrieval.COLLECTION)
        .get(include=["documents", "embeddings"])
    )
    assert len(got["ids"]) == 16
    np.testing.assert_allclose(
        np.asarray(got["embeddings"]), emb.embed(list(got["documents"] or [])), atol=1e-6
    )


def test_failed_rebuild_keeps_the_old_index_and_retries_next_time(settings: Settings, content: Path) -> None:
    first = Retriever(settings, embedder=CountingEmbedder(), progress=False).build()
    (content / "knowledge/cpp-systems/virtual-dispatch.md").write_text(
        DISPATCH_DOC + "\n## Devirtualization\nFinal classes.\n"
    )
    with pytest.raises(RuntimeError, match="simulated crash"):
        Retriever(settings, embedder=CountingEmbedder(fail_after=8), progress=False).build()
    import chromadb

    import interviewer.retrieval as retrieval

    old = chromadb.PersistentClient(path=str(settings.chroma_dir)).get_collection(retrieval.COLLECTION)
    assert old.count() == first.chunks and old.metadata["fingerprint"] == first.fingerprint
    assert old.metadata["embedder"] == HashingEmbedder().id and len(old.metadata["content"]) == 16
    report = Retriever(settings, embedder=CountingEmbedder(), progress=False).build()
    assert report.rebuilt and report.chunks == first.chunks + 1


def test_interrupted_write_reads_as_stale(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    from chromadb.api.models.Collection import Collection

    def crash(self: Collection, **kwargs: Any) -> None:
        raise OSError("disk full")

    with monkeypatch.context() as m:
        m.setattr(Collection, "modify", crash)
        with pytest.raises(IndexError_, match=r"disk full.*interviewer index --force"):
            Retriever(settings, embedder=HashingEmbedder(), progress=False).build()
    emb = CountingEmbedder()
    report = Retriever(settings, embedder=emb, progress=False).build()
    assert report.rebuilt and emb.texts == report.chunks


def test_build_index_reports_progress(settings: Settings) -> None:
    seen: list[tuple[int, int]] = []
    report = build_index(
        settings=settings, embedder=HashingEmbedder(), progress=lambda d, t: seen.append((d, t))
    )
    assert report.rebuilt and seen[-1] == (report.chunks, report.chunks)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_first_retrieve_builds_lazily_and_constructor_does_no_io(settings: Settings) -> None:
    r = _retriever(settings)
    assert not settings.chroma_dir.exists()
    assert r.retrieve("vtable", k=1)
    assert (settings.chroma_dir / "chroma.sqlite3").exists()


# --------------------------------------------------------------------------------------------- clients and damage


def test_http_client_chosen_when_chroma_url_is_set(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import chromadb

    calls: list[dict[str, Any]] = []

    class FakeHttpClient:
        def __init__(self, **kwargs: Any) -> None:
            calls.append(kwargs)

    def no_local(*a: Any, **k: Any) -> None:
        raise AssertionError("PersistentClient must not be used when chroma_url is set")

    monkeypatch.setattr(chromadb, "HttpClient", FakeHttpClient)
    monkeypatch.setattr(chromadb, "PersistentClient", no_local)
    remote = settings.model_copy(update={"chroma_url": "https://chroma.internal:9443"})
    client = make_client(remote)
    assert isinstance(client, FakeHttpClient)
    assert calls[0]["host"] == "chroma.internal" and calls[0]["port"] == 9443 and calls[0]["ssl"] is True
    plain = settings.model_copy(update={"chroma_url": "http://10.0.0.5"})
    make_client(plain)
    assert calls[1]["port"] == 80 and calls[1]["ssl"] is False
    assert not settings.chroma_dir.exists()


def test_unreachable_server_names_the_url(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    import chromadb

    def refuse(**kwargs: Any) -> None:
        raise ValueError("Could not connect to a Chroma server. Are you sure it is running?")

    monkeypatch.setattr(chromadb, "HttpClient", refuse)
    remote = settings.model_copy(update={"chroma_url": "http://127.0.0.1:1"})
    with pytest.raises(IndexError_, match=r"http://127.0.0.1:1.*INTERVIEWER_CHROMA_URL"):
        _retriever(remote).retrieve("vtable")


def test_local_client_by_default(settings: Settings) -> None:
    from chromadb.api import ClientAPI

    assert isinstance(make_client(settings), ClientAPI)
    assert settings.chroma_dir.is_dir()


def test_corrupt_store_names_path_and_fix_then_force_repairs(settings: Settings) -> None:
    settings.chroma_dir.mkdir(parents=True)
    (settings.chroma_dir / "chroma.sqlite3").write_bytes(b"this is not a database" * 100)
    with pytest.raises(IndexError_) as err:
        _retriever(settings).retrieve("vtable")
    msg = str(err.value)
    assert str(settings.chroma_dir) in msg and "interviewer index --force" in msg

    report = build_index(force=True, settings=settings, embedder=HashingEmbedder(), progress=False)
    assert report.rebuilt and report.chunks > 0
    assert _retriever(settings).retrieve("vtable", k=1)[0].source.endswith("virtual-dispatch.md")


def test_index_path_that_is_a_file(settings: Settings) -> None:
    settings.chroma_dir.parent.mkdir(parents=True)
    settings.chroma_dir.write_text("oops")
    with pytest.raises(IndexError_, match=str(settings.chroma_dir)):
        _retriever(settings).retrieve("vtable")


def test_force_never_deletes_a_folder_that_is_not_chroma(settings: Settings) -> None:
    settings.chroma_dir.mkdir(parents=True)
    precious = settings.chroma_dir / "notes.txt"
    precious.write_text("mine")
    (settings.chroma_dir / "chroma.sqlite3").write_text("garbage")
    with pytest.raises(IndexError_, match="not a Chroma index"):
        build_index(force=True, settings=settings, embedder=HashingEmbedder(), progress=False)
    assert precious.read_text() == "mine"


# --------------------------------------------------------------------------------------------- real model


@pytest.fixture(scope="module")
def minilm_bank(tmp_path_factory: pytest.TempPathFactory) -> Retriever:
    """The real bank indexed with the real MiniLM embedder, shared by the tests that read real rankings."""
    from interviewer.embeddings import MiniLMEmbedder

    settings = Settings(content_dir=REPO, data_dir=tmp_path_factory.mktemp("minilm"))
    return Retriever(settings, embedder=MiniLMEmbedder(), bank=load_bank(REPO), progress=False)


@pytest.mark.slow
def test_real_minilm_recall_at_5_over_the_bank(minilm_bank: Retriever) -> None:
    """For each question, its own knowledge documents are among the sources of the top-5 knowledge chunks."""
    r = minilm_bank
    bank = r.bank
    found = total = 0
    misses: list[str] = []
    for q in bank.questions.values():
        sources = {p.source for p in r.retrieve(q.question, k=5, kind="knowledge")}
        for link in q.knowledge:
            total += 1
            if link in sources:
                found += 1
            else:
                misses.append(f"{q.id} -> {link}")
    recall = found / total
    assert recall >= 0.9, f"recall@5 = {recall:.3f}; misses:\n" + textwrap.indent("\n".join(misses), "  ")

    # The ranking failures candidates met: surface-word matches must not beat the concept.
    paged = r.retrieve("What problem does PagedAttention solve, and how does vLLM manage KV blocks?", k=5)
    assert not any(p.round == "system-design" for p in paged), [p.source for p in paged]
    assert sum("kv" in p.text.lower() for p in paged) >= 3
    bias = r.retrieve("Explain the bias in a linear layer and how it is fused into the GEMM epilogue", k=3)
    assert "bias-variance" not in bias[0].source, [p.source for p in bias]

    # Realistic candidate questions (benchmarks/data/realistic_questions.yaml, written from the themes).
    items = yaml.safe_load((REPO / "benchmarks/data/realistic_questions.yaml").read_text())["questions"]
    hits = 0
    for item in items:
        texts = [p.text.lower() for p in r.retrieve(item["q"], k=5)]
        hits += any(
            all(re.search(term.lower(), t) for term in group) for group in item["relevant"] for t in texts
        )
    assert hits / len(items) >= REALISTIC_RECALL_MIN, f"realistic recall@5 {hits}/{len(items)}"


def _candidates() -> dict[str, list[dict[str, Any]]]:
    data: dict[str, list[dict[str, Any]]] = yaml.safe_load(CANDIDATES.read_text(encoding="utf-8"))
    return data


def _app_query(r: Retriever, item: dict[str, Any], k: int, **kw: Any) -> list[Any]:
    """The query the app makes for a question: its text and round, knowledge passages only."""
    return r.retrieve(item["q"], round=item["round"], k=k, kind="knowledge", **kw)


@pytest.mark.slow
def test_candidate_questions_top_k_is_the_head_of_top_2k_and_recall_at_5(minilm_bank: Retriever) -> None:
    """Over the candidate set, queried as the app queries: the top k is the head of the top 2k, and one of
    each question's own documents is in the top 5 for at least CANDIDATE_RECALL_MIN of each half."""
    for half, items in _candidates().items():
        found = 0
        misses: list[str] = []
        for item in items:
            ranked = {k: _app_query(minilm_bank, item, k) for k in (3, 5, 6, 10, 20)}
            for k in (3, 5, 10):
                assert ranked[k] == ranked[2 * k][:k], (item["q"], k)
            if set(item["docs"]) & {p.source for p in ranked[5]}:
                found += 1
            else:
                misses.append(f"{item['q']} -> {item['docs']}")
        recall = found / len(items)
        assert recall >= CANDIDATE_RECALL_MIN, f"{half} recall@5 = {recall:.3f}; misses:\n" + "\n".join(
            misses
        )


# --------------------------------------------------------------------------------------------- hybrid


class TokenHashingEmbedder(HashingEmbedder):
    """The hashing fake with word vectors as well, so the late-interaction reranker runs without a model."""

    def embed_tokens(self, texts: list[str]) -> list[tuple[list[str], np.ndarray]]:
        out = []
        for t in texts:
            words = re.findall(r"[a-z0-9]+", t.lower()) or ["empty"]
            out.append((words, self.embed(words)))
        return out


@pytest.fixture(scope="module")
def hashed_bank(tmp_path_factory: pytest.TempPathFactory) -> Retriever:
    """The real bank in a real Chroma index, embedded by the hashing fake: a corpus far larger than the pool."""
    settings = Settings(content_dir=REPO, data_dir=tmp_path_factory.mktemp("hashed"))
    r = Retriever(settings, embedder=TokenHashingEmbedder(), bank=load_bank(REPO), progress=False)
    r.build()
    return r


def test_top_k_is_the_head_of_top_2k_over_candidate_questions(hashed_bank: Retriever) -> None:
    """A longer answer never reorders a shorter one: the candidate pool is fixed, not grown with k."""
    items = [item for half in _candidates().values() for item in half]
    assert len(items) >= 60 and len(hashed_bank._chunks) > 4 * MAX_K
    for i, item in enumerate(items):
        ranked = {k: _app_query(hashed_bank, item, k) for k in (3, 5, 6, 10, 20)}
        for k in (3, 5, 10):
            assert ranked[k] == ranked[2 * k][:k], (item["q"], k)
        if i % 8 == 0:  # the other query shapes on a sample: no filter, a per-file cap, the longest answer
            plain = {k: hashed_bank.retrieve(item["q"], k=k) for k in (5, 10)}
            assert plain[5] == plain[10][:5], item["q"]
            capped = {k: _app_query(hashed_bank, item, k, per_source=2) for k in (5, 10)}
            assert capped[5] == capped[10][:5], item["q"]
            longest = _app_query(hashed_bank, item, MAX_K)
            assert longest[:20] == ranked[20], item["q"]


def test_tokenize_drops_question_words_and_joins_compounds() -> None:
    from interviewer.hybrid import tokenize

    assert tokenize("Why do we cache Keys and Values?") == ["cache", "key", "value"]
    assert "crossentropy" in tokenize("softmax cross-entropy") and "e4m3" in tokenize("FP8 E4M3")
    assert tokenize("C++ kernels") == ["c++", "kernel"]


def test_bm25_finds_a_rare_exact_term_and_respects_the_mask() -> None:
    import numpy as np

    from interviewer.hybrid import LexicalIndex

    texts = ["PagedAttention keeps KV blocks in a table", "Latency of the SQL chatbot", "blocks of memory"]
    lex = LexicalIndex(texts)
    assert lex.top("How does PagedAttention work?", 3) == [0]
    assert lex.top("PagedAttention blocks", 3, np.array([False, True, True])) == [2]
    assert lex.top("nothing matches here", 3) == []


def test_rank_fusion_and_rerank_order() -> None:
    import numpy as np

    from interviewer.hybrid import Reranker, fuse_and_rerank, rrf

    fused = rrf([["a", "b", "c"], ["c", "d"]])
    assert max(fused, key=fused.__getitem__) == "c"  # in both lists beats first in one
    assert set(fused) == {"a", "b", "c", "d"}

    def encode(texts: list[str]) -> list[tuple[list[str], np.ndarray]]:
        vocab = ["kv", "cache", "sql", "latency"]
        out = []
        for t in texts:
            words = [w for w in t.lower().split() if w in vocab] or ["sql"]
            vecs = np.array([[1.0 if w == v else 0.0 for v in vocab] for w in words], dtype=np.float32)
            out.append((words, vecs))
        return out

    texts = {"a": "sql latency", "b": "kv cache", "c": "sql"}
    ranked = fuse_and_rerank(["a", "c"], ["b", "a"], texts, "kv cache", Reranker(encode), k=3)
    assert ranked[0][0] == "b"  # the reranker lifts the passage that matches the query's words
    plain = fuse_and_rerank(["a", "c"], ["b", "a"], texts, "kv cache", None, k=3)
    assert plain[0][0] == "a"


def test_no_cap_returns_the_third_chunk_of_one_document(settings: Settings) -> None:
    """The old 2-per-file cap pushed the right chunk out when one document held the three best ones."""
    r = _retriever(settings)
    top = r.retrieve("SRAM HBM tiled matmul", kind="knowledge", k=3)
    assert [p.source for p in top].count("knowledge/phone-screen/sram-hbm.md") == 3


def test_rerank_reads_a_fixed_pool_so_the_top_is_a_prefix_of_a_longer_answer() -> None:
    """Asking for more passages must not reorder the first ones (a larger reranked pool used to renormalise)."""
    from interviewer.hybrid import Reranker, fuse_and_rerank

    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(12)]
    table = {w: v / np.linalg.norm(v) for w, v in zip(vocab, rng.normal(size=(12, 8)), strict=True)}

    def encode(texts: list[str]) -> list[tuple[list[str], np.ndarray]]:
        return [(t.split(), np.array([table[w] for w in t.split()], dtype=np.float32)) for t in texts]

    ids = [f"c{i}" for i in range(40)]
    texts = {cid: " ".join(rng.choice(vocab, size=5)) for cid in ids}
    dense = list(rng.permutation(ids))
    lexical = list(rng.permutation(ids))[:25]
    reranker = Reranker(encode)

    def top(k: int) -> list[str]:
        return [cid for cid, _ in fuse_and_rerank(dense, lexical, texts, "w1 w2 w3", reranker, k=k, pool=20)]

    five, twenty, forty = top(5), top(20), top(40)
    assert forty[:5] == five and forty[:20] == twenty
    assert len(forty) == 40 and len(set(forty)) == 40
    scores = [s for _, s in fuse_and_rerank(dense, lexical, texts, "w1 w2 w3", reranker, k=40, pool=20)]
    assert scores == sorted(scores, reverse=True) and all(0.0 <= s <= 1.0 for s in scores)


def test_source_penalty_is_soft_diversity_not_a_cap() -> None:
    from interviewer.hybrid import diversify

    def source(cid: str) -> str:
        return cid[0]

    close = [("a1", 0.9), ("a2", 0.85), ("a3", 0.8), ("b1", 0.78)]
    picked = diversify(close, source, 0.1)
    assert [cid for cid, _ in picked] == ["a1", "b1", "a2", "a3"]  # a close second file moves up
    scores = [s for _, s in picked]
    assert scores == sorted(scores, reverse=True) and min(scores) >= 0.0

    clear = [("a1", 0.9), ("a2", 0.88), ("a3", 0.86), ("b1", 0.3)]
    assert [cid for cid, _ in diversify(clear, source, 0.1)] == ["a1", "a2", "a3", "b1"]  # no cap
    assert diversify(close, source, 0.0) == close
