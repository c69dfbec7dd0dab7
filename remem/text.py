"""Text helpers shared by the layers: CJK-aware segmentation, token estimates, passages."""

from __future__ import annotations

import re
from collections.abc import Iterable

import Stemmer  # PyStemmer: the Snowball stemmers, compiled

__all__ = ["clauses", "content_words", "estimate_tokens", "has_cjk", "segment", "split_passages", "stem",
           "stems", "words"]

# Han, Hiragana, Katakana, Hangul: scripts written without spaces between words.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def has_cjk(text: str) -> bool:
    """True if the text holds any CJK character."""
    return _CJK_RUN.search(text) is not None


def _bigrams(run: str) -> str:
    if len(run) == 1:
        return run
    return " ".join(run[i : i + 2] for i in range(len(run) - 1))


def segment(text: str) -> str:
    """Text as FTS5 should index it: CJK runs become overlapping character bigrams.

    unicode61 treats a whole run of Chinese as one token, so without this a two-character
    word inside a sentence is never found. Bigrams find every word of two characters or
    more, need no dictionary, and cost one pass.
    """
    if not has_cjk(text):
        return text
    return _CJK_RUN.sub(lambda m: f" {_bigrams(m.group())} ", text)


def words(text: str) -> list[str]:
    """Lower-cased word tokens; each CJK run gives its bigrams."""
    if text.isascii():  # no CJK, and lower-casing first cuts the same words
        return _WORD.findall(text.lower())
    out: list[str] = []
    for piece in _CJK_RUN.split(text):
        out.extend(w.lower() for w in _WORD.findall(piece))
    for run in _CJK_RUN.findall(text):
        out.extend(_bigrams(run).split())
    return out


def estimate_tokens(text: str) -> int:
    """A model-independent token estimate: ~1 per CJK character, ~1.3 per other word."""
    if text.isascii():
        return max(1, (len(_WORD.findall(text)) * 4 + 2) // 3)
    cjk = sum(len(r) for r in _CJK_RUN.findall(text))
    other = len(_WORD.findall(_CJK_RUN.sub(" ", text)))
    return max(1, cjk + (other * 4 + 2) // 3)


def split_passages(text: str, max_tokens: int) -> list[str]:
    """Split a long text into passages of about ``max_tokens``, on paragraph, then sentence,
    then word boundaries. A short text comes back whole."""
    if estimate_tokens(text) <= max_tokens:
        return [text]
    pieces = [p for p in re.split(r"(?<=[.!?。！？\n])\s*", text) if p.strip()]
    passages: list[str] = []
    current = ""
    for piece in pieces:
        if estimate_tokens(piece) > max_tokens:
            piece_words = piece.split(" ") if not has_cjk(piece) else list(piece)
            step = max(1, max_tokens if has_cjk(piece) else (max_tokens * 3) // 4)
            joiner = "" if has_cjk(piece) else " "
            sub = [joiner.join(piece_words[i : i + step]) for i in range(0, len(piece_words), step)]
        else:
            sub = [piece]
        for s in sub:
            candidate = f"{current} {s}".strip() if current else s
            if current and estimate_tokens(candidate) > max_tokens:
                passages.append(current)
                current = s
            else:
                current = candidate
    if current:
        passages.append(current)
    return passages


#: English function words: no evidence of what a text is about.
STOPWORDS = frozenset(
    "a an the and or but so of in on at to for with by as from into onto about over under "
    "i me my mine myself we us our ours you your yours he him his she her it its they them "
    "is am are was were be been being do does did doing have has had having will would "
    "shall should can could may might must not no nor don't doesn't didn't won't can't "
    "that this these those there here what which who whom whose when where why how "
    "all any both each few more most other some such only own same than too very just "
    "also then now again once if because while until s t d ll m re ve".split()
)


def stems(words: Iterable[str]) -> set[str]:
    """Lower-case words by their English Snowball stems, so that "logging" meets "logs"
    and "configure" meets "configuration" but "shortcuts" does not meet "short"; words
    with digits or symbols, and words of other scripts (CJK bigrams), as they are."""
    stemmer = Stemmer.Stemmer("english")  # holds state while it works: one per call
    return {stemmer.stemWord(w) if w.isascii() and w.isalpha() else w for w in words}


def stem(word: str) -> str:
    """One word's stem, as :func:`stems` gives it."""
    return next(iter(stems([word])))


def content_words(text: str) -> set[str]:
    """The words that carry meaning (function words dropped), CJK as bigrams."""
    return {w for w in words(text) if w not in STOPWORDS}


_CLAUSE = re.compile(r"(?<=[,;，；。])\s*|(?<=[.!?])\s+"
                     # "... is Northwind and the stack is FastAPI": "and" before a new subject
                     r"|\s+(?=(?:and|but|while|whereas)\s+(?:the|my|our|we|i|it|its|they|their|"
                     r"he|his|she|her|you|your)\b)", re.IGNORECASE)


def clauses(text: str) -> list[str]:
    """A text's clauses, split after commas, semicolons and full stops, and before a
    conjunction that opens a clause with its own subject."""
    return [c.strip() for c in _CLAUSE.split(text) if c.strip(" ,;，；。.")]
