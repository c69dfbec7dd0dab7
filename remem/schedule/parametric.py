"""The lifecycle of parametric memory: which adapters are current, training one for a
scope, and the ``lora-train`` job that retrains when enough changed.

A scope's adapter holds the memories :func:`~remem.tiers.adapters.select_memories`
chose when it was trained. It goes stale when one of them is superseded, forgotten,
archived, purged or edited (read from the store at the time it is asked, so nothing
can miss a change), and a ``lora-train`` job retrains it then, or once ``train_after``
new memories qualify. Training needs the ``parametric`` extra; nothing here imports
torch until a model is trained.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..config import ParametricConfig
from ..errors import ConfigError
from ..model import MemoryItem, Scope
from ..store.base import Job, Store
from ..tiers.adapters import (
    AdapterRegistry,
    AdapterState,
    SelectionPolicy,
    scope_of,
    select_memories,
    staleness,
    training_due,
)
from ..tiers.parametric import AdapterInfo
from .triggers import Trigger, TriggerEvent
from .worker import Handler

__all__ = ["adapter_states", "eligible", "lora_train_handler", "lora_trigger", "train_adapter"]


def policy(config: ParametricConfig) -> SelectionPolicy:
    """The selection policy the configuration sets."""
    return SelectionPolicy(min_uses=config.min_uses, min_age_days=config.min_age_days,
                           max_memories=config.max_memories)


def exact(scope: Scope) -> Scope:
    """The scope an adapter belongs to: org, user, agent and project (no session)."""
    return Scope(org_id=scope.org_id, user_id=scope.user_id, agent_id=scope.agent_id, project=scope.project)


def eligible(store: Store, scope: Scope, config: ParametricConfig,
             now: float | None = None) -> list[MemoryItem]:
    """The memories of ``scope`` (with a project's, the user's outside any project too)
    that qualify for its adapter now."""
    reading = exact(scope).model_copy(update={"nested": scope.project is not None})
    items = store.derived(reading, limit=100_000)
    uses = store.use_stats([m.id for m in items])
    return select_memories(items, uses, now=time.time() if now is None else now, policy=policy(config))


def state(store: Store, info: AdapterInfo) -> AdapterState:
    """An adapter with what changed in the memories it holds since it was trained."""
    current = {m.id: m for m in store.items_by_id(info.memory_ids)}
    return AdapterState(info, staleness(info, current))


def adapter_states(store: Store, registry: AdapterRegistry, scope: Scope | None = None,
                   memory_id: str | None = None) -> list[AdapterState]:
    """The adapters of ``registry`` (of one org, user or project when ``scope`` names
    them; holding ``memory_id`` when given), each with its staleness."""
    found = registry.holding([memory_id]) if memory_id is not None else registry.all()
    if scope is not None:
        wanted = {k: v for k, v in exact(scope).model_dump().items() if v is not None and k != "nested"}
        found = [i for i in found if all(getattr(scope_of(i), k) == v for k, v in wanted.items())]
    return [state(store, info) for info in found]


def train_adapter(store: Store, registry: AdapterRegistry, scope: Scope, model_dir: str | Path | None,
                  config: ParametricConfig, *, options: Mapping[str, object] | None = None,
                  progress: Callable[[int], object] | None = None, now: float | None = None,
                  lora: Any = None) -> AdapterInfo:
    """Train the adapter of ``scope`` on ``model_dir`` from its qualifying memories and
    install it in ``registry`` (replacing the old one); ConfigError when none qualify.

    ``lora`` is a :class:`~remem.tiers.lora.LoraMemory` to reuse (else one is made).
    """
    from ..tiers.lora import LoraMemory, train_scope

    where = exact(scope)
    chosen = eligible(store, where, config, now)
    if not chosen:
        p = policy(config)
        raise ConfigError(f"no memory of this scope qualifies for an adapter: it needs canonical, "
                          f"active memories used {p.min_uses}+ times (or pinned) and unchanged for "
                          f"{p.min_age_days:g}+ days")
    lora = lora if lora is not None else LoraMemory(model_dir)
    info = train_scope(lora, chosen, registry.folder(where), where,
                       options={**config.options, **(options or {})}, progress=progress)
    registry.install(info.path, where)
    return registry.get(where) or info


def lora_trigger() -> Trigger:
    """After turns, queue one ``lora-train`` check per session's scope (coalesced)."""

    def payload(event: TriggerEvent) -> dict[str, Any]:
        return {"scope": exact(event.scope).model_dump(exclude={"nested", "session_id"})}

    return Trigger("lora-train", on="turn", job="lora-train", payload=payload, priority=-2, coalesce=True)


def lora_train_handler(store: Store, registry: AdapterRegistry, config: ParametricConfig,
                       lease_s: float = 60.0, clock: Callable[[], float] = time.time) -> Handler:
    """Runs ``lora-train`` jobs: ``{"scope": {...}, "force": bool}``. Trains when
    :func:`~remem.tiers.adapters.training_due` says so (or ``force``); the lease is renewed
    after each epoch. ``clock`` tells the age of memories."""

    def run(job: Job) -> None:
        if config.base_model is None:
            raise ConfigError("lora-train needs the base model folder: set REMEM_LORA_MODEL")
        scope = Scope(**job.payload.get("scope", {}))
        current = registry.get(exact(scope))
        chosen = eligible(store, scope, config, clock())
        stale = state(store, current).stale if current is not None else {}
        why = "asked" if job.payload.get("force") else training_due(current, chosen, stale,
                                                                     config.train_after or 1)
        if why is None:
            store.finish_job(job, {"trained": False})
            return

        def renew(_: int) -> None:
            store.put_vectors([], [job], renew_s=lease_s)

        info = train_adapter(store, registry, scope, config.base_model, config, progress=renew, now=clock())
        store.finish_job(job, {"trained": True, "why": why, "memories": len(info.memory_ids),
                               "path": info.path})

    return run
