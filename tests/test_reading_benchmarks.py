"""The reading benchmarks still start and build the prompts the app sends (they run by hand, against a model,
so a renamed prompt variable would otherwise surface only when someone measures)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from interviewer.content import load_bank
from interviewer.engine.followups import intent

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = (
    "read_traps.py",
    "bench_reader.py",
    "bench_reader_live.py",
    "bench_reader_calibration.py",
    "bench_traps.py",
    "bench_listen_traps.py",
)


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name.removesuffix(".py"), REPO / "benchmarks" / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_reading_benchmark_starts_and_explains_itself(script: str) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / script), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout


def test_the_live_delay_benchmark_sends_the_apps_follow_up_prompt_for_every_question() -> None:
    live = _module("bench_reader_live.py")
    for q in load_bank(REPO).questions.values():
        if not q.why_chain:
            continue
        system, human = live.live_messages(q, "An answer of the candidate's.", 3)
        assert q.question in system.content and intent(q, 1).split(" (")[0] in system.content
        assert "An answer of the candidate's." in human.content
