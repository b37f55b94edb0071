"""The one model seam: the only module that imports the OpenAI client or LangChain's ChatOpenAI.

Everything else receives a :class:`ChatPort` (a LangChain chat model plus a name) and never sees the client.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_openai import ChatOpenAI

from interviewer.config import Settings
from interviewer.errors import ModelClientBroken, ModelError, ModelTimeout, ModelUnavailable
from interviewer.llm.prefill import Prefiller
from interviewer.llm.speculate import Signature, Speculation, SpeculationStats, signature

log = logging.getLogger(__name__)

# A placeholder key: local servers ignore it, and the OpenAI client refuses to start without one.
_NO_KEY = "not-needed"


def http_library() -> ModuleType:
    """The HTTP library the installed OpenAI client is built on: ``httpx`` (openai 2.x) or ``httpx2`` (3.x).

    Both have the same API; timeouts and clients handed to the client must come from its own library, so the
    seam builds them here and no HTTP type crosses it.
    """
    base = next(c for c in openai.DefaultHttpxClient.__mro__ if c.__name__ == "Client")
    return importlib.import_module(base.__module__.split(".")[0])


def _installed_http_libraries() -> tuple[ModuleType, ...]:
    found = []
    for name in ("httpx", "httpx2"):
        try:
            found.append(importlib.import_module(name))
        except ImportError:
            continue
    return tuple(found)


def _errors(*names: str) -> tuple[type[BaseException], ...]:
    """The exception classes called ``names`` in every installed HTTP library (either may raise)."""
    return tuple(getattr(lib, n) for lib in _installed_http_libraries() for n in names if hasattr(lib, n))


_TIMEOUTS = _errors("TimeoutException")
_NO_CONNECTION = _errors("ConnectError")
# The stream broke after the server had answered: a dropped connection, a truncated or garbled response.
_DROPPED = _errors("RemoteProtocolError", "ReadError", "WriteError", "CloseError", "NetworkError")


def _causes(err: BaseException) -> Iterator[BaseException]:
    """``err`` and the chain of exceptions it was raised from (the client wraps the HTTP library's)."""
    seen: set[int] = set()
    e: BaseException | None = err
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        e = e.__cause__ or e.__context__


def _translate(err: Exception, base_url: str) -> ModelError:
    """Turn a client exception (from openai or the HTTP library under it) into an error that says what to do."""
    if isinstance(err, ModelError):
        return err
    chain = list(_causes(err))
    broken = [e for e in chain if isinstance(e, TypeError | ImportError | AttributeError)]
    if broken:
        # Not the server: the client could not even send the request (a library mismatch, a bad setting);
        # openai 2.x wraps such an error in APIConnectionError, so the whole chain is searched first.
        return ModelClientBroken(
            f"the model client could not send a request to {base_url} ({type(broken[0]).__name__}: "
            f"{broken[0]}). "
            "This is an installation problem, not the server: run `interviewer doctor` for the fix"
        )
    if any(isinstance(e, (openai.APITimeoutError, *_TIMEOUTS)) for e in chain):
        return ModelTimeout(
            f"the model at {base_url} did not answer in time; it may be overloaded. "
            "Try again, raise INTERVIEWER_TIMEOUT, or pick a smaller model"
        )
    if any(isinstance(e, _DROPPED) for e in chain) and not any(isinstance(e, _NO_CONNECTION) for e in chain):
        return ModelUnavailable(
            f"the model server at {base_url} dropped the connection mid-reply (it may have crashed or "
            "restarted); try again, and check the server's log if it keeps happening"
        )
    if any(isinstance(e, (openai.APIConnectionError, *_NO_CONNECTION)) for e in chain):
        return ModelUnavailable(
            f"no model server answers at {base_url}: start one there, fix INTERVIEWER_BASE_URL, "
            "or unset it to use the embedded model"
        )
    if isinstance(err, openai.AuthenticationError):
        return ModelError(f"the model server at {base_url} refused the API key; set INTERVIEWER_API_KEY")
    if isinstance(err, openai.NotFoundError):
        return ModelError(
            f"the model server at {base_url} does not know that model or path; "
            "check INTERVIEWER_MODEL against its /v1/models and that the URL ends in /v1"
        )
    if isinstance(err, openai.APIStatusError):
        return ModelError(
            f"the model server at {base_url} answered with HTTP {err.status_code}: {err.message}"
        )
    if any(isinstance(e, UnicodeDecodeError | json.JSONDecodeError) for e in chain):
        return ModelError(
            f"the model server at {base_url} sent a reply that is not valid OpenAI-style JSON ({err}); "
            "check that it is an OpenAI-compatible server and that the URL ends in /v1"
        )
    return ModelError(f"the model at {base_url} failed: {type(err).__name__}: {err}")


def model_error(err: Exception, base_url: str) -> ModelError:
    """The project's error for a client exception: for callers that send requests on a port's chat model."""
    return _translate(err, base_url)


# The session key of requests no candidate waits on (the truth judge, the deep dive's rephrasing): on a server
# with slots they share one slot of their own, one more "session" in the slot LRU, so they never overwrite a
# candidate's cached prompt.
BACKGROUND_KEY = "background"
_ANSWERED_KEYS = 1024  # sessions whose last real prompt is remembered (a late speculation of it is skipped)
_KEPT_SPECULATIONS = (
    256  # complete guesses waiting for their turn to end (an abandoned one is dropped in time)
)


@dataclass
class ChatPort:
    """A chat model with a display name; ``stream`` yields text and raises only :class:`ModelError`."""

    model: BaseChatModel
    name: str
    base_url: str = "(in-process)"
    warm_cache: bool = (
        True  # send prompt prefixes ahead (worth it on local servers; costs money on paid APIs)
    )
    # llama.cpp-style servers with this many slots (the embedded one): each session's requests are pinned to
    # one slot (``id_slot``), so what prefill cached for a candidate is still there when they press Send, even
    # with other candidates typing at the same time. 0: the server picks a slot (vLLM, NIM, OpenAI).
    slots: int = 0
    # Follow-ups generated ahead at a spoken answer's pause, across all sessions at once: each one is a
    # generation the server runs while nobody waits on it yet.
    max_speculations: int = 1

    def __post_init__(self) -> None:
        self._streams = 0  # replies streaming now: prefill waits for none
        self._live = 0  # requests on a candidate's path in flight: replies, prefills, replies generated ahead
        self._streams_lock = threading.Lock()
        self._quiet = threading.Condition(self._streams_lock)  # notified when the last reply ends
        self._live_hooks: list[Callable[[bool], None]] = []  # told when live requests start and stop
        self._prefiller: Prefiller | None = None
        self._slot_of: OrderedDict[str, int] = OrderedDict()  # session key -> slot, least recent first
        self._spec_lock = threading.Lock()
        self._speculations: dict[str, Speculation] = {}  # session key -> the reply generated ahead
        self._answered: OrderedDict[str, Signature] = OrderedDict()  # session key -> its last real prompt
        self.speculation_stats = SpeculationStats()

    def slot(self, key: str | None) -> int | None:
        """The server slot for session ``key``: stable while the session is among the ``slots`` most recent.

        A new session takes a free slot, else the one of the session heard from longest ago, so up to
        ``slots`` candidates answering at once never share (and overwrite) a slot's cached prompt.
        """
        if not self.slots or key is None:
            return None
        with self._streams_lock:
            if key in self._slot_of:
                self._slot_of.move_to_end(key)
                return self._slot_of[key]
            used = set(self._slot_of.values())
            free = [i for i in range(self.slots) if i not in used]
            if free:
                slot = free[0]
            else:
                _, slot = self._slot_of.popitem(last=False)
            self._slot_of[key] = slot
            return slot

    def _bound(self, key: str | None, **kwargs: Any) -> Any:
        slot = self.slot(key)
        if slot is not None:
            kwargs["extra_body"] = {"id_slot": slot}
        return self.model.bind(**kwargs) if kwargs else self.model

    def _chunks(self, messages: Sequence[BaseMessage], key: str | None) -> Generator[str, None, None]:
        """The reply's text chunks from the server; closing this closes the HTTP stream."""
        chunks = self._bound(key).stream(list(messages))
        try:
            for chunk in chunks:
                text = chunk.content if isinstance(chunk.content, str) else ""
                if text:
                    yield text
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()

    def _chunks_ahead(self, messages: Sequence[BaseMessage], key: str | None) -> Generator[str, None, None]:
        """:meth:`_chunks` for a reply generated ahead: a live request from when it is sent until it is closed."""
        with self._live_request(), contextlib.closing(self._chunks(messages, key)) as chunks:
            yield from chunks

    def stream(self, messages: Sequence[BaseMessage], key: str | None = None) -> Iterator[str]:
        """The reply's text as it comes; ``key`` (a session id) pins the request to that session's slot.

        When a speculation for ``key`` generates this very prompt (:meth:`speculate`), its reply is handed out
        instead of sending the prompt again: the chunks it holds at once, then the rest as they arrive.
        """
        with self._streams_lock:
            self._streams += 1  # first: a speculation asked for from now on waits for this reply to end
            self._live_started()
        try:
            spec = self._claim(messages, key)
            if spec is not None:
                given = False
                try:
                    for text in spec.follow():
                        given = True
                        yield text
                finally:
                    spec.cancel()  # ended, or the reader stopped early: the server stops generating
                if spec.error is None:
                    return
                if given:
                    raise spec.error
                with self._spec_lock:
                    self.speculation_stats.failed += 1  # it never started: ask afresh
            with contextlib.closing(self._chunks(messages, key)) as chunks:
                yield from chunks
        except Exception as e:  # the client's whole error zoo becomes one clear ModelError
            raise _translate(e, self.base_url) from e
        finally:
            with self._streams_lock:
                self._streams -= 1
                self._live_ended()
                if self._streams == 0:
                    self._quiet.notify_all()

    def on_live(self, hook: Callable[[bool], None]) -> Callable[[], None]:
        """Call ``hook(True)`` as the first live request starts and ``hook(False)`` as the last one ends.

        Live requests are those on a candidate's path: streamed replies, and the prefills and replies generated
        ahead (:meth:`prefill`, :meth:`speculate`) that make the next reply faster; each counts for its own
        duration only, so work paused by a hook runs again between a typing candidate's prefills.
        Hooks run with the port's stream lock held, at once (background work pauses before the live request is
        even sent): they must be quick and must not call back into the port. Returns the unsubscribe call.
        """
        with self._streams_lock:
            self._live_hooks.append(hook)
            if self._live > 0:
                hook(True)

        def remove() -> None:
            with self._streams_lock:
                if hook in self._live_hooks:
                    self._live_hooks.remove(hook)

        return remove

    def _live_started(self) -> None:  # with the stream lock held
        self._live += 1
        if self._live == 1:
            self._tell_live(True)

    def _live_ended(self) -> None:  # with the stream lock held
        self._live -= 1
        if self._live == 0:
            self._tell_live(False)

    @contextlib.contextmanager
    def _live_request(self) -> Iterator[None]:
        with self._streams_lock:
            self._live_started()
        try:
            yield
        finally:
            with self._streams_lock:
                self._live_ended()

    def _tell_live(self, live: bool) -> None:
        for hook in list(self._live_hooks):
            try:
                hook(live)
            except Exception as e:  # background work's business: never the candidate's reply
                log.warning("live-request hook failed: %s", e)

    @property
    def live_streams(self) -> int:
        """Replies a candidate is waiting on that stream now (background work steps aside while > 0)."""
        return self._streams

    def wait_until_quiet(self, timeout: float | None = None, cancel: threading.Event | None = None) -> bool:
        """Block while a reply streams on this port; True once none does (False on timeout or ``cancel``).

        Background work (the reader's probes) calls this before each request and stops a request it has
        started as soon as :attr:`live_streams` rises, so a candidate's reply never queues behind it.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._quiet:
            while self._streams > 0:
                if cancel is not None and cancel.is_set():
                    return False
                left = 0.05 if deadline is None else min(0.05, deadline - time.monotonic())
                if left <= 0:
                    return False
                self._quiet.wait(left)  # short waits: ``cancel`` is an Event, not tied to this condition
            return not (cancel is not None and cancel.is_set())

    def _claim(self, messages: Sequence[BaseMessage], key: str | None) -> Speculation | None:
        """The speculation for ``key`` if it generates exactly ``messages``; any other one is cancelled.

        A candidate's reply comes first: other sessions' speculations still generating are cancelled too, so
        a guess never slows down a reply someone waits on.
        """
        if key is None or key == BACKGROUND_KEY:
            return None
        sig = signature(messages)
        drop: list[Speculation] = []
        mine: Speculation | None = None
        with self._spec_lock:
            for other, guess in list(self._speculations.items()):
                if other != key and not guess.done:
                    drop.append(self._speculations.pop(other))
                    self.speculation_stats.cancelled += 1
            self._answered[key] = sig
            self._answered.move_to_end(key)
            while len(self._answered) > _ANSWERED_KEYS:
                self._answered.popitem(last=False)
            spec = self._speculations.pop(key, None)
            if spec is not None and spec.signature == sig:
                self.speculation_stats.used += 1
                mine = spec
            elif spec is not None:
                self.speculation_stats.discarded += 1
                drop.append(spec)
        for guess in drop:
            guess.cancel()
        return mine

    def speculate(
        self, key: str, messages: Sequence[BaseMessage], *, until: Callable[[str], bool] | None = None
    ) -> bool:
        """Start generating the reply to ``messages`` for session ``key`` now, in the background.

        A later :meth:`stream` of the same prompt for ``key`` uses it; ``until`` (the reply so far -> is that
        all the reader will take?) ends the generation there, as the reader would. Latest wins per key (a new
        speculation or a prefill cancels the old one). Local servers only (``warm_cache``: a paid API's tokens
        are never spent on a guess), never while a reply streams on the port, and at most
        ``max_speculations`` generating at once across sessions: False when nothing was started (then the
        prompt is prefilled, unless it was answered already).
        """
        if not self.warm_cache:
            return False
        sig = signature(messages)
        with self._spec_lock:
            old = self._speculations.get(key)
            if old is not None and old.signature == sig and old.error is None:
                return True  # this very prompt is being generated already
            if old is not None:
                del self._speculations[key]
                old.cancel()
                self.speculation_stats.cancelled += 1
            if self._answered.get(key) == sig:
                self.speculation_stats.skipped += 1
                return False  # this prompt was answered already (a read-ahead that came late)
            running = sum(not s.done for s in self._speculations.values())
            busy = self._streams > 0 or running >= self.max_speculations
            if busy:
                # A reply streams (the candidate waiting on it comes first), or other sessions' guesses use
                # the budget: the server only reads the prompt, when the prefill's own rules let it.
                self.speculation_stats.skipped += 1
            else:
                spec = self._speculations[key] = Speculation(key, messages, self._chunks_ahead, until=until)
                self.speculation_stats.started += 1
                while len(self._speculations) > _KEPT_SPECULATIONS:  # the oldest: a session gone quiet
                    self._speculations.pop(next(iter(self._speculations))).cancel()
                    self.speculation_stats.cancelled += 1
        if busy:
            if self.prefiller is not None:
                self.prefiller.offer(key, messages)
            return False
        if self._prefiller is not None:
            self._prefiller.drop(key)  # the speculation reads the same prompt: a waiting prefill is moot
        spec.start()
        return True

    def cancel_speculation(self, key: str) -> bool:
        """Drop the speculation for ``key`` (the candidate speaks again); True when there was one."""
        with self._spec_lock:
            spec = self._speculations.pop(key, None)
            if spec is None:
                return False
            self.speculation_stats.cancelled += 1
        spec.cancel()
        return True

    def speculation(self, key: str) -> Speculation | None:
        """The speculation running or waiting for ``key`` (tests, benchmarks)."""
        with self._spec_lock:
            return self._speculations.get(key)

    @property
    def prefiller(self) -> Prefiller | None:
        """The port's prefill queue (None where warming costs money: remote servers)."""
        if not self.warm_cache:
            return None
        if self._prefiller is None:
            self._prefiller = Prefiller(self._send_one_token, busy=lambda: self._streams > 0)
        return self._prefiller

    def prefill(self, key: str, messages: Sequence[BaseMessage]) -> None:
        """Let the server read ``messages`` (the prompt so far) now; latest wins per ``key``."""
        self.cancel_speculation(key)  # newer text: the reply generated ahead answers an older one
        pf = self.prefiller
        if pf is not None:
            pf.offer(key, messages)

    def _send_one_token(self, messages: Sequence[BaseMessage], key: str | None = None) -> None:
        with self._live_request():
            self._bound(key, max_tokens=1).invoke(list(messages))

    def complete(self, messages: Sequence[BaseMessage], key: str | None = None) -> str:
        return "".join(self.stream(messages, key))

    def prefetch(self, messages: Sequence[BaseMessage]) -> None:
        """Send a prompt prefix in the background (one token generated) so the server caches it.

        llama.cpp-style servers reuse the longest cached prefix, so the follow-up sent after the candidate's
        answer only pays for the answer's tokens. Failures are ignored: this is an optimisation.
        """

        if not self.warm_cache:
            return

        def run() -> None:
            try:
                with self._live_request():
                    self.model.bind(max_tokens=1).invoke(list(messages))
            except Exception as e:
                log.debug("prefetch to %s failed: %s", self.base_url, e)

        threading.Thread(target=run, name="prompt-prefetch", daemon=True).start()


def build_chat_model(
    settings: Settings,
    *,
    base_url: str,
    model: str,
    temperature: float | None = None,
    keepalive: bool = True,
    **kwargs: object,
) -> BaseChatModel:
    """A LangChain ChatOpenAI against any OpenAI-compatible server (vLLM, NIM, Ollama, llama.cpp, OpenAI).

    ``keepalive=False`` opens a connection per request: llama.cpp's server closes the connection after a
    streamed reply, and a request reusing it a few milliseconds later fails (seen in 3 of 12 back-to-back
    requests to the embedded server).
    """
    http = http_library()
    if not keepalive:
        kwargs["http_client"] = openai.DefaultHttpxClient(limits=http.Limits(max_keepalive_connections=0))
    try:
        return ChatOpenAI(
            base_url=base_url,
            api_key=settings.api_key or _NO_KEY,  # type: ignore[arg-type]
            model=model,
            temperature=settings.temperature if temperature is None else temperature,
            max_tokens=settings.max_tokens,  # type: ignore[call-arg]
            timeout=http.Timeout(settings.timeout, connect=settings.connect_timeout),
            max_retries=1,
            streaming=True,
            **kwargs,  # type: ignore[arg-type]
        )
    except (TypeError, ValueError, ImportError, AttributeError) as e:
        raise ModelClientBroken(
            f"the model client for {base_url} could not be built ({type(e).__name__}: {e}). "
            "This is an installation problem, not the server: run `interviewer doctor` for the fix"
        ) from e


def is_local(base_url: str) -> bool:
    """Whether a server runs on this machine (loopback), where warming its prompt cache costs nothing."""
    import ipaddress
    from urllib.parse import urlparse

    host = urlparse(base_url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def build_port(
    settings: Settings, *, base_url: str, model: str, display_name: str | None = None, keepalive: bool = True
) -> ChatPort:
    return ChatPort(
        model=build_chat_model(settings, base_url=base_url, model=model, keepalive=keepalive),
        name=display_name or f"{model} @ {base_url}",
        base_url=base_url,
        warm_cache=is_local(base_url),
    )


def reading_port(
    settings: Settings,
    *,
    base_url: str,
    model: str,
    slots: int,
    display_name: str | None = None,
    temperature: float | None = 0.0,
) -> ChatPort:
    """A port on a started llama.cpp-style server (the embedded one) as background reading uses it.

    A connection per request (see :func:`build_chat_model`), token usage in the stream (a reading's cost counts
    its prompt and cached tokens), the prompt cache warmed on a local server, and requests pinned to the
    server's ``slots``.

    Args:
        settings: the client settings; their ``timeout`` bounds each request.
        base_url: the started server's OpenAI-compatible URL.
        model: the id the server serves the model under.
        slots: the server's slot count (0: the server picks a slot).
        display_name: the port's name (default: ``model @ base_url``).
        temperature: the port's default sampling temperature (every reading request asks for 0 itself);
            None: the settings' own, what a live reply uses.
    """
    chat = build_chat_model(
        settings,
        base_url=base_url,
        model=model,
        temperature=temperature,
        keepalive=False,
        stream_usage=True,
    )
    return ChatPort(
        model=chat,
        name=display_name or f"{model} @ {base_url}",
        base_url=base_url,
        warm_cache=is_local(base_url),
        slots=slots,
    )


@dataclass(frozen=True)
class ConnectionReport:
    ok: bool
    message: str
    models: tuple[str, ...] = ()


def list_models(base_url: str, api_key: str | None, timeout: float = 5.0) -> list[str]:
    """The ids a server lists at ``/v1/models``.

    Raises:
        ModelError: when the server is unreachable or answers with an error.
    """
    client = openai.OpenAI(base_url=base_url, api_key=api_key or _NO_KEY, timeout=timeout, max_retries=0)
    try:
        return [m.id for m in client.models.list()]
    except Exception as e:
        raise _translate(e, base_url) from e


def test_connection(base_url: str, api_key: str | None, timeout: float = 5.0) -> ConnectionReport:
    """An explicit health check for the settings panel: lists the server's models."""
    try:
        models = list_models(base_url, api_key, timeout)
    except ModelError as e:
        return ConnectionReport(False, str(e))
    if not models:
        return ConnectionReport(False, f"{base_url} answers but lists no models; load one on the server")
    return ConnectionReport(True, f"connected to {base_url}: {len(models)} model(s)", tuple(models))


test_connection.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def ping(settings: Settings, base_url: str, api_key: str | None, model: str | None = None) -> str:
    """Reach a server, list its models and ask for a few tokens: what `interviewer doctor` checks.

    Raises:
        ModelError: unreachable, no models, or the completion failed (the message says what to do).
    """
    models = list_models(base_url, api_key, timeout=settings.connect_timeout + 5)
    if not models:
        raise ModelError(f"{base_url} answers but lists no models; load one there or set INTERVIEWER_MODEL")
    name = model or models[0]
    if model and model not in models:
        raise ModelError(
            f"{base_url} does not list INTERVIEWER_MODEL={model}; it lists {', '.join(models[:5])}"
        )
    settings = settings.model_copy(update={"api_key": api_key, "max_tokens": 8})
    port = build_port(settings, base_url=base_url, model=name)
    reply = port.complete([HumanMessage("Reply with the word ready.")])
    return f"{len(models)} model(s) listed; {name} answered a short completion ({len(reply)} chars)"
