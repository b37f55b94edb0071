"""One Settings object, read from ``INTERVIEWER_*`` environment variables and the standard OpenAI ones.

CLI flags override the environment by passing keyword arguments to :func:`load_settings`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import AliasChoices, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from interviewer.errors import ConfigError

EmbeddedChoice = Literal["qwen2.5-coder-1.5b", "smollm2-135m"]


def _default_content_dir() -> Path:
    """The repo's content in a checkout or editable install; the packaged copy in a wheel."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent, here / "_content"):
        if (candidate / "rubrics").is_dir():
            return candidate
    return here.parent


# The public Mohler short-answer set the offline scorer is calibrated on (data/mohler/README.md).
MOHLER_CSV = _default_content_dir() / "data" / "mohler" / "answers.csv"


class Settings(BaseSettings):
    """Everything configurable. Constructing it does no I/O beyond reading the environment."""

    model_config = SettingsConfigDict(env_prefix="INTERVIEWER_", extra="ignore", populate_by_name=True)

    base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("INTERVIEWER_BASE_URL", "OPENAI_BASE_URL")
    )
    api_key: str | None = Field(
        default=None, validation_alias=AliasChoices("INTERVIEWER_API_KEY", "OPENAI_API_KEY")
    )
    model: str | None = None  # None: the server's first model from /v1/models
    temperature: float = Field(default=0.3, ge=0.0, le=2.0)
    max_tokens: int = Field(default=160, gt=0)
    timeout: float = Field(default=60.0, gt=0)  # seconds for one whole reply
    connect_timeout: float = Field(default=5.0, gt=0)
    embedded_model: EmbeddedChoice = "qwen2.5-coder-1.5b"
    embedded_threads: int = Field(default_factory=lambda: max(1, min(os.cpu_count() or 2, 8)))
    embedded_ctx: int = Field(default=4096, gt=0)
    data_dir: Path = Field(default_factory=lambda: Path(platformdirs.user_data_dir("interviewer")))
    content_dir: Path = Field(default_factory=_default_content_dir)
    # A shared session database for several app replicas, e.g. postgresql+psycopg://user:pw@host/interviewer;
    # unset: SQLite in the data dir.
    database_url: str | None = None
    chroma_url: str | None = None  # e.g. http://chroma:8000 for a shared Chroma server
    retrieval: bool = True  # False: no study-material index; follow-ups lean on the authored why-chain only
    answer_seconds: int | None = Field(default=None, gt=0)  # optional per-answer timer
    max_answer_chars: int = Field(default=20_000, gt=0)
    # The truth judge: per key point, the model says stated / contradicted / absent while the
    # candidate reads the next question, and the question is rescored with it. INTERVIEWER_JUDGE=0: offline only.
    judge: bool = True
    # How much the judge's verdicts count against the offline signal (0-1). Low: the embedded 1.5B model's
    # verdicts are worse than the offline ones on every trap-set label, and no question-level fold gained a
    # held-out pair from it (BENCHMARKS.md, "Truth judge"). Measure a stronger server with
    # benchmarks/bench_judge.py and raise this for it.
    judge_weight: float = Field(default=0.1, ge=0.0, le=1.0)
    # The interviewer reads each answer before choosing its follow-up (challenge a wrong claim, hint,
    # redirect, answer a question back, go deeper). INTERVIEWER_LISTEN=0: the authored two whys, in order.
    listen: bool = True
    # Beside the embedded model, background work (the reader, the truth judge) runs on a second server on the same
    # weights at the OS's idle priority, paused while the live one serves a candidate: about 0.8 GB of private
    # memory. INTERVIEWER_BACKGROUND_SERVER=0: it uses the live server's background slot instead and steps aside
    # while a reply streams (a live request arriving mid-prompt then waits for that prompt step).
    background_server: bool = True
    # The key that signs browser owner tokens. Unset: a random key kept in the data dir (one process). Several
    # replicas of one deployment must share it (docs/deploy.md), or a candidate moved to another replica after a
    # failover is a stranger there. At least 32 characters.
    owner_secret: str | None = Field(default=None, min_length=32, repr=False)
    # The credential for admin actions in the web app (switching the model, testing a connection): required
    # whenever it is set. Unset: those actions exist only in single-user local mode (interviewer/admin.py,
    # docs/security.md). At least 32 characters.
    admin_token: str | None = Field(default=None, min_length=32, repr=False)
    host: str = "127.0.0.1"
    port: int = Field(default=7860, ge=0, le=65535)
    # Speech: a separate OpenAI-compatible audio server, when set.
    audio_base_url: str | None = None
    audio_api_key: str | None = None
    audio_stt_model: str = "whisper-1"  # model names sent to that server
    audio_tts_model: str = "tts-1"
    audio_voice: str = "alloy"
    stt_model: Literal["tiny.en", "base"] = "tiny.en"  # local Whisper; base is slower and more accurate
    tts_engine: Literal["auto", "piper", "espeak"] = "auto"  # auto: piper, else espeak-ng
    max_audio_seconds: int = Field(default=300, gt=0)  # longest spoken answer accepted
    end_of_turn_ms: int = Field(default=700, ge=300, le=10_000)  # silence that ends a streamed spoken answer
    # Coding checks: "strict" (bubblewrap, seccomp, cgroup) or "weak" (your own user, at your own risk).
    sandbox: Literal["strict", "weak"] = "strict"

    @field_validator("base_url", "chroma_url", "audio_base_url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is None or v.strip() == "":
            return None
        v = v.strip().rstrip("/")
        if not v.startswith(("http://", "https://")):
            raise ValueError(f"'{v}' is not an http(s) URL, e.g. http://127.0.0.1:8000/v1")
        return v

    @field_validator("database_url")
    @classmethod
    def _db_url(cls, v: str | None) -> str | None:
        if v is None or v.strip() == "":
            return None
        v = v.strip()
        if not v.startswith(("postgresql", "sqlite")) or "://" not in v:
            raise ValueError(f"'{v}' is not a postgresql:// or sqlite:// URL")
        if v.startswith("postgresql://") or v.startswith("postgres://"):
            v = "postgresql+psycopg://" + v.split("://", 1)[1]  # psycopg 3 is the driver we ship
        return v

    @property
    def db_path(self) -> Path:
        return self.data_dir / "sessions.sqlite3"

    @property
    def store_location(self) -> Path | str:
        """Where sessions are stored: the database URL when set, else the SQLite file in the data dir."""
        return self.database_url or self.db_path

    @property
    def chroma_dir(self) -> Path:
        return self.data_dir / "chroma"

    @property
    def uses_embedded_model(self) -> bool:
        return self.base_url is None


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment, with non-None ``overrides`` (CLI flags) on top."""
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**given)
    except ValidationError as e:
        raise ConfigError("invalid setting: " + "; ".join(_describe(err) for err in e.errors())) from e


def _describe(err: Any) -> str:
    """One validation error as the user set it: the variable's name, what is wrong, what was given."""
    loc = str(err["loc"][0]) if err["loc"] else "?"
    names = [loc if loc.isupper() else f"INTERVIEWER_{loc.upper()}"]
    for info in Settings.model_fields.values():  # an aliased field: name every variable that sets it
        if isinstance(info.validation_alias, AliasChoices) and loc in info.validation_alias.choices:
            names = [str(c) for c in info.validation_alias.choices]
    msg = str(err["msg"]).removeprefix("Value error, ")
    return f"{' or '.join(names)}: {msg} (got {err['input']!r})"
