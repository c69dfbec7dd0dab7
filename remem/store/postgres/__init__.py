"""The PostgreSQL adapter (``pip install 'remem[postgres]'``): psycopg 3, its pool, pgvector."""

from .store import PostgresStore

__all__ = ["PostgresStore"]
