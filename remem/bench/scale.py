"""Search latency and ingest throughput with many memories in one scope.

Texts are synthetic sentences about a software team. They go in through ``Memory.add``
(episodes, passages and full text, in batches of 100). Embedding 100k texts with the
bundled model takes about half an hour on 2 cores, so unless ``embed=True`` the
vectors are real embeddings of a pool of base texts plus a little noise, written
straight to the store: an exact scan costs the same whatever the values. Queries go
through the whole real path: query embedding, full text, vector scan, fusion,
neighbours, hydration. With ``scopes`` above 1 the rows are dealt out to that many users
and the searches read one of them: a scope holding a share of a large store.

Both stores rank full text with the in-memory index; the store's own SQL ranking is
timed beside it on the same store, alternated (FTS5's ``bm25()`` on SQLite, the same
scores; ``ts_rank`` on PostgreSQL): the whole search with each (``search_ms`` and
``search_ms_fts5`` or ``search_ms_tsvector``) and the full-text channel alone
(``fulltext_ms``).

With ``keep`` the store file stays, and a second run on it times the searches only: the
scope's HNSW graph, saved beside the file by the first run, is then loaded instead of
built (``vector_index.ann_graphs`` says which).
"""

from __future__ import annotations

import contextlib
import random
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Config, RetrievalConfig
from ..errors import ValidationError
from ..memory import Memory
from ..model import Scope
from ..retrieve.query import analyse
from ..store.base import Filters
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
    # in slices: one statement may bind only so many values (250,000 in SQLite 3.40)
    rows = [r for i in range(0, len(passages), 10_000) for r in store.unembedded(passages[i : i + 10_000])]
    if embed:
        vectors = np.vstack([memory.embedder.embed_passages([t for _, t in rows[i : i + 64]])
                             for i in range(0, len(rows), 64)])
    else:
        pool = memory.embedder.embed_passages(texts[:512])
        rng = np.random.default_rng(seed)
        vectors = pool[rng.integers(0, len(pool), len(rows))]
        vectors = vectors + rng.normal(0, 0.02, vectors.shape).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    # a server's vector index is built once at the end, not row by row (PostgreSQL)
    bulk = getattr(store, "bulk_vectors", contextlib.nullcontext)
    with bulk():
        for i in range(0, len(rows), 5000):
            chunk = zip(rows[i : i + 5000], vectors[i : i + 5000], strict=True)
            store.put_vectors([(r, v) for (r, _), v in chunk],
                              jobs if i + 5000 >= len(rows) else [])


def _ms(values: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(values, 50), 2), "p95": round(percentile(values, 95), 2)}


def _filled(path: Path, n: int, scopes: int) -> bool:
    """Whether ``path`` is a store an earlier run of this bench filled with ``n`` memories
    dealt to ``scopes`` users, every vector written."""
    if not path.is_file():
        return False
    memory = Memory(path, config=Config(run_worker=False))
    try:
        return memory.store.meta("bench_scale") == f"{n}/{scopes}"
    finally:
        memory.close()


def run(n: int = 100_000, queries: int = 200, progress: bool = True, embed: bool = False,
        path: str | None = None, scopes: int = 1, old_path: bool = True,
        against: dict[str, Any] | None = None, keep: str | None = None) -> dict[str, Any]:
    """Ingest ``n`` memories into ``scopes`` users and time ``queries`` searches in the
    first; ``path`` is the store to fill (a new file, or the URL of an empty database).

    ``keep`` (SQLite): a file kept after the run; when an earlier run with the same ``n``
    and ``scopes`` filled it, the ingest is skipped (``ingest_per_s`` is then None) and
    only the searches are timed, so that two versions can be timed on one store.

    With ``old_path`` (SQLite only) the same file is also searched through the former
    store-wide vector matrix, alternated with the scoped index query by query.
    ``against`` (retrieval settings, e.g. ``{"fusion": "rrf"}``) also times each query
    with those settings on the same store: ``against_search_ms`` and the ratio of the p50s.
    """
    texts = synthetic_texts(n)
    with tempfile.TemporaryDirectory(prefix="remem-scale-") as tmp:
        # a store URL (an empty PostgreSQL database) or a file; default a temporary file
        target = path or keep or Path(tmp) / "scale.db"
        reuse = keep is not None and _filled(Path(keep), n, scopes)
        if keep is not None and not reuse and Path(keep).exists():
            raise ValidationError("keep", f"{keep} exists but was not filled by this bench "
                                  f"with --n {n} --scopes {scopes}; give a new path")
        config = Config(run_worker=False)
        memory = Memory(target, config=config)
        others: list[Memory] = []
        ingest_s: float | None = None
        try:
            if not reuse:
                start = time.perf_counter()
                batch = 100
                shown = Reporter("ingest", n) if progress else None
                for i in range(0, n, batch):
                    memory.add(texts[i : i + batch], user_id=f"scale{(i // batch) % scopes}",
                               session_id=f"s{i // 1000}")
                    if shown is not None:
                        shown.advance(min(batch, n - i))
                if shown is not None:
                    shown.close()
                ingest_s = time.perf_counter() - start
                _fill_vectors(memory, texts, embed)
                if keep is not None:
                    memory.store.set_meta("bench_scale", f"{n}/{scopes}")
            paths = {"scoped": memory}
            sqlite = "://" not in str(target)
            # each path its own embedder: a query cached by one must not speed up another
            if old_path and sqlite:
                paths["old"] = Memory(target, config=config.model_copy(update={"vector_index": "flat"}))
            if against is not None:
                paths["against"] = Memory(target, config=config.model_copy(
                    update={"retrieval": RetrievalConfig(**{**config.retrieval.model_dump(), **against})}))
            engine = "fts5" if sqlite else "tsvector"  # the store's own SQL ranking
            if hasattr(memory.store, "fulltext_engine"):
                paths[engine] = Memory(target, config=config)
                paths[engine].store.fulltext_engine = engine
            others = [m for name, m in paths.items() if name != "scoped"]
            loaded = {}
            for name, m in paths.items():
                if getattr(m.store, "fulltext_index", None) is not None:
                    m.store.fulltext_index.warm_rows = n + 1  # load the index here, in the timed warm-up
                t0 = time.perf_counter()
                m.search("warm up", user_id="scale0")  # loads the vectors, starts any graph
                vectors = getattr(m.store, "vectors", None)
                if hasattr(vectors, "wait"):
                    vectors.wait()  # a graph built in the background counts as loading
                loaded[name] = round(time.perf_counter() - t0, 2)
            timings: dict[str, list[float]] = {name: [] for name in paths}
            vector: dict[str, list[float]] = {name: [] for name in paths}
            fulltext: dict[str, list[float]] = {name: [] for name in paths}
            embeds = []
            scope, filters, cfg = Scope(user_id="scale0"), Filters(), config.retrieval
            now = datetime.now(timezone.utc)
            for j, query in enumerate(synthetic_queries(queries)):
                # embedding one query alone, alternated with the searches so that all see
                # the same machine (another text: the search must not find it cached)
                t0 = time.perf_counter()
                qvec = memory.embedder.embed_queries([f"{query} (alone)"])[0]
                embeds.append((time.perf_counter() - t0) * 1000)
                terms = analyse(query, now).terms
                order = list(paths.items()) if j % 2 == 0 else list(paths.items())[::-1]
                for name, m in order:
                    t0 = time.perf_counter()
                    m.search(query, user_id="scale0", k=10)
                    timings[name].append((time.perf_counter() - t0) * 1000)
                    t0 = time.perf_counter()
                    m.store.vector(qvec, scope, filters, cfg.candidates)
                    vector[name].append((time.perf_counter() - t0) * 1000)
                    t0 = time.perf_counter()
                    m.store.fulltext(terms, scope, filters, cfg.candidates, cfg.weight_context)
                    fulltext[name].append((time.perf_counter() - t0) * 1000)
            text_index = getattr(memory.store, "fulltext_index", None)
            index_bytes = text_index.nbytes() if text_index is not None else 0
            t0 = time.perf_counter()
            memory.embedder.embed_passages(texts[:200])
            embed_rate = 200 / (time.perf_counter() - t0)
            size = memory.stats().size_bytes
            index = getattr(memory.store, "vectors", None)
            index_stats = index.stats(memory.store.conn) if hasattr(index, "stats") else None
        finally:
            for m in others:
                m.close()
            memory.close()
    out: dict[str, Any] = {
        "n": n,
        "queries": queries,
        "scopes": scopes,
        "search_ms": _ms(timings["scoped"]),
        "query_embed_ms": _ms(embeds),
        "vector_ms": _ms(vector["scoped"]),
        "search_over_query_embed_p95": round(
            percentile(timings["scoped"], 95) / max(percentile(embeds, 95), 1e-9), 2),
        "index_load_s": loaded["scoped"],
    }
    if index_stats is not None:
        out["vector_index"] = {"groups": index_stats.groups, "ann_groups": index_stats.ann_groups,
                               "ann_threshold": config.ann_threshold,
                               "ann_build_s": index_stats.ann_build_s,
                               "matrix_bytes": index_stats.matrix_bytes,
                               "ann_bytes": index_stats.ann_bytes,
                               "ann_graphs": sorted(set(getattr(index, "graph_origin", {}).values()))}
    if "old" in timings:
        out["old"] = {"search_ms": _ms(timings["old"]), "vector_ms": _ms(vector["old"]),
                      "index_load_s": loaded["old"]}
        out["old_over_scoped_p50"] = {
            "search": round(percentile(timings["old"], 50) / max(percentile(timings["scoped"], 50), 1e-9), 2),
            "vector": round(percentile(vector["old"], 50) / max(percentile(vector["scoped"], 50), 1e-9), 2)}
    if engine in timings:
        out[f"search_ms_{engine}"] = _ms(timings[engine])
        out["fulltext_ms"] = {"index": _ms(fulltext["scoped"]), engine: _ms(fulltext[engine])}
        out[f"fulltext_p50_{engine}_over_index"] = round(
            percentile(fulltext[engine], 50) / max(percentile(fulltext["scoped"], 50), 1e-9), 1)
        out["first_search_s"] = loaded["scoped"]  # loads the vectors and the full-text index
        out["fulltext_index_mb"] = round(index_bytes / 1e6, 1)
    if "against" in timings:
        out["against"] = against
        out["against_search_ms"] = _ms(timings["against"])
        out["search_p50_over_against"] = round(
            percentile(timings["scoped"], 50) / max(percentile(timings["against"], 50), 1e-9), 2)
    out.update({
        "ingest_per_s": None if ingest_s is None else round(n / ingest_s, 1),
        "embed_per_s": round(embed_rate, 1),
        "vectors": "embedded" if embed else "synthetic (real embeddings of 512 texts plus noise)",
        "size_bytes": size,
        "store": "postgresql" if path and "://" in str(path) else "sqlite",
    })
    return out
