"""A request in plain language as a typed plan of memory operators.

"Record yesterday's meeting with Li Lei and remind me the day after tomorrow to write the
technical report" holds three operations: an event memory with its date resolved, a link
to the person it names, and a reminder. :class:`RulesPlanner` finds them with no model
call: the request is cut into clauses (:func:`remem.text.clauses`, and before a
conjunction that opens a new command); each clause is read by the memory agent's heads
(its intent: a statement, an update or correction, a forget request; and the kind of
memory it would be) and by the verbs that name the operators of the memory language
(remember, remind, summarise, search, link, pin, share); dates are resolved against the
request's own time (:mod:`.dates`), ahead of it for what is still to do.

A :class:`Plan` is data: it can be shown (``dry_run``) before it is run, and an LLM
planner (:mod:`.plan_llm`) must produce the same schema.

    >>> from datetime import datetime, timezone
    >>> planner = RulesPlanner()                           # doctest: +SKIP
    >>> plan = planner.plan("remind me tomorrow to call the bank",
    ...                     datetime(2024, 5, 8, tzinfo=timezone.utc))   # doctest: +SKIP
    >>> plan.steps[0].operator, plan.steps[0].date          # doctest: +SKIP
    ('remind', '2024-05-09')
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..model import KINDS
from ..text import clauses, content_words, has_cjk
from .dates import DateRef, find_date
from .heads import Reader, Reading
from .requests import asks_to_forget
from .statements import Unit, render

__all__ = ["OPERATORS", "Operator", "Plan", "RulesPlanner", "Step"]

OPERATORS = ("remember", "update", "forget", "search", "summarise", "link", "remind", "pin",
             "share")
Operator = Literal["remember", "update", "forget", "search", "summarise", "link", "remind", "pin",
                   "share"]


class Step(BaseModel):
    """One memory operation of a plan.

    ``text`` is what to remember (remember, update), what to be reminded of (remind), what
    to look for (search, summarise, and the memory a forget, pin, share or link names);
    ``date`` an ISO date: when an event happened (remember), when a reminder is due
    (remind), the first day looked at (search, summarise; ``until`` the day after the
    last). ``ref`` points at an earlier step of the same plan whose memory this one acts
    on ("... and pin it"); ``entity`` is the person or thing a link names; ``audience``
    whom a share is for (``team``, or a user id).
    """

    model_config = ConfigDict(extra="forbid")

    operator: Operator
    text: str | None = Field(None, max_length=4000)
    kind: str | None = Field(None, description="the kind of memory a remember or update writes")
    date: str | None = Field(None, pattern=r"^\d{4}-\d{2}-\d{2}$")
    until: str | None = Field(None, pattern=r"^\d{4}-\d{2}-\d{2}$")
    entity: str | None = Field(None, max_length=200)
    ref: int | None = Field(None, ge=0)
    audience: str | None = Field(None, max_length=200)

    @model_validator(mode="after")
    def _complete(self) -> Step:
        if self.kind is not None and self.kind not in KINDS:
            raise ValueError(f"kind {self.kind!r} is not a kind of memory; use one of "
                             f"{', '.join(KINDS)}")
        if self.operator in ("remember", "update", "remind", "search", "summarise") and not (
                self.text and self.text.strip()):
            raise ValueError(f"a {self.operator} step needs its text")
        if self.operator in ("forget", "pin", "share") and self.ref is None and not (
                self.text and self.text.strip()):
            raise ValueError(f"a {self.operator} step needs the text of its memory or a ref")
        if self.operator == "link" and not self.entity:
            raise ValueError("a link step needs the entity it links to")
        return self


class Plan(BaseModel):
    """The steps a request asks for, in order; ``planner`` says who made them."""

    model_config = ConfigDict(extra="forbid")

    request: str
    steps: list[Step]
    lang: Literal["en", "zh"] = "en"
    planner: str = "rules"

    @model_validator(mode="after")
    def _refs(self) -> Plan:
        for n, step in enumerate(self.steps):
            if step.ref is not None and step.ref >= n:
                raise ValueError(f"step {n} refers to step {step.ref}, which is not before it")
        return self


# The verbs of the memory language, English and Chinese: a closed class, like the
# pronouns of requests.py. The heads read what the content of a clause is.
_CUES: dict[str, re.Pattern[str]] = {
    "remind": re.compile(r"\bremind(?:er)?s?\b|\bnudge me\b|\bping me\b|\balert me\b|"
                         r"\bdon'?t let me forget\b|提醒|通知我|别让我忘", re.I),
    "summarise": re.compile(r"\bsumm?ar(?:is|iz|y)\w*|\bsum up\b|\brecap\b|\boverview\b|"
                            r"\bdigest of\b|\broundup\b|总结|概括|汇总|归纳|梳理|回顾一下|小结", re.I),
    "share": re.compile(r"\bshare\b|\bsharing\b|\bpass (?:it|this|that) on\b|分享|共享|同步给|"
                        r"转给|发给团队|告诉团队|让团队", re.I),
    "pin": re.compile(r"\bpin\b|\bpinned\b|\bstick (?:it|this|that) to\b|\bkeep (?:it|this|that) "
                      r"(?:on top|at the top|always)|\bnever let (?:it|this|that) (?:fade|decay)|"
                      r"置顶|钉住|钉在|固定(?:住|下来|在)", re.I),
    "link": re.compile(r"\blink\b|\blinked\b|\bconnect\b|\brelate\b|\bassociate\b|\btie\b|"
                       r"关联|联系起来|挂到|挂在|归到|链接到", re.I),
    "forget": re.compile(r"\bforget\b|\bdelete\b|\berase\b|\bremove\b|\bdrop\b|\bscrap\b|"
                         r"忘掉|忘了|忘记|删掉|删除|删了|去掉|清除|抹掉", re.I),
    "search": re.compile(r"^(?:what|when|where|who|whom|which|how|did|do|does|is|are|was|were|"
                         r"have|has|can)\b|\b(?:find|look up|look for|search|check what|tell me|"
                         r"show me|list)\b|[?？]|什么|哪|谁|几时|多少|吗|查一下|查查|查找|找一下|"
                         r"找找|搜|是不是|有没有", re.I),
    "update": re.compile(r"\bupdate\b|\bchange\b|\bchanged\b|\bno longer\b|\bnot any ?more\b|"
                         r"\binstead of\b|\bcorrection\b|\bactually\b|改成|改为|改到|更新|换成|"
                         r"不再|其实是|纠正", re.I),
    "remember": re.compile(r"\bremember\b|\brecord\b|\bnote (?:down|that)?|\bjot\b|\blog\b|"
                           r"\bsave\b|\bkeep in mind\b|\bwrite down\b|\bmake a note\b|记下|记住|"
                           r"记录|记一下|记着|记个|备忘|存一下", re.I),
}
#: the order cues are tried in: the more specific verbs first ("remind me what ..." is a
#: reminder; "remember that the standup moved" is kept as said, the agent judges the change)
_ORDER = ("remind", "summarise", "share", "pin", "link", "forget", "search", "remember",
          "update")
#: Where one request holds two commands: "and", "then", "also" before a clause of its own,
#: and their Chinese counterparts.
_JOIN = re.compile(r"\s*(?:,\s*)?\b(?:and then|and also|and|then|also|plus)\s+(?=\S)|"
                   r"(?:然后|并且|并|而且|再|还要|还有|顺便|同时|以及|另外)(?=\S)", re.I)
_LEADING_JOIN = re.compile(r"^(?:and then|and also|and|then|also|plus)\b\s*|"
                           r"^(?:然后|并且|并|而且|再|还要|还有|顺便|同时|以及|另外)", re.I)
_POINTER = re.compile(r"\b(?:it|this|that|them|these|those)\b|这条|这个|那条|那个|它|这些|那些",
                      re.I)
#: a person a clause names: "with Li Lei", "和李雷"
_EN_PERSON = re.compile(r"\b(?:with|met|meet|meeting|call(?:ed)?|visit(?:ed)?|told|asked)\s+"
                        r"((?:[A-Z][a-z]+)(?:\s+[A-Z][a-z]+){0,2})\b")
_ZH_PERSON = re.compile(r"(?:和|跟|与|同|给)([\u4e00-\u9fff]{2,3}?)(?=的|开|一起|聊|见|吃|讨论|谈|"
                        r"打|通|约|对|碰|沟通|交流|说|面)")
_NOT_NAME = frozenset("I Monday Tuesday Wednesday Thursday Friday Saturday Sunday January "
                      "February March April May June July August September October November "
                      "December The This That It Me".split())
_AUDIENCE = re.compile(r"\bwith (?:the |my |our )?(team|everyone|everybody|all)\b|"
                       r"\bwith ([A-Z][a-z]+)\b|(团队|大家|所有人|组里|全组)|给([\u4e00-\u9fff]{2,3})",
                       re.I)
_LINK_TO = re.compile(r"\b(?:to|with|under)\s+(?:the\s+)?(.+?)$|(?:到|和|跟|与)(.+?)(?:上|下|里)?$",
                      re.I)
_STRIP_EN = re.compile(
    r"^(?:please\s+|pls\s+|can you\s+|could you\s+|would you\s+|i want you to\s+|i'd like you to\s+)?"
    r"(?:(?:also|and|then|plus)\s+)?"
    r"(?:remind me(?:\s+(?:to|that|about|of))?|set an? reminder(?:\s+(?:to|for|that))?|"
    r"nudge me(?:\s+to)?|ping me(?:\s+to)?|alert me(?:\s+to)?|don'?t let me forget(?:\s+to)?|"
    r"remember(?:\s+that)?|record(?:\s+that)?|note(?:\s+down|\s+that)?|make a note(?:\s+that)?|"
    r"(?:jot|write) down(?:\s+that)?|log(?:\s+that)?|save|keep in mind(?:\s+that)?|"
    r"summ?ar(?:is|iz)e|sum up|give me a (?:summary|recap|overview) of|recap|"
    r"search(?:\s+for)?|look up|look for|find|tell me|show me|"
    r"forget(?:\s+about)?|delete|erase|remove|drop|scrap|"
    r"update(?:\s+that)?|change(?:\s+that)?|"
    r"pin|share|link|connect|relate|associate|tie)\b[\s:,]*", re.I)
_STRIP_ZH = re.compile(
    r"^(?:请|麻烦|帮我|帮忙|你)*(?:再|也|还要|然后|并且|顺便)?"
    r"(?:提醒(?:一下)?我?|通知我|别让我忘了?|记录一下|记录下?|记一下|记下来?|记住|记着|记个|"
    r"备忘(?:一下)?|存一下|总结(?:一下)?|概括(?:一下)?|汇总(?:一下)?|归纳(?:一下)?|梳理(?:一下)?|"
    r"回顾一下|查一下|查查|查找|找一下|找找|搜一下|搜|忘掉|忘了|忘记|删掉|删除|删了|去掉|清除|"
    r"更新(?:一下)?|置顶|钉住|分享|共享|关联)[\s:：，,]*")
_TAIL_ZH = re.compile(r"(?:吧|吗|呢|啊|哦)?[。！？?!.\s]*$")
_SPLIT_REMIND_EN = re.compile(r"\b(?:to|that|about)\b\s+", re.I)


def _iso(day: datetime) -> str:
    return day.date().isoformat()


def _clean(text: str, lang: str) -> str:
    """A clause without its command verb, politeness and end marks."""
    out = text.strip().strip(",，;；")
    if lang == "zh":
        out = _STRIP_ZH.sub("", out)
        out = _TAIL_ZH.sub("", out)
    else:
        out = _STRIP_EN.sub("", out)
        out = out.rstrip(".!?;, ")
    return " ".join(out.split())


def _without(text: str, date: DateRef | None) -> str:
    """The text with its date phrase taken out (and "'s" after it)."""
    if date is None:
        return text
    rest = text[date.finish:]
    rest = re.sub(r"^['’]s\b", "", rest)
    if date.begin == 0 or not text[:date.begin].strip() or has_cjk(text):
        rest = re.sub(r"^\s*的", "", rest)
    out = text[:date.begin] + rest
    out = re.sub(r"\b(?:on|by|at|for)\s*$", "", out.strip()).strip()
    return " ".join(re.sub(r"\s+([,.])", r"\1", out).split()).strip(" ,，")


_TAIL = re.compile(r"^(?:not|rather than|instead of|but not)\b|^(?:不是|而不是|不再是)", re.I)
_EN_TOPIC = re.compile(r"^(?:everything|anything|all|what you know|whatever you have)\s+"
                       r"(?:about|on|regarding)\s+|^(?:the\s+)?(?:memory|memories|note|notes)\s+"
                       r"(?:about|on|of)\s+", re.I)
_ZH_TOPIC = re.compile(r"^(?:关于|有关)|(?:的(?:所有|全部)?(?:内容|记录|记忆|信息|东西)|的一切)$")


def _topic(text: str, lang: str) -> str:
    """What a forget or pin is about, without "everything about" / "关于...的记录"."""
    return (_ZH_TOPIC if lang == "zh" else _EN_TOPIC).sub("", text).strip() or text


def _tail(piece: str, lang: str) -> bool:
    """A clause that only completes the one before ("not 15", "不是李强")."""
    return bool(_TAIL.search(piece.strip())) and len(content_words(piece)) <= 3


def _last_memory(before: Sequence[Step]) -> int | None:
    """The step whose memory "it" names: the last one that wrote a memory."""
    for n in range(len(before) - 1, -1, -1):
        if before[n].operator in ("remember", "update", "remind"):
            return n
    return len(before) - 1 if before else None


_PARTICLES = re.compile(r"^(?:把|将|给|对|让)|(?:一下|下来|起来|吧|了)$")


def _pointer_only(piece: str, lang: str) -> bool:
    """The clause names its object only by a pronoun ("pin it", "把这条置顶")."""
    rest = piece
    for cue in _CUES.values():
        rest = cue.sub(" ", rest)
    rest = _clean(_JOIN.sub(" ", _LEADING_JOIN.sub("", rest.strip())), lang)
    if lang == "zh":
        rest = _PARTICLES.sub("", rest.replace(" ", ""))
    else:
        rest = re.sub(r"\b(?:please|also|and|then|me|too|as well|for me|down|in memory)\b", " ",
                      rest, flags=re.I)
    rest = rest.strip(" ,，.。!！")
    return not rest or bool(_POINTER.fullmatch(rest))


def _persons(text: str) -> list[str]:
    """The people a clause names."""
    found = [m.group(1) for m in _EN_PERSON.finditer(text) if m.group(1) not in _NOT_NAME]
    found += [m.group(1) for m in _ZH_PERSON.finditer(text)]
    return list(dict.fromkeys(found))


class RulesPlanner:
    """Plans a request with the memory agent's heads, the operator verbs and the dates.

    Parameters:
        reader: the heads and their encoder (one is loaded when not given).
    """

    name = "rules"

    def __init__(self, reader: Reader | None = None) -> None:
        self.reader = reader or Reader()

    def segments(self, text: str) -> list[str]:
        """The request's clauses, each a command of its own or part of the one before."""
        out: list[str] = []
        for clause in clauses(text):
            start = 0
            for m in _JOIN.finditer(clause):
                rest = clause[m.end():]
                if m.start() > start and self._opens(rest):
                    out.append(clause[start:m.start()])
                    start = m.end()
            out.append(clause[start:])
        return [s.strip(" ,，;；") for s in out if s.strip(" ,，;；.。")]

    @staticmethod
    def _cue(text: str) -> str | None:
        for op in _ORDER:
            if _CUES[op].search(text):
                return op
        return None

    def _opens(self, rest: str) -> bool:
        """A conjunction opens a new command when what follows starts with an operator
        verb (possibly after "please", "also", a pronoun or a date)."""
        head = " ".join(rest.split()[:4]) if not has_cjk(rest) else rest[:8]
        cue = self._cue(head)
        return cue is not None and cue != "search"

    def plan(self, text: str, now: datetime) -> Plan:
        """The plan of ``text``, dates resolved against ``now``."""
        lang: Literal["en", "zh"] = "zh" if has_cjk(text) else "en"
        pieces = self.segments(text)
        readings = self.reader.read(pieces, ["user"] * len(pieces)) if pieces else []
        steps: list[Step] = []
        carried: str | None = None
        for piece, reading in zip(pieces, readings, strict=True):
            op = self._operator(piece, reading)
            if op in ("remember", "update") and _pointer_only(piece, lang):
                if steps and steps[-1].operator in ("remember", "update"):
                    # "..., remember that": the statement before is what to keep
                    steps[-1] = steps[-1].model_copy(update={"operator": op})
                else:  # "纠正一下，...": the verb says what the next clause is
                    carried = op
                continue
            if steps and self._cue(piece) is None and _tail(piece, lang):
                op = None  # "..., not Lee": the rest of the clause before
            elif carried is not None and op in ("remember", "update", None):
                op, carried = carried, None
            if op is None:
                if steps and steps[-1].operator in ("remember", "update", "remind") and \
                        steps[-1].text:
                    joiner = "，" if lang == "zh" else ", "
                    steps[-1] = steps[-1].model_copy(
                        update={"text": steps[-1].text + joiner + _clean(piece, lang)})
                continue
            steps.extend(self._steps(op, piece, reading, now, lang, steps))
        return Plan(request=text, steps=steps, lang=lang, planner=self.name)

    def _operator(self, piece: str, reading: Reading) -> str | None:
        cue = self._cue(piece)
        if cue == "forget" or (cue is None and asks_to_forget(reading)):
            return "forget"
        if cue in ("remind", "summarise", "share", "pin", "link"):
            return cue
        if cue == "search" and reading.intent != "instruction":
            return "search"
        if cue in ("update", "remember"):
            return cue
        if reading.intent in ("update", "correction") and reading.intent_p >= 0.5:
            return "update"
        if reading.worth and reading.intent not in ("chitchat",):
            return "remember"
        return None

    def _steps(self, op: str, piece: str, reading: Reading, now: datetime, lang: str,
               before: Sequence[Step]) -> list[Step]:
        here = len(before)
        forward = op == "remind"
        date = find_date(piece, now, forward=forward, weekdays=True)
        body = _clean(_without(piece, date), lang)
        last = _last_memory(before)
        ref = last if _pointer_only(piece, lang) else None
        if op == "remind":
            m = _SPLIT_REMIND_EN.search(body) if lang == "en" else None
            if m and m.start() < 12:  # "remind me on Friday to ...": what follows "to"
                body = body[m.end():]
            return [Step(operator="remind", text=body or piece,
                         date=_iso(date.start) if date else None)]
        if op in ("remember", "update"):
            kind = reading.kind if reading.worth else ("event" if date else "fact")
            if date is not None and kind in ("fact", "none", "project", "decision", "procedure"):
                kind = "event"
            shown = render(Unit(body or piece), "user", None)[0]
            if date is not None:
                shown = f"{date.render('zh')}{shown}" if lang == "zh" else \
                    f"{shown[:1].upper()}{shown[1:]} {date.render('en')}"
            out = [Step(operator=op, text=shown, kind=kind,  # type: ignore[arg-type]
                        date=_iso(date.start) if date else None)]
            out += [Step(operator="link", entity=p, ref=here) for p in _persons(piece)]
            return out
        if op in ("search", "summarise"):
            query = body or piece
            return [Step(operator=op, text=query,  # type: ignore[arg-type]
                         date=_iso(date.start) if date else None,
                         until=_iso(date.end) if date else None)]
        if op == "link":
            m = _LINK_TO.search(body)
            entity = (m.group(1) or m.group(2)).strip() if m else body
            what = body[:m.start()].strip() if m else ""
            target = last if not what or _POINTER.fullmatch(what) else None
            return [Step(operator="link", entity=entity or body, ref=target,
                         text=None if target is not None else (what or None))]
        if op == "share":
            m = _AUDIENCE.search(piece)
            audience = next((g for g in m.groups() if g), "team") if m else "team"
            audience = "team" if audience.lower() in ("team", "everyone", "everybody", "all") or \
                audience in ("团队", "大家", "所有人", "组里", "全组") else audience
            what = _AUDIENCE.sub("", body).strip(" ,，") if m else body
            if _pointer_only(what, lang) and last is not None:
                return [Step(operator="share", ref=last, audience=audience)]
            return [Step(operator="share", text=what, audience=audience)]
        # forget, pin: a memory named by its words, or the step before ("pin it")
        if ref is not None:
            return [Step(operator=op, ref=ref)]  # type: ignore[arg-type]
        return [Step(operator=op, text=_topic(body or piece, lang))]  # type: ignore[arg-type]
