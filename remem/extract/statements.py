"""Turns into statements, and statements into self-contained memory text.

:func:`units` cuts a turn into the pieces a memory can be made of: whole sentences (never
a dangling clause), with a dictated list of steps kept together with its heading.
:func:`render` words one unit as a memory: the speaker named instead of "I" / "我" (the
verb agreeing), "my" and "me" resolved, a relative date replaced by the date it meant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from ..text import has_cjk, words
from .dates import find_date

__all__ = ["Unit", "is_fragment", "render", "units"]

_ITEM = re.compile(r"^\s*(?:\d{1,2}[.)、]|[-*•·]|[（(]?\d{1,2}[)）]|第[一二三四五六七八九十\d]+步"
                   r"|step \d+\b)\s*", re.IGNORECASE)
#: "[shares a photo: ...]": a stage direction around the words, not something said
_STAGE = re.compile(r"\[[A-Za-z][^\]\[`]{8,}\]")
_ARROW = re.compile(r"\s*(?:->|→|=>|⇒)\s*")
_SPLIT_AT = set(".!?。！？；\n")
_DANGLING = frozenset("to and or but the a an of with for in on at from by my your their our is "
                      "are was were be that which who".split())
#: Prepositions, after which a final "that" / "this" is a pronoun object ("keybindings for that").
_PREPOSITION = frozenset("of with for in on at from by about like after before over under into "
                         "than without to".split())
#: Particles that end a phrase after an adverb, a pronoun or a participle ("from now on",
#: "from here on", "turn it off", "logged in").
_PARTICLE = frozenset("on in off up out".split())
_PARTICLE_AFTER = frozenset("now then later here there it them this that".split())
_ADVERB = frozenset("also always never just still usually often really only mostly sometimes "
                    "actually generally normally typically definitely absolutely strongly much "
                    "kind of totally even finally recently ever soon already".split())
#: Irregular past forms, which take no third-person "s".
_PAST = frozenset("ran went got lost won made saw grew took came left met thought said told knew "
                  "found felt kept built brought bought taught caught meant sent spent slept read "
                  "heard held sat stood understood wrote began became gave chose drove rode wore "
                  "put set let cut hit hurt paid led fed fell forgot".split())
_NOT_VERB = frozenset("no not and or then first too both either neither nor".split())
_MODAL = frozenset("can could will would should must might may did had was shall".split())
_THIRD = {"am": "is", "have": "has", "do": "does", "are": "is", "were": "was"}
_CONTRACTIONS = {
    "i'm": "I am", "i've": "I have", "i'd": "I would", "i'll": "I will", "don't": "do not",
    "doesn't": "does not", "didn't": "did not", "can't": "cannot", "won't": "will not",
    "isn't": "is not", "aren't": "are not", "wasn't": "was not", "shouldn't": "should not",
    "wouldn't": "would not", "haven't": "have not", "hasn't": "has not", "dont": "do not",
    "im": "I am", "ive": "I have",
}
_CONTRACTION = re.compile(r"\b(" + "|".join(re.escape(k) for k in _CONTRACTIONS) + r")(?=\W|$)",
                          re.IGNORECASE)
_EN_FILLER = re.compile(
    r"^(?:(?:ok(?:ay)?|alright|so|well|oh|also|and|but|anyway|yeah|yes|yep|haha|lol|hey|hi|btw|"
    r"tbh|plus|hmm|right|cool|fyi|by the way|just so you know|for the record)\b[,!.:]?\s+)+",
    re.IGNORECASE)
_ZH_FILLER = re.compile(r"^(?:嗯+|哦+|噢|好的|对了|另外|还有|哈哈+|诶|顺便说一下|顺便)[，,！!、\s]*")


#: Abbreviations after which a full stop ends no sentence: titles and Latin shorthands.
_TITLE = re.compile(r"(?:^|\W)(?:dr|mr|mrs|ms|prof|st|sr|jr|vs|etc|e\.g|i\.e|approx|no)$", re.IGNORECASE)


#: A sentence that opens on a pronoun leans on the one before it, and stays with it.
_POINTS_BACK = re.compile(r"(?:it|its|it's|they|they're|their|them|this|these|those|he|she|his|her)\b",
                          re.IGNORECASE)


#: "1." "2)" "(3)" "4、" "第五步" inside a line: the markers of a list said in one breath
_MARK = re.compile(r"(?:(?<=^)|(?<=[\s:：,，;；(（]))(?:[(（]?(?P<n>\d{1,2})(?:[.)）]|、)(?=\s|[^\d\s.])"
                   r"|第(?P<zh>[一二三四五六七八九十\d]+)步)")
_ZH_DIGITS = {c: n for n, c in enumerate("一二三四五六七八九十", 1)}


@dataclass(frozen=True)
class Unit:
    """One statement of a turn: its text as said, and whether it is a list of steps."""

    text: str
    steps: tuple[str, ...] = ()


def _sentences(text: str) -> list[str]:
    """Sentences, never cut inside a `code span` or inside "3.11" or "os.path"."""
    out, start, code = [], 0, False
    for i, ch in enumerate(text):
        if ch == "`":
            code = not code
        elif ch in _SPLIT_AT and not code:
            nxt = text[i + 1] if i + 1 < len(text) else " "
            if ch in ".!?" and not (nxt.isspace() or nxt in ".!?\"')"):
                continue
            if ch == "." and _TITLE.search(text, 0, i):  # "Dr. Okafor", "e.g. pnpm"
                continue
            if ch == "." and _initial(text, i):  # "J.K. Rowling"
                continue
            out.append(text[start:i + 1])
            start = i + 1
    out.append(text[start:])
    return [s.strip() for s in out if s.strip(" \t\n.!?。！？；;")]


def _initial(text: str, i: int) -> bool:
    """Whether the full stop at ``i`` closes a run of initials ("J.K.", "U.S.")."""
    return i >= 3 and text[i - 1].isupper() and text[i - 1].isascii() and text[i - 2] == "." \
        and text[i - 3].isupper()


def _number(mark: re.Match[str]) -> int:
    if mark.group("n"):
        return int(mark.group("n"))
    zh = mark.group("zh")
    return int(zh) if zh.isdigit() else _ZH_DIGITS.get(zh, 0)


def _inline_list(line: str) -> tuple[str, tuple[str, ...], str] | None:
    """A list of steps said within one line ("... a specific thing: 1. extract, 2. delete
    dead code, 3. add tests. in that order"): what comes before the list, its steps, and
    what follows the last step's sentence; None unless markers run 1, 2, ... in order."""
    marks = list(_MARK.finditer(line))
    run: list[re.Match[str]] = []
    for m in marks:
        if _number(m) == len(run) + 1:
            run.append(m)
        elif run and len(run) < 2:
            run = [m] if _number(m) == 1 else []
    if len(run) < 2:
        return None
    steps = [line[a.end():b.start()] for a, b in zip(run, run[1:], strict=False)]
    last = line[run[-1].end():]
    # the last step ends with its sentence: a full stop before a space, or a Chinese one
    end = re.search(r"(?<!\d)[.!?](?=\s|$)|[。！？\n]", last)
    cut = end.end() if end else len(last)
    steps.append(last[:cut])
    steps = [s.strip(" \t,，;；.。") for s in steps]
    if sum(1 for s in steps if s) < 2:
        return None
    return line[:run[0].start()], tuple(s for s in steps if s), last[cut:]


def _said(line: str) -> list[str]:
    """The sentences of a line, a sentence that points back kept with the one before."""
    said: list[str] = []
    for sentence in _sentences(_STAGE.sub(" ", line)):
        if said and _POINTS_BACK.match(sentence):
            said[-1] = f"{said[-1]} {sentence}"  # "It's a fantasy novel" needs its title
        else:
            said.append(sentence)
    return said


def units(text: str) -> list[Unit]:
    """The statements of one turn, oldest first."""
    lines = [ln for ln in text.replace("\r", "").split("\n") if ln.strip()]
    out: list[Unit] = []
    i = 0
    while i < len(lines):
        items = []
        j = i + 1
        while j < len(lines) and _ITEM.match(lines[j]):
            items.append(_ITEM.sub("", lines[j]).strip())
            j += 1
        if len(items) >= 2:  # a heading and its list of steps
            head = lines[i].strip()
            if _ITEM.match(head):
                head = ""
            out.append(Unit(head.rstrip("：: ") or items[0], tuple(items)))
            i = j
            continue
        inline = _inline_list(lines[i])
        if inline is not None:
            before, steps, after = inline
            said = _said(before)
            head = said.pop() if said else ""
            out.extend(Unit(sentence) for sentence in said)
            out.append(Unit(head.strip().rstrip("：:,， ") or steps[0], steps))
            lines[i] = after
            if not after.strip():
                i += 1
            continue
        for sentence in _said(lines[i]):
            steps = [s for s in _ARROW.split(sentence) if s.strip()]
            out.append(Unit(sentence, tuple(steps) if len(steps) >= 3 else ()))
        i += 1
    return out


def is_fragment(text: str) -> bool:
    """Too short to stand alone, or cut off mid-thought ("Melanie loves to")."""
    toks = words(text)
    if has_cjk(text):  # a Chinese character counts as a word, and so does "Vue" in "前端用 Vue"
        return sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff") + sum(t.isascii() for t in toks) < 4
    return len(toks) < 3 or (toks[-1] in _DANGLING and not _complete_end(toks))


def _complete_end(toks: list[str]) -> bool:
    """Whether a last word that often leaves a thought open closes it here: a pronoun
    object after a preposition ("suggest keybindings for that"), or a particle after an
    adverb, a pronoun or a participle ("give me Zed shortcuts from now on")."""
    last, before = toks[-1], toks[-2]
    if last in ("that", "this"):
        return before in _PREPOSITION
    return last in _PARTICLE and (before in _PARTICLE_AFTER or before.endswith("ed"))


def _expand(text: str) -> str:
    """Contractions spelled out ("I'm" -> "I am"), so the speaker can be put in."""
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    return _CONTRACTION.sub(lambda m: _CONTRACTIONS[m.group().lower()], text)


def _third(word: str) -> str:
    low = word.lower()
    if low in _THIRD:
        return _THIRD[low]
    if low in _MODAL or low in _ADVERB or not low.isalpha() or low.endswith(("ed", "ly")) \
            or low in _PAST:
        return word
    if low.endswith(("s", "sh", "ch", "x", "o", "z")):
        return word + "es"
    if low.endswith("y") and low[-2:-1] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def _resolve_en(text: str, name: str) -> str:
    """First person becomes ``name`` (``"User"`` for the user role), verbs agreeing."""
    mid = "the user" if name == "User" else name
    tokens = re.split(r"(\s+)", text)
    out: list[str] = []
    fix_next = False
    for tok in tokens:
        if not tok or tok.isspace():
            out.append(tok)
            continue
        core = tok.strip(",.;:!?\"'()")
        low = core.lower()
        if fix_next and core.isalpha():
            if low in _ADVERB or low.endswith("ly"):
                out.append(tok)
                continue
            if low in _NOT_VERB:  # "I no longer use", "I and my wife": leave it as said
                fix_next = False
                out.append(tok)
                continue
            tok = tok.replace(core, _third(core), 1)
            fix_next = False
        elif fix_next:
            fix_next = False
        if core in ("I", "i"):
            tok = tok.replace(core, name if not "".join(out).strip() else mid, 1)
            fix_next = True
        elif low in ("my", "mine"):
            tok = tok.replace(core, (name if not "".join(out).strip() else mid) + "'s", 1)
        elif low in ("me",):
            tok = tok.replace(core, mid, 1)
        elif low == "myself":
            tok = tok.replace(core, "themselves" if name == "User" else name, 1)
        out.append(tok)
    return "".join(out)


def _resolve_zh(text: str, name: str) -> str:
    return re.sub(r"我(?!们)", name, text)


def render(unit: Unit, speaker: str, when: datetime | None) -> tuple[str, datetime | None]:
    """The unit as a memory's text, and the date it speaks of (if any)."""
    lang = "zh" if has_cjk(unit.text) else "en"
    text = unit.text.strip().rstrip("。！；;,，.! ")
    if lang == "zh":
        text = _ZH_FILLER.sub("", text).strip()
        text = _resolve_zh(text, "用户" if speaker == "user" else speaker)
    else:
        text = _EN_FILLER.sub("", _expand(text)).strip()
        text = _resolve_en(text, "User" if speaker == "user" else speaker)
        text = text[:1].upper() + text[1:]
    if unit.steps:
        steps = [_resolve_zh(s, "用户") if lang == "zh" else s for s in unit.steps]
        colon = "：" if lang == "zh" else ": "
        if _ARROW.search(text):  # "deploy flow: build -> push -> bump": the heading leads
            heading, _, first = steps[0].rpartition(colon.strip())
            text, steps[0] = (heading.strip(), first) if heading.strip() and first.strip() else ("", steps[0])
            text = text[:1].upper() + text[1:]
        elif text.strip() == unit.steps[0].strip():
            text = ""
        sep = "；" if lang == "zh" else "; "
        listed = sep.join(f"{i}. {s.strip().rstrip('.。;；')}" for i, s in enumerate(steps, 1))
        text = f"{text}{colon}{listed}" if text else listed
    event_time = None
    date = find_date(text, when)
    if date is not None:
        text = text[:date.begin] + date.render(lang) + text[date.finish:]
        event_time = date.start
    return " ".join(text.split()), event_time
