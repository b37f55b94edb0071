"""What every request must pass before any work is done for it: its owner, its fields, admin rights."""

from __future__ import annotations

import gradio as gr

from interviewer.admin import AdminGate
from interviewer.config import Settings
from interviewer.errors import InputError
from interviewer.limits import check_fields
from interviewer.owners import OwnerTokens, Resolved


class RequestChecks:
    """The owner behind a request, the size and type of what it sent, and whether it may act as admin.

    Each check raises ``gr.Error`` with the project's message, so a handler calls it first and does nothing
    else for a request that fails it.
    """

    def __init__(self, settings: Settings, *, admin: bool) -> None:
        self.settings = settings
        self.gate = AdminGate(settings.admin_token, local=admin)
        secret = settings.owner_secret  # shared by a deployment's replicas (docs/deploy.md)
        self.owners = OwnerTokens(secret.encode()) if secret else OwnerTokens.for_data_dir(settings.data_dir)

    def owner(self, token: str | None, request: gr.Request | None) -> str:
        """The owner of this request: the login, else the browser's signed token (a forged one owns nothing)."""
        return self.resolve(token, request).owner

    def resolve(self, token: str | None, request: gr.Request | None) -> Resolved:
        try:
            return self.owners.resolve(
                token, getattr(request, "username", None) if request is not None else None
            )
        except InputError as e:  # a client sent something other than a token string
            raise gr.Error(str(e)) from e

    def bounded(self, **fields: object) -> None:
        """Every text a visitor sent is text and within its cap, before any work is done for it."""
        try:
            check_fields(fields, max_answer_chars=self.settings.max_answer_chars)
        except InputError as e:
            raise gr.Error(str(e)) from e

    def admin(self, token: object, request: gr.Request | None) -> None:
        """Only an admin changes the app for everyone (interviewer/admin.py): checked before anything else."""
        try:
            self.gate.check(token, dict(request.headers) if request is not None else None)
        except InputError as e:
            raise gr.Error(str(e)) from e
