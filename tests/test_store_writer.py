"""One writer per session (the lease in the store), on SQLite and a real PostgreSQL; stored text is repaired on
read; a read-only data dir is named as such, not as a corrupt database."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from interviewer.session import Interview, Ports
from interviewer.store import SessionBusy, SessionStore

from .support.postgres import Postgres, postgres_server

_db_names = (f"writer_test_{i}" for i in itertools.count())
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    with postgres_server() as pg:
        yield pg


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "sessions.sqlite3")
    pg: Postgres = request.getfixturevalue("postgres")
    return pg.create_database(next(_db_names))


def _store(location: str) -> SessionStore:
    return SessionStore(location if "://" in location else Path(location))


def test_a_second_process_cannot_write_a_session_the_first_holds(location: str) -> None:
    first, second = _store(location), _store(location)  # two app processes on one database
    sid = first.create("web:a", "Phone screen", {"rounds": [], "questions": []})
    first.claim(sid)
    first.append(sid, "answered", {"text": "mine"})
    with pytest.raises(SessionBusy, match="another app process"):
        second.claim(sid)
    with pytest.raises(SessionBusy, match="another app process"):
        second.append(sid, "answered", {"text": "a second answer for the same turn"})
    assert [e.payload["text"] for e in second.events(sid)] == ["mine"]  # reading is fine
    first.heartbeat(sid)  # renewing is claiming again
    assert first.writer(sid) is not None and first.writer(sid)[0] == first.writer_id  # type: ignore[index]
    first.release(sid)
    second.claim(sid)
    second.append(sid, "answered", {"text": "now second writes"})
    with pytest.raises(SessionBusy):
        first.append(sid, "answered", {"text": "late"})
    second.close()  # closing releases what it held
    assert first.writer(sid) is None
    first.close()


def test_an_expired_lease_is_taken_over(location: str) -> None:
    dead, alive = _store(location), _store(location)
    sid = dead.create("web:a", "t", {"rounds": [], "questions": []})
    dead.claim(sid, ttl=-1)  # a process that died: its lease is already over
    alive.claim(sid)
    assert alive.writer(sid)[0] == alive.writer_id  # type: ignore[index]
    alive.close()
    dead.close()


def test_two_interviews_on_one_session_store_one_answer(location: str, fixture_bank) -> None:
    a = Interview.start(Ports(bank=fixture_bank, store=_store(location)), ["phone-screen"])
    list(a.advance())
    a.ports.store.claim(a.session_id)
    other = Ports(bank=fixture_bank, store=_store(location))
    b = Interview.resume(other, a.session_id)
    a.submit("the answer from the first process")
    with pytest.raises(SessionBusy):
        b.submit("the answer from the second process")
    answers = [e for e in other.store.events(a.session_id) if e.kind == "answered"]
    assert len(answers) == 1
    a.ports.store.close()
    other.store.close()


def test_stored_lone_surrogates_are_repaired_on_read(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = SessionStore(db)
    sid = store.create("web:a", "t", {"rounds": [], "questions": []})
    store.close()
    # A row written by an older version: the JSON escape of a lone surrogate, stored verbatim.
    engine = create_engine(f"sqlite:///{db}")
    with engine.begin() as c:
        c.execute(
            text("INSERT INTO events(session_id, seq, ts, kind, payload) VALUES (:s, 1, 0, 'answered', :p)"),
            {"s": sid, "p": json.dumps({"text": "bad \ud800 text\u200b", "qid": "q"})},
        )
    engine.dispose()
    events = SessionStore(db).events(sid)
    assert events[0].payload["text"] == "bad  text"
    events[0].payload["text"].encode("utf-8")  # would raise UnicodeEncodeError before the repair


def test_a_new_surrogate_never_reaches_the_database(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    sid = store.create("web:a", "ti\ud800tle", {"rounds": [], "questions": [], "x": "\udfff"})
    store.append(sid, "answered", {"text": "a\ud800b"})
    raw = (tmp_path / "s.db").read_bytes()
    assert b"\\ud800" not in raw and b"\\udfff" not in raw
    assert store.events(sid)[0].payload["text"] == "ab" and store.get(sid).title == "title"


_OPEN = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from interviewer.store import SessionStore
    try:
        SessionStore(Path(sys.argv[1])).check()
        print("OPENED")
    except Exception as e:
        print(type(e).__name__, e)
    """
)


def test_a_read_only_data_dir_is_named_not_called_corrupt() -> None:
    folder = Path(tempfile.mkdtemp(prefix="ro-data-"))
    try:
        db = folder / "sessions.sqlite3"
        store = SessionStore(db)
        store.create("a", "t", {})  # a real database with a session
        store.close()
        for p in folder.iterdir():
            p.chmod(0o644)
        (folder / "sessions.sqlite3.lock").chmod(0o666)
        folder.chmod(0o755)
        if os.geteuid() == 0:  # root writes anywhere: open it as an unprivileged user
            cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        else:
            folder.chmod(0o555)
            cmd = []
        out = subprocess.run(
            [*cmd, sys.executable, "-c", _OPEN, str(db)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd="/",
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        ).stdout
        assert "StoreError" in out and "read-only" in out and "corrupt" not in out, out
        assert str(folder) in out
    finally:
        folder.chmod(0o755)
        for p in folder.iterdir():
            p.unlink()
        folder.rmdir()


def test_a_lease_of_a_killed_process_on_this_machine_is_taken_over_at_once(location: str) -> None:
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=_claim_and_die, args=(location,))
    proc.start()
    proc.join(120)
    store = _store(location)
    sid = store.list()[0].id
    holder = store.writer(sid)
    assert holder is not None and holder[0] != store.writer_id  # its lease is still in the table ...
    store.claim(sid)  # ... but its process is gone, so this one need not wait for the lease to run out
    store.append(sid, "answered", {"text": "after the crash"})
    store.close()


def _claim_and_die(location: str) -> None:
    store = _store(location)
    sid = store.create("web:a", "t", {"rounds": [], "questions": []})
    store.claim(sid)
    os._exit(0)  # no close, no release: as kill -9 leaves it
