"""#15 items 9-10: candidate text is normalised at the boundary, and never makes the browser fetch anything."""

from __future__ import annotations

import pytest

from interviewer.errors import InputError
from interviewer.report import build_report, render_html, render_markdown
from interviewer.session import Interview, Ports
from interviewer.store import SessionStore
from interviewer.text import clean, for_display, is_blank

LONE = "The kernel is memory bound \ud800 at batch one."


def _start(fixture_bank, store: SessionStore) -> Interview:
    it = Interview.start(Ports(bank=fixture_bank, store=store, owner="me"), ["phone-screen"], per_round=1)
    it.advance_all()
    return it


def test_a_lone_surrogate_is_repaired_and_the_session_stays_usable(fixture_bank, tmp_path) -> None:
    store = SessionStore(tmp_path / "s.db")
    it = _start(fixture_bank, store)
    it.submit(LONE)
    stored = [e.payload["text"] for e in store.events(it.session_id) if e.kind == "answered"]
    assert stored == ["The kernel is memory bound \ufffd at batch one."]
    again = Interview.resume(Ports(bank=fixture_bank, store=store, owner="me"), it.session_id)
    again.advance_all()
    again.submit("Bandwidth per token.")
    again.advance_all()
    again.submit("It stops holding when the batch grows.")
    again.advance_all()
    rep = build_report(store, fixture_bank, it.session_id, owner="me")
    for text in (render_markdown(rep), render_html(rep)):
        text.encode("utf-8")  # raised UnicodeEncodeError before: the report could not be written


def test_a_session_stored_before_the_fix_is_repaired_on_read(fixture_bank, tmp_path) -> None:
    store = SessionStore(tmp_path / "s.db")
    it = _start(fixture_bank, store)
    q = it.question
    assert q is not None
    # What an older version wrote: the raw answer, surrogate and all, straight into the log.
    store.append(it.session_id, "answered", {"qid": q.id, "level": 0, "text": LONE, "mode": "typed"})
    again = Interview.resume(Ports(bank=fixture_bank, store=store, owner="me"), it.session_id)
    texts = [m["content"] for m in again.messages() if m["role"] == "user"]
    assert texts == ["The kernel is memory bound \ufffd at batch one."]
    "".join(texts).encode("utf-8")
    again.advance_all()
    again.submit("Bandwidth per token.")  # the session can be answered again


@pytest.mark.parametrize("blank", ["\u200b\u200b\u200b", " \u200d\ufeff \n\t", "\u2060\u00ad", "\x00\x07"])
def test_invisible_only_answers_are_empty(fixture_bank, tmp_path, blank: str) -> None:
    assert is_blank(blank)
    it = _start(fixture_bank, SessionStore(tmp_path / "s.db"))
    with pytest.raises(InputError, match="empty"):
        it.submit(blank)


def test_candidate_markdown_images_and_html_are_shown_as_text(fixture_bank, tmp_path) -> None:
    store = SessionStore(tmp_path / "s.db")
    it = _start(fixture_bank, store)
    it.submit(
        "It is bandwidth. ![pixel](https://tracker.example/p.png) <img src=https://tracker.example/x.png>"
    )
    shown = next(m["content"] for m in it.messages() if m["role"] == "user")
    assert "![" not in shown and "<img" not in shown and "[image: pixel]" in shown
    assert "](https://tracker.example" not in shown
    it.advance_all()
    rep = build_report(store, fixture_bank, it.session_id, owner="me")
    md = render_markdown(rep)
    assert "![" not in md and "<img" not in md
    assert "<img src=https://tracker" not in render_html(rep)


def test_clean_keeps_real_text() -> None:
    assert clean("Café ＝ café\r\nnext\tline") == "Café ＝ café\nnext\tline"
    assert clean("e\u0301") == "\u00e9"  # NFC
    assert for_display("vector<int> and a < b") == "vector&lt;int&gt; and a < b"
