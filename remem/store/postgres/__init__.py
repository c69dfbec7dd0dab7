"""The PostgreSQL adapter (``pip install 'remem[postgres]'``): psycopg 3, its pool, pgvector.

``store.py`` is the store, with its concerns mixed in as in the SQLite adapter;
``statements.py`` holds every statement it runs, ``schema.py`` its migrations.
"""

from .store import PostgresStore

__all__ = ["PostgresStore"]
