"""Load: N simulated candidates at once, each driving whole rounds through the app's API (gradio_client).

The app is ``interviewer serve`` (a subprocess, as the README starts it) against the stand-in OpenAI-compatible
server (interviewer/llm/standin.py), which answers at once, so what is measured is the app itself. Every
candidate starts a phone-screen round of one question and answers it and both why-levels; afterwards each
session's stored transcript (SQLite) must equal exactly what its own client sent: no lost or crossed turns.

Columns: candidates; turns; errors; lost/crossed; follow-up turn p50/p95 (submit to the app's last output for
a turn answered by a model follow-up: the stand-in takes no time, so this is the app's overhead); scored turn
p50/p95 (the last answer of a question: rubric scoring with the embedding model runs before the next question);
/start p50; throughput (turns/s over the run); app CPU (% of one core, averaged over the run) and peak RSS.
Run: .venv/bin/python benchmarks/bench_load.py [--n 8 16 32]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from interviewer.llm.standin import StandinServer  # noqa: E402
from tests.support.app_process import AppProcess, free_port  # noqa: E402
from tests.support.candidates import pct, run_candidate, run_many, transcript_problems  # noqa: E402


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and its children so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[8, 16, 32])
    args = ap.parse_args()
    print(f"$ {shlex.join([sys.executable, *sys.argv])}")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    rows = []
    with StandinServer() as srv, tempfile.TemporaryDirectory() as d:
        extra = {"INTERVIEWER_CHROMA_URL": f"http://127.0.0.1:{free_port()}"}  # no minutes-long index build
        app = AppProcess(Path(d), srv.base_url, extra_env=extra).start(timeout=300)
        try:
            warm = run_candidate(app.url, -1)  # loads the scorer's embedding model once, outside the figures
            if warm.error:
                raise SystemExit(f"warm-up candidate failed: {warm.error}")
            assert app.proc is not None
            for n in args.n:
                cpu0 = _cpu_s(app.proc.pid)
                runs, wall = run_many(app.url, n, round_id="phone-screen", per_round=1)
                cpu = (_cpu_s(app.proc.pid) - cpu0) / wall * 100
                turns = [t * 1000 for r in runs for t in r.turn_s]
                # With one question per round, turns 0 and 1 get a model follow-up; turn 2 is scored.
                follow = [t * 1000 for r in runs for t in r.turn_s[:2]]
                scored = [t * 1000 for r in runs for t in r.turn_s[2:]]
                starts = [r.start_s * 1000 for r in runs if not r.error]
                errors = [r.error for r in runs if r.error]
                problems = transcript_problems(Path(d) / "sessions.sqlite3", runs)
                rows.append(
                    (
                        n,
                        len(turns),
                        len(errors),
                        len(problems),
                        statistics.median(follow) if follow else float("nan"),
                        pct(follow, 95),
                        statistics.median(scored) if scored else float("nan"),
                        pct(scored, 95),
                        statistics.median(starts) if starts else float("nan"),
                        len(turns) / wall,
                        cpu,
                        app.rss_mb(peak=True),
                    )
                )
                for e in errors[:3]:
                    print(f"  n={n} error: {e}")
                for p in problems[:3]:
                    print(f"  n={n} transcript problem: {p}")
        finally:
            app.stop()
    print(
        "\n| candidates | turns | errors | lost/crossed | follow-up turn p50 ms | p95 ms | scored turn p50 ms "
        "| p95 ms | /start p50 ms | turns/s | app CPU % | app peak RSS MiB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:.0f} | {r[5]:.0f} | {r[6]:.0f} | {r[7]:.0f} "
            f"| {r[8]:.0f} | {r[9]:.1f} | {r[10]:.0f} | {r[11]:.0f} |"
        )
    print(f"load average {os.getloadavg()[0]:.1f} at end")
    return 1 if any(r[2] or r[3] for r in rows) else 0  # errors or lost/crossed turns fail the run


if __name__ == "__main__":
    raise SystemExit(main())
