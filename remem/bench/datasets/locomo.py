"""LoCoMo (``locomo10.json``) as a :class:`Dataset`: one conversation per sample.

Reuses the loader of :mod:`remem.bench.locomo` (sessions in time order, evidence ids
repaired where they read unambiguously). Turns carry their session's time plus 30 s per
turn, so their order survives; questions are asked a minute after the last turn.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from .. import locomo
from . import Conversation, Dataset, Question, Session, Turn

__all__ = ["CATEGORIES", "TURN_GAP", "load"]

TURN_GAP = timedelta(seconds=30)
CATEGORIES = {f"{n} {name}": name for n, name in locomo.CATEGORIES.items()}


def _category(number: int) -> str:
    return f"{number} {locomo.CATEGORIES.get(number, 'unknown')}"


def load(path: str | Path) -> Dataset:
    """Read ``locomo10.json`` into the shared shape, counting what was repaired or skipped."""
    conversations = []
    raw = locomo.load(path)
    for conv in raw:
        sessions = []
        for s in conv.sessions:
            sid = f"session_{s.number}"
            turns = tuple(Turn(t.dia_id, sid, t.speaker, t.text, s.when + i * TURN_GAP)
                          for i, t in enumerate(s.turns))
            sessions.append(Session(sid, s.when, turns))
        last = max((t.time for s in sessions for t in s.turns), default=None)
        if last is None:
            continue
        session_of = {t.id: t.session_id for s in sessions for t in s.turns}
        questions = tuple(
            Question(
                id=f"{conv.sample_id}:q{q.index}", text=q.text, category=_category(q.category),
                answer=q.answer, evidence_turns=tuple(q.evidence),
                evidence_sessions=tuple(dict.fromkeys(session_of[e] for e in q.evidence)),
                asked_at=last + timedelta(minutes=1),
            )
            for q in conv.questions
        )
        conversations.append(Conversation(conv.sample_id, tuple(sessions), questions))
    notes = {
        "questions_without_usable_evidence_skipped": sum(c.skipped_questions for c in raw),
        "evidence_ids_skipped": sum(c.skipped_evidence for c in raw),
        "evidence_ids_repaired": sum(c.repaired_evidence for c in raw),
    }
    return Dataset(
        name="locomo", conversations=conversations, categories=CATEGORIES,
        main_categories=tuple(c for c in CATEGORIES if not c.startswith("5 ")),
        protocol="evidence turns (dia_id) of each question ranked among its conversation's "
                 "turns; categories 1-4 averaged together, 5 (adversarial) alone",
        notes=notes,
    )
