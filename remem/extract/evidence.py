"""Reading a candidate against its turns: tokens in order, clauses, values and negation.

The grounding step (:mod:`remem.extract.base`) and the attribution check
(:mod:`remem.extract.attribution`) both need to know *where* in a turn a candidate's words
are found, not only whether they are: this module gives the turn's tokens in reading order
(Latin words stemmed, CJK runs as character bigrams) with their offsets, split into
clauses, and the two value checks that a share of shared words cannot make:

- :func:`missing_values`: numbers and names (identifiers, versions, paths, proper nouns) the
  candidate states and its sources do not;
- :func:`flipped_negation`: a clause whose words come from a source clause of the opposite
  polarity ("never eats fish" from "I still eat fish").

The word classes used here are grammar (pronouns, negators, numerals), not content.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..text import STOPWORDS
from ..text import stem as stem_word

__all__ = ["Clause", "Token", "clauses_of", "flipped_negation", "missing_values", "stem",
           "tokens"]

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}](?:[\w'’.\-/@+*]*[^\W{_CJK}])?", re.UNICODE)
_CJK_CHAR = re.compile(f"[{_CJK}]")
# clause boundaries: punctuation, and the conjunctions that start a new statement
_CLAUSE = re.compile(r"[,;!?。，；：！？、\n—()（）]|\.(?=\s|$)|\s(?:and|but|though|although|so)\s"
                     r"|(?=\b(?:rather than|instead of)\b)|(?=而非|而不是|不过|但是)")
# negation: negators, and the verbs that negate what follows (an extractor's own
# "dislikes"/"hates" stand for a speaker's "can't stand")
_NEG_EN = re.compile(r"\bcannot|\b(?:not|no|never|nobody|none|nothing|neither|nor|without|"
                     r"rather than|instead of|hates?|hated|dislikes?|disliked|detests?|"
                     r"loathes?|stop(?:s|ped)?|drop(?:s|ped)?)\b|n['’]t\b", re.IGNORECASE)
_NEG_ZH = re.compile(r"[不没别未无非勿莫]|讨厌|厌恶|反感|停止|放弃|取消")
_NUMBER = re.compile(r"\d+(?:[.:]\d+)*")
_EN_NUMBERS = {w: str(n) for n, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}
_ZH_DIGITS = {c: n for n, c in enumerate("零一二三四五六七八九")} | {"两": 2}


def stem(word: str) -> str:
    """A word's English stem (:func:`remem.text.stem`), lower-cased, without the
    punctuation around it or a possessive "'s"; other scripts as they are."""
    word = re.sub(r"['’]s$", "", word.lower().strip("'’.-/"))
    return stem_word(word)


@dataclass(frozen=True)
class Token:
    """One unit of text: a stemmed Latin word or a CJK character bigram, at ``start``."""

    text: str
    start: int
    cjk: bool
    raw: str


@dataclass(frozen=True)
class Clause:
    """A stretch of a text between clause boundaries, with its tokens."""

    text: str
    start: int
    tokens: tuple[Token, ...]

    @property
    def negations(self) -> int:
        """How many negators (and negating verbs) the clause holds."""
        return len(_NEG_EN.findall(self.text)) + len(_NEG_ZH.findall(self.text))


def tokens(text: str) -> list[Token]:
    """The text's tokens in reading order; a single CJK character stands for itself."""
    out: list[Token] = []
    for m in _TOKEN.finditer(text):
        run = m.group()
        if _CJK_CHAR.match(run):
            if len(run) == 1:
                out.append(Token(run, m.start(), True, run))
            out.extend(Token(run[i:i + 2], m.start() + i, True, run[i:i + 2])
                       for i in range(len(run) - 1))
        else:
            out.append(Token(stem(run), m.start(), False, run))
    return out


def content(toks: Sequence[Token]) -> list[Token]:
    """The tokens that carry content (function words left out)."""
    return [t for t in toks if t.cjk or t.text not in STOPWORDS]


def clauses_of(text: str) -> list[Clause]:
    """The text split into clauses, each with its own tokens (offsets into ``text``)."""
    out: list[Clause] = []
    start = 0
    bounds = [m.start() for m in _CLAUSE.finditer(text)] + [len(text)]
    for end in bounds:
        if end > start:
            piece = text[start:end]
            toks = tuple(Token(t.text, t.start + start, t.cjk, t.raw) for t in tokens(piece))
            if toks:
                out.append(Clause(piece, start, toks))
        start = end
    return out


def _numbers(text: str) -> set[str]:
    """The numbers a text states, as digits; "one"/"一" is an article as often as a number."""
    found = set(_NUMBER.findall(text))
    for word in re.findall(r"[a-z]+", text.lower()):
        if word in _EN_NUMBERS:
            found.add(_EN_NUMBERS[word])
    for run in re.findall(r"[零一二三四五六七八九两十百]+", text):
        value = _zh_number(run)
        if value is not None:
            found.add(str(value))
    return found - {"1", "0"}


def _zh_number(run: str) -> int | None:
    """A run of Chinese numerals up to 99 as a number ("六" 6, "二十八" 28); None for "一"
    (mostly an article), hundreds, and runs such as "三四" (an estimate, not one number)."""
    if run == "一" or "百" in run:
        return None
    if "十" in run:
        tens, _, ones = run.partition("十")
        if len(tens) > 1 or len(ones) > 1:
            return None
        return (_ZH_DIGITS.get(tens, 1) if tens else 1) * 10 + (_ZH_DIGITS.get(ones, 0) if ones else 0)
    return _ZH_DIGITS.get(run) if len(run) == 1 else None


def _covers(value: str, known: set[str]) -> bool:
    """A number is backed by the same number or a longer one it starts (3.11 by 3.11.6)."""
    return any(k == value or k.startswith(value + ".") for k in known)


def _names(text: str) -> list[str]:
    """Names and identifiers: words with a digit, ``_ . / @``, inner capitals, or a capital
    letter not at the start of a sentence; in CJK text every Latin word is one."""
    out = []
    cjk = _CJK_CHAR.search(text) is not None
    for m in _TOKEN.finditer(text):
        word = m.group()
        if _CJK_CHAR.match(word):
            continue
        before = text[:m.start()].rstrip()
        sentence_start = not before or before[-1] in ".!?。！？:;：；\n"
        if (cjk or re.search(r"[\d_./@]", word) or re.search(r"[a-z][A-Z]", word)
                or (word[0].isupper() and not sentence_start)):
            out.append(word)
    return out


def missing_values(candidate: str, sources: Sequence[str], subject: str = "",
                   exempt: frozenset[str] = frozenset()) -> list[str]:
    """The numbers and names the candidate states that none of its sources does.

    The subject's name (also as a possessive) and the ``exempt`` words (an extractor's own
    wording, such as "e.g.") are not checked."""
    joined = " ".join(sources)
    known_numbers = _numbers(joined)
    missing = [n for n in sorted(_numbers(candidate)) if not _covers(n, known_numbers)]
    known = {stem(t.raw) for t in tokens(joined) if not t.cjk}
    low = joined.lower()
    for name in _names(candidate):
        bare = re.sub(r"['’]s$", "", name)
        if bare.lower() == subject.lower() or _NUMBER.fullmatch(name):
            continue
        pieces = [stem(p) for p in re.split(r"[\W_]+", bare) if p and not p.isdigit()]
        if pieces and all(p in exempt for p in pieces):
            continue
        if (name.lower() not in low and stem(name) not in known
                and not (pieces and all(p in known or p in low for p in pieces))):
            missing.append(name)
    return missing


def shared(a: Sequence[Token], b: Sequence[Token]) -> set[str]:
    """The content tokens two token lists have in common."""
    return {t.text for t in content(a)} & {t.text for t in content(b)}


def _negated(clause: Clause, words: set[str]) -> bool:
    """True when a negator bears on ``words`` in the clause: in CJK text anywhere in it (a
    fronted topic comes before its verb: "香菜我受不了"), else before the last of them."""
    if any(t.cjk for t in clause.tokens):
        return clause.negations > 0
    last = max((t.start for t in clause.tokens if t.text in words), default=-1) - clause.start
    return any(m.start() < last for m in _NEG_EN.finditer(clause.text))


def flipped_negation(candidate: str, sources: Sequence[str], subject: str = "",
                     exempt: frozenset[str] = frozenset()) -> str | None:
    """The candidate's clause that the source clauses it draws on all say the other way.

    A candidate clause draws on the source clauses that share enough content tokens with
    it (two, or one for a clause of fewer than three); when it draws on some and every one
    of them has the opposite polarity (negated against plain, for the words they share),
    the clause is returned. A
    clause that joins two statements ("fails when Postgres is not running") is backed when
    any of them has its polarity. The subject's name and the ``exempt`` words (an
    extractor's own wording) do not count as shared tokens.
    """
    source_clauses = [c for s in sources for c in clauses_of(s)]
    named = {t.text for t in tokens(subject)} | exempt
    for clause in clauses_of(candidate):
        mine = {t.text for t in content(clause.tokens)} - named
        if not mine:
            continue
        need = 2 if len(mine) >= 3 else 1
        drawn = [sc for sc in source_clauses
                 if len(shared(clause.tokens, sc.tokens) - named) >= need]
        if drawn and all(_negated(sc, shared(clause.tokens, sc.tokens))
                         != _negated(clause, shared(clause.tokens, sc.tokens)) for sc in drawn):
            return clause.text.strip()
    return None
