"""The session event log (SQLite): every turn is appended and committed before the next reply is shown.

A session is a row in ``sessions`` plus an ordered list of events. The engine rebuilds its state by
replaying the events, so a process killed at any point resumes at its last completed turn.
"""

from __future__ import annotations

import builtins
import json
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from interviewer.errors import SessionNotFound, StoreError

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    title TEXT NOT NULL,
    status TEXT NOT NULL,
    plan TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    seq INTEGER NOT NULL,
    ts REAL NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX IF NOT EXISTS sessions_owner ON sessions(owner, updated);
"""


@dataclass(frozen=True)
class Event:
    seq: int
    ts: float
    kind: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class SessionRow:
    id: str
    owner: str
    created: float
    updated: float
    title: str
    status: str
    plan: dict[str, Any]


def new_session_id() -> str:
    """An unguessable id (128 random bits); hex, so it never starts with '-' and reads as a CLI option."""
    return secrets.token_hex(16)


class SessionStore:
    """SQLite-backed event log. Thread-safe; one connection per thread.

    The file is created when missing. A file that exists but is not a valid session database is never
    replaced: opening it raises :class:`StoreError` naming the path.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._ready = False

    # -- connection -------------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._open()
            self._local.conn = conn
        return conn

    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            existed = self.path.exists() and self.path.stat().st_size > 0
            conn = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")  # a committed turn survives power loss, not just kill -9
            if existed:
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                if not {"sessions", "events", "meta"} <= tables:
                    raise sqlite3.DatabaseError("missing the sessions/events tables")
                conn.execute("PRAGMA quick_check").fetchone()
            with conn:
                conn.executescript(_SCHEMA)
                conn.execute(
                    "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema', ?)", (str(SCHEMA_VERSION),)
                )
        except sqlite3.DatabaseError as e:
            raise StoreError(
                f"the session database at {self.path} is corrupt or not a session database ({e}). "
                "It was left untouched: move it aside to start a fresh one, or set INTERVIEWER_DATA_DIR"
            ) from e
        except OSError as e:
            raise StoreError(
                f"cannot open the session database at {self.path} ({e.strerror}); "
                "check permissions or set INTERVIEWER_DATA_DIR"
            ) from e
        return conn

    def check(self) -> None:
        """Open (and create if needed) the database now, raising a clear error if it is unusable."""
        self._conn()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        with self._write_lock:
            try:
                with conn:
                    yield conn
            except sqlite3.DatabaseError as e:
                raise StoreError(f"cannot write to {self.path}: {e}") from e

    # -- sessions ---------------------------------------------------------------------------------
    def create(self, owner: str, title: str, plan: dict[str, Any], session_id: str | None = None) -> str:
        sid = session_id or new_session_id()
        now = time.time()
        with self._tx() as c:
            c.execute(
                "INSERT INTO sessions(id, owner, created, updated, title, status, plan) VALUES (?,?,?,?,?,?,?)",
                (sid, owner, now, now, title, "active", json.dumps(plan)),
            )
        return sid

    def get(self, session_id: str, owner: str | None = None) -> SessionRow:
        """The session row; with ``owner`` given, a session of another owner is reported as not found."""
        row = (
            self._conn()
            .execute(
                "SELECT id, owner, created, updated, title, status, plan FROM sessions WHERE id = ?",
                (session_id,),
            )
            .fetchone()
        )
        if row is None or (owner is not None and row[1] != owner):
            raise SessionNotFound(
                f"no session '{session_id}' for this user; list yours with `interviewer sessions`"
            )
        return SessionRow(row[0], row[1], row[2], row[3], row[4], row[5], json.loads(row[6]))

    def list(self, owner: str | None = None, limit: int = 100) -> builtins.list[SessionRow]:
        sql = "SELECT id, owner, created, updated, title, status, plan FROM sessions"
        args: tuple[Any, ...] = ()
        if owner is not None:
            sql += " WHERE owner = ?"
            args = (owner,)
        sql += " ORDER BY updated DESC LIMIT ?"
        rows = self._conn().execute(sql, (*args, limit)).fetchall()
        return [SessionRow(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6])) for r in rows]

    def set_status(self, session_id: str, status: str) -> None:
        with self._tx() as c:
            c.execute(
                "UPDATE sessions SET status = ?, updated = ? WHERE id = ?", (status, time.time(), session_id)
            )

    def update_plan(self, session_id: str, plan: dict[str, Any]) -> None:
        with self._tx() as c:
            c.execute(
                "UPDATE sessions SET plan = ?, updated = ? WHERE id = ?",
                (json.dumps(plan), time.time(), session_id),
            )

    # -- events -----------------------------------------------------------------------------------
    def append(self, session_id: str, kind: str, payload: dict[str, Any], ts: float | None = None) -> Event:
        """Append one event and commit it before returning."""
        ts = time.time() if ts is None else ts
        with self._tx() as c:
            # One statement picks the next seq and writes it: SQLite takes the write lock for the whole
            # statement, so another process appending to the same session cannot take the same number.
            [(seq,)] = c.execute(
                "INSERT INTO events(session_id, seq, ts, kind, payload) "
                "SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ? FROM events WHERE session_id = ? RETURNING seq",
                (session_id, ts, kind, json.dumps(payload), session_id),
            ).fetchall()  # all rows: the statement is finished before the commit
            c.execute("UPDATE sessions SET updated = ? WHERE id = ?", (ts, session_id))
        return Event(seq, ts, kind, payload)

    def events(self, session_id: str) -> builtins.list[Event]:
        rows = (
            self._conn()
            .execute(
                "SELECT seq, ts, kind, payload FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
            )
            .fetchall()
        )
        return [Event(r[0], r[1], r[2], json.loads(r[3])) for r in rows]

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
