"""The SQLite adapter (the default): one file in WAL mode, sqlite3 from the standard library."""

from .store import SQLiteStore, require_store_file

__all__ = ["SQLiteStore", "require_store_file"]
