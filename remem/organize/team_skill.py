"""Reading a leader's rule for splitting work as a structured skill, by rules.

A rule names its roles as noun phrases that end in a role noun ("a server-side engineer",
"the on-call SRE", "数据开发", "测试同学", or a bare side of the stack: "后端、前端和测试"),
says who waits for whom (a marker between two roles: "the tester starts after the backend
is up", "DBA waits for SRE", "hands it off to", "测试等后端起来再开始", "交给"; or steps in
sequence: "first ..., then ...", "先 ...，再 ...", arrows, numbered or bulleted steps) and
which checks a role runs (a verb of doing or checking and what follows it, up to the end of
its clause). A clause that names no role continues the one before it. Role nouns and
ordering words are closed classes; the names before them are taken as written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from ..model import MemoryItem
from ..text import STOPWORDS, clauses, has_cjk

__all__ = ["RoleStep", "TeamSkill", "read_skill", "skill_of"]

_EN_NOUN = (r"(?i:developers?|devs?|engineers?|testers?|reviewers?|designers?|architects?|"
            r"writers?|analysts?|admins?|administrators?|scientists?|owners?|managers?|leads?|"
            r"specialists?|operators?|approvers?|maintainers?|researchers?|translators?|"
            r"editors?|auditors?|coordinators?|evaluators?|validators?|annotators?|labell?ers?|"
            r"consultants?|experts?|planners?|stewards?|officers?|counsel|lawyers?|"
            r"accountants?|teams?|squads?|devops)")
#: acronyms are role nouns only in capitals ("3 pm" is a time)
_EN_ACRONYMS = "QA|SRE|DBA|SDET|PM|PO|TPM|TL"
_EN_HEAD = f"{_EN_NOUN}|{_EN_ACRONYMS}"
#: up to two words before a role noun name it ("server-side", "on-call", "QA", "data")
_EN_ROLE = re.compile(r"((?:[A-Za-z][\w/+-]*\s+){0,2})\b((?:" + _EN_ACRONYMS + r")\s+(?:"
                      + _EN_NOUN + r")|" + _EN_HEAD + r")\b")
_EN_ACRONYM = frozenset(_EN_ACRONYMS.split("|"))
#: words that end the name before a role noun (determiners, verbs of assigning, numbers)
_EN_NOT_NAME = STOPWORDS | frozenset(
    "a an the and or then first next finally also plus with by to for from of one two three "
    "four each every any our their his her its needs need use uses get gets ask asks assign "
    "pair want wants have has let lets another other same only just after before once when "
    "while until".split())
_ZH_HEAD = ("工程师|架构师|分析师|设计师|负责人|同学|开发|研发|测试|运维|经理|产品|设计|评审|专员|算法|"
            "运营|翻译|法务|财务|风控|客服|审计|律师|的人|那边|这边|组(?![件织合成长])|DBA|QA|SRE|PM")
#: a side of the stack named alone is a role too (后端、前端和测试)
_ZH_SIDE = re.compile("后端|前端|服务端|客户端|移动端")
_ZH_ROLE = re.compile(f"(?:{_ZH_HEAD}|{_ZH_SIDE.pattern})")
#: words that name a role only after its name (测试同学, 财务那边)
_ZH_AFTER_NAME = re.compile("那边|这边|同学|的人")
#: what comes right before a Chinese role's name (punctuation, a particle, a verb of
#: assigning or of order), and so never inside the name
_ZH_STOP = ("[、，,：:；;。=＋+/（(→给让由找叫和与及跟等是再先把请了后完要个名位配加拿跑做看]|然后|最后|接着|"
            "还有|以及|执行|进行|负责|核对|检查|验证|确认|对照|走查")
_ZH_BOUNDARY = re.compile(f"(?:{_ZH_STOP}|\\s)$")
_ZH_INSIDE = re.compile(_ZH_STOP)
_ZH_NAME_CHARS = re.compile(r"^[\u4e00-\u9fffA-Za-z][\u4e00-\u9fffA-Za-z ]*$")

_EN_AFTER = re.compile(r"\b(?:after|once|when|until|waits?\s+(?:for|on|until)|follows?|"
                       r"as soon as|picks?\s+(?:it\s+)?up\s+from|takes?\s+over\s+from)\b", re.I)
_EN_BEFORE = re.compile(r"\b(?:before|ahead of|hands?\s+(?:it\s+)?(?:off|over)\s+to|"
                        r"passes\s+(?:it\s+)?(?:on\s+)?to)\b", re.I)
#: a step that follows the one before: an arrow, a number ("2)", "②", "Step 2")
_STEP = (r"(?:->|→|=>|⇒|(?<!\w)(?:step\s*)?[2-9][.)、:：](?!\d)|[②③④⑤⑥⑦⑧⑨]|"
         r"(?<=\s)[-*•](?=\s))")
_EN_THEN = re.compile(r"^\W*(?:and\s+)?(?:then|next|after that|afterwards|finally|lastly|"
                      r"last(?:ly)?|second|third)\b|^\s*" + _STEP, re.I)
#: several roles said to work side by side: the next step waits for all of them
_TOGETHER = re.compile(r"\b(?:in parallel|at the same time|together|simultaneously|while)\b|"
                       r"并行|同时|一起", re.I)
#: the roles just named, said again by a pronoun ("after both are done", "两边都好了")
_THEM = re.compile(r"\b(?:both|all of them|they|them|each)\b|两边|都|他们", re.I)
_EN_FIRST = re.compile(r"\b(?:goes|go|comes?|starts?|is)\s+first\b|^\W*first\b|\bfirst\b", re.I)
_ZH_AFTER = re.compile(r"(?:之后|以后|完成后|好了后|起来后|上线后|就绪后|完了?后|后再|后才|通过后|"
                       r"交给|丢给|转给|(?<=[\u4e00-\u9fff])完了?(?![成全整善美]))(?!端)")
_EN_LAST = re.compile(r"\b(?:goes|go|comes?|is)\s+last\b|最后(?:上|来|再)?", re.I)
_ZH_WAIT = re.compile(r"等")
_ZH_THEN = re.compile(r"^(?:然后|再|接着|之后|最后|随后|完了|最终)|^.{0,12}?(?:再|才|然后)|^\s*"
                      + _STEP)
_ZH_FIRST = re.compile(r"先")

_EN_CHECK = re.compile(
    r"\b(?:runs?|does|do|performs?|checks?|verif(?:y|ies)|executes?|confirms?|validates?|"
    r"reviews?|tests?|owns?|handles?|signs? off on|is responsible for|takes care of)\s+"
    r"(?:(?:a|an|the|for|that|it|them)\s+)?(.+)$", re.I)
_ZH_CHECK = re.compile(r"(?:跑|做|执行|进行|负责|核对|检查|验证|确认|看|对照|走查|测(?!试)|过(?=一))"
                       r"(?:一[下遍]|看)?(.+)$")
_EN_CHECK_END = re.compile(r"\b(?:before|after|once|when|then|and then|so that|because)\b", re.I)


class RoleStep(BaseModel):
    """One role of a split: its agent id, the roles it waits for, the checks it runs."""

    model_config = ConfigDict(frozen=True)

    role: str
    agent_id: str
    after: list[str] = Field(default_factory=list, description="agent ids it starts after")
    checks: list[str] = Field(default_factory=list)
    step: int = Field(description="its place in the order, from 1; roles that share a "
                      "number may run side by side")


class TeamSkill(BaseModel):
    """A leader's rule for splitting work, read from the memory that holds it."""

    model_config = ConfigDict(frozen=True)

    memory_id: str
    version: int
    when: str = Field(description="what sort of requirement it is for")
    text: str
    roles: list[RoleStep]
    score: float = Field(0.0, description="how close the requirement is to what it is for")


def _slug(name: str) -> str:
    return re.sub(r"[^\w]+", "-", name.lower()).strip("-")


def _en_name(lead: str, head: str) -> str:
    """The role's name: the head noun and the words before it that name it."""
    kept: list[str] = []
    for word in reversed(lead.split()):
        if word.lower() in _EN_NOT_NAME or word.lower().rstrip("s") in _EN_NOT_NAME \
                or len(kept) == 2:
            break
        kept.insert(0, word)
    *lead_words, noun = [*kept, *head.split()]
    if noun.upper() not in _EN_ACRONYM and noun.endswith("s"):
        noun = noun[:-1]  # "two testers" -> tester
    return " ".join(w if w.isupper() or w.upper() in _EN_ACRONYM else w.lower()
                    for w in [*lead_words, noun])


def _mentions(text: str) -> list[tuple[int, int, str]]:
    """(start, end, name) of each role noun phrase, in order."""
    found: list[tuple[int, int, str]] = []
    if has_cjk(text):
        for m in _ZH_ROLE.finditer(text):
            start = m.start()
            # the name before a role noun: the longest run of up to six characters after a
            # boundary with none inside it (a side of the stack aside: 了后端开发)
            ascii_lead = re.search(r"(?:^|(?<=[^\w]))([A-Za-z][\w-]{1,15}) ?$", text[:start])
            if ascii_lead is not None and not _ZH_SIDE.fullmatch(m.group()):
                found.append((ascii_lead.start(1), m.end(), text[ascii_lead.start(1):m.end()]))
                continue
            for size in ([] if _ZH_SIDE.fullmatch(m.group()) else range(min(6, start), 0, -1)):
                lead = text[start - size:start]
                if not _ZH_NAME_CHARS.match(lead) or _ZH_INSIDE.search(_ZH_SIDE.sub("", lead)):
                    continue
                if start - size == 0 or _ZH_BOUNDARY.search(text[:start - size]):
                    start -= size
                    break
            end = m.end()
            if m.group() == "评审" and text[end:end + 1] in ("人", "员"):
                end += 1  # 评审人
            elif start == m.start() and m.group() == "评审":
                continue  # 先评审 DDL: the verb; a reviewer has a name (安全评审, 评审人)
            found.append((start, end, text[start:end].strip()))
    for m in _EN_ROLE.finditer(text):
        name = _en_name(m.group(1), m.group(2))
        found.append((m.end() - len(m.group(2)) - _lead_len(m.group(1), name), m.end(), name))
    merged: list[tuple[int, int, str]] = []
    for start, end, name in sorted(found):
        if merged and start < merged[-1][1]:  # overlapping: keep the longer
            if end - start > merged[-1][1] - merged[-1][0]:
                merged[-1] = (start, end, name)
            continue
        if merged and start == merged[-1][1] and _ZH_AFTER_NAME.fullmatch(name):
            merged[-1] = (merged[-1][0], end, merged[-1][2])  # 安全工程师那边: the same role
            continue
        merged.append((start, end, name))
    return merged


def _lead_len(lead: str, name: str) -> int:
    """How many characters of ``lead`` the name took (its last words and their spaces)."""
    taken = len(name.split()) - 1
    if taken <= 0:
        return 0
    return len(" ".join(lead.split()[-taken:])) + 1


class _Roles:
    """The roles a rule names, in order of first mention, and how later mentions refer to
    them: by the whole name, by the word that names it ("the backend is up"), or by the
    role noun when only one role has it."""

    def __init__(self, mentions: Sequence[tuple[int, int, str]]) -> None:
        self.names: list[str] = []
        for _, _, name in mentions:
            if self.resolve(name) is None:
                self.names.append(name)

    def resolve(self, name: str) -> str | None:
        low = name.lower()
        for known in self.names:
            if known.lower() == low:
                return known
        heads = [k for k in self.names if k.lower().split()[-1] == low.split()[-1]]
        if len(low.split()) == 1 and len(heads) == 1:
            return heads[0]  # "the engineer" when one engineer is named
        # a bare side of the stack after its role was named in full (后端 -> 后端开发)
        starts = [k for k in self.names if k.lower().startswith(low) or low.startswith(k.lower())]
        return starts[0] if len(starts) == 1 and min(len(low), len(starts[0])) >= 2 else None

    def words(self) -> dict[str, str]:
        """A short word per role that names it in a later clause, when it is unique."""
        out: dict[str, str] = {}
        for name in self.names:
            parts = name.split()
            for word in ([parts[0]] if len(parts) > 1 else []) + ([name] if " " in name else []):
                if sum(1 for k in self.names if word.lower() in k.lower()) == 1:
                    out[word.lower()] = name
        return out

    def refs(self, clause: str) -> list[tuple[int, str]]:
        """Where each role is named in ``clause``, in order."""
        out: dict[int, str] = {}
        spans = []
        for start, end, name in _mentions(clause):
            known = self.resolve(name)
            if known is not None:
                out[start] = known
                spans.append((start, end))
        for word, name in self.words().items():
            pattern = re.escape(word) + (r"\w*" if word.isascii() else "")
            for m in re.finditer(pattern, clause, re.I):
                if word.isascii() and m.start() > 0 and clause[m.start() - 1].isalnum():
                    continue
                if not any(a <= m.start() < b for a, b in spans):  # not inside a full mention
                    out.setdefault(m.start(), name)
        return sorted(out.items())


def _checks(phrase: str, lang: str) -> list[str]:
    """"port and API tests" -> ["port tests", "API tests"]; "端口和接口测试" likewise."""
    phrase = phrase.strip(" .。,，;；")
    if lang == "zh":
        phrase = re.split(r"[，,；;。]|再|然后", phrase)[0]
        parts = [p.strip() for p in re.split(r"[和、及与]|还有|以及", phrase) if p.strip()]
        m = re.match(r".+?(测试|检查|验证)$", parts[-1]) if parts else None
        if m and len(parts) > 1:
            return [p if re.search(r"(测试|检查|验证|测)$", p) else p + m.group(1) for p in parts]
        return parts
    phrase = re.split(r",?\s+and\s+(?:the|a|an|then)\b", _EN_CHECK_END.split(phrase)[0])[0]
    phrase = phrase.strip(" ,")
    parts = [p.strip() for p in re.split(r",\s*(?:and\s+)?|\s+and\s+", phrase) if p.strip()]
    last = parts[-1].split()[-1] if parts else ""
    if len(parts) > 1 and last.lower() in ("tests", "checks", "test", "check"):
        parts = [p if p.split()[-1].lower() == last.lower() else f"{p} {last}" for p in parts]
    return parts


def _clauses(text: str, lang: str) -> list[str]:
    steps = re.compile(rf"(?={_STEP})", re.I)
    if lang == "zh":
        return [c for part in re.split(r"(?<=[，,；;。：:])", text) for c in steps.split(part)
                if c.strip()]
    out: list[str] = []
    for clause in clauses(text):
        # "..., then a QA tester runs ..." and "-> QA" are steps of their own
        out += [c for part in re.split(r"(?=\b(?:and then|then)\b)", clause)
                for c in steps.split(part) if c.strip()]
    return out


def _order_word(clause: str, start: int, lang: str) -> int:
    """Where the first word of order after ``start`` is (a new actor may follow it), or
    the clause's end."""
    pattern = _ZH_AFTER if lang == "zh" else _EN_AFTER
    m = pattern.search(clause, start) or re.compile("再|才|然后" if lang == "zh" else
                                                    r"\bthen\b").search(clause, start)
    return m.start() if m else len(clause)


def _spans(text: str, lang: str) -> list[tuple[int, str]]:
    """Each clause with where it starts in ``text``."""
    out, cursor = [], 0
    for clause in _clauses(text, lang):
        at = text.find(clause, cursor)
        cursor = at + len(clause) if at >= 0 else cursor
        out.append((max(at, 0), clause))
    return out


def skill_of(text: str, *, memory_id: str = "", version: int = 1) -> TeamSkill | None:
    """The team skill a text states, or None when it names fewer than two roles."""
    text = " ".join(text.split())
    lang = "zh" if has_cjk(text) else "en"
    mentions = _mentions(text)
    # what a check names (接口测试, "the API contract") is no role of its own
    inside = [(at + c.start(1), at + _order_word(clause, c.start(1), lang))
              for at, clause in _spans(text, lang)
              if (c := (_ZH_CHECK if lang == "zh" else _EN_CHECK).search(clause))]
    # (in Chinese only what ends in 测试 is in doubt: 做后端的 is a role after 做)
    roles = _Roles([m for m in mentions if not any(a <= m[0] < b for a, b in inside)
                    or (lang == "zh" and not m[2].endswith("测试"))])
    if len(roles.names) < 2:
        return None
    after: dict[str, list[str]] = {name: [] for name in roles.names}
    checks: dict[str, list[str]] = {name: [] for name in roles.names}

    def wait(late: str, early: str) -> None:
        if late != early and early not in after[late] and late not in after[early]:
            after[late].append(early)

    subject: str | None = None  # the role the clause before was about
    first: str | None = None  # a role said to go first: the next one named waits for it
    pending: list[str] = []  # "once X is merged,": what the next role named waits for
    last_names: list[str] = []  # the roles the clause before named
    together = False  # and whether it said they work side by side
    plain = False  # and whether it ordered nothing
    last: set[str] = set()  # roles said to go last
    for at, clause in _spans(text, lang):
        cursor = at + len(clause)
        # what the rule is for ("Docs site changes:") names no role, whatever its words
        refs = [(a, n) for a, n in roles.refs(clause) if at + a >= mentions[0][0]]
        ordered = sum(map(len, after.values()))  # the waits read so far
        names = [n for _, n in refs]
        waiters: list[str] = []  # the roles this clause says wait
        opened: list[str] = []  # "once X is up,": the roles the next clause waits for
        marker = (_ZH_AFTER if lang == "zh" else _EN_AFTER).search(clause)
        waiter = _ZH_WAIT.search(clause) if lang == "zh" else None
        before_word = _EN_BEFORE.search(clause) if lang == "en" else None
        if waiter is not None and len(names) >= 2 and refs[0][0] < waiter.start():
            # 测试等后端起来再开始: the role before 等 waits for those after it
            waiters = names[:1]
            for early in (n for at, n in refs if at > waiter.start()):
                wait(names[0], early)
        elif marker is not None and refs:
            before = [n for at, n in refs if at < marker.start()]
            later = [n for at, n in refs if at >= marker.start()]
            if lang == "zh" and "在" in clause[:marker.start()] and len(before) > 1:
                waiters, earlier = before[:1], before[1:]  # 测试在后端起来之后开始
            elif lang == "zh":  # 后端起来之后测试再开始; 两边都好了以后测试再上
                waiters, earlier = later, before or [n for n in last_names if n not in later]
            elif before:  # the tester starts after the backend is up / does it after that
                waiters, earlier = before, later or (
                    [n for n in last_names if n not in before] if _THEM.search(clause)
                    else [e for e in (first or subject,) if e])
            elif re.fullmatch(r"\W*(?:and|but|only|then)?\W*", clause[:marker.start()]):
                # "once the backend is up," opens a clause: the next role named waits, or the
                # one before when this closes its sentence ("..., after X is merged."); "once
                # they're done the DevOps engineer deploys": the role named waits for them
                them = _THEM.search(clause, marker.end(), refs[0][0])
                if them is not None and (last_names or subject):
                    waiters, earlier = later[:1], [n for n in last_names or [subject] if n]
                elif re.search(r"[.!?]\s*$", clause) and subject is not None:
                    waiters, earlier = [subject], later
                else:
                    opened = later
            else:  # "they don't start until X is done": the role of the clause before
                waiters, earlier = ([subject] if subject else []), later
            for w in waiters:
                for e in earlier:
                    wait(w, e)
        elif before_word is not None and refs:
            waiters = [n for at, n in refs if at >= before_word.start()]
            for w in waiters:
                for e in (n for at, n in refs if at < before_word.start()):
                    wait(w, e)
        if pending and not refs and subject is not None:
            for e in pending:  # "..., after X and Y are done, and does ...": the role before
                wait(subject, e)
        elif pending and refs:  # "once both are green, QA runs ...": the role named next
            for e in pending:
                if names[0] != e:
                    wait(names[0], e)
                    first = None
        elif refs and not waiters:
            then = (_ZH_THEN if lang == "zh" else _EN_THEN).search(clause)
            earlier = last_names if then is not None and together else \
                [e for e in (subject if then is not None else first,) if e]
            for e in earlier:
                if names[0] != e:
                    wait(names[0], e)
                    first = None
            if (_ZH_FIRST if lang == "zh" else _EN_FIRST).search(clause) and len(set(names)) == 1:
                first = names[0]
        if refs and _EN_LAST.search(clause):
            last.add(names[0])
        # a list of checks may run on past a comma, to the end of its sentence
        end = re.compile(r"[.;。；!?！？](?:\s|$)").search(text, cursor)
        rest = "" if lang == "zh" or re.search(r"[.;!?]\s*$", clause) else \
            text[cursor:end.start() if end else len(text)]
        check = (_ZH_CHECK if lang == "zh" else _EN_CHECK).search(clause + rest)
        if check is not None and check.start() < len(clause):
            named = [n for at, n in refs if at < check.start()]
            owner = waiters[0] if waiters else (named[-1] if named else subject)
            phrase = check.group(1)
            named_in = [a - check.start(1) for a, _ in refs if a > check.start(1)]
            phrase = phrase[:min(named_in)] if named_in else phrase
            if owner is not None:
                checks[owner] += [c for c in _checks(phrase, lang) if c not in checks[owner]
                                  and not set(c.lower().split()) <= _EN_NOT_NAME]
        # "..., once both builds are green, QA runs": the roles just named, or the one before
        pending = opened or ((last_names if _THEM.search(clause) else [subject])
                             if subject and marker is not None and not refs else [])
        if refs:
            # "the iOS engineer | and the Android engineer build in parallel": a clause that
            # orders nothing joins the roles of the one before it
            orders = sum(map(len, after.values())) > ordered or marker is not None
            last_names = list(dict.fromkeys([*last_names, *names] if plain and not orders
                                            else names))
            together = bool(_TOGETHER.search(clause)) and len(last_names) > 1
            plain = not orders
        if refs and not opened:
            subject = waiters[0] if waiters else names[0]
            if first is not None and subject != first:
                first = None
    for name in last:  # "QA goes last": after every other role
        for other in roles.names:
            wait(name, other)
    first_at = mentions[0][0]
    when = text[:first_at]
    when = re.split(r"\b(?:needs?|requires?|takes?|gets?|uses?|split|goes|go|pair|want)\b|需要|要|"
                    r"由|找|分给|拆成|拆给|交给|就分给", when)[0]
    when = re.sub(r"^(?:(?:correction|update|change of plan|note|okay|ok|so)\s*[:,-]?\s*)*"
                  r"(?:from now on|going forward|in future|every time|whenever|when|for|on|with)?"
                  r"\s*(?:a|an|the|any|every|all)?\s+", "", when.strip(" ,，:：=")) \
        if lang == "en" else re.sub(r"^(?:以后|今后|对于|遇到|碰到|凡是|如果是|像|每次)+", "",
                                    when.strip(" ,，:：="))
    when = when.strip(" ,，:：的=")
    steps = _order(roles.names, after)
    return TeamSkill(memory_id=memory_id, version=version, when=when or text, text=text,
                     roles=[RoleStep(role=name, agent_id=_slug(name) if name.isascii() else name,
                                     after=[_slug(a) if a.isascii() else a for a in after[name]],
                                     checks=checks[name], step=steps[name])
                            for name in roles.names])


def read_skill(item: MemoryItem) -> TeamSkill | None:
    """The team skill a memory states, or None when it names fewer than two roles."""
    return skill_of(item.text, memory_id=item.id, version=item.version)


def _order(names: Sequence[str], after: dict[str, list[str]]) -> dict[str, int]:
    """Each role's step: one more than the latest of the roles it waits for."""
    step: dict[str, int] = {}

    def place(name: str, seen: frozenset[str]) -> int:
        if name in step:
            return step[name]
        waits = [a for a in after.get(name, []) if a not in seen]
        step[name] = 1 + max((place(a, seen | {name}) for a in waits), default=0)
        return step[name]

    for name in names:
        place(name, frozenset())
    return step
