"""When two memories say the same thing: normalised text and content-word overlap."""

from __future__ import annotations

import re

from ..text import content_words

__all__ = ["content_words", "jaccard", "normalise"]

_SPACE = re.compile(r"\s+")
_PUNCT = re.compile(r"[\s.,;:!?。，；：！？、\"'`()\[\]{}]+")


def normalise(text: str) -> str:
    """Lower-case, punctuation and spacing folded: equal means an exact duplicate."""
    return _SPACE.sub(" ", _PUNCT.sub(" ", text.lower())).strip()


def jaccard(a: set[str], b: set[str]) -> float:
    """Overlap of two word sets, 0 to 1."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)
