"""The session store under writers in more than one process (two `interviewer` processes on one data dir)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from interviewer.store import SessionStore


def _append_many(db: str, sid: str, who: str, n: int) -> None:
    store = SessionStore(Path(db))
    for i in range(n):
        store.append(sid, "note", {"who": who, "i": i})
    store.close()


def test_two_processes_appending_to_one_session_never_collide(tmp_path: Path) -> None:
    db = tmp_path / "sessions.sqlite3"
    store = SessionStore(db)
    sid = store.create("me", "two writers", {"rounds": []})
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(str(db), sid, who, 400)) for who in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]  # a seq collision raised StoreError in one of them
    events = store.events(sid)
    assert [e.seq for e in events] == list(range(1, 801))
    for who in ("a", "b"):  # each writer's events are all there, in its own order
        assert [e.payload["i"] for e in events if e.payload["who"] == who] == list(range(400))
    store.close()
