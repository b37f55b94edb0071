"""The session store's contract, run against both backends: SQLite (the default) and a real PostgreSQL server.

Same event-log semantics on both: an event is committed before append returns; seq is unique and gapless per
session, also with writers in several processes; a new store (another process, another replica) sees it all;
an interview resumes from the store alone.
"""

from __future__ import annotations

import itertools
import multiprocessing
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from interviewer.config import Settings
from interviewer.content import load_bank
from interviewer.errors import SessionNotFound, StoreError
from interviewer.session import Interview, Ports
from interviewer.store import SessionStore

from .conftest import FIXTURE_CONTENT
from .support.postgres import Postgres, postgres_server

_db_names = (f"store_test_{i}" for i in itertools.count())


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    with postgres_server() as pg:
        yield pg


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database of each kind (a new PostgreSQL database per test)."""
    if request.param == "sqlite":
        return str(tmp_path / "sessions.sqlite3")
    pg: Postgres = request.getfixturevalue("postgres")
    return pg.create_database(next(_db_names))


def _store(location: str) -> SessionStore:
    return SessionStore(location if "://" in location else Path(location))


def test_sessions_are_created_listed_and_kept_per_owner(location: str) -> None:
    store = _store(location)
    a = store.create("alice", "Phone screen", {"rounds": ["phone-screen"], "questions": ["q1"]})
    b = store.create("bob", "C++", {"rounds": ["cpp-systems"], "questions": []})
    store.append(a, "asked", {"text": "Why? — ünïcode ✓ 🙂"})
    assert store.get(a).plan == {"rounds": ["phone-screen"], "questions": ["q1"]}
    assert store.get(a, owner="alice").title == "Phone screen"
    with pytest.raises(SessionNotFound):
        store.get(a, owner="bob")
    with pytest.raises(SessionNotFound):
        store.get("no-such-session")
    assert [r.id for r in store.list()] == [a, b]  # a was updated last
    assert [r.id for r in store.list(owner="bob")] == [b]
    store.set_status(b, "paused")
    store.update_plan(b, {"rounds": ["cpp-systems"], "questions": ["q9"]})
    again = _store(location)  # another process or replica
    assert again.get(b).status == "paused" and again.get(b).plan["questions"] == ["q9"]
    assert again.events(a)[0].payload == {"text": "Why? — ünïcode ✓ 🙂"}
    store.close()
    again.close()


def test_every_event_is_committed_in_order_with_a_gapless_seq(location: str) -> None:
    store = _store(location)
    sid = store.create("me", "t", {})
    for i in range(25):
        ev = store.append(sid, "note", {"i": i}, ts=1000.0 + i)
        assert ev.seq == i + 1
    other = _store(location)
    events = other.events(sid)
    assert [e.seq for e in events] == list(range(1, 26))
    assert [e.payload["i"] for e in events] == list(range(25)) and events[-1].ts == 1024.0
    assert other.get(sid).updated == 1024.0
    store.close()
    other.close()


def _append_many(location: str, sid: str, who: str, n: int) -> None:
    store = _store(location)
    for i in range(n):
        store.append(sid, "note", {"who": who, "i": i})
    store.close()


def test_two_processes_appending_to_one_session_never_collide(location: str) -> None:
    store = _store(location)
    sid = store.create("me", "two writers", {"rounds": []})
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(location, sid, who, 300)) for who in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(180)
    assert [p.exitcode for p in procs] == [0, 0]  # a seq collision raised StoreError in one of them
    events = store.events(sid)
    assert [e.seq for e in events] == list(range(1, 601))
    for who in ("a", "b"):  # each writer's events are all there, in its own order
        assert [e.payload["i"] for e in events if e.payload["who"] == who] == list(range(300))
    store.close()


def test_an_interview_resumes_from_the_store_alone(location: str) -> None:
    bank = load_bank(FIXTURE_CONTENT)
    it = Interview.start(Ports(bank=bank, store=_store(location), owner="cand"), ["phone-screen"], seed=3)
    first = it.advance_all()
    it.submit("My answer to the first question.")
    it.advance_all()
    # The process (or its replica) dies; another opens the same database and carries on.
    again = Interview.resume(Ports(bank=bank, store=_store(location), owner="cand"), it.session_id)
    assert again.state.turns[0].text == first
    assert again.state.answers == it.state.answers and again.level == it.level == 1
    assert again.awaiting == "candidate"
    with pytest.raises(SessionNotFound):
        Interview.resume(Ports(bank=bank, store=_store(location), owner="someone-else"), it.session_id)


def test_the_schema_is_managed_by_alembic(location: str) -> None:
    from sqlalchemy import create_engine, inspect, text

    store = _store(location)
    store.check()
    url = store.url
    engine = create_engine(url)
    with engine.connect() as c:
        assert {"sessions", "events", "meta", "writers", "alembic_version"} <= set(
            inspect(c).get_table_names()
        )
        assert c.execute(text("SELECT version_num FROM alembic_version")).scalar_one() == "0002"
    engine.dispose()
    store.close()


def test_a_database_from_the_sqlite_only_store_is_adopted_with_its_sessions(tmp_path: Path) -> None:
    """Schema version 1 (before Alembic): tables exist, no alembic_version. It is stamped, not recreated."""
    db = tmp_path / "sessions.sqlite3"
    conn = sqlite3.connect(db)
    conn.executescript(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE sessions (id TEXT PRIMARY KEY, owner TEXT NOT NULL, created REAL NOT NULL,
            updated REAL NOT NULL, title TEXT NOT NULL, status TEXT NOT NULL, plan TEXT NOT NULL);
        CREATE TABLE events (session_id TEXT NOT NULL REFERENCES sessions(id), seq INTEGER NOT NULL,
            ts REAL NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL, PRIMARY KEY (session_id, seq));
        CREATE INDEX sessions_owner ON sessions(owner, updated);
        INSERT INTO meta VALUES ('schema', '1');
        INSERT INTO sessions VALUES ('old', 'local', 1.0, 2.0, 'Old round', 'completed', '{"rounds": []}');
        INSERT INTO events VALUES ('old', 1, 2.0, 'asked', '{"text": "hi"}');
        """
    )
    conn.commit()
    conn.close()
    store = SessionStore(db)
    assert store.get("old").title == "Old round" and store.events("old")[0].payload == {"text": "hi"}
    assert store.append("old", "note", {}).seq == 2
    store.close()


def test_an_unreachable_postgres_names_the_url_without_the_password(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nobody listens here once the socket closes
    store = SessionStore(f"postgresql+psycopg://me:s3cret@127.0.0.1:{port}/interviewer?connect_timeout=2")
    with pytest.raises(StoreError) as e:
        store.check()
    assert f"127.0.0.1:{port}" in str(e.value) and "s3cret" not in str(e.value)
    assert "INTERVIEWER_DATABASE_URL" in str(e.value)


def test_the_database_url_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert Settings(data_dir=tmp_path).store_location == tmp_path / "sessions.sqlite3"
    monkeypatch.setenv("INTERVIEWER_DATABASE_URL", "postgresql://u:p@db:5432/interviewer")
    s = Settings(data_dir=tmp_path)
    assert s.database_url == "postgresql+psycopg://u:p@db:5432/interviewer" == s.store_location
    from interviewer.config import load_settings
    from interviewer.errors import ConfigError

    monkeypatch.setenv("INTERVIEWER_DATABASE_URL", "mysql://x")
    with pytest.raises(ConfigError, match="INTERVIEWER_DATABASE_URL"):
        load_settings()
