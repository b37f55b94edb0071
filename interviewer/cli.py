"""The command line: one entry point, one subcommand per job."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from interviewer.config import MOHLER_CSV, Settings, load_settings
from interviewer.content import Round
from interviewer.errors import InputError, InterviewerError

if TYPE_CHECKING:
    from interviewer.runtime import Runtime
    from interviewer.session import Interview

app = typer.Typer(
    help="A mock interviewer for ML engineer loops: authored questions, two levels of why, rubric scores.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err = Console(stderr=True)

BaseUrl = Annotated[
    str | None,
    typer.Option(
        "--base-url", help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1 (default: embedded model)"
    ),
]
ApiKey = Annotated[
    str | None, typer.Option("--api-key", help="API key for --base-url (env INTERVIEWER_API_KEY)")
]
ModelOpt = Annotated[str | None, typer.Option("--model", help="model id on that server (default: its first)")]
Temp = Annotated[float | None, typer.Option("--temperature", help="sampling temperature for follow-ups")]
Timeout = Annotated[float | None, typer.Option("--timeout", help="seconds to wait for one model reply")]
DataDir = Annotated[Path | None, typer.Option("--data-dir", help="where sessions and the index live")]


def _settings(**kw: object) -> Settings:
    try:
        return load_settings(**kw)
    except InterviewerError as e:
        _fail(e)


def _fail(e: Exception, code: int = 1) -> NoReturn:
    err.print(f"[red]error:[/red] {escape(str(e))}")
    raise typer.Exit(code)


def _round_list(rounds: list[str]) -> list[str]:
    valid = {r.value for r in Round}
    out: list[str] = []
    for r in rounds:
        if r == "all":
            out.extend(x.value for x in Round if x is not Round.DEEP_DIVE)
        elif r in valid:
            out.append(r)
        else:
            raise InputError(f"unknown round '{r}'; choose from: {', '.join(sorted(valid))}, all")
    return out


@app.command()
def serve(
    host: Annotated[
        str | None, typer.Option(help="address to bind (default 127.0.0.1: this machine only)")
    ] = None,
    port: Annotated[int | None, typer.Option(help="port (default 7860; 0 picks a free one)")] = None,
    share: Annotated[bool, typer.Option(help="also open a public Gradio share link")] = False,
    auth: Annotated[str | None, typer.Option(help="require a login, as USER:PASSWORD")] = None,
    public_without_login: Annotated[
        bool, typer.Option(help="with --share and no --auth: yes, anyone with the link may use the app")
    ] = False,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    model: ModelOpt = None,
    temperature: Temp = None,
    timeout: Timeout = None,
    data_dir: DataDir = None,
) -> None:
    """Start the web UI (the embedded model starts with it unless --base-url is set)."""
    from interviewer.netguard import exposure_check

    try:
        exposure_check(share=share, auth=bool(auth), confirmed=public_without_login)
    except InputError as e:
        _fail(e)
    if share and not auth:
        console.print(
            "[bold red]WARNING: the share link is public and has no login: anyone with it can use this app, "
            "its model and its sandbox.[/bold red]"
        )
    settings = _settings(
        host=host,
        port=port,
        base_url=base_url,
        api_key=api_key,
        model=model,
        temperature=temperature,
        timeout=timeout,
        data_dir=data_dir,
    )
    from ui.app import launch

    credentials = None
    if auth:
        user, sep, password = auth.partition(":")
        if not sep or not user or not password:
            _fail(InputError("--auth takes USER:PASSWORD"))
        credentials = (user, password)
    try:
        launch(
            settings,
            share=share,
            auth=credentials,
            public_without_login=public_without_login,
            progress=lambda m: console.print(f"[dim]{escape(m)}[/dim]"),
        )
    except InterviewerError as e:
        _fail(e)


@app.command()
def practice(
    rounds: Annotated[list[str] | None, typer.Argument(help="round ids, or 'all' for every round")] = None,
    questions: Annotated[int, typer.Option("--questions", "-n", help="questions per round")] = 3,
    loop: Annotated[str | None, typer.Option(help="a loop preset id (see `interviewer loops`)")] = None,
    cv: Annotated[
        Path | None, typer.Option("--cv", help="your resume (PDF, Markdown, text) for deep dives")
    ] = None,
    posting: Annotated[
        Path | None, typer.Option(help="a job posting text file that steers rounds and topics")
    ] = None,
    voice: Annotated[
        bool, typer.Option(help="speak the questions and record answers (needs arecord/aplay)")
    ] = False,
    seed: Annotated[int | None, typer.Option(help="fix the question choice")] = None,
    resume: Annotated[str | None, typer.Option(help="continue a session by id")] = None,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    model: ModelOpt = None,
    temperature: Temp = None,
    timeout: Timeout = None,
    data_dir: DataDir = None,
) -> None:
    """The same interview in the terminal. Answer, then an empty line to send; '?...' asks a clarifying
    question; /starter FILE and /code FILE write and test code for a coding task; /pause pauses; /end stops."""
    from interviewer.runtime import Runtime

    settings = _settings(
        base_url=base_url,
        api_key=api_key,
        model=model,
        temperature=temperature,
        timeout=timeout,
        data_dir=data_dir,
    )
    rt = Runtime(settings)
    try:
        round_ids = [] if resume or loop else _round_list(rounds or [])  # a typo fails before anything heavy
        if not (resume or loop or round_ids or posting):
            raise InputError("name a round (or 'all'), or give --loop, --posting or --resume")
        posting_text = posting.read_text(encoding="utf-8") if posting else None
        with console.status("starting the model (first run assembles and verifies the weights)..."):
            rt.model_or_none()
        for n in rt.notices:
            err.print(f"[yellow]{escape(n)}[/yellow]")
        console.print(
            f"[bold]Model:[/bold] {escape(rt.model_choice.display_name if rt.model_choice else 'none')}"
        )
        it = _open_practice(rt, resume, round_ids, questions, loop, cv, posting_text, seed)
        if it.notice:
            err.print(f"[yellow]{escape(it.notice)}[/yellow]")
        console.print(f"[dim]session {it.session_id} (resume with --resume {it.session_id})[/dim]")
        for m in it.messages():
            # Question and answer text is shown as written: "[start, end]" is not Rich markup.
            console.print(f"[{'cyan' if m['role'] == 'assistant' else 'green'}]{escape(m['content'])}[/]")
        if not _practice_turns(it, settings, voice):
            return  # paused
        _wait_for_judge(it)
        console.print(f"\nSession {it.session_id} saved. Report: interviewer report {it.session_id}")
    except InterviewerError as e:
        _fail(e)
    finally:
        rt.close()


def _open_practice(
    rt: Runtime,
    resume: str | None,
    round_ids: list[str],
    questions: int,
    loop: str | None,
    cv: Path | None,
    posting_text: str | None,
    seed: int | None,
) -> Interview:
    """The session ``practice`` runs: the one to continue, or a new one as the options ask."""
    from interviewer import planner

    if resume:
        # The terminal is the machine's owner: it may continue any session in this data dir, UI ones too.
        return planner.resume_session(rt, rt.store.get(resume).owner, resume)
    choice = planner.Choice(
        round=(planner.FULL_LOOP if len(round_ids) > 1 else round_ids[0]) if round_ids else None,
        per_round=questions,
        loop=loop,
        resume_path=cv,
        posting=posting_text,
        seed=seed,
    )
    return planner.start(rt, "local", choice)


def _practice_turns(it: Interview, settings: Settings, voice: bool) -> bool:
    """Question, answer, follow-up until the interview ends (True) or the candidate pauses it (False)."""
    from interviewer import planner

    hinted: set[str] = set()
    _coding_hint(it, hinted)
    while not it.finished:
        if it.awaiting == "interviewer":
            text = it.advance_all()
            console.print(f"\n[cyan]Interviewer:[/cyan] {escape(text)}")
            _coding_hint(it, hinted)
            if voice:
                _speak(settings, text)
            if it.notice:
                err.print(f"[yellow]{escape(it.notice)}[/yellow]")
                it.notice = None
            continue
        mode, extra = "typed", None
        if voice:
            q = it.question
            answer, extra = _record_answer(settings, q.question if q else None)
            mode = "spoken" if extra else "typed"
        else:
            answer = _read_answer()
        if answer is None or answer.strip() == "/end":
            it.end()
            break
        if answer.strip() == "/pause":
            it.pause()
            console.print(f"Paused. Continue with: interviewer practice --resume {it.session_id}")
            return False
        try:
            command, _, arg = answer.strip().partition(" ")
            if command in ("/code", "/starter"):
                _code_command(it, command, arg.strip())
                continue
            if answer.lstrip().startswith("?"):
                reply = planner.clarify(it, answer.lstrip()[1:])
                console.print(f"[cyan]Interviewer:[/cyan] {escape(reply)}")
                continue
            it.submit(answer, mode=mode, extra=extra)
        except InputError as e:
            err.print(f"[yellow]{escape(str(e))}[/yellow]")
    return True


def _wait_for_judge(it: Interview) -> None:
    """The truth judge rescores answered questions in the background; the report waits for it."""
    from rich.progress import Progress

    with Progress(transient=True) as bar:
        task = bar.add_task("truth judge: checking your answers' key points", total=None)
        it.wait_for_judge(progress=lambda done, total: bar.update(task, completed=done, total=total))


def _coding_hint(it: Interview, hinted: set[str]) -> None:
    """Say once per coding question how to write and test code from the terminal."""
    q = it.question
    if it.finished or q is None or not q.coding_task or q.id in hinted:
        return
    hinted.add(q.id)
    console.print(
        f"[dim]This question has a coding task ({q.coding_task}): '/starter FILE' writes the starter code to "
        "FILE, '/code FILE' runs the hidden tests on it. Then explain your solution as your answer.[/dim]"
    )


def _code_command(it: Interview, command: str, arg: str) -> None:
    """``/starter FILE`` or ``/code FILE`` for the open question's coding task (the UI's code panel)."""
    from interviewer import checker, planner

    q = it.question
    if q is None or not q.coding_task:
        raise InputError("the open question has no coding task")
    if not arg:
        raise InputError(f"usage: {command} FILE")
    path = Path(arg).expanduser()
    if command == "/starter":
        if path.exists():
            raise InputError(f"{path} exists: pick a new file name (it is not overwritten)")
        try:
            path.write_text(checker.get_task(q.coding_task).starter_code, encoding="utf-8")
        except OSError as e:
            raise InputError(f"cannot write {path}: {e.strerror}") from e
        console.print(f"Starter code written to {escape(str(path))}. Test it with: /code {escape(str(path))}")
        return
    try:
        code = path.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from e
    with console.status("running the hidden tests in the sandbox..."):
        verdict = planner.run_tests(it, code)
    console.print(escape(verdict.render_text()), style="green" if verdict.passed else "red")
    console.print("Now explain your solution: the interviewer will ask why.")


def _speak(settings: Settings, text: str) -> None:
    import shutil
    import subprocess
    import tempfile

    from interviewer.speech import get_tts

    player = shutil.which("aplay") or shutil.which("paplay")
    if player is None:
        err.print("[yellow]no audio player (aplay/paplay) found: read the question instead[/yellow]")
        return
    with tempfile.TemporaryDirectory() as d:
        try:
            wav = get_tts(settings).synthesize(text.replace("**", ""), Path(d) / "q.wav")
        except InterviewerError as e:
            err.print(f"[yellow]{escape(str(e))}[/yellow]")
            return
        subprocess.run([player, str(wav)], check=False, capture_output=True)


def _record_answer(settings: Settings, context: str | None) -> tuple[str | None, dict[str, object] | None]:
    """Record from the microphone until Enter, transcribe, and let the candidate edit or accept the text."""
    import shutil
    import subprocess
    import tempfile

    from interviewer.speech import get_stt

    recorder = shutil.which("arecord")
    if recorder is None:
        err.print(
            "[yellow]no microphone recorder (arecord, from alsa-utils) found: type your answer[/yellow]"
        )
        return _read_answer(), None
    with tempfile.TemporaryDirectory() as d:
        wav = Path(d) / "answer.wav"
        console.print("[green]Recording[/green]: speak, then press Enter to stop (or type /end).")
        proc = subprocess.Popen([recorder, "-q", "-f", "S16_LE", "-r", "16000", "-c", "1", str(wav)])
        line = sys.stdin.readline()
        proc.terminate()
        proc.wait(timeout=5)
        if line.strip() in {"/end", "/pause"}:
            return line.strip(), None
        try:
            t = get_stt(settings).transcribe(wav, context=context)
        except InputError as e:
            err.print(f"[yellow]{escape(str(e))}[/yellow] Type your answer instead.")
            return _read_answer(), None
    console.print(f"[dim]heard:[/dim] {escape(t.text)}\n(Enter to send it, or type a corrected answer)")
    edited = _read_answer()
    text = edited if edited and edited.strip() else t.text
    return text, {"audio_seconds": round(t.seconds, 2), "transcript": t.text}


def _read_answer() -> str | None:
    console.print("[green]You[/green] (empty line to send):")
    lines: list[str] = []
    for line in sys.stdin:
        if not line.strip() and lines:
            break
        lines.append(line.rstrip("\n"))
    else:
        if not lines:
            return None
    return "\n".join(lines)


@app.command()
def loops() -> None:
    """List the loop presets (rounds, order and minutes per round)."""
    from interviewer.loops import list_presets

    try:
        presets = list_presets()
    except InterviewerError as e:
        _fail(e)
    table = Table("id", "name", "rounds (minutes)")
    for p in presets:
        table.add_row(p.id, p.name, ", ".join(f"{r.round.value} ({r.minutes})" for r in p.rounds))
    console.print(table)


@app.command()
def sessions(
    data_dir: DataDir = None,
    limit: Annotated[int, typer.Option(help="how many to list")] = 20,
) -> None:
    """List past sessions, newest first."""
    from interviewer.store import SessionStore

    settings = _settings(data_dir=data_dir)
    try:
        rows = SessionStore(settings.store_location).list(limit=limit)
    except InterviewerError as e:
        _fail(e)
    if not rows:
        console.print(
            "No sessions yet. Start one with `interviewer practice phone-screen` or `interviewer serve`."
        )
        return
    table = Table("updated", "title", "status")
    table.add_column("id", no_wrap=True)  # copied into `report` / `--resume`: never wrapped
    for r in rows:
        when = dt.datetime.fromtimestamp(r.updated).strftime("%Y-%m-%d %H:%M")
        table.add_row(when, r.title, r.status, r.id)
    console.print(table)


@app.command()
def report(
    session: Annotated[str, typer.Argument(help="session id (see `interviewer sessions`)")],
    html: Annotated[
        Path | None, typer.Option("--html", help="also write a self-contained HTML report here")
    ] = None,
    markdown: Annotated[
        Path | None, typer.Option("--md", help="write the Markdown report here instead of printing it")
    ] = None,
    data_dir: DataDir = None,
) -> None:
    """The feedback report of a session: scorecards, evidence, why-chain depth, study plan."""
    from interviewer.report import build_report, render_html, render_markdown
    from interviewer.runtime import Runtime

    rt = Runtime(_settings(data_dir=data_dir))
    try:
        rep = build_report(rt.store, rt.bank, session, scorer=rt.scorer())
    except InterviewerError as e:
        _fail(e)
    text = render_markdown(rep)
    if markdown:
        markdown.write_text(text, encoding="utf-8")
        console.print(f"Markdown report -> {markdown}")
    else:
        print(text)
    if html:
        html.write_text(render_html(rep), encoding="utf-8")
        console.print(f"HTML report -> {html}")


@app.command()
def index(
    force: Annotated[
        bool, typer.Option("--force", help="rebuild even if the content has not changed")
    ] = False,
    data_dir: DataDir = None,
) -> None:
    """Build (or rebuild) the retrieval index over the knowledge documents and rubrics."""
    from interviewer.retrieval import build_index

    settings = _settings(data_dir=data_dir)
    try:
        report = build_index(force=force, progress=True, settings=settings)
    except InterviewerError as e:
        _fail(e)
    state = "rebuilt" if report.rebuilt else "already up to date"
    console.print(f"index {state}: {report.chunks} chunks, {report.seconds:.1f} s, at {report.location}")


@app.command()
def check(
    task: Annotated[str | None, typer.Argument(help="task id (see --list)")] = None,
    file: Annotated[Path | None, typer.Argument(help="your solution file")] = None,
    list_: Annotated[bool, typer.Option("--list", help="list the task ids, one per line")] = False,
    seed: Annotated[
        int | None, typer.Option(help="draw the hidden inputs from this seed (a verdict prints its seed)")
    ] = None,
) -> None:
    """Run a coding task's hidden tests in the sandbox; exit 0 only when every test passes."""
    from interviewer import checker

    if list_:
        for t in checker.list_tasks():
            print(t.id)
        return
    if not task or not file:
        _fail(InputError("usage: interviewer check TASK FILE [--seed N] (or --list)"), code=2)
    assert task is not None and file is not None
    try:
        code = file.read_text(encoding="utf-8")
    except OSError as e:
        _fail(InputError(f"cannot read {file}: {e.strerror}"), code=2)
    try:
        verdict = checker.check(task, code, prewarm=False, seed=seed)  # one shot: no box to keep warm
    except InterviewerError as e:
        _fail(e, code=2)
    print(verdict.render_text())
    raise typer.Exit(0 if verdict.passed else 1)


@app.command()
def grade(
    input: Annotated[
        Path, typer.Option("--input", help="JSONL: question, reference_answer or rubric, answer")
    ],
    output: Annotated[Path, typer.Option("--output", help="JSONL written with score (0-4) and evidence")],
    judge: Annotated[
        bool,
        typer.Option(
            "--judge/--no-judge",
            help="also ask the model, per key point, whether each answer states, contradicts or omits it "
            "(the embedded model, or INTERVIEWER_BASE_URL)",
        ),
    ] = False,
    reader: Annotated[
        bool,
        typer.Option(
            "--reader/--no-reader",
            help="also read each bank question's probes off its answer with the model (items naming a bank "
            "`question_id`); findings count at the model's measured weight (interviewer calibrate --reader)",
        ),
    ] = False,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
) -> None:
    """Score any answers against a reference answer or a rubric."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from interviewer.scoring.batch import grade_file

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    rt = None
    try:
        with Progress(*columns, console=err) as bar:
            model, weight, probe_reader, questions = None, 0.5, None, None
            if judge or reader:
                from interviewer.runtime import Runtime

                settings = _settings(base_url=base_url, api_key=api_key)
                rt = Runtime(settings)
                port = rt.model(progress=lambda m: bar.console.print(f"[dim]{escape(m)}[/dim]"))
                weight = settings.judge_weight
                model = port if judge else None
                if reader:
                    from interviewer.scoring.probe_reader import ProbeReader

                    choice = rt.model_choice
                    model_id = choice.model if choice is not None else port.name
                    probe_reader = ProbeReader.for_model(port, settings.data_dir, model_id)
                    questions = rt.bank.questions
            doing = "judging" if judge else "reading" if reader else "scoring"
            task = bar.add_task(f"{doing} with {port.name}" if rt else doing, total=None)
            n = grade_file(
                input,
                output,
                judge_model=model,
                judge_weight=weight,
                progress=lambda d, t: bar.update(task, completed=d, total=t),
                reader=probe_reader,
                questions=questions,
            )
    except InterviewerError as e:
        _fail(e)
    finally:
        if rt is not None:
            rt.close()
    console.print(
        f"scored {n} answer(s) -> {output}"
        + (" with the truth judge" if judge else "")
        + (" with the reading probes" if reader else "")
    )


@app.command()
def calibrate(
    csv: Annotated[Path, typer.Option("--csv", help="graded answers (Mohler format)")] = MOHLER_CSV,
    folds: Annotated[int, typer.Option(help="question-level cross-validation folds")] = 5,
    write: Annotated[bool, typer.Option(help="write the fitted parameters into the package")] = True,
    output: Annotated[
        Path | None, typer.Option(help="where to write the parameters (default: the package)")
    ] = None,
    features_cache: Annotated[
        Path | None, typer.Option(help="an .npz to reuse the answers' embeddings between runs")
    ] = None,
    traps: Annotated[
        Path | None, typer.Option(help="the trap set to report beside Mohler (default: tests/data/traps)")
    ] = None,
    reader: Annotated[
        bool,
        typer.Option(
            "--reader",
            help="instead: measure the configured model's probe reading and store it as its weight",
        ),
    ] = False,
) -> None:
    """Fit the offline scorer against human grades (question-level CV); report the trap set beside it."""
    if reader:
        _calibrate_reader()
        return
    from rich.progress import Progress

    from interviewer.scoring.calibrate import CALIBRATION_PATH, run_calibration

    with Progress(transient=True) as bar:
        tasks: dict[str, object] = {}

        def step(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done, total=total)  # type: ignore[arg-type]

        try:
            report = run_calibration(
                csv,
                folds=folds,
                progress=step,
                output=(output or CALIBRATION_PATH) if write else None,
                features_cache=features_cache,
            )
        except InterviewerError as e:
            _fail(e)
    print(report.table())
    print(_trap_lines(traps))


def _calibrate_reader() -> None:
    """Read the probe set's dev half with the configured model; store its agreement as the model's weight."""
    from rich.progress import Progress

    from interviewer.runtime import Runtime
    from interviewer.scoring.reader import DEFAULT_MODE
    from interviewer.scoring.reader_trust import (
        default_probe_set,
        evaluate,
        load_probe_set,
        load_trust,
        store_trust,
    )

    settings = _settings()
    rt = Runtime(settings)
    try:
        items = load_probe_set(default_probe_set())
        port = rt.model(progress=lambda m: err.print(f"[dim]{escape(m)}[/dim]"))
        choice = rt.model_choice
        model_id = choice.model if choice is not None else port.name
        with Progress(transient=True, console=err) as bar:
            task = bar.add_task(f"reading probes with {port.name}", total=None)
            ev = evaluate(
                port, items, splits=("dev",), progress=lambda d, t: bar.update(task, completed=d, total=t)
            )
        path = store_trust(settings.data_dir, model_id, ev, mode=DEFAULT_MODE, probe_set=default_probe_set())
    except InterviewerError as e:
        _fail(e)
    finally:
        rt.close()
    print(ev.table())
    console.print(f"reader weight for {model_id}: {ev.accuracy('dev'):.2f} -> {path}")
    trust = load_trust(settings.data_dir, model_id)
    if trust is not None and trust.quiet_kinds():
        console.print(f"findings of {', '.join(trust.quiet_kinds())} probes are noted only (below the bar)")


def _trap_lines(traps: Path | None) -> str:
    """The trap set's figures with the shipped scorer, or a line saying there is no trap set."""
    from interviewer.config import MOHLER_CSV
    from interviewer.content import load_bank
    from interviewer.scoring.calibrate import held_out_half, read_traps, trap_figures
    from interviewer.scoring.scorer import RubricScorer

    root = traps or MOHLER_CSV.parents[2] / "tests" / "data" / "traps"
    found = read_traps(root) if root.is_dir() else {}
    if not found:
        return f"trap set: none found under {root} (skipped; see tests/data/traps/README.md)"
    bank = load_bank(MOHLER_CSV.parents[2])
    questions = [q for q in (bank.questions.get(i) for i in found) if q is not None]
    scorer = RubricScorer(neighbours=list(bank.questions.values()))
    by_id = {q.id: q for q in questions}
    cache: dict[tuple[str, str], float] = {}

    def score(qid: str, text: str) -> float:
        if (qid, text) not in cache:
            cache[(qid, text)] = scorer.score(by_id[qid], [text]).overall
        return cache[(qid, text)]

    figures = trap_figures(found, score, list(by_id))
    if figures is None:
        return f"trap set: no trap file under {root} names a bank question (skipped)"
    lines = figures.lines("trap set (offline scorer, all questions)")
    held = trap_figures(found, score, [q for q in by_id if held_out_half(q)])
    if held is not None:
        lines += held.lines("trap set, held-out half of the question-id split")
    return "\n".join(lines)


@app.command()
def say(
    text: Annotated[str, typer.Argument(help="what the interviewer should say")],
    output: Annotated[Path, typer.Option("-o", "--output", help="WAV file to write")] = Path("out.wav"),
) -> None:
    """Speak TEXT with the interviewer's voice into a WAV file (checks the text-to-speech set-up)."""
    from interviewer.speech import get_tts

    try:
        path = get_tts(_settings()).synthesize(text, output)
    except InterviewerError as e:
        _fail(e)
    console.print(f"wrote {path}")


@app.command()
def transcribe(
    file: Annotated[Path, typer.Argument(help="an audio file (WAV, WebM/Opus, MP3, ...)")],
    context: Annotated[
        str | None, typer.Option(help="the question being answered, to help with terms")
    ] = None,
) -> None:
    """Print what FILE says (checks the speech-to-text set-up)."""
    from interviewer.speech import get_stt

    try:
        t = get_stt(_settings()).transcribe(file, context=context)
    except InterviewerError as e:
        _fail(e)
    print(t.text)
    err.print(f"[dim]{t.seconds:.1f} s of audio, real-time factor {t.rtf:.2f}, {t.engine}[/dim]")


@app.command()
def models(base_url: BaseUrl = None, api_key: ApiKey = None) -> None:
    """List the models an OpenAI-compatible server offers (a connection test)."""
    from interviewer.llm.client import test_connection

    settings = _settings(base_url=base_url, api_key=api_key)
    if not settings.base_url:
        _fail(InputError("give --base-url or set INTERVIEWER_BASE_URL (the embedded model needs no listing)"))
    assert settings.base_url is not None
    report = test_connection(settings.base_url, settings.api_key)
    console.print(report.message)
    for m in report.models:
        print(m)
    raise typer.Exit(0 if report.ok else 1)


@app.command()
def doctor(
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    model: ModelOpt = None,
    data_dir: DataDir = None,
    only: Annotated[
        list[str] | None,
        typer.Option("--only", help="run only this check (repeatable), e.g. --only packages"),
    ] = None,
) -> None:
    """Check this install (packages vs the lock, model weights, sandbox, speech, model server, database,
    index) and print a fix for each problem; exits 1 if any check fails."""
    from interviewer.doctor import CHECKS, run

    names = [n for n, _ in CHECKS]
    for n in only or []:
        if n not in names:
            _fail(InputError(f"unknown check '{n}'; choose from: {', '.join(names)}"))
    settings = _settings(base_url=base_url, api_key=api_key, model=model, data_dir=data_dir)
    t = Table(show_header=True, header_style="bold", show_lines=False)
    t.add_column("")
    t.add_column("check")
    t.add_column("finding")
    marks = {"ok": "[green]ok[/green]", "fail": "[red]FAIL[/red]", "skip": "[dim]skip[/dim]"}
    findings = run(settings, only)
    for f in findings:
        detail = escape(f.detail) + (f"\n[yellow]fix:[/yellow] {escape(f.fix)}" if f.fix else "")
        t.add_row(marks[f.status], f.name, detail)
    console.print(t)
    failed = [f.name for f in findings if f.status == "fail"]
    if failed:
        err.print(f"[red]{len(failed)} check(s) failed:[/red] {', '.join(failed)}")
    raise typer.Exit(1 if failed else 0)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
