"""Grants between scopes in the PostgreSQL store (mixed into PostgresStore); the
statements mirror :mod:`remem.store.sqlite.shares` one for one."""

from __future__ import annotations

from typing import Any

from ...model import Share
from ..clauses import share_filters
from ..rows import SHARE_COLUMNS, row_to_share

__all__ = ["PostgresShares"]

_SAME = ("org_id = %s AND COALESCE(user_id, '') = COALESCE(%s, '') AND "
         "COALESCE(project, '') = COALESCE(%s, '') AND grantee_kind = %s AND grantee = %s")


class PostgresShares:
    """``put_share`` / ``drop_share`` / ``shares`` of the PostgreSQL store."""

    _all: Any
    _one: Any
    _run: Any
    write: Any

    def put_share(self, share: Share) -> Share:
        key = (share.org_id, share.user_id, share.project, share.grantee_kind, share.grantee)
        with self.write(changes=False):
            self._run(f"INSERT INTO shares ({SHARE_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
                      "ON CONFLICT (org_id, (COALESCE(user_id, '')), (COALESCE(project, '')), "
                      "grantee_kind, grantee) DO UPDATE SET access = excluded.access",
                      (share.id, *key, share.access, share.created_at.timestamp(), share.created_by))
            row = self._one(f"SELECT {SHARE_COLUMNS} FROM shares WHERE {_SAME}", key)
        return row_to_share(row)

    def drop_share(self, share_id: str, org_id: str) -> Share | None:
        with self.write(changes=False):
            row = self._one(f"DELETE FROM shares WHERE id = %s AND org_id = %s RETURNING {SHARE_COLUMNS}",
                            (share_id, org_id))
        return None if row is None else row_to_share(row)

    def shares(self, org_id: str, *, user_id: str | None = None, project: str | None = None,
               grantee_kind: str | None = None, grantee: str | None = None,
               share_id: str | None = None) -> list[Share]:
        where, params = share_filters(org_id, "%s", user_id=user_id, project=project,
                                      grantee_kind=grantee_kind, grantee=grantee, share_id=share_id)
        return [row_to_share(r) for r in self._all(
            f"SELECT {SHARE_COLUMNS} FROM shares WHERE {where} ORDER BY created_at, id", params)]
