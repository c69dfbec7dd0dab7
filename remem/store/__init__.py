"""Persistence: the store protocols by concern, ``create_store(url)`` and the adapters."""

from .base import Filters, Job, NewMemory, Store, Transaction
from .factory import create_store, is_url
from .sqlite import SQLiteStore

__all__ = ["Filters", "Job", "NewMemory", "SQLiteStore", "Store", "Transaction", "create_store",
           "is_url"]
