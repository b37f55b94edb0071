"""Panels beside the chat: the coding task with its sandbox, the design whiteboard, the report, and progress over
sessions."""

from __future__ import annotations

import datetime as dt
import logging
import secrets
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import gradio as gr

from interviewer.content import Round
from interviewer.desk import Desk
from interviewer.engine.interview import Interview
from interviewer.errors import InputError, InterviewerError
from interviewer.runtime import Runtime
from interviewer.text import inert_markdown

log = logging.getLogger(__name__)


class CodePanel:
    """The code panel: shown while the open question has a sandboxed task (and the whiteboard, while it is a
    design question with expected components)."""

    def update(self, it: Interview | None) -> tuple[Any, Any, Any, Any]:
        """The code panel (shown while the open question has a sandboxed task; the editor's text is kept), its
        statement, the editor, and the whiteboard panel's visibility."""
        board = gr.update(visible=Desk.has_whiteboard(it))
        return (*self._code(it), board)

    def _code(self, it: Interview | None) -> tuple[Any, Any, Any]:
        q = it.question if it is not None and not it.finished else None
        task_id = q.coding_task if q is not None else None
        if not task_id:
            return gr.update(visible=False), gr.update(), gr.update()
        try:
            from interviewer import checker

            task = checker.get_task(task_id)
        except InterviewerError as e:
            return (
                gr.update(visible=True),
                gr.update(value=f"Coding task `{task_id}` is unavailable: {e}"),
                gr.update(),
            )
        language = "cpp" if task.language == "cpp" else ("python" if task.language == "python" else None)
        runs = it.state.code_runs.get(q.id) if it is not None and q is not None else None
        if not runs and it is not None and it.level == 0:
            # The task was just shown: start its sandbox in the background so "Run tests" finds it warm.
            threading.Thread(
                target=self._prepare, args=(task.id,), name=f"prepare-{task.id}", daemon=True
            ).start()
        editor = (
            gr.update(language=language) if runs else gr.update(value=task.starter_code, language=language)
        )
        return (
            gr.update(visible=True),
            gr.update(value=f"**{task.title}** (`{task.id}`)\n\n{task.statement}"),
            editor,
        )

    @staticmethod
    def _prepare(task_id: str) -> None:
        from interviewer import checker

        try:
            checker.prepare(task_id)
        except InterviewerError as e:  # the run itself will report it with a verdict
            log.info("could not pre-start the sandbox for %s: %s", task_id, e)

    # handlers ------------------------------------------------------------------------------------


Chat = list[dict[str, str]]


def shown(chat: Chat) -> Chat:
    """The chat as displayed: the candidate's markup (HTML, images, links) shows as typed and never renders."""
    return [{**m, "content": inert_markdown(m["content"])} if m["role"] == "user" else m for m in chat]


class BoardPanel:
    """The design whiteboard: Mermaid text drawn live, and "Send diagram" for the interviewer's question on it."""

    def __init__(
        self,
        desk: Desk,
        owner: Callable[[str | None, gr.Request | None], str],
        bounded: Callable[..., None],
        exclusive: Callable[[str | None], AbstractContextManager[bool]],
        status: Callable[[Interview | None], str],
    ) -> None:
        self.desk = desk
        self._owner = owner
        self._bounded = bounded
        self._exclusive = exclusive
        self._status = status

    def draw(self, text: str) -> str:
        """The board as the candidate types (an unreadable diagram says what to fix)."""
        from interviewer import whiteboard

        self._bounded(diagram=text)
        return whiteboard.render_markdown(text or "")

    def send(self, text: str, sid: str | None, owner: str | None, request: gr.Request) -> tuple[Chat, str]:
        """Store the diagram; the interviewer's question on it joins the chat (it is not an answer)."""
        self._bounded(diagram=text)
        with self._exclusive(sid) as ok:
            if not ok:
                raise gr.Error("the interviewer is still replying: send the diagram again in a moment")
            try:
                it = self.desk.open(sid, self._owner(owner, request))
            except InterviewerError as e:
                raise gr.Error(str(e)) from e
            try:
                asked = self.desk.submit_diagram(it, text or "")
            except InputError as e:
                gr.Warning(str(e))
                return shown(it.messages()), self._status(it)
            if asked is None:
                gr.Info("The diagram has every part I expected: walk me through it in the answer box.")
            return shown(it.messages()), self._status(it)


class Reports:
    """The report of one interview and the progress over an owner's sessions."""

    def __init__(
        self, runtime: Runtime, desk: Desk, owner: Callable[[str | None, gr.Request | None], str]
    ) -> None:
        self.rt = runtime
        self.desk = desk
        self._owner = owner

    def show_report(self, sid: str | None, owner: str | None, request: gr.Request) -> tuple[str, list[str]]:
        from interviewer.report import render_html, render_markdown

        owner = self._owner(owner, request)
        if not sid:
            raise gr.Error("no interview yet: start or reopen one first")
        try:
            rep = self.desk.report(sid, owner)  # waits while the truth judge still rescores the last answer
        except InterviewerError as e:
            raise gr.Error(str(e)) from e
        # A folder per download that nobody can guess; Gradio's copy (the link) expires with its cache.
        out = self.rt.settings.data_dir / "reports" / secrets.token_hex(16)
        out.mkdir(parents=True, exist_ok=True)
        md = render_markdown(rep)
        html_path, md_path = out / f"report-{sid}.html", out / f"report-{sid}.md"
        html_path.write_text(render_html(rep), encoding="utf-8")
        md_path.write_text(md, encoding="utf-8")
        return md, [str(html_path), str(md_path)]

    def progress(self, owner: str | None, request: gr.Request) -> tuple[Any, str]:
        import pandas as pd

        points = self.desk.skills(self._owner(owner, request))
        if not points:
            return pd.DataFrame({"when": [], "score": [], "round": []}), "No scored answers yet."
        df = pd.DataFrame(
            {
                "when": [dt.datetime.fromtimestamp(p.when) for p in points],
                "score": [p.score for p in points],
                "round": [Round(p.round).title for p in points],
                "topic": [p.topic for p in points],
            }
        )
        table = df.groupby(["round", "topic"])["score"].agg(["mean", "count", "last"]).reset_index()
        lines = ["| round | topic | mean | answers | last |", "|---|---|---|---|---|"]
        lines += [
            f"| {r.round} | {r.topic} | {r.mean:.1f} | {r.count} | {r.last:.1f} |" for r in table.itertuples()
        ]
        return df, "\n".join(lines)
