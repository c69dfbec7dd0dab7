"""What extraction takes and gives: episodes in, typed candidate memories out.

An :class:`Extractor` turns a batch of episodes (conversation turns and agent events,
oldest first) into :class:`Candidate` memories. Candidates are only proposals: the memory
agent compares them with what is already known before anything is written.

:func:`ground` checks that each candidate is supported by the episodes it cites (most of
its content words appear in them); the ones that are not come back as :class:`Rejected`
with the reason, so nothing an extractor proposed disappears without a trace.
:func:`extract_checked` runs an extractor and the check together.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from ..embed.base import Embedder
from ..model import (
    KINDS,
    AgentEvent,
    Candidate,
    ErrorEvent,
    FileEdit,
    MemoryItem,
    TaskEnd,
    TaskStart,
    ToolCall,
)
from ..text import STOPWORDS, stem, words
from .evidence import flipped_negation, missing_values

__all__ = [
    "KINDS",
    "Candidate",
    "EpisodeIn",
    "Event",
    "Extraction",
    "Extractor",
    "Rejected",
    "extract_checked",
    "ground",
]

logger = logging.getLogger(__name__)

Event = ToolCall | FileEdit | ErrorEvent | TaskStart | TaskEnd

#: Roles that mean "the person using the agent", whose name we do not know.
USER_ROLES = frozenset({"user", "human", "me", "customer"})
#: Roles that mean the agent itself, or a tool speaking for it.
AGENT_ROLES = frozenset({"assistant", "ai", "agent", "bot", "model", "system", "tool"})

_EVENT = TypeAdapter(AgentEvent)


@dataclass(frozen=True)
class EpisodeIn:
    """One episode as an extractor sees it.

    ``kind`` is ``"episode"`` for a turn and ``"event"`` for an agent event (then
    ``event`` holds the parsed event and ``text`` its rendering). ``role`` is the speaker:
    a role such as ``"user"`` or ``"assistant"``, or a name such as ``"Bob"``.
    """

    id: str
    text: str
    kind: Literal["episode", "event"] = "episode"
    role: str | None = None
    event: Event | None = None
    event_time: datetime | None = None
    session_id: str | None = None
    project: str | None = None

    @classmethod
    def from_item(cls, item: MemoryItem) -> EpisodeIn:
        """The extractor's view of a stored episode (kind ``episode`` or ``event``)."""
        event = None
        if item.kind == "event" and isinstance(item.metadata.get("event"), dict):
            event = _EVENT.validate_python(item.metadata["event"])
        return cls(id=item.id, text=item.text, kind="event" if item.kind == "event" else "episode",
                   role=item.role, event=event, event_time=item.event_time,
                   session_id=item.session_id, project=item.project)

    @property
    def is_agent(self) -> bool:
        """True when the agent (or a tool) said this, not a person."""
        return self.kind == "event" or (self.role or "").lower() in AGENT_ROLES

    @property
    def speaker(self) -> str:
        """Who said it, as a subject: the speaker's name, or ``"user"`` for the user role."""
        role = (self.role or "user").strip()
        return "user" if role.lower() in USER_ROLES else role


class Rejected(BaseModel):
    """A candidate the grounding check refused, and why."""

    model_config = ConfigDict(frozen=True)

    candidate: Candidate
    reason: str


class Extraction(BaseModel):
    """An extractor's result after grounding: what passed and what was refused."""

    model_config = ConfigDict(frozen=True)

    candidates: list[Candidate] = Field(default_factory=list)
    rejected: list[Rejected] = Field(default_factory=list)


class Extractor(Protocol):
    """Turns episodes into candidate memories.

    ``episodes`` come oldest first; events are paired (an error with its fix, the files of
    a task) within one ``session_id``. Implementations must cite their sources in
    ``source_ids`` and never raise on odd text: what they cannot read yields nothing.
    """

    def extract(self, episodes: Sequence[EpisodeIn]) -> list[Candidate]: ...


# --- grounding --------------------------------------------------------------------------

# Words the extractors' own wording adds around what was said ("User prefers ...",
# "Files for ...: ...", "`x` is not available here; use `y`"). They are not evidence either
# way, so the check ignores them together with ordinary function words.
TEMPLATE_TEXT = (
    "user users prefers likes loves enjoys adores hates dislikes detests loathes does doesn't "
    "would rather wants is are has have been fan favourite favorite passion lives moved works "
    "comes grew up based from decided decision agreed convention chose went "
    "files for to run then outcome steps is not available here use instead e g fails failed "
    "fixed by running first after before project environment retry retried error fix "
    "their them they household "
    "用户 相关的文件 结果 先运行 然后 运行 决定 时出错 改用 可以 用 失败 报错 再 修复"
)
_TEMPLATE = frozenset(words(TEMPLATE_TEXT))
# Dates an extractor wrote in place of "yesterday" or "上周": checked through event_time.
_DATE_WORDS = re.compile(
    r"\b(?:on|in|around)(?: the week of| the weekend of)?(?: \d{1,2})? "
    r"(?:January|February|March|April|May|June|July|August|September|October|November|"
    r"December) \d{4}\b|\bin \d{4}\b|\d{4}年(?:\d{1,2}月(?:\d{1,2}日)?)?(?:那周|那个周末|前后)?")
# The numbers of a list of steps an extractor wrote ("1. build the image; 2. push ..."):
# its own wording, not a value its sources must state.
_ENUMERATORS = re.compile(r"(?:^|(?<=[;；]))\s*\d{1,2}\.\s")
_CJK_RUN = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
#: How close in meaning (cosine of the bundled embedder's vectors) a rewrite must be to a
#: cited turn to be kept when it shares too few words with it; set on the dev split.
MIN_SIMILARITY = 0.95


def _content(text: str) -> list[str]:
    return [w for w in words(text) if w not in STOPWORDS and w not in _TEMPLATE]


def support(candidate: Candidate, sources: Sequence[str]) -> tuple[float, list[str]]:
    """How much of the candidate's content its sources back: (share, missing words).

    Latin words count one each; CJK text counts by character, a character being backed
    when one of the candidate's bigrams around it appears in a source (so "李娜在基础架构组"
    is backed by "我转到基础架构组" except for the name, which the subject accounts for).
    """
    text = _DATE_WORDS.sub(" ", candidate.text) if candidate.event_time else candidate.text
    latin = [w for w in words(_CJK_RUN.sub(" ", text)) if w not in STOPWORDS and w not in _TEMPLATE]
    runs = _CJK_RUN.findall(text)
    if not latin and not runs:
        return 0.0, []
    known = {stem(w) for src in sources for w in words(src)}
    known |= {stem(w) for w in words(candidate.subject)}
    missing = [w for w in latin if stem(w) not in known]
    total = len(latin)
    for run in runs:
        backed = [False] * len(run)
        for i in range(len(run)):
            gram = run[i:i + 2] if len(run) > 1 else run
            if gram in known or gram in _TEMPLATE:
                backed[i] = True
                if i + 1 < len(run):
                    backed[i + 1] = True
        for i, ch in enumerate(run):
            if ch in candidate.subject:
                backed[i] = True
        total += len(run)
        missing.extend(ch for ch, ok in zip(run, backed, strict=True) if not ok)
    if total == 0:
        return 0.0, []
    return 1 - len(missing) / total, missing


def ground(candidates: Sequence[Candidate], episodes: Sequence[EpisodeIn], *,
           min_support: float = 0.6, embedder: Embedder | None = None,
           min_similarity: float = MIN_SIMILARITY, attribution: bool = True) -> Extraction:
    """Keep the candidates their cited episodes support; refuse the others with a reason.

    A candidate is supported when at least ``min_support`` of its content words (CJK as
    character bigrams) appear in the texts of the episodes in its ``source_ids``. Function
    words, the extractors' own wording and the speaker's name do not count. With an
    ``embedder``, a rewrite that shares fewer words (but at least half of ``min_support``)
    is kept when it is as close in meaning to a cited turn as ``min_similarity``.

    Whatever the share, a candidate is refused when it states a number or a name its
    sources do not (:func:`~remem.extract.evidence.missing_values`), turns a negated
    statement into a plain one or back (:func:`~remem.extract.evidence.flipped_negation`),
    or, with ``attribution``, is about someone other than who said or did it
    (:func:`~remem.extract.attribution.misattributed`).

    Example::

        result = ground(extractor.extract(episodes), episodes)
        for r in result.rejected:
            print(r.reason)
    """
    from .attribution import misattributed

    texts = {e.id: e.text for e in episodes}
    by_id = {e.id: e for e in episodes}
    kept: list[Candidate] = []
    rejected: list[Rejected] = []
    for cand in candidates:
        if not cand.source_ids:
            rejected.append(Rejected(candidate=cand, reason="cites no source episode"))
            continue
        unknown = [i for i in cand.source_ids if i not in texts]
        if unknown:
            rejected.append(Rejected(candidate=cand, reason=(
                f"cites episode(s) not in this batch: {', '.join(unknown)}")))
            continue
        sources = [texts[i] for i in cand.source_ids]
        speakers = frozenset(w for e in episodes if not e.is_agent for w in words(e.speaker))
        reason = _unsupported(cand, sources, min_support, embedder, min_similarity, speakers)
        if reason is None and attribution:
            cited = [by_id[i] for i in dict.fromkeys(cand.source_ids)]
            cited.sort(key=lambda e: list(by_id).index(e.id))
            wrong = misattributed(cand.text, cand.subject, cited, episodes)
            reason = f"wrong subject: {wrong}" if wrong else None
        if reason is None:
            kept.append(cand)
        else:
            rejected.append(Rejected(candidate=cand, reason=reason))
    return Extraction(candidates=kept, rejected=rejected)


def _unsupported(cand: Candidate, sources: list[str], min_support: float,
                 embedder: Embedder | None, min_similarity: float,
                 speakers: frozenset[str] = frozenset()) -> str | None:
    """Why the sources do not back the candidate's content, or None. The names of the
    batch's ``speakers`` are known without being said ("Bob's brother" in Bob's turn)."""
    share, missing = support(cand, sources)
    if share == 0.0 and not missing:
        return "has no content words to check"
    if share < min_support and not _close(cand.text, sources, share, min_support, embedder,
                                          min_similarity):
        return (f"not supported by its sources: {share:.0%} of its content words appear "
                f"there (need {min_support:.0%}); missing: {', '.join(missing[:8])}")
    text = _DATE_WORDS.sub(" ", cand.text) if cand.event_time else cand.text
    text = _ENUMERATORS.sub(" ", text)
    values = missing_values(text, sources, cand.subject, _TEMPLATE | speakers)
    if values:
        return f"not supported by its sources: they do not state {', '.join(values[:8])}"
    flipped = flipped_negation(text, sources, cand.subject, _TEMPLATE)
    if flipped:
        return f"not supported by its sources: {flipped!r} reverses what they say"
    return None


def _close(text: str, sources: list[str], share: float, min_support: float,
           embedder: Embedder | None, min_similarity: float) -> bool:
    """True when a rewrite that shares too few words is as close in meaning to a source
    as ``min_similarity`` (and shares at least half the words needed)."""
    if embedder is None or share < min_support / 2:
        return False
    vectors = embedder.embed_passages([text, *sources])
    return float(max(vectors[1:] @ vectors[0])) >= min_similarity


def extract_checked(extractor: Extractor, episodes: Sequence[EpisodeIn], *,
                    min_support: float = 0.6, embedder: Embedder | None = None) -> Extraction:
    """Run ``extractor`` on ``episodes`` and :func:`ground` what it proposes.

    Refusals are logged (counts and reasons at INFO, the text only at DEBUG) and returned.
    """
    result = ground(extractor.extract(episodes), episodes, min_support=min_support,
                    embedder=embedder)
    for r in result.rejected:
        logger.info("extraction: refused a %s candidate from rule %s: %s",
                    r.candidate.kind, r.candidate.rule, r.reason.split(":")[0])
        logger.debug("extraction: refused %r: %s", r.candidate.text, r.reason)
    return result


def as_utc(value: Any) -> datetime | None:
    """A datetime with a time zone (naive means UTC), or None."""
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
