"""Search latency and ingest throughput with many memories in one scope.

Texts are synthetic sentences about a software team. They go in through ``Memory.add``
(episodes, passages and full text, in batches of 100). Embedding 100k texts with the
bundled model takes about half an hour on 2 cores, so unless ``embed=True`` the
vectors are real embeddings of a pool of base texts plus a little noise, written
straight to the store: an exact scan costs the same whatever the values. Queries go
through the whole real path: query embedding, full text, vector scan, fusion,
neighbours, hydration.
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Config
from ..memory import Memory
from .stats import percentile, progress_bar

__all__ = ["run", "synthetic_queries", "synthetic_texts"]

_WHO = ["Alice", "Bob", "Chen Wei", "Dana", "Emeka", "Farah", "Gus", "Hana", "Ivan", "Jun"]
_TOPIC = ["the billing service", "the login page", "the CI pipeline", "the search index",
          "the mobile app", "the data warehouse", "the payments API", "the admin dashboard",
          "the onboarding flow", "the release process", "the cache layer", "the test suite"]
_VERB = ["fixed a flaky test in", "refactored", "added metrics to", "wrote docs for",
         "found a memory leak in", "upgraded the dependencies of", "reviewed a change to",
         "deployed", "rolled back", "profiled", "migrated", "split"]
_DETAIL = ["using pnpm", "after the outage", "with Python 3.11", "behind a feature flag",
           "on Friday", "with PostgreSQL 16", "for the Q3 launch", "with a new index",
           "in the staging cluster", "after a customer report", "with Rust", "using Redis"]


def synthetic_queries(n: int, seed: int = 11) -> list[str]:
    """``n`` distinct questions in the style of the memories (no embedding is reused)."""
    rng = random.Random(seed)
    templates = ["what did {who} do to {topic}?", "who {verb} {topic}?",
                 "anything about {topic} {detail}?", "what has {who} been working on {detail}?"]
    out: dict[str, None] = {}
    while len(out) < n:
        out[rng.choice(templates).format(who=rng.choice(_WHO), topic=rng.choice(_TOPIC),
                                         verb=rng.choice(_VERB), detail=rng.choice(_DETAIL))] = None
    return list(out)


def synthetic_texts(n: int, seed: int = 7) -> list[str]:
    """``n`` distinct, plausible one-line memories."""
    rng = random.Random(seed)
    return [f"{rng.choice(_WHO)} {rng.choice(_VERB)} {rng.choice(_TOPIC)} {rng.choice(_DETAIL)} "
            f"(ticket {i})" for i in range(n)]


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
        store.put_vectors([(r, v) for (r, _), v in zip(rows[i : i + 5000], vectors[i : i + 5000])],
                          jobs if i + 5000 >= len(rows) else [])


def run(n: int = 100_000, queries: int = 200, progress: bool = True, embed: bool = False,
        path: str | None = None) -> dict[str, Any]:
    """Ingest ``n`` memories into one scope and time ``queries`` searches."""
    texts = synthetic_texts(n)
    with tempfile.TemporaryDirectory(prefix="remem-scale-") as tmp:
        db = Path(path or Path(tmp) / "scale.db")
        memory = Memory(db, config=Config(run_worker=False))
        try:
            start = time.perf_counter()
            batch = 100
            if progress:
                with progress_bar() as bar:
                    task = bar.add_task("ingest", total=n)
                    for i in range(0, n, batch):
                        memory.add(texts[i : i + batch], user_id="scale", session_id=f"s{i // 1000}")
                        bar.advance(task, min(batch, n - i))
            else:
                for i in range(0, n, batch):
                    memory.add(texts[i : i + batch], user_id="scale", session_id=f"s{i // 1000}")
            ingest_s = time.perf_counter() - start
            _fill_vectors(memory, texts, embed)
            memory.search("warm up", user_id="scale")  # loads the vector matrix once
            timings = []
            for query in synthetic_queries(queries):
                t0 = time.perf_counter()
                memory.search(query, user_id="scale", k=10)
                timings.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            memory.embedder.embed_passages(texts[:200])
            embed_rate = 200 / (time.perf_counter() - t0)
            size = memory.stats().size_bytes
        finally:
            memory.close()
    return {
        "n": n,
        "queries": queries,
        "search_ms": {"p50": round(percentile(timings, 50), 2), "p95": round(percentile(timings, 95), 2)},
        "ingest_per_s": round(n / ingest_s, 1),
        "embed_per_s": round(embed_rate, 1),
        "vectors": "embedded" if embed else "synthetic (real embeddings of 512 texts plus noise)",
        "size_bytes": size,
    }
