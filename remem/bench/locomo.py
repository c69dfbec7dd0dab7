"""LoCoMo evidence recall: how often the turns that hold an answer are retrieved.

Each conversation goes into its own scope, session by session in time order, with the
session's timestamp and each turn's ``dia_id`` in its metadata (as ``turn_id``); every
question is asked; recall@k is the share of a question's evidence turns cited by the top k hits.
recall@Ntokens is the share cited by the distinct turns of the hits (50 asked for), taken
in rank order while their texts fit in N tokens together (``remem.text.estimate_tokens``).

Categories in ``locomo10.json``: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
5 adversarial. Categories 1-4 are reported together; 5 on its own.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..config import AgentConfig, Config, RetrievalConfig
from ..text import estimate_tokens
from .baselines import System, make_system
from .datasets import parse_selection
from .metrics import budget_cut, flatten
from .progress import Reporter, save_json
from .stats import percentile

__all__ = ["CATEGORIES", "Conversation", "Question", "load", "parse_evidence", "run"]

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
KS = (5, 10, 20)
BUDGETS = (500, 1000, 2000)
_DIA = re.compile(r"D:?(\d+):0*(\d+)")


@dataclass
class Turn:
    dia_id: str
    speaker: str
    text: str


@dataclass
class Session:
    number: int
    when: datetime
    turns: list[Turn]


@dataclass
class Question:
    text: str
    category: int
    evidence: list[str]
    answer: str = ""
    index: int = 0


@dataclass
class Conversation:
    sample_id: str
    sessions: list[Session]
    questions: list[Question]
    skipped_evidence: int = 0
    skipped_questions: int = 0
    repaired_evidence: int = 0
    turn_ids: set[str] = field(default_factory=set)


def parse_session_time(raw: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as a UTC datetime."""
    return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def parse_evidence(raw: list[str], turn_ids: set[str]) -> tuple[list[str], int, int]:
    """Evidence ids normalised to ``D<session>:<turn>``: (valid ids, skipped, repaired).

    Repairs what reads unambiguously (``"D8:6; D9:17"``, ``"D:11:26"``, ``"D30:05"``);
    skips what does not (``"D"``) and ids past the end of a session.
    """
    out: list[str] = []
    skipped = repaired = 0
    for item in raw:
        found = _DIA.findall(item)
        if not found:
            skipped += 1
            continue
        for session, turn in found:
            ident = f"D{int(session)}:{int(turn)}"
            if ident != item.strip():
                repaired += 1
            if ident in turn_ids:
                out.append(ident)
            else:
                skipped += 1
    return list(dict.fromkeys(out)), skipped, repaired


def turn_text(turn: dict[str, Any]) -> str:
    """A turn's text; a shared photo is described by its caption, as a chat would show it."""
    text = turn.get("text", "")
    if turn.get("blip_caption"):
        text = f"{text} [shares a photo: {turn['blip_caption']}]"
    return text


def load(path: str | Path) -> list[Conversation]:
    """Read ``locomo10.json``: sessions in time order and questions with repaired evidence."""
    data = json.loads(Path(path).read_text())
    conversations = []
    for sample in data:
        conv = sample["conversation"]
        sessions = []
        for key in conv:
            m = re.fullmatch(r"session_(\d+)", key)
            if m and conv[key]:
                turns = [Turn(t["dia_id"], t["speaker"], turn_text(t)) for t in conv[key]]
                when = parse_session_time(conv[f"{key}_date_time"])
                sessions.append(Session(int(m.group(1)), when, turns))
        sessions.sort(key=lambda s: (s.when, s.number))
        c = Conversation(sample["sample_id"], sessions, [])
        c.turn_ids = {t.dia_id for s in sessions for t in s.turns}
        for index, qa in enumerate(sample["qa"]):
            evidence, skipped, repaired = parse_evidence(qa.get("evidence", []), c.turn_ids)
            c.skipped_evidence += skipped
            c.repaired_evidence += repaired
            if not evidence:
                c.skipped_questions += 1
                continue
            # category 5 (adversarial) has ``adversarial_answer`` instead of ``answer``
            answer = str(qa.get("answer", qa.get("adversarial_answer", "")))
            c.questions.append(
                Question(qa["question"], int(qa["category"]), evidence, answer, index))
        conversations.append(c)
    return conversations


def _within(ranked: list[list[str]], evidence: list[str], tokens: dict[str, int],
            budget: int) -> float:
    """Evidence recall of the distinct turns the hits cite, taken in rank order until
    their texts no longer fit in ``budget`` tokens."""
    kept = budget_cut(flatten(ranked), lambda t: tokens.get(t, 0), budget)
    return sum(1 for e in evidence if e in set(kept)) / len(evidence)


def _recall(ranked: list[list[str]], evidence: list[str], k: int) -> float:
    seen = {d for hit in ranked[:k] for d in hit}
    return sum(1 for e in evidence if e in seen) / len(evidence)


def _summary(rows: list[tuple[int, dict[int, float]]]) -> dict[str, Any]:
    def mean(values: list[float]) -> float:
        return round(sum(values) / len(values), 4) if values else 0.0

    main = [r for c, r in rows if c != 5]
    out: dict[str, Any] = {f"recall@{k}": mean([r[k] for r in main]) for k in KS}
    out.update({f"recall@{b}tokens": mean([r[b] for r in main]) for b in BUDGETS})
    out["questions"] = len(main)
    out["by_category"] = {
        f"{c} {name}": {**{f"recall@{k}": mean([r[k] for cc, r in rows if cc == c]) for k in KS},
                        "questions": sum(1 for cc, _ in rows if cc == c)}
        for c, name in CATEGORIES.items()
    }
    return out


def run(data: str | Path, system: str = "remem", limit: int | None = None, progress: bool = True,
        make: Callable[..., System] = make_system,
        retrieval: dict[str, Any] | None = None, store: str | Path | None = None,
        extractor: str = "rules", out: str | Path | None = None, fulltext: str | None = None,
        reporter: Callable[[str, int], Reporter] = Reporter,
        conversations: str | None = None) -> dict[str, Any]:
    """Ingest each conversation, ask every question, and return recall and speed figures.

    ``retrieval`` overrides remem's retrieval settings (``RetrievalConfig`` fields);
    ``extractor`` is remem's memory agent (``"rules"`` or ``"off"``).
    ``store`` (remem only) keeps the ingested store in that folder; when the folder
    already holds one, ingestion is skipped and only the questions are asked, so that
    retrieval settings can be compared on the same store in a minute.
    ``conversations`` picks conversations by position (``"5-9"``) before ``limit``;
    with a kept ``store`` holding all ten, any split is asked of the same store.
    ``out`` gets the figures so far after each conversation (``"partial": true`` until
    the last one); ``reporter`` builds the progress display (stderr) when ``progress``.
    ``fulltext`` picks how a SQLite store ranks full text (``"index"``, the default, or
    ``"fts5"``, its ``bm25()`` in SQL), to compare the two on one kept store.
    """
    chosen = load(data)
    split = conversations
    if split is not None:
        chosen = [chosen[i] for i in parse_selection(split, len(chosen))]
    conversations = chosen[:limit]
    rows: list[tuple[int, dict[int, float]]] = []
    search_ms: list[float] = []
    turns = 0
    add_s = ingest_s = 0.0
    if store is not None and system != "remem":
        raise ValueError("--store keeps a remem store; it does not apply to the baselines")
    reuse = store is not None and (Path(store) / "remem.db").exists()
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as tmp:
        config = Config(retrieval=RetrievalConfig(**(retrieval or {})),
                        agent=AgentConfig(extractor=extractor))
        sys_ = make(system, Path(store or tmp), config=config)
        engine_of = getattr(getattr(sys_, "memory", None), "store", None)
        if fulltext is not None and hasattr(engine_of, "fulltext_engine"):
            engine_of.fulltext_engine = fulltext  # type: ignore[union-attr]
        shown = reporter("LoCoMo", len(conversations)) if progress else None
        try:
            for done, conv in enumerate(conversations, 1):
                start = time.perf_counter()
                for session in [] if reuse else conv.sessions:
                    turns_in = [(t.speaker, t.text, {"turn_id": t.dia_id}) for t in session.turns]
                    sys_.add_session(conv.sample_id, f"session_{session.number}", session.when,
                                     turns_in)
                    turns += len(session.turns)
                add_s += time.perf_counter() - start
                sys_.flush()
                ingest_s += time.perf_counter() - start
                sizes = {t.dia_id: estimate_tokens(t.text) for s in conv.sessions for t in s.turns}
                for q in conv.questions:
                    t0 = time.perf_counter()
                    ranked = sys_.search(conv.sample_id, q.text, 50)
                    search_ms.append((time.perf_counter() - t0) * 1000)
                    rows.append((q.category, {k: _recall(ranked, q.evidence, k) for k in KS}
                                 | {b: _within(ranked, q.evidence, sizes, b) for b in BUDGETS}))
                if out is not None and done < len(conversations):
                    save_json(out, _figures(rows, conversations[:done], system, reuse, turns,
                                            search_ms, add_s, ingest_s, extractor)
                              | {"partial": True, "of_conversations": len(conversations)})
                if shown is not None:
                    shown.advance(note=conv.sample_id)
        finally:
            if shown is not None:
                shown.close()
            sys_.close()
    result = _figures(rows, conversations, system, reuse, turns, search_ms, add_s, ingest_s,
                      extractor)
    if fulltext is not None:
        result["fulltext"] = fulltext
    if out is not None:
        save_json(out, result | {"partial": False, "of_conversations": len(conversations)})
    return result


def _figures(rows: list[tuple[int, dict[int, float]]], conversations: list[Conversation],
             system: str, reuse: bool, turns: int, search_ms: list[float], add_s: float,
             ingest_s: float, extractor: str) -> dict[str, Any]:
    """The result of a run over ``conversations`` (all of them, or those done so far)."""
    result = _summary(rows)
    result.update({
        "system": system,
        "conversations": len(conversations),
        "reused_store": reuse,
        "turns": turns,
        "search_ms": {"p50": round(percentile(search_ms, 50), 2),
                      "p95": round(percentile(search_ms, 95), 2)},
        "ingest_turns_per_s": round(turns / add_s, 1) if turns else None,
        "ingest_embedded_turns_per_s": round(turns / ingest_s, 1) if turns else None,
        "skipped_questions": sum(c.skipped_questions for c in conversations),
        "skipped_evidence_ids": sum(c.skipped_evidence for c in conversations),
        "repaired_evidence_ids": sum(c.repaired_evidence for c in conversations),
        "category_mapping": {str(k): v for k, v in CATEGORIES.items()},
        "extractor": extractor if system == "remem" else None,
        "conversation_ids": [c.sample_id for c in conversations],
    })
    return result
