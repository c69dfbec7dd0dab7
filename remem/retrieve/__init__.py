"""Retrieval: query analysis, recall channels, fusion, packing."""

from .retriever import Retriever

__all__ = ["Retriever"]
