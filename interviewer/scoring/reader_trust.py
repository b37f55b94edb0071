"""How far to trust a model's readings: its agreement with hand labels on a probe set, stored per model id.

The probe set (``tests/data/reader/probe_set.yaml``) holds questions with probes, candidate answers and, per
answer and probe, the hand label (stated / contradicted / not stated). ``interviewer calibrate --reader`` reads
its dev half with the configured model and stores the agreement as that model's weight in
``<data dir>/reader_trust.json``; whoever merges readings into a score looks the weight up by model id.
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from interviewer.content.models import Probe
from interviewer.errors import InputError
from interviewer.scoring.reader import DEFAULT_MODE, Finding, Mode, ReaderStats, Readings, read_answer
from interviewer.scoring.stages import ReaderTrust

TRUST_FILE = "reader_trust.json"
Split = Literal["dev", "heldout"]
FINDINGS: tuple[Finding, ...] = ("stated", "contradicted", "not stated")


@dataclass(frozen=True)
class LabelledAnswer:
    kind: str  # strong, partial, wrong, or a written variant (echo-right, echo-wrong)
    text: str
    labels: tuple[Finding, ...]  # per probe, in the question's probe order


@dataclass(frozen=True)
class ProbeItem:
    """One question of the probe set: its probes and the labelled answers."""

    question_id: str
    split: Split
    question: str
    probes: tuple[Probe, ...]
    answers: tuple[LabelledAnswer, ...]


def default_probe_set() -> Path:
    """The probe set in a source checkout (next to the trap set)."""
    from interviewer.config import MOHLER_CSV

    return MOHLER_CSV.parents[2] / "tests" / "data" / "reader" / "probe_set.yaml"


def load_probe_set(path: Path | None = None) -> list[ProbeItem]:
    """The probe set's questions, validated (every answer has one known label per probe)."""
    import yaml

    path = Path(path or default_probe_set())
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as e:
        raise InputError(f"cannot read the probe set {path}: {e}") from e
    items: list[ProbeItem] = []
    for n, q in enumerate(data.get("questions") or []):
        try:
            probes = tuple(Probe.model_validate(p) for p in q["probes"])
            answers = []
            for a in q["answers"]:
                labels = tuple(a["labels"])
                if len(labels) != len(probes) or any(x not in FINDINGS for x in labels):
                    raise ValueError(f"answer '{a['kind']}' needs one of {FINDINGS} per probe")
                answers.append(LabelledAnswer(str(a["kind"]), str(a["text"]), labels))
            split = q["split"]
            if split not in ("dev", "heldout"):
                raise ValueError(f"split must be dev or heldout, not {split!r}")
            items.append(ProbeItem(str(q["question"]), split, str(q["text"]), probes, tuple(answers)))
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(f"{path}: question {n + 1} is malformed: {e}") from e
    if not items:
        raise InputError(f"{path} holds no questions")
    return items


@dataclass
class Evaluation:
    """Agreement with the hand labels per split and probe kind, and what each answer cost."""

    stats: dict[Split, ReaderStats] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)  # per answer
    calls: list[int] = field(default_factory=list)
    warm_calls: list[int] = field(default_factory=list)
    new_prompt_tokens: list[int] = field(default_factory=list)  # prompt tokens the server read (not cached)
    completion_tokens: list[int] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)  # one line per disagreement

    def accuracy(self, split: Split = "dev") -> float:
        return self.stats[split].accuracy if split in self.stats else 0.0

    def table(self) -> str:
        """A Markdown table: agreement per probe kind and split, then the cost per answer."""
        kinds = ("option", "number", "named")
        lines = ["| probe kind | " + " | ".join(f"{s} agree" for s in self.stats) + " |"]
        lines.append("|---|" + "---|" * len(self.stats))
        for k in (*kinds, "all"):
            cells = []
            for st in self.stats.values():
                agree = sum(st.agree.values()) if k == "all" else st.agree.get(k, 0)
                total = sum(st.total.values()) if k == "all" else st.total.get(k, 0)
                cells.append(f"{agree}/{total} ({agree / total:.0%})" if total else "-")
            lines.append(f"| {k} | " + " | ".join(cells) + " |")
        if self.seconds:
            lines.append("")
            lines.append(
                f"per answer: median {statistics.median(self.seconds):.1f} s, max {max(self.seconds):.1f} s; "
                f"requests median {statistics.median(self.calls):g} (+ {statistics.median(self.warm_calls):g} "
                f"prompt pieces); {len(self.seconds)} answers"
            )
            if any(self.completion_tokens):
                lines.append(
                    f"tokens per answer (median): {statistics.median(self.new_prompt_tokens):g} prompt tokens read "
                    f"(not from the cache), {statistics.median(self.completion_tokens):g} generated"
                )
        return "\n".join(lines)


def evaluate(
    model: Any,
    items: Sequence[ProbeItem],
    *,
    splits: Sequence[Split] = ("dev",),
    mode: Mode = DEFAULT_MODE,
    piece_words: int | None = None,
    letters: bool = True,
    progress: Callable[[int, int], None] | None = None,
    on_answer: Callable[[ProbeItem, LabelledAnswer, Readings], None] | None = None,
    **read: Any,
) -> Evaluation:
    """Read every answer of the chosen splits and compare each probe's finding with its hand label.

    ``read`` goes to :func:`~interviewer.scoring.reader.read_answer` (``logprobs``, ``combine``).
    """
    chosen = [i for i in items if i.split in splits]
    total = sum(len(i.answers) for i in chosen)
    ev = Evaluation(stats={s: ReaderStats() for s in splits})
    done = 0
    for item in chosen:
        for ans in item.answers:
            if progress:
                progress(done, total)
            t0 = time.perf_counter()
            readings = read_answer(
                model,
                item.question,
                ans.text,
                item.probes,
                mode=mode,
                piece_words=piece_words,
                letters=letters,
                **read,
            )
            ev.seconds.append(time.perf_counter() - t0)
            ev.calls.append(readings.cost.calls)
            ev.warm_calls.append(readings.cost.warm_calls)
            ev.new_prompt_tokens.append(readings.cost.prompt_tokens - readings.cost.cached_tokens)
            ev.completion_tokens.append(readings.cost.completion_tokens)
            for p, want, got in zip(item.probes, ans.labels, readings.probes, strict=True):
                ok = got.finding == want
                ev.stats[item.split].add(p.kind, ok)
                if not ok:
                    ev.misses.append(
                        f"{item.question_id} [{ans.kind}] {p.kind} '{p.ask}': labelled {want}, read "
                        f"{got.finding} ({got.why}; replies {list(got.replies)})"
                        + "".join(
                            " [" + ", ".join(f"{c[:12]} {v:.2f}" for c, v in d.items()) + "]"
                            for d in got.probs
                            if d
                        )
                    )
            if on_answer:
                on_answer(item, ans, readings)
            done += 1
    if progress:
        progress(done, total)
    return ev


# -- the weight per model id ----------------------------------------------------------------------------------


def trust_path(data_dir: Path) -> Path:
    return Path(data_dir) / TRUST_FILE


def load_trust(data_dir: Path, model_id: str) -> ReaderTrust | None:
    """The stored weight for ``model_id`` (its dev agreement, 0-1, overall and per probe kind), or None when it
    was never measured."""
    path = trust_path(data_dir)
    try:
        entry = json.loads(path.read_text(encoding="utf-8")).get(model_id)
        if not entry:
            return None
        per_kind = {str(k): float(v) for k, v in (entry.get("per_kind") or {}).items()}
        return ReaderTrust(float(entry["weight"]), per_kind)
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return None


def store_trust(data_dir: Path, model_id: str, ev: Evaluation, *, mode: Mode, probe_set: Path) -> Path:
    """Write ``model_id``'s weight (its dev agreement) beside the other models' entries; returns the file."""
    path = trust_path(data_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        if not isinstance(data, dict):
            data = {}
    except (OSError, ValueError):
        data = {}  # an unreadable file is replaced: it only holds measurements, which can be taken again
    dev = ev.stats.get("dev", ReaderStats())
    data[model_id] = {
        "weight": round(dev.accuracy, 4),
        "probes": sum(dev.total.values()),
        "per_kind": {k: round(dev.agree[k] / n, 4) for k, n in dev.total.items() if n},
        "mode": mode,
        "probe_set": probe_set.name,
        "seconds_per_answer": round(statistics.median(ev.seconds), 2) if ev.seconds else None,
        "measured": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
