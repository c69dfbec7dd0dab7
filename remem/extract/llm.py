"""The LLM extractor: a "chain of memory" over any OpenAI-compatible chat model.

Three steps, each a JSON answer checked against a schema:

1. classify: the conversation's topic and which kinds of knowledge (:data:`KINDS`) it holds;
2. extract: one call per group of kinds found, with instructions written for those kinds
   (a pitfall names its symptom, cause, fix and environment; a preference keeps the
   speaker's language; every memory names its subject);
3. verify: one call that checks each candidate against the turns it cites and refuses the
   unsupported ones and those with the wrong subject.

The model sees the episodes as ``[1] 2024-05-09 Thu 14:00 UTC Bob: ...`` and cites those
numbers; they are mapped back to episode ids, and a number that was not shown is an error.
Dates are not computed by the model: it returns the phrase it saw ("last Tuesday", "上周"),
which :func:`~remem.extract.dates.find_date` resolves against the cited turn's time.

An answer that is not JSON, does not fit the schema or cites unknown turns is sent back
with the error for a repair, up to ``attempts`` calls per step; then
:class:`~remem.errors.ExtractionError` is raised, so the job that asked fails visibly.

    >>> from remem.llm import ChatClient
    >>> extractor = LLMExtractor(ChatClient("http://localhost:11434/v1", "qwen2.5:7b"))
    >>> extractor.extract([EpisodeIn("ep1", "I always use pnpm", role="user")])
    [Candidate(kind='preference', text='Always use pnpm', subject='user', ...)]
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import date as Date
from datetime import datetime, time, timezone
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import ConfigError
from ..llm import ChatModel, Message
from ..llm.answers import InvalidAnswer, ask_json
from ..text import has_cjk, words
from .base import (
    AGENT_ROLES,
    KINDS,
    STOPWORDS,
    USER_ROLES,
    Candidate,
    EpisodeIn,
    Extraction,
    Rejected,
    as_utc,
)
from .dates import find_date

__all__ = ["KIND_GROUPS", "LLMExtractor"]

logger = logging.getLogger(__name__)

#: The extraction calls: each group of kinds found by the classification gets one.
KIND_GROUPS: dict[str, tuple[str, ...]] = {
    "personal": ("preference", "persona", "profile"),
    "project": ("project", "convention", "decision", "files"),
    "pitfall": ("pitfall",),
    "procedure": ("procedure", "skill"),
    "happening": ("fact", "event"),
}

_GUIDE = {
    "preference": "a standing like, dislike or rule for how things should be done or answered "
                  "(\"always use pnpm\", \"answer in Chinese\", \"I hate tabs\"). Keep the speaker's "
                  "own language and wording. A one-off request for the task at hand is not one.",
    "persona": "how the agent should sound or behave with this user: tone, bluntness, humour, "
               "formality (\"be blunt\", \"a bit of humour is fine\").",
    "profile": "who a person is: name, job, where they live, family, background, lasting traits.",
    "project": "what the project is: its purpose, stack, structure, where it runs.",
    "convention": "a rule of the codebase or team: naming, style, branches, reviews, tooling.",
    "decision": "a choice that was made, with its reason when one is given.",
    "files": "the files that belong to a task or feature, by path.",
    "pitfall": "something that went wrong and how it was fixed.",
    "procedure": "steps, in order and with their commands, that achieved a result.",
    "skill": "a reusable ability that was shown or taught, described so it can be done again.",
    "fact": "a lasting fact about a person, the project or the world that fits no other kind.",
    "event": "something that happened at a time: what, who, and when.",
}

_SUBJECTS = (
    "What a named speaker says about themselves has that speaker's name as subject: in a chat "
    "between Alice and Bob, what Bob says about himself has subject \"Bob\", never \"Alice\". "
    "The speaker shown as \"user\" is subject \"user\". Knowledge about the work has the "
    "project's name (or \"project\"); about the machine, OS or tools, \"environment\"."
)

_CLASSIFY = """You read a conversation or an agent's work log and decide what in it is worth \
remembering for a long time. The kinds of knowledge:
{kinds}

Answer with one JSON object: {{"topic": "<the conversation's topic in a few words>", \
"kinds": [<the kinds present, spelled as above>]}}. List a kind only when the conversation \
clearly holds knowledge of that kind; "kinds": [] when nothing is worth remembering (small \
talk, a question with no lasting content)."""

_EXTRACT = """You extract long-term memories from a conversation or an agent's work log. \
Its topic: {topic}. Extract memories of these kinds:
{kinds}

Rules:
- Each memory is one short statement that makes sense on its own and says who it is about \
("Bob only drinks oat milk", "User prefers pnpm over npm"), written in the language it was \
said in (what was said in Chinese is written in Chinese).
- subject: who or what the memory is about. {subjects}
- Only what the turns state: no guesses, no suggestions nobody accepted.
- sources: the numbers of the turns that state it, e.g. [2] or [2, 3]. Cite only numbers shown.
- date_phrase: when the memory is tied to a time, the date phrase exactly as written in the \
cited turn ("last Tuesday", "yesterday", "上周", "on 3 May"). Do not work the date out \
yourself; keep the phrase in the text too. date: an ISO date (YYYY-MM-DD) only when the turn \
states an absolute date. Both null otherwise.
- confidence: from 0 to 1, how sure you are that it is stated and lasting.{extra}

Answer with one JSON object: {{"memories": [{{"kind": "...", "text": "...", "subject": "...", \
"sources": [1], "entities": ["names, tools, paths it mentions"], "date_phrase": null, \
"date": null, "confidence": 0.8{fields}}}]}}, or {{"memories": []}} when there are none."""

_PITFALL = """
- For a pitfall also give "symptom" (the error message or what was seen), "cause", "fix" \
(what solved it) and "environment" (OS, versions, tools it applies to; null when not said). \
Its text must state the symptom and the fix, e.g. "`pnpm install` fails with EACCES on the CI \
runner; fix: run it with --unsafe-perm". Leave out problems whose fix is not stated."""

_VERIFY = """You check memories extracted from a conversation against the turns they cite. \
For each candidate answer:
- supported: true only when the cited turns state it (not merely hint at it, not a guess, \
not a suggestion nobody accepted);
- subject_ok: true when its subject is who or what it is about. {subjects}
- reason: one short sentence when either is false, else "".
Dates in the candidates were already worked out from the turn's time ("last Tuesday" said on \
2024-05-09 is 7 May 2024): that is not a reason to refuse.

Answer with one JSON object: {{"verdicts": [{{"candidate": 1, "supported": true, \
"subject_ok": true, "reason": ""}}]}} with exactly one verdict per candidate."""

_MAX_EPISODE_CHARS = 4000

T = TypeVar("T")


def _known_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"{kind!r} is not a kind; use one of {', '.join(KINDS)}")
    return kind


class _Classification(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    topic: str = ""
    kinds: list[str]

    @field_validator("kinds")
    @classmethod
    def _known_kinds(cls, value: list[str]) -> list[str]:
        return [_known_kind(k) for k in value]


class _Memory(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    kind: str
    text: str = Field(min_length=1)
    subject: str = Field(min_length=1)
    sources: list[int] = Field(min_length=1)
    entities: list[str] = Field(default_factory=list)
    date_phrase: str | None = None
    date: Date | None = None
    confidence: float = Field(0.7, ge=0.0, le=1.0)
    symptom: str | None = None
    cause: str | None = None
    fix: str | None = None
    environment: str | None = None

    @field_validator("sources", mode="before")
    @classmethod
    def _bare_numbers(cls, value: Any) -> Any:
        # "[2]" and "2" are how the turns are shown; accept them as the number they name
        if isinstance(value, (int, str)):
            value = [value]
        if isinstance(value, list):
            return [v.strip().strip("[]#").strip() if isinstance(v, str) else v for v in value]
        return value

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: str) -> str:
        return _known_kind(value)

    @field_validator("date_phrase", "symptom", "cause", "fix", "environment")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return value or None


class _Found(BaseModel):
    model_config = ConfigDict(extra="ignore")

    memories: list[_Memory]


class _Verdict(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    candidate: int
    supported: bool
    subject_ok: bool = True
    reason: str = ""


class _Verdicts(BaseModel):
    model_config = ConfigDict(extra="ignore")

    verdicts: list[_Verdict]


class LLMExtractor:
    """Extracts memories with a chat model: classify, extract per kind group, verify.

    Parameters:
        client: the chat model, e.g. :class:`remem.llm.ChatClient`; its errors
            (:class:`~remem.errors.LLMError`) pass through unchanged.
        attempts: calls allowed per step, the first one and the repairs of an invalid
            answer; at least 1.
        verify: run the verification call that refuses candidates their cited turns do not
            support or that name the wrong subject.

    Candidates carry ``rule="llm.<kind>"``, the model's confidence, the ids of the episodes
    they cite and, when they mention a date, ``event_time`` resolved against the time of
    the turn that said it.

    Example::

        extractor = LLMExtractor(ChatClient("http://localhost:8000/v1", "Qwen/Qwen2.5-7B-Instruct"))
        result = extractor.extract_verified(episodes)
        result.candidates   # what passed
        result.rejected     # what the verification refused, with the reason
    """

    def __init__(self, client: ChatModel, *, attempts: int = 3, verify: bool = True) -> None:
        if attempts < 1:
            raise ConfigError(f"attempts must be at least 1, not {attempts}")
        self.client = client
        self.attempts = attempts
        self.verify = verify

    def close(self) -> None:
        """Release the client's connections, when it holds any."""
        close = getattr(self.client, "close", None)
        if callable(close):
            close()

    def extract(self, episodes: Sequence[EpisodeIn]) -> list[Candidate]:
        """The verified candidate memories in ``episodes`` (oldest first).

        Raises :class:`~remem.errors.LLMError` when the endpoint fails and
        :class:`~remem.errors.ExtractionError` when the model's answers stay invalid.
        """
        return self.extract_verified(episodes).candidates

    def extract_verified(self, episodes: Sequence[EpisodeIn]) -> Extraction:
        """Like :meth:`extract`, with the candidates the verification refused and why."""
        shown = list(episodes)
        if not shown:
            return Extraction()
        transcript = _transcript(shown)
        kinds_text = "\n".join(f"- {k}: {_GUIDE[k]}" for k in KINDS)
        classification = self._ask("classify", [
            {"role": "system", "content": _CLASSIFY.format(kinds=kinds_text)},
            {"role": "user", "content": transcript},
        ], lambda data: _Classification.model_validate(data))
        found = set(classification.kinds)
        candidates: list[Candidate] = []
        for group, kinds in KIND_GROUPS.items():
            wanted = [k for k in kinds if k in found]
            if wanted:
                candidates.extend(self._extract_group(group, wanted, classification.topic,
                                                      shown, transcript))
        if not self.verify or not candidates:
            return Extraction(candidates=candidates)
        return self._verify(candidates, shown, transcript)

    # --- steps --------------------------------------------------------------------------

    def _extract_group(self, group: str, kinds: list[str], topic: str, shown: list[EpisodeIn],
                       transcript: str) -> list[Candidate]:
        pitfall = "pitfall" in kinds
        system = _EXTRACT.format(
            topic=topic or "not given", kinds="\n".join(f"- {k}: {_GUIDE[k]}" for k in kinds),
            subjects=_SUBJECTS, extra=_PITFALL if pitfall else "",
            fields=(', "symptom": "...", "cause": "...", "fix": "...", "environment": null'
                    if pitfall else ""))
        found = self._ask(f"extract {group}", [
            {"role": "system", "content": system},
            {"role": "user", "content": transcript},
        ], lambda data: _check_found(_Found.model_validate(data), shown))
        return [_candidate(m, shown) for m in found.memories]

    def _verify(self, candidates: list[Candidate], shown: list[EpisodeIn],
                transcript: str) -> Extraction:
        number = {ep.id: n for n, ep in enumerate(shown, 1)}
        listing = "\n".join(
            f"#{i} [{c.kind}] subject \"{c.subject}\", cites "
            f"{', '.join(f'[{number[s]}]' for s in c.source_ids)}: {c.text}"
            for i, c in enumerate(candidates, 1))
        verdicts = self._ask("verify", [
            {"role": "system", "content": _VERIFY.format(subjects=_SUBJECTS)},
            {"role": "user", "content": f"{transcript}\n\nCandidates:\n{listing}"},
        ], lambda data: _check_verdicts(_Verdicts.model_validate(data), len(candidates)))
        kept: list[Candidate] = []
        rejected: list[Rejected] = []
        for i, cand in enumerate(candidates, 1):
            verdict = verdicts[i]
            if verdict.supported and verdict.subject_ok:
                kept.append(cand)
                continue
            why = ("not supported by its cited turns" if not verdict.supported
                   else "wrong subject")
            reason = f"{why}: {verdict.reason}" if verdict.reason else why
            rejected.append(Rejected(candidate=cand, reason=reason))
            logger.info("extraction: verification refused a %s candidate from rule %s: %s",
                        cand.kind, cand.rule, why)
            logger.debug("extraction: refused %r (subject %r): %s", cand.text, cand.subject,
                         reason)
        return Extraction(candidates=kept, rejected=rejected)

    def _ask(self, step: str, messages: list[Message], parse: Callable[[Any], T]) -> T:
        """The parsed answer to ``messages``, repairing an invalid one up to ``attempts`` calls."""
        return ask_json(self.client, messages, parse, attempts=self.attempts, step=step)


# --- helpers ----------------------------------------------------------------------------

def _transcript(shown: Sequence[EpisodeIn]) -> str:
    """The episodes as the model sees them: numbered, with speaker and time."""
    projects = sorted({ep.project for ep in shown if ep.project})
    lines = [f"Project: {', '.join(projects)}", ""] if projects else []
    lines.append("Conversation (each turn: [number] time speaker: text):")
    for n, ep in enumerate(shown, 1):
        text = ep.text if len(ep.text) <= _MAX_EPISODE_CHARS else (
            ep.text[:_MAX_EPISODE_CHARS] + " [...]")
        lines.append(f"[{n}] {_stamp(ep.event_time)} {_who(ep)}: {text}")
    return "\n".join(lines)


def _stamp(when: datetime | None) -> str:
    when = as_utc(when)
    if when is None:
        return "(time unknown)"
    zone = "UTC" if when.utcoffset() == timezone.utc.utcoffset(None) else when.strftime("%z")
    return f"{when:%Y-%m-%d %a %H:%M} {zone}"


def _who(ep: EpisodeIn) -> str:
    if ep.kind == "event":
        return f"agent event ({ep.event.type})" if ep.event is not None else "agent event"
    role = (ep.role or "user").strip()
    if role.lower() in AGENT_ROLES:
        return role.lower()
    return ep.speaker


def _check_found(found: _Found, shown: list[EpisodeIn]) -> _Found:
    problems = []
    for i, mem in enumerate(found.memories):
        where = f"memories[{i}]"
        unknown = [n for n in mem.sources if not 1 <= n <= len(shown)]
        if unknown:
            problems.append(f"{where}.sources: cites {', '.join(f'[{n}]' for n in unknown)}, "
                            f"which is not a turn shown (the turns are [1] to [{len(shown)}])")
            continue
        if mem.date_phrase and not any(mem.date_phrase.lower() in shown[n - 1].text.lower()
                                       for n in mem.sources):
            problems.append(f"{where}.date_phrase is not written in the turns it cites; copy "
                            "the phrase exactly, or use null")
        if mem.kind == "pitfall":
            if not mem.fix:
                problems.append(f"{where}.fix: a pitfall must say what fixed it; leave out "
                                "problems whose fix is not stated")
            elif not _content(mem.fix) & _content(mem.text):
                problems.append(f"{where}.text: a pitfall's text must state its fix "
                                f"({where}.fix)")
    if problems:
        raise InvalidAnswer("; ".join(problems))
    return found


def _check_verdicts(verdicts: _Verdicts, count: int) -> dict[int, _Verdict]:
    by_number: dict[int, _Verdict] = {}
    problems = []
    for v in verdicts.verdicts:
        if not 1 <= v.candidate <= count:
            problems.append(f"candidate {v.candidate} does not exist (they are 1 to {count})")
        elif v.candidate in by_number:
            problems.append(f"candidate {v.candidate} has more than one verdict")
        else:
            by_number[v.candidate] = v
    missing = [str(n) for n in range(1, count + 1) if n not in by_number]
    if missing:
        problems.append(f"no verdict for candidate(s) {', '.join(missing)}")
    if problems:
        raise InvalidAnswer("; ".join(problems))
    return by_number


def _content(text: str) -> set[str]:
    return {w for w in words(text) if w not in STOPWORDS}


def _candidate(mem: _Memory, shown: list[EpisodeIn]) -> Candidate:
    cited = [shown[n - 1] for n in dict.fromkeys(mem.sources)]
    times = [t for t in (as_utc(ep.event_time) for ep in cited) if t is not None]
    observed = max(times) if times else None
    text, event_time = _dated(mem, cited)
    if event_time is None and mem.kind == "event":
        event_time = observed
    entities = list(dict.fromkeys(e for e in mem.entities if e))
    if mem.environment and mem.environment not in entities:
        entities.append(mem.environment)
    return Candidate(kind=mem.kind,  # type: ignore[arg-type]
                     text=text, subject=_subject(mem.subject, shown),
                     entities=entities[:12], tags=["zh" if has_cjk(text) else "en"],
                     event_time=event_time, observed_at=observed, confidence=mem.confidence,
                     source_ids=[ep.id for ep in cited], rule=f"llm.{mem.kind}")


def _dated(mem: _Memory, cited: list[EpisodeIn]) -> tuple[str, datetime | None]:
    """The text with its relative date made absolute, and the date, from the citing turn."""
    text = mem.text
    if mem.date_phrase:
        phrase = mem.date_phrase.lower()
        said = next(ep for ep in cited if phrase in ep.text.lower())
        ref = as_utc(said.event_time)
        resolved = find_date(mem.date_phrase, ref)
        if resolved is None:
            # a phrase cut short ("Tuesday" out of "last Tuesday"): read it with what precedes it
            end = said.text.lower().find(phrase) + len(phrase)
            window = said.text[max(0, end - len(phrase) - 16):end]
            resolved = find_date(window, ref)
            if resolved is not None and resolved.finish <= len(window) - len(phrase):
                resolved = None
        if resolved is not None:
            for said_as in dict.fromkeys((resolved.phrase.lower(), phrase)):
                at = text.lower().find(said_as)
                if at >= 0:
                    lang = "zh" if has_cjk(text) else "en"
                    text = text[:at] + resolved.render(lang) + text[at + len(said_as):]
                    break
            return text, resolved.start
    if mem.date is not None:
        ref = next((t for t in (as_utc(ep.event_time) for ep in cited) if t is not None), None)
        zone = ref.tzinfo if ref is not None else timezone.utc
        return text, datetime.combine(mem.date, time(), tzinfo=zone)
    return text, None


def _subject(subject: str, shown: list[EpisodeIn]) -> str:
    """The model's subject in the spelling of the transcript: a speaker's name, or "user"."""
    low = subject.strip().lower()
    if low in USER_ROLES or low in {"the user", "用户"}:
        return "user"
    for ep in shown:
        if not ep.is_agent and ep.speaker.lower() == low:
            return ep.speaker
    return subject.strip()
