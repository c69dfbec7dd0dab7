"""A deterministic feature-hashing embedder: no model, no meaning, just shared words.

For tests of ranking code and for runs where the bundled model is not wanted; it
finds texts that share words, not paraphrases.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from ..text import words

__all__ = ["HashEmbedder"]


class HashEmbedder:
    """Bag of hashed words (and CJK bigrams) in 256 dimensions, L2-normalised."""

    name = "hash:256"
    dim = 256

    def _one(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float32)
        for word in words(text):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little")
            vec[h % self.dim] += 1.0 if h & 1 << 31 else -1.0
        norm = np.linalg.norm(vec)
        return vec / norm if norm else vec

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._one(t) for t in texts]) if texts else np.empty((0, self.dim), np.float32)

    embed_passages = embed_queries
