"""Start ``interviewer serve`` as the README does, in a subprocess on a free loopback port, and wait for it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INTERVIEWER = Path(sys.executable).parent / "interviewer"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def app_env(data_dir: Path, base_url: str | None, **extra: str) -> dict[str, str]:
    """The environment a user would set, plus offline switches; nothing leaves the machine."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INTERVIEWER_", "OPENAI_"))}
    env.update(
        GRADIO_ANALYTICS_ENABLED="False",
        HF_HUB_OFFLINE="1",
        ANONYMIZED_TELEMETRY="False",
        INTERVIEWER_DATA_DIR=str(data_dir),
        PYTHONUNBUFFERED="1",
    )
    if base_url:
        env["INTERVIEWER_BASE_URL"] = base_url
    env.update(extra)
    return env


@dataclass
class AppProcess:
    """One ``interviewer serve`` process; ``log`` collects its output."""

    data_dir: Path
    base_url: str | None
    port: int = field(default_factory=free_port)
    args: tuple[str, ...] = ()
    extra_env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    ready_s: float = 0.0  # cold start: spawn to the page answering 200

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def log_path(self) -> Path:
        return self.data_dir / f"serve-{self.port}.log"

    def start(self, timeout: float = 120.0) -> AppProcess:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        self.started_at = time.perf_counter()
        self.proc = subprocess.Popen(
            [str(INTERVIEWER), "serve", "--port", str(self.port), *self.args],
            cwd=REPO,
            env=app_env(self.data_dir, self.base_url, **self.extra_env),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # our own process group, so a kill reaches only this app
        )
        self.wait_ready(timeout)
        self.ready_s = time.perf_counter() - self.started_at
        return self

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"interviewer serve exited with {self.proc.returncode}:\n{self.output()}")
            try:
                with urllib.request.urlopen(self.url, timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        raise TimeoutError(f"interviewer serve not ready in {timeout} s:\n{self.output()}")

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill9(self) -> None:
        """SIGKILL, as a crash would: no cleanup runs."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill9()

    def rss_mb(self, *, peak: bool = False) -> float:
        """Resident memory of the app's process tree (MiB): now, or each process's peak."""
        assert self.proc is not None
        return tree_rss_mb(self.proc.pid, peak=peak)


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(d.name))
    return kids


def _status_kb(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_rss_mb(pid: int, *, peak: bool = False) -> float:
    """RSS (or each process's peak, VmHWM) summed over a process and its descendants, in MiB (Linux /proc)."""
    todo, total = [pid], 0
    while todo:
        p = todo.pop()
        total += _status_kb(p, "VmHWM" if peak else "VmRSS")
        todo.extend(_children(p))
    return total / 1024
