"""Wires Settings into the engine's ports: the bank, the store, the model, retrieval and scoring.

Shared by the CLI and the UI. Nothing here does I/O until it is asked for; heavy parts (the embedded model,
the embedding model, the Chroma index) start on first use and are reused.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from interviewer.config import Settings
from interviewer.content import Bank, load_bank
from interviewer.errors import InterviewerError, ModelError
from interviewer.listen import Listener
from interviewer.llm.background import BackgroundPort
from interviewer.llm.client import ChatPort, build_port, list_models, reading_port
from interviewer.session import PassageLike, Ports, Retriever
from interviewer.store import SessionStore

if TYPE_CHECKING:
    from interviewer.llm.embedded import EmbeddedServer
    from interviewer.scoring.background import BackgroundJudge
    from interviewer.scoring.probe_reader import ProbeReader
    from interviewer.scoring.scorer import RubricScorer
    from interviewer.scoring.stages import ReaderTrust

log = logging.getLogger(__name__)

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ModelChoice:
    """Which server and model answer; ``embedded`` when the app runs its own."""

    base_url: str
    model: str
    display_name: str
    embedded: bool


class _WhenBuilt:
    """Retrieves through the runtime's retriever once its index is built; nothing before (or if it failed)."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    def retrieve(self, query: str, **kw: Any) -> Sequence[PassageLike]:
        built = self._runtime.retriever(wait=False)
        return [] if built is None else built.retrieve(query, **kw)


class Runtime:
    """Lazily built, shared services for one app process."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.RLock()
        self._bank: Bank | None = None
        self._store: SessionStore | None = None
        self._port: ChatPort | None = None
        self._choice: ModelChoice | None = None
        self._embedded: EmbeddedServer | None = None  # imported lazily
        self._retriever: Retriever | None = None
        self._retriever_lock = threading.Lock()
        self._retriever_failed: str | None = None
        self._scorer: RubricScorer | None = None
        self._judge: BackgroundJudge | None = None  # the truth judge over the current model
        self._judge_port: ChatPort | None = None
        self._reading_cancel = threading.Event()  # set on close: a reading in progress stops
        self._background: BackgroundPort | None = None  # where background work sends its requests
        self._background_lock = threading.Lock()
        self._listener: Listener | None = None
        self._scorer_lock = threading.Lock()
        self._scorer_failed: str | None = None
        self._model_failed: str | None = None  # the last model fault; cleared when a model answers

    # content and store ---------------------------------------------------------------------------
    # Built once, then read without the lock: model() holds it for minutes while the embedded model starts.
    @property
    def bank(self) -> Bank:
        if self._bank is not None:
            return self._bank
        with self._lock:
            if self._bank is None:
                self._bank = load_bank(self.settings.content_dir)
            return self._bank

    @property
    def store(self) -> SessionStore:
        if self._store is not None:
            return self._store
        with self._lock:
            if self._store is None:
                store = SessionStore(self.settings.store_location)
                store.check()
                self._store = store
            return self._store

    # the model -----------------------------------------------------------------------------------
    @property
    def model_choice(self) -> ModelChoice | None:
        return self._choice

    def model(self, progress: Progress | None = None) -> ChatPort:
        """The chat model: the configured server, or the embedded one started on first use."""
        with self._lock:
            if self._port is None:
                if self.settings.base_url:
                    self._port, self._choice = self._connect(
                        self.settings.base_url, self.settings.api_key, self.settings.model
                    )
                else:
                    self._port, self._choice = self._start_embedded(progress)
            return self._port

    def _connect(self, base_url: str, api_key: str | None, model: str | None) -> tuple[ChatPort, ModelChoice]:
        settings = self.settings.model_copy(update={"base_url": base_url, "api_key": api_key})
        if not model:
            models = list_models(base_url, api_key, timeout=settings.connect_timeout + 5)
            if not models:
                raise ModelError(f"{base_url} lists no models; load one there or set INTERVIEWER_MODEL")
            model = models[0]
        name = f"{model} @ {base_url}"
        return build_port(settings, base_url=base_url, model=model, display_name=name), ModelChoice(
            base_url, model, name, embedded=False
        )

    def _start_embedded(self, progress: Progress | None) -> tuple[ChatPort, ModelChoice]:
        from interviewer.llm.embedded import EmbeddedServer

        server = self._embedded
        if server is None:
            server = self._embedded = EmbeddedServer(self.settings)
        base_url = server.start(progress=progress)
        port = build_port(
            self.settings,
            base_url=base_url,
            model=server.served_model_id,
            display_name=server.model_name,
            keepalive=False,
        )
        port.slots = server.slots  # pin each session to a slot: its prefilled prompt stays cached
        return port, ModelChoice(base_url, server.served_model_id, server.model_name, embedded=True)

    def set_model(self, port: ChatPort, choice: ModelChoice) -> None:
        """Use an already built model (tests, benchmarks, an in-process stand-in)."""
        with self._lock:
            self._port, self._choice = port, choice

    def switch_model(self, base_url: str | None, api_key: str | None, model: str | None) -> ModelChoice:
        """Point the app at another server at runtime (the settings panel); None goes back to embedded."""
        with self._lock:
            if base_url:
                port, choice = self._connect(base_url.rstrip("/"), api_key or None, model or None)
            else:
                port, choice = self._start_embedded(None)
            self._port, self._choice = port, choice
            self._model_failed = None
            return choice

    # retrieval and scoring -----------------------------------------------------------------------
    def retriever(self, progress: Progress | None = None, *, wait: bool = True) -> Retriever | None:
        """The Chroma retriever, building the index on first use; None (with a notice) if it cannot run.

        With ``wait=False`` it returns None at once while another thread is still building the index.
        """
        if not self.settings.retrieval:  # switched off by the user: not a degradation to warn about
            return None
        # Its own lock: a first-start index build takes minutes and must not hold up the bank, store or model.
        if not self._retriever_lock.acquire(blocking=wait):
            return self._retriever  # None while another thread builds it; built, it is only being read
        try:
            if self._retriever is None and self._retriever_failed is None:
                try:
                    from interviewer.retrieval import Retriever as ChromaRetriever

                    def bar(done: int, total: int) -> None:
                        if progress and (done == total or done % 50 == 0):
                            progress(f"indexing the question bank: {done}/{total}")

                    retriever = ChromaRetriever(self.settings, bank=self.bank, progress=bar)
                    retriever.build(progress=bar)  # now, not in the middle of a candidate's first follow-up
                    self._retriever = retriever
                except (InterviewerError, ImportError) as e:
                    self._retriever_failed = str(e)
                    log.warning("retrieval unavailable: %s", e)
            return self._retriever
        finally:
            self._retriever_lock.release()

    def _interview_retriever(self) -> Retriever | None:
        """The retriever an interview holds: the built one, or, while another thread still builds the index, one
        that finds nothing until the build is done. An interview never waits for the build, and its questions
        asked after it get their knowledge."""
        built = self.retriever(wait=False)
        if built is not None or not self.settings.retrieval or self._retriever_failed is not None:
            return built
        return _WhenBuilt(self)

    def scorer(self) -> RubricScorer | None:
        with self._scorer_lock:  # not self._lock: reports must not wait for the model to start
            if self._scorer is None:
                try:
                    from interviewer.scoring.scorer import RubricScorer

                    # Live scoring uses the offline methods only (deterministic checks + calibrated key-point
                    # coverage): fast enough not to hold up the next question on a 2-core laptop. The bank's
                    # questions let it tell an answer to a different question from a weak one.
                    self._scorer = RubricScorer(
                        neighbours=list(self.bank.questions.values()), judge_weight=self.settings.judge_weight
                    )
                except (InterviewerError, ImportError) as e:
                    self._scorer_failed = str(e)
                    log.warning("scoring unavailable: %s", e)
            return self._scorer

    def listener(self) -> Listener | None:
        """One answer reader for every interview (it caches per-question vocabularies); None when switched off."""
        if not self.settings.listen:
            return None
        if self._listener is None:
            scorer = self.scorer()
            if scorer is not None:  # the sentence model loads now, not on the first candidate's answer
                threading.Thread(
                    target=warm_quietly, args=(scorer.warm,), name="scorer-warm", daemon=True
                ).start()
            # The listener redirects exactly what the report will call off-topic: it asks the scorer's own rule.
            topic = scorer.off_topic if scorer is not None else None
            claims = scorer.wrong_claims if scorer is not None else None
            self._listener = Listener(
                neighbours=list(self.bank.questions.values()), topic=topic, claims=claims
            )
        return self._listener

    def model_or_none(self, progress: Progress | None = None) -> ChatPort | None:
        """The model, or None with a notice when no server answers (follow-ups then use authored wording)."""
        try:
            port = self.model(progress)
        except InterviewerError as e:  # a model fault, or a bad model configuration
            self._model_failed = str(e)
            return None
        self._model_failed = None
        return port

    @property
    def notices(self) -> list[str]:
        """What is degraded right now, for every candidate of this process (a state, not a one-off message)."""
        out = []
        if self._model_failed:
            out.append(f"{self._model_failed}. Follow-ups use the authored wording until a model answers.")
        if self._retriever_failed:
            out.append(f"Retrieval is off: {self._retriever_failed}")
        if self._scorer_failed:
            out.append(f"Scoring is off: {self._scorer_failed}")
        return out

    def judge(self, port: ChatPort | None) -> BackgroundJudge | None:
        """The background truth judge over ``port`` (None when INTERVIEWER_JUDGE=0 or there is no model)."""
        if not self.settings.judge or port is None:
            return None
        from interviewer.scoring.background import BackgroundJudge

        with self._scorer_lock:
            if self._judge is None or self._judge_port is not port:  # a new model: a new runner
                if self._judge is not None:
                    self._judge.close(cancel=True)  # what it had not finished is judged again on resume
                self._judge, self._judge_port = BackgroundJudge(self.background(port)), port
            return self._judge

    def reader(self, port: ChatPort | None) -> ProbeReader | None:
        """The probe reader over ``port`` at the model's measured trust, for the judge's background rescoring
        (None without a judge or a model)."""
        if not self.settings.judge or port is None:
            return None
        from interviewer.scoring.probe_reader import ProbeReader

        return ProbeReader.for_model(
            self.background(port), self.settings.data_dir, self._model_id(port), cancel=self._reading_cancel
        )

    def reading_trust(self, port: ChatPort | None) -> ReaderTrust | None:
        """The model's measured reading trust (``interviewer calibrate --reader``); None without a model or a
        measurement."""
        if port is None:
            return None
        from interviewer.scoring.reader_trust import load_trust

        return load_trust(self.settings.data_dir, self._model_id(port))

    def _model_id(self, port: ChatPort) -> str:
        choice = self._choice
        return choice.model if choice else port.name

    def background(self, port: ChatPort) -> BackgroundPort:
        """The port background work (the reader, the truth judge) uses beside the live ``port``.

        Beside the embedded model: a second embedded server on the same weights at the OS's idle priority,
        started on the first background request and paused while the live server serves a candidate, so no
        reply waits for a reading. Beside any other server, or with ``Settings.background_server`` off: the
        live server's background slot, stepping aside while a live reply streams.
        """
        with self._background_lock:  # not self._lock: the live model's start holds that one for minutes
            current = self._background
            if current is not None and current.live is port:
                return current
            if current is not None:
                current.close()
            choice = self._choice
            own_server = self.settings.background_server and choice is not None and choice.embedded
            if own_server and port is self._port:
                from interviewer.llm.embedded import EmbeddedServer

                # One slot: background requests run one at a time. A small host-RAM prompt cache: each reading
                # of an answer (also of the answer grown since the last one) starts from the prompt the slot holds.
                server = EmbeddedServer(self.settings, n_parallel=1, idle=True, cache_ram_mib=256)
                self._background = BackgroundPort(port, server, self._connect_background)
            else:
                # The reader gets no piece_words here: beside a live reply on the same server, prompts read ahead in
                # pieces made the reply wait longer than one plain request, which the server's batching interleaves.
                self._background = BackgroundPort(port)
            return self._background

    def _connect_background(self, server: EmbeddedServer, base_url: str) -> ChatPort:
        # The server is paused while candidates' replies stream, with the request in flight: its clock must
        # allow for that wait, which one reply's timeout does not bound.
        settings = self.settings.model_copy(update={"timeout": max(self.settings.timeout, 900.0)})
        return reading_port(
            settings,
            base_url=base_url,
            model=server.served_model_id,
            display_name=f"{server.model_name}, background",
            slots=server.slots,
        )

    def wait_for_judge(
        self,
        session_id: str,
        timeout: float | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> bool:
        """Before a report: wait for the session's judgements still running in this process."""
        judge = self._judge
        if judge is None:
            return True
        keys = [k for k in judge.pending() if k.startswith(f"{session_id}/")]
        return judge.wait(keys, timeout=timeout, progress=progress)

    def ports(self, owner: str, *, with_model: bool = True) -> Ports:
        """Ports for one candidate's interview. Model faults do not stop it: follow-ups fall back."""
        model = self.model_or_none() if with_model else None
        return Ports(
            bank=self.bank,
            store=self.store,
            model=model,
            retriever=self._interview_retriever(),
            scorer=self.scorer(),
            judge=self.judge(model),
            reader=self.reader(model),
            listener=self.listener(),  # reads each answer offline before the follow-up (no model call)
            # the probes read while the candidate answers, on the background server or slot
            reading_port=self.background(model) if model is not None and self.settings.listen else None,
            reading_trust=self.reading_trust(model) if self.settings.listen else None,
            answer_seconds=self.settings.answer_seconds,
            max_answer_chars=self.settings.max_answer_chars,
            owner=owner,
        )

    def close(self) -> None:
        self._reading_cancel.set()  # a reading in progress stops; its rescoring is redone on resume
        if self._judge is not None:
            self._judge.close(cancel=True)  # unfinished judgements are redone when the session resumes
            self._judge = None
        with self._background_lock:
            if self._background is not None:
                self._background.close()
                self._background = None
        with self._lock:
            if self._embedded is not None:
                self._embedded.stop()
                self._embedded = None
            self._port = None
            if self._store is not None:
                self._store.close()


def warm_quietly(fn: Callable[[], object]) -> None:
    """Run a warm-up (on a background thread); a failure only means the first real call pays for it (and
    reports it)."""
    try:
        fn()
    except Exception as e:
        log.warning("warm-up failed: %s", e)
