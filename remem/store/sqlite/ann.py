"""An approximate nearest-neighbour (HNSW) index over one group of vectors, from usearch.

The index only proposes candidates: callers score them again exactly against their own
float32 rows, so its reduced precision (float16) never reaches a score. usearch is an
optional dependency (``pip install 'remem[ann]'``); without it :func:`available` is
False and callers scan exactly.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["HnswIndex", "available"]

# graph degree and build effort: at these values recall@10 of the candidates, after an
# exact re-rank, stays above 0.98 on sentence embeddings (`remem bench ann`)
_CONNECTIVITY = 16
_EXPANSION_ADD = 128


def _index_class() -> Any:
    try:
        from usearch.index import Index
    except ImportError:
        return None
    return Index


def available() -> bool:
    """True when the approximate index can be built (usearch is installed)."""
    return _index_class() is not None


class HnswIndex:
    """HNSW graph over vectors keyed by their position in the caller's matrix."""

    def __init__(self, dim: int, expansion_search: int = 128, threads: int = 0) -> None:
        index = _index_class()
        if index is None:
            raise RuntimeError("the approximate vector index needs usearch: pip install 'remem[ann]'")
        self._threads = threads
        self._expansion_search = expansion_search
        self._index = index(ndim=dim, metric="ip", dtype="f16", connectivity=_CONNECTIVITY,
                            expansion_add=_EXPANSION_ADD, expansion_search=expansion_search)

    @classmethod
    def load(cls, path: str | os.PathLike[str], dim: int, expansion_search: int = 128,
             threads: int = 0) -> HnswIndex:
        """The graph :meth:`save` wrote to ``path``; a ValueError when the file is not
        such a graph of ``dim`` dimensions (usearch's own error when it is unreadable)."""
        out = cls(dim, expansion_search, threads)
        out._index.load(str(path))
        index = out._index
        if index.ndim != dim or index.connectivity != _CONNECTIVITY or "F16" not in str(index.dtype):
            raise ValueError(f"{path} holds a graph of other dimensions or settings")
        index.expansion_add = _EXPANSION_ADD
        index.expansion_search = expansion_search
        return out

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the graph to ``path`` (through a temporary file and a rename, so that a
        reader never sees half a graph)."""
        tmp = Path(f"{path}.{os.getpid()}.tmp")
        try:
            self._index.save(str(tmp))
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)

    def keys(self) -> np.ndarray:
        """Every key in the graph, ascending."""
        return np.sort(np.asarray(self._index.keys, dtype=np.int64))

    def vectors(self, keys: np.ndarray) -> np.ndarray:
        """The graph's (float16) copies of the vectors under ``keys``, as float32."""
        if not len(keys):
            return np.empty((0, self._index.ndim), dtype=np.float32)
        return np.asarray(self._index.get(np.asarray(keys, dtype=np.uint64)), dtype=np.float32)

    def __len__(self) -> int:
        return len(self._index)

    def add(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        """Insert ``vectors`` (unit length, float32) under the integer ``keys``."""
        if len(keys):
            self._index.add(np.asarray(keys, dtype=np.uint64), vectors, threads=self._threads)

    def remove(self, keys: np.ndarray) -> None:
        """Take the ``keys`` out of the graph: they are never proposed again."""
        if len(keys):
            self._index.remove(np.asarray(keys, dtype=np.uint64))

    def candidates(self, query: np.ndarray, count: int) -> np.ndarray:
        """Keys of up to ``count`` vectors near ``query``, not in exact order."""
        count = min(count, len(self._index))
        if count <= 0:
            return np.empty(0, dtype=np.int64)
        # a wide search list: the candidates are re-ranked, so breadth is what counts
        self._index.expansion_search = max(self._index.expansion_search, count)
        found = self._index.search(query, count, threads=1)
        return np.asarray(found.keys, dtype=np.int64)

    def memory_bytes(self) -> int:
        """Bytes the graph and its float16 copy of the vectors hold."""
        return int(self._index.memory_usage)
