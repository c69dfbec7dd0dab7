"""Is a candidate about the person who said or did it?

A candidate's ``subject`` names who it is about. :func:`misattributed` reads the cited
turns the way a careful reader would: which turns the candidate's words come from (the
subject's own turns first), and in each such turn, who the clause those words sit in is
about: the speaker ("I", "we", "我", or nobody else named before them), the person spoken
to ("you", "你"), or somebody else (a name, "he", "她", "my sister Carol", "小周升 ...").

- What a person says of themselves belongs to that person: in a chat between Priya and
  Marco, Priya's "I just joined the infra team" is not about Marco.
- What a speaker says of somebody else belongs to that somebody, who must be named in the
  cited turns ("My sister Carol moved to Berlin" is about Carol, not the speaker).
- What the assistant or a tool said is the user's only when the user took it up in a later
  turn that is not a question or a refusal ("I'd suggest Redis" - "ok, Redis then").

Candidates about the project or the environment (not a person) are not checked here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .evidence import Clause, Token, clauses_of, content

if TYPE_CHECKING:
    from .base import EpisodeIn

__all__ = ["misattributed", "said_of_another"]

_FIRST = re.compile(r"^(?:i|i'm|i’m|i've|i’ve|i'd|i’d|i'll|me|my|mine|myself|we|we're|"
                    r"we’re|we've|our|ours|us)$", re.IGNORECASE)
_POSSESSIVE = re.compile(r"^(?:my|our)$", re.IGNORECASE)
_SECOND = re.compile(r"^(?:you|you're|you’re|your|yours)$", re.IGNORECASE)
_THIRD = re.compile(r"^(?:he|he's|she|she's|his|her|him)$", re.IGNORECASE)
#: and the plural, which a change of one's own team may use too ("they moved us to pnpm")
_THEY = re.compile(r"^(?:they|they're|they’re|they've|they’ve|their|theirs|them)$", re.IGNORECASE)
_ZH_REF = re.compile(r"我们|咱们|我|咱|你们|您|你|他们|她们|他|她")
_QUESTION = re.compile(r"[?？]\s*$|[吗呢]\s*[?？]?\s*$")
_REFUSAL = re.compile(r"^\W*(?:no|nope|not|don't|never|不|别|没)", re.IGNORECASE)
_NOT_A_PERSON = {"project", "environment"}


def _person(subject: str, episodes: Sequence[EpisodeIn]) -> bool:
    """True when the subject names a person, not the project or the environment."""
    low = subject.strip().lower()
    return low not in _NOT_A_PERSON and not any(
        ep.project and ep.project.lower() == low for ep in episodes)


def _same(a: str, b: str) -> bool:
    return a.strip().lower() == b.strip().lower()


def _refs(clause: Clause, upto: int, names: Sequence[str], *,
          plural: bool = False) -> list[tuple[int, str, str]]:
    """The person references in a clause before offset ``upto``: (offset, kind, word).

    kind is ``first``, ``possessive``, ``second``, ``third`` (with ``plural``, "they"
    and "their" too) or ``name``.
    """
    out: list[tuple[int, str, str]] = []
    text = clause.text
    for m in re.finditer(r"[A-Za-z][A-Za-z'’]*", text):
        at = clause.start + m.start()
        if at >= upto:
            break
        word = m.group()
        if _POSSESSIVE.match(word):
            out.append((at, "possessive", word))
        elif _FIRST.match(word):
            out.append((at, "first", word))
        elif _SECOND.match(word):
            out.append((at, "second", word))
        elif _THIRD.match(word) or (plural and _THEY.match(word)):
            out.append((at, "third", word))
        elif word[0].isupper() and re.search(r"\w", text[:m.start()]):
            out.append((at, "name", word))  # a capital inside a clause: a name
    for m in _ZH_REF.finditer(text):
        at = clause.start + m.start()
        if at < upto:
            ref = m.group()
            kind = ("first" if ref[0] in "我咱" else "second" if ref[0] in "你您" else "third")
            out.append((at, kind, ref))
    for name in names:
        for m in re.finditer(re.escape(name), text):
            at = clause.start + m.start()
            if at < upto:
                out.append((at, "name", name))
    return sorted(out)


def _actor(clause: Clause, aligned: set[str], names: Sequence[str]) -> tuple[str, str]:
    """Who the clause's aligned words are said of: (kind, word) with kind ``speaker``,
    ``addressee``, ``third`` or ``name``."""
    first = min((t.start for t in clause.tokens if t.text in aligned), default=None)
    if first is None:
        return "speaker", ""
    refs = _refs(clause, first, names)
    if refs:
        at, kind, word = refs[-1]
        if kind == "possessive":
            # "my daughter's recital" is the speaker's; "my sister Carol moved" is Carol's
            between = [t for t in content(clause.tokens) if at < t.start < first]
            return ("third", word) if between else ("speaker", word)
        if kind == "first":
            return "speaker", word
        if kind == "second":
            return "addressee", word
        return kind, word
    before = [t for t in content(clause.tokens) if t.start < first and t.text not in aligned]
    # nobody named, but words of its own before what the candidate took: "小周升 P8 了"
    if len(before) >= 2 or any(not t.cjk for t in before):
        return "third", before[0].raw
    return "speaker", ""


def _asks_for_self(clause: Clause, turn_clauses: Sequence[Clause], took: set[str],
                   names: Sequence[str]) -> bool:
    """Whether a clause said to the one spoken to comes after the first clause the candidate
    took words from, that one said of the speaker, and is itself about the speaker ("... so
    when you give me config", "你给我命令的时候")."""
    opening = next((c for c in turn_clauses if took & {t.text for t in content(c.tokens)}), clause)
    if opening is clause or _actor(opening, took, names)[0] != "speaker":
        return False
    return any(kind == "first" for _, kind, _ in _refs(clause, clause.start + len(clause.text), names))


def _aligned(cand: Sequence[Token], turn: Sequence[Token]) -> set[str]:
    return {t.text for t in content(cand)} & {t.text for t in content(turn)}


def misattributed(text: str, subject: str, cited: Sequence[EpisodeIn],
                  batch: Sequence[EpisodeIn]) -> str | None:
    """Why the candidate is not about ``subject``, or None when it is (or is not a person).

    ``cited`` are the turns the candidate cites, oldest first; ``batch`` all the turns of
    the extraction (for who else speaks in the conversation).
    """
    if not _person(subject, batch):
        return None
    speakers = list(dict.fromkeys(ep.speaker for ep in batch if not ep.is_agent))
    names = [n for n in dict.fromkeys([*speakers, subject]) if n != "user" and len(n) > 1]
    subject_tokens = {t.text for t in content(_tokens_of(subject))}
    cand = [t for t in content(_tokens_of(text)) if t.text not in subject_tokens
            and not any(t.cjk and ch in subject for ch in t.text)]
    if not cand:
        return None
    named = subject == "user" or any(_same(ep.speaker, subject) for ep in batch if not ep.is_agent) \
        or any(subject.lower() in ep.text.lower() for ep in cited)
    if not named:
        return f"its subject {subject!r} neither speaks in nor is named by the turns it cites"
    speaks = subject == "user" or any(_same(o.speaker, subject) for o in batch if not o.is_agent)
    own = [ep for ep in cited if not ep.is_agent and _same(ep.speaker, subject)]
    order = own + [ep for ep in cited if ep not in own]
    left = {t.text for t in cand}
    for ep in order:
        turn_clauses = clauses_of(ep.text)
        took = left & {t.text for c in turn_clauses for t in content(c.tokens)}
        if not took:
            continue
        left -= took
        clause = max(turn_clauses, key=lambda c: len(took & {t.text for t in c.tokens}))
        kind, word = _actor(clause, took, names)
        if (kind == "addressee" and _same(ep.speaker, subject)
                and _asks_for_self(clause, turn_clauses, took, names)):
            # "I use Neovim, so when you give me config, lua please": what the one spoken
            # to should do for the speaker qualifies what the speaker says of themselves
            kind, word = "speaker", ""
        if ep.is_agent:
            if not _assented(ep, subject, cited):
                return (f"what it says of {subject!r} comes from the {ep.role or 'agent'}'s turn, "
                        f"which {subject!r} did not take up")
            continue
        if _same(ep.speaker, subject):
            if kind in ("third", "name") and _keeps_reference(text, word):
                continue  # "User's manager is Carla, she likes notes": still said of her
            if kind in ("third", "addressee") or (kind == "name" and not _same(word, subject)):
                return (f"{subject!r} said this of {'someone else' if not word else repr(word)}, "
                        "not of themselves")
            continue
        # another speaker's turn: only what it says of the subject, by name or as "you"
        if kind == "name" and _same(word, subject):
            continue
        if not speaks and subject.lower() in clause.text.lower():
            continue  # "My brother Sam just joined Shopify" is about Sam
        if kind == "addressee" and _addressed(ep, subject, batch):
            continue
        if kind == "third" and subject.lower() in ep.text.lower():
            continue
        if kind == "third" and not speaks and any(subject.lower() in o.text.lower() for o in cited):
            continue  # "he did Boston" of the Kai an earlier cited turn names
        return f"it was {ep.speaker!r}, not {subject!r}, who said this"
    return None


def _keeps_reference(text: str, word: str) -> bool:
    """Whether the candidate's text names whom the clause is about by the same word (a
    name or a pronoun), so that it says it of them, not of its subject."""
    if not word:
        return False
    if _ZH_REF.fullmatch(word):
        return word in text
    return re.search(rf"(?<![\w'’]){re.escape(word)}(?![\w'’])", text, re.IGNORECASE) is not None


def _tokens_of(text: str) -> list[Token]:
    return [t for c in clauses_of(text) for t in c.tokens]


def _assented(agent_turn: EpisodeIn, subject: str, cited: Sequence[EpisodeIn]) -> bool:
    """A later cited turn of the subject that is neither a question nor a refusal."""
    later = cited[cited.index(agent_turn) + 1:]
    return any(not ep.is_agent and _same(ep.speaker, subject)
               and not _QUESTION.search(ep.text.strip()) and not _REFUSAL.match(ep.text)
               for ep in later)


def _addressed(turn: EpisodeIn, subject: str, batch: Sequence[EpisodeIn]) -> bool:
    """True when ``subject`` speaks just before or after ``turn`` (whom "you" means)."""
    at = next((i for i, ep in enumerate(batch) if ep.id == turn.id), None)
    if at is None:
        return False
    near = [batch[i] for i in (at - 1, at + 1) if 0 <= i < len(batch)]
    return any(not ep.is_agent and _same(ep.speaker, subject) for ep in near)


def said_of_another(text: str, known: str) -> bool:
    """Whether ``text`` says what it shares with ``known`` of somebody else, named by a
    pronoun before it in its clause ("Gabe says his team moved to Kotlin 2.0", "a friend
    said they bumped their target to iOS 17", "隔壁组说他们已经升到 Go 1.22 了"): another
    team's change is news, not a new value of ours. False when the two share no word, or
    the clause that holds the shared words is said of the speaker ("our CI moved to
    Buildkite", "my team moved to ...") or of nobody in particular ("React 18.3 landed in
    main"); a pronoun after them may be the new value's ("Alma approves infra PRs now, so
    put her on them")."""
    said = clauses_of(text)
    took = _aligned(_tokens_of(known), [t for c in said for t in c.tokens])
    if not took:
        return False
    clause = max(said, key=lambda c: len(took & {t.text for t in c.tokens}))
    first = min(t.start for t in clause.tokens if t.text in took)
    refs = [r for r in _refs(clause, first, (), plural=True) if r[1] != "name"]
    return bool(refs) and refs[-1][1] == "third"  # "my team moved to ..." is the speaker's own
