"""Persistence: the store protocols by concern, ``create_store(url)`` and the adapters."""

from .base import Filters, Job, NewMemory, Store, Transaction
from .factory import create_store, is_url, require_store
from .sqlite import SQLiteStore, require_store_file

__all__ = ["Filters", "Job", "NewMemory", "SQLiteStore", "Store", "Transaction", "create_store",
           "is_url", "require_store", "require_store_file"]
