"""The session event log: every turn is appended and committed before the next reply is shown.

A session is a row in ``sessions`` plus an ordered list of events. The engine rebuilds its state by
replaying the events, so a process killed at any point resumes at its last completed turn.

The store is SQLAlchemy Core over SQLite (the default: one file in the data dir) or PostgreSQL
(``INTERVIEWER_DATABASE_URL=postgresql+psycopg://user:pass@host/db``, for several app replicas sharing one
database). Its schema is versioned with Alembic (``interviewer/migrations``); a store brings its database up
to the current revision when it opens it. Semantics on both:

- an event is committed before :meth:`SessionStore.append` returns;
- ``seq`` is unique and gapless per session, even with writers in several processes or replicas (SQLite's
  write lock, PostgreSQL's row lock on the session, then one ``INSERT ... SELECT max + 1`` statement).
"""

from __future__ import annotations

import builtins
import contextlib
import fcntl
import json
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    create_engine,
    event,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from interviewer.errors import SessionNotFound, StoreError
from interviewer.text import clean, clean_tree

if TYPE_CHECKING:
    from alembic.config import Config

SCHEMA_VERSION = 1
MIGRATIONS = Path(__file__).with_name("migrations")
BASELINE = "0001"  # the revision whose tables the SQLite-only store (schema version 1) created

METADATA = MetaData()
meta_table = Table(
    "meta", METADATA, Column("key", Text, primary_key=True), Column("value", Text, nullable=False)
)
sessions = Table(
    "sessions",
    METADATA,
    Column("id", Text, primary_key=True),
    Column("owner", Text, nullable=False),
    Column("created", Float, nullable=False),
    Column("updated", Float, nullable=False),
    Column("title", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("plan", Text, nullable=False),
    Index("sessions_owner", "owner", "updated"),
)
events_table = Table(
    "events",
    METADATA,
    Column("session_id", Text, ForeignKey("sessions.id"), primary_key=True),
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("ts", Float, nullable=False),
    Column("kind", Text, nullable=False),
    Column("payload", Text, nullable=False),
)

writers = Table(
    "writers",
    METADATA,
    Column("session_id", Text, primary_key=True),
    Column("holder", Text, nullable=False),
    Column("expires", Float, nullable=False),
)
WRITER_LEASE_SECONDS = 90.0  # a writer that stops renewing (killed, hung) frees its sessions after this


class SessionBusy(StoreError):
    """Another process holds the session's writer lease."""


_APPEND = text(
    "INSERT INTO events(session_id, seq, ts, kind, payload) "
    "SELECT :sid, COALESCE(MAX(seq), 0) + 1, :ts, :kind, :payload FROM events WHERE session_id = :sid "
    "RETURNING seq"
)
_COLUMNS = (
    sessions.c.id,
    sessions.c.owner,
    sessions.c.created,
    sessions.c.updated,
    sessions.c.title,
    sessions.c.status,
    sessions.c.plan,
)


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


def _row(r: Any) -> SessionRow:
    # Rows written before text was normalised at the boundary are repaired here (a lone surrogate, NUL).
    return SessionRow(r[0], r[1], r[2], r[3], clean(r[4]), r[5], clean_tree(json.loads(r[6])))


class SessionStore:
    """The event log over SQLite (a path) or any SQLAlchemy URL (PostgreSQL). Thread-safe.

    The constructor does no I/O. A SQLite file that exists but is not a valid session database is never
    replaced: opening it raises :class:`StoreError` naming the path.
    """

    def __init__(self, location: Path | str) -> None:
        self.url: URL
        self.path: Path | None
        if isinstance(location, str) and "://" in location:
            try:
                self.url = make_url(location)
            except ArgumentError as e:
                raise StoreError(
                    f"INTERVIEWER_DATABASE_URL is not a database URL ({e}); "
                    "e.g. postgresql+psycopg://user:password@host:5432/interviewer"
                ) from e
            self.path = (
                Path(self.url.database)
                if self.url.get_backend_name() == "sqlite" and self.url.database
                else None
            )
        else:
            self.path = Path(location)
            self.url = URL.create("sqlite", database=str(self.path))
        self._engine_: Engine | None = None
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()  # SQLite: one writer per process at a time (no busy waits)
        # This store's name as a session writer: one per process (or per store object in tests).
        self.writer_id = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._held: set[str] = set()

    # -- connection -------------------------------------------------------------------------------
    @property
    def is_sqlite(self) -> bool:
        return self.url.get_backend_name() == "sqlite"

    @property
    def where(self) -> str:
        """Where the sessions live, for messages (the password is never shown)."""
        return (
            str(self.path) if self.is_sqlite and self.path else self.url.render_as_string(hide_password=True)
        )

    def _engine(self) -> Engine:
        if self._engine_ is not None:
            return self._engine_
        with self._lock:
            if self._engine_ is None:
                self._engine_ = self._open()
            return self._engine_

    def _open(self) -> Engine:
        if self.is_sqlite:
            return self._open_sqlite()
        try:
            engine = create_engine(self.url, pool_pre_ping=True, pool_size=5, max_overflow=10)
            with engine.connect() as conn:
                self._migrate(conn)
                conn.commit()
        except SQLAlchemyError as e:
            raise StoreError(
                f"cannot use the session database at {self.where} ({_reason(e)}); start it, check the "
                "user's rights, or fix INTERVIEWER_DATABASE_URL"
            ) from e
        return engine

    def _open_sqlite(self) -> Engine:
        assert self.path is not None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            existed = self.path.exists() and self.path.stat().st_size > 0
            if _read_only(self.path, OSError()):  # found now, not at the first answer
                raise StoreError(_read_only_message(self.path, "no write permission"))
            engine = create_engine(self.url, connect_args={"timeout": 30, "check_same_thread": False})

            @event.listens_for(engine, "connect")
            def _pragmas(dbapi_conn: Any, _record: Any) -> None:
                cur = dbapi_conn.cursor()
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute(
                    "PRAGMA synchronous=FULL"
                )  # a committed turn survives power loss, not just kill -9
                cur.close()

            # Two processes opening a fresh data dir at once must not both create the tables.
            with _file_lock(self.path.with_name(self.path.name + ".lock")), engine.connect() as conn:
                if existed:
                    tables = set(inspect(conn).get_table_names())
                    if not {"sessions", "events", "meta"} <= tables:
                        raise StoreError(
                            f"the session database at {self.path} is corrupt or not a session database "
                            "(missing the sessions/events tables). It was left untouched: move it aside to "
                            "start a fresh one, or set INTERVIEWER_DATA_DIR"
                        )
                    conn.exec_driver_sql("PRAGMA quick_check").fetchone()
                self._migrate(conn)
                conn.commit()
        except StoreError:
            raise
        except SQLAlchemyError as e:
            if _read_only(self.path, e):
                raise StoreError(_read_only_message(self.path, _reason(e))) from e
            raise StoreError(
                f"the session database at {self.path} is corrupt or not a session database ({_reason(e)}). "
                "It was left untouched: move it aside to start a fresh one, or set INTERVIEWER_DATA_DIR"
            ) from e
        except OSError as e:
            if _read_only(self.path, e):
                raise StoreError(_read_only_message(self.path, e.strerror or str(e))) from e
            raise StoreError(
                f"cannot open the session database at {self.path} ({e.strerror}); "
                "check permissions or set INTERVIEWER_DATA_DIR"
            ) from e
        return engine

    def _migrate(self, conn: Connection) -> None:
        """Bring the schema to Alembic's head (a database of the SQLite-only store is stamped first)."""
        from alembic import command

        if not self.is_sqlite:  # replicas starting together: one migrates, the others wait for it
            conn.execute(text("SELECT pg_advisory_xact_lock(727501)"))
        tables = set(inspect(conn).get_table_names())
        cfg = _alembic_config(conn)
        if "alembic_version" not in tables and {"sessions", "events", "meta"} <= tables:
            command.stamp(cfg, BASELINE)
        command.upgrade(cfg, "head")

    def check(self) -> None:
        """Open (and create if needed) the database now, raising a clear error if it is unusable."""
        self._engine()

    @contextlib.contextmanager
    def _tx(self) -> Iterator[Connection]:
        engine = self._engine()
        lock = self._write_lock if self.is_sqlite else contextlib.nullcontext()
        with lock:
            try:
                with engine.begin() as conn:
                    yield conn
            except SQLAlchemyError as e:
                raise StoreError(f"cannot write to the session database at {self.where}: {_reason(e)}") from e

    def _read(self, stmt: Any, params: dict[str, Any] | None = None) -> builtins.list[Any]:
        try:
            with self._engine().connect() as conn:
                return list(conn.execute(stmt, params or {}).fetchall())
        except SQLAlchemyError as e:
            raise StoreError(f"cannot read the session database at {self.where}: {_reason(e)}") from e

    # -- sessions ---------------------------------------------------------------------------------
    def create(self, owner: str, title: str, plan: dict[str, Any], session_id: str | None = None) -> str:
        sid = session_id or new_session_id()
        now = time.time()
        with self._tx() as c:
            c.execute(
                sessions.insert().values(
                    id=sid,
                    owner=owner,
                    created=now,
                    updated=now,
                    title=clean(title),
                    status="active",
                    plan=json.dumps(clean_tree(plan)),
                )
            )
        return sid

    def get(self, session_id: str, owner: str | None = None) -> SessionRow:
        """The session row; with ``owner`` given, a session of another owner is reported as not found."""
        rows = self._read(select(*_COLUMNS).where(sessions.c.id == session_id))
        if not rows or (owner is not None and rows[0][1] != owner):
            raise SessionNotFound(
                f"no session '{session_id}' for this user; list yours with `interviewer sessions`"
            )
        return _row(rows[0])

    def list(self, owner: str | None = None, limit: int = 100) -> builtins.list[SessionRow]:
        stmt = select(*_COLUMNS)
        if owner is not None:
            stmt = stmt.where(sessions.c.owner == owner)
        stmt = stmt.order_by(sessions.c.updated.desc()).limit(limit)
        return [_row(r) for r in self._read(stmt)]

    def set_status(self, session_id: str, status: str) -> None:
        with self._tx() as c:
            c.execute(
                update(sessions).where(sessions.c.id == session_id).values(status=status, updated=time.time())
            )

    def update_plan(self, session_id: str, plan: dict[str, Any]) -> None:
        with self._tx() as c:
            c.execute(
                update(sessions)
                .where(sessions.c.id == session_id)
                .values(plan=json.dumps(clean_tree(plan)), updated=time.time())
            )

    # -- events -----------------------------------------------------------------------------------
    def append(self, session_id: str, kind: str, payload: dict[str, Any], ts: float | None = None) -> Event:
        """Append one event and commit it before returning."""
        ts = time.time() if ts is None else ts
        payload = clean_tree(payload)  # text at the boundary: nothing unencodable is ever stored
        with self._tx() as c:
            if not self.is_sqlite:
                # Appenders to one session queue on its row; the INSERT's snapshot then sees the last seq.
                c.execute(select(sessions.c.id).where(sessions.c.id == session_id).with_for_update())
            self._check_writer(c, session_id)
            # SQLite takes its write lock for the whole statement, so another process appending to the same
            # session cannot take the same number either.
            seq = int(
                c.execute(
                    _APPEND, {"sid": session_id, "ts": ts, "kind": kind, "payload": json.dumps(payload)}
                ).scalar_one()
            )
            c.execute(update(sessions).where(sessions.c.id == session_id).values(updated=ts))
        return Event(seq, ts, kind, payload)

    def events(self, session_id: str) -> builtins.list[Event]:
        rows = self._read(
            select(events_table.c.seq, events_table.c.ts, events_table.c.kind, events_table.c.payload)
            .where(events_table.c.session_id == session_id)
            .order_by(events_table.c.seq)
        )
        return [Event(r[0], r[1], r[2], clean_tree(json.loads(r[3]))) for r in rows]

    # -- the writer lease -------------------------------------------------------------------------
    def claim(self, session_id: str, ttl: float = WRITER_LEASE_SECONDS) -> None:
        """Become the session's only writer for ``ttl`` seconds (renewing is claiming again).

        Raises :class:`SessionBusy` while another process (another store) holds a live lease: two app
        processes on one data dir must not both store an answer for the same turn, or score it twice.
        """
        now = time.time()
        with self._tx() as c:
            renewed = c.execute(
                update(writers)
                .where(writers.c.session_id == session_id)
                .where((writers.c.holder == self.writer_id) | (writers.c.expires < now))
                .values(holder=self.writer_id, expires=now + ttl)
            ).rowcount
            if not renewed:
                dead = self._dead_holder(c, session_id)
                if dead is not None:  # its process is gone (kill -9 on this machine): no need to wait
                    renewed = c.execute(
                        update(writers)
                        .where(writers.c.session_id == session_id)
                        .where(writers.c.holder == dead)
                        .values(holder=self.writer_id, expires=now + ttl)
                    ).rowcount
            if not renewed:
                inserted = c.execute(
                    text(
                        "INSERT INTO writers(session_id, holder, expires) VALUES (:sid, :holder, :expires) "
                        "ON CONFLICT (session_id) DO NOTHING"
                    ),
                    {"sid": session_id, "holder": self.writer_id, "expires": now + ttl},
                ).rowcount
                if not inserted:
                    self._check_writer(c, session_id)
        self._held.add(session_id)

    heartbeat = claim

    def release(self, session_id: str) -> None:
        """Stop being the session's writer (another process may claim it at once)."""
        with self._tx() as c:
            c.execute(
                writers.delete()
                .where(writers.c.session_id == session_id)
                .where(writers.c.holder == self.writer_id)
            )
        self._held.discard(session_id)

    def writer(self, session_id: str) -> tuple[str, float] | None:
        """The live lease on a session: (holder, expires), or None when nobody holds one."""
        rows = self._read(
            select(writers.c.holder, writers.c.expires).where(writers.c.session_id == session_id)
        )
        if not rows or rows[0][1] < time.time():
            return None
        return str(rows[0][0]), float(rows[0][1])

    def _dead_holder(self, c: Connection, session_id: str) -> str | None:
        """The session's holder if it is a process on this machine that no longer exists."""
        row = c.execute(select(writers.c.holder).where(writers.c.session_id == session_id)).first()
        if row is None or row[0] == self.writer_id:
            return None
        host, _, rest = str(row[0]).partition(":")
        pid = rest.partition(":")[0]
        if host != socket.gethostname() or not pid.isdigit():
            return None
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return str(row[0])
        except OSError:  # it exists (another user's): alive
            return None
        return None

    def _check_writer(self, c: Connection, session_id: str) -> None:
        row = c.execute(
            select(writers.c.holder, writers.c.expires).where(writers.c.session_id == session_id)
        ).first()
        if (
            row is not None
            and row[0] != self.writer_id
            and row[1] >= time.time()
            and self._dead_holder(c, session_id) is None
        ):
            host, _, rest = str(row[0]).partition(":")
            pid = rest.partition(":")[0]
            raise SessionBusy(
                f"this interview is open in another app process (pid {pid} on {host}): continue it there, "
                f"or close that one; its hold ends {int(row[1] - time.time()) + 1} s after its last turn"
            )

    def close(self) -> None:
        for sid in list(self._held):
            with contextlib.suppress(StoreError):
                self.release(sid)
        with self._lock:
            if self._engine_ is not None:
                self._engine_.dispose()
                self._engine_ = None


def _reason(e: SQLAlchemyError) -> str:
    orig = getattr(e, "orig", None)
    return str(orig or e).strip().splitlines()[0]


def _read_only(path: Path, e: BaseException) -> bool:
    """Whether opening failed because the data dir or the database file cannot be written."""
    reason = str(getattr(e, "orig", None) or e).lower()
    if any(w in reason for w in ("readonly", "read-only", "read only")):
        return True
    if isinstance(e, OSError) and e.errno in (13, 30):  # EACCES, EROFS
        return True
    folder = path.parent
    return (folder.exists() and not os.access(folder, os.W_OK)) or (
        path.exists() and not os.access(path, os.W_OK)
    )


def _read_only_message(path: Path, reason: str) -> str:
    return (
        f"the session database at {path} cannot be written: its folder {path.parent} or the file is "
        f"read-only for this user ({reason}). Nothing is wrong with the database: make the folder writable "
        "(it also needs room for the -wal and -shm files), or set INTERVIEWER_DATA_DIR to a writable folder"
    )


def _alembic_config(conn: Connection) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = conn
    return cfg


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
