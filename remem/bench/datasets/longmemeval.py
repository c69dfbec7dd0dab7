"""LongMemEval (oracle, S or M file) as a :class:`Dataset`: one haystack per question.

Follows the official retrieval protocol: only user turns are indexed; a turn is evidence
when it is flagged ``has_answer``; turn ids are ``<session id>_<position from 1>``.
Abstention questions (id ending ``_abs``) and questions whose evidence is only in
assistant turns are skipped and counted. Turns carry their session's time plus 30 s per
turn. A question is asked at its ``question_date``; where that date comes before the end
of its own haystack, it is asked a minute after the last turn instead, and counted (44
of the 500 questions of the oracle file; ``as_of`` would otherwise hide their evidence).
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from . import Conversation, Dataset, Question, Session, Turn

__all__ = ["INDEXED_ROLES", "TURN_GAP", "load", "parse_date"]

TURN_GAP = timedelta(seconds=30)
INDEXED_ROLES = ("user",)
CATEGORIES = {
    "single-session-user": "a fact the user said in one session",
    "single-session-assistant": "a fact the assistant said in one session",
    "single-session-preference": "a preference of the user",
    "multi-session": "facts spread over several sessions",
    "knowledge-update": "a fact that changed; the latest holds",
    "temporal-reasoning": "when things happened",
}


def parse_date(raw: str) -> datetime:
    """``"2023/05/20 (Sat) 02:21"`` as a UTC datetime."""
    parts = raw.split()
    return datetime.strptime(f"{parts[0]} {parts[-1]}", "%Y/%m/%d %H:%M").replace(
        tzinfo=timezone.utc)


def _sessions(entry: dict[str, Any]) -> list[Session]:
    raw = sorted(zip(entry["haystack_session_ids"], entry["haystack_dates"],
                     entry["haystack_sessions"], strict=True), key=lambda r: parse_date(r[1]))
    seen: Counter[str] = Counter()
    sessions = []
    for sid, date, turns in raw:
        seen[sid] += 1
        if seen[sid] > 1:  # the same session twice in one haystack: keep ids unique
            sid = f"{sid}#{seen[sid]}"
        when = parse_date(date)
        kept = tuple(Turn(f"{sid}_{i + 1}", sid, t["role"], str(t["content"]), when + i * TURN_GAP)
                     for i, t in enumerate(turns) if t["role"] in INDEXED_ROLES)
        if kept:
            sessions.append(Session(sid, when, kept))
    return sessions


def _evidence(entry: dict[str, Any], sessions: list[Session]) -> tuple[list[str], bool]:
    """The evidence turn ids (user turns with ``has_answer``) and whether any turn has one."""
    flagged = {t.id for s in sessions for t in s.turns}
    any_flag = False
    evidence = []
    for sid, turns in zip(entry["haystack_session_ids"], entry["haystack_sessions"], strict=True):
        for i, t in enumerate(turns):
            if t.get("has_answer"):
                any_flag = True
                if t["role"] in INDEXED_ROLES and f"{sid}_{i + 1}" in flagged:
                    evidence.append(f"{sid}_{i + 1}")
    return list(dict.fromkeys(evidence)), any_flag


def load(path: str | Path) -> Dataset:
    """Read a LongMemEval file (a JSON list of question entries) into the shared shape."""
    data = json.loads(Path(path).read_text())
    notes: Counter[str] = Counter()
    conversations = []
    for entry in data:
        qid = str(entry["question_id"])
        sessions = _sessions(entry)
        evidence, any_flag = _evidence(entry, sessions)
        skip = None
        if qid.endswith("_abs"):
            skip = "abstention"
        elif not evidence:
            skip = "evidence only in assistant turns" if any_flag else "no evidence"
        if skip:
            notes[f"skipped: {skip}"] += 1
        last = max((t.time for s in sessions for t in s.turns), default=None)
        asked = parse_date(entry["question_date"])
        if last is not None and asked <= last:
            notes["question_date before the end of its haystack: asked after it"] += 1
            asked = last + timedelta(minutes=1)
        session_of = {t.id: t.session_id for s in sessions for t in s.turns}
        question = Question(
            id=qid, text=str(entry["question"]), category=str(entry["question_type"]),
            answer=str(entry["answer"]), evidence_turns=tuple(evidence),
            evidence_sessions=tuple(dict.fromkeys(session_of[e] for e in evidence)),
            asked_at=asked, skip=skip,
        )
        conversations.append(Conversation(qid, tuple(sessions), (question,)))
    categories = dict(CATEGORIES)
    for conv in conversations:
        categories.setdefault(conv.questions[0].category, conv.questions[0].category)
    return Dataset(
        name="longmemeval", conversations=conversations, categories=categories,
        main_categories=tuple(categories),
        protocol="official retrieval protocol: user turns only; has_answer turns are "
                 "evidence; abstention and assistant-only-evidence questions skipped",
        notes=dict(sorted(notes.items())),
    )
