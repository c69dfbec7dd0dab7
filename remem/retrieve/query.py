"""Query analysis: the terms to look up, the entities named, the time span meant."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from ..text import words

__all__ = ["QueryPlan", "analyse", "answer_type", "entity_words", "ordering", "time_span"]

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves s t don doesn didn isn wasn weren won wouldn shouldn couldn ve ll re d m o y
    also anything something thing things kind sort get got going go like likely would might
    may must shall ever many much one ones""".split()
)

_ENTITY = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-zA-Z'’-]+(?:\s+[A-Z][a-zA-Z'’-]+)*)")
_MONTHS = {m: i + 1 for i, m in enumerate(
    "january february march april may june july august september october november december".split())}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_UNITS = {"day": 1, "week": 7, "month": 30, "year": 365}


@dataclass(frozen=True)
class QueryPlan:
    """What the retriever will look for."""

    text: str
    terms: tuple[str, ...]
    entities: tuple[str, ...]
    span: tuple[float, float] | None
    order: str | None = None
    wants: str | None = None

    @property
    def names(self) -> frozenset[str]:
        """The lower-cased words of the entities, possessives dropped ("Melanie's" -> melanie)."""
        return frozenset(w.lower() for e in self.entities
                         for w in re.sub(r"['’]s\b", "", e).split())


def _day(d: datetime) -> datetime:
    return d.replace(hour=0, minute=0, second=0, microsecond=0)


def _span(start: datetime, days: float) -> tuple[float, float]:
    return start.timestamp(), (start + timedelta(days=days)).timestamp() - 1e-3


def _between(start: datetime, end: datetime) -> tuple[float, float]:
    return start.timestamp(), end.timestamp() - 1e-3


def _next_month(start: datetime) -> datetime:
    return start.replace(year=start.year + 1, month=1) if start.month == 12 else \
        start.replace(month=start.month + 1)


def time_span(text: str, now: datetime) -> tuple[float, float] | None:
    """The time range a phrase like "last week", "in May 2023" or "上周" refers to, or
    None when the text names none (or names a date no calendar holds)."""
    try:
        return _time_span(text.lower(), now)
    except (ValueError, OverflowError):  # "3000 years ago", "December 9999"
        return None


def _time_span(low: str, now: datetime) -> tuple[float, float] | None:
    today = _day(now)
    simple = {
        "today": (today, 1), "yesterday": (today - timedelta(days=1), 1),
        "今天": (today, 1), "昨天": (today - timedelta(days=1), 1),
        "前天": (today - timedelta(days=2), 1),
    }
    for phrase, (start, days) in simple.items():
        if re.search(rf"\b{phrase}\b" if phrase.isascii() else phrase, low):
            return _span(start, days)
    week = today - timedelta(days=today.weekday())
    month = today.replace(day=1)
    prev_month = (month - timedelta(days=1)).replace(day=1)
    year = today.replace(month=1, day=1)
    relative = {
        r"\blast week\b|上周|上个星期|上星期": (week - timedelta(days=7), week),
        r"\bthis week\b|本周|这周|这个星期": (week, week + timedelta(days=7)),
        r"\blast month\b|上个月|上月": (prev_month, month),
        r"\bthis month\b|本月|这个月": (month, _next_month(month)),
        r"\blast year\b|去年": (year.replace(year=year.year - 1), year),
        r"\bthis year\b|今年": (year, year.replace(year=year.year + 1)),
    }
    for pattern, (start, end) in relative.items():
        if re.search(pattern, low):
            return _between(start, end)
    ago = re.search(r"\b(\d+|a|an|one|two|three|four|five|six)\s+(day|week|month|year)s?\s+ago\b", low)
    if ago:
        n = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}.get(
            ago.group(1)) or int(ago.group(1))
        days = _UNITS[ago.group(2)]
        return _span(today - timedelta(days=n * days), days)
    iso = re.search(r"\b(\d{4})-(\d{2})-(\d{2})\b", low)
    if iso:
        return _span(datetime(*map(int, iso.groups()), tzinfo=timezone.utc), 1)
    named = re.search(
        r"\b(?:(\d{1,2})\s+)?(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) +
        r")\.?(?:\s+(\d{1,2}))?(?:,?\s+(\d{4}))?\b", low)
    if named and (named.group(4) or named.group(1) or named.group(3) or len(named.group(2)) > 3):
        if named.group(2) == "may" and not (named.group(4) or named.group(1) or named.group(3)):
            return None  # "may" alone is a verb far more often than a month
        month_no = _MONTHS[named.group(2)]
        day_no = named.group(1) or named.group(3)
        if named.group(4):
            year_no = int(named.group(4))
        else:  # a month with no year is the latest one that has begun
            year_no = now.year if (month_no, int(day_no or 1)) <= (now.month, now.day) else now.year - 1
        if day_no:
            return _span(datetime(year_no, month_no, int(day_no), tzinfo=timezone.utc), 1)
        start = datetime(year_no, month_no, 1, tzinfo=timezone.utc)
        return _between(start, _next_month(start))
    year_only = re.search(r"\bin (\d{4})\b|(\d{4})年", low)
    if year_only:
        start = datetime(int(year_only.group(1) or year_only.group(2)), 1, 1, tzinfo=timezone.utc)
        return _between(start, start.replace(year=start.year + 1))
    return None


_EARLIEST = re.compile(r"\b(first|earliest|originally|initially|at first|used to)\b|最早|第一次|起初|原来")
_LATEST = re.compile(r"\b(last|latest|lately|recent|recently|current|currently|now|these days|"
                     r"most recent|nowadays|still)\b|最近|最后|现在|目前|如今")


_WANTS = (("time", re.compile(r"^\s*(when|what (date|day|year|month|time)|which (year|month|day)|"
                              r"how long)\b|什么时候|哪天|哪一天|几号|哪年|多久")),
          ("place", re.compile(r"^\s*(where|what (city|country|place|state))\b|在哪|哪里|什么地方")),
          ("person", re.compile(r"^\s*(who|whom|whose)\b|是谁|谁")))


def entity_words(text: str) -> set[str]:
    """The lower-cased words of the capitalised names in a text (not at a sentence start)."""
    return {w.lower() for m in _ENTITY.finditer(text) for w in m.group(1).split()}


def answer_type(text: str) -> str | None:
    """What kind of answer the question's form asks for: ``"time"`` ("when ...", "how
    long"), ``"place"`` ("where ..."), ``"person"`` ("who ..."), or None."""
    low = text.lower()
    for name, pattern in _WANTS:
        if pattern.search(low):
            return name
    return None


def ordering(text: str) -> str | None:
    """``"first"`` when the text asks for the earliest of several events ("the first
    time", "originally", "最早"), ``"last"`` for the latest or current one ("now",
    "most recent", "目前"), else None. Both (or neither) named: None."""
    low = text.lower()
    early, late = bool(_EARLIEST.search(low)), bool(_LATEST.search(low))
    if early == late:
        return None
    return "first" if early else "last"


def analyse(text: str, now: datetime) -> QueryPlan:
    """Terms without stopwords (CJK as bigrams), capitalised names, and the time span."""
    terms = tuple(dict.fromkeys(w for w in words(text) if w not in STOPWORDS and len(w) > 1
                                or (w.isdigit())))
    if not terms:
        terms = tuple(dict.fromkeys(words(text)))
    entities = tuple(dict.fromkeys(m.group(1) for m in _ENTITY.finditer(text)))
    return QueryPlan(text=text, terms=terms, entities=entities, span=time_span(text, now),
                     order=ordering(text), wants=answer_type(text))
