"""The default extractor: no LLM. Turns are read by small trained heads, events by rules.

A turn is cut into statements (:mod:`.statements`); the heads of :mod:`.heads` decide for
each whether it is worth remembering, as which kind, with which intent and at which level
(the user everywhere, or this project). What is kept is worded as a self-contained
statement in the language it was said in: the speaker named instead of "I" / "我", a
relative date replaced by the date it meant. Forget requests are not memories: the memory
agent acts on them. Agent events (a failure and its fix, a task and its files) go to the
rules of :mod:`.events`.

    >>> from remem.extract import EpisodeIn, RulesExtractor
    >>> [c.text for c in RulesExtractor().extract([EpisodeIn("e1", "I prefer pnpm over npm.")])]
    ['User prefers pnpm over npm']
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..text import content_words, has_cjk
from .base import Candidate, EpisodeIn, as_utc
from .events import event_candidates
from .heads import INTENTS, Reader, Reading
from .requests import requests_in
from .stack import STACK
from .statements import Unit, is_fragment, render, units

__all__ = ["RulesExtractor"]

_ENTITY = re.compile(r"`([^`]+)`|([\w.+#-]*[./_][\w./+#-]*\w)|(?<=[\s(])([A-Z][\w.+#-]*)")
_NOT_ENTITY = frozenset("I User January February March April May June July August September "
                        "October November December".split())
_QUESTION = re.compile(r"[?？]\s*$")
_ADDRESSED = re.compile(r"\b(?:you|your|yours|yourself|you're|you've|you'll|ya)\b|你|您", re.IGNORECASE)
_CLAUSE = re.compile(r"\s*[,;，；:：]\s*|\s+(?:but|and then|so)\s+")
_CHANGES = frozenset({"update", "instruction"})
#: Kinds about the person: an agent's turn cannot state them for the user.
_PERSONAL = frozenset({"preference", "persona", "profile"})


def _entities(text: str, subject: str) -> list[str]:
    """Code spans, paths and dotted names, capitalised names past the first word, tools."""
    found: list[str] = []
    for m in _ENTITY.finditer(text):
        value = next(g for g in m.groups() if g)
        if value not in found and value not in _NOT_ENTITY and value != subject:
            found.append(value)
    for word in re.findall(r"[\w.#+-]+", text):
        if word.lower() in STACK and word.lower() not in (f.lower() for f in found):
            found.append(word)
    return found[:8]


def _content(text: str) -> set[str]:
    """The content words, less short English ones ("ok", "it")."""
    return {w for w in content_words(text) if len(w) >= 3 or not w.isascii()}


def _without_echoes(cands: list[Candidate], episodes: Sequence[EpisodeIn]) -> list[Candidate]:
    """Without what the agent says back of the user's turn just before ("Got it, Jenkins
    pipeline from the root Jenkinsfile"): it tells nothing new, and a copy in other
    words would outlive the user's statement when that one is later replaced."""
    before: dict[str, set[str]] = {}
    for prev, ep in zip(episodes, episodes[1:], strict=False):
        if ep.is_agent and not prev.is_agent and prev.session_id == ep.session_id:
            before[ep.id] = _content(prev.text)
    out = []
    for cand in cands:
        said = before.get(cand.source_ids[0]) if len(cand.source_ids) == 1 else None
        mine = _content(cand.said or cand.text)
        if said is not None and len(mine & said) >= 2 and len(mine & said) >= 0.5 * len(mine):
            continue
        out.append(cand)
    return out


def _names(cand: Candidate) -> set[str]:
    """The named things of a project a statement speaks of: its entities, and in Chinese
    text the Latin-script words (``salary`` in "千万别在日志里打印 salary"); not the tools
    of :data:`STACK`, which a person may prefer everywhere."""
    found = {e.lower() for e in cand.entities}
    if has_cjk(cand.text):
        found |= {w.lower() for w in re.findall(r"[A-Za-z][\w.-]{2,}", cand.text)}
    return found - STACK


def _scoped_by_reference(cands: list[Candidate]) -> list[Candidate]:
    """A rule read as the user's everywhere that names what a project statement of the
    same turn names ("this system stores salary encrypted. never log salary") is about
    that project: it stays there."""
    out = []
    for cand in cands:
        if cand.level == "user" and cand.kind not in ("persona", "profile"):
            mine = _names(cand)
            if any(mine & _names(other) for other in cands if other.level == "project"
                   and other.source_ids == cand.source_ids and other is not cand):
                project = next(o.subject for o in cands if o.level == "project"
                               and o.source_ids == cand.source_ids)
                cand = cand.model_copy(update={"level": "project", "subject": project})
        out.append(cand)
    return out


def role_of(ep: EpisodeIn) -> str:
    """The speaker as the heads were trained to see it: user, assistant or tool."""
    role = (ep.role or "user").lower()
    return "tool" if role == "tool" else "assistant" if ep.is_agent else "user"


class RulesExtractor:
    """Trained heads for turns (English and Chinese), rules for coding-agent events.

    Parameters:
        window: how many later events of the same session may hold the fix of a failure.
        reader: the heads and their encoder (one is loaded when not given).
        min_confidence: how sure the kind head must be for a person's statement; an
            agent's statement needs the higher of this and 0.7.
        chat_none_above: a named speaker's statement (a chat between people) is dropped
            when the kind head gives "none" this probability or more.
        change_p: how sure the intent head must be that a user's statement the kind head
            finds not worth keeping is an update or a correction, for it to be proposed
            as the change of what it replaces.
        worth_none_below: a statement the kind head is unsure of the kind of (below
            ``min_confidence``) is kept all the same when "none" gets less than this: the
            head spreads it over several kinds, yet is sure it is worth keeping.

    Example::

        extractor = RulesExtractor()
        for cand in extractor.extract([EpisodeIn("e1", "以后都用 pnpm", role="user")]):
            print(cand.kind, cand.subject, cand.text)   # preference user 以后都用 pnpm
    """

    def __init__(self, *, window: int = 4, reader: Reader | None = None,
                 min_confidence: float = 0.25, chat_none_above: float = 0.55,
                 change_p: float = 0.5, worth_none_below: float = 0.1) -> None:
        self.window = window
        self.reader = reader or Reader()
        self.min_confidence = min_confidence
        self.chat_none_above = chat_none_above
        self.change_p = change_p
        self.worth_none_below = worth_none_below

    def extract(self, episodes: Sequence[EpisodeIn]) -> list[Candidate]:
        out = self.turns([e for e in episodes if e.kind == "episode"])
        out.extend(event_candidates([e for e in episodes if e.event is not None],
                                    window=self.window))
        return out

    def turns(self, episodes: Sequence[EpisodeIn]) -> list[Candidate]:
        """The candidates in conversation turns."""
        pieces = [(ep, unit) for ep in episodes for unit in units(ep.text)]
        readings = self.reader.read([u.text for _, u in pieces], [role_of(ep) for ep, _ in pieces])
        asked = self._asked(pieces, readings)
        out = []
        for i, ((ep, unit), reading) in enumerate(zip(pieces, readings, strict=False)):
            if i in asked:
                continue
            cand = self._candidate(ep, unit, reading)
            if cand is None and not reading.worth and not unit.steps:
                found = self._clauses(ep, unit, reading)
                brief = None if found else self._candidate(ep, unit, reading, brief=True)
                out.extend(found or ([brief] if brief is not None else []))
            elif cand is not None:
                out.append(cand)
        return _scoped_by_reference(_without_echoes(out, episodes))

    def _asked(self, pieces: Sequence[tuple[EpisodeIn, Unit]],
               readings: Sequence[Reading]) -> set[int]:
        """The positions of the units that make up a user's forget request."""
        asked: set[int] = set()
        start = 0
        while start < len(pieces):
            ep = pieces[start][0]
            end = start
            while end < len(pieces) and pieces[end][0] is ep:
                end += 1
            if role_of(ep) == "user":
                found = requests_in([u for _, u in pieces[start:end]], readings[start:end],
                                    self.reader.heads.forget_words)
                # what a request points back to is not kept, unless it is a change
                asked.update(start + j for req in found for j in req.spans
                             if readings[start + j].intent not in _CHANGES)
            start = end
        return asked

    def _clauses(self, ep: EpisodeIn, unit: Unit, whole: Reading) -> list[Candidate]:
        """A sentence not worth keeping as a whole may hold a clause that is ("that's
        wrong, we use pnpm now"): each clause of three words or more is read alone, and
        keeps the sentence's intent when that was a change or a correction."""
        parts = [p.strip() for p in _CLAUSE.split(unit.text) if not is_fragment(p.strip())]
        if len(parts) < 2:
            return []
        readings = self.reader.read(parts, [role_of(ep)] * len(parts))
        found = [self._candidate(ep, Unit(p), r) for p, r in zip(parts, readings, strict=False)]
        # "that's wrong" says little alone, but enough that what follows is a change
        probs = dict(zip(INTENTS, whole.intent_probs, strict=False))
        change = ("correction" if probs["correction"] >= probs["update"] else "update") \
            if probs["update"] + probs["correction"] >= 0.15 else None
        return [c.model_copy(update={"intent": change}) if change else c
                for c in found if c is not None]

    def _candidate(self, ep: EpisodeIn, unit: Unit, r: Reading, *,
                   brief: bool = False) -> Candidate | None:
        """The candidate of one statement, or None. ``brief``: the kind head found it not
        worth keeping; a change said in few words ("switched to tabs", "现在改成 pnpm 了")
        and read as a change by either reader (:meth:`Reading.says_change`) is then proposed
        all the same, to be kept only as the change of a known memory it replaces
        (``Candidate.replaces_only``); so is a change of no clear kind."""
        change = r.says_change(self.change_p)
        brief = brief and not r.worth and change is not None and ep.speaker == "user" \
            and not ep.is_agent
        if (not r.worth and not brief) or r.intent == "forget":  # the kind head decides what is worth keeping
            return None
        kind = r.runner_up(besides=())[0] if brief else r.kind
        kind = "procedure" if unit.steps and kind in ("procedure", "convention", "project",
                                                      "preference") else kind
        if kind == "event" and ep.speaker == "user" and (change or r.intent == "instruction"):
            kind = r.runner_up(besides=("event",))[0]  # "we moved to pnpm last week": a change
        if ep.is_agent and (kind in _PERSONAL or r.kind_p < max(0.7, self.min_confidence)):
            return None
        if ep.speaker != "user" and (kind == "persona" or r.none_p >= self.chat_none_above
                                     or _ADDRESSED.search(unit.text)):
            # between people: how to talk is not a rule for an agent, small talk abounds,
            # and what is said to "you" is about the listener, not the speaker
            return None
        if r.kind_p < self.min_confidence and change and ep.speaker == "user" and not ep.is_agent:
            brief = True  # a change of no clear kind is kept only as the change of what it replaces
        unsure_kind = r.kind_p < self.min_confidence and r.none_p >= self.worth_none_below
        if (unsure_kind and not brief) or (
                _QUESTION.search(unit.text) and r.intent != "instruction"):
            return None
        when = as_utc(ep.event_time)
        if kind != "procedure" and unit.steps:
            unit = Unit(unit.text)  # "the pipeline is Filebeat -> Kafka -> Flink": no steps to do
        text, event_time = render(unit, ep.speaker, when)
        if is_fragment(text):
            return None
        if kind == "event" and event_time is None:
            event_time = when
        # what is about the person holds everywhere when the head reads it so at all; a rule
        # about the work holds for the user everywhere only when said so plainly
        sure = 0.0 if kind in _PERSONAL else 0.8
        level = "user" if r.level == "user" and r.level_p >= sure and not ep.is_agent else "project"
        if level == "user" or kind in _PERSONAL:
            subject = ep.speaker
        elif ep.project is None and ep.speaker != "user" and not ep.is_agent:
            subject = ep.speaker  # "we decided ..." in a chat between people, not about a project
        else:
            subject = ep.project or "project"
        lang = "zh" if has_cjk(text) else "en"
        return Candidate(kind=kind, text=text, subject=subject,  # type: ignore[arg-type]
                         entities=_entities(text, subject), tags=[lang], event_time=event_time,
                         observed_at=when, confidence=round(r.kind_p, 3), source_ids=[ep.id],
                         rule=f"heads.{kind}", level=level, replaces_only=brief,
                         said=unit.text if unit.text != text else None,
                         intent=change if brief else "statement" if r.intent in ("chitchat", "keep")
                         else r.intent)  # type: ignore[arg-type]
