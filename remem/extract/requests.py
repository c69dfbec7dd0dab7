"""Forget requests in a turn, with the sentence they point back to.

A request often names its topic in one sentence and asks in the next ("about my personal
email from the other day. please forget it"). The intent head finds the asking sentence;
when that sentence says nothing of its own beyond the wording all forget requests share,
the sentence before it in the same turn is its topic and belongs to the request. Neither
is a memory: the memory agent acts on the request.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..text import clauses, content_words
from .heads import Reader, Reading
from .statements import Unit, units

#: pronouns and demonstratives, a closed class of the grammar: "it", "them", "那个"...
_POINTER = re.compile(r"\b(?:it|them|those|these)\b|[那这][个些件条句事]|它", re.IGNORECASE)
#: "that" / "this", which may also open a clause ("forget that I use vim")
_THAT = re.compile(r"\b(?:that|this)\b", re.IGNORECASE)
_THAT_ALONE = re.compile(r"\b(?:that|this)\b(?=\s*(?:[,.;:!?，。；！？]|$))", re.IGNORECASE)

#: a person other than the speaker or the listener, as the doer of what follows: a name,
#: a third-person pronoun ("tell Sam to", "Ravi should", "让他把"), or whoever a causative
#: verb names ("让小王别记", not "叫我别记")
_OTHER = re.compile(r"(?:\b(?:he|she|they|him|her|them)\b|\b(?!(?:I|You|We)\b)[A-Z][a-z][\w'-]*)"
                    r"(?:\s+(?:to|should|must|needs?|has|have|can|could|will|would|ought|better)\b)+\s+$"
                    r"|[他她]们?[都也就]?(?:把|得|要|该|应该|需要)\S{0,12}$"
                    r"|(?:让|叫|告诉)(?![你您我])\S{1,6}$")

__all__ = ["ForgetRequest", "asked_of_another", "asks_to_forget", "forget_requests", "points_back",
           "requests_in", "topic_words"]


@dataclass(frozen=True)
class ForgetRequest:
    """A request to forget something: its words, and which units of the turn it spans."""

    text: str
    spans: tuple[int, ...]
    #: what the user said right after it, asking to keep the rest ("the stack is fine to
    #: keep", "技术栈没关系"): only then is part of a memory kept when part of it goes
    keeps: tuple[str, ...] = ()


def topic_words(text: str, forget_words: frozenset[str]) -> set[str]:
    """What a request is about: its words less function words and the request wording."""
    return content_words(text) - forget_words


def points_back(text: str, forget_words: frozenset[str]) -> bool:
    """A request that names its topic only by a pronoun ("forget it", "scrap that from
    memory", "那个删了吧"); "that" opening a clause with a topic of its own does not
    ("forget that I use vim")."""
    topic = len(topic_words(text, forget_words))
    if _POINTER.search(text) or _THAT_ALONE.search(text):
        return topic <= 3
    return bool(_THAT.search(text)) and topic <= 1


def asks_to_forget(reading: Reading, *, likely: float = 0.5, sure: float = 0.8) -> bool:
    """Whether the heads read a statement as a forget request: the intent head says so
    (and the tuned reader too, when it gave a second opinion) with ``sure`` probability,
    or with ``likely`` probability when the kind head is not sure there is anything in it
    to remember (what says something of its own, "thinking
    about maybe moving off Heroku, nothing decided", is not a request unless plainly one)."""
    if reading.intent != "forget" or reading.second_intent not in (None, "forget"):
        return False
    return reading.intent_p >= sure or (reading.intent_p >= likely and reading.kind_p < likely) \
        or (reading.intent_p >= likely and not reading.worth)


def asked_of_another(text: str, forget_words: frozenset[str]) -> bool:
    """Whether the one who is to forget is somebody else ("tell Sam to forget the v2
    endpoints", "Ravi should drop that script", "让他把旧接口忘了"): a name or a
    third-person pronoun is the doer of the sentence's first forget word."""
    low = text.lower()
    found = [low.find(w) for w in forget_words if w.isascii() and re.search(rf"\b{w}\b", low)]
    found += [low.find(w) for w in forget_words if not w.isascii() and w in low]
    found = [i for i in found if i > 0]
    return bool(found) and bool(_OTHER.search(text[:min(found)]))


def forget_requests(reader: Reader, text: str, *, role: str = "user") -> list[ForgetRequest]:
    """The forget requests in one turn (none for an agent or a tool, which cannot ask)."""
    if role != "user":
        return []
    pieces = units(text)
    readings = reader.read([u.text for u in pieces], [role] * len(pieces)) if pieces else []
    found = requests_in(pieces, readings, reader.heads.forget_words)
    taken = {j for r in found for j in r.spans}
    found += [r for i, (u, reading) in enumerate(zip(pieces, readings, strict=True))
              if i not in taken and (r := _in_a_clause(reader, u, reading, i)) is not None]
    return sorted((r if r.keeps else replace(r, keeps=_keeps(reader, pieces, r)) for r in found),
                  key=lambda r: r.spans)


def _in_a_clause(reader: Reader, unit: Unit, reading: Reading, at: int) -> ForgetRequest | None:
    """A request said in one clause of a sentence that reads otherwise as a whole ("keep
    the editor part, but drop the other personal thing I mentioned"): the clauses the
    heads read as a request are the request, those read as keeping are what is kept."""
    parts = clauses(unit.text)
    forget_words = reader.heads.forget_words
    if "forget" not in (reading.intent, reading.second_intent) or len(parts) < 2 \
            or asked_of_another(unit.text, forget_words):
        return None
    readings = reader.read(parts, ["user"] * len(parts))
    asks = [i for i, (c, r) in enumerate(zip(parts, readings, strict=True))
            if asks_to_forget(r) and not asked_of_another(c, forget_words)]
    if not asks:
        return None
    keeps = tuple(c for i, (c, r) in enumerate(zip(parts, readings, strict=True))
                  if i not in asks and _keeps_it(r))
    # "写个正则……算了，不用了，忘了这事吧": what "这事" points back to is what the sentence
    # just said, set aside, not anything remembered
    if asks[0] > 0 and points_back(parts[asks[0]], forget_words):
        return None
    return ForgetRequest(" ".join(parts[i] for i in asks), (at,), keeps)


def _keeps(reader: Reader, pieces: Sequence[Unit], request: ForgetRequest) -> tuple[str, ...]:
    """The clauses after a request's last forget clause, in its sentence and the next one,
    that read as keeping something: what the user keeps."""
    last = request.spans[-1]
    own = clauses(pieces[last].text)
    after = [*own, *(clauses(pieces[last + 1].text) if last + 1 < len(pieces) else [])]
    readings = reader.read(after, ["user"] * len(after)) if after else []
    asks = [i for i, r in enumerate(readings[:len(own)]) if r.intent == "forget"]
    start = asks[-1] + 1 if asks else len(own)
    return tuple(c for c, r in zip(after[start:], readings[start:], strict=True) if _keeps_it(r))


def _keeps_it(reading: Reading) -> bool:
    """One reader reads a clause as keeping something, and the other not as forgetting
    ("别留着", don't keep it, is no keep)."""
    intents = (reading.intent, reading.second_intent)
    return "keep" in intents and "forget" not in intents


def requests_in(pieces: Sequence[Unit], readings: Sequence[Reading],
                forget_words: frozenset[str]) -> list[ForgetRequest]:
    """The forget requests among a turn's units, given the heads' reading of each."""
    asked = [asks_to_forget(r) and not asked_of_another(u.text, forget_words)
             for u, r in zip(pieces, readings, strict=True)]
    # a sentence read as forgetting, next to a request, belongs to it ("about my email from
    # the other day. please forget it"), unless the tuned reader reads it otherwise ("and
    # keep reminding me about rebasing")
    def part(i: int) -> bool:
        return asked[i] or (readings[i].intent == "forget"
                            and readings[i].second_intent in (None, "forget")
                            and any(asked[j] for j in (i - 1, i + 1) if 0 <= j < len(asked)))

    out: list[ForgetRequest] = []
    for i in range(len(readings)):
        if not part(i):
            continue
        if out and out[-1].spans[-1] == i - 1:  # one request said in two sentences
            last = out.pop()
            out.append(ForgetRequest(f"{last.text} {pieces[i].text}", (*last.spans, i)))
            continue
        spans = (i,)
        if i > 0 and points_back(pieces[i].text, forget_words):
            spans = (i - 1, i)  # "please forget it": the sentence before says what "it" is
        out.append(ForgetRequest(" ".join(pieces[j].text for j in spans), spans))
    return out
