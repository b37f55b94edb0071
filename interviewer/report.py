"""Feedback reports (a typed model rendered to Markdown and self-contained HTML) and progress over sessions."""

from __future__ import annotations

import datetime as dt
import html
import math
import re
from collections import defaultdict
from collections.abc import Sequence
from statistics import mean
from typing import Any, Literal

from pydantic import BaseModel, Field

from interviewer import code_followup, whiteboard
from interviewer.content import Bank, Question, Round
from interviewer.scoring.models import QuestionScore
from interviewer.session import Scorer, State, hinted_levels, last_code_run_passed, plan_bank, replay
from interviewer.store import SessionStore

PRACTICE_LABEL = "Practice signal from a mock interview, not a prediction of any real hiring decision."

Signal = Literal["strong hire", "hire", "lean no hire", "no hire", "not enough signal"]


class AnswerTime(BaseModel):
    level: int
    seconds: float | None
    over_time: bool = False
    mode: str = "typed"
    words: int = 0
    words_per_minute: float | None = None
    fillers: int = 0


class CodeRun(BaseModel):
    passed: bool
    failing: list[str] = Field(default_factory=list)  # "test name: message"
    seconds: float | None = None


class QuestionReport(BaseModel):
    id: str
    round: Round
    topic: str
    question: str
    status: Literal["scored", "answered", "not reached"]
    score: QuestionScore | None = None
    key_ideas: list[str] = Field(default_factory=list)
    model_answer: str = ""
    knowledge: list[str] = Field(default_factory=list)
    times: list[AnswerTime] = Field(default_factory=list)
    code_runs: list[CodeRun] = Field(default_factory=list)
    run_history: str = ""  # Markdown: each test run and the follow-up it led to
    whiteboard_md: str = ""  # Markdown: the final diagram and what it left out
    whiteboard_lines: list[str] = Field(default_factory=list)  # the same, as plain lines (for HTML)
    transcript: list[tuple[str, str]] = Field(default_factory=list)  # (role, text)


class RoundReport(BaseModel):
    round: Round
    mean_score: float | None
    signal: Signal
    reasons: list[str]
    criteria: dict[str, float] = Field(default_factory=dict)  # mean level per criterion name
    questions: list[QuestionReport]


class StudyItem(BaseModel):
    topic: str
    question_id: str
    why: str
    documents: list[str]


class Delivery(BaseModel):
    spoken_answers: int
    words_per_minute: float | None
    fillers_per_minute: float | None
    notes: list[str]


class Report(BaseModel):
    session_id: str
    title: str
    created: float
    status: str
    rounds: list[RoundReport]
    overall_signal: Signal
    strongest: list[str]
    weakest: list[str]
    study_plan: list[StudyItem]
    delivery: Delivery | None = None
    practice_label: str = PRACTICE_LABEL


# -- building ---------------------------------------------------------------------------------------

FILLERS = ("um", "uh", "erm", "like", "you know", "sort of", "kind of", "basically", "actually")


def count_fillers(text: str) -> int:
    words = f" {' '.join(text.lower().replace(',', ' ').replace('.', ' ').split())} "
    return sum(words.count(f" {f} ") for f in FILLERS)


def _signal(
    mean_score: float | None, depth: float | None, coding_failed: int, answered: int, contradicted: int = 0
) -> tuple[Signal, list[str]]:
    """The round's hire signal from its (truth-capped) scores; an asserted wrong claim rules out "strong"."""
    if mean_score is None or answered == 0:
        return "not enough signal", ["no question in this round was answered"]
    reasons = [f"mean rubric score {mean_score:.1f}/4 over {answered} question(s)"]
    if depth is not None:
        reasons.append(f"why-chain depth {depth:.1f}/2 on average")
    if coding_failed:
        reasons.append(f"{coding_failed} coding task(s) with failing hidden tests")
    if contradicted:
        reasons.append(f"{contradicted} answer(s) asserted a wrong central claim")
    if mean_score >= 3.2 and (depth or 0) >= 1.5 and not coding_failed and not contradicted:
        return "strong hire", reasons
    if mean_score >= 2.5 and not coding_failed:
        return "hire", reasons
    if mean_score >= 1.5:
        return "lean no hire", reasons
    return "no hire", reasons


def _run_history(events: Sequence[Any], qid: str) -> str:
    """The test runs on ``qid`` and the follow-ups they led to ("" when a stored verdict cannot be read)."""
    try:
        return code_followup.run_history_markdown(code_followup.history_from_events(events, qid))
    except ValueError:  # a verdict stored in an older shape (no task id)
        return ""


def _question_report(
    q: Question, st: State, events_by_q: dict[str, list[Any]], events: Sequence[Any] = ()
) -> QuestionReport:
    answers = st.answers.get(q.id, [])
    score = st.scores.get(q.id)
    status: Literal["scored", "answered", "not reached"] = (
        "scored" if score else ("answered" if answers else "not reached")
    )
    times = []
    for p in events_by_q.get(q.id, []):
        words = len(p["text"].split())
        seconds = p.get("audio_seconds") or p.get("elapsed_s")
        wpm = words / (seconds / 60) if seconds and p.get("mode") == "spoken" else None
        times.append(
            AnswerTime(
                level=p["level"],
                seconds=p.get("elapsed_s"),
                over_time=bool(p.get("over_time")),
                mode=p.get("mode", "typed"),
                words=words,
                words_per_minute=round(wpm, 1) if wpm else None,
                fillers=count_fillers(p["text"]) if p.get("mode") == "spoken" else 0,
            )
        )
    runs = [
        CodeRun(
            passed=bool(v.get("passed")),
            failing=[
                f"{t.get('name')}: {t.get('message', '')}" for t in v.get("tests", []) if not t.get("passed")
            ],
            seconds=v.get("seconds"),
        )
        for v in st.code_runs.get(q.id, [])
    ]
    transcript: list[tuple[str, str]] = [(t.role, t.text) for t in st.turns if t.qid == q.id]
    return QuestionReport(
        id=q.id,
        round=q.round,
        topic=q.topic,
        question=q.question,
        status=status,
        score=score,
        key_ideas=list(q.key_points),
        model_answer=q.model_answer,
        knowledge=list(q.knowledge),
        times=times,
        code_runs=runs,
        run_history=_run_history(events, q.id) if runs else "",
        whiteboard_md=whiteboard.report_markdown(st.diagrams[q.id], q) if q.id in st.diagrams else "",
        whiteboard_lines=whiteboard.report_lines(st.diagrams[q.id], q) if q.id in st.diagrams else [],
        transcript=transcript,
    )


def build_report(
    store: SessionStore, bank: Bank, session_id: str, owner: str | None = None, scorer: Scorer | None = None
) -> Report:
    """The feedback report of one session; answered but unscored questions are scored now when a scorer is given."""
    row = store.get(session_id, owner=owner)
    bank = plan_bank(bank, row.plan)  # a resume deep dive's questions live in its plan, not the bank
    events = store.events(session_id)
    st = replay(row.plan, events)
    if scorer is not None:
        _score_unscored(st, bank, scorer)
    answered_events: dict[str, list[Any]] = defaultdict(list)
    for ev in events:
        if ev.kind == "answered":
            answered_events[ev.payload["qid"]].append(ev.payload)
    rounds = [_round_report(Round(r), st, bank, answered_events, events) for r in st.rounds]
    strongest, weakest = _strongest_and_weakest(rounds)
    return Report(
        session_id=session_id,
        title=row.title,
        created=row.created,
        status=st.end_reason or row.status,
        rounds=rounds,
        overall_signal=_overall_signal(rounds),
        strongest=strongest,
        weakest=weakest,
        study_plan=_study_plan(rounds),
        delivery=_delivery(answered_events),
    )


def _score_unscored(st: State, bank: Bank, scorer: Scorer) -> None:
    """Score the answered questions the session did not score (in ``st``)."""
    for qid, answers in st.answers.items():
        if qid not in st.scores and answers and qid in bank.questions:
            st.scores[qid] = scorer.score(
                bank.get(qid), answers, last_code_run_passed(st, qid), hints=hinted_levels(st.turns, qid)
            )


def _round_report(
    r: Round, st: State, bank: Bank, answered_events: dict[str, list[Any]], events: Sequence[Any] = ()
) -> RoundReport:
    """One round: its questions, mean score, mean level per criterion and the practice signal with reasons."""
    qs = [
        _question_report(bank.get(qid), st, answered_events, events)
        for qid in st.plan
        if bank.get(qid).round.value == r
    ]
    scored = [x.score for x in qs if x.score is not None]
    mean_score = round(mean(s.overall for s in scored), 2) if scored else None
    depth = mean(s.why_depth for s in scored) if scored else None
    crit: dict[str, list[int]] = defaultdict(list)
    for s in scored:
        for c in s.criteria:
            crit[c.criterion].append(c.level)
    coding_failed = sum(1 for x in qs if x.code_runs and not x.code_runs[-1].passed)
    contradicted = sum(1 for s in scored if any(c.status == "contradicted" for c in s.criteria))
    signal, reasons = _signal(mean_score, depth, coding_failed, len(scored), contradicted)
    not_reached = sum(1 for x in qs if x.status == "not reached")
    if not_reached:
        reasons.append(f"{not_reached} question(s) not reached")
    return RoundReport(
        round=r,
        mean_score=mean_score,
        signal=signal,
        reasons=reasons,
        criteria={k: round(mean(v), 2) for k, v in crit.items()},
        questions=qs,
    )


def _strongest_and_weakest(rounds: list[RoundReport]) -> tuple[list[str], list[str]]:
    """Up to three topics scored >= 2.5 (best first) and three below it (worst first)."""
    by_topic: dict[str, list[float]] = defaultdict(list)
    for rr in rounds:
        for qr in rr.questions:
            if qr.score:
                by_topic[f"{rr.round.title}: {qr.topic}"].append(qr.score.overall)
    ranked = sorted(((mean(v), k) for k, v in by_topic.items()), reverse=True)
    strongest = [f"{k} ({s:.1f}/4)" for s, k in ranked[:3] if s >= 2.5]
    weakest = [f"{k} ({s:.1f}/4)" for s, k in reversed(ranked[-3:]) if s < 2.5]
    return strongest, weakest


def _study_plan(rounds: list[RoundReport]) -> list[StudyItem]:
    """What to study next: every scored question with a gap (low score, broken why-chain, misses, hints)."""
    study: list[StudyItem] = []
    for rr in rounds:
        for qr in rr.questions:
            if qr.score is None:
                continue
            gaps = []
            if qr.score.overall < 2.5:
                gaps.append(f"scored {qr.score.overall:.1f}/4")
            if qr.score.why_depth < 2:
                gaps.append(f"why-chain broke at level {qr.score.why_depth + 1}")
            if qr.score.key_points_missed:
                gaps.append("missed: " + "; ".join(qr.score.key_points_missed[:3]))
            hinted = sum(a.kind == "hint" for a in qr.score.adjustments)
            if hinted:
                gaps.append(f"needed {hinted} hint(s)")
            if gaps:
                study.append(
                    StudyItem(topic=qr.topic, question_id=qr.id, why=", ".join(gaps), documents=qr.knowledge)
                )
    return study


def _overall_signal(rounds: list[RoundReport]) -> Signal:
    """The session's practice signal over its scored rounds."""
    scored_rounds = [rr for rr in rounds if rr.mean_score is not None]
    overall_mean = (
        mean(rr.mean_score for rr in scored_rounds if rr.mean_score is not None) if scored_rounds else None
    )
    overall_depth = (
        mean(q.score.why_depth for rr in rounds for q in rr.questions if q.score) if scored_rounds else None
    )
    overall_failed = sum(
        1 for rr in rounds for q in rr.questions if q.code_runs and not q.code_runs[-1].passed
    )
    overall, _ = _signal(
        overall_mean, overall_depth, overall_failed, sum(len(rr.questions) for rr in scored_rounds)
    )
    return overall


def _delivery(answered: dict[str, list[Any]]) -> Delivery | None:
    spoken = [p for ps in answered.values() for p in ps if p.get("mode") == "spoken"]
    if not spoken:
        return None
    secs = sum(p.get("audio_seconds") or 0 for p in spoken)
    words = sum(len(p["text"].split()) for p in spoken)
    fillers = sum(count_fillers(p["text"]) for p in spoken)
    wpm = words / (secs / 60) if secs else None
    fpm = fillers / (secs / 60) if secs else None
    notes = []
    if wpm is not None:
        if wpm > 170:
            notes.append(f"{wpm:.0f} words per minute is fast: slow down on the numbers")
        elif wpm < 110:
            notes.append(f"{wpm:.0f} words per minute is slow: lead with the answer, then the reasoning")
        else:
            notes.append(f"{wpm:.0f} words per minute is a comfortable pace")
    if fpm is not None and fpm > 4:
        notes.append(f"{fpm:.1f} filler words per minute: pause instead")
    return Delivery(
        spoken_answers=len(spoken),
        words_per_minute=round(wpm, 1) if wpm else None,
        fillers_per_minute=round(fpm, 2) if fpm is not None else None,
        notes=notes,
    )


# -- rendering --------------------------------------------------------------------------------------


def _md_escape(text: str) -> str:
    """Candidate text is shown as text: no HTML, no Markdown links or images."""
    return html.escape(text, quote=False).replace("[", "\\[").replace("]", "\\]").replace("`", "\\`")


def _board_and_runs_md(q: QuestionReport) -> list[str]:
    """The question's final whiteboard and its test runs with the follow-ups they led to (Markdown lines)."""
    out = [q.whiteboard_md, ""] if q.whiteboard_md else []
    return out + (["#### Test runs", "", q.run_history, ""] if q.run_history else [])


def _board_and_runs_html(q: QuestionReport) -> list[str]:
    """The same as :func:`_board_and_runs_md`, as HTML blocks."""
    e = html.escape
    out = []
    if q.whiteboard_lines:
        board = "".join(f"<li>{e(line)}</li>" for line in q.whiteboard_lines)
        out.append(f"<h4>Whiteboard</h4><ul class=whiteboard>{board}</ul>")
    if q.run_history:  # the Markdown's escapes undone, then escaped for HTML
        runs = re.sub(r"\\(.)", r"\1", q.run_history)
        out.append(f"<h4>Test runs</h4><pre class=runs>{e(runs)}</pre>")
    return out


def render_markdown(rep: Report) -> str:
    """The report as Markdown (candidate text escaped: no HTML, links or images from it)."""
    when = dt.datetime.fromtimestamp(rep.created).strftime("%Y-%m-%d %H:%M")
    out = [
        f"# Feedback report: {html.escape(rep.title, quote=False)}",
        "",
        f"Session `{rep.session_id}`, {when}, status: {rep.status}.",
        "",
    ]
    out += [f"**Overall practice signal: {rep.overall_signal}.** _{rep.practice_label}_", ""]
    if rep.strongest:
        out.append("**Strongest:** " + "; ".join(rep.strongest))
    if rep.weakest:
        out.append("**Weakest:** " + "; ".join(rep.weakest))
    out.append("")
    for rr in rep.rounds:
        out += _md_round(rr)
    if rep.delivery:
        d = rep.delivery
        out += ["## Delivery (spoken answers)", ""]
        out.append(f"{d.spoken_answers} spoken answer(s). " + " ".join(n + "." for n in d.notes))
        out.append("")
    out += ["## Study plan", ""]
    if not rep.study_plan:
        out.append("No gaps found in the scored answers.")
    for item in rep.study_plan:
        docs = ", ".join(f"[{d}]({d})" for d in item.documents)
        out.append(f"- **{item.topic}** ({item.why}): read {docs}")
    out.append("")
    return "\n".join(out)


def _md_round(rr: RoundReport) -> list[str]:
    ms = f"{rr.mean_score:.1f}/4" if rr.mean_score is not None else "not scored"
    out = [
        f"## {rr.round.title}: {ms}, practice signal: {rr.signal}",
        "",
        "Reasons: " + "; ".join(rr.reasons),
        "",
    ]
    if rr.criteria:
        out += ["| criterion | mean level (0-4) |", "|---|---|"]
        out += [f"| {k} | {v:.1f} |" for k, v in rr.criteria.items()]
        out.append("")
    for q in rr.questions:
        out += _md_question(q)
    return out


def _md_question(q: QuestionReport) -> list[str]:
    out = [f"### {html.escape(q.question, quote=False)}", ""]  # may quote the resume
    out += _board_and_runs_md(q)  # drawn and run even when no answer was sent
    if q.status == "not reached":
        return [*out, "_Not reached in this session._", ""]
    out += _md_score(q.score) if q.score else ["_Answered, not scored._"]
    for run in q.code_runs[-1:]:
        out.append(f"- hidden tests: {'all passed' if run.passed else 'failing'}")
        for f in run.failing[:5]:
            out.append(f"  - {_md_escape(f)}")
    timed = [t for t in q.times if t.seconds is not None]
    if timed:
        out.append(
            "- time per answer: "
            + ", ".join(f"L{t.level} {t.seconds:.0f}s{' (over)' if t.over_time else ''}" for t in timed)
        )
    out.append("- key ideas of a strong answer: " + html.escape("; ".join(q.key_ideas), quote=False))
    out.append("")
    return out


def _caps(s: QuestionScore) -> list[str]:
    """Why the question's score was held down, as the scorer put it ("capped at 1.5: the answer asserts ...")."""
    return [c.note for c in s.caps]


def _md_score(s: QuestionScore) -> list[str]:
    out = [
        f"Score **{s.overall:.1f}/4**, why-chain depth **{s.why_depth}/2**, "
        f"methods: {', '.join(s.methods) or 'n/a'}.",
        "",
    ]
    out += [f"- {_md_escape(n)}" for n in _caps(s)]
    for c in s.criteria:
        why = f" \u2014 {_md_escape(c.reason)}" if c.reason else ""
        out.append(f"- **{c.criterion}**: level {c.level} ({c.method}){why}")
        if c.contradicted_by:
            out.append(f"  - contradicted by: \u201c{_md_escape(c.contradicted_by)}\u201d")
        for ev in c.evidence[:3]:
            out.append(f"  - evidence: \u201c{_md_escape(ev)}\u201d")
    for ch in s.checks:
        mark = "✓" if ch.passed else "✗"
        out.append(f"- check {mark} {ch.name}: expected {ch.expected}, found {ch.found or 'nothing'}")
    if s.key_points_missed:
        out.append("- missed key points: " + "; ".join(s.key_points_missed))
    for a in s.adjustments:  # what a hint cost, what a push step earned
        out.append(f"- {_md_escape(a.note)}")
    return out


def _bar_svg(values: Sequence[tuple[str, float | None]], maximum: float = 4.0) -> str:
    """A horizontal bar chart as inline SVG (no scripts, no external files)."""
    row, width, label_w = 26, 560, 260
    h = row * max(1, len(values)) + 10
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" role="img">']
    for i, (label, v) in enumerate(values):
        y = 5 + i * row
        bar = 0 if v is None else (width - label_w - 60) * max(0.0, min(v, maximum)) / maximum
        parts.append(f'<text x="0" y="{y + 17}" font-size="13">{html.escape(label)}</text>')
        parts.append(f'<rect x="{label_w}" y="{y + 4}" width="{bar:.1f}" height="16" fill="#76b900"/>')
        txt = "n/a" if v is None else f"{v:.1f}"
        parts.append(f'<text x="{label_w + bar + 6:.1f}" y="{y + 17}" font-size="13">{txt}</text>')
    parts.append("</svg>")
    return "".join(parts)


def render_html(rep: Report) -> str:
    """A self-contained HTML page: inline CSS and SVG charts, every candidate string escaped."""
    e = html.escape
    when = dt.datetime.fromtimestamp(rep.created).strftime("%Y-%m-%d %H:%M")
    body = [
        f"<h1>Feedback report: {e(rep.title)}</h1>",
        f"<p>Session <code>{e(rep.session_id)}</code>, {when}, status: {e(rep.status)}.</p>",
        f"<p class=signal><b>Overall practice signal: {e(rep.overall_signal)}.</b> <i>{e(rep.practice_label)}</i></p>",
        "<h2>Scores by round</h2>",
        _bar_svg([(rr.round.title, rr.mean_score) for rr in rep.rounds]),
    ]
    if rep.strongest:
        body.append("<p><b>Strongest:</b> " + e("; ".join(rep.strongest)) + "</p>")
    if rep.weakest:
        body.append("<p><b>Weakest:</b> " + e("; ".join(rep.weakest)) + "</p>")
    for rr in rep.rounds:
        ms = f"{rr.mean_score:.1f}/4" if rr.mean_score is not None else "not scored"
        body.append(f"<h2>{e(rr.round.title)}: {ms}, practice signal: {e(rr.signal)}</h2>")
        body.append("<p>" + e("; ".join(rr.reasons)) + "</p>")
        if rr.criteria:
            body.append(_bar_svg(list(rr.criteria.items())))
        for q in rr.questions:
            body.append(f"<h3>{e(q.question)}</h3>")
            body += _board_and_runs_html(q)
            if q.status == "not reached":
                body.append("<p><i>Not reached in this session.</i></p>")
                continue
            if q.score:
                s = q.score
                body.append(
                    f"<p>Score <b>{s.overall:.1f}/4</b>, why-chain depth <b>{s.why_depth}/2</b>.</p><ul>"
                )
                body += [f"<li>{e(n)}</li>" for n in _caps(s)]
                for c in s.criteria:
                    quotes = "".join(f"<li class=quote>\u201c{e(x)}\u201d</li>" for x in c.evidence[:3])
                    if c.contradicted_by:
                        quotes = f"<li>contradicted by: \u201c{e(c.contradicted_by)}\u201d</li>" + quotes
                    why = f" &mdash; {e(c.reason)}" if c.reason else ""
                    body.append(
                        f"<li><b>{e(c.criterion)}</b>: level {c.level} ({e(c.method)}){why}<ul>{quotes}</ul></li>"
                    )
                for ch in s.checks:
                    body.append(
                        f"<li>check {'✓' if ch.passed else '✗'} {e(ch.name)}: expected {e(ch.expected)}, "
                        f"found {e(ch.found or 'nothing')}</li>"
                    )
                if s.key_points_missed:
                    body.append("<li>missed: " + e("; ".join(s.key_points_missed)) + "</li>")
                for a in s.adjustments:
                    body.append(f"<li>{e(a.note)}</li>")
                body.append("</ul>")
            for run in q.code_runs[-1:]:
                fails = "".join(f"<li>{e(f)}</li>" for f in run.failing[:5])
                body.append(
                    f"<p>Hidden tests: {'all passed' if run.passed else 'failing'}</p><ul>{fails}</ul>"
                )
            body.append("<details><summary>Transcript and key ideas</summary><ul>")
            for role, text in q.transcript:
                body.append(f"<li><b>{e(role)}:</b> {e(text)}</li>")
            body.append("</ul><p><b>Key ideas:</b> " + e("; ".join(q.key_ideas)) + "</p></details>")
    if rep.delivery:
        body.append("<h2>Delivery</h2><p>" + e(" ".join(rep.delivery.notes)) + "</p>")
    body.append("<h2>Study plan</h2><ul>")
    for item in rep.study_plan:
        body.append(f"<li><b>{e(item.topic)}</b> ({e(item.why)}): {e(', '.join(item.documents))}</li>")
    body.append("</ul>")
    css = (
        "body{font-family:system-ui,sans-serif;max-width:860px;margin:2em auto;padding:0 1em;color:#222}"
        "h2{border-bottom:1px solid #ddd}.quote{color:#555}.signal{background:#f4f9e8;padding:.6em}"
    )
    return (
        "<!doctype html><html><head><meta charset=utf-8>"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">"
        f"<title>{e(rep.title)}</title><style>{css}</style></head><body>" + "\n".join(body) + "</body></html>"
    )


# -- progress ---------------------------------------------------------------------------------------


class SkillPoint(BaseModel):
    when: float
    session_id: str
    round: str
    topic: str
    question_id: str
    score: float
    why_depth: int


def skill_history(store: SessionStore, owner: str | None = None) -> list[SkillPoint]:
    """Every scored answer of this owner, oldest first (the data behind the skill map)."""
    points: list[SkillPoint] = []
    for row in store.list(owner=owner, limit=10_000):
        # Resume questions are stored with their session; their round and topic come from there.
        stored = {q["id"]: q for q in row.plan.get("extra_questions", [])}
        for ev in store.events(row.id):
            if ev.kind == "scored":
                s = QuestionScore.model_validate(ev.payload["score"])
                q = stored.get(s.question_id, {})
                points.append(
                    SkillPoint(
                        when=ev.ts,
                        session_id=row.id,
                        round=ev.payload.get("round", q.get("round", "")),
                        topic=ev.payload.get("topic", q.get("topic", "")),
                        question_id=s.question_id,
                        score=s.overall,
                        why_depth=s.why_depth,
                    )
                )
    return sorted(points, key=lambda p: p.when)


def _fill_round_topic(points: list[SkillPoint], bank: Bank) -> list[SkillPoint]:
    out = []
    for p in points:
        q = bank.questions.get(p.question_id)
        if q is not None:
            p = p.model_copy(update={"round": q.round.value, "topic": q.topic})
        out.append(p)
    return out


def skill_map(store: SessionStore, bank: Bank, owner: str | None = None) -> list[SkillPoint]:
    return _fill_round_topic(skill_history(store, owner), bank)


def next_plan(
    store: SessionStore,
    bank: Bank,
    rounds: Sequence[str],
    per_round: int,
    owner: str | None = None,
    now: float | None = None,
) -> list[str]:
    """Spaced repetition: weak scores and broken why-chains come back sooner; unseen questions fill the rest.

    Priority of a seen question = (4 - last score) + (2 - why depth) + growth with days since it was seen,
    so a weak answer returns next time and a strong one only after a while.
    """
    now = now or dt.datetime.now().timestamp()
    last: dict[str, SkillPoint] = {}
    for p in skill_map(store, bank, owner):
        last[p.question_id] = p
    plan: list[str] = []
    for r in rounds:
        pool = bank.by_round(r)
        seen = [q for q in pool if q.id in last]
        unseen = [q for q in pool if q.id not in last]

        def priority(q: Question) -> float:
            p = last[q.id]
            days = max(0.0, (now - p.when) / 86_400)
            return (4 - p.score) + (2 - p.why_depth) + math.log1p(days)

        weak = sorted(
            (q for q in seen if last[q.id].score < 3 or last[q.id].why_depth < 2), key=priority, reverse=True
        )
        strong = sorted((q for q in seen if q not in weak), key=priority, reverse=True)
        picked = (weak[: max(1, per_round // 2 + per_round % 2)] if weak else []) + unseen + strong
        chosen: list[Question] = []
        for q in picked:
            if q not in chosen:
                chosen.append(q)
            if len(chosen) == per_round:
                break
        plan.extend(q.id for q in sorted(chosen, key=lambda q: q.difficulty))
    return plan
