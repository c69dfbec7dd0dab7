"""The scope wall and the recall filters as SQL ``WHERE`` fragments, shared by adapters.

Both builders take the adapter's parameter mark (``?`` for SQLite, ``%s`` for
PostgreSQL) and its null-safe equality, so one definition of "inside the scope" holds
for every backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..model import Scope
from .base import Filters

__all__ = ["NESTED_FIELDS", "SCOPE_FIELDS", "aged_sql", "audit_where", "filters_sql", "scope_sql",
           "share_filters"]

SCOPE_FIELDS = ("user_id", "agent_id", "project", "session_id")
#: The fields a nested read widens to "this value or none": the levels above.
NESTED_FIELDS = ("user_id", "agent_id", "project")


def scope_sql(scope: Scope, alias: str = "m", *, by_rowid: bool = False,
              mark: str = "?") -> tuple[str, list[Any]]:
    """The WHERE clause that walls a query into ``scope``.

    ``by_rowid`` keeps SQLite from scanning a scope index when the query already names
    its rows by rowid: a unary ``+`` makes a column unusable as an index key.
    """
    plus = "+" if by_rowid else ""
    clauses = [f"{plus}{alias}.org_id = {mark}"]
    params: list[Any] = [scope.org_id]
    for name in SCOPE_FIELDS:
        value = getattr(scope, name)
        if value is None:
            continue
        if scope.nested and name in NESTED_FIELDS:
            # a level above is the same user's (or, with no user named, the org's only)
            also = "" if name == "user_id" or scope.user_id is not None \
                else f" AND {plus}{alias}.user_id IS NULL"
            clauses.append(f"({plus}{alias}.{name} = {mark} OR ({plus}{alias}.{name} IS NULL{also}))")
        else:
            clauses.append(f"{plus}{alias}.{name} = {mark}")
        params.append(value)
    return " AND ".join(clauses), params


def filters_sql(filters: Filters, alias: str = "m", *, mark: str = "?") -> tuple[str, list[Any]]:
    """The WHERE clause for kinds, statuses, time, maturity, subject, trust and door;
    ``as_of`` shows what was valid then."""
    clauses: list[str] = []
    params: list[Any] = []
    statuses = filters.statuses
    if filters.as_of is not None:
        statuses = tuple(dict.fromkeys((*statuses, "superseded")))
        clauses.append(f"COALESCE({alias}.valid_from, {alias}.event_time, {alias}.observed_at) <= {mark}")
        clauses.append(f"({alias}.valid_to IS NULL OR {alias}.valid_to > {mark})")
        params += [filters.as_of, filters.as_of]
    clauses.append(f"{alias}.status IN ({','.join([mark] * len(statuses))})")
    params += list(statuses)
    if filters.kinds is not None:
        if filters.kinds:
            clauses.append(f"{alias}.kind IN ({','.join([mark] * len(filters.kinds))})")
            params += list(filters.kinds)
        else:
            clauses.append("1 = 0")
    if not filters.include_episodes:
        clauses.append(f"{alias}.raw = 0")
    if filters.since is not None:
        clauses.append(f"COALESCE({alias}.event_time, {alias}.observed_at) >= {mark}")
        params.append(filters.since)
    if filters.until is not None:
        clauses.append(f"COALESCE({alias}.event_time, {alias}.observed_at) <= {mark}")
        params.append(filters.until)
    if filters.maturity is not None:
        clauses.append(f"{alias}.maturity = {mark}")
        params.append(filters.maturity)
    if filters.subject is not None:
        clauses.append(f"{alias}.subject = {mark}")
        params.append(filters.subject)
    for column, values in (("trust", filters.trust), ("door", filters.doors)):
        if values is not None:
            clauses.append(f"{alias}.{column} IN ({','.join([mark] * len(values))})"
                           if values else "1 = 0")
            params += list(values)
    return " AND ".join(clauses), params


def aged_sql(before: float, *, episodes: bool, kinds: Sequence[str] | None,
             statuses: Sequence[str] | None, org_id: str | None, user_id: str | None,
             project: str | None, alias: str = "m", mark: str = "?") -> tuple[str, list[Any]]:
    """The WHERE clause of what retention may act on: unpinned episodes (or derived
    memories) stored before ``before``, of the kinds, statuses, org, user and project given
    (a None one does not narrow)."""
    clauses = [f"{alias}.created_at < {mark}", f"{alias}.raw = {mark}", f"{alias}.pinned = 0"]
    params: list[Any] = [before, int(episodes)]
    for name, value in (("org_id", org_id), ("user_id", user_id), ("project", project)):
        if value is not None:
            clauses.append(f"{alias}.{name} = {mark}")
            params.append(value)
    for name, values in (("kind", kinds), ("status", statuses)):
        if values is not None:
            clauses.append(f"{alias}.{name} IN ({','.join([mark] * len(values))})"
                           if values else "1 = 0")
            params += list(values)
    return " AND ".join(clauses), params


def audit_where(org_id: str, user_id: str | None, filters: dict[str, Any], *,
                mark: str = "?") -> tuple[str, list[Any]]:
    """The WHERE clause of an audit read: the walls first, then the filters given."""
    clauses, params = [f"org_id = {mark}"], [org_id]
    if user_id is not None:
        clauses.append(f"user_id = {mark}")
        params.append(user_id)
    for name in ("door", "actor", "key_id", "target"):
        if filters.get(name) is not None:
            clauses.append(f"{name} = {mark}")
            params.append(filters[name])
    if filters.get("action") is not None:  # a prefix: 'POST' or 'GET /v1/memories'
        clauses.append(f"substr(action, 1, {mark}) = {mark}")
        params += [len(filters["action"]), filters["action"]]
    if filters.get("since") is not None:
        clauses.append(f"at >= {mark}")
        params.append(filters["since"])
    if filters.get("until") is not None:
        clauses.append(f"at < {mark}")
        params.append(filters["until"])
    return " AND ".join(clauses), params


def share_filters(org_id: str, mark: str, **given: str | None) -> tuple[str, list[Any]]:
    """The WHERE clause of a grant listing: the org, then each argument that was given."""
    clauses, params = [f"org_id = {mark}"], [org_id]
    for column, value in given.items():
        if value is not None:
            clauses.append(f"{'id' if column == 'share_id' else column} = {mark}")
            params.append(value)
    return " AND ".join(clauses), params
