"""Portable AI Memory (PAM) v1.0: export to and import from its ``memory-store.json``.

PAM is a published interchange format for AI memories (spec v1.0, 2026-02-17,
portable-ai-memory.org): a JSON document with ``schema: "portable-ai-memory"``,
``owner``, ``memories`` (each with ``type`` from a closed taxonomy, ``content``, a
``content_hash`` of the normalised content, ``temporal`` and ``provenance``), optional
``relations`` and an ``integrity`` block (SHA-256 of the memories sorted by id, in RFC 8785
canonical JSON). This module writes and reads that file; conversations and embeddings,
its companion files, are not written (optional in the spec) and are ignored on import.

The mapping, both ways:

- remem's kinds map to PAM types where the meaning is the same (preference, fact,
  project, skill; persona -> identity; profile -> fact); every other kind is
  ``custom`` with ``custom_type`` = the kind. Every exported memory also keeps its remem
  fields under ``metadata.remem`` (kind, subject, maturity, pinned, metadata), so a
  remem -> PAM -> remem round trip gives back the same memories. A PAM type without a
  remem kind becomes the nearest one (identity -> persona, instruction -> preference,
  goal and environment -> project, context and relationship -> fact).
- Status: active, superseded and archived as they are; remem's forgotten is PAM's
  retracted (and back); deprecated becomes archived; memories held for review are not
  exported.
- Relations: remem's ``supersedes`` and ``derived_from`` edges as those PAM types, the
  others as ``related_to``.
- On import each memory becomes an episode (its verbatim content, speaker ``import``,
  the source) and a derived memory citing it, like ``remember``; text that tries to
  instruct the agent is held for review, as from any import. The file's checksum and
  each content hash are checked before anything is written; a mismatch refuses the file.
  A ``signature`` block is not checked (PAM lets importers accept unsigned files; remem
  signs its own packages as cubes).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import unicodedata
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from .._inputs import check_label, check_metadata, clean_text
from ..errors import ValidationError
from ..govern.provenance import provenance
from ..model import KINDS, MemoryItem, Scope, new_id
from ..store.base import NewMemory
from .format import canonical
from .install import InstallStore

__all__ = ["PAM_SCHEMA", "content_hash", "export_pam", "import_pam", "integrity_checksum"]

PAM_SCHEMA = "portable-ai-memory"
PAM_VERSION = "1.0"
SPEC_URI = "https://portable-ai-memory.org/spec/v1.0"
TYPES = ("fact", "preference", "skill", "context", "relationship", "goal", "instruction",
         "identity", "environment", "project", "custom")
_TO_PAM = {"preference": "preference", "fact": "fact", "project": "project", "skill": "skill",
           "persona": "identity", "profile": "fact"}
_FROM_PAM = {"fact": "fact", "preference": "preference", "skill": "skill", "project": "project",
             "identity": "persona", "instruction": "preference", "goal": "project",
             "environment": "project", "context": "fact", "relationship": "fact"}
_STATUS_TO_PAM = {"active": "active", "superseded": "superseded", "archived": "archived",
                  "forgotten": "retracted"}
_STATUS_FROM_PAM = {"active": "active", "superseded": "superseded", "archived": "archived",
                    "retracted": "forgotten", "deprecated": "archived"}
_RELATIONS = ("supersedes", "derived_from")
#: what a PAM file brings is text from elsewhere, whoever said it first
_IMPORTED = provenance("import", None)
_PAM_RELATIONS = ("supports", "contradicts", "extends", "supersedes", "related_to", "derived_from")

Screen = Callable[[str, str | None], str | None]
Splitter = Callable[[str, str | None], list[str]]


def content_hash(content: str) -> str:
    """PAM's content hash: trim, lower-case, NFC, collapse runs of spaces; SHA-256."""
    text = unicodedata.normalize("NFC", content.strip().lower())
    text = re.sub(" {2,}", " ", text)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def integrity_checksum(memories: list[dict[str, Any]]) -> str:
    """SHA-256 of the memories sorted by id, in RFC 8785 canonical JSON."""
    ordered = sorted(memories, key=lambda m: str(m.get("id")))
    return "sha256:" + hashlib.sha256(canonical(ordered)).hexdigest()


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _pam_memory(item: MemoryItem, conversation: str | None) -> dict[str, Any]:
    kind = _TO_PAM.get(item.kind)
    return {
        "id": item.id,
        "type": kind or "custom",
        "custom_type": None if kind else item.kind,
        "status": _STATUS_TO_PAM[item.status],
        "content": item.text,
        "content_hash": content_hash(item.text),
        "summary": None,
        "tags": [],
        "temporal": {"created_at": _iso(item.created_at), "updated_at": _iso(item.updated_at),
                     "valid_from": _iso(item.valid_from), "valid_until": _iso(item.valid_to),
                     "superseded_by": None},
        "provenance": {"platform": "remem", "platform_user_id": item.user_id,
                       "conversation_ref": conversation, "message_ref": None,
                       "extraction_method": None, "extracted_at": _iso(item.created_at),
                       "extractor": "remem"},
        "embedding_ref": None,
        "metadata": {"remem": {"kind": item.kind, "subject": item.subject,
                               "maturity": item.maturity, "pinned": item.pinned,
                               "project": item.project, "metadata": item.metadata}},
    }


def export_pam(store: InstallStore, scope: Scope, *, exported_by: str,
               now: datetime | None = None) -> dict[str, Any]:
    """The derived memories of ``scope`` (every status but held) as a PAM memory store."""
    exact = scope.model_copy(update={"nested": False, "session_id": None})
    items = [m for m in store.export(exact, include_episodes=True)]
    sessions = {m.id: m.session_id for m in items if m.is_episode}
    derived = [m for m in items if not m.is_episode and m.status in _STATUS_TO_PAM]
    memories = [_pam_memory(m, next((sessions[s] for s in m.sources if sessions.get(s)), None))
                for m in derived]
    by_id = {m["id"]: m for m in memories}
    rowids = store.rowids([m.id for m in derived])
    by_rowid = {rowid: memory_id for memory_id, rowid in rowids.items()}
    relations: list[dict[str, Any]] = []
    when = now or datetime.now(timezone.utc)
    for memory_id, rowid in rowids.items():
        for other, kind, direction, weight in store.edge_list(rowid):
            if direction != "out" or other not in by_rowid:
                continue
            target = by_rowid[other]
            relations.append({"id": f"rel-{len(relations) + 1}", "from": memory_id, "to": target,
                              "type": kind if kind in _RELATIONS else "related_to",
                              "confidence": min(1.0, float(weight)), "created_at": _iso(when)})
            if kind == "supersedes" and by_id[target]["status"] == "superseded":
                by_id[target]["temporal"]["superseded_by"] = memory_id
    owner = scope.user_id or scope.org_id
    return {
        "schema": PAM_SCHEMA, "schema_version": PAM_VERSION, "spec_uri": SPEC_URI,
        "export_id": str(uuid.uuid4()), "exported_by": exported_by, "export_date": _iso(when),
        "owner": {"id": owner}, "memories": memories, "relations": relations,
        "conversations_index": [],
        "integrity": {"canonicalization": "RFC8785", "checksum": integrity_checksum(memories),
                      "total_memories": len(memories)},
        "export_type": "full",
    }


# --- import ---------------------------------------------------------------------------------

def _need(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in obj or not isinstance(obj[key], kind) or isinstance(obj[key], bool):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ValidationError(f"{where}.{key}", f"required, a {names}")
    return obj[key]


def _time(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationError(where, "expected an ISO 8601 time")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(where, f"{value!r} is not an ISO 8601 time") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.timestamp()


def _kind_of(memory: dict[str, Any], where: str) -> str:
    own = memory.get("metadata", {}).get("remem", {}) if isinstance(memory.get("metadata"), dict) else {}
    if isinstance(own, dict) and own.get("kind") in KINDS:
        return str(own["kind"])
    kind = memory["type"]
    if kind not in TYPES:
        raise ValidationError(f"{where}.type", f"{kind!r} is not a PAM type; use one of {', '.join(TYPES)}")
    if kind == "custom":
        custom = memory.get("custom_type")
        if not isinstance(custom, str) or not custom:
            raise ValidationError(f"{where}.custom_type", "required when type is custom")
        return custom if custom in KINDS else "fact"
    return _FROM_PAM[kind]


def check_pam(doc: Any, max_chars: int) -> list[dict[str, Any]]:
    """Check a PAM memory store in full; its memories, or ValidationError naming the
    first problem (nothing is written before this passes)."""
    if not isinstance(doc, dict):
        raise ValidationError("file", "expected a JSON object (a PAM memory-store.json)")
    if doc.get("schema") != PAM_SCHEMA:
        raise ValidationError("schema", f"expected {PAM_SCHEMA!r}, got {doc.get('schema')!r}")
    version = _need(doc, "schema_version", str, "file")
    if not version.startswith("1."):
        raise ValidationError("schema_version", f"{version!r}: this remem reads PAM 1.x")
    owner = _need(doc, "owner", dict, "file")
    _need(owner, "id", str, "owner")
    memories = _need(doc, "memories", list, "file")
    seen: set[str] = set()
    for n, memory in enumerate(memories):
        where = f"memories[{n}]"
        if not isinstance(memory, dict):
            raise ValidationError(where, "expected an object")
        memory_id = _need(memory, "id", str, where)
        check_label(memory_id, f"{where}.id")
        if memory_id in seen:
            raise ValidationError(f"{where}.id", f"{memory_id!r} appears twice")
        seen.add(memory_id)
        _need(memory, "type", str, where)
        content = clean_text(_need(memory, "content", str, where), f"{where}.content", max_chars)
        digest_ = _need(memory, "content_hash", str, where)
        if digest_ != content_hash(content):
            raise ValidationError(f"{where}.content_hash", "does not match the content: the "
                                  "file was changed or written wrongly")
        temporal = _need(memory, "temporal", dict, where)
        _need(temporal, "created_at", str, f"{where}.temporal")
        for key in ("created_at", "updated_at", "valid_from", "valid_until"):
            _time(temporal.get(key), f"{where}.temporal.{key}")
        provenance = _need(memory, "provenance", dict, where)
        _need(provenance, "platform", str, f"{where}.provenance")
        status = memory.get("status", "active")
        if status not in _STATUS_FROM_PAM:
            raise ValidationError(f"{where}.status", f"{status!r}: use one of "
                                  f"{', '.join(_STATUS_FROM_PAM)}")
        if "metadata" in memory:
            if not isinstance(memory["metadata"], dict):
                raise ValidationError(f"{where}.metadata", "expected an object")
            check_metadata(memory["metadata"], f"{where}.metadata")
        _kind_of(memory, where)
    integrity = doc.get("integrity")
    if integrity is not None:
        if not isinstance(integrity, dict):
            raise ValidationError("integrity", "expected an object")
        if integrity.get("canonicalization", "RFC8785") != "RFC8785":
            raise ValidationError("integrity.canonicalization", "only RFC8785 is defined")
        if integrity.get("total_memories") != len(memories):
            raise ValidationError("integrity.total_memories",
                                  f"says {integrity.get('total_memories')}, the file holds {len(memories)}")
        if integrity.get("checksum") != integrity_checksum(memories):
            raise ValidationError("integrity.checksum", "does not match the memories: the file "
                                  "was changed after it was exported")
    for n, rel in enumerate(doc.get("relations") or []):
        if not isinstance(rel, dict) or rel.get("from") not in seen or rel.get("to") not in seen:
            raise ValidationError(f"relations[{n}]", "must join two memories of the file")
        if rel.get("type") not in _PAM_RELATIONS:
            raise ValidationError(f"relations[{n}].type", f"{rel.get('type')!r} is not a PAM relation")
    return memories


def import_pam(store: InstallStore, doc: Any, scope: Scope, *, split: Splitter,
               screen: Screen | None = None, max_chars: int = 100_000) -> tuple[list[str], list[str]]:
    """Write a PAM memory store into ``scope`` in one transaction, after checking all of
    it; the ids of the new memories, and of those held for review."""
    memories = check_pam(doc, max_chars)
    target = scope.model_copy(update={"nested": False, "session_id": None})
    export_id = doc.get("export_id") if isinstance(doc.get("export_id"), str) else None
    session = target.model_copy(update={"session_id": f"pam:{export_id or 'import'}"})
    now = time.time()
    ids: dict[str, str] = {}
    items: list[NewMemory] = []
    plans: list[tuple[str, dict[str, Any]]] = []
    for memory in memories:
        text = memory["content"]
        temporal, provenance = memory["temporal"], memory["provenance"]
        own = (memory.get("metadata") or {}).get("remem") or {}
        extra = {k: v for k, v in (memory.get("metadata") or {}).items() if k != "remem"}
        kept = own.get("metadata") if isinstance(own.get("metadata"), dict) else {}
        # a cube's watermark is given by installing a cube, never by a file that claims one
        kept = {k: v for k, v in kept.items() if k != "cube"}
        meta = {**kept,
                "pam": {"id": memory["id"], "type": memory["type"],
                        "platform": provenance.get("platform"), "export_id": export_id, **extra}}
        created = _time(temporal.get("created_at"), "created_at") or now
        episode = NewMemory(id=new_id("e_"), kind="episode", text=text, raw=True, scope=session,
                            role="import", observed_at=now, event_time=created,
                            metadata={"pam": meta["pam"]}, passages=split(text, "import"),
                            provenance=_IMPORTED)
        memory_id = new_id("m_")
        ids[memory["id"]] = memory_id
        subject = own.get("subject") if isinstance(own.get("subject"), str) else None
        items.append(episode)
        items.append(NewMemory(id=memory_id, kind=_kind_of(memory, "memory"), text=text, raw=False,
                               scope=target, observed_at=now, event_time=created, subject=subject,
                               metadata=meta, passages=split(text, None), source_ids=[episode.id]))
        plans.append((memory_id, {"memory": memory, "own": own, "episode": episode.id}))
    held: list[str] = []
    with store.transaction():
        store.insert(items, new_id("j_"))
        for memory_id, plan in plans:
            memory, own = plan["memory"], plan["own"]
            why = screen(memory["content"], "import") if screen is not None else None
            status = "held" if why else _STATUS_FROM_PAM[memory.get("status", "active")]
            maturity = own.get("maturity") if own.get("maturity") in ("confirmed", "canonical") else None
            pinned = True if own.get("pinned") is True else None
            if why:
                held.append(memory_id)
                store.set_fields(plan["episode"], None, action="held", status="held", reason=why)
            if status != "active" or maturity or pinned:
                store.set_fields(memory_id, None, action="imported", status=status,
                                 maturity=maturity, pinned=pinned,
                                 reason=why or "as the PAM file gave it")
        links = [(ids[r["from"]], ids[r["to"]],
                  r["type"] if r["type"] in _RELATIONS else "related_to",
                  float(r["confidence"]) if isinstance(r.get("confidence"), (int, float)) else 1.0)
                 for r in doc.get("relations") or []]
        if links:
            store.link(links)
    return list(ids.values()), held


def dumps(doc: dict[str, Any]) -> str:
    """A PAM document as readable JSON text."""
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
