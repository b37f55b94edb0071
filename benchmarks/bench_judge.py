"""The truth judge on the embedded model: verdict accuracy against labels the trap set implies, cost per
answer with and without the cached prompt prefix, and the weight the judge earns beside the offline signal.

Run (model extra installed; about 30 s per answer on a loaded 2-core machine)::

    .venv/bin/python benchmarks/bench_judge.py --questions 8 --json /tmp/judge.json
    .venv/bin/python benchmarks/bench_judge.py --from-json /tmp/judge.json   # the tables again, no model

Labels need no fitting: a strong answer should STATE the key points, a fluent-but-wrong one should
CONTRADICT at least one (its central claim), an off-topic one should leave every key point ABSENT. Answers
come from the trap set (tests/data/traps/<round>/<id>.yaml), else from tests/scoring_samples.py.

The weight: each answer gets a truth signal t = (stated - contradicted) / key points, from the offline
verdicts and from the judge's, and m = (1 - w) t_offline + w t_judge. ``w`` is chosen on half the questions
(sorted ids, even positions) to order strong > partial > wrong > off-topic within a question, and the
ordering accuracy is reported on the other half only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from interviewer.content import load_bank  # noqa: E402

KINDS = ("strong", "partial", "wrong", "off_topic")
RANK = {k: i for i, k in enumerate(KINDS)}  # lower is better


def load_answers(max_questions: int | None, stride: int = 1) -> list[dict[str, Any]]:
    """(question id, kind, text) from the trap set, else the scoring samples; every ``stride``-th question
    in id order (a stride mixes the rounds, which the ids group)."""
    rows: list[dict[str, Any]] = []
    files = sorted((REPO / "tests" / "data" / "traps").glob("*/*.yaml"))
    for f in files:
        data = yaml.safe_load(f.read_text(encoding="utf-8"))
        for kind in KINDS:
            a = data["answers"].get(kind)
            if a is None:
                continue
            text = a["text"] if isinstance(a, dict) else a
            rows.append({"qid": data["question"], "kind": kind, "text": text})
    if not rows:
        from tests.scoring_samples import ANSWERS

        names = {"strong": "strong", "partial": "partial", "wrong": "wrong", "wrong_topical": "wrong"}
        for qid, answers in ANSWERS.items():
            for name, text in answers.items():
                if name in names:
                    rows.append({"qid": qid, "kind": names[name], "text": text})
        ids = sorted(ANSWERS)
        for qid, other in zip(ids, ids[1:] + ids[:1], strict=True):  # another question's strong answer
            rows.append({"qid": qid, "kind": "off_topic", "text": ANSWERS[other]["strong"]})
    qids = sorted({r["qid"] for r in rows})[::stride][: max_questions or None]
    return [r for r in rows if r["qid"] in qids]


def truth(verdicts: Sequence[dict[str, Any]]) -> float:
    n = len(verdicts) or 1
    return (
        sum(v["verdict"] == "stated" for v in verdicts)
        - sum(v["verdict"] == "contradicted" for v in verdicts)
    ) / n


def run(rows: list[dict[str, Any]], nocache: int) -> dict[str, Any]:
    from interviewer.config import load_settings
    from interviewer.llm.client import reading_port
    from interviewer.llm.embedded import EmbeddedServer
    from interviewer.scoring.judge import judge_truth
    from interviewer.scoring.scorer import RubricScorer

    bank = load_bank(REPO)
    scorer = RubricScorer(neighbours=list(bank.questions.values()))
    settings = load_settings(timeout=900.0)
    out: dict[str, Any] = {"rows": [], "nocache": [], "load": []}
    with EmbeddedServer(settings, n_parallel=1) as server:
        base_url = server.start(progress=print)
        model = reading_port(
            settings, base_url=base_url, model=server.served_model_id, slots=server.slots
        ).model
        out["model"] = server.model_name
        judge_truth(model, "warm-up", "warm the system prompt", ["a key point"])  # the shared system prompt
        for i, r in enumerate(rows):
            q = bank.get(r["qid"])
            offline = scorer.score(q, [r["text"]])
            j = judge_truth(model, q.question, r["text"], q.key_points)
            out["load"].append(os.getloadavg()[0])
            row = {
                **r,
                "offline_overall": offline.overall,
                "offline": [v.model_dump(mode="json") for v in offline.verdicts],
                "judge": [v.model_dump(mode="json") for v in j.verdicts],
                "cost": vars(j.cost),
            }
            out["rows"].append(row)
            verdicts = " ".join(v.verdict[0] for v in j.verdicts)
            print(
                f"[{i + 1}/{len(rows)}] {r['qid']} {r['kind']}: {verdicts} ({j.cost.seconds:.1f} s)",
                flush=True,
            )
        for r in rows[:nocache]:  # the same answers again, every prompt read from scratch
            q = bank.get(r["qid"])
            j = judge_truth(model, q.question, r["text"], q.key_points, extra_body={"cache_prompt": False})
            out["nocache"].append({"qid": r["qid"], "kind": r["kind"], "cost": vars(j.cost)})
            print(f"no cache: {r['qid']} {r['kind']} {j.cost.seconds:.1f} s", flush=True)
    return out


def ordering(rows: list[dict[str, Any]], qids: set[str], signal: Any) -> float:
    """Share of within-question answer pairs of different kinds that ``signal`` orders right."""
    by_q: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["qid"] in qids:
            by_q.setdefault(r["qid"], []).append(r)
    good = total = 0
    for answers in by_q.values():
        for a, b in combinations(answers, 2):
            if RANK[a["kind"]] == RANK[b["kind"]]:
                continue
            better, worse = (a, b) if RANK[a["kind"]] < RANK[b["kind"]] else (b, a)
            sa, sb = signal(better), signal(worse)
            total += 1
            good += 1 if sa > sb else (0.5 if sa == sb else 0)
    return good / total if total else float("nan")


def verdict_table(rows: list[dict[str, Any]], key: str) -> dict[str, float]:
    def frac(kind: str, verdict: str) -> float:
        vs = [v for r in rows if r["kind"] == kind for v in r[key]]
        return sum(v["verdict"] == verdict for v in vs) / len(vs) if vs else float("nan")

    wrong = [r for r in rows if r["kind"] == "wrong"]
    labelled = [
        (v["verdict"], "stated" if r["kind"] == "strong" else "absent")
        for r in rows
        if r["kind"] in ("strong", "off_topic")
        for v in r[key]
    ]
    return {
        "strong: stated": frac("strong", "stated"),
        "strong: contradicted (false alarm)": frac("strong", "contradicted"),
        "partial: stated": frac("partial", "stated"),
        "wrong: answers with >= 1 contradicted": (
            sum(any(v["verdict"] == "contradicted" for v in r[key]) for r in wrong) / len(wrong)
            if wrong
            else float("nan")
        ),
        "wrong: stated": frac("wrong", "stated"),
        "off-topic: absent": frac("off_topic", "absent"),
        "key points right (strong=stated, off-topic=absent)": (
            sum(a == b for a, b in labelled) / len(labelled) if labelled else float("nan")
        ),
    }


def report(data: dict[str, Any]) -> None:
    rows = data["rows"]
    qids = sorted({r["qid"] for r in rows})
    fit, held = set(qids[0::2]), set(qids[1::2])
    print(f"\nmodel: {data.get('model')}; {len(rows)} answers on {len(qids)} questions")
    off, jud = verdict_table(rows, "offline"), verdict_table(rows, "judge")
    print("\n| verdicts | offline | judge |\n|---|---|---|")
    for k in off:
        print(f"| {k} | {off[k]:.2f} | {jud[k]:.2f} |")

    def mix(w: float) -> Any:
        return lambda r: (1 - w) * truth(r["offline"]) + w * truth(r["judge"])

    # The scorer's own merge (merge_verdicts + its caps) at each weight, from the stored verdicts: no model.
    from interviewer.scoring.models import KeyPointVerdict
    from interviewer.scoring.scorer import RubricScorer

    bank = load_bank(REPO)
    grid = [0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0]
    scorer = RubricScorer(neighbours=list(bank.questions.values()))
    for w in grid:
        scorer.judge_weight = w  # one scorer: its embedder and the bank's vectors load once
        for r in rows:
            judged = [KeyPointVerdict.model_validate(v) for v in r["judge"]]
            r[f"merged_{w}"] = scorer.score(bank.get(r["qid"]), [r["text"]], judged=judged).overall

    def fitted(qs: set[str]) -> float:
        scores = {w: ordering(rows, qs, lambda r, w=w: r[f"merged_{w}"]) for w in grid}
        return max(grid, key=lambda w: (scores[w], -w))  # ties go to the smaller judge weight

    # Two folds by question: fit on one half, measure on the other, then the other way round.
    print(
        "\n| fold | fitted on | judge_weight | held-out pairs right: offline | with the judge |\n|---|---|---|---|---|"
    )
    folds = [(fit, held), (held, fit)]
    weights = []
    for i, (a, b) in enumerate(folds, 1):
        w = fitted(a)
        weights.append(w)
        off = ordering(rows, b, lambda r: r["offline_overall"])
        print(
            f"| {i} | {len(a)} questions | {w:.1f} | {off:.3f} | {ordering(rows, b, lambda r, w=w: r[f'merged_{w}']):.3f} |"
        )
    best = min(grid, key=lambda g: abs(g - sum(weights) / len(weights)))
    print(f"judge_weight to ship (mean of the folds' fits, on the grid): {best:.1f}")
    print(
        f"\n| fold 1's {len(held)} held-out questions, every weight (descriptive, not used to choose) | pairs right |"
    )
    print("|---|---|")
    print(f"| offline overall (no judge) | {ordering(rows, held, lambda r: r['offline_overall']):.3f} |")
    print(f"| offline verdicts, (stated - contradicted) / n | {ordering(rows, held, mix(0.0)):.3f} |")
    print(f"| judge verdicts, (stated - contradicted) / n | {ordering(rows, held, mix(1.0)):.3f} |")
    for w in grid:
        mark = " (shipped)" if w == best else ""
        right = ordering(rows, held, lambda r, w=w: r[f"merged_{w}"])
        print(f"| scorer overall, judge at weight {w:.1f}{mark} | {right:.3f} |")
    for kind in KINDS:
        ks = [r for r in rows if r["kind"] == kind and r["qid"] in held]
        if ks:
            off = sum(r["offline_overall"] for r in ks) / len(ks)
            mer = sum(r[f"merged_{best}"] for r in ks) / len(ks)
            print(f"held-out mean {kind}: offline {off:.2f}, with the judge at {best:.1f}: {mer:.2f}")

    def cost_line(name: str, costs: list[dict[str, Any]]) -> None:
        if not costs:
            return
        n = len(costs)
        avg = {
            k: sum(c[k] for c in costs) / n
            for k in ("seconds", "prompt_tokens", "cached_tokens", "completion_tokens", "calls")
        }
        print(
            f"| {name} | {n} | {avg['seconds']:.1f} | {avg['calls']:.1f} | {avg['prompt_tokens']:.0f} | "
            f"{avg['cached_tokens']:.0f} | {avg['completion_tokens']:.0f} |"
        )

    print(
        "\n| per answer | answers | seconds | calls | prompt tokens | of which cached | completion tokens |"
    )
    print("|---|---|---|---|---|---|---|")
    cost_line("cached prefix", [r["cost"] for r in rows])
    same = {(c["qid"], c["kind"]) for c in data["nocache"]}
    cost_line("cached prefix, same answers", [r["cost"] for r in rows if (r["qid"], r["kind"]) in same])
    cost_line("no prompt cache", [c["cost"] for c in data["nocache"]])
    if data.get("load"):
        load = data["load"]
        print(f"\n1-minute load during the run: {min(load):.1f}-{max(load):.1f} (2 cores)")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--questions", type=int, default=8, help="how many questions (sorted ids)")
    parser.add_argument(
        "--stride", type=int, default=1, help="every STRIDE-th question id (mixes the rounds)"
    )
    parser.add_argument(
        "--nocache", type=int, default=2, help="answers judged again without the prompt cache"
    )
    parser.add_argument("--json", type=Path, help="write the raw verdicts and costs here")
    parser.add_argument("--from-json", type=Path, help="only print the tables from an earlier run")
    args = parser.parse_args()
    if args.from_json:
        data = json.loads(args.from_json.read_text())
    else:
        t0 = time.perf_counter()
        data = run(load_answers(args.questions, args.stride), args.nocache)
        data["wall_seconds"] = time.perf_counter() - t0
        if args.json:
            args.json.write_text(json.dumps(data, indent=1))
    report(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
