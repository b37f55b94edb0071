"""One typed answer, from the UI's Send handler to the stored score, enters the scorer once."""

from __future__ import annotations

from collections import Counter
from typing import Any

from interviewer.config import load_settings
from interviewer.llm.client import ChatPort
from interviewer.llm.fake import ScriptedChatModel
from interviewer.runtime import ModelChoice, Runtime
from interviewer.scoring.scorer import RubricScorer

from .conftest import FIXTURE_CONTENT

# fx.amdahl's main question and its two whys, each on its own level (none covers the next target).
ANSWERS = [
    "Amdahl gives about 4.7x, and the serial part caps it at 10x.",
    "It assumes the parallel part scales perfectly, with no contention for memory bandwidth.",
    "Bandwidth saturates, so adding workers stops helping and the effective parallel fraction shrinks.",
]
ENTRY_POINTS = ("score", "off_topic", "grade_one")  # RubricScorer's public ways in (warm only loads models)


def test_a_typed_answer_reaches_the_scorer_once_on_its_way_to_the_stored_score(tmp_path, monkeypatch):
    from ui.app import App

    calls: Counter[str] = Counter()
    for name in ENTRY_POINTS:
        real = getattr(RubricScorer, name)

        def counted(self: RubricScorer, *args: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
            calls[_name] += 1
            return _real(self, *args, **kw)

        monkeypatch.setattr(RubricScorer, name, counted)
    rt = Runtime(load_settings(content_dir=FIXTURE_CONTENT, data_dir=tmp_path, judge=False, retrieval=False))
    rt.set_model(
        ChatPort(ScriptedChatModel(), name="s"), ModelChoice("http://127.0.0.1:1/v1", "s", "s", False)
    )
    app = App(rt)
    me = app.owners.issue()
    *_, last = app.start("phone-screen", 1, False, me)
    sid = last[1]
    per_send: list[tuple[int, int]] = []  # (scorer calls, stored scores) during each Send
    for answer in ANSWERS:
        if rt.store.get(sid).status != "active":
            break
        before = sum(calls.values())
        for _ in app.send(answer, sid, me):
            pass
        scored = [e for e in rt.store.events(sid) if e.kind == "scored"]
        per_send.append((sum(calls.values()) - before, len(scored)))
    events = rt.store.events(sid)
    assert events[-1].kind == "ended", [e.kind for e in events]
    # The Send that finished the question scored it: one call into the scorer, one stored score; every
    # Send before it entered the scorer not at all.
    assert per_send[-1] == (1, 1), per_send
    assert all(n == 0 for n, _ in per_send[:-1]), per_send
    assert calls == Counter(score=1)
    rt.close()
