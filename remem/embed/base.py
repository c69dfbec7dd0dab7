"""The embedder port: text in, L2-normalised float32 vectors out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

__all__ = ["Embedder"]


class Embedder(Protocol):
    """Turns text into unit vectors; queries and passages may be embedded differently.

    ``name`` identifies the model (and is recorded in the store); ``dim`` is the vector size.
    An embedder may also set ``parallel_queries = False`` when embedding holds the GIL
    (a local model): the retriever then embeds a query before its full-text search
    instead of beside it (the default, for a model behind a network call).
    """

    name: str
    dim: int

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """One row per query text, shape ``(len(texts), dim)``."""
        ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """One row per passage text, shape ``(len(texts), dim)``."""
        ...
