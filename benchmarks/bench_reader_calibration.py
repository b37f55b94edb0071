"""Contextual calibration of option probes: does dividing out the model's prior over the claims read better?

Run: ``PYTHONPATH=<model packages> INTERVIEWER_DATA_DIR=<data dir> nice -n 10 .venv/bin/python
benchmarks/bench_reader_calibration.py [--collect FILE] [--analyze FILE]``

A small model's letter probabilities carry a prior of their own: the claim the question makes likely, or the
first letter, gets weight whatever the answer says. Contextual calibration (Zhao et al., "Calibrate Before
Use", 2021) reads the same prompt with a content-free answer ("N/A", "I don't know.") and divides each claim's
probability by the prior so read, then renormalises. ``--collect`` reads every answer of the probe set
(``tests/data/reader/probe_set.yaml``, both halves) with the shipped reader, and every question's option probes
with each content-free answer, and keeps the per-order probabilities in a JSONL file. ``--analyze`` judges the
stored probabilities three ways (uncalibrated, as shipped; calibrated over every choice; calibrated over the
claims alone, "not stated" kept as read) with the shipped rule (the mean over orders; a wrong claim needs
every order's own choice) and prints agreement with the hand labels and the precision of "contradicted" per
half. Only option probes are compared: number and name probes do not use probabilities.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks._embedded import embedded_port  # noqa: E402
from interviewer.config import Settings  # noqa: E402
from interviewer.content.models import Probe  # noqa: E402
from interviewer.scoring import reader  # noqa: E402
from interviewer.scoring.reader_trust import load_probe_set  # noqa: E402

NULLS = ("N/A", "I don't know.")
NS = reader.NOT_STATED
DEFAULT_FILE = REPO / "test-artifacts" / "readings" / "calibration.jsonl"


def collect(path: Path, model: str) -> None:
    items = load_probe_set()
    path.parent.mkdir(parents=True, exist_ok=True)
    settings = Settings(timeout=900.0, embedded_model=model)
    with embedded_port(settings, n_parallel=2) as (_, port), path.open("w", encoding="utf-8") as f:
        for it in items:
            options = [p for p in it.probes if p.kind == "option"]
            priors = {
                n: [list(pf.probs) for pf in reader.read_answer(port, it.question, n, options).probes]
                for n in NULLS
            }
            for a in it.answers:
                t0 = time.perf_counter()
                got = reader.read_answer(port, it.question, a.text, it.probes)
                rows = [
                    {"probe": i, "label": a.labels[i], "probs": list(pf.probs) if pf.probs else None}
                    for i, pf in enumerate(got.probes)
                ]
                row = {"question": it.question_id, "split": it.split, "answer": a.kind, "rows": rows}
                row["priors"] = priors
                row["options"] = [i for i, p in enumerate(it.probes) if p.kind == "option"]
                f.write(json.dumps(row) + "\n")
                f.flush()
                print(f"{it.question_id} [{a.kind}] {time.perf_counter() - t0:.1f} s", flush=True)


def calibrated(d: Mapping[str, float], prior: Mapping[str, float], over: str) -> dict[str, float]:
    """``d`` divided by ``prior`` and renormalised: over every choice, or over the claims alone."""
    if over == "none":
        return dict(d)
    floor = 1e-6
    if over == "all":
        q = {c: v / max(prior.get(c, floor), floor) for c, v in d.items()}
        total = sum(q.values()) or 1.0
        return {c: v / total for c, v in q.items()}
    claims = {c: v / max(prior.get(c, floor), floor) for c, v in d.items() if c != NS}
    total = sum(claims.values()) or 1.0
    rest = 1.0 - d.get(NS, 0.0)
    return {**{c: rest * v / total for c, v in claims.items()}, NS: d.get(NS, 0.0)}


def finding(probe: Probe, dists: list[dict[str, float]]) -> str:
    return reader.judge_option(probe, [None] * len(dists), "", dists, "mean")[0]


def analyze(path: Path) -> None:
    items = {it.question_id: it for it in load_probe_set()}
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    print(f"{len(rows)} answers from {path}\n")
    print("| calibration | content-free answer | dev agree | dev contradicted right | held-out agree |")
    print("|---|---|---|---|---|")
    for over in ("none", "all", "claims"):
        for null in ("-",) if over == "none" else (*NULLS, "both"):
            agree: dict[str, list[int]] = {"dev": [0, 0], "heldout": [0, 0]}
            said_wrong = [0, 0]
            for r in rows:
                probes = items[r["question"]].probes
                for row in r["rows"]:
                    probe = probes[row["probe"]]
                    if probe.kind != "option" or not row["probs"] or None in row["probs"]:
                        continue
                    j = r["options"].index(row["probe"])
                    priors: list[Any] = (
                        [{} for _ in row["probs"]]
                        if null == "-"
                        else _mean_priors([r["priors"][n][j] for n in NULLS])
                        if null == "both"
                        else r["priors"][null][j]
                    )
                    dists = [calibrated(d, p, over) for d, p in zip(row["probs"], priors, strict=True)]
                    got = finding(probe, dists)
                    agree[r["split"]][0] += got == row["label"]
                    agree[r["split"]][1] += 1
                    if r["split"] == "dev" and got == "contradicted":
                        said_wrong[0] += row["label"] == "contradicted"
                        said_wrong[1] += 1
            cells = [f"{a}/{n}" for a, n in agree.values()]
            print(f"| {over} | {null} | {cells[0]} | {said_wrong[0]}/{said_wrong[1]} | {cells[1]} |")


def _mean_priors(per_null: list[list[dict[str, float]]]) -> list[dict[str, float]]:
    return [
        {c: sum(p.get(c, 0.0) for p in ps) / len(ps) for c in ps[0]} for ps in zip(*per_null, strict=True)
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--collect", type=Path, nargs="?", const=DEFAULT_FILE, default=None)
    ap.add_argument("--analyze", type=Path, nargs="?", const=DEFAULT_FILE, default=None)
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    args = ap.parse_args()
    if args.collect is None and args.analyze is None:
        args.collect = args.analyze = DEFAULT_FILE
    if args.collect is not None:
        print("uptime:", os.popen("uptime").read().strip(), flush=True)
        collect(args.collect, args.model)
    if args.analyze is not None:
        analyze(args.analyze)
    return 0


if __name__ == "__main__":
    sys.exit(main())
