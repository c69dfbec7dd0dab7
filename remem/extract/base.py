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
from ..text import STOPWORDS, words

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
_SUFFIX = re.compile(r"(?:'s|ies|es|s|ed|ing)$")


def _stem(word: str) -> str:
    if len(word) <= 4 or not word.isascii():
        return word
    return _SUFFIX.sub("", word) or word


def _content(text: str) -> list[str]:
    return [w for w in words(text) if w not in STOPWORDS and w not in _TEMPLATE]


def support(candidate: Candidate, sources: Sequence[str]) -> tuple[float, list[str]]:
    """How much of the candidate's content its sources back: (share, missing words)."""
    text = _DATE_WORDS.sub(" ", candidate.text) if candidate.event_time else candidate.text
    content = _content(text)
    if not content:
        return 0.0, []
    known = {_stem(w) for src in sources for w in words(src)}
    known |= {_stem(w) for w in words(candidate.subject)}
    missing = [w for w in content if _stem(w) not in known]
    return 1 - len(missing) / len(content), missing


def ground(candidates: Sequence[Candidate], episodes: Sequence[EpisodeIn], *,
           min_support: float = 0.6) -> Extraction:
    """Keep the candidates their cited episodes support; refuse the others with a reason.

    A candidate is supported when at least ``min_support`` of its content words (CJK as
    character bigrams) appear in the texts of the episodes in its ``source_ids``. Function
    words, the extractors' own wording and the speaker's name do not count.

    Example::

        result = ground(extractor.extract(episodes), episodes)
        for r in result.rejected:
            print(r.reason)
    """
    texts = {e.id: e.text for e in episodes}
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
        share, missing = support(cand, [texts[i] for i in cand.source_ids])
        if share == 0.0 and not missing:
            rejected.append(Rejected(candidate=cand, reason="has no content words to check"))
        elif share < min_support:
            rejected.append(Rejected(candidate=cand, reason=(
                f"not supported by its sources: {share:.0%} of its content words appear "
                f"there (need {min_support:.0%}); missing: {', '.join(missing[:8])}")))
        else:
            kept.append(cand)
    return Extraction(candidates=kept, rejected=rejected)


def extract_checked(extractor: Extractor, episodes: Sequence[EpisodeIn], *,
                    min_support: float = 0.6) -> Extraction:
    """Run ``extractor`` on ``episodes`` and :func:`ground` what it proposes.

    Refusals are logged (counts and reasons at INFO, the text only at DEBUG) and returned.
    """
    result = ground(extractor.extract(episodes), episodes, min_support=min_support)
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
