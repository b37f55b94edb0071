"""The command line: --help matches the README, and the commands that need no model work end to end."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from interviewer.cli import app

from .conftest import FIXTURE_CONTENT, REPO

runner = CliRunner()


def _commands() -> set[str]:
    out = runner.invoke(app, ["--help"], terminal_width=200).output
    return set(re.findall(r"^│ (\w+)\s", out, flags=re.M))


def test_help_lists_exactly_the_commands_the_readme_documents():
    readme = (REPO / "README.md").read_text()
    documented = set(re.findall(r"^interviewer (\w+)", readme, flags=re.M))
    assert _commands() == documented


def test_sessions_and_report_from_the_terminal(tmp_path, monkeypatch):
    monkeypatch.setenv("INTERVIEWER_CONTENT_DIR", str(FIXTURE_CONTENT))
    monkeypatch.setenv("INTERVIEWER_DATA_DIR", str(tmp_path))
    empty = runner.invoke(app, ["sessions"])
    assert empty.exit_code == 0 and "No sessions yet" in empty.output

    from interviewer.content import load_bank
    from interviewer.session import Interview, Ports
    from interviewer.store import SessionStore

    store = SessionStore(tmp_path / "sessions.sqlite3")
    it = Interview.start(Ports(bank=load_bank(FIXTURE_CONTENT), store=store), ["phone-screen"])
    it.advance_all()
    it.submit("an answer <b>bold</b>")
    listed = runner.invoke(app, ["sessions"], terminal_width=200)
    assert it.session_id in listed.output

    html = tmp_path / "r.html"
    rep = runner.invoke(app, ["report", it.session_id, "--html", str(html)])
    assert rep.exit_code == 0, rep.output
    assert "# Feedback report" in rep.output and html.read_text().startswith("<!doctype html>")

    missing = runner.invoke(app, ["report", "no-such-session"])
    assert missing.exit_code == 1 and "no session 'no-such-session'" in missing.output


def test_practice_in_the_terminal_with_no_model_server(tmp_path, monkeypatch):
    monkeypatch.setenv("INTERVIEWER_CONTENT_DIR", str(FIXTURE_CONTENT))
    answers = "4.7x because of the serial part\n\nit assumes perfect scaling\n\nbandwidth saturates\n\n"
    result = runner.invoke(
        app,
        [
            "practice",
            "phone-screen",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--data-dir",
            str(tmp_path),
            "--timeout",
            "2",
        ],
        input=answers,
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "no model server answers at http://127.0.0.1:9/v1" in out  # said once, clearly
    assert "Which assumption about the parallel part" in out  # the authored follow-ups carry the interview
    assert "end of this interview" in out


def test_practice_prints_brackets_as_written_not_as_rich_markup(tmp_path, monkeypatch):
    monkeypatch.setenv("INTERVIEWER_CONTENT_DIR", str(FIXTURE_CONTENT))
    args = ["practice", "--base-url", "http://127.0.0.1:9/v1", "--data-dir", str(tmp_path), "--timeout", "2"]
    first = runner.invoke(
        app,
        [*args, "phone-screen"],
        input="merge [1, 3] and [2, 5]; [/] [bold]\n\n/pause\n",
        terminal_width=200,
    )
    assert first.exit_code == 0, first.output
    sid = re.search(r"session ([0-9a-f]{32})", first.output).group(1)
    again = runner.invoke(app, [*args, "--resume", sid], input="/end\n", terminal_width=200)
    assert again.exit_code == 0, again.output
    assert "merge [1, 3] and [2, 5]; [/] [bold]" in again.output  # the transcript as typed


def test_bad_round_and_bad_url_are_clear_errors(tmp_path):
    bad = runner.invoke(
        app, ["practice", "nope", "--data-dir", str(tmp_path), "--base-url", "http://127.0.0.1:9/v1"]
    )
    assert bad.exit_code == 1 and "unknown round 'nope'" in bad.output
    url = runner.invoke(
        app, ["sessions", "--data-dir", str(tmp_path)], env={"INTERVIEWER_BASE_URL": "localhost:8000"}
    )
    assert url.exit_code == 1 and "not an http(s) URL" in url.output


def test_grade_command_on_a_small_fixture(tmp_path):
    src = tmp_path / "answers.jsonl"
    rows = [
        {
            "question": "What does a zero point do in int8 quantization?",
            "reference_answer": "It is the integer that real zero maps to, so zero is represented exactly.",
            "answer": "The zero point is the integer code that 0.0 maps to, so zero is exact.",
        },
        {
            "question": "What does a zero point do in int8 quantization?",
            "reference_answer": "It is the integer that real zero maps to, so zero is represented exactly.",
            "answer": "I like turtles.",
        },
    ]
    src.write_text("\n".join(json.dumps(r) for r in rows))
    out = tmp_path / "scored.jsonl"
    result = runner.invoke(app, ["grade", "--input", str(src), "--output", str(out)])
    assert result.exit_code == 0, result.output
    scored = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(scored) == 2 and all(0 <= s["score"] <= 4 for s in scored)
    assert scored[0]["score"] > scored[1]["score"]


def test_cli_flags_override_the_environment(monkeypatch):
    from interviewer.config import load_settings

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    assert load_settings().base_url == "http://127.0.0.1:1/v1"
    s = load_settings(base_url="http://127.0.0.1:2/v1", api_key="k", model="m")
    assert (s.base_url, s.api_key, s.model) == ("http://127.0.0.1:2/v1", "k", "m")


def test_say_then_transcribe_from_the_terminal(tmp_path):
    wav = tmp_path / "q.wav"
    said = runner.invoke(app, ["say", "Why does the zero point have to be an integer?", "-o", str(wav)])
    assert said.exit_code == 0, said.output
    assert wav.read_bytes()[:4] == b"RIFF"
    heard = runner.invoke(app, ["transcribe", str(wav), "--context", "int8 quantization zero point"])
    assert heard.exit_code == 0, heard.output
    assert "zero point" in heard.stdout.lower()
    bad = tmp_path / "x.wav"
    bad.write_text("not audio")
    refused = runner.invoke(app, ["transcribe", str(bad)])
    assert refused.exit_code == 1 and "error:" in refused.output


def test_calibrate_command_on_a_small_sample_writes_nothing_with_no_write(tmp_path):
    """Six Mohler questions, 3 question-level folds: the table prints and the shipped parameters stay."""
    import csv as csvlib

    from interviewer.scoring.calibrate import CALIBRATION_PATH

    source = REPO / "data" / "mohler" / "answers.csv"  # kept in the repository (data/mohler/README.md)
    rows = list(csvlib.DictReader(source.open()))
    keep = list(dict.fromkeys(r["question_id"] for r in rows))[:6]
    csv = tmp_path / "mini.csv"
    with csv.open("w", newline="") as f:
        w = csvlib.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(r for r in rows if r["question_id"] in keep)
    # Three trap files, not the whole set (892 answers scored twice would dominate the test's time).
    traps = tmp_path / "traps"
    for f in sorted((REPO / "tests" / "data" / "traps").glob("*/*.yaml"))[::60][:3]:
        (traps / f.parent.name).mkdir(parents=True, exist_ok=True)
        (traps / f.parent.name / f.name).write_bytes(f.read_bytes())
    before = CALIBRATION_PATH.read_bytes()
    result = runner.invoke(
        app, ["calibrate", "--csv", str(csv), "--folds", "3", "--no-write", "--traps", str(traps)]
    )
    assert result.exit_code == 0, result.output
    assert "3-fold question-level CV" in result.stdout and "scorer: coverage model" in result.stdout
    assert CALIBRATION_PATH.read_bytes() == before
    assert "trap set (offline scorer, all questions)" in result.stdout
    out = tmp_path / "cal.json"
    written = runner.invoke(
        app, ["calibrate", "--csv", str(csv), "--folds", "3", "--output", str(out), "--traps", str(traps)]
    )
    assert written.exit_code == 0 and out.stat().st_size > 100


def test_the_terminal_can_continue_a_session_started_in_the_ui(tmp_path, monkeypatch):
    monkeypatch.setenv("INTERVIEWER_CONTENT_DIR", str(FIXTURE_CONTENT))
    from interviewer.content import load_bank
    from interviewer.session import Interview, Ports
    from interviewer.store import SessionStore

    store = SessionStore(tmp_path / "sessions.sqlite3")
    it = Interview.start(
        Ports(bank=load_bank(FIXTURE_CONTENT), store=store, owner="browser:abc"), ["phone-screen"]
    )
    it.advance_all()
    result = runner.invoke(
        app,
        [
            "practice",
            "--resume",
            it.session_id,
            "--data-dir",
            str(tmp_path),
            "--base-url",
            "http://127.0.0.1:9/v1",
        ],
        input="4.7x\n\n/end\n",
    )
    assert result.exit_code == 0, result.output
    assert "Which assumption about the parallel part" in result.output


def test_practice_writes_and_tests_code_for_a_coding_question(tmp_path, monkeypatch):
    """The terminal's code panel: /starter writes the task's starter, /code runs the hidden tests in the box."""
    import shutil

    import pytest

    from interviewer.checker import default_sandbox
    from interviewer.store import SessionStore

    ok, why = default_sandbox().status()
    if not ok:
        pytest.fail(f"the sandbox is unavailable ({why}): run scripts/system-deps.sh")
    content = tmp_path / "content"
    shutil.copytree(REPO / "knowledge", content / "knowledge")
    q = REPO / "rubrics" / "phone-screen" / "phone.coding.merge-intervals.yaml"
    (content / "rubrics" / "phone-screen").mkdir(parents=True)
    shutil.copy(q, content / "rubrics" / "phone-screen" / q.name)
    shutil.copytree(
        REPO / "rubrics" / "coding" / "merge-intervals", content / "rubrics/coding/merge-intervals"
    )
    monkeypatch.setenv("INTERVIEWER_CONTENT_DIR", str(content))
    monkeypatch.setenv("INTERVIEWER_RETRIEVAL", "false")
    starter, solution = tmp_path / "mine.py", REPO / "rubrics/coding/merge-intervals/reference.py"
    answers = (
        f"/code {starter}\n\n"  # nothing there yet: a clear message, the interview goes on
        f"/starter {starter}\n\n"
        f"/starter {starter}\n\n"  # never overwritten
        f"/code {starter}\n\n"
        f"/code {solution}\n\n"
        "A two-pointer merge of the sorted lists, linear time.\n\n/end\n"
    )
    args = ["practice", "phone-screen", "--data-dir", str(tmp_path), "--base-url", "http://127.0.0.1:9/v1"]
    result = runner.invoke(app, [*args, "--timeout", "2"], input=answers, env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    out = result.output
    assert "coding task (merge-intervals)" in out and f"cannot read {starter}" in out
    assert starter.read_text() == (REPO / "rubrics/coding/merge-intervals/starter.py").read_text()
    assert f"{starter} exists: pick a new file name" in out
    assert "merge-intervals: FAILED" in out and "merge-intervals: PASSED" in out
    sid = re.search(r"session ([0-9a-f]{32})", out).group(1)
    runs = [e for e in SessionStore(tmp_path / "sessions.sqlite3").events(sid) if e.kind == "code_run"]
    assert [r.payload["verdict"]["passed"] for r in runs] == [False, True]  # stored with the turn
