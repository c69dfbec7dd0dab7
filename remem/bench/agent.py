"""The memory agent on a real conversation: what it derives, whether replaying the
conversation adds anything, and whether each memory is about the right person.

One LoCoMo conversation is added turn by turn, session by session, with extraction on;
then added again. The subject check compares each derived memory's ``subject`` with the
speakers of the turns it cites: in a chat between two people stored under one user, what
one says about themselves must not be filed under the other. A sample is printed for a
reader to check by hand.
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path
from typing import Any

from ..config import Config
from ..memory import Memory
from .locomo import load

__all__ = ["run"]


def _ingest(m: Memory, conv: Any) -> None:
    for session in conv.sessions:
        for turn in session.turns:
            m.add([{"speaker": turn.speaker, "content": turn.text,
                    "metadata": {"turn_id": turn.dia_id}}],
                  user_id=conv.sample_id, session_id=f"session_{session.number}",
                  timestamp=session.when)
    m.flush()


def run(data: str | Path, conversation: int = 0, sample: int = 50, seed: int = 0,
        config: Config | None = None) -> dict[str, Any]:
    """Ingest one conversation twice; return memory counts, the subject agreement and a
    random sample of memories with their cited turns."""
    conv = load(data)[conversation]
    with tempfile.TemporaryDirectory(prefix="remem-bench-agent-") as tmp:
        with Memory(Path(tmp) / "remem.db", config=config or Config.from_env()) as m:
            start = time.perf_counter()
            _ingest(m, conv)
            first_s = time.perf_counter() - start
            first = m.stats()
            _ingest(m, conv)
            second = m.stats()
            memories = list(m.export(user_id=conv.sample_id, include_episodes=False))
            speakers = {e.id: e.role for e in m.export(user_id=conv.sample_id)
                        if e.is_episode}
    rows = []
    for mem in memories:
        said_by = sorted({speakers.get(s) or "?" for s in mem.sources})
        rows.append({"id": mem.id, "kind": mem.kind, "subject": mem.subject, "said_by": said_by,
                     "text": mem.text, "status": mem.status})
    agree = [r for r in rows if r["subject"] in r["said_by"]]
    picked = random.Random(seed).sample(rows, min(sample, len(rows)))
    by_kind: dict[str, int] = {}
    for r in rows:
        by_kind[r["kind"]] = by_kind.get(r["kind"], 0) + 1
    return {
        "conversation": conv.sample_id,
        "turns": sum(len(s.turns) for s in conv.sessions),
        "ingest_s": round(first_s, 1),
        "memories_after_first_add": first.memories,
        "memories_after_second_add": second.memories,
        "episodes_after_first_add": first.episodes,
        "episodes_after_second_add": second.episodes,
        "by_kind": by_kind,
        "subject_is_a_speaker_of_the_cited_turns": round(len(agree) / len(rows), 3) if rows else None,
        "sample": picked,
    }
