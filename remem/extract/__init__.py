"""Extraction: conversation turns and coding-agent events -> typed candidate memories.

The default extractor is :class:`RulesExtractor` (English and Chinese, no model). Run it
through :func:`extract_checked` to have every candidate checked against its sources::

    from remem.extract import EpisodeIn, RulesExtractor, extract_checked

    result = extract_checked(RulesExtractor(), [EpisodeIn("e1", "Never push to main.")])
    result.candidates   # [Candidate(kind='preference', text='Never push to main', ...)]
    result.rejected     # candidates their sources do not support, with the reason
"""

from __future__ import annotations

from .base import (
    KINDS,
    Candidate,
    EpisodeIn,
    Extraction,
    Extractor,
    Rejected,
    extract_checked,
    ground,
)
from .dates import DateRef, find_date
from .factory import create_extractor
from .llm import LLMExtractor
from .rules import RulesExtractor

__all__ = [
    "Candidate",
    "DateRef",
    "EpisodeIn",
    "Extraction",
    "Extractor",
    "KINDS",
    "LLMExtractor",
    "Rejected",
    "RulesExtractor",
    "create_extractor",
    "extract_checked",
    "find_date",
    "ground",
]
