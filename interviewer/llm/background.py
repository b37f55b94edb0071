"""The port background work (the reader, the truth judge) sends its requests through.

Over a remote server it is the live port itself: requests go to its background slot and step aside while a
candidate's reply streams (the reader checks :attr:`ChatPort.live_streams`, and abandons a request a live reply
overtakes, to ask it again after). Over the embedded model that is not enough: a llama.cpp server reads a prompt
in one step and starts a request that arrives meanwhile only after it, and on a small machine any work it does
beside a live reply takes that reply's CPU. So background work gets a server of its own on the same weights (the
file is mmapped: its pages are shared; the second server still costs about 0.8 GB of private memory), run at the
OS's idle priority, and its process is paused while the live server works for a candidate: from the moment a
reply starts streaming until the last one ends, and for each prefill and each reply generated ahead while they
type or speak (:meth:`ChatPort.on_live`). A request in flight just waits, mid-prompt included, and goes on where
it stopped; the live server has the cores and the memory bandwidth to itself (benchmarks/bench_reader_live.py).
``Settings.background_server`` off (INTERVIEWER_BACKGROUND_SERVER=0) saves that memory: background work then
shares the embedded server as it does a remote one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from interviewer.errors import InterviewerError
from interviewer.llm.client import ChatPort

if TYPE_CHECKING:
    from interviewer.llm.embedded import EmbeddedServer

log = logging.getLogger(__name__)


class BackgroundPort:
    """A :class:`ChatPort` for background work; its server (if any) starts on the first request.

    Args:
        live: the port candidates' replies go through.
        server: the idle-priority server to start on first use (None: use ``live``'s background slot).
        connect: builds the port over the started server from its base URL.
        yield_to_live: stop a request while a live reply streams on ``live`` (needed when both share a
            server).
        freeze: pause the background server's process while a live request (a reply, a prefill, a reply
            generated ahead) runs on ``live`` and resume it after: the live server then has every core and all
            the memory bandwidth, even when other programs keep the cores busy (idle priority alone yields only
            CPU time, and only to ready threads).
    """

    def __init__(
        self,
        live: ChatPort,
        server: EmbeddedServer | None = None,
        connect: Callable[[EmbeddedServer, str], ChatPort] | None = None,
        *,
        yield_to_live: bool | None = None,
        freeze: bool = True,
    ) -> None:
        self.live = live
        self.server = server
        self._connect = connect
        self.yield_to_live = server is None if yield_to_live is None else yield_to_live
        self._own: ChatPort | None = None
        self._failed: str | None = None
        self._closed = False
        self._lock = threading.Lock()
        self._unhook: Callable[[], None] | None = None
        self._pausing = threading.Lock()  # one order for the live port's hooks and the server's start
        self._live_now = False
        self._paused_since: float | None = None
        self._paused_total = 0.0
        if server is not None and freeze:
            self._unhook = live.on_live(self._live_changed)

    def _live_changed(self, live: bool) -> None:
        with self._pausing:
            self._live_now = live
            if self._own is not None:  # not started yet: nothing to pause
                self._freeze(live)

    def _freeze(self, pause: bool) -> None:  # with self._pausing held
        assert self.server is not None
        if pause:
            self.server.pause()
            if self._paused_since is None:
                self._paused_since = time.monotonic()
        else:
            self.server.resume()
            if self._paused_since is not None:
                self._paused_total += time.monotonic() - self._paused_since
                self._paused_since = None

    @property
    def paused_seconds(self) -> float:
        """How long the background server has been paused for live requests so far (the reader's cost)."""
        with self._pausing:
            since = self._paused_since
            return self._paused_total + (time.monotonic() - since if since is not None else 0.0)

    @property
    def port(self) -> ChatPort:
        """The port requests go to: the idle server's once it runs; the live port's if it cannot start."""
        if self.server is None or self._failed is not None or self._closed:
            return self.live  # closed: a job still running from before finishes on the live port
        with self._lock:
            if self._own is None and self._failed is None:
                try:
                    base_url = self.server.start()
                    assert self._connect is not None
                    own = self._connect(self.server, base_url)
                    with self._pausing:  # started while a candidate waits: it waits too
                        self._own = own
                        if self._live_now:
                            self._freeze(True)
                except InterviewerError as e:  # reading still works, beside the live replies
                    self._failed = str(e)
                    log.warning("background model server unavailable, sharing the live one: %s", e)
            return self._own if self._own is not None else self.live

    # What the reader and the truth judge use of a port ------------------------------------------------
    @property
    def model(self) -> BaseChatModel:
        return self.port.model

    @property
    def name(self) -> str:
        return self.port.name

    @property
    def base_url(self) -> str:
        return self.port.base_url

    def slot(self, key: str | None) -> int | None:
        return self.port.slot(key)

    def stream(self, messages: Sequence[BaseMessage], key: str | None = None) -> Any:
        return self.port.stream(messages, key)

    @property
    def _steps_aside(self) -> bool:
        # A server of its own that could not start, or is closed, leaves the requests on the live server.
        return self.yield_to_live or self._failed is not None or self._closed

    @property
    def live_streams(self) -> int:
        return self.live.live_streams if self._steps_aside else 0

    def wait_until_quiet(self, timeout: float | None = None, cancel: threading.Event | None = None) -> bool:
        if not self._steps_aside:
            return not (cancel is not None and cancel.is_set())
        return self.live.wait_until_quiet(timeout, cancel)

    @property
    def separate(self) -> bool:
        """Whether requests go to a server of their own (tests, the UI's status)."""
        return self._own is not None

    def close(self) -> None:
        """Stop the background server (the live one is not ours to stop)."""
        self._closed = True  # never started again: a new model gets a new port
        if self._unhook is not None:
            self._unhook()
            self._unhook = None
        if self.server is not None:
            self.server.stop()
        with self._pausing:
            self._own = None
            if self._paused_since is not None:
                self._paused_total += time.monotonic() - self._paused_since
                self._paused_since = None
