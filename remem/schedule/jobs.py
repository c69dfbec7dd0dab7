"""The kinds of background job besides embedding, as worker handlers.

- ``extract``: the extractor reads new episodes (with the turns just before them in their
  session, so an error can meet its fix) and the memory agent writes what they mean, in
  one transaction with the job's completion.
- ``decay``: archive memories whose strength fell under the threshold.
- ``retention``: apply the retention policy (:mod:`remem.govern.retention`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..config import AgentConfig, RetentionConfig
from ..embed.base import Embedder
from ..extract.base import EpisodeIn, Extractor, extract_checked
from ..govern.retention import Retention, exact_scope
from ..model import Candidate, MemoryItem, Scope
from ..organize import decisions
from ..organize.agent import MemoryAgent, shared_scope
from ..organize.strength import decay
from ..organize.topics import MindMap
from ..store.base import Job, Store
from .worker import Handler

__all__ = ["candidates", "decay_handler", "extract_handler", "retention", "retention_handler"]


def candidates(store: Store, extractor: Extractor | None, episode_ids: Sequence[str],
               context_turns: int, embedder: Embedder | None = None,
               ) -> list[tuple[Scope, Candidate, str]]:
    """The grounded candidates of these episodes, each with the scope its memory belongs
    to and the text of the turns it came from (``embedder`` judges rewrites). Reads only."""
    if extractor is None:
        return []
    batch = [i for i in store.items_by_id(episode_ids) if i.is_episode and i.status == "active"]
    groups: dict[tuple[Any, ...], list[MemoryItem]] = {}
    for item in batch:
        groups.setdefault((item.org_id, item.user_id, item.agent_id, item.project, item.session_id),
                          []).append(item)
    out = []
    for group in groups.values():
        first = group[0]
        context = [] if first.session_id is None else store.recent_turns(
            Scope(org_id=first.org_id, user_id=first.user_id, agent_id=first.agent_id,
                  project=first.project, session_id=first.session_id), context_turns, before=first.id)
        fresh = {i.id for i in group}
        episodes = [EpisodeIn.from_item(i) for i in [*context, *group]]
        texts = {e.id: e.text for e in episodes}
        for cand in extract_checked(extractor, episodes, embedder=embedder).candidates:
            if fresh & set(cand.source_ids):  # what the context alone says was handled before
                evidence = " ".join(texts.get(s, "") for s in cand.source_ids)
                scope = shared_scope(group[0])
                if cand.level == "user":  # true of the user in every project
                    scope = scope.model_copy(update={"project": None})
                out.append((scope, cand, evidence))
    return out


def extract_handler(store: Store, extractor: Extractor | None, agent: MemoryAgent) -> Handler:
    """Runs ``extract`` jobs: ``{"episodes": [ids]}``."""

    def run(job: Job) -> None:
        ids = [str(i) for i in job.payload.get("episodes", [])]
        # the extractor (maybe an LLM) and the embedder are slow: outside the transaction
        prepared = agent.prepare(candidates(store, extractor, ids, agent.config.context_turns,
                                            agent.embedder), ids)
        with store.transaction():
            store.finish_job(job, agent.apply(prepared, ids))

    return run


def decay_handler(store: Store, config: AgentConfig) -> Handler:
    """Runs ``decay`` jobs: ``{"now": epoch seconds}`` (optional)."""

    def run(job: Job) -> None:
        with store.transaction():
            archived = decay(store, config, job.payload.get("now"))
            store.finish_job(job, {"archived": len(archived)})

    return run


def retention(store: Store, config: RetentionConfig, mindmap: MindMap) -> Retention:
    """The retention policy of a store, purging as :meth:`remem.Memory.purge` does (the
    turn ``remember`` wrote goes too, and the mind map forgets the words)."""

    def purge(item: MemoryItem) -> list[str]:
        return decisions.purge(store, mindmap, item.id, exact_scope(item))

    return Retention(store, config, purge=purge)


def retention_handler(store: Store, config: RetentionConfig, mindmap: MindMap,
                      lease_s: float = 60.0) -> Handler:
    """Runs ``retention`` jobs: ``{"now": epoch seconds}`` (optional). Each page of items
    is its own transaction, after which the job's lease is renewed for ``lease_s``; a run
    cut short is taken up again by the next one."""

    def run(job: Job) -> None:
        def renew() -> None:
            store.put_vectors([], [job], renew_s=lease_s)

        done = retention(store, config, mindmap).apply(job.payload.get("now"), actor="schedule",
                                                       progress=renew)
        store.finish_job(job, {"compacted": len(done.compacted), "noted": len(done.noted),
                               "archived": len(done.archived), "purged": len(done.purged)})

    return run
