"""A real PostgreSQL server for tests: Debian's postgresql package, a fresh cluster in a temp dir on a free port.

``make test`` installs the package (scripts/system-deps.sh). As root the server runs as the ``postgres`` user
(PostgreSQL refuses to run as root); the cluster trusts local connections and skips fsync, which is fine for a
throwaway test cluster.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


def _bindir() -> Path | None:
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(candidate, "initdb").exists():
            return Path(candidate)
    found = shutil.which("initdb")
    return Path(found).resolve().parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Postgres:
    port: int
    user: str
    root: Path

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(
            f"host=127.0.0.1 port={self.port} user={self.user} dbname=postgres", autocommit=True
        ) as c:
            c.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


@contextmanager
def postgres_server() -> Iterator[Postgres]:
    """Start a throwaway cluster; stop it and delete its files afterwards."""
    bindir = _bindir()
    if bindir is None:
        raise RuntimeError("PostgreSQL is not installed: run `make test` (it installs Debian's postgresql)")
    root = Path(tempfile.mkdtemp(prefix="interviewer-pg-"))
    as_root = os.geteuid() == 0
    prefix: list[str] = []
    if as_root:
        shutil.chown(root, user="postgres", group="postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
    data, sock = root / "data", root / "sock"
    port = _free_port()
    user = "interviewer"

    def run(*args: str) -> None:
        subprocess.run([*prefix, *args], check=True, capture_output=True, timeout=120, cwd=root)

    try:
        run("mkdir", "-p", str(sock))
        run(str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", user, "--no-sync", "-E", "UTF8")
        opts = f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
        run(
            str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(root / "server.log"), "-w", "start"
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield Postgres(port, user, root)
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(
                [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                capture_output=True,
                timeout=60,
            )
        shutil.rmtree(root, ignore_errors=True)
