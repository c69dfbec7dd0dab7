"""Precision and recall of an extractor on a labelled corpus (``remem bench extract``).

The bundled corpus (``corpus.jsonl`` beside this module) holds English and Chinese turns
from a coding agent's user and from personal chats, and coding-agent event sequences.
One JSON object per line, a *case*::

    {"id": "en-chat-2", "lang": "en", "time": "2024-05-08T14:00:00+00:00",
     "project": "shop-api",                       # optional
     "episodes": [{"role": "Bob", "text": "I moved to Lisbon last month."},
                  {"event": {"type": "tool_call", "command": "pytest", "exit_code": 0}}],
     "expect": [{"kind": "profile", "keys": ["Lisbon"], "subject": "Bob",
                 "date": ["2024-04-01", "2024-04-30"]}]}     # date optional

Each case's expected memories are what a careful person would keep from it; many cases
expect nothing (small talk, questions, one-off requests). Labelling guide: a standing
instruction of the user ("always ...", "never ...", "I prefer ...") is a ``preference``;
how the team or the code base does things ("we use black", "tests go in tests/", "use
snake_case") is a ``convention``; the stack and its commands are ``project``.

Cases carry a ``split``: ``dev`` cases were read while the rules were written (their
scores are in-sample); ``heldout`` cases were written afterwards, committed before the rules
first ran on them, and never used to change a rule, so their scores are the honest ones.
When held-out failures are used to change the rules, those cases become ``dev`` and a new
held-out set is written.

A predicted candidate matches an expected memory of its case when the kinds agree and
every key appears in the candidate's text (case-insensitive); each side matches at most
once (a maximum matching). Subjects and dates are scored on the matched pairs. The same
figures with kinds ignored (``any_kind``) tell a memory filed under a neighbouring kind
("always use pathlib" as a convention, not a preference) from one not kept at all.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from datetime import date, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from ..model import AgentEvent, render_event
from .base import Candidate, EpisodeIn, Extractor, extract_checked

__all__ = ["bundled_corpus", "episodes_of", "load_corpus", "match", "run"]

_EVENT = TypeAdapter(AgentEvent)


def bundled_corpus() -> Path:
    """The path of the corpus shipped with remem."""
    return Path(str(resources.files("remem.extract").joinpath("corpus.jsonl")))


def load_corpus(path: str | Path | None = None) -> list[dict[str, Any]]:
    """The cases of a corpus file (the bundled one by default)."""
    text = Path(path or bundled_corpus()).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def episodes_of(case: dict[str, Any]) -> list[EpisodeIn]:
    """A case's episodes as an extractor sees them; ids are ``<case id>#<n>``."""
    out = []
    default = datetime.fromisoformat(case["time"]) if case.get("time") else None
    for n, raw in enumerate(case["episodes"]):
        eid = f"{case['id']}#{n}"
        if "event" in raw:
            event = _EVENT.validate_python(raw["event"])
            out.append(EpisodeIn(id=eid, text=render_event(event), kind="event", role="tool",
                                 event=event, event_time=event.timestamp or default,
                                 session_id=event.session_id, project=case.get("project")))
        else:
            when = datetime.fromisoformat(raw["time"]) if raw.get("time") else default
            out.append(EpisodeIn(id=eid, text=raw["text"], role=raw.get("role"),
                                 event_time=when, session_id=case["id"],
                                 project=case.get("project")))
    return out


def _fits(gold: dict[str, Any], cand: Candidate, any_kind: bool) -> bool:
    text = cand.text.casefold()
    return (any_kind or cand.kind == gold["kind"]) and all(k.casefold() in text for k in gold["keys"])


def match(gold: Sequence[dict[str, Any]], predicted: Sequence[Candidate], *,
          any_kind: bool = False) -> dict[int, int]:
    """A maximum matching of expected memories to candidates: {gold index: candidate index}.
    ``any_kind``: a candidate may match whatever kind it was given."""
    owner: dict[int, int] = {}  # candidate -> gold

    def place(g: int, seen: set[int]) -> bool:
        for p, cand in enumerate(predicted):
            if p in seen or not _fits(gold[g], cand, any_kind):
                continue
            seen.add(p)
            if p not in owner or place(owner[p], seen):
                owner[p] = g
                return True
        return False

    for g in range(len(gold)):
        place(g, set())
    return {g: p for p, g in owner.items()}


def _date_ok(want: str | list[str], got: datetime | None) -> bool:
    if got is None:
        return False
    day = got.date()
    if isinstance(want, str):
        return day == date.fromisoformat(want)
    return date.fromisoformat(want[0]) <= day <= date.fromisoformat(want[1])


def _ratio(a: int, b: int) -> float:
    return round(a / b, 4) if b else 0.0


def _scores(gold: int, predicted: int, matched_gold: int, matched_pred: int) -> dict[str, Any]:
    p, r = _ratio(matched_pred, predicted), _ratio(matched_gold, gold)
    return {"precision": p, "recall": r, "f1": round(2 * p * r / (p + r), 4) if p + r else 0.0,
            "gold": gold, "predicted": predicted, "matched": matched_gold}


def run(corpus_path: str | Path | None = None, *, extractor: Extractor | None = None
        ) -> dict[str, Any]:
    """Score ``extractor`` (the rules by default) on a corpus (the bundled one by default).

    Returns overall, per-language, per-input (turns or events) and per-kind precision,
    recall and F1; subject and date accuracy on the matches; and the false positives,
    misses and grounding refusals, so every figure can be checked case by case.
    """
    if extractor is None:
        from .rules import RulesExtractor
        extractor = RulesExtractor()
    cases = load_corpus(corpus_path)
    started = time.perf_counter()
    tally: dict[str, Counter[str]] = {}

    def count(group: str, **values: int) -> None:
        tally.setdefault(group, Counter()).update(values)

    subjects = [0, 0]
    dates = [0, 0]
    false_pos: list[dict[str, Any]] = []
    misses: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    n_turns = n_events = 0
    for case in cases:
        episodes = episodes_of(case)
        n_events += sum(1 for e in episodes if e.kind == "event")
        n_turns += sum(1 for e in episodes if e.kind == "episode")
        result = extract_checked(extractor, episodes)
        # a brief statement proposed only as the change of a known memory is no memory
        # alone: a case holds no known memory for it to change
        predicted = [c for c in result.candidates if not c.replaces_only]
        gold = case["expect"]
        pairs = match(gold, predicted)
        source = "events" if any(e.kind == "event" for e in episodes) else "turns"
        split = case.get("split", "dev")
        for group in ("all", f"lang:{case['lang']}", f"input:{source}", f"split:{split}",
                      f"split-lang:{split}/{case['lang']}"):
            count(group, gold=len(gold), predicted=len(predicted), mg=len(pairs), mp=len(pairs))
        loose = len(match(gold, predicted, any_kind=True))
        count("any-kind", gold=len(gold), predicted=len(predicted), mg=loose, mp=loose)
        for g, want in enumerate(gold):
            hit = g in pairs
            count(f"kind:{want['kind']}", gold=1, mg=int(hit))
            if not hit:
                misses.append({"case": case["id"], "kind": want["kind"], "keys": want["keys"],
                               "subject": want.get("subject")})
                continue
            cand = predicted[pairs[g]]
            if want.get("subject") is not None:  # a project fact names no one
                subjects[0] += int(cand.subject == want["subject"])
                subjects[1] += 1
            if "date" in want:
                dates[0] += int(_date_ok(want["date"], cand.event_time))
                dates[1] += 1
        matched = set(pairs.values())
        for p, cand in enumerate(predicted):
            count(f"kind:{cand.kind}", predicted=1, mp=int(p in matched))
            if p not in matched:
                false_pos.append({"case": case["id"], "kind": cand.kind, "text": cand.text,
                                  "rule": cand.rule})
        refused += [{"case": case["id"], "kind": r.candidate.kind, "text": r.candidate.text,
                     "reason": r.reason} for r in result.rejected]

    def scores(group: str) -> dict[str, Any]:
        c = tally.get(group, Counter())
        return _scores(c["gold"], c["predicted"], c["mg"], c["mp"])

    return {
        "corpus": str(corpus_path or bundled_corpus()),
        "cases": len(cases), "turns": n_turns, "events": n_events,
        **scores("all"),
        # the same matching with kinds ignored: what was kept, whatever it was filed as
        "any_kind": scores("any-kind"),
        "subject_accuracy": _ratio(*subjects), "date_accuracy": _ratio(*dates),
        "by_language": {k.split(":")[1]: scores(k) for k in sorted(tally) if k.startswith("lang:")},
        "by_input": {k.split(":")[1]: scores(k) for k in sorted(tally) if k.startswith("input:")},
        "by_kind": {k.split(":")[1]: scores(k) for k in sorted(tally) if k.startswith("kind:")},
        "by_split": {k.split(":")[1]: scores(k) for k in sorted(
            (k for k in tally if k.startswith(("split:", "split-lang:"))),
            key=lambda k: k.split(":")[1])},
        "rejected": len(refused),
        "seconds": round(time.perf_counter() - started, 3),
        "false_positives": false_pos, "misses": misses, "refusals": refused,
    }
