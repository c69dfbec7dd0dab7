"""Rows as every adapter reads them back: the column lists and their domain records."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from ..model import AuditEntry, JobInfo, MemoryItem, Provenance, Share

__all__ = ["AUDIT_COLUMNS", "COLUMNS", "JOB_COLUMNS", "KEY_COLUMNS", "LOCAL_META", "SHARE_COLUMNS",
           "TRANSFER", "TopicRow", "dt", "job_info", "provenance", "row_to_audit", "row_to_item",
           "row_to_share"]

#: The memory columns, in the order :func:`row_to_item` reads them (alias ``m``).
COLUMNS = (
    "m.rowid, m.id, m.kind, m.text, m.status, m.subject, m.role, m.maturity, m.version, "
    "m.pinned, m.org_id, m.user_id, m.agent_id, m.project, m.session_id, m.metadata, "
    "m.event_time, m.observed_at, m.created_at, m.updated_at, m.valid_from, m.valid_to, "
    "m.door, m.source, m.trust"
)
#: The audit log's columns, in the order :func:`row_to_audit` reads them.
AUDIT_COLUMNS = "rowid, id, at, door, action, org_id, user_id, actor, key_id, target, status"
JOB_COLUMNS = ("id, kind, state, priority, attempts, max_attempts, run_after, last_error, "
               "payload, created_at, updated_at")


def dt(value: float | None) -> datetime | None:
    """An epoch time as a UTC datetime (None stays None)."""
    return None if value is None else datetime.fromtimestamp(value, timezone.utc)


_ITEM_FIELDS = ("id", "kind", "text", "status", "subject", "role", "maturity", "version",
                "pinned", "org_id", "user_id", "agent_id", "project", "session_id", "metadata",
                "event_time", "observed_at", "created_at", "updated_at", "valid_from",
                "valid_to", "sources", "provenance")
# a search hydrates a hundred rows or more: building the instance the way model_construct
# does, minus its per-field default handling, is 5-8x faster; only while the model has
# exactly these fields, no private attributes and no extra fields, where the two agree
_DIRECT = (_ITEM_FIELDS == tuple(MemoryItem.model_fields) and not MemoryItem.__private_attributes__
           and MemoryItem.model_config.get("extra") != "allow")


@functools.lru_cache(maxsize=256)
def provenance(door: str, source: str, trust: str) -> Provenance:
    """The provenance of a row: one frozen instance per combination, shared."""
    return Provenance.model_construct(door=door, source=source, trust=trust)  # type: ignore[arg-type]


def row_to_item(row: Sequence[Any], sources: list[str]) -> MemoryItem:
    """A memory from a row of :data:`COLUMNS` and the ids of its sources."""
    meta = row[15]
    values = {
        "id": row[1], "kind": row[2], "text": row[3], "status": row[4], "subject": row[5],
        "role": row[6], "maturity": row[7], "version": row[8], "pinned": bool(row[9]),
        "org_id": row[10], "user_id": row[11], "agent_id": row[12], "project": row[13],
        "session_id": row[14], "metadata": {} if meta == "{}" else json.loads(meta),
        "event_time": dt(row[16]), "observed_at": dt(row[17]), "created_at": dt(row[18]),
        "updated_at": dt(row[19]), "valid_from": dt(row[20]), "valid_to": dt(row[21]),
        "sources": sources, "provenance": provenance(row[22], row[23], row[24]),
    }
    if not _DIRECT:  # pragma: no cover - a model changed under this function
        return MemoryItem.model_construct(**values)
    item = MemoryItem.__new__(MemoryItem)
    setattr_ = object.__setattr__
    setattr_(item, "__dict__", values)
    setattr_(item, "__pydantic_fields_set__", set(_ITEM_FIELDS))
    setattr_(item, "__pydantic_extra__", None)
    setattr_(item, "__pydantic_private__", None)
    return item


def job_info(row: Sequence[Any]) -> JobInfo:
    """A job from a row of :data:`JOB_COLUMNS`."""
    payload = json.loads(row[8])
    return JobInfo(id=row[0], kind=row[1], state=row[2], priority=row[3], attempts=row[4],
                   max_attempts=row[5], run_after=dt(row[6]), last_error=row[7],
                   result=payload.get("result"), created_at=dt(row[9]), updated_at=dt(row[10]))


class TopicRow:
    """One node of the mind map as stored: label, keyword counts, size, parent."""

    __slots__ = ("rowid", "parent", "label", "keywords", "size")

    def __init__(self, rowid: int, parent: int | None, label: str, keywords: dict[str, int],
                 size: int) -> None:
        self.rowid = rowid
        self.parent = parent
        self.label = label
        self.keywords = keywords
        self.size = size

#: The API key columns, in the order the key records are read and written.
KEY_COLUMNS = "id, hash, org_id, user_id, scopes, name, created_at, revoked_at, last_used_at"

#: The grant columns, in the order :func:`row_to_share` reads them.
SHARE_COLUMNS = "id, org_id, user_id, project, grantee_kind, grantee, access, created_at, created_by"


def row_to_share(row: Sequence[Any]) -> Share:
    """A grant from a row of :data:`SHARE_COLUMNS`."""
    return Share(id=row[0], org_id=row[1], user_id=row[2], project=row[3], grantee_kind=row[4],
                 grantee=row[5], access=row[6], created_at=dt(row[7]), created_by=row[8])


#: What ``remem migrate`` copies, table by table in this order, as adapter-neutral rows
#: (ids and row ids kept, so references stay valid; ``vec`` is float32 bytes or None).
TRANSFER: dict[str, tuple[str, ...]] = {
    "meta": ("key", "value"),
    "topics": ("rowid", "parent", "org_id", "user_id", "agent_id", "project", "label", "keywords",
               "size", "created_at", "updated_at"),
    "memories": ("rowid", "id", "kind", "raw", "text", "role", "subject", "status", "maturity",
                 "version", "pinned", "org_id", "user_id", "agent_id", "project", "session_id",
                 "metadata", "event_time", "observed_at", "created_at", "updated_at", "valid_from",
                 "valid_to", "topic_rowid", "use_count", "used_at", "door", "source", "trust"),
    "memory_sources": ("memory_rowid", "episode_rowid"),
    "passages": ("rowid", "memory_rowid", "seq", "text", "tokens", "vec"),
    "versions": ("rowid", "memory_rowid", "version", "action", "text", "status", "reason", "at"),
    "edges": ("src", "dst", "type", "weight", "created_at"),
    "entities": ("name", "memory_rowid"),
    "working_memory": ("org_id", "user_id", "session_id", "memory_rowid", "heat", "reason",
                       "added_at"),
    "api_keys": tuple(KEY_COLUMNS.split(", ")),
    "jobs": ("rowid", "id", "kind", "payload", "state", "priority", "attempts", "max_attempts",
             "run_after", "lease_until", "last_error", "idempotency_key", "created_at",
             "updated_at", "org_id", "user_id"),
    "injections": ("rowid", "id", "at", "door", "org_id", "user_id", "agent_id", "project",
                   "session_id", "query", "tokens", "text"),
    "injection_items": ("injection_rowid", "rank", "memory_rowid", "section", "channels",
                        "used_at"),
    "shares": tuple(SHARE_COLUMNS.split(", ")),
}
#: Meta keys that belong to one store and are not copied (its own counters).
LOCAL_META = ("changes", "vector_generation", "fulltext_log_trimmed")


def row_to_audit(row: Any) -> AuditEntry:
    """An audit entry from a row of :data:`AUDIT_COLUMNS`."""
    return AuditEntry(id=row[1], at=datetime.fromtimestamp(row[2], timezone.utc), door=row[3],
                      action=row[4], org_id=row[5], user_id=row[6], actor=row[7], key_id=row[8],
                      target=row[9], status=row[10])
