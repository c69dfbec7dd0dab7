"""remem: memory for AI agents. One SQLite file, a bundled embedding model, no server.

>>> from remem import Memory
>>> m = Memory("team.db")
>>> m.add("I moved to pnpm last week", user_id="alice")
>>> m.flush()
>>> m.search("which package manager?", user_id="alice")[0].memory.text
'I moved to pnpm last week'
"""

import logging

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
    ValidationError,
)
from .memory import AsyncMemory, Memory
from .model import AddResult, HistoryEntry, Hit, MemoryItem, Page, Source, Stats

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
    "ValidationError",
]

logging.getLogger(__name__).addHandler(logging.NullHandler())
