"""Search latency and ingest throughput with many memories in one scope.

Texts are synthetic sentences about a software team. They go in through ``Memory.add``
(episodes, passages and full text, in batches of 100). Embedding 100k texts with the
bundled model takes about half an hour on 2 cores, so unless ``embed=True`` the
vectors are real embeddings of a pool of base texts plus a little noise, written
straight to the store: an exact scan costs the same whatever the values. Queries go
through the whole real path: query embedding, full text, vector scan, fusion,
neighbours, hydration.

The SQLite store ranks full text with its in-memory index; FTS5's own ``bm25()`` (the
path before it, the same scores) is timed beside it on the same queries, alternated:
the whole search with each (``search_ms`` and ``search_ms_fts5``) and the full-text
channel alone (``fulltext_ms``).
"""

from __future__ import annotations

import random
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Config
from ..memory import Memory
from ..model import Scope
from ..retrieve.query import analyse
from ..store import Filters
from .progress import Reporter
from .stats import percentile

__all__ = ["run", "synthetic_queries", "synthetic_texts"]

_FIRST = ["Alice", "Bob", "Chen", "Dana", "Emeka", "Farah", "Gus", "Hana", "Ivan", "Jun",
          "Kofi", "Lena", "Mateo", "Nadia", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tariq"]
_LAST = ["Wei", "Novak", "Silva", "Okafor", "Berg", "Khan", "Mori", "Dubois", "Rossi", "Park"]
_ADJ = ["billing", "login", "search", "mobile", "payments", "admin", "onboarding", "release",
        "cache", "export", "import", "audit", "reporting", "email", "webhook", "checkout",
        "inventory", "pricing", "analytics", "upload", "sync", "backup", "metrics", "routing",
        "session", "profile", "invoice", "shipping", "catalog", "notification"]
_NOUN = ["service", "page", "pipeline", "index", "worker", "API", "dashboard", "flow", "job",
         "queue", "schema", "client", "gateway", "cluster", "module", "endpoint", "cron",
         "migration", "form", "widget", "daemon", "proxy", "table", "bucket", "lambda",
         "controller", "template", "report", "script", "container"]
_VERB = ["fixed a flaky test in", "refactored", "added metrics to", "wrote docs for",
         "found a memory leak in", "upgraded the dependencies of", "reviewed a change to",
         "deployed", "rolled back", "profiled", "migrated", "split", "renamed", "deleted",
         "added retries to", "load tested", "paged on-call about", "wrote a runbook for",
         "added tracing to", "fixed a race in", "cut the latency of", "added a cache to",
         "pinned the version of", "found a bug in", "sped up", "rewrote", "audited",
         "added alerts to", "benchmarked", "documented the API of", "hardened", "sandboxed",
         "containerised", "deprecated", "archived", "cleaned up", "secured", "scaled",
         "debugged", "simplified"]
_TOOL = ["pnpm", "Python 3.11", "PostgreSQL 16", "Rust", "Redis", "Kafka", "Terraform", "Go",
         "gRPC", "GraphQL", "Docker", "Kubernetes", "Celery", "SQLite", "Elasticsearch",
         "Prometheus", "Grafana", "Sentry", "OpenTelemetry", "nginx", "FastAPI", "Django",
         "React", "Vite", "Bazel", "uv", "ruff", "mypy", "pytest", "Playwright"]
_WHEN = ["after the outage", "before the launch", "during the incident", "for the audit",
         "on Friday", "behind a feature flag", "in the staging cluster", "after a customer "
         "report", "for the Q3 roadmap", "during the migration", "before the freeze",
         "after code review", "on the night shift", "for the security review", "in the spike"]


def _one(rng: random.Random, i: int) -> str:
    who = f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
    what = f"the {rng.choice(_ADJ)} {rng.choice(_NOUN)}"
    return f"{who} {rng.choice(_VERB)} {what} using {rng.choice(_TOOL)} {rng.choice(_WHEN)} (ticket {i})"


def synthetic_texts(n: int, seed: int = 7) -> list[str]:
    """``n`` distinct, plausible one-line memories: 200 people, 900 components, 40
    actions, 30 tools and 15 occasions, so that a content word is in 0.5-7% of them."""
    rng = random.Random(seed)
    return [_one(rng, i) for i in range(n)]


def synthetic_queries(n: int, seed: int = 11) -> list[str]:
    """``n`` distinct questions in the style of the memories (no embedding is reused)."""
    rng = random.Random(seed)
    templates = ["what did {who} do to the {adj} {noun}?", "who {verb} the {adj} {noun}?",
                 "anything about the {adj} {noun} {when}?", "what has {who} done with {tool}?"]
    out: dict[str, None] = {}
    while len(out) < n:
        out[rng.choice(templates).format(
            who=rng.choice(_FIRST), adj=rng.choice(_ADJ), noun=rng.choice(_NOUN),
            verb=rng.choice(_VERB), when=rng.choice(_WHEN), tool=rng.choice(_TOOL))] = None
    return list(out)


def _fill_vectors(memory: Memory, texts: list[str], embed: bool, seed: int = 7) -> None:
    store = memory.store
    jobs = store.claim_jobs("embed", 10**9, lease_s=3600)
    passages = [p for job in jobs for p in job.payload["passages"]]
    rows = store.unembedded(passages)
    if embed:
        vectors = np.vstack([memory.embedder.embed_passages([t for _, t in rows[i : i + 64]])
                             for i in range(0, len(rows), 64)])
    else:
        pool = memory.embedder.embed_passages(texts[:512])
        rng = np.random.default_rng(seed)
        vectors = pool[rng.integers(0, len(pool), len(rows))]
        vectors = vectors + rng.normal(0, 0.02, vectors.shape).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for i in range(0, len(rows), 5000):
        chunk = zip(rows[i : i + 5000], vectors[i : i + 5000], strict=True)
        store.put_vectors([(r, v) for (r, _), v in chunk],
                          jobs if i + 5000 >= len(rows) else [])


def _ms(values: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(values, 50), 2), "p95": round(percentile(values, 95), 2)}


def run(n: int = 100_000, queries: int = 200, progress: bool = True, embed: bool = False,
        path: str | None = None) -> dict[str, Any]:
    """Ingest ``n`` memories into one scope and time ``queries`` searches; ``path`` is
    the store to fill (a new file, or the URL of an empty database)."""
    texts = synthetic_texts(n)
    with tempfile.TemporaryDirectory(prefix="remem-scale-") as tmp:
        # a store URL (an empty PostgreSQL database) or a file; default a temporary file
        memory = Memory(path or Path(tmp) / "scale.db", config=Config(run_worker=False))
        try:
            start = time.perf_counter()
            batch = 100
            shown = Reporter("ingest", n) if progress else None
            for i in range(0, n, batch):
                memory.add(texts[i : i + batch], user_id="scale", session_id=f"s{i // 1000}")
                if shown is not None:
                    shown.advance(min(batch, n - i))
            if shown is not None:
                shown.close()
            ingest_s = time.perf_counter() - start
            _fill_vectors(memory, texts, embed)
            store = memory.store
            engines = ("index", "fts5") if hasattr(store, "fulltext_engine") else (None,)
            if hasattr(store, "fulltext_warm_rows"):
                store.fulltext_warm_rows = n + 1  # load it here, in the timed warm-up
            t0 = time.perf_counter()
            memory.search("warm up", user_id="scale")  # loads the vector matrix once
            load_s = time.perf_counter() - t0
            cfg = memory.config.retrieval
            scope, filters = Scope(user_id="scale"), Filters()
            now = datetime.now(timezone.utc)
            timings: dict[str | None, list[float]] = {e: [] for e in engines}
            fulltext: dict[str | None, list[float]] = {e: [] for e in engines}
            embeds = []
            # each engine's whole searches get queries of their own (a query embedded once
            # is cached); the full-text channel alone is timed on the same words for both
            asked = synthetic_queries(queries * len(engines))
            for i in range(queries):
                # embedding one query alone, alternated with the searches so that both see
                # the same machine (another text: the search must not find it cached)
                t0 = time.perf_counter()
                memory.embedder.embed_queries([f"{asked[i]} (alone)"])
                embeds.append((time.perf_counter() - t0) * 1000)
                terms = analyse(asked[i], now).terms
                order = engines if i % 2 == 0 else engines[::-1]
                for engine in order:
                    if engine is not None:
                        store.fulltext_engine = engine
                    query = asked[i + queries * engines.index(engine)]
                    t0 = time.perf_counter()
                    memory.search(query, user_id="scale", k=10)
                    timings[engine].append((time.perf_counter() - t0) * 1000)
                    t0 = time.perf_counter()
                    store.fulltext(terms, scope, filters, cfg.candidates, cfg.weight_context)
                    fulltext[engine].append((time.perf_counter() - t0) * 1000)
            index_bytes = 0
            if engines[0] is not None:
                store.fulltext_engine = "index"
                index_bytes = store.fulltext_index.nbytes()
            t0 = time.perf_counter()
            memory.embedder.embed_passages(texts[:200])
            embed_rate = 200 / (time.perf_counter() - t0)
            size = memory.stats().size_bytes
        finally:
            memory.close()
    main = timings[engines[0]]
    out: dict[str, Any] = {
        "n": n,
        "queries": queries,
        "search_ms": _ms(main),
        "query_embed_ms": _ms(embeds),
        "search_over_query_embed_p95": round(percentile(main, 95) / max(percentile(embeds, 95), 1e-9), 2),
    }
    if engines[0] is not None:
        out["search_ms_fts5"] = _ms(timings["fts5"])
        out["fulltext_ms"] = {"index": _ms(fulltext["index"]), "fts5": _ms(fulltext["fts5"])}
        out["fulltext_p50_fts5_over_index"] = round(
            percentile(fulltext["fts5"], 50) / max(percentile(fulltext["index"], 50), 1e-9), 1)
        out["first_search_s"] = round(load_s, 2)  # loads the vector matrix and full-text index
        out["fulltext_index_mb"] = round(index_bytes / 1e6, 1)
    return {
        **out,
        "ingest_per_s": round(n / ingest_s, 1),
        "embed_per_s": round(embed_rate, 1),
        "vectors": "embedded" if embed else "synthetic (real embeddings of 512 texts plus noise)",
        "size_bytes": size,
        "store": "postgresql" if path and "://" in str(path) else "sqlite",
    }
