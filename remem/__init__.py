"""remem: memory for AI agents. One SQLite file, a bundled embedding model, no server.

>>> from remem import Memory
>>> m = Memory("team.db")
>>> m.add("I moved to pnpm last week", user_id="alice")
>>> m.flush()
>>> m.search("which package manager?", user_id="alice")[0].memory.text
'I moved to pnpm last week'
"""

from __future__ import annotations

import importlib

# not ``typing.TYPE_CHECKING``: an agent hook imports this package first, and every module
# it loads costs the hook time (type checkers read this constant the same way)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .config import Config, RetrievalConfig
    from .errors import (
        ClosedError,
        ConfigError,
        EmbedderMismatchError,
        EmbeddingError,
        NotFoundError,
        RememError,
        SchemaVersionError,
        StoreError,
        StoreNotFoundError,
        ValidationError,
    )
    from .memory import AsyncMemory, Memory
    from .model import AddResult, HistoryEntry, Hit, MemoryItem, Page, Source, Stats

# Loaded on first use, so that a process that needs only a small part (an agent hook,
# which must start in milliseconds) does not pay for numpy, pydantic and the store.
_HOMES = {
    "Config": "config", "RetrievalConfig": "config",
    "AsyncMemory": "memory", "Memory": "memory",
    **dict.fromkeys(("AddResult", "HistoryEntry", "Hit", "MemoryItem", "Page", "Source",
                     "Stats"), "model"),
    **dict.fromkeys(("ClosedError", "ConfigError", "EmbedderMismatchError", "EmbeddingError",
                     "NotFoundError", "RememError", "SchemaVersionError", "StoreError",
                     "StoreNotFoundError", "ValidationError"), "errors"),
}


def __dir__() -> list[str]:
    return sorted([*__all__, "__version__"])


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'remem' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


__version__ = "0.1.0"

__all__ = [
    "AddResult",
    "AsyncMemory",
    "ClosedError",
    "Config",
    "ConfigError",
    "EmbedderMismatchError",
    "EmbeddingError",
    "HistoryEntry",
    "Hit",
    "Memory",
    "MemoryItem",
    "NotFoundError",
    "Page",
    "RememError",
    "RetrievalConfig",
    "SchemaVersionError",
    "Source",
    "Stats",
    "StoreError",
    "StoreNotFoundError",
    "ValidationError",
]
