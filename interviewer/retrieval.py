"""Chunk the knowledge documents and rubrics, index them in Chroma, and retrieve passages by round and topic.

Retrieval is hybrid: MiniLM vectors in Chroma and BM25 over the same chunks, fused by reciprocal rank and
reranked by late interaction over MiniLM token vectors (:mod:`interviewer.hybrid`). No per-file cap by default:
the right chunk is often the third of one document. Each retriever contributes a fixed pool of candidates
(``CANDIDATE_POOL``) whatever ``k`` is, and the ranking is cut at ``k`` only at the end, so for ``k <= MAX_K``
the top ``k`` is the head of the top ``2k``: a longer answer never reorders a shorter one.

Plain ``chromadb`` rather than ``langchain-chroma`` for the store: the index needs collection metadata (content
hash, embedder id), batched adds with a progress bar, ``$and``/``$contains`` filters, and a query by a
precomputed vector (so latency can be measured with and without the query embedding). langchain-chroma would
wrap each of these without removing any code. Where LangChain fits, :meth:`Retriever.as_vectorstore` hands the
same collection to ``langchain_chroma.Chroma``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast
from urllib.parse import urlparse

import numpy as np

from interviewer.config import Settings, load_settings
from interviewer.content.loader import Bank, load_bank
from interviewer.content.models import Question, Round
from interviewer.embeddings import ChromaEmbeddingFunction, Embedder, default_embedder
from interviewer.errors import IndexError_
from interviewer.hybrid import LexicalIndex, Reranker, diversify, fuse_and_rerank

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection
    from chromadb.api.types import Embeddable, EmbeddingFunction
    from langchain_chroma import Chroma

Kind = Literal["knowledge", "rubric"]
ProgressArg = bool | Callable[[int, int], None]

COLLECTION = "interviewer-content"
MAX_CHUNK_WORDS = 180  # MiniLM reads 256 word pieces; longer chunks would be cut off silently
_ADD_BATCH = 32
PER_SOURCE: int | None = None  # default cap of passages from one file in a result (None: no cap)
# Candidates taken from each retriever (dense and BM25) before fusion, whatever k is asked for: the ranking is
# computed once over this fixed pool and then cut, so for every k <= MAX_K the top k is the head of any longer
# answer up to MAX_K (a pool that grew with k would change the fused order and the reranked head).
CANDIDATE_POOL = 40
MAX_K = CANDIDATE_POOL  # beyond this the pool grows with k and the prefix property no longer holds
RERANK_POOL = 20  # fused candidates the reranker reads
RERANK_WEIGHT = 0.5  # share of the reranker in the final score (tuned on the bank's own questions)
SOURCE_PENALTY = 0.3  # taken off a reranked score per better passage from the same file (soft, no cap; tuned on bank questions)

REBUILD_HINT = "rebuild it with `interviewer index --force`"


@dataclass(frozen=True)
class Chunk:
    """One indexed passage with its metadata."""

    id: str
    text: str
    kind: Kind
    round: str
    topic: str
    source: str  # path relative to the content root, e.g. knowledge/ml-coding/attention.md
    part: str  # knowledge: the section heading; rubric: question | variant | key_points | model_answer
    question_id: str = ""  # rubric chunks only
    topics: tuple[str, ...] = ()  # every topic the passage serves (a shared document serves several)

    def metadata(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "round": self.round,
            "topic": self.topic,
            "topics": list(self.topics or (self.topic,)),
            "source": self.source,
            "part": self.part,
            "question_id": self.question_id,
        }


@dataclass(frozen=True)
class Passage:
    """A retrieved passage; ``score`` is its relevance in [0, 1] within this result (higher is closer)."""

    text: str
    source: str
    round: str
    topic: str
    kind: str
    score: float
    part: str = ""
    question_id: str | None = None


@dataclass
class IndexReport:
    """What :func:`build_index` did."""

    rebuilt: bool
    chunks: int
    seconds: float
    fingerprint: str  # Bank.fingerprint() of the content the index was checked against
    embedder: str
    location: str


# --------------------------------------------------------------------------------------------- chunking

_FENCE = re.compile(r"^\s*(```|~~~)")


def _blocks(lines: list[str]) -> Iterator[str]:
    """Paragraphs split on blank lines, never inside a fenced code block."""
    buf: list[str] = []
    fenced = False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
        if not fenced and not line.strip():
            if buf:
                yield "\n".join(buf)
                buf = []
            continue
        buf.append(line)
    if buf:
        yield "\n".join(buf)


def _pack(blocks: list[str], max_words: int) -> list[str]:
    """Greedy groups of whole paragraphs of at most ``max_words`` words (a longer paragraph stays whole)."""
    groups: list[str] = []
    cur: list[str] = []
    n = 0
    for b in blocks:
        w = len(b.split())
        if cur and n + w > max_words:
            groups.append("\n\n".join(cur))
            cur, n = [], 0
        cur.append(b)
        n += w
    if cur:
        groups.append("\n\n".join(cur))
    return groups


def split_sections(markdown: str) -> tuple[str, list[tuple[str, list[str]]]]:
    """The ``# `` title and the ``## `` sections (heading, body lines); text before the first ``##`` is
    the section "Overview". Headings inside code fences are ignored."""
    title = ""
    sections: list[tuple[str, list[str]]] = [("Overview", [])]
    fenced = False
    for line in markdown.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        if not fenced and line.startswith("# ") and not title:
            title = line[2:].strip()
            continue
        if not fenced and line.startswith("## "):
            sections.append((line[3:].strip(), []))
            continue
        sections[-1][1].append(line)
    return title, [(h, body) for h, body in sections if any(x.strip() for x in body)]


def chunk_knowledge(
    path: Path, root: Path, *, round_: str, topics: list[str], max_words: int = MAX_CHUNK_WORDS
) -> list[Chunk]:
    """One chunk per ``##`` section (long sections split on paragraphs), each led by the title and heading."""
    rel = path.relative_to(root).as_posix()
    title, sections = split_sections(path.read_text(encoding="utf-8"))
    title = title or path.stem.replace("-", " ")
    topic = topics[0] if topics else path.stem
    chunks: list[Chunk] = []
    for heading, body in sections:
        for piece in _pack(list(_blocks(body)), max_words):
            chunks.append(
                Chunk(
                    id=f"{rel}#{len(chunks)}",
                    text=f"{title}\n## {heading}\n\n{piece}",
                    kind="knowledge",
                    round=round_,
                    topic=topic,
                    source=rel,
                    part=heading,
                    topics=tuple(dict.fromkeys([*topics, path.stem])),
                )
            )
    return chunks


def chunk_question(q: Question, source: str) -> list[Chunk]:
    """Typed chunks for one rubric: the question, each variant, the key points, the model answer."""
    parts: list[tuple[str, str]] = [("question", q.question)]
    parts += [("variant", v) for v in q.variants if v.strip()]
    # Key points and the model answer lead with the question, so they are found by what is being asked.
    parts.append(("key_points", f"{q.question}\nKey points:\n" + "\n".join(f"- {p}" for p in q.key_points)))
    parts.append(("model_answer", f"{q.question}\nModel answer: {q.model_answer}"))
    return [
        Chunk(
            id=f"{source}#{i}",
            text=text,
            kind="rubric",
            round=q.round.value,
            topic=q.topic,
            source=source,
            part=part,
            question_id=q.id,
            topics=(q.topic,),
        )
        for i, (part, text) in enumerate(parts)
    ]


def _rubric_source(bank: Bank, q: Question) -> str:
    folder = bank.root / "rubrics" / q.round.value
    for p in sorted(folder.glob("*.yaml")):
        if p.stem == q.id:
            return p.relative_to(bank.root).as_posix()
    # File names need not equal ids; the id keeps the chunk ids unique either way.
    return f"rubrics/{q.round.value}/{q.id}.yaml"


def content_hash(chunks: list[Chunk]) -> str:
    """A hash of exactly what would be indexed: chunk ids, texts and metadata."""
    h = hashlib.sha256()
    for c in chunks:
        h.update(json.dumps([c.id, c.text, c.metadata()], sort_keys=True).encode())
    return h.hexdigest()[:16]


def chunk_bank(bank: Bank) -> list[Chunk]:
    """Every chunk of the bank: each knowledge document under ``knowledge/`` and each question's rubric."""
    linked: dict[str, list[str]] = {}
    for q in bank.questions.values():
        for link in q.knowledge:
            linked.setdefault(Path(link).as_posix(), []).append(q.topic)
    chunks: list[Chunk] = []
    kroot = bank.root / "knowledge"
    for path in sorted(kroot.rglob("*.md")) if kroot.is_dir() else []:
        rel = path.relative_to(bank.root).as_posix()
        round_ = path.parent.name if path.parent != kroot else ""
        # The most common topic among the questions that link here is the document's own topic.
        topics = [t for t, _ in Counter(linked.get(rel, [])).most_common()]
        chunks.extend(chunk_knowledge(path, bank.root, round_=round_, topics=topics))
    for q in sorted(bank.questions.values(), key=lambda q: q.id):
        chunks.extend(chunk_question(q, _rubric_source(bank, q)))
    return chunks


# --------------------------------------------------------------------------------------------- the store


def make_client(settings: Settings) -> ClientAPI:
    """A Chroma client: ``HttpClient`` when ``chroma_url`` is set, otherwise ``PersistentClient`` at ``chroma_dir``."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    # Telemetry would phone home; the app is offline by design.
    chroma_settings = ChromaSettings(anonymized_telemetry=False)
    if settings.chroma_url:
        u = urlparse(settings.chroma_url)
        https = u.scheme == "https"
        try:
            return chromadb.HttpClient(
                host=u.hostname or "localhost",
                port=u.port or (443 if https else 80),
                ssl=https,
                settings=chroma_settings,
            )
        except Exception as e:  # chromadb raises ValueError or transport errors when nobody answers
            raise IndexError_(
                f"cannot reach the Chroma server at {settings.chroma_url} ({e}): start it, "
                "or unset INTERVIEWER_CHROMA_URL to use the local index"
            ) from e
    path = settings.chroma_dir
    if path.exists() and not path.is_dir():
        raise IndexError_(
            f"the retrieval index path {path} is a file, not a folder: move it away, then {REBUILD_HINT}"
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(path), settings=chroma_settings)
    except Exception as e:  # sqlite and Rust errors both surface here for a damaged store
        raise IndexError_(f"the retrieval index at {path} is missing or corrupt ({e}); {REBUILD_HINT}") from e


def _wipe_local_store(path: Path) -> None:
    """Delete a damaged local Chroma folder, but only one that looks like Chroma's own.

    Only ``--force`` gets here, after the store failed to open or to take the rebuild. Other collections in
    the folder (resume indexes) go too; they live in the same damaged database.
    """
    if not path.is_dir():
        return
    entries = list(path.iterdir())
    ours = all(p.name.startswith("chroma.sqlite3") or p.is_dir() for p in entries)
    if entries and not (ours and (path / "chroma.sqlite3").exists()):
        raise IndexError_(
            f"{path} holds files that are not a Chroma index; move them away, then {REBUILD_HINT}"
        )
    shutil.rmtree(path)
    from chromadb.api.client import SharedSystemClient

    SharedSystemClient.clear_system_cache()  # Chroma caches one system per path; drop the damaged one


def _report_progress(progress: ProgressArg, total: int) -> tuple[Callable[[int], None], Callable[[], None]]:
    """A step callback and a close callback for a rich bar, a user callback, or nothing."""
    if callable(progress):
        done = 0

        def step_cb(n: int) -> None:
            nonlocal done
            done += n
            progress(done, total)

        return step_cb, lambda: None
    if not progress:
        return (lambda n: None), (lambda: None)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("Indexing the question bank"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=True,
    )
    task = bar.add_task("index", total=total)
    bar.start()
    return (lambda n: bar.advance(task, n)), bar.stop


class ChromaBacked:
    """What every Chroma-backed index here shares: settings, embedder and client, each resolved on first use.

    Subclasses set ``_settings``, ``_embedder`` and ``_client`` (None: resolve lazily) in their constructor.
    """

    _settings: Settings | None
    _embedder: Embedder | None
    _client: ClientAPI | None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings()
        return self._settings

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = default_embedder()
        return self._embedder

    def _client_(self) -> ClientAPI:
        if self._client is None:
            self._client = make_client(self.settings)
        return self._client


class Retriever(ChromaBacked):
    """Retrieves passages from the indexed bank; builds or refreshes the index on first use.

    The constructor does no I/O. Safe to share between threads.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        embedder: Embedder | None = None,
        bank: Bank | None = None,
        collection: str = COLLECTION,
        progress: ProgressArg = True,
    ) -> None:
        self._settings = settings
        self._embedder = embedder
        self._bank = bank
        self._name = collection
        self._progress = progress
        self._client: ClientAPI | None = None
        self._collection: Collection | None = None
        self._lock = threading.RLock()
        self._chunks: dict[str, Chunk] = {}
        self._order: list[str] = []
        self._lexical: LexicalIndex | None = None
        self._reranker: Reranker | None = None

    # -- lazily resolved parts

    @property
    def bank(self) -> Bank:
        if self._bank is None:
            self._bank = load_bank(self.settings.content_dir)
        return self._bank

    @property
    def location(self) -> str:
        """Where the index lives: the server URL or the local folder."""
        return self.settings.chroma_url or str(self.settings.chroma_dir)

    def _damaged(self, e: Exception) -> IndexError_:
        return IndexError_(
            f"the retrieval index at {self.location} is missing or corrupt ({e}); {REBUILD_HINT}"
        )

    # -- building

    def build(self, *, force: bool = False, progress: ProgressArg | None = None) -> IndexReport:
        """Bring the index up to date with the content; rebuild when stale or when ``force``."""
        from chromadb.errors import NotFoundError

        with self._lock:
            start = time.perf_counter()
            fingerprint = self.bank.fingerprint()
            chunks = chunk_bank(self.bank)
            self._use_chunks(chunks)
            # The rebuild decision hashes the chunks themselves, not Bank.fingerprint(): that one also covers
            # files that are never indexed (coding tasks, seed_topics.yaml), and each of their edits would
            # cost a full re-embedding (minutes on 2 busy cores). A chunking change also shows up here.
            expected = {"content": content_hash(chunks), "embedder": self.embedder.id}
            # Chroma types its functions over text or images; ours embeds text only, which is all we add.
            ef = cast("EmbeddingFunction[Embeddable]", ChromaEmbeddingFunction(self.embedder))
            local = self.settings.chroma_url is None
            try:
                client = self._client_()
            except IndexError_:
                if not (force and local):
                    raise
                client = self._repair()  # --force repairs a damaged local store
            if not force:
                try:
                    existing = client.get_collection(self._name, embedding_function=ef)
                except NotFoundError:
                    pass
                except Exception as e:
                    raise self._damaged(e) from e
                else:
                    if all((existing.metadata or {}).get(k) == v for k, v in expected.items()):
                        self._collection = existing
                        return self._report(False, existing, start, fingerprint)
            show = progress if progress is not None else self._progress
            try:
                collection = self._rebuild(client, ef, chunks, expected, fingerprint, show)
            except IndexError_:
                if not (force and local):
                    raise
                collection = self._rebuild(self._repair(), ef, chunks, expected, fingerprint, show)
            self._collection = collection
            return self._report(True, collection, start, fingerprint)

    def _use_chunks(self, chunks: list[Chunk]) -> None:
        """The lexical index and the reranker over exactly the chunks Chroma holds."""
        self._chunks = {c.id: c for c in chunks}
        self._order = [c.id for c in chunks]
        self._lexical = LexicalIndex([c.text for c in chunks])
        encode = getattr(self.embedder, "embed_tokens", None)
        self._reranker = Reranker(encode) if callable(encode) and RERANK_WEIGHT > 0 else None

    def _repair(self) -> ClientAPI:
        self._client = None
        self._collection = None
        _wipe_local_store(self.settings.chroma_dir)
        return self._client_()

    def _report(self, rebuilt: bool, collection: Collection, start: float, fingerprint: str) -> IndexReport:
        return IndexReport(
            rebuilt=rebuilt,
            chunks=collection.count(),
            seconds=time.perf_counter() - start,
            fingerprint=fingerprint,
            embedder=self.embedder.id,
            location=self.location,
        )

    def _rebuild(
        self,
        client: ClientAPI,
        ef: EmbeddingFunction[Embeddable],
        chunks: list[Chunk],
        expected: dict[str, str],
        fingerprint: str,
        progress: ProgressArg,
    ) -> Collection:
        from chromadb.errors import NotFoundError

        # Embed everything before touching the store: if the model fails, the previous index stays usable.
        # Batches of similar length waste less work on padding than batches in file order.
        order = sorted(range(len(chunks)), key=lambda i: len(chunks[i].text))
        vectors = np.zeros((len(chunks), self.embedder.dim), dtype=np.float32)
        step, close = _report_progress(progress, len(chunks))
        try:
            for i in range(0, len(order), _ADD_BATCH):
                idx = order[i : i + _ADD_BATCH]
                vectors[idx] = self.embedder.embed([chunks[j].text for j in idx])
                step(len(idx))
        finally:
            close()
        try:
            with contextlib.suppress(NotFoundError):
                client.delete_collection(self._name)
            # The content hash is written only after every chunk is in, so an interrupted write reads as stale.
            collection = client.create_collection(
                self._name,
                embedding_function=ef,
                configuration={"hnsw": {"space": "cosine"}},
                metadata={"embedder": self.embedder.id, "content": "building"},
            )
            for i in range(0, len(chunks), _ADD_BATCH * 8):
                batch = chunks[i : i + _ADD_BATCH * 8]
                collection.add(
                    ids=[c.id for c in batch],
                    documents=[c.text for c in batch],
                    embeddings=vectors[i : i + len(batch)],
                    metadatas=[c.metadata() for c in batch],
                )
            collection.modify(metadata={**expected, "fingerprint": fingerprint})
        except Exception as e:
            raise IndexError_(
                f"could not build the retrieval index at {self.location} ({e}); {REBUILD_HINT}"
            ) from e
        return collection

    def _ready(self) -> Collection:
        with self._lock:
            if self._collection is None:
                self.build()
            assert self._collection is not None
            return self._collection

    # -- querying

    def retrieve(
        self,
        query: str,
        *,
        round: Round | str | None = None,
        topic: str | None = None,
        k: int = 4,
        kind: Kind | None = None,
        per_source: int | None = PER_SOURCE,
    ) -> list[Passage]:
        """The ``k`` passages closest to ``query``, optionally only from one round, topic or kind.

        At most ``per_source`` passages come from one file while others qualify (``None``: no cap), so a
        rubric's near-identical variants or one long document do not fill every slot. Best first. A blank
        query returns no passages. The index builds on the first call if it is missing or stale.

        The ranking is computed over a fixed candidate pool and then cut, so for ``k <= MAX_K`` the answer
        is the first ``k`` passages of the answer for any larger ``k`` up to ``MAX_K``.
        """
        if not query.strip():
            return []
        collection = self._ready()  # build first: the progress bar should not wait behind a model load
        vector = self.embedder.embed([query])[0]
        return self._search(
            collection, vector, round=round, topic=topic, k=k, kind=kind, per_source=per_source, query=query
        )

    def search(
        self,
        vector: np.ndarray,
        *,
        round: Round | str | None = None,
        topic: str | None = None,
        k: int = 4,
        kind: Kind | None = None,
        per_source: int | None = PER_SOURCE,
        query: str | None = None,
    ) -> list[Passage]:
        """Like :meth:`retrieve` for an already embedded query (one row from ``embedder.embed``).

        Without ``query`` (the text) only the dense half runs: no BM25 and no reranking.
        """
        return self._search(
            self._ready(),
            vector,
            round=round,
            topic=topic,
            k=k,
            kind=kind,
            per_source=per_source,
            query=query,
        )

    def _search(
        self,
        collection: Collection,
        vector: np.ndarray,
        *,
        round: Round | str | None,
        topic: str | None,
        k: int,
        kind: Kind | None,
        per_source: int | None,
        query: str | None = None,
    ) -> list[Passage]:
        if k <= 0:
            return []
        where = where_filter(round=round, topic=topic, kind=kind)
        hybrid = bool(query and query.strip()) and self._lexical is not None
        # A fixed pool, not one that grows with k: the same candidates are fused and reranked for every k, so a
        # short answer is the head of a long one (and the approximate index search sees the same n each time).
        n = max(CANDIDATE_POOL, k)
        try:
            res = collection.query(
                query_embeddings=np.asarray(vector, dtype=np.float32).reshape(1, -1),
                n_results=n,
                where=where,
                include=["documents", "metadatas", "distances"],
            )
        except Exception as e:
            raise self._damaged(e) from e
        ids = (res.get("ids") or [[]])[0]
        docs = (res.get("documents") or [[]])[0]
        metas = (res.get("metadatas") or [[]])[0]
        dists = (res.get("distances") or [[]])[0]
        out: list[Passage] = []
        for text, meta, dist in zip(docs, metas, dists, strict=True):
            m = dict(meta or {})
            out.append(
                Passage(
                    text=text or "",
                    source=str(m.get("source", "")),
                    round=str(m.get("round", "")),
                    topic=str(m.get("topic", "")),
                    kind=str(m.get("kind", "")),
                    score=1.0 - float(dist),
                    part=str(m.get("part", "")),
                    question_id=str(m.get("question_id") or "") or None,
                )
            )
        if hybrid:
            assert query is not None
            known = [cid for cid in ids if cid in self._chunks]
            out = self._hybrid(known, query, round=round, topic=topic, kind=kind, k=k)
        return _cap_per_source(out, k, per_source)

    def _hybrid(
        self,
        dense_ids: list[str],
        query: str,
        *,
        round: Round | str | None,
        topic: str | None,
        kind: Kind | None,
        k: int,
    ) -> list[Passage]:
        """Every fused candidate, best first: dense hits and BM25 hits under the same filter, reranked."""
        assert self._lexical is not None
        r = Round(round).value if round is not None else None
        allowed = np.array(
            [
                (r is None or c.round == r)
                and (kind is None or c.kind == kind)
                and (topic is None or topic in (c.topics or (c.topic,)))
                for c in (self._chunks[i] for i in self._order)
            ],
            dtype=bool,
        )
        lexical = [self._order[i] for i in self._lexical.top(query, max(CANDIDATE_POOL, k), allowed)]
        texts = {cid: self._chunks[cid].text for cid in {*dense_ids, *lexical}}
        # Rank every fused candidate, then cut: the scores of the tail depend on its length, which must not
        # depend on k either.
        ranked = fuse_and_rerank(
            dense_ids,
            lexical,
            texts,
            query,
            self._reranker,
            k=len(texts),
            pool=RERANK_POOL,
            rerank_weight=RERANK_WEIGHT,
        )
        if SOURCE_PENALTY > 0 and self._reranker is not None and RERANK_WEIGHT > 0:
            # Only reranked scores are on the [0, 1] scale the penalty is meant for; fused RRF scores are ~0.03.
            head = diversify(ranked[:RERANK_POOL], lambda cid: self._chunks[cid].source, SOURCE_PENALTY)
            floor = head[-1][1] if head else 0.0
            rest = ranked[RERANK_POOL:]
            ranked = head + [
                (cid, floor * (1 - (i + 1) / (len(rest) + 1))) for i, (cid, _) in enumerate(rest)
            ]
        return [self._passage(cid, score) for cid, score in ranked]

    def _passage(self, cid: str, score: float) -> Passage:
        c = self._chunks[cid]
        return Passage(
            text=c.text,
            source=c.source,
            round=c.round,
            topic=c.topic,
            kind=c.kind,
            score=score,
            part=c.part,
            question_id=c.question_id or None,
        )

    def as_vectorstore(self) -> Chroma:
        """The same collection as a ``langchain_chroma.Chroma`` vector store (built first if needed)."""
        from langchain_chroma import Chroma

        from interviewer.embeddings import LangChainEmbeddings

        self._ready()
        return Chroma(
            client=self._client_(),
            collection_name=self._name,
            embedding_function=LangChainEmbeddings(self.embedder),
        )


def _cap_per_source(ranked: list[Passage], k: int, per_source: int | None) -> list[Passage]:
    """The best ``k`` with at most ``per_source`` from one file; skipped ones fill any slots left over.

    The passages within the cap come first, best first, then the skipped ones, best first: one fixed order
    cut at ``k``, so a capped answer is also the head of a longer capped answer.
    """
    if per_source is None:
        return ranked[:k]
    taken: list[Passage] = []
    skipped: list[Passage] = []
    seen: Counter[str] = Counter()
    for p in ranked:
        if seen[p.source] < per_source:
            seen[p.source] += 1
            taken.append(p)
        else:
            skipped.append(p)
    return (taken + skipped)[:k]


def where_filter(
    *, round: Round | str | None = None, topic: str | None = None, kind: Kind | None = None
) -> dict[str, Any] | None:
    """The Chroma ``where`` clause for the given filters (``None`` when there are none)."""
    clauses: list[dict[str, Any]] = []
    if round is not None:
        clauses.append({"round": Round(round).value})
    if topic is not None:
        clauses.append({"topics": {"$contains": topic}})
    if kind is not None:
        if kind not in ("knowledge", "rubric"):
            raise ValueError(f"kind must be 'knowledge' or 'rubric', got {kind!r}")
        clauses.append({"kind": kind})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def build_index(
    *,
    force: bool = False,
    progress: ProgressArg = True,
    settings: Settings | None = None,
    embedder: Embedder | None = None,
) -> IndexReport:
    """Build the index if it is missing or stale (always with ``force``); for ``interviewer index``."""
    return Retriever(settings, embedder=embedder).build(force=force, progress=progress)
