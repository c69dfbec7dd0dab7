"""How a new statement relates to what is known: the same again, an update, or new.

The pair head of :mod:`remem.extract.heads` reads a known memory and a new statement and
says whether the new one supersedes the old (the same attribute with another value: a
version, a tool, a host, a negation), says it again, or stays compatible. Only the known
memories nearest in meaning are asked, so the cost stays flat as a scope grows; events
and skills are never replaced.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress

import numpy as np

from ..extract.heads import INTENTS, PAIR_LABELS, Reader
from ..model import KINDS, MemoryItem
from ..text import clauses, stems
from .similarity import content_words

__all__ = ["Relation", "candidates", "family", "forget_targets", "relate", "telling"]

_SUPERSEDE, _SAME, _COMPATIBLE, _FORGET, _KEEP = (PAIR_LABELS.index(x) for x in
                                                  ("supersede", "same", "compatible", "forget", "keep"))
_UPDATE, _CORRECTION = INTENTS.index("update"), INTENTS.index("correction")

#: Kinds that never replace or get replaced: what happened stays what happened, and a
#: skill changes only through its procedure.
_FIXED = frozenset({"event", "skill"})


def family(kind: str) -> list[str]:
    """The kinds a memory of ``kind`` may replace or be replaced by: any other durable
    kind (a fact the user called a pitfall can be updated by a project statement), as
    the pair head, not the label, decides what replaces what."""
    if kind in _FIXED:
        return [kind]
    return [k for k in KINDS if k not in _FIXED]


@dataclass(frozen=True)
class Relation:
    """What a new statement does to a known memory, with the head's confidence."""

    action: str  # "supersede", "same", or "unsure": may supersede, for a person to decide
    memory: MemoryItem
    p: float
    similarity: float
    named: int = 0  # how many words that say what they are about the two share
    changed: bool = False  # the statement is worded as a change


def relate(reader: Reader, text: str, known: Sequence[MemoryItem], *, nearest: int = 6,
           min_similarity: float = 0.78, min_p: float = 0.5, sure_p: float = 0.95, named_p: float = 0.85,
           sure_similarity: float = 0.85, same_similarity: float = 0.93,
           certain_p: float = 0.98, brief_p: float = 0.9, tie: float = 0.01,
           compatible_p: float = 0.9, change: bool = False,
           brief: bool = False, kind: str | None = None) -> list[Relation]:
    """The known memories the statement replaces or repeats, strongest first (those it
    only may replace, ``unsure``, last); empty when it is new. A chain of versions
    ("3.10", then "moved to 3.11", "3.11 now") is replaced as a whole.

    A supersession needs the pair head's ``min_p`` when the statement is worded as a
    change (``change``, or the intent head reads an update or a correction), and
    otherwise, for a memory at least ``sure_similarity`` near in meaning, ``sure_p``, or
    ``named_p`` when the two share a word (a name, a tool, a thing). Below that nearness,
    or when the statement is not worded as a change, the two must share a word ("Always
    use pnpm" replaces nothing about deploying), unless the nearest memory is of the
    statement's own ``kind`` and the head is sure, or it shares a word with the statement
    and the head is all but certain (``certain_p``). A ``brief`` change ("switched to
    tabs") means something only as the change of what it is nearest to: the nearest
    memory (or one as near, within ``tie``) is replaced when the head gives ``brief_p``,
    whatever words the two share. A memory that says several things is read clause by
    clause too, and replaced when a statement worded as a change replaces one of them; a
    statement that says several things is read so as well, and a clause of it worded as a
    change changes what that clause names ("the DBA moved prod to MySQL 8.0, so go ahead
    with window functions" replaces "we're on MySQL 5.7, so no window functions")."""
    if not known:
        return []
    order, sims = candidates(reader, text, known, nearest=nearest, min_similarity=min_similarity)
    if not order:
        return []
    named = [_shared(known[i].text, text) for i in order]  # telling words in common
    # the pair head reads only what it could relate: below ``sure_similarity`` and naming
    # nothing of it, a memory is replaced only as the nearest one of a brief change
    # (memories as near as the nearest, within ``tie``, count as the nearest)
    nearest_ones = {n for n, i in enumerate(order) if sims[i] >= sims[order[0]] - tie}
    ask = [n for n, i in enumerate(order)
           if named[n] or sims[i] >= sure_similarity or (brief and n in nearest_ones)]
    if not ask:
        return []
    # a statement that says two things ("the DBA moved prod to MySQL 8.0, so use window
    # functions") is also read clause by clause: one clause may be the change
    parts = _parts(text)
    readings = reader.read([text, *parts], ["user"] * (1 + len(parts)))
    probs_new = readings[0].intent_probs
    # worded as a change ("upgraded", "不对", "no longer"), or a pair the head is sure of
    said = [float(r.intent_probs[_UPDATE] + r.intent_probs[_CORRECTION]) for r in readings]
    said_change = max(said)
    # a clause worded as a change is a change only of what that clause names
    whole_change = change or said[0] >= 0.3
    changing = [p for p, x in zip(parts, said[1:], strict=True) if x >= 0.3]
    # a memory is replaced by a new value of one of its clauses only when the statement is
    # worded as a change ("又强调一遍，缩进两个空格" repeats the rule it reads as replacing), and
    # a clause is short, so the pair head is readier to read it as replaced: near sure
    olds = [known[order[n]].text for n in ask]
    changed = np.array([whole_change or any(_shared(old, p) for p in changing) for old in olds])
    probs = np.zeros((len(olds), len(PAIR_LABELS)), dtype=np.float32)
    if (~changed).any():
        probs[~changed] = reader.relate(list(compress(olds, ~changed)), text, probs_new)
    if changed.any():
        probs[changed] = _by_clause(reader, list(compress(olds, changed)), text, probs_new,
                                    floor=brief_p, news=[(p, r.intent_probs) for p, r in
                                                         zip(parts, readings[1:], strict=True)])
    found: list[Relation] = []
    for n, row, changes in zip(ask, probs, changed.tolist(), strict=True):
        i, shared = order[n], named[n]
        label = int(row.argmax())
        if label == _SAME and _swapped(known[i].text, text):
            # one value for another ("on Thursdays" -> "on Tuesdays", port 7001 -> 7010) is
            # a new value of the same attribute, however alike the rest reads
            label, row = _SUPERSEDE, row.copy()
            row[_SUPERSEDE] += row[_SAME]
        if (label in (_COMPATIBLE, _SAME) and n == 0 and (change or said_change >= 0.5)
                and sims[i] >= sure_similarity and (label == _COMPATIBLE or sims[i] < same_similarity)
                and shared and row[_COMPATIBLE] < compatible_p):
            # said as a change ("auth has a new owner", "bumped the job to Ruby 3.3"), the
            # nearest memory about the same thing is what changed, though the pair head
            # reads the two as compatible (unless it is sure of it, ``compatible_p``:
            # "backend reviews go to Kofi" beside who reviews the frontend), or as the
            # same thing said again
            row = row.copy()
            row[_SUPERSEDE] += row[label]
            label = _SUPERSEDE
        # the nearest memory, of the statement's own kind, that the head is sure it
        # replaces needs no shared word ("got a new machine, a MacBook Air" for the laptop)
        alike = (n == 0 and kind is not None and known[i].kind == kind
                 and sims[i] >= sure_similarity and row[_SUPERSEDE] >= sure_p)
        # and the nearest memory that names what the statement names, which the head is
        # all but certain it replaces, needs no change word ("we killed the gateway")
        certain = n == 0 and shared and row[_SUPERSEDE] >= certain_p
        if label == _SUPERSEDE and not changes and not alike and not certain and (
                sims[i] < sure_similarity or not shared):
            continue  # not said as a change, naming nothing of it: not its new value
        if label == _SUPERSEDE and not changes and row[label] < sure_p and not (
                row[label] >= named_p and shared):
            # not worded as a change: the head must be sure, or both name the thing; a
            # likely one is left for a person to decide
            if row[label] >= min_p and shared:
                found.append(Relation("unsure", known[i], float(row[label]), float(sims[i]), shared))
            continue
        if label == _SUPERSEDE and sims[i] < sure_similarity and not shared and not (
                brief and n in nearest_ones and row[label] >= brief_p):
            continue  # a change of something else entirely ("moved to pnpm" vs the staging host)
        if label == _SAME and (sims[i] < same_similarity or row[label] < 0.6):
            continue  # saying the same thing needs near-identical meaning
        if label in (_SUPERSEDE, _SAME) and row[label] >= min_p:
            found.append(Relation(PAIR_LABELS[label], known[i], float(row[label]), float(sims[i]),
                                  shared, changes))
    # what names the same thing outranks what is only near in meaning: "bumped the runtime
    # to Python 3.12" replaces "the etl runs on Python 3.10", not a note about a flaky test
    sharing = [r for r in found if r.named]
    return sorted(sharing or found, key=lambda r: (r.action == "unsure", -r.p * r.similarity))


def _parts(text: str) -> list[str]:
    """The clauses of a text that says several things, or none."""
    parts = [c.strip(" ,;，；") for c in clauses(text)]
    return parts if len(parts) > 1 else []


def _by_clause(reader: Reader, olds: Sequence[str], text: str, intent_probs: np.ndarray, *,
               floor: float, news: Sequence[tuple[str, np.ndarray]] = ()) -> np.ndarray:
    """The pair head's reading of ``text`` against each known text, or of the clauses
    that most surely replace one another, when they do with at least ``floor``: a memory
    that says two things ("my manager is Ines, she wants a design doc first") reads as
    compatible with a new value of one of them ("after the reorg I report to Kofi")
    though that clause is no longer true, and so does a statement that says two things
    (``news``: its clauses with their intent probabilities)."""
    parts = [_parts(old) for old in olds]
    pieces = [c for p in parts for c in p]
    every = [*olds, *pieces]
    whole = reader.relate(every, text, intent_probs)
    rows = [whole]
    for new, probs in news:  # a clause of the statement reads only what it names
        row = reader.relate(every, new, probs)
        row[[not _shared(old, new) for old in every]] = 0.0
        rows.append(row)
    out = whole[:len(olds)].copy()
    for n in range(len(olds)):
        at = len(olds) + sum(len(p) for p in parts[:n])
        mine = np.concatenate([r[[n, *range(at, at + len(parts[n]))]] for r in rows])[1:]
        if not len(mine):
            continue
        best = mine[int(mine[:, _SUPERSEDE].argmax())]
        if best.argmax() == _SUPERSEDE and best[_SUPERSEDE] >= max(floor, out[n, _SUPERSEDE]):
            out[n] = best
    return out


def candidates(reader: Reader, text: str, known: Sequence[MemoryItem], *, nearest: int = 6,
               min_similarity: float = 0.78, naming: int = 3,
               naming_similarity: float = 0.7) -> tuple[list[int], np.ndarray]:
    """The positions in ``known`` of the memories a new statement is compared with, and
    the similarity of every known memory to it: the ``nearest`` in meaning above
    ``min_similarity``, then up to ``naming`` more that name what it names (a word, a
    version, an entity) above the lower ``naming_similarity``, each part nearest first.
    A short change ("now 1.30", "改成 Kafka 了") reads far in meaning from the memory it
    changes, yet names the same thing."""
    if not known:
        return [], np.zeros(0, dtype=np.float32)
    sims = reader.similarity([m.text for m in known], text)
    ranked = [int(i) for i in np.argsort(-sims, kind="stable")]
    order = [i for i in ranked[:nearest] if sims[i] >= min_similarity]
    mine = _names(text)
    named = [i for i in ranked if i not in order and sims[i] >= naming_similarity
             and mine & _names(known[i].text, known[i].metadata.get("entities", []))]
    return order + named[:naming], sims


def _names(text: str, entities: Sequence[object] = ()) -> set[str]:
    """The telling word stems of a text and its entities."""
    words = content_words(text) | {str(e).lower() for e in entities}
    return {w for w in stems(words - _SUBJECTS) if telling(w)}


#: Words the memory agent itself writes in for the speaker: shared, they say nothing.
_SUBJECTS = frozenset({"user", "users", "用户"})


def _swapped(old: str, new: str) -> bool:
    """Whether the new text is the old with one word put in place of another."""
    a, b = stems(content_words(old) - _SUBJECTS), stems(content_words(new) - _SUBJECTS)
    return len(a - b) == 1 and len(b - a) == 1 and len(a & b) >= 2


def telling(word: str) -> bool:
    """A word that can name a value or a topic: not a short English one ("go", "now", "ok")."""
    return not word.isascii() or len(word) >= 4 or any(c.isdigit() for c in word)


def _shared(a: str, b: str) -> int:
    """How many words that say what they are about two texts share."""
    return len(stems(content_words(a) - _SUBJECTS) & stems(content_words(b) - _SUBJECTS))



def forget_targets(reader: Reader, request: str, known: Sequence[MemoryItem], *,
                   margin: float = 0.03, shortlist_size: int = 16) -> list[MemoryItem]:
    """What a forget request is about, among memories and turns.

    Each candidate is scored by the pair head's reading of the request as forgetting it,
    by how much nearer in meaning it is than the typical candidate, and by whether the
    request's topic (its words, less the wording forget requests share) touches it; the
    pair head reads only the ``shortlist_size`` nearest. The best one is the target when it
    stands out; others that score as high go with it, best first.
    """
    if not known:
        return []
    topic = {w for w in stems(content_words(request) - reader.heads.forget_words) if telling(w)}
    texts = [m.text for m in known]
    sims = reader.similarity(texts, request)
    typical = float(np.median(sims))
    near, shares = [], []
    for m, sim in zip(known, sims, strict=True):
        words = stems(content_words(m.text) | {str(e).lower() for e in m.metadata.get("entities", [])})
        shared = len(topic & words)
        shares.append(shared > 0)
        near.append(3 * (float(sim) - typical) + 0.5 * (shared > 0) + 0.5 * shared / max(1, len(topic)))
    # the pair head reads only the likeliest few: what is far and names nothing of the
    # request cannot outscore them
    shortlist = sorted(range(len(known)), key=lambda i: -near[i])[:shortlist_size]
    listed = set(shortlist)
    reading = reader.read([request], ["user"])[0]
    probs = np.zeros((len(known), len(PAIR_LABELS)), dtype=np.float32)
    if shortlist:
        probs[shortlist] = reader.relate([texts[i] for i in shortlist], request, reading.intent_probs)
    scores = [float(row[_FORGET]) - 0.2 * float(row[_KEEP]) + n if i in listed else -np.inf
              for i, (row, n) in enumerate(zip(probs, near, strict=True))]
    # a request that names its topic is about what says it, when anything does; meaning
    # alone decides only when nothing shares a word with it ("forget where I live")
    ranked = sorted((sc, i, m) for sc, i, m in zip(scores, range(len(known)), known, strict=False)
                    if shares[i] or not any(shares))
    ranked.reverse()
    if not ranked or ranked[0][0] < 0.3:
        return []
    return [m for sc, _, m in ranked if sc >= ranked[0][0] - margin]
