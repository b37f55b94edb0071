"""A scripted chat model for tests, benchmarks and offline demos: queues replies and records every call."""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import PrivateAttr

Reply = str | Exception | Callable[[Sequence[BaseMessage]], str]


class ScriptedChatModel(BaseChatModel):
    """Replies come from a queue (a string, an exception to raise, or a function of the messages).

    When the queue is empty it answers ``default``. ``calls`` holds every message list it was given.
    ``chunk_size`` splits replies into several streamed chunks; ``delay`` sleeps before the first one.
    """

    default: str = "Why does that hold?"
    chunk_size: int = 8
    delay: float = 0.0
    _queue: deque[Reply] = PrivateAttr(default_factory=deque)
    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _prefetches: list[list[BaseMessage]] = PrivateAttr(default_factory=list)

    def queue(self, *replies: Reply) -> ScriptedChatModel:
        self._queue.extend(replies)
        return self

    @property
    def calls(self) -> list[list[BaseMessage]]:
        return self._calls

    @property
    def prefetches(self) -> list[list[BaseMessage]]:
        """Prompts sent only to warm a server's cache (one-token generations); they use no scripted reply."""
        return self._prefetches

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _next(self, messages: list[BaseMessage]) -> str:
        self._calls.append(list(messages))
        reply = self._queue.popleft() if self._queue else self.default
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            return reply(messages)
        return reply

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if kwargs.get("max_tokens") == 1:
            self._prefetches.append(list(messages))
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=""))])
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self._next(messages)))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        text = self._next(messages)
        if self.delay:
            time.sleep(self.delay)
        if not text:  # an empty reply is still one (empty) chunk, as real servers send
            yield ChatGenerationChunk(message=AIMessageChunk(content=""))
        for i in range(0, len(text), self.chunk_size):
            yield ChatGenerationChunk(message=AIMessageChunk(content=text[i : i + self.chunk_size]))


_TARGET = re.compile(r"It must probe:\s*(.+?)\.\s*$", re.M)


def leaky_followup(messages: Sequence[BaseMessage]) -> str:
    """A follow-up that repeats the prompt's private why-target word for word: what a weak model does at its
    worst. Queue it (or use it as a reply function) to exercise the engine's leak guard."""
    text = str(messages[-1].content) if messages else ""
    m = _TARGET.search(text)
    return f"Can you walk me through {m.group(1).rstrip('.')}?" if m else "Why does that hold?"
