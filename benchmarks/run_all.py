"""Run every ``benchmarks/bench_*.py`` and print one table of their figures (``make bench``).

Each script runs in its own process with a time limit; its full output is kept in
``test-artifacts/bench/<name>.log``. Figures are the rows of the Markdown tables a script prints
(``| metric | value | ... |``); a script that prints none is listed with its status and time.
Run: .venv/bin/python benchmarks/run_all.py [--only turn_overhead load] [--skip embedded] [--timeout 1800]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOGS = HERE.parent / "test-artifacts" / "bench"
_ROW = re.compile(r"^\|(.+)\|\s*$")


def figures(output: str) -> list[tuple[str, str]]:
    """(metric, value) pairs from the Markdown table rows in a script's output; header rows are dropped."""
    out: list[tuple[str, str]] = []
    header: list[str] | None = None
    for line in output.splitlines():
        m = _ROW.match(line.strip())
        if not m:
            header = None
            continue
        cells = [c.strip() for c in m.group(1).split("|")]
        if all(set(c) <= set("-: ") for c in cells):
            continue  # the separator row
        if header is None:
            header = cells
            continue
        if len(cells) == 2 or header[0].lower() in {"metric", "figure", "name"}:
            extra = "".join(f" ({h} {c})" for h, c in zip(header[2:], cells[2:], strict=False) if c)
            out.append((cells[0], cells[1] + extra if len(cells) > 1 else ""))
        else:  # a wide table: one row per line, named by its first cell, values labelled by the header
            label = ", ".join(f"{h}={c}" for h, c in zip(header[1:], cells[1:], strict=False) if c)
            out.append((f"{header[0]}={cells[0]}", label))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", default=None, help="names without bench_ and .py")
    ap.add_argument("--skip", nargs="*", default=[])
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per script")
    args = ap.parse_args()
    scripts = sorted(HERE.glob("bench_*.py"))
    names = [p.stem.removeprefix("bench_") for p in scripts]
    chosen = [
        (n, p)
        for n, p in zip(names, scripts, strict=True)
        if (args.only is None or n in args.only) and n not in args.skip
    ]
    LOGS.mkdir(parents=True, exist_ok=True)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; logs in {LOGS}")
    table: list[tuple[str, str, str]] = []
    failed = 0
    for name, path in chosen:
        print(f"running {path.name} ...", flush=True)
        t = time.perf_counter()
        try:
            proc = subprocess.run(
                [sys.executable, str(path)],
                capture_output=True,
                text=True,
                timeout=args.timeout,
                cwd=HERE.parent,
            )
            output, status = (
                proc.stdout + proc.stderr,
                "ok" if proc.returncode == 0 else f"exit {proc.returncode}",
            )
        except subprocess.TimeoutExpired as e:
            output = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            status = f"timeout {args.timeout:.0f}s"
        seconds = time.perf_counter() - t
        (LOGS / f"{name}.log").write_text(output)
        failed += status != "ok"
        rows = figures(output)
        table.append((name, f"(status: {status}, {seconds:.0f} s)", ""))
        table += [(name, metric, value) for metric, value in rows]
    width = max((len(r[1]) for r in table), default=10)
    width = min(width, 70)
    print(f"\n| {'benchmark':<16} | {'metric':<{width}} | value |")
    print(f"|{'-' * 18}|{'-' * (width + 2)}|-------|")
    for name, metric, value in table:
        print(f"| {name:<16} | {metric[:width]:<{width}} | {value} |")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
