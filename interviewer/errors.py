"""One error tree. Every message says what went wrong and what to do next."""

from __future__ import annotations


class InterviewerError(Exception):
    """Base of every error the app raises on purpose; its message is safe to show a user."""


class ConfigError(InterviewerError):
    """A setting is missing or invalid."""


class ContentError(InterviewerError):
    """A rubric, task or knowledge file is malformed; the message names the file and the field."""


class ModelError(InterviewerError):
    """The model server is unreachable, slow, or answered with an error."""


class ModelUnavailable(ModelError):
    """No model server answers at the configured address."""


class ModelTimeout(ModelError):
    """The model server did not answer in time."""


class ModelClientBroken(ModelError):
    """The model client itself cannot send a request (a library mismatch, a bad setting): not the server."""


class EmbeddedModelError(ModelError):
    """The embedded model could not be assembled, verified or started."""


class StoreError(InterviewerError):
    """The session database is missing, corrupt or unwritable."""


class SessionNotFound(StoreError):
    """No session with that id (or it belongs to someone else)."""


class IndexError_(InterviewerError):
    """The retrieval index is missing or corrupt."""


class CheckerError(InterviewerError):
    """The code checker could not run the candidate's code (not a failing test: that is a verdict)."""


class SandboxUnavailable(CheckerError):
    """Isolation cannot be set up on this machine; the checker refuses to run code."""


class InputError(InterviewerError):
    """The candidate's input cannot be used as given (empty, too large, wrong format)."""


class SpeechError(InterviewerError):
    """Speech-to-text or text-to-speech could not run (engine missing, weights failed verification, server down)."""


class AudioInputError(InputError):
    """A recording cannot be transcribed; ``reason`` is one of the codes in ``interviewer.speech.AUDIO_REASONS``."""

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason
