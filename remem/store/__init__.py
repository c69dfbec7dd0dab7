"""Persistence: the Store protocol and its SQLite adapter."""

from .base import Filters, Job, NewMemory, Store
from .sqlite import SQLiteStore

__all__ = ["Filters", "Job", "NewMemory", "SQLiteStore", "Store"]
