"""Recall of the approximate vector index against an exact scan, on real embeddings.

The turns of each dataset (LoCoMo, LongMemEval) go into a scope of their own through
``Memory.add``; their passages are embedded with the bundled embedder and its questions
are the queries. One store file is then read twice: with an HNSW index over every scope
(``ann_threshold`` below the scope's size) and with exact scans only. recall@k is the
share of the exact top k memories that the approximate search also returns.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..config import AgentConfig, Config
from ..errors import ValidationError
from ..memory import Memory
from ..model import Scope
from ..store.base import Filters
from .datasets import load_dataset
from .progress import Reporter
from .stats import percentile

__all__ = ["detect", "run"]


def detect(path: Path) -> str:
    """Which dataset a file holds: ``locomo`` or ``longmemeval``, by its shape."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValidationError("data", f"{path} is not a JSON file: {exc}") from exc
    first = data[0] if isinstance(data, list) and data else {}
    if isinstance(first, dict) and "conversation" in first:
        return "locomo"
    if isinstance(first, dict) and "haystack_sessions" in first:
        return "longmemeval"
    raise ValidationError("data", f"{path} is neither a LoCoMo nor a LongMemEval file")


def _cache_file(cache: Path, memory: Memory) -> Path:
    return cache / f"passages-{memory.embedder.name}.npz"


def _read_cache(file: Path) -> dict[str, np.ndarray]:
    if not file.is_file():
        return {}
    with np.load(file) as saved:
        return dict(zip(saved["keys"].tolist(), saved["vectors"], strict=True))


def _write_cache(file: Path, known: dict[str, np.ndarray]) -> None:
    file.parent.mkdir(parents=True, exist_ok=True)
    part = file.with_suffix(".part.npz")
    np.savez(part, keys=np.array(list(known)), vectors=np.stack(list(known.values())))
    part.replace(file)


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _embed(memory: Memory, texts: list[str], cache: Path | None, progress: bool,
           label: str) -> np.ndarray:
    """Passage embeddings of ``texts``; ``cache`` keeps each text's between runs (and
    while a long run goes on, so a stopped run loses little)."""
    file = None if cache is None else _cache_file(cache, memory)
    known = {} if file is None else _read_cache(file)
    missing = sorted({t for t in texts if _key(t) not in known}, key=len)
    shown = Reporter(f"embed {label}", len(missing)) if progress and missing else None
    # batches of texts of like length: less padding for the engine to compute
    for i in range(0, len(missing), 16):
        batch = missing[i : i + 16]
        for text, vector in zip(batch, memory.embedder.embed_passages(batch), strict=True):
            known[_key(text)] = vector
        if shown is not None:
            shown.advance(len(batch))
        if file is not None and (i // 16) % 40 == 39:
            _write_cache(file, known)
    if shown is not None:
        shown.close()
    if file is not None and missing:
        _write_cache(file, known)
    return np.stack([known[_key(t)] for t in texts]).astype(np.float32)


def _ingest(memory: Memory, name: str, turns: list[str], cache: Path | None,
            progress: bool) -> int:
    """Store the turns in scope ``name`` with real embeddings; returns the vector count."""
    for i in range(0, len(turns), 500):
        memory.add(turns[i : i + 500], user_id=name)
    store = memory.store
    jobs = store.claim_jobs("embed", 10**9, lease_s=3600)
    rows = store.unembedded([p for job in jobs for p in job.payload["passages"]])
    vectors = _embed(memory, [t for _, t in rows], cache, progress, name)
    for i in range(0, len(rows), 5000):
        chunk = zip(rows[i : i + 5000], vectors[i : i + 5000], strict=True)
        store.put_vectors([(r, v) for (r, _), v in chunk], jobs if i + 5000 >= len(rows) else [])
    return len(rows)


def _ms(values: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(values, 50), 3), "p95": round(percentile(values, 95), 3)}


def _compare(approx: Memory, exact: Memory, scope: Scope, queries: np.ndarray,
             ks: tuple[int, ...]) -> dict[str, Any]:
    recall: dict[int, list[float]] = {k: [] for k in ks}
    times: dict[str, list[float]] = {"ann": [], "exact": []}
    for q in queries:
        for k in ks:
            t0 = time.perf_counter()
            got = {m for m, _ in approx.store.vector(q, scope, Filters(), k)}
            t1 = time.perf_counter()
            want = {m for m, _ in exact.store.vector(q, scope, Filters(), k)}
            t2 = time.perf_counter()
            if want:
                recall[k].append(len(got & want) / len(want))
            if k == ks[0]:
                times["ann"].append((t1 - t0) * 1000)
                times["exact"].append((t2 - t1) * 1000)
    return {**{f"recall@{k}": round(float(np.mean(v)), 4) for k, v in recall.items()},
            **{f"min_recall@{k}": round(float(np.min(v)), 4) for k, v in recall.items()},
            "vector_ms": {name: _ms(v) for name, v in times.items()}}


def run(data: list[Path], queries: int = 500, ann_threshold: int = 1000,
        cache: Path | None = None, limit: int | None = None,
        progress: bool = True) -> dict[str, Any]:
    """Embed the turns and questions of each file in ``data`` and compare the approximate
    and exact vector searches on up to ``queries`` questions per file; ``limit`` takes the
    first conversations of each file only; ``cache`` keeps the passage embeddings between
    runs."""
    with tempfile.TemporaryDirectory(prefix="remem-ann-") as tmp:
        path = Path(tmp) / "ann.db"
        config = Config(run_worker=False, agent=AgentConfig(extractor="off"),
                        ann_threshold=ann_threshold)
        approx = Memory(path, config=config)
        approx.store.vectors.background = False  # type: ignore[attr-defined]  # timed below
        exact = Memory(path, config=config.model_copy(update={"ann_threshold": None}),
                       embedder=approx.embedder)
        try:
            per_set: dict[str, Any] = {}
            questions: dict[str, list[str]] = {}
            for file in data:
                name = detect(file)
                dataset = load_dataset(name, file).limited(limit)
                turns = list(dict.fromkeys(t.text for c in dataset.conversations
                                           for s in c.sessions for t in s.turns))
                asked = list(dict.fromkeys(q.text for c in dataset.conversations for q in c.questions))
                questions[name] = asked[:: max(1, len(asked) // queries)][:queries]
                per_set[name] = {"turns": len(turns),
                                 "vectors": _ingest(approx, name, turns, cache, progress)}
            t0 = time.perf_counter()
            stats = approx.store.vectors.stats(approx.store.conn)  # type: ignore[attr-defined]
            load_and_build_s = time.perf_counter() - t0
            exact.store.vectors.stats(exact.store.conn)  # type: ignore[attr-defined]
            for name, asked in questions.items():
                vectors = approx.embedder.embed_queries(asked)
                per_set[name]["queries"] = len(asked)
                per_set[name].update(_compare(approx, exact, Scope(user_id=name), vectors, (10, 100)))
        finally:
            exact.close()
            approx.close()
    return {
        "datasets": per_set,
        "limit": limit,
        "embedder": approx.embedder.name,
        "ann_threshold": ann_threshold,
        "index": {"groups": stats.groups, "ann_groups": stats.ann_groups, "rows": stats.rows,
                  "ann_build_s": stats.ann_build_s, "load_and_build_s": round(load_and_build_s, 3),
                  "matrix_bytes": stats.matrix_bytes, "ann_bytes": stats.ann_bytes},
    }
