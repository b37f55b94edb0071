"""#16 item 4: replicas share one OpenAI-compatible model server with prefix caching (vLLM/NIM in production).

A real llama.cpp server (the embedded SmolLM2 one, started on its own as a shared server would be) stands in
for vLLM or NIM: both speak the same OpenAI API and both reuse a cached prompt prefix. Replica A asks the first
follow-up; replica A goes away; replica B, a separate Runtime on the same store, resumes the session and builds
the next follow-up prompt. The server must serve most of that prompt from the cache A filled, which it can only
do when B's prompt starts with exactly the tokens A sent. A control prompt (the same text behind a different
first line) shows what an uncached prompt of that size costs, so the check can fail.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import BaseMessage, SystemMessage
from langchain_openai import ChatOpenAI

from interviewer.config import Settings, load_settings
from interviewer.llm.embedded import EmbeddedServer
from interviewer.runtime import Runtime
from interviewer.session import Interview

from .conftest import FIXTURE_CONTENT

pytestmark = [pytest.mark.embedded, pytest.mark.slow]

FIRST = "Amdahl's law: 1 / (0.1 + 0.9 / 8) is about 4.7x, and the serial 10% caps it at 10x."
SECOND = "It assumes the parallel part scales perfectly across the eight workers."


def _replica(url: str, data_dir: object) -> Runtime:
    """One app replica: its own Runtime (ports, scorer), the shared store and the shared model server."""
    return Runtime(
        load_settings(
            base_url=url,
            data_dir=data_dir,
            content_dir=FIXTURE_CONTENT,
            retrieval=False,
            max_tokens=24,
            timeout=120,
        )
    )


def _prompt_usage(url: str, model: str, messages: list[BaseMessage]) -> tuple[int, int]:
    """(prompt tokens, of which served from the server's cache) for one request, as the server reports."""
    chat = ChatOpenAI(
        base_url=url,
        api_key="not-needed",  # type: ignore[arg-type]
        model=model,
        temperature=0.0,
        max_tokens=1,  # type: ignore[call-arg]
        streaming=True,
        stream_usage=True,
        timeout=120,
        max_retries=1,
    )
    usage = [c.usage_metadata for c in chat.stream(messages) if c.usage_metadata]
    assert usage, "the server reported no usage"
    last = usage[-1]
    return int(last["input_tokens"]), int((last.get("input_token_details") or {}).get("cache_read", 0))


def test_a_session_resumed_on_another_replica_reuses_the_shared_servers_prompt_cache(tmp_path):
    server = EmbeddedServer(
        Settings(data_dir=tmp_path / "model", embedded_model="smollm2-135m", embedded_threads=2),
        n_parallel=2,
    )
    url = server.start()
    try:
        a = _replica(url, tmp_path / "data")
        it = Interview.start(a.ports("candidate-1"), ["phone-screen"])
        it.advance_all()
        it.submit(FIRST)
        it.advance_all()  # replica A streams the first why-follow-up from the shared server
        assert it.level == 1 and it.question is not None
        session_id, qid = it.session_id, it.question.id
        asked = [e.payload for e in a.store.events(session_id) if e.kind == "asked"]
        assert asked[-1]["level"] == 1 and asked[-1]["model"].endswith(f"@ {url}")
        a.close()  # the replica dies; the model server does not

        b = _replica(url, tmp_path / "data")
        resumed = Interview.resume(b.ports("candidate-1"), session_id)
        assert resumed.question is not None and resumed.question.id == qid and resumed.level == 1
        resumed.submit(SECOND)
        prompt = resumed.followups.messages(resumed.question, 2)  # what replica B sends next
        model = b.model().model.model_name  # type: ignore[attr-defined]

        total, cached = _prompt_usage(url, model, prompt)
        system = prompt[0].content
        assert isinstance(system, str)
        control = [SystemMessage(content="A different first line.\n" + system), *prompt[1:]]
        control_total, control_cached = _prompt_usage(url, model, control)

        assert total >= 150, f"the follow-up prompt is unexpectedly short ({total} tokens)"
        assert cached >= 0.6 * total, f"B's prompt missed the cache A filled: {cached} of {total} tokens"
        assert control_total >= total and control_cached < 0.2 * control_total, (
            f"the control prompt should not be served from the cache: {control_cached} of {control_total}"
        )
        b.close()
    finally:
        server.stop()
