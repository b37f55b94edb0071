"""Simulated candidates driving whole rounds through the app's API (gradio_client), and transcript checks."""

from __future__ import annotations

import html
import json
import secrets
import sqlite3
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from interviewer.owners import owner_in


def text_of(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, list):  # Gradio 6 returns message parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


@dataclass
class CandidateRun:
    """What one simulated candidate sent and saw."""

    idx: int
    owner: str = ""
    session_id: str = ""
    sent: list[str] = field(default_factory=list)
    turn_s: list[float] = field(default_factory=list)  # submit -> the app's final reply for that turn
    start_s: float = 0.0
    error: str | None = None
    finished: bool = False


def run_candidate(
    url: str,
    idx: int,
    round_id: str = "phone-screen",
    per_round: int = 1,
    auth: tuple[str, str] | None = None,
    max_turns: int = 40,
) -> CandidateRun:
    """One candidate: start a round, answer every question and both why-levels until the interview ends."""
    from gradio_client import Client

    run = CandidateRun(idx)
    tag = secrets.token_hex(4)
    try:
        client = Client(url, verbose=False, auth=auth)
        t = time.perf_counter()
        _chat, run.owner, status, *_ = client.predict(round_id, per_round, False, None, api_name="/start")
        run.start_s = time.perf_counter() - t
        for n in range(max_turns):
            if "finished" in status:
                run.finished = True
                break
            answer = f"candidate {idx} [{tag}] turn {n}: the bottleneck moves to memory bandwidth, so I measure first."
            t = time.perf_counter()
            _chat, box, status, *_ = client.predict(answer, run.owner, api_name="/send")
            run.turn_s.append(time.perf_counter() - t)
            run.sent.append(answer)
            if box:  # the app kept the text: the answer was refused
                raise AssertionError(f"answer refused: {status}")
        run.finished = "finished" in status
        rows = client.predict(run.owner, api_name="/sessions")["data"]
        run.session_id = rows[0][0]
    except Exception as e:  # a load run counts errors rather than stopping at the first
        run.error = f"{type(e).__name__}: {e}"
    return run


def run_many(url: str, n: int, **kw: Any) -> tuple[list[CandidateRun], float]:
    """``n`` candidates at once; returns their runs and the wall time."""
    t = time.perf_counter()
    with ThreadPoolExecutor(n) as pool:
        runs = list(pool.map(lambda i: run_candidate(url, i, **kw), range(n)))
    return runs, time.perf_counter() - t


def stored_answers(db: Path, session_id: str) -> tuple[str, list[str]]:
    """The owner and the candidate answers stored for a session, read straight from SQLite."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        (owner,) = con.execute("SELECT owner FROM sessions WHERE id = ?", (session_id,)).fetchone()
        rows = con.execute(
            "SELECT payload FROM events WHERE session_id = ? AND kind = 'answered' ORDER BY seq",
            (session_id,),
        ).fetchall()
    finally:
        con.close()
    return owner, [json.loads(r[0])["text"] for r in rows]


def transcript_problems(db: Path, runs: list[CandidateRun]) -> list[str]:
    """Lost, reordered or crossed turns: each session must hold exactly what its own client sent."""
    problems = []
    seen: set[str] = set()
    for r in runs:
        if r.error or not r.session_id:
            continue
        if r.session_id in seen:
            problems.append(f"candidate {r.idx}: session {r.session_id} shared with another candidate")
        seen.add(r.session_id)
        owner, answers = stored_answers(db, r.session_id)
        if owner != owner_in(r.owner):  # the browser keeps a signed token naming the owner
            problems.append(f"candidate {r.idx}: session owned by {owner}, not {r.owner}")
        if answers != r.sent:
            problems.append(
                f"candidate {r.idx}: stored {len(answers)} answers != sent {len(r.sent)} (or differ)"
            )
    return problems


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def run_candidate_failover(
    url: str,
    idx: int,
    round_id: str = "phone-screen",
    per_round: int = 1,
    max_turns: int = 40,
    attempts: int = 10,
    progress: list[int] | None = None,
) -> CandidateRun:
    """A candidate behind a proxy: when its replica dies mid-turn it reconnects, reopens its session (any
    replica can, from the shared store) and carries on; an answer that was already stored is not sent twice.

    ``progress``, when given, gets the candidate's index appended after each answered turn (for a test that
    acts mid-round)."""
    from gradio_client import Client

    run = CandidateRun(idx)
    tag = secrets.token_hex(4)
    run.failovers = 0  # type: ignore[attr-defined]

    def reopen() -> tuple[Any, list[str], str]:
        last: Exception | None = None
        for attempt in range(attempts):
            try:
                client = Client(url, verbose=False)
                chat, status, *_ = client.predict(run.session_id, run.owner, api_name="/reopen")
                # The chat shows candidate text inert (HTML-escaped, brackets as entities): compare what was typed.
                said = [html.unescape(text_of(m)) for m in chat if m["role"] == "user"]
                return client, said, status
            except Exception as e:  # the proxy may still be routing to the dead replica
                last = e
                time.sleep(0.5 * (attempt + 1))
        raise RuntimeError(f"could not reopen {run.session_id}: {last}")

    def start() -> tuple[Any, str]:
        # A start whose replica dies before the page has its session is what a person meets as a failed page: they
        # press Start again and get a fresh session (any one the dead replica stored is simply never reopened).
        last: Exception | None = None
        for attempt in range(attempts):
            try:
                client = Client(url, verbose=False)
                t = time.perf_counter()
                _chat, owner, status, *_ = client.predict(round_id, per_round, False, None, api_name="/start")
                run.start_s = time.perf_counter() - t
                run.session_id = client.predict(owner, api_name="/sessions")["data"][0][0]
                run.owner = owner
                return client, status
            except Exception as e:
                last = e
                run.failovers += 1  # type: ignore[attr-defined]
                time.sleep(0.5 * (attempt + 1))
        raise RuntimeError(f"could not start: {type(last).__name__}: {last}")

    try:
        client, status = start()
        n = 0
        while n < max_turns and "finished" not in status:
            answer = f"candidate {idx} [{tag}] turn {n}: the bottleneck moves to memory bandwidth, so I measure first."
            t = time.perf_counter()
            try:
                _chat, box, status, *_ = client.predict(answer, run.owner, api_name="/send")
                if box:
                    raise AssertionError(f"answer refused: {status}")
            except AssertionError:
                raise
            except Exception:
                run.failovers += 1  # type: ignore[attr-defined]
                client, said, status = reopen()
                if not said or said[-1] != answer:
                    continue  # the answer never reached the store: send it again on the new replica
            run.turn_s.append(time.perf_counter() - t)
            run.sent.append(answer)
            n += 1
            if progress is not None:
                progress.append(idx)
        run.finished = "finished" in status
    except Exception as e:  # a load run counts errors rather than stopping at the first
        run.error = f"{type(e).__name__}: {e}"
    return run


def store_problems(store: Any, runs: list[CandidateRun]) -> list[str]:
    """Like :func:`transcript_problems`, read through a SessionStore (SQLite or PostgreSQL)."""
    problems = []
    seen: set[str] = set()
    for r in runs:
        if r.error or not r.session_id:
            problems.append(f"candidate {r.idx}: {r.error or 'no session'}")
            continue
        if r.session_id in seen:
            problems.append(f"candidate {r.idx}: session {r.session_id} shared with another candidate")
        seen.add(r.session_id)
        row = store.get(r.session_id)
        answers = [e.payload["text"] for e in store.events(r.session_id) if e.kind == "answered"]
        if row.owner != owner_in(r.owner):  # the browser keeps a signed token naming the owner
            problems.append(f"candidate {r.idx}: session owned by {row.owner}, not {r.owner}")
        if answers != r.sent:
            problems.append(f"candidate {r.idx}: stored {answers!r} != sent {r.sent!r}")
    return problems
