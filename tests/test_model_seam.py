"""The model seam works on whichever HTTP library the installed OpenAI client uses (httpx or httpx2).

No HTTP type crosses the seam: timeouts and clients are built from the client's own library, both libraries'
errors map to the project's messages, and a client that cannot even send a request (a library mismatch, a bad
setting) is named as an installation problem with the command that diagnoses it, never blamed on the server.
The suite runs against the locked client; `make test` also runs this file against the other major.
"""

from __future__ import annotations

import importlib
import json
import socket
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from gradio_client import Client

from interviewer.config import Settings, load_settings
from interviewer.errors import ModelClientBroken, ModelTimeout, ModelUnavailable
from interviewer.llm import client as seam
from interviewer.llm.standin import StandinServer
from interviewer.runtime import Runtime
from ui.app import build

from .conftest import REPO


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends


def _other_library() -> str | None:
    mine = seam.http_library().__name__
    for name in ("httpx", "httpx2"):
        if name != mine:
            try:
                importlib.import_module(name)
            except ImportError:
                return None
            return name
    return None


def _in_subprocess(body: str) -> dict[str, str]:
    """Run ``body`` in a fresh interpreter (the real client, nothing patched in this process); it prints JSON."""
    script = textwrap.dedent(body)
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=REPO, check=False
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


_STREAM_ONCE = """
    import json, sys
    from langchain_core.messages import HumanMessage
    from interviewer.config import Settings
    from interviewer.errors import ModelError
    from interviewer.llm import client
    {patch}
    try:
        port = client.build_port(Settings(timeout=5, connect_timeout=2), base_url="{url}", model="m")
        text = "".join(port.stream([HumanMessage("hello")]))
        print(json.dumps({{"kind": "reply", "message": text}}))
    except ModelError as e:
        print(json.dumps({{"kind": type(e).__name__, "message": str(e)}}))
"""


def test_the_real_client_against_a_closed_port_says_no_server_answers_there() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    got = _in_subprocess(_STREAM_ONCE.format(patch="", url=url))
    assert got["kind"] == "ModelUnavailable"
    assert got["message"].startswith(f"no model server answers at {url}")


def test_a_client_built_on_the_wrong_http_library_is_named_an_install_problem_with_its_fix() -> None:
    other = _other_library()
    if other is None or not openai.__version__.startswith("3."):
        pytest.skip("the failing direction: openai 3.x (httpx2) handed an httpx timeout")
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    # The failure a stale seam produced: a timeout object from one library handed to a client on the other.
    patch = f"import importlib; client.http_library = lambda: importlib.import_module({other!r})"
    got = _in_subprocess(_STREAM_ONCE.format(patch=patch, url=url))
    assert got["kind"] == "ModelClientBroken", got
    assert "installation problem, not the server" in got["message"]
    assert "interviewer doctor" in got["message"]


def test_a_client_given_a_timeout_it_cannot_use_is_named_an_install_problem() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    patch = (
        "import types; real = client.http_library(); client.http_library = lambda: types.SimpleNamespace("
        "Timeout=lambda *a, **k: object(), Limits=real.Limits)"
    )
    got = _in_subprocess(_STREAM_ONCE.format(patch=patch, url=url))
    assert got["kind"] == "ModelClientBroken", got
    assert "installation problem, not the server" in got["message"]


def test_timeouts_and_clients_come_from_the_clients_own_library() -> None:
    http = seam.http_library()
    assert issubclass(openai.DefaultHttpxClient, http.Client)
    model = seam.build_chat_model(
        Settings(timeout=7, connect_timeout=3), base_url="http://127.0.0.1:9/v1", model="m", keepalive=False
    )
    timeout = model.request_timeout  # type: ignore[attr-defined]
    assert isinstance(timeout, http.Timeout) and (timeout.read, timeout.connect) == (7, 3)
    assert isinstance(model.http_client, http.Client)  # type: ignore[attr-defined]


@pytest.mark.parametrize("library", ["httpx", "httpx2"])
def test_both_libraries_errors_map_to_the_projects_messages(library: str) -> None:
    try:
        http = importlib.import_module(library)
    except ImportError:
        pytest.skip(f"{library} is not installed")
    url = "http://127.0.0.1:9/v1"
    request = http.Request("POST", url)
    cases = [
        (http.ConnectError("refused", request=request), ModelUnavailable, "no model server answers at"),
        (http.ReadTimeout("slow", request=request), ModelTimeout, "did not answer in time"),
        (http.RemoteProtocolError("cut", request=request), ModelUnavailable, "dropped the connection"),
        (http.ReadError("reset", request=request), ModelUnavailable, "dropped the connection"),
    ]
    for raw, kind, said in cases:
        mapped = seam._translate(raw, url)
        assert isinstance(mapped, kind) and said in str(mapped), (raw, mapped)
        # Wrapped by the OpenAI client, as a retried connection failure is, the cause still decides.
        try:
            try:
                raise raw
            except Exception as inner:
                raise openai.APIConnectionError(request=request) from inner  # type: ignore[arg-type]
        except openai.APIConnectionError as wrapped:
            again = seam._translate(wrapped, url)
        assert isinstance(again, kind) and said in str(again), (raw, again)


def test_a_type_error_inside_the_client_is_not_blamed_on_the_server() -> None:
    mapped = seam._translate(TypeError("Invalid timeout"), "http://127.0.0.1:9/v1")
    assert isinstance(mapped, ModelClientBroken) and "interviewer doctor" in str(mapped)


@pytest.fixture
def standin() -> Iterator[StandinServer]:
    with StandinServer() as srv:
        yield srv


def test_the_page_says_what_failed_and_what_to_run_when_the_client_is_broken(
    tmp_path: Path, standin: StandinServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = seam.http_library()
    broken = types.SimpleNamespace(Timeout=lambda *a, **k: object(), Limits=real.Limits)
    monkeypatch.setattr(seam, "http_library", lambda: broken)
    settings = load_settings(
        data_dir=tmp_path, base_url=standin.base_url, model="standin", timeout=4.0, listen=False
    )
    rt = Runtime(settings)  # the client is built on first use, as `interviewer serve` does
    rt.settings = rt.settings.model_copy(update={"retrieval": False})
    demo = build(rt)
    demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, ssr_mode=False)
    try:
        client = Client(demo.local_url, verbose=False)
        _, owner, *_ = client.predict("phone-screen", 1, False, None, api_name="/start")
        chat, box, status, *_ = client.predict("Amdahl bounds the speedup.", owner, api_name="/send")
    finally:
        demo.close()
        rt.close()
    assert box == "" and "why, level 1" in status  # the interview goes on with the authored follow-up
    assert "installation problem, not the server" in status and "interviewer doctor" in status, status
    assert chat, "the page answered"
