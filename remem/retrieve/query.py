"""Query analysis: the terms to look up, the entities named, the time span meant."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from ..text import words

__all__ = ["QueryPlan", "analyse", "time_span"]

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


def _day(d: datetime) -> datetime:
    return d.replace(hour=0, minute=0, second=0, microsecond=0)


def _span(start: datetime, days: float) -> tuple[float, float]:
    return start.timestamp(), (start + timedelta(days=days)).timestamp() - 1e-3


def time_span(text: str, now: datetime) -> tuple[float, float] | None:
    """The time range a phrase like "last week", "in May 2023" or "上周" refers to."""
    low = text.lower()
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
    relative = {
        r"\blast week\b|上周|上个星期|上星期": (week - timedelta(days=7), 7),
        r"\bthis week\b|本周|这周|这个星期": (week, 7),
        r"\blast month\b|上个月|上月": (prev_month, (month - prev_month).days),
        r"\bthis month\b|本月|这个月": (month, 31),
        r"\blast year\b|去年": (today.replace(year=today.year - 1, month=1, day=1), 365),
        r"\bthis year\b|今年": (today.replace(month=1, day=1), 366),
    }
    for pattern, (start, days) in relative.items():
        if re.search(pattern, low):
            return _span(start, days)
    ago = re.search(r"\b(\d+|a|an|one|two|three|four|five|six)\s+(day|week|month|year)s?\s+ago\b", low)
    if ago:
        n = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}.get(
            ago.group(1)) or int(ago.group(1))
        days = _UNITS[ago.group(2)]
        return _span(today - timedelta(days=n * days), days)
    iso = re.search(r"\b(\d{4})-(\d{2})-(\d{2})\b", low)
    if iso:
        try:
            return _span(datetime(*map(int, iso.groups()), tzinfo=timezone.utc), 1)
        except ValueError:
            return None
    named = re.search(
        r"\b(?:(\d{1,2})\s+)?(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) +
        r")\.?(?:\s+(\d{1,2}))?(?:,?\s+(\d{4}))?\b", low)
    if named and (named.group(4) or named.group(1) or named.group(3) or len(named.group(2)) > 3):
        if named.group(2) == "may" and not (named.group(4) or named.group(1) or named.group(3)):
            return None  # "may" alone is a verb far more often than a month
        year = int(named.group(4)) if named.group(4) else now.year
        month_no = _MONTHS[named.group(2)]
        day_no = named.group(1) or named.group(3)
        try:
            if day_no:
                return _span(datetime(year, month_no, int(day_no), tzinfo=timezone.utc), 1)
            start = datetime(year, month_no, 1, tzinfo=timezone.utc)
        except ValueError:
            return None
        end = start.replace(year=year + 1, month=1) if month_no == 12 else start.replace(month=month_no + 1)
        return start.timestamp(), end.timestamp() - 1e-3
    year_only = re.search(r"\bin (\d{4})\b|(\d{4})年", low)
    if year_only:
        year = int(year_only.group(1) or year_only.group(2))
        return _span(datetime(year, 1, 1, tzinfo=timezone.utc), 365)
    return None


def analyse(text: str, now: datetime) -> QueryPlan:
    """Terms without stopwords (CJK as bigrams), capitalised names, and the time span."""
    terms = tuple(dict.fromkeys(w for w in words(text) if w not in STOPWORDS and len(w) > 1
                                or (w.isdigit())))
    if not terms:
        terms = tuple(dict.fromkeys(words(text)))
    entities = tuple(dict.fromkeys(m.group(1) for m in _ENTITY.finditer(text)))
    return QueryPlan(text=text, terms=terms, entities=entities, span=time_span(text, now))
