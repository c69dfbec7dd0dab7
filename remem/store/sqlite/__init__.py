"""The SQLite adapter (the default): one file in WAL mode, sqlite3 from the standard library.

``store.py`` is the store, with its concerns mixed in from ``ops.py``, ``audit.py``,
``shares.py``, ``injections.py``, ``retention.py`` and ``copy.py``; ``statements.py`` holds every
statement it runs, ``schema.py`` its migrations; ``vectors.py`` is its in-memory vector
index (the full-text one, ``../fulltext.py``, serves both stores).
"""

from .store import SQLiteStore, require_store_file

__all__ = ["SQLiteStore", "require_store_file"]
