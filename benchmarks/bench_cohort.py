"""A cohort on one deployment: turns per second and turn latency through nginx, 1 and 2 app replicas.

Starts PostgreSQL (a throwaway cluster), a Chroma server, the stand-in model server (80 ms to first token, so
the figures are the app's own cost), N `interviewer serve` replicas on the shared database and nginx with
deploy/nginx.conf in front; then runs 8, 32 and 64 scripted candidates at once (each a phone-screen round of
one question: answer, why 1, why 2) through the proxy and checks every transcript in the database.

Run: .venv/bin/python benchmarks/bench_cohort.py [--n 8 32 64] [--replicas 1 2]
"""

from __future__ import annotations

import argparse
import os
import secrets
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from interviewer.llm.standin import StandinServer
from interviewer.store import SessionStore
from tests.support.app_process import INTERVIEWER, AppProcess, app_env
from tests.support.candidates import pct, run_candidate_failover, store_problems
from tests.support.postgres import postgres_server
from tests.support.services import chroma_server, nginx_proxy

FIXTURE_CONTENT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "content"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[8, 32, 64])
    ap.add_argument("--replicas", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    print(f"$ {shlex.join([sys.executable, *sys.argv])}")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    rows = []
    failed = False
    with postgres_server() as pg, chroma_server() as chroma, StandinServer() as model:
        for n_rep in args.replicas:
            with tempfile.TemporaryDirectory() as d:
                env = {
                    "INTERVIEWER_DATABASE_URL": pg.create_database(f"bench_{n_rep}"),
                    "INTERVIEWER_CHROMA_URL": chroma,
                    "INTERVIEWER_CONTENT_DIR": str(FIXTURE_CONTENT),
                    "INTERVIEWER_LISTEN": "false",  # scripted placeholder answers: the authored whys
                    "INTERVIEWER_OWNER_SECRET": secrets.token_hex(24),  # shared by the replicas
                }
                subprocess.run(
                    [str(INTERVIEWER), "index"],
                    env=app_env(Path(d) / "indexer", None, **env),
                    check=True,
                    capture_output=True,
                    timeout=300,
                )
                reps = [
                    AppProcess(Path(d) / f"r{i}", model.base_url, extra_env=env).start(timeout=300)
                    for i in range(n_rep)
                ]
                try:
                    with nginx_proxy([r.port for r in reps]) as url:
                        with ThreadPoolExecutor(n_rep * 2) as pool:  # warm every replica's scorer first
                            list(pool.map(lambda i: run_candidate_failover(url, -1 - i), range(n_rep * 2)))
                        for n in args.n:
                            t = time.perf_counter()
                            with ThreadPoolExecutor(n) as pool:
                                runs = list(pool.map(lambda i: run_candidate_failover(url, i), range(n)))
                            wall = time.perf_counter() - t
                            follow = [s * 1000 for r in runs for s in r.turn_s[:2]]
                            scored = [s * 1000 for r in runs for s in r.turn_s[2:]]
                            turns = sum(len(r.turn_s) for r in runs)
                            store = SessionStore(env["INTERVIEWER_DATABASE_URL"])
                            problems = store_problems(store, runs)
                            store.close()
                            failed |= bool(problems)
                            rows.append(
                                (
                                    n_rep,
                                    n,
                                    turns,
                                    len(problems),
                                    statistics.median(follow),
                                    pct(follow, 95),
                                    statistics.median(scored),
                                    pct(scored, 95),
                                    turns / wall,
                                )
                            )
                            for p in problems[:3]:
                                print(f"  replicas={n_rep} n={n}: {p}")
                finally:
                    for r in reps:
                        r.stop()
    print(
        "\n| replicas | candidates | turns | lost/crossed/errors | follow-up turn p50 ms | p95 ms "
        "| scored turn p50 ms | p95 ms | turns/s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:.0f} | {r[5]:.0f} | {r[6]:.0f} | {r[7]:.0f} | {r[8]:.2f} |"
        )
    print(f"load average {os.getloadavg()[0]:.1f} at end")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
