"""One deployment for a cohort: PostgreSQL, a Chroma server, two app replicas behind nginx, one model server.

32 scripted candidates run rounds through the proxy while one replica is killed mid-round: no turn is lost or
crossed and every session finishes (the survivors' replica resumes the dead one's sessions from the store).
"""

from __future__ import annotations

import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from interviewer.llm.standin import StandinServer
from interviewer.store import SessionStore

from .conftest import FIXTURE_CONTENT
from .support.app_process import INTERVIEWER, AppProcess, app_env
from .support.candidates import CandidateRun, run_candidate_failover, store_problems
from .support.postgres import postgres_server
from .support.services import chroma_server, nginx_proxy, open_connections

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

CANDIDATES = 32


def test_32_candidates_through_nginx_survive_a_replica_killed_mid_round(tmp_path: Path) -> None:
    with postgres_server() as pg, chroma_server() as chroma, StandinServer(keep_prompts=5000) as model:
        env = {
            "INTERVIEWER_DATABASE_URL": pg.create_database("cohort"),
            "INTERVIEWER_CHROMA_URL": chroma,
            "INTERVIEWER_CONTENT_DIR": str(FIXTURE_CONTENT),
            # Scripted candidates repeat one placeholder answer: the authored whys, in order, so every session
            # has the same number of turns and the kill lands mid-round.
            "INTERVIEWER_LISTEN": "false",
            # One key for the owner tokens of every replica: after a failover the candidate is still themselves.
            "INTERVIEWER_OWNER_SECRET": "cohort-test-owner-secret-" + "x" * 16,
        }
        # The deployment's one-off step: build the study-material index on the Chroma server once.
        subprocess.run(
            [str(INTERVIEWER), "index"],
            env=app_env(tmp_path / "indexer", None, **env),
            check=True,
            capture_output=True,
            timeout=300,
        )
        replicas = [
            AppProcess(tmp_path / f"replica{i}", model.base_url, extra_env=env).start(timeout=240)
            for i in range(2)
        ]
        try:
            with nginx_proxy([r.port for r in replicas]) as url:
                progress: list[int] = []  # a candidate's index per answered turn
                killed = threading.Event()
                at_kill: dict[str, Any] = {}

                def killer() -> None:
                    # Mid-round by the candidates' own count (about a third of the turns are in), not by the model
                    # server's prompts: the truth judge's prompts lag behind, and a kill timed on them once came
                    # after every candidate had finished. The victim is the replica serving more connections at
                    # that moment: the proxy's hashing or a replica it has marked failed can leave one replica
                    # with no candidate, and killing that one would test nothing.
                    deadline = time.monotonic() + 300
                    while len(progress) < CANDIDATES and time.monotonic() < deadline:
                        time.sleep(0.05)
                    conns = [open_connections(r.port) for r in replicas]
                    while max(conns) == 0 and time.monotonic() < deadline:
                        time.sleep(0.01)
                        conns = [open_connections(r.port) for r in replicas]
                    victim = conns.index(max(conns))
                    at_kill.update(
                        unfinished=CANDIDATES - len(finished),
                        turns=len(progress),
                        connections=conns,
                        victim=victim,
                    )
                    replicas[victim].kill9()
                    killed.set()

                finished: set[int] = set()

                def candidate(i: int) -> CandidateRun:
                    run = run_candidate_failover(url, i, progress=progress)
                    finished.add(i)
                    return run

                threading.Thread(target=killer, daemon=True).start()
                with ThreadPoolExecutor(CANDIDATES) as pool:
                    runs = list(pool.map(candidate, range(CANDIDATES)))
                assert killed.is_set()
        finally:
            for r in replicas:
                r.stop()
        errors = [r.error for r in runs if r.error]
        assert errors == [], errors[:3]
        assert all(r.finished for r in runs), [r.idx for r in runs if not r.finished]
        store = SessionStore(env["INTERVIEWER_DATABASE_URL"])
        assert store_problems(store, runs) == []
        assert len({r.session_id for r in runs}) == CANDIDATES
        assert at_kill.get("unfinished", 0) > 0, f"every candidate had finished before the kill: {at_kill}"
        # A candidate of the killed replica fails over on its next request, whether a turn was in flight or not
        # (the page's state lived in the dead replica's memory).
        failovers = sum(getattr(r, "failovers", 0) for r in runs)
        assert failovers > 0, f"the kill hit no candidate: {at_kill}"
        store.close()
        # A shared model server's prefix cache keeps working across replicas: every follow-up prompt about one
        # candidate's question, from whichever replica, starts with the same system message. (The truth judge's
        # prompts about the same answers share their own fixed system message; they are checked apart.)
        judge_marker = '"opposite"'
        judged = [p for p in model.stats.prompts if judge_marker in str(p)]
        assert len({str(p[0]["content"]) for p in judged if p and p[0].get("role") == "system"}) <= 1
        for r in runs:
            mine = [
                p
                for p in model.stats.prompts
                if f"candidate {r.idx} [" in str(p) and judge_marker not in str(p)
            ]
            systems = {str(p[0]["content"]) for p in mine if p and p[0].get("role") == "system"}
            assert mine and len(systems) == 1, (
                f"candidate {r.idx}: {len(systems)} different prompt prefixes:\n" + _difference(systems)
            )


def _difference(texts: set[str]) -> str:
    """The lines that set prompt prefixes apart (what a failure needs to show)."""
    import difflib

    first, *rest = sorted(texts)
    return "\n".join(
        "\n".join(difflib.unified_diff(first.splitlines(), other.splitlines(), lineterm="", n=0))
        for other in rest
    )
