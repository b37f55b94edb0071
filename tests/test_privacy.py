"""Privacy and control through the real Gradio app: owners cannot be forged, the model cannot be switched by
a visitor of a shared app (only with the admin token, or in single-user local mode by a direct request), the
settings panel reaches no private ranges and scans no ports, report links expire, a share link needs a login,
and a session is written by one app process at a time."""

from __future__ import annotations

import os
import socket
import stat
import threading
import time
from pathlib import Path

import httpx
import pytest
from gradio_client import Client
from typer.testing import CliRunner

from interviewer.config import load_settings
from interviewer.errors import ConfigError, InputError
from interviewer.llm.client import ChatPort
from interviewer.llm.fake import ScriptedChatModel
from interviewer.netguard import check_url, exposure_check, is_local_only
from interviewer.owners import SECRET_NAME, OwnerTokens
from interviewer.runtime import ModelChoice, Runtime
from ui.app import build

from .conftest import FIXTURE_CONTENT


def _runtime(data_dir: Path) -> Runtime:
    # Privacy checks with short placeholder answers: the authored whys, in order (listening: test_listen.py).
    settings = load_settings(content_dir=FIXTURE_CONTENT, data_dir=data_dir, answer_seconds=90, listen=False)
    rt = Runtime(settings)
    rt.set_model(
        ChatPort(ScriptedChatModel().queue("Why does the serial part cap it?"), name="scripted"),
        ModelChoice("http://127.0.0.1:1/v1", "s", "scripted", False),
    )
    rt.settings = rt.settings.model_copy(update={"retrieval": False})
    return rt


class _Live:
    def __init__(
        self,
        data_dir: Path,
        max_file_size: str | None = None,
        admin_token: str | None = None,
        **build_kw: object,
    ) -> None:
        self.rt = _runtime(data_dir)
        self.rt.settings = self.rt.settings.model_copy(update={"admin_token": admin_token})
        self.demo = build(self.rt, **build_kw)  # type: ignore[arg-type]
        self.demo.queue()
        self.demo.launch(
            server_name="127.0.0.1",
            server_port=None,
            prevent_thread_lock=True,
            quiet=True,
            ssr_mode=False,
            max_file_size=max_file_size,
        )
        self.client = Client(self.demo.local_url, verbose=False)

    def close(self) -> None:
        self.demo.close()
        self.rt.close()


@pytest.fixture
def live(tmp_path: Path):
    app = _Live(tmp_path)
    try:
        yield app
    finally:
        app.close()


def test_a_browser_cannot_claim_the_cli_or_a_login_owner(live: _Live) -> None:
    store = live.rt.store
    cli_sid = store.create("local", "CLI phone screen", {"rounds": ["phone-screen"], "questions": []})
    alice_sid = store.create("user:alice", "Alice's", {"rounds": ["phone-screen"], "questions": []})
    c = live.client
    for forged in ("local", "user:alice", "web:abc.def", "web:x.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"):
        assert c.predict(forged, api_name="/sessions")["data"] == []
    for sid, forged in ((cli_sid, "local"), (alice_sid, "user:alice")):
        with pytest.raises(Exception, match="no session"):
            c.predict(sid, forged, api_name="/reopen")
    # A token the server issued keeps working; the owner behind it is never "local".
    _, token, *_ = c.predict("phone-screen", 1, False, None, api_name="/start")
    assert len(c.predict(token, api_name="/sessions")["data"]) == 1
    owner = live.rt.store.list()[0].owner
    assert owner.startswith("web:") and owner != "local"


def test_the_owner_key_is_private_to_the_user(tmp_path: Path) -> None:
    tokens = OwnerTokens.for_data_dir(tmp_path)
    mode = stat.S_IMODE(os.stat(tmp_path / SECRET_NAME).st_mode)
    assert mode == 0o600
    token = tokens.issue()
    assert tokens.verify(token) == token.rpartition(".")[0]
    assert OwnerTokens.for_data_dir(tmp_path).verify(token) is not None  # survives a restart
    assert OwnerTokens(b"k" * 32).verify(token) is None  # another server's key
    assert tokens.verify(token[:-2] + "xx") is None


def test_a_shared_app_does_not_let_a_visitor_switch_the_model(tmp_path: Path) -> None:
    app = _Live(tmp_path, admin=False)
    try:
        with pytest.raises(Exception, match="set by whoever runs the server"):
            app.client.predict("https://api.example.com/v1", "k", "m", api_name="/use_model")
        with pytest.raises(Exception, match="set by whoever runs the server"):
            app.client.predict("", "", None, api_name="/use_model")  # back to embedded: also for everyone
        with pytest.raises(Exception, match="set by whoever runs the server"):
            app.client.predict("http://127.0.0.1:22/v1", "", api_name="/test_connection")
        assert app.rt.model_choice is not None and app.rt.model_choice.display_name == "scripted"
    finally:
        app.close()


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.7:8000/v1",
        "http://192.168.1.1/v1",
        "http://[fe80::1]:8000/v1",
        "http://[::ffff:169.254.169.254]/v1",
        "http://0.0.0.0:22/v1",
    ],
)
def test_test_connection_never_probes_private_or_link_local_ranges(live: _Live, url: str) -> None:
    with pytest.raises(Exception, match="address"):
        live.client.predict(url, "", api_name="/test_connection")


def test_test_connection_reaches_the_configured_server() -> None:
    configured = "http://10.1.2.3:8000/v1"
    assert check_url("http://10.1.2.3:8000/v1/", configured=[configured]) == "http://10.1.2.3:8000/v1"
    with pytest.raises(InputError, match="private"):
        check_url("http://10.1.2.3:8001/v1", configured=[configured])  # another port on that host
    with pytest.raises(InputError, match="loopback"):
        check_url("http://127.0.0.1:8000/v1", allow_loopback=False)
    for bad in ("file:///etc/passwd", "gopher://x", "http://user:pw@example.com/v1"):
        with pytest.raises(InputError):
            check_url(bad)
    assert check_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert is_local_only(None) and is_local_only("::1") and not is_local_only("0.0.0.0")


def test_report_links_expire_and_the_report_folder_is_not_served(tmp_path: Path) -> None:
    app = _Live(tmp_path, report_ttl=2)
    try:
        c = app.client
        _, token, *_ = c.predict("phone-screen", 1, False, None, api_name="/start")
        c.predict("Amdahl: the serial 10% caps the speedup at 10x.", token, api_name="/send")
        c.predict(token, api_name="/report")
        served = [Path(p) for files in app.demo.temp_file_sets for p in files if "report-" in str(p)]
        assert served, "the report was not handed to Gradio"
        url = f"{app.demo.local_url}gradio_api/file={served[0]}"
        assert httpx.get(url).status_code == 200  # the link works at first ...
        deadline = time.monotonic() + 60
        while httpx.get(url).status_code == 200 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert httpx.get(url).status_code != 200  # ... and then it is gone
        original = next((tmp_path / "reports").rglob("report-*.html"))
        assert len(original.parent.name) == 32  # an unguessable folder per download
        assert httpx.get(f"{app.demo.local_url}gradio_api/file={original}").status_code != 200
    finally:
        app.close()


def test_share_without_auth_is_refused_unless_confirmed(tmp_path: Path) -> None:
    from interviewer.cli import app as cli

    out = CliRunner().invoke(cli, ["serve", "--share", "--data-dir", str(tmp_path)])
    assert out.exit_code == 1 and "--auth" in out.output and "--public-without-login" in out.output
    with pytest.raises(InputError):
        exposure_check(share=True, auth=False, confirmed=False)
    exposure_check(share=True, auth=True, confirmed=False)
    exposure_check(share=True, auth=False, confirmed=True)
    exposure_check(share=False, auth=False, confirmed=False)


def test_a_second_app_process_is_told_the_session_is_open_elsewhere(tmp_path: Path) -> None:
    first, second = _Live(tmp_path), _Live(tmp_path)  # two app processes on one data dir
    try:
        _, token, *_ = first.client.predict("phone-screen", 1, False, None, api_name="/start")
        sid = first.client.predict(token, api_name="/sessions")["data"][0][0]
        with pytest.raises(Exception, match="another app process"):
            second.client.predict(sid, token, api_name="/reopen")
        first.client.predict("the answer, once", token, api_name="/send")
        answers = [e for e in first.rt.store.events(sid) if e.kind == "answered"]
        assert [e.payload["text"] for e in answers] == ["the answer, once"]
    finally:
        first.close()
        second.close()


def test_replicas_that_share_the_owner_secret_accept_each_others_tokens(tmp_path: Path) -> None:
    """A deployment's replicas (each its own data dir) share INTERVIEWER_OWNER_SECRET; without it they don't."""

    shared = ("s" * 40).encode()
    token = OwnerTokens(shared).issue()
    assert OwnerTokens(shared).verify(token) is not None
    other = OwnerTokens.for_data_dir(tmp_path / "replica-b")  # its own random key
    assert other.verify(token) is None
    settings = load_settings(data_dir=tmp_path / "c", owner_secret="s" * 40)
    assert settings.owner_secret == "s" * 40 and "s" * 40 not in repr(settings)
    with pytest.raises(ConfigError):
        load_settings(data_dir=tmp_path / "d", owner_secret="short")


# -- admin actions: who may change the model for everyone --------------------------------------------------

ADMIN_TOKEN = "cohort-admin-token-" + "a" * 24


class _Knocks:
    """A loopback port that counts the connections made to it (an open port a scanner would find)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.count = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.count += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


def _refusal(client: Client, *args: object, api_name: str) -> str:
    with pytest.raises(Exception) as caught:
        client.predict(*args, api_name=api_name)
    return str(caught.value)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_visitor_behind_the_cohort_proxy_cannot_switch_the_model_or_scan_loopback(tmp_path: Path) -> None:
    """The documented cohort deployment (a replica on 127.0.0.1 behind nginx): every proxied request comes from
    127.0.0.1, so an app that trusted the address would let any visitor point everyone's answers at its server."""
    from interviewer.llm.standin import StandinServer

    from .support.app_process import AppProcess, free_port
    from .support.services import nginx_proxy

    env = {
        "INTERVIEWER_CONTENT_DIR": str(FIXTURE_CONTENT),
        "INTERVIEWER_LISTEN": "false",
        "INTERVIEWER_RETRIEVAL": "false",
        "INTERVIEWER_OWNER_SECRET": "cohort-test-owner-secret-" + "x" * 16,
        "INTERVIEWER_ADMIN_TOKEN": ADMIN_TOKEN,
    }
    knocks = _Knocks()
    closed = f"http://127.0.0.1:{free_port()}/v1"
    with StandinServer() as real, StandinServer() as attacker:
        replica = AppProcess(tmp_path / "replica", real.base_url, extra_env=env).start(timeout=240)
        try:
            with nginx_proxy([replica.port]) as url:
                visitor = Client(url, verbose=False)
                # The attack: no token, the attacker's own OpenAI-compatible server.
                said = _refusal(visitor, attacker.base_url, "", "standin", api_name="/use_model")
                assert "set by whoever runs the server" in said
                assert "set by whoever runs the server" in _refusal(
                    visitor, attacker.base_url, "", "standin", "wrong-" + ADMIN_TOKEN, api_name="/use_model"
                )
                # The connection test tells a visitor nothing about loopback ports: one answer, no connection.
                on_open = _refusal(visitor, knocks.url, "", api_name="/test_connection")
                on_closed = _refusal(visitor, closed, "", api_name="/test_connection")
                assert on_open == on_closed and knocks.count == 0
                # Another candidate's answers still go to the deployment's model, none to the attacker's.
                _, owner, *_ = visitor.predict("phone-screen", 1, False, None, api_name="/start")
                visitor.predict("Amdahl: the serial 10% caps the speedup at 10x.", owner, api_name="/send")
                assert any("serial 10%" in str(p) for p in real.stats.prompts)
                assert attacker.stats.requests == 0 and attacker.stats.prompts == []
                # The operator, with the deployment's token, through the same proxy.
                admin = Client(url, verbose=False)
                message, _ = admin.predict(real.base_url, "", ADMIN_TOKEN, api_name="/test_connection")
                assert message.startswith("✅"), message
        finally:
            replica.stop()
            knocks.close()


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Forwarded-For": "203.0.113.9"},  # nginx, as deploy/nginx.conf sets it
        {"Forwarded": "for=203.0.113.9"},
        {"X-Real-IP": "203.0.113.9"},
        {"Host": "rebound.attacker.example"},  # a web page that rebound its own name to 127.0.0.1
    ],
    ids=["x-forwarded-for", "forwarded", "x-real-ip", "dns-rebinding-host"],
)
def test_local_mode_refuses_model_switches_that_came_through_a_proxy(
    tmp_path: Path, headers: dict[str, str]
) -> None:
    app = _Live(tmp_path, admin=True)
    try:
        proxied = Client(app.demo.local_url, verbose=False, headers=headers)
        with pytest.raises(Exception, match="set by whoever runs the server"):
            proxied.predict("https://api.example.com/v1", "k", "m", api_name="/use_model")
        with pytest.raises(Exception, match="set by whoever runs the server"):
            proxied.predict("http://127.0.0.1:22/v1", "", api_name="/test_connection")
        assert app.rt.model_choice is not None and app.rt.model_choice.display_name == "scripted"
        # The same app, asked straight from this machine: the connection test runs (and fails on a closed port).
        message, _ = app.client.predict("http://127.0.0.1:9/v1", "", api_name="/test_connection")
        assert message.startswith("❌")
    finally:
        app.close()


def test_a_configured_admin_token_is_required_even_on_a_local_app(tmp_path: Path) -> None:
    app = _Live(tmp_path, admin_token=ADMIN_TOKEN, admin=True)
    try:
        for given in ("", "x" * len(ADMIN_TOKEN), ADMIN_TOKEN[:-1]):
            with pytest.raises(Exception, match="admin token"):
                app.client.predict("http://127.0.0.1:9/v1", "", given, api_name="/test_connection")
        message, _ = app.client.predict("http://127.0.0.1:9/v1", "", ADMIN_TOKEN, api_name="/test_connection")
        assert message.startswith("❌")  # past the gate: the (closed) port was tried
    finally:
        app.close()


def test_single_user_local_mode_needs_a_loopback_app_of_one_person(tmp_path: Path) -> None:
    from interviewer.admin import AdminGate, single_user_local

    plain = load_settings(data_dir=tmp_path)
    assert single_user_local(plain, share=False, login=False)
    assert not single_user_local(plain, share=True, login=False)
    assert not single_user_local(plain, share=False, login=True)
    for shared in (
        {"host": "0.0.0.0"},
        {"database_url": "postgresql://u:p@db/interviewer"},
        {"owner_secret": "s" * 40},
    ):
        assert not single_user_local(load_settings(data_dir=tmp_path, **shared), share=False, login=False)
    with pytest.raises(ConfigError, match="INTERVIEWER_ADMIN_TOKEN"):
        load_settings(data_dir=tmp_path, admin_token="short")
    assert ADMIN_TOKEN not in repr(load_settings(data_dir=tmp_path, admin_token=ADMIN_TOKEN))
    direct = {"host": "127.0.0.1:7860"}
    with pytest.raises(InputError):
        AdminGate(None, local=False).check(None, direct)  # no token and not local: nobody
    AdminGate(None, local=True).check(None, direct)
    AdminGate(None, local=True).check(None, {"Host": "[::1]:7860"})
    with pytest.raises(InputError):
        AdminGate(None, local=True).check(None, None)  # no request to judge
    with pytest.raises(InputError):
        AdminGate(ADMIN_TOKEN, local=True).check({"token": ADMIN_TOKEN}, direct)
    AdminGate(ADMIN_TOKEN, local=False).check(
        ADMIN_TOKEN, {"host": "interviewer.example", "via": "1.1 nginx"}
    )
