"""The one model seam: the only module that imports the OpenAI client or LangChain's ChatOpenAI.

Everything else receives a :class:`ChatPort` (a LangChain chat model plus a name) and never sees the client.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_openai import ChatOpenAI

from interviewer.config import Settings
from interviewer.errors import ModelError, ModelTimeout, ModelUnavailable
from interviewer.llm.prefill import Prefiller

log = logging.getLogger(__name__)

# A placeholder key: local servers ignore it, and the OpenAI client refuses to start without one.
_NO_KEY = "not-needed"


def _translate(err: Exception, base_url: str) -> ModelError:
    """Turn a client exception into an error that says what to do next."""
    if isinstance(err, ModelError):
        return err
    if isinstance(err, openai.APITimeoutError | httpx.TimeoutException):
        return ModelTimeout(
            f"the model at {base_url} did not answer in time; it may be overloaded. "
            "Try again, raise INTERVIEWER_TIMEOUT, or pick a smaller model"
        )
    if isinstance(err, openai.APIConnectionError | httpx.ConnectError):
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
    return ModelError(f"the model at {base_url} failed: {type(err).__name__}: {err}")


# The session key of requests no candidate waits on (the truth judge, the deep dive's rephrasing): on a server
# with slots they share one slot of their own, one more "session" in the slot LRU, so they never overwrite a
# candidate's cached prompt.
BACKGROUND_KEY = "background"


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

    def __post_init__(self) -> None:
        self._streams = 0  # replies streaming now: prefill waits for none
        self._streams_lock = threading.Lock()
        self._prefiller: Prefiller | None = None
        self._slot_of: OrderedDict[str, int] = OrderedDict()  # session key -> slot, least recent first

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

    def stream(self, messages: Sequence[BaseMessage], key: str | None = None) -> Iterator[str]:
        """The reply's text as it comes; ``key`` (a session id) pins the request to that session's slot."""
        with self._streams_lock:
            self._streams += 1
        try:
            for chunk in self._bound(key).stream(list(messages)):
                text = chunk.content if isinstance(chunk.content, str) else ""
                if text:
                    yield text
        except Exception as e:  # the client's whole error zoo becomes one clear ModelError
            raise _translate(e, self.base_url) from e
        finally:
            with self._streams_lock:
                self._streams -= 1

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
        pf = self.prefiller
        if pf is not None:
            pf.offer(key, messages)

    def _send_one_token(self, messages: Sequence[BaseMessage], key: str | None = None) -> None:
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
    if not keepalive:
        kwargs["http_client"] = httpx.Client(limits=httpx.Limits(max_keepalive_connections=0))
    return ChatOpenAI(
        base_url=base_url,
        api_key=settings.api_key or _NO_KEY,  # type: ignore[arg-type]
        model=model,
        temperature=settings.temperature if temperature is None else temperature,
        max_tokens=settings.max_tokens,  # type: ignore[call-arg]
        timeout=httpx.Timeout(settings.timeout, connect=settings.connect_timeout),
        max_retries=1,
        streaming=True,
        **kwargs,  # type: ignore[arg-type]
    )


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
