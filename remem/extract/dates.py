"""Relative and absolute dates in a turn, resolved against the turn's own time.

``find_date("I went there yesterday", turn_time)`` gives the day before the turn, whatever
day the extraction runs on. English and Chinese; the first date phrase in the text wins.

    >>> from datetime import datetime, timezone
    >>> ref = datetime(2024, 5, 8, 14, 0, tzinfo=timezone.utc)
    >>> d = find_date("I ran a race last Saturday", ref)
    >>> d.start.date().isoformat(), d.grain
    ('2024-05-04', 'day')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

__all__ = ["DateRef", "find_date"]

Grain = Literal["day", "week", "weekend", "month", "year", "about"]

_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december"]
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_ZH_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
              "九": 9, "十": 10, "几": 3}
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_EN_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
               "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a few": 3,
               "a couple of": 2, "several": 4}


@dataclass(frozen=True)
class DateRef:
    """A date phrase found in a text: where it is and the span of time it means.

    ``start`` is midnight of the first day in the turn's time zone, ``end`` is exclusive;
    ``grain`` says how precise it is (``about`` for "two weeks ago").
    """

    phrase: str
    begin: int
    finish: int
    start: datetime
    end: datetime
    grain: Grain

    def render(self, lang: str) -> str:
        """The resolved date as words to put in place of the phrase (``lang`` en or zh)."""
        d = self.start
        if lang == "zh":
            day = f"{d.year}年{d.month}月{d.day}日"
            return {"day": day, "week": f"{day}那周", "weekend": f"{day}那个周末",
                    "month": f"{d.year}年{d.month}月", "year": f"{d.year}年",
                    "about": f"{day}前后"}[self.grain]
        day = f"{d.day} {_MONTHS[d.month - 1].title()} {d.year}"
        return {"day": f"on {day}", "week": f"in the week of {day}",
                "weekend": f"on the weekend of {day}",
                "month": f"in {_MONTHS[d.month - 1].title()} {d.year}", "year": f"in {d.year}",
                "about": f"around {day}"}[self.grain]


def _midnight(ref: datetime) -> datetime:
    return ref.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(day: datetime, shift: int) -> datetime:
    index = day.year * 12 + day.month - 1 + shift
    return day.replace(year=index // 12, month=index % 12 + 1, day=1)


def _span(start: datetime, grain: Grain) -> tuple[datetime, datetime, Grain]:
    if grain in ("day", "about"):
        return start, start + timedelta(days=1), grain
    if grain == "weekend":
        return start, start + timedelta(days=2), grain
    if grain == "week":
        return start, start + timedelta(days=7), grain
    if grain == "month":
        return start, _month_start(start, 1), grain
    return start, start.replace(year=start.year + 1), grain


def _number(token: str) -> int:
    if token.isdigit():
        return int(token)
    if token in _EN_NUMBERS:
        return _EN_NUMBERS[token]
    if len(token) == 2 and token[0] == "十":  # 十二
        return 10 + _ZH_DIGITS.get(token[1], 0)
    if len(token) >= 2 and token[-1] == "十":  # 二十
        return _ZH_DIGITS.get(token[0], 1) * 10
    return _ZH_DIGITS.get(token, 1)


def _back(today: datetime, unit: str, n: int) -> tuple[datetime, datetime, Grain]:
    if unit in ("day", "天"):
        return _span(today - timedelta(days=n), "day" if n < 3 else "about")
    if unit in ("week", "周", "个星期", "星期", "个礼拜", "礼拜"):
        return _span(today - timedelta(weeks=n), "about")
    if unit in ("month", "个月", "月"):
        return _span(_month_start(today, -n), "month")
    return _span(today.replace(year=today.year - n, month=1, day=1), "year")


def _named(key: str, today: datetime) -> tuple[datetime, datetime, Grain]:
    week = today - timedelta(days=today.weekday())
    saturday = week + timedelta(days=5)
    table: dict[str, tuple[datetime, Grain]] = {
        "today": (today, "day"), "yesterday": (today - timedelta(days=1), "day"),
        "before_yesterday": (today - timedelta(days=2), "day"),
        "tomorrow": (today + timedelta(days=1), "day"),
        "after_tomorrow": (today + timedelta(days=2), "day"),
        "three_days_on": (today + timedelta(days=3), "day"),
        "last_week": (week - timedelta(days=7), "week"), "this_week": (week, "week"),
        "next_week": (week + timedelta(days=7), "week"),
        "last_weekend": (saturday - timedelta(days=7) if today < saturday else saturday,
                         "weekend"),
        "this_weekend": (saturday, "weekend"),
        "last_month": (_month_start(today, -1), "month"), "this_month": (_month_start(today, 0),
                                                                          "month"),
        "next_month": (_month_start(today, 1), "month"),
        "last_year": (today.replace(year=today.year - 1, month=1, day=1), "year"),
        "this_year": (today.replace(month=1, day=1), "year"),
        "year_before": (today.replace(year=today.year - 2, month=1, day=1), "year"),
        "next_year": (today.replace(year=today.year + 1, month=1, day=1), "year"),
    }
    start, grain = table[key]
    return _span(start, grain)


# phrase pattern -> named span; the first phrase in the text wins, longer ones listed first
_NAMED = [
    (r"\bthe day before yesterday\b|前天", "before_yesterday"),
    (r"\byesterday\b|\blast night\b|昨天|昨晚|昨日", "yesterday"),
    (r"\btoday\b|\bthis (?:morning|afternoon|evening)\b|\btonight\b|今天|今早|今晚|今日",
     "today"),
    (r"大后天", "three_days_on"),
    (r"\b(?:the\s+)?day after tomorrow\b|后天", "after_tomorrow"),
    (r"\btomorrow\b|明天|明早|明晚", "tomorrow"),
    (r"\blast weekend\b|上周末|上个周末", "last_weekend"),
    (r"\bthis weekend\b|这周末|这个周末|本周末", "this_weekend"),
    (r"\blast week\b|上周|上个星期|上星期|上个礼拜|上礼拜", "last_week"),
    (r"\bthis week\b|这周|本周|这个星期|这星期", "this_week"),
    (r"\bnext week\b|下周|下个星期|下星期", "next_week"),
    (r"\blast month\b|上个月|上月", "last_month"),
    (r"\bthis month\b|这个月|本月", "this_month"),
    (r"\bnext month\b|下个月|下月", "next_month"),
    (r"\blast year\b|去年", "last_year"),
    (r"\bthis year\b|今年", "this_year"),
    (r"前年", "year_before"),
    (r"\bnext year\b|明年", "next_year"),
]

_AGO = re.compile(
    r"\b(\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of|several)"
    r"\s+(day|week|month|year)s?\s+ago\b"
    r"|(\d+|[一二两三四五六七八九十几]+)\s*(天|周|个星期|星期|个礼拜|礼拜|个月|年)(?:以?前)",
    re.IGNORECASE)
_AHEAD = re.compile(
    r"\bin\s+(\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of)"
    r"\s+(day|week|month)s?\b"
    r"|(\d+|[一二两三四五六七八九十几]+)\s*(天|周|个星期|星期|个礼拜|礼拜|个月)(?:以?后|之后)",
    re.IGNORECASE)
_NEXT_WEEKDAY = re.compile(r"\bnext\s+(" + "|".join(_WEEKDAYS) + r")\b"
                           r"|下(?:周|个?星期|个?礼拜)([一二三四五六日天])", re.IGNORECASE)
_BARE_WEEKDAY = re.compile(r"\b(?:on\s+|this\s+)?(" + "|".join(_WEEKDAYS) + r")\b"
                           r"|(?:这|本)?(?:周|星期|礼拜)([一二三四五六日天])", re.IGNORECASE)
_WEEKDAY = re.compile(r"\b(last|on|this past)\s+(" + "|".join(_WEEKDAYS) + r")\b|上周([一二三四五六日天])",
                      re.IGNORECASE)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_ZH_DATE = re.compile(r"(?:(\d{4})年)?(\d{1,2})月(\d{1,2})[日号]")
_EN_DATE = re.compile(
    r"\b(?:on\s+)?(?:(\d{1,2})(?:st|nd|rd|th)?\s+(" + "|".join(_MONTHS) + r")"
    r"|(" + "|".join(_MONTHS) + r")\s+(\d{1,2})(?:st|nd|rd|th)?)(?:,?\s+(\d{4}))?\b",
    re.IGNORECASE)


def _ahead(today: datetime, unit: str, n: int) -> tuple[datetime, datetime, Grain]:
    if unit in ("day", "天"):
        return _span(today + timedelta(days=n), "day")
    if unit in ("week", "周", "个星期", "星期", "个礼拜", "礼拜"):
        return _span(today + timedelta(weeks=n), "day")
    return _span(_month_start(today, n), "month")


def _forward(text: str, today: datetime) -> list[tuple[int, int, tuple[datetime, datetime,
                                                                        Grain]]]:
    """Phrases that point ahead: "in three days", "next Friday", "周五" (the coming one)."""
    found = []
    for m in _AHEAD.finditer(text):
        if m.group(1):
            found.append((m.start(), m.end(), _ahead(today, m.group(2).lower(),
                                                     _number(m.group(1).lower()))))
        else:
            found.append((m.start(), m.end(), _ahead(today, m.group(4), _number(m.group(3)))))
    for m in _NEXT_WEEKDAY.finditer(text):
        week = today - timedelta(days=today.weekday()) + timedelta(days=7)
        index = _WEEKDAYS.index(m.group(1).lower()) if m.group(1) else _ZH_WEEKDAYS[m.group(2)]
        found.append((m.start(), m.end(), _span(week + timedelta(days=index), "day")))
    return found


def _coming(text: str, today: datetime, *, ahead: bool
            ) -> list[tuple[int, int, tuple[datetime, datetime, Grain]]]:
    """A weekday named alone: the next such day (``ahead``) or the last (today excluded)."""
    found = []
    for m in _BARE_WEEKDAY.finditer(text):
        index = _WEEKDAYS.index(m.group(1).lower()) if m.group(1) else _ZH_WEEKDAYS[m.group(2)]
        shift = (index - today.weekday()) % 7 or 7 if ahead else \
            -((today.weekday() - index) % 7 or 7)
        found.append((m.start(), m.end(), _span(today + timedelta(days=shift), "day")))
    return found


def _candidates(text: str, today: datetime, *, forward: bool = False, weekdays: bool = False
                ) -> list[tuple[int, int, tuple[datetime, datetime, Grain]]]:
    found = _forward(text, today)
    if weekdays:
        taken = [(b, e) for b, e, _ in found]
        found += [c for c in _coming(text, today, ahead=forward)
                  if not any(b <= c[0] < e or c[0] <= b < c[1] for b, e in taken)]
    for pattern, key in _NAMED:
        for m in re.finditer(pattern, text, re.IGNORECASE):
            found.append((m.start(), m.end(), _named(key, today)))
    for m in _AGO.finditer(text):
        if m.group(1):
            found.append((m.start(), m.end(), _back(today, m.group(2).lower(),
                                                    _number(m.group(1).lower()))))
        else:
            found.append((m.start(), m.end(), _back(today, m.group(4), _number(m.group(3)))))
    for m in _WEEKDAY.finditer(text):
        if m.group(3):  # 上周三: that day of last week
            week = today - timedelta(days=today.weekday() + 7)
            day = week + timedelta(days=_ZH_WEEKDAYS[m.group(3)])
        else:  # the most recent such day before the turn
            back = (today.weekday() - _WEEKDAYS.index(m.group(2).lower())) % 7 or 7
            day = today - timedelta(days=back)
        found.append((m.start(), m.end(), _span(day, "day")))
    for m in _ISO.finditer(text):
        found.append((m.start(), m.end(), _date(today, m.group(1), m.group(2), m.group(3))))
    for m in _ZH_DATE.finditer(text):
        found.append((m.start(), m.end(), _date(today, m.group(1), m.group(2), m.group(3))))
    for m in _EN_DATE.finditer(text):
        month = (m.group(2) or m.group(3)).lower()
        day_of = m.group(1) or m.group(4)
        found.append((m.start(), m.end(), _date(today, m.group(5),
                                                str(_MONTHS.index(month) + 1), day_of)))
    return [f for f in found if f[2][0].year > 1]


def _date(today: datetime, year: str | None, month: str, day: str) -> tuple[datetime, datetime,
                                                                           Grain]:
    try:
        start = today.replace(year=int(year) if year else today.year, month=int(month),
                              day=int(day))
    except ValueError:
        start = today.replace(year=1)  # not a real date: dropped by the caller
    return _span(start, "day")


def find_date(text: str, ref: datetime | None, *, forward: bool = False,
              weekdays: bool = False) -> DateRef | None:
    """The first date phrase in ``text`` resolved against ``ref`` (the turn's time), or None.

    ``weekdays`` also reads a weekday named alone ("on Friday", "周五"): the last one
    before ``ref``, or with ``forward`` the coming one, as a request for something still
    to do means.

    ``ref`` keeps its time zone, so "yesterday" is the day before in the speaker's zone
    when the turn carries one. Without ``ref`` nothing can be resolved and None is returned.
    """
    if ref is None:
        return None
    found = _candidates(text, _midnight(ref), forward=forward, weekdays=weekdays)
    if not found:
        return None
    begin, finish, (start, end, grain) = min(found, key=lambda f: (f[0], -f[1]))
    return DateRef(text[begin:finish], begin, finish, start, end, grain)
