"""Packing a scope's memories into a signed cube."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from ..errors import CubeError, ValidationError
from ..model import MemoryItem, Scope
from ..store.base import GraphStore, MemoryStore
from .format import (
    NAME,
    VERSION,
    CubeEdge,
    CubeEmbedder,
    CubeHistory,
    CubeManifest,
    CubeMemory,
    CubeSignature,
    CubeSigner,
    digest,
    edge_lines,
    manifest_bytes,
    memory_lines,
    write_cube,
)
from .keys import SigningKey

__all__ = ["PackStore", "pack"]

#: metadata a memory keeps only in the store it was made in (not packed)
_LOCAL_METADATA = ("cube",)


class PackStore(MemoryStore, GraphStore, Protocol):
    """What packing reads."""


def _ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def _record(item: MemoryItem, history: Sequence[Any]) -> CubeMemory:
    metadata = {k: v for k, v in item.metadata.items() if k not in _LOCAL_METADATA}
    return CubeMemory(
        id=item.id, kind=item.kind, text=item.text, raw=item.is_episode, role=item.role,
        subject=item.subject, status=item.status, maturity=item.maturity, pinned=item.pinned,
        event_time=_ts(item.event_time), observed_at=item.observed_at.timestamp(),
        valid_from=_ts(item.valid_from), valid_to=_ts(item.valid_to), metadata=metadata,
        sources=[] if item.is_episode else list(item.sources),
        history=[CubeHistory(version=h.version, action=h.action, text=h.text, status=h.status,
                             reason=h.reason, at=h.at.timestamp()) for h in history],
    )


def pack(store: PackStore, scope: Scope, out: Path, *, key: SigningKey, name: str,
         version: str = "1.0.0", description: str = "", license: str = "CC-BY-4.0",
         embedder: tuple[str, int], created_by: str, signer_name: str | None = None,
         kinds: Sequence[str] | None = None, include_episodes: bool = False) -> CubeManifest:
    """Write the active derived memories of ``scope`` (of ``kinds``, if given) to ``out``
    as a signed cube, with their versions, the edges between them and the episodes they
    came from (every episode of the scope with ``include_episodes``)."""
    if not NAME.fullmatch(name):
        raise ValidationError("name", f"{name!r}: use 1-64 lowercase letters, digits, '.', '_' "
                              "or '-', starting with a letter or digit")
    if not VERSION.fullmatch(version):
        raise ValidationError("version", f"{version!r}: use a version such as 1.0.0")
    exact = scope.model_copy(update={"nested": False, "session_id": None})
    items = list(store.export(exact, include_episodes=True))
    derived = [m for m in items if not m.is_episode and m.status == "active"
               and (kinds is None or m.kind in kinds)]
    if not derived:
        raise CubeError("nothing to pack: the scope has no active memories"
                        + (f" of kinds {', '.join(kinds)}" if kinds else ""))
    episodes_by_id = {m.id: m for m in items if m.is_episode and m.status == "active"}
    wanted = set(episodes_by_id) if include_episodes else {s for m in derived for s in m.sources}
    episodes = [e for e in episodes_by_id.values() if e.id in wanted]
    chosen = [*episodes, *derived]
    kept = {m.id for m in chosen}
    records = [_record(m, store.history(m.id, exact)) for m in chosen]
    # a source outside what is packed (forgotten, held) is left out of the provenance
    records = [r.model_copy(update={"sources": [s for s in r.sources if s in kept]}) for r in records]
    rowids = store.rowids([m.id for m in derived])
    by_rowid = {rowid: memory_id for memory_id, rowid in rowids.items()}
    edges = []
    for memory_id, rowid in rowids.items():
        for other, kind, direction, weight in store.edge_list(rowid):
            if direction == "out" and other in by_rowid:
                edges.append(CubeEdge(src=memory_id, dst=by_rowid[other], type=kind,
                                      weight=float(weight)))
    data = {"memories": memory_lines(records), "edges": edge_lines(edges)}
    manifest = CubeManifest(
        name=name, version=version, description=description, license=license,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        created_by=created_by, embedder=CubeEmbedder(name=embedder[0], dim=embedder[1]),
        counts={"memories": len(derived), "episodes": len(episodes), "edges": len(edges),
                "versions": sum(len(r.history) for r in records)},
        checksums={name_: digest(body) for name_, body in data.items()},  # type: ignore[misc]
        signer=CubeSigner(public_key=key.public_b64, fingerprint=key.fingerprint, name=signer_name),
    )
    signature = CubeSignature(value=key.sign(manifest_bytes(manifest)))
    out.parent.mkdir(parents=True, exist_ok=True)
    write_cube(out, manifest, data, signature)
    return manifest
