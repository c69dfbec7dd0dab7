"""Persistence: the Store protocol and its SQLite adapter."""

from .base import Filters, Job, NewMemory, Store
from .sqlite import SQLiteStore, require_store_file

__all__ = ["Filters", "Job", "NewMemory", "SQLiteStore", "Store", "require_store_file"]
