"""The default extractor: rules, no model. English and Chinese turns, coding-agent events.

A turn is cut into sentences and clauses; the first rule of :mod:`.patterns` that matches
a clause yields a candidate worded from the match, in the language it was said in. Some
rules read whole sentences (procedures, pitfalls, Chinese decisions), and a sentence they
match is not cut further. Questions yield nothing, except requests that set a standing
rule ("Can you answer in Chinese from now on?"). Dates such as "yesterday" or "上周" are
resolved against the turn's own time. Agent events go to :mod:`.events`.

    >>> from remem.extract import EpisodeIn, RulesExtractor
    >>> [c.text for c in RulesExtractor().extract([EpisodeIn("e1", "I prefer pnpm over npm.")])]
    ['User prefers pnpm over npm']
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..text import has_cjk
from .base import Candidate, EpisodeIn, as_utc
from .dates import find_date
from .events import event_candidates
from .patterns import EN_RULES, STACK, ZH_RULES, Rule

__all__ = ["RulesExtractor"]

_CONTRACTIONS = {
    "i'm": "i am", "i've": "i have", "i'd": "i would", "i'll": "i will", "we're": "we are",
    "we've": "we have", "we'll": "we will", "we'd": "we would", "you're": "you are",
    "it's": "it is", "that's": "that is", "there's": "there is", "let's": "let us",
    "don't": "do not", "doesn't": "does not", "didn't": "did not", "can't": "cannot",
    "won't": "will not", "isn't": "is not", "aren't": "are not", "wasn't": "was not",
    "shouldn't": "should not", "wouldn't": "would not", "haven't": "have not",
    "hasn't": "has not", "couldn't": "could not", "dont": "do not",
}
_CONTRACTION = re.compile(r"\b(" + "|".join(re.escape(k) for k in _CONTRACTIONS) + r")\b",
                          re.IGNORECASE)
_EN_FILLER = re.compile(
    r"^(?:(?:ok(?:ay)?|alright|so|well|oh|also|and|but|anyway|yeah|yes|yep|haha|lol|great|hey|"
    r"hi|btw|tbh|plus|wow|aww|honestly|actually|by the way|sure|right|hmm|cool|nice|fine|"
    r"just so you know|fyi|for the record|for this (?:project|repo|codebase)|"
    r"(?:make sure|be sure|remember)(?: that)?(?: you)?(?: to)?(?=\s+(?:always|never|do not)\b))"
    r"\b[,!.:]?\s+)+", re.IGNORECASE)
_EN_TAIL = re.compile(r"(?:[\s,]+(?:by the way|btw|though|anyway|too|myself|haha|lol|honestly|"
                      r"as well|really|please|thanks|thank you))+$", re.IGNORECASE)
_ZH_FILLER = re.compile(r"^(?:嗯|哦|噢|好的|对了|另外|还有|其实|哈哈|诶|顺便说一下|顺便)[，,！!、\s]*")
_EN_CLAUSE = re.compile(
    r"\s*[,;]\s+(?=(?:so|and|but|please|it|i|we|you|they|he|she|his|her|their|that is|which|"
    r"though|although|since)\b)|\s+(?:and|but|so)\s+(?=(?:i|we|it|you|they|he|she)\b)",
    re.IGNORECASE)
_EN_QUESTION = re.compile(
    r"^(?:what|why|how|where|when|who|which|whose)\b|^(?:do|does|did|is|are|was|were|can|"
    r"could|should|would|will|shall|have|has)\s+(?:we|you|i|they|he|she|it|this|that|there)\b",
    re.IGNORECASE)
_EN_REQUEST = re.compile(r"^(?:(?:can|could|would|will) you|would you mind|please could you)\s+"
                         r"(?:please\s+)?(?!like\b)(?P<rest>.+?)\??$", re.IGNORECASE)
_EN_STANDING = re.compile(r"\b(?:from now on|going forward|in (?:the )?future|always|never|"
                          r"every time|in (?:chinese|english|french|german|spanish|japanese)|"
                          r"short|brief|concise|call me)\b", re.IGNORECASE)
_ZH_QUESTION = re.compile(r"[？?]$|[吗呢么][。！!]?$|什么|怎么|为什么|哪|谁|多少|几点|是否|有没有")
_ZH_REQUEST = re.compile(r"^(?:能不能|可不可以|可以|能|麻烦你?|请你?)(?P<rest>.+?)(?:吗|吧|呢)?[？?]?$")
_ZH_STANDING = re.compile(r"以后|今后|总是|一直|每次|中文|英文|简短|简洁|叫我")
# a body that points at something unnamed ("I like that"), or judges the agent's last move
# ("I like how you structured it"): one-off feedback, not a lasting preference
_VAGUE = re.compile(r"^(?:it|that|this|those|these|them|so|one)\b(?!\s+(?:when|if)\b)"
                    r"|^(?:how|what|the way) you\b", re.IGNORECASE)
_MINE = re.compile(r"\b(?:my|me|myself|mine)\b", re.IGNORECASE)
_LOCAL = re.compile(r"\bmy (?:machine|laptop|computer|box|mac|pc)\b|\blocally\b", re.IGNORECASE)
_ENTITY = re.compile(r"`([^`]+)`|([\w.+#-]*[./_][\w./+#-]*\w)|(?<=[\s(])([A-Z][\w.+#-]*)")
_NOT_ENTITY = frozenset("I User January February March April May June July August September "
                        "October November December".split())
_SPLIT_AT = set(".!?。！？；\n")  # an English ";" joins clauses of one thought
_MERGE = ("preference", "convention")
_THIRD = {"am": "is", "have": "has", "do": "does", "can": "can", "cannot": "cannot",
          "would": "would", "will": "will", "used": "used", "grew": "grew"}


@dataclass
class _Part:
    rule: Rule
    text: str
    clause: str


def _normalise(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"')
    text = text.replace("\u201d", '"')

    def expand(m: re.Match[str]) -> str:
        full = _CONTRACTIONS[m.group().lower()]
        return full[0].upper() + full[1:] if m.group()[0].isupper() else full
    return _CONTRACTION.sub(expand, text)


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
            out.append(text[start:i + 1])
            start = i + 1
    out.append(text[start:])
    return [s.strip() for s in out if s.strip(" \t\n.!?。！？；;")]


def _strip(clause: str, lang: str) -> str:
    clause = clause.strip().rstrip(".!?。！？；;,，: ")
    if lang == "zh":
        return _ZH_FILLER.sub("", clause).strip()
    return _EN_FILLER.sub("", clause).strip()


def _standing(sentence: str, lang: str) -> str | None:
    """The sentence as a statement, or None for a question that sets no standing rule."""
    s = sentence.rstrip(".!。！ ")
    if lang == "zh":
        if not _ZH_QUESTION.search(s):
            return sentence
        m = _ZH_REQUEST.match(s)
        return m.group("rest") if m and _ZH_STANDING.search(s) else None
    if not s.endswith("?") and not _EN_QUESTION.match(s):
        return sentence
    m = _EN_REQUEST.match(s)
    return m.group("rest") if m and _EN_STANDING.search(s) else None


def _third(verb: str) -> str:
    if not verb:
        return verb
    head, _, rest = verb.partition(" ")
    low = head.lower()
    if low in _THIRD:
        head = _THIRD[low]
    elif low.endswith("ed") or low in ("ran", "went", "got", "lost", "won", "made", "saw"):
        pass
    elif low.endswith(("s", "sh", "ch", "x", "o")):
        head += "es"
    elif low.endswith("y") and low[-2:-1] not in "aeiou":
        head = head[:-1] + "ies"
    else:
        head += "s"
    return f"{head} {rest}".strip()


def _techy(body: str) -> bool:
    return bool(re.search(r"`|\d|[./_]\w", body)
                or any(w.lower() in STACK for w in re.findall(r"[\w.#+-]+", body))
                or re.search(r"(?:^|\s)[A-Z][\w.+#-]*", body))


def _cut(body: str) -> str:
    """A first-person body up to its first comma, unless the comma starts a list."""
    head, sep, tail = body.partition(", ")
    if sep and not re.match(r"^(?:\S+\s+){0,2}(?:and|or)\b", tail):
        return head
    return body


def _tidy(text: str, lang: str) -> str:
    text = " ".join(text.split()).strip(" ,，:：")
    if lang == "en":
        text = _EN_TAIL.sub("", text).rstrip(" ,")
        if text[:1].islower():
            text = text[0].upper() + text[1:]
    return text


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


class RulesExtractor:
    """Rules for turns (English and Chinese) and for coding-agent events; no model.

    Parameters:
        window: how many later events of the same session may hold the fix of a failure.

    Example::

        extractor = RulesExtractor()
        for cand in extractor.extract([EpisodeIn("e1", "以后都用 pnpm", role="user")]):
            print(cand.kind, cand.subject, cand.text)   # preference user 以后都用 pnpm
    """

    def __init__(self, *, window: int = 4) -> None:
        self.window = window

    def extract(self, episodes: Sequence[EpisodeIn]) -> list[Candidate]:
        out: list[Candidate] = []
        for ep in episodes:
            if ep.kind == "episode":
                out.extend(self.turn(ep))
        out.extend(event_candidates([e for e in episodes if e.event is not None],
                                    window=self.window))
        return out

    def turn(self, ep: EpisodeIn) -> list[Candidate]:
        """The candidates in one conversation turn."""
        out: list[Candidate] = []
        for sentence in _sentences(_normalise(ep.text)):
            lang = "zh" if has_cjk(sentence) else "en"
            statement = _standing(sentence, lang)
            if statement is None:
                continue
            statement = _strip(statement, lang)
            rules = ZH_RULES if lang == "zh" else EN_RULES
            hit = self._match(rules, statement, "sentence", ep, lang)
            if hit is not None:
                out.append(self._candidate(hit, ep, lang))
                continue
            clauses = (re.split(r"[，,]", statement) if lang == "zh"
                       else _EN_CLAUSE.split(statement))
            parts: list[_Part | None] = []
            for clause in clauses:
                clause = _strip(clause, lang)
                part = self._match(rules, clause, "clause", ep, lang) if clause else None
                if part is None and lang == "zh" and parts and parts[-1] is not None \
                        and clause and not re.match(r"^(?:我|你|他|她|它|这|那|但|不过)", clause):
                    parts[-1].text += f"，{clause}"  # a Chinese clause that goes on
                    continue
                parts.append(part)
            out.extend(self._candidate(p, ep, lang) for p in self._merged(parts, lang))
        return out

    def _match(self, rules: Sequence[Rule], clause: str, scope: str, ep: EpisodeIn,
               lang: str) -> _Part | None:
        for rule in rules:
            if rule.scope != scope or (rule.who == "person" and ep.is_agent):
                continue
            m = rule.pattern.match(clause)
            if m is None:
                continue
            groups = {k: (v or "").strip() for k, v in m.groupdict().items()}
            body = groups.get("body", "")
            if lang == "en" and body and _VAGUE.match(body):
                continue
            if rule.techy and not _techy(body or clause):
                continue
            if rule.stack and body.strip("`").split(" ")[0].lower().rstrip(".,") not in STACK:
                continue
            if rule.needs_date and find_date(clause, as_utc(ep.event_time)) is None:
                continue
            if "{Subj}" in rule.render:
                body = _MINE.sub(lambda w: {"my": "their", "me": "them", "mine": "theirs"}.get(
                    w.group().lower(), ""), _cut(body))
            speaker = ep.speaker
            values = {**groups, "body": body, "clause": clause, "verb3": _third(groups.get(
                "verb", "")), "Subj": "User" if speaker == "user" else speaker,
                "subj": "用户" if speaker == "user" else speaker}
            return _Part(rule, _tidy(rule.render.format(**values), lang), clause)
        return None

    @staticmethod
    def _merged(parts: list[_Part | None], lang: str) -> list[_Part]:
        """Adjacent clauses that state the same kind of rule become one memory."""
        out: list[_Part] = []
        previous: _Part | None = None
        for part in parts:
            if part is None:
                previous = None
                continue
            if previous is not None and part.rule.kind == previous.rule.kind \
                    and part.rule.kind in _MERGE:
                previous.text += ("，" if lang == "zh" else ", ") + (
                    part.text[0].lower() + part.text[1:] if lang == "en" else part.text)
                continue
            out.append(part)
            previous = part
        return out

    def _candidate(self, part: _Part, ep: EpisodeIn, lang: str) -> Candidate:
        rule, text = part.rule, part.text
        when = as_utc(ep.event_time)
        event_time = when if rule.kind == "event" else None
        date = find_date(text, when)
        if date is not None:
            text = text[:date.begin] + date.render(lang) + text[date.finish:]
            event_time = date.start
        if rule.about == "speaker" or (rule.kind == "fact" and _LOCAL.search(part.clause)):
            subject = ep.speaker
        elif ep.project is None and ep.speaker != "user" and not ep.is_agent:
            subject = ep.speaker  # "we decided ..." in a chat between people, not about a project
        else:
            subject = ep.project or "project"
        tags = [lang] + (["communication-style"] if ".style." in rule.name else [])
        return Candidate(kind=rule.kind, text=text, subject=subject,  # type: ignore[arg-type]
                         entities=_entities(text, subject), tags=tags, event_time=event_time,
                         observed_at=when, confidence=rule.confidence, source_ids=[ep.id],
                         rule=rule.name)
