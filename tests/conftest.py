"""Shared fixtures. A guard fails any connection that leaves this machine: tests need no network."""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path

import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

FIXTURE_CONTENT = Path(__file__).parent / "fixtures" / "content"
REPO = Path(__file__).resolve().parents[1]

_real_connect = socket.socket.connect


def _is_local(address: object) -> bool:
    if not isinstance(address, tuple):
        return True  # AF_UNIX paths
    host = str(address[0])
    if host in {"localhost", ""}:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _guarded_connect(self: socket.socket, address: object) -> None:
    if not _is_local(address):
        raise ConnectionRefusedError(f"tests may not use the network (tried {address!r})")
    _real_connect(self, address)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Never touch the user's real session store."""
    d = tmp_path_factory.mktemp("data")
    monkeypatch.setenv("INTERVIEWER_DATA_DIR", str(d))
    for var in (
        "INTERVIEWER_BASE_URL",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "INTERVIEWER_API_KEY",
        "INTERVIEWER_DATABASE_URL",
        "INTERVIEWER_CHROMA_URL",
    ):
        monkeypatch.delenv(var, raising=False)
    return d


@pytest.fixture
def fixture_bank():
    from interviewer.content import load_bank

    return load_bank(FIXTURE_CONTENT)


# Module scope, not session: the scorer holds its own loaded MiniLM model, its embedding caches and the bank's
# neighbour vectors, so a session-wide one would stay in memory for the rest of the run and carry its state
# from one module into the next. One per module is what each module built for itself before.
@pytest.fixture(scope="module")
def bank():
    """The repository's question bank."""
    from interviewer.content import load_bank

    return load_bank(REPO)


@pytest.fixture(scope="module")
def bank_scorer(bank):
    """The scorer as the interviewer builds it: MiniLM, with the bank's questions as neighbours."""
    from interviewer.embeddings import MiniLMEmbedder
    from interviewer.scoring.scorer import RubricScorer

    return RubricScorer(MiniLMEmbedder(), neighbours=list(bank.questions.values()))
