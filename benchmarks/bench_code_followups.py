"""Coding follow-ups on a real model: each task's code runs in the sandbox, then the model asks about the run.

For three tasks, a failing version (a boundary bug, a cubic brute force, the unfinished kernel) and the
reference run through the real checker; the follow-up for each run is chosen from the verdict and the code,
written by the embedded model and vetted. Prints each question with its source (model, or the authored
fallback and why), then the run history as the report shows it.

Run:
    nice -n 10 .venv/bin/python benchmarks/bench_code_followups.py            # Qwen2.5-Coder-1.5B (the default)
    nice -n 10 .venv/bin/python benchmarks/bench_code_followups.py --smollm   # SmolLM2-135M
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time

from interviewer import checker
from interviewer import code_followup as cf
from interviewer.config import EmbeddedChoice, load_settings
from interviewer.runtime import Runtime

# A touching pair of intervals (end == next start) stays apart: fails the "touching intervals merge" case.
MERGE_BOUNDARY_BUG = """\
def merge_intervals(a, b):
    out = []
    for s, e in sorted([*map(tuple, a), *map(tuple, b)]):
        if out and s < out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out
"""

TRIPLETS_CUBIC = """\
def three_sum(nums, target):
    a = sorted(nums)
    n = len(a)
    found = set()
    for i in range(n):
        for j in range(i + 1, n):
            for k in range(j + 1, n):
                if a[i] + a[j] + a[k] == target:
                    found.add((a[i], a[j], a[k]))
    return [list(t) for t in sorted(found)]
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smollm", action="store_true", help="use SmolLM2-135M instead of Qwen")
    ap.add_argument("--max-tokens", type=int, default=64)
    args = ap.parse_args(argv)
    model: EmbeddedChoice = "smollm2-135m" if args.smollm else "qwen2.5-coder-1.5b"
    settings = load_settings(embedded_model=model, max_tokens=args.max_tokens, timeout=300)
    print(f"$ {shlex.join([sys.executable, *sys.argv])}")
    rt = Runtime(settings)
    try:
        port = rt.model_or_none()
        if port is None:
            print(f"no model available: {rt.notices}")
            return 1
        print(f"model: {port.name}\n")
        for task_id, failing in (
            ("merge-intervals", MERGE_BOUNDARY_BUG),
            ("unique-triplets", TRIPLETS_CUBIC),
            ("gpu-online-softmax", None),
        ):
            task = checker.get_task(task_id)
            history = []
            asked: list[str] = []
            kinds: list[str] = []
            for label, code in (
                ("failing", failing or task.starter_code),
                ("reference", task.reference_code()),
            ):
                verdict = checker.check(task_id, code, prewarm=False)
                t = time.time()
                run, plan, fu = cf.followup_for_run(
                    task, code, verdict, port, asked=asked, asked_kinds=kinds, key=f"bench-{task_id}"
                )
                asked.append(fu.text)
                kinds.append(fu.kind)
                print(f"### {task_id}, {label} code: {run.summary().splitlines()[0]}")
                print(f"- plan: {plan.kind}, lines {list(plan.lines)}, flags {list(run.flags)}")
                print(f"- asked ({fu.source}, {fu.seconds if fu.seconds is not None else '-'} s): {fu.text}")
                if fu.source == "fallback":
                    print(f"- model reply rejected ({fu.fallback_reason}): {fu.rejected!r}")
                print()
                history.append(
                    {"verdict": verdict.model_dump(mode="json"), "at": t, **cf.event_payload(run, plan, fu)}
                )
            print(f"#### Run history ({task_id})\n{cf.run_history_markdown(history)}\n")
    finally:
        rt.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
