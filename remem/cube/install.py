"""Verifying, installing and uninstalling cubes.

Installing checks everything first (the signature, each checksum, the counts, every
record and every reference between records), then writes the whole cube in one
transaction: a bad cube, or a failure half way, leaves the store as it was.

Every memory installed carries the watermark ``metadata["cube"]``: the cube's name and
version, the signer's fingerprint (and name, if it gave one), the install id and the id
the memory had in the cube. ``uninstall`` removes exactly the memories with that
watermark in that scope, and nothing else. Its provenance is the ``cube`` door and source,
trusted as text from anywhere (``external``), whoever said it in the store it was packed from.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from .._inputs import check_label, check_metadata, clean_text
from ..errors import CubeError, CubeVerifyError, NotFoundError, ValidationError
from ..govern.provenance import provenance
from ..model import MemoryItem, Scope, new_id
from ..store.base import GraphStore, JobStore, MemoryStore, NewMemory
from .format import Cube, digest, unb64url
from .keys import fingerprint, verify_signature

__all__ = ["InstallStore", "Installed", "describe", "install", "installed_cubes", "uninstall", "verify"]

#: ``(text, role)`` -> why the text must be held for review, or None
Screen = Callable[[str, str | None], str | None]
Splitter = Callable[[str, str | None], list[str]]
#: what a cube installs is text from elsewhere, whoever said it first
_FROM_CUBE = provenance("cube", None)


class InstallStore(MemoryStore, GraphStore, JobStore, Protocol):
    """What installing writes to."""


@dataclass(frozen=True)
class Installed:
    """What an install added: ids in the store, and the jobs that embed them."""

    name: str
    version: str
    signer: str
    install_id: str
    memory_ids: list[str]
    episode_ids: list[str]
    held: list[str] = field(default_factory=list)
    job_ids: list[str] = field(default_factory=list)


def verify(cube: Cube) -> None:
    """CubeVerifyError unless the signature matches the manifest, each file its checksum
    and the counts what the files hold; CubeError for a reference to a missing record."""
    manifest = cube.manifest
    if fingerprint(unb64url(manifest.signer.public_key)) != manifest.signer.fingerprint:
        raise CubeVerifyError("the signer's fingerprint does not belong to its public key")
    # the manifest's bytes as read: read_cube checked they are its canonical form
    verify_signature(manifest.signer.public_key, cube.signature.value, cube.data["manifest"])
    for name, expected in manifest.checksums.items():
        if digest(cube.data[name]) != expected:
            raise CubeVerifyError(f"the {name} do not match their checksum in the manifest: the "
                                  "cube was changed after it was signed")
    derived = [m for m in cube.memories if not m.raw]
    counted = {"memories": len(derived), "episodes": len(cube.memories) - len(derived),
               "edges": len(cube.edges), "versions": sum(len(m.history) for m in cube.memories)}
    for key, value in counted.items():
        if manifest.counts.get(key) != value:
            raise CubeVerifyError(f"the manifest counts {manifest.counts.get(key)} {key}, the cube "
                                  f"holds {value}")
    ids = [m.id for m in cube.memories]
    if len(set(ids)) != len(ids):
        raise CubeError("the cube names one memory id twice")
    episodes = {m.id for m in cube.memories if m.raw}
    for m in derived:
        for source in m.sources:
            if source not in episodes:
                raise CubeError(f"memory {m.id} cites {source}, which is no episode of the cube")
    derived_ids = {m.id for m in derived}
    for edge in cube.edges:
        if edge.src not in derived_ids or edge.dst not in derived_ids:
            raise CubeError(f"edge {edge.src} -> {edge.dst} names a memory the cube does not hold")


def _check_records(cube: Cube, max_chars: int) -> None:
    """The checks a record's model cannot make alone: text and labels as every door
    checks them, metadata the store can keep."""
    for n, m in enumerate(cube.memories, 2):
        where = f"line {n} (memory {m.id})"
        try:
            clean_text(m.text, "text", max_chars)
            check_label(m.role, "role")
            check_label(m.subject, "subject")
            check_label(m.id, "id")
            check_metadata(m.metadata, "metadata")
            for h in m.history:
                clean_text(h.text, "history.text", max_chars)
                check_label(h.reason, "history.reason")
        except ValidationError as exc:
            raise CubeError(f"{where}: {exc}") from None


def _watermark(item: MemoryItem) -> dict[str, object] | None:
    mark = item.metadata.get("cube")
    return mark if isinstance(mark, dict) else None


def installed_cubes(store: MemoryStore, scope: Scope) -> dict[str, dict[str, object]]:
    """The cubes installed in exactly ``scope``: name -> version, signer, install id and
    how many memories and episodes came from it."""
    out: dict[str, dict[str, object]] = {}
    exact = scope.model_copy(update={"nested": False, "session_id": None})
    for item in store.export(exact, include_episodes=True):
        mark = _watermark(item)
        if mark is None or not isinstance(mark.get("name"), str):
            continue
        entry = out.setdefault(str(mark["name"]), {
            "version": mark.get("version"), "signer": mark.get("signer"),
            "signer_name": mark.get("signer_name"), "install_id": mark.get("install_id"),
            "installed_at": mark.get("installed_at"), "memories": 0, "episodes": 0})
        entry["episodes" if item.is_episode else "memories"] += 1  # type: ignore[operator]
    return out


def install(store: InstallStore, cube: Cube, scope: Scope, *, split: Splitter,
            screen: Screen | None = None, max_chars: int = 100_000) -> Installed:
    """Verify ``cube`` and write it into ``scope`` (exact; its episodes in the session
    ``cube:NAME``), in one transaction. A text the screen flags is installed held for
    review, as anything stored from outside would be."""
    verify(cube)
    _check_records(cube, max_chars)
    manifest = cube.manifest
    target = scope.model_copy(update={"nested": False, "session_id": None})
    if manifest.name in installed_cubes(store, target):
        raise CubeError(f"a cube named {manifest.name} is installed in this scope already; "
                        f"uninstall it first (`remem cube uninstall {manifest.name}`)")
    install_id = new_id("ci_")
    now = time.time()
    mark = {"name": manifest.name, "version": manifest.version,
            "signer": manifest.signer.fingerprint, "install_id": install_id, "installed_at": now}
    if manifest.signer.name:
        mark["signer_name"] = manifest.signer.name
    ids = {m.id: new_id("e_" if m.raw else "m_") for m in cube.memories}
    session = target.model_copy(update={"session_id": f"cube:{manifest.name}"})
    held: list[str] = []
    items: list[NewMemory] = []
    for m in sorted(cube.memories, key=lambda r: not r.raw):  # episodes first: sources exist
        # the oldest text first; later versions are replayed as updates below
        first = m.history[0].text if m.history and not m.raw else m.text
        role = m.role if m.raw else None
        items.append(NewMemory(
            id=ids[m.id], kind=m.kind, text=first, raw=m.raw, scope=session if m.raw else target,
            observed_at=m.observed_at, event_time=m.event_time, role=role, subject=m.subject,
            metadata={**m.metadata, "cube": {**mark, "id": m.id}},
            passages=split(first, role), source_ids=[ids[s] for s in m.sources],
            provenance=_FROM_CUBE))
    first_text = {item.id: item.text for item in items}
    jobs = [new_id("j_")]
    with store.transaction():
        store.insert(items, jobs[0])
        for m in cube.memories:
            memory_id = ids[m.id]
            if not m.raw:
                texts = [h.text for h in m.history[1:]] + [m.text]
                reasons = [h.reason for h in m.history[1:]] + [None]
                current = first_text[memory_id]
                for text, reason in zip(texts, reasons, strict=True):
                    if text == current:
                        continue
                    jobs.append(new_id("j_"))
                    store.update_text(memory_id, target, text, split(text, None),
                                      reason or f"a version from cube {manifest.name}", jobs[-1])
                    current = text
            why = screen(m.text, "import") if screen is not None else None
            status = "held" if why is not None else (m.status if m.status != "active" else None)
            if why is not None:
                held.append(memory_id)
            if status is not None or m.maturity != "candidate" or m.pinned:
                store.set_fields(memory_id, None, action="installed", status=status,
                                 maturity=None if m.raw else m.maturity,
                                 pinned=True if m.pinned else None,
                                 reason=why or f"as packed in cube {manifest.name}")
        if cube.edges:
            store.link([(ids[e.src], ids[e.dst], e.type, float(e.weight)) for e in cube.edges])
    return Installed(name=manifest.name, version=manifest.version,
                     signer=manifest.signer.fingerprint, install_id=install_id,
                     memory_ids=[ids[m.id] for m in cube.memories if not m.raw],
                     episode_ids=[ids[m.id] for m in cube.memories if m.raw], held=held,
                     job_ids=jobs)


def uninstall(store: MemoryStore, scope: Scope, name: str) -> list[str]:
    """Purge every memory and episode the cube ``name`` installed in exactly ``scope``
    (one transaction); the ids removed. NotFoundError when no such cube is installed."""
    exact = scope.model_copy(update={"nested": False, "session_id": None})
    ours = [item.id for item in store.export(exact, include_episodes=True)
            if (mark := _watermark(item)) is not None and mark.get("name") == name]
    if not ours:
        raise NotFoundError(f"cube {name}")
    removed: list[str] = []
    with store.transaction():
        for memory_id in ours:
            if memory_id in removed:
                continue  # went with an episode it was derived from
            try:
                removed += store.purge(memory_id, exact)
            except NotFoundError:
                continue
    return list(dict.fromkeys(removed))


def describe(cube: Cube, *, verified: bool, problem: str | None = None) -> dict[str, object]:
    """What ``remem cube inspect`` shows: the manifest, the kinds it holds, whether it
    verified."""
    kinds: dict[str, int] = {}
    for m in cube.memories:
        kinds[m.kind] = kinds.get(m.kind, 0) + 1
    return {**cube.manifest.model_dump(mode="json"), "kinds": kinds,
            "verified": verified, "problem": problem}
