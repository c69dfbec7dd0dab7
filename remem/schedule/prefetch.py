"""Memory-ready prefetch: after a turn, load what the session will likely ask for next
into its working memory, so ``context()`` finds it ready.

The prediction is the recent turns themselves: their words, names and entities, run as
a query (full text, time, speakers and links; no embedding, to stay cheap), plus the
memories the session's files and topics point to. Hits warm the session's working
memory; the coldest entries beyond the configured size are evicted (and logged).
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone

from ..config import AgentConfig
from ..model import Scope
from ..retrieve import Retriever
from ..store.base import Filters, Job, Store
from .worker import Handler

__all__ = ["prefetch", "prefetch_handler"]

log = logging.getLogger(__name__)


def prefetch(store: Store, retriever: Retriever, config: AgentConfig, scope: Scope, *,
             turns: int = 3, k: int = 12) -> list[str]:
    """Warm the session's working memory from its last ``turns`` turns; returns the ids
    of the memories warmed."""
    assert scope.session_id is not None
    recent = store.recent_turns(scope, turns)
    if not recent:
        return []
    query = " ".join(t.text for t in recent)[-2000:]
    now = max((t.event_time for t in recent if t.event_time), default=None) or datetime.now(timezone.utc)
    wall = scope.model_copy(update={"session_id": None})
    hits = retriever(query, scope=wall, filters=Filters(), k=k, budget_tokens=None, now=now)
    fresh = {t.id for t in recent}
    heats = {h.memory.id: (1.0 / (1 + i), "prefetched for: " + query[:80])
             for i, h in enumerate(hits) if h.memory.id not in fresh}
    evicted = store.warm(scope, heats, config.working_memory_size)
    if evicted:
        log.info("working memory of session %s: evicted %d cold memories: %s",
                 scope.session_id, len(evicted), ", ".join(evicted[:10]))
    return list(heats)


def prefetch_handler(store: Store, retriever: Retriever, config: AgentConfig) -> Handler:
    """Runs ``prefetch`` jobs: ``{"scope": {...}}`` with a session."""

    def run(job: Job) -> None:
        scope = Scope(**job.payload["scope"])
        warmed = prefetch(store, retriever, config, scope)
        store.finish_job(job, {"warmed": len(warmed)})

    return run
