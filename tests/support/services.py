"""Real servers for deployment tests: a Chroma server (`chroma run`) and nginx in front of app replicas.

Both start on free loopback ports in temp dirs and stop afterwards. nginx runs the project's own
deploy/nginx.conf with its addresses replaced, so the tested proxy config is the documented one.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NGINX_CONF = REPO / "deploy" / "nginx.conf"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_http(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 60.0) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + timeout
    while True:
        try:
            with opener.open(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not come up:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.2)


@contextmanager
def chroma_server() -> Iterator[str]:
    """`chroma run` (shipped with chromadb) on a free port; yields its URL."""
    beside = Path(sys.executable).with_name("chroma")
    binary = str(beside) if beside.exists() else shutil.which("chroma")
    if not binary:
        raise RuntimeError("the `chroma` command (installed with chromadb) is missing")
    root = Path(tempfile.mkdtemp(prefix="interviewer-chroma-"))
    port = free_port()
    log = root / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [binary, "run", "--path", str(root / "db"), "--host", "127.0.0.1", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_http(f"{url}/api/v2/heartbeat", proc, log)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(root, ignore_errors=True)


def open_connections(port: int) -> int:
    """Established TCP connections to a local listening ``port`` (Linux: read from /proc/net/tcp{,6})."""
    n = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            local, state = fields[1], fields[3]
            if state == "01" and int(local.rsplit(":", 1)[1], 16) == port:
                n += 1
    return n


def nginx_config(upstreams: Sequence[int], listen: int) -> str:
    """deploy/nginx.conf with its replica and listen addresses replaced."""
    text = NGINX_CONF.read_text(encoding="utf-8")
    lines = [f"        server 127.0.0.1:{p} max_fails=1 fail_timeout=10s;" for p in upstreams]
    block = "\n".join(lines)
    text = text.replace(
        "        server 127.0.0.1:7861 max_fails=1 fail_timeout=10s;\n"
        "        server 127.0.0.1:7862 max_fails=1 fail_timeout=10s;",
        block,
    )
    text = text.replace("listen 127.0.0.1:7860;", f"listen 127.0.0.1:{listen};")
    assert block in text and f"127.0.0.1:{listen}" in text, "deploy/nginx.conf changed shape"
    return text


@contextmanager
def nginx_proxy(upstreams: Sequence[int]) -> Iterator[str]:
    """nginx (Debian's package, installed by `make test`) in front of ``upstreams``; yields its URL."""
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(binary).exists():
        raise RuntimeError("nginx is not installed: run `make test` (it installs Debian's nginx)")
    root = Path(tempfile.mkdtemp(prefix="interviewer-nginx-"))
    for d in ("logs", "tmp/body", "tmp/proxy", "tmp/fastcgi", "tmp/uwsgi", "tmp/scgi"):
        (root / d).mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = root / "nginx.conf"
    conf.write_text(nginx_config(upstreams, port), encoding="utf-8")
    if os.geteuid() == 0:  # worker processes drop to nobody: let them use the temp dirs
        for d in root.rglob("*"):
            if d.is_dir():
                d.chmod(0o777)
        root.chmod(0o755)
    log = root / "logs" / "error.log"
    proc = subprocess.Popen(
        [binary, "-c", str(conf), "-p", str(root), "-g", "daemon off;"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        _wait_http(url, proc, log)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(root, ignore_errors=True)
