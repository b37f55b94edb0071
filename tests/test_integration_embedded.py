"""A short interview through the real OpenAI client path against the real embedded server (SmolLM2 in CI)."""

from __future__ import annotations

import os
import socket
from urllib.parse import urlparse

import pytest

from interviewer.config import load_settings
from interviewer.runtime import Runtime
from interviewer.session import Interview

from .conftest import FIXTURE_CONTENT

pytestmark = [pytest.mark.embedded, pytest.mark.slow]

ANSWERS = [
    "Amdahl's law: 1 / (0.1 + 0.9 / 8) is about 4.7x, and the serial 10% caps it at 10x.",
    "It assumes the parallel part scales perfectly across the eight workers.",
    "When memory bandwidth saturates, extra workers stop helping and the speedup flattens.",
]


def _run_round(rt: Runtime) -> Interview:
    rt.settings = rt.settings.model_copy(update={"retrieval": False})  # about the model
    ports = rt.ports("me")
    assert ports.model is not None
    it = Interview.start(ports, ["phone-screen"])
    it.advance_all()
    for answer in ANSWERS:
        it.submit(answer)
        it.advance_all()
    return it


def _port_open(url: str) -> bool:
    u = urlparse(url)
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((u.hostname or "127.0.0.1", u.port or 80)) == 0


def test_round_on_the_embedded_model_then_on_a_configured_base_url(tmp_path):
    settings = load_settings(
        embedded_model="smollm2-135m",
        data_dir=tmp_path,
        content_dir=FIXTURE_CONTENT,
        max_tokens=48,
        timeout=120,
    )
    embedded = Runtime(settings)
    try:
        it = _run_round(embedded)
        choice = embedded.model_choice
        assert choice is not None and choice.embedded and "SmolLM2" in choice.display_name
        assert it.finished
        asked = [e.payload for e in it.ports.store.events(it.session_id) if e.kind == "asked"]
        assert [a["level"] for a in asked] == [0, 1, 2]
        for followup in asked[1:]:
            # The real model was called through the OpenAI client; its reply was used or replaced for a reason.
            assert followup["model"] == choice.display_name
            assert followup["first_token_s"] > 0
            assert followup["source"] == "model" or followup["fallback_reason"]
            assert followup["text"].endswith("?")

        # The same interview with INTERVIEWER_BASE_URL pointed at an OpenAI-compatible server (this one).
        os.environ["INTERVIEWER_BASE_URL"] = choice.base_url
        try:
            configured = Runtime(
                load_settings(data_dir=tmp_path / "other", content_dir=FIXTURE_CONTENT, max_tokens=48)
            )
            it2 = _run_round(configured)
            other = configured.model_choice
            assert other is not None and not other.embedded
            assert other.model == choice.model  # picked from the server's /v1/models
            assert it2.finished
            configured.close()
        finally:
            del os.environ["INTERVIEWER_BASE_URL"]
    finally:
        url = embedded.model_choice.base_url if embedded.model_choice else None
        embedded.close()
    assert url is not None and not _port_open(url)  # the server stopped with the app
