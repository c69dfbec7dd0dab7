"""A local sentence-transformers model (optional: pip install sentence-transformers)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import ConfigError

__all__ = ["SentenceTransformersEmbedder"]


class SentenceTransformersEmbedder:
    """Any sentence-transformers model already on disk (a path or a cached name)."""

    def __init__(self, model: str) -> None:
        if not model:
            raise ConfigError("name the model: embedder='sentence-transformers:PATH_OR_NAME'")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ConfigError(
                "this embedder needs sentence-transformers: pip install sentence-transformers"
            ) from exc
        self._model = SentenceTransformer(model, local_files_only=True)
        self.name = f"sentence-transformers:{model}"
        self.dim = int(self._model.get_sentence_embedding_dimension())

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._model.encode(list(texts), normalize_embeddings=True), np.float32)

    embed_passages = embed_queries
