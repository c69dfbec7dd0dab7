"""Running a plan of memory operators (:mod:`remem.extract.plan`) in one transaction.

Each step goes to the operation that owns it, through the facade's own methods (so the
scope walls and checks are the same as for a direct call): remember and update go to the
memory agent (an update may supersede what it replaces), forget / pin / share act on the
memory a step refers to or the best match for its words, search and summarise read,
link names an entity on a memory and ties it to the other memories naming it, and remind
writes a reminder with its timer job (:mod:`.reminders`). A step that finds nothing to
act on says so; an error rolls the whole plan back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from ..extract.plan import Plan, Step
from ..govern.provenance import provenance
from ..model import Hit, MemoryItem, Scope
from ..store.base import Store
from ..text import split_passages
from .reminders import new_reminder

__all__ = ["DoResult", "Executor", "Facade", "StepResult"]


class StepResult(BaseModel):
    """What one step did: ``ok`` False when it found nothing to act on."""

    model_config = ConfigDict(frozen=True)

    operator: str
    ok: bool
    did: str
    memory_ids: list[str] = Field(default_factory=list)
    detail: dict[str, Any] = Field(default_factory=dict)


class DoResult(BaseModel):
    """A request's plan and, unless it was a dry run, what each step did."""

    model_config = ConfigDict(frozen=True)

    request: str
    planner: str
    dry_run: bool
    steps: list[Step]
    results: list[StepResult] = Field(default_factory=list)


class Facade(Protocol):
    """The operations of :class:`remem.Memory` a plan uses."""

    @property
    def store(self) -> Store: ...

    @property
    def remember(self) -> Callable[..., MemoryItem]: ...

    @property
    def search(self) -> Callable[..., list[Hit]]: ...

    @property
    def forget(self) -> Callable[..., MemoryItem]: ...

    @property
    def pin(self) -> Callable[..., MemoryItem]: ...


def _day(iso: str) -> datetime:
    return datetime.fromisoformat(iso).replace(tzinfo=timezone.utc)


class Executor:
    """Runs the steps of a plan for one scope at the time ``now`` gives."""

    def __init__(self, memory: Facade, scope: Scope, *, now: Callable[[], float],
                 screen: Callable[[str], str | None] = lambda text: None,
                 chunk_tokens: int = 200, door: str = "sdk") -> None:
        self.memory = memory
        self.screen = screen
        #: what the request came in through: the provenance of what its steps write
        self.door = door
        self.scope = scope
        self.now = now
        self.chunk_tokens = chunk_tokens
        self.where = {k: v for k, v in scope.model_dump().items() if k in (
            "org_id", "user_id", "agent_id", "project")}

    def run(self, plan: Plan) -> list[StepResult]:
        """Every step in order, in one transaction."""
        done: list[StepResult] = []
        with self.memory.store.transaction():
            for step in plan.steps:
                done.append(getattr(self, f"_{step.operator}")(step, done))
        return done

    # --- finding what a step acts on ------------------------------------------------------

    def _target(self, step: Step, done: Sequence[StepResult]) -> MemoryItem | None:
        if step.ref is not None and step.ref < len(done) and done[step.ref].memory_ids:
            return self.memory.store.items_by_id(done[step.ref].memory_ids[:1])[0]
        if not step.text:
            return None
        hits = self.memory.search(step.text, k=3, include_episodes=False, **self.where)
        return hits[0].memory if hits else None

    @staticmethod
    def _nothing(step: Step, what: str) -> StepResult:
        return StepResult(operator=step.operator, ok=False, did=f"found no memory {what}")

    # --- the operators --------------------------------------------------------------------

    def _remember(self, step: Step, done: Sequence[StepResult], *, intent: str = "statement"
                  ) -> StepResult:
        assert step.text is not None
        when = _day(step.date) if step.date else None
        item = self.memory.remember(step.text, kind=step.kind or "fact", event_time=when,
                                    intent=intent, door=self.door, **self.where)
        verb = "updated" if intent == "update" else "remembered"
        return StepResult(operator=step.operator, ok=True, did=f"{verb} {item.id} [{item.kind}]",
                          memory_ids=[item.id],
                          detail={"text": item.text, "kind": item.kind,
                                  "event_date": item.event_time.date().isoformat()
                                  if item.event_time else None})

    def _update(self, step: Step, done: Sequence[StepResult]) -> StepResult:
        return self._remember(step, done, intent="update")

    def _forget(self, step: Step, done: Sequence[StepResult]) -> StepResult:
        target = self._target(step, done)
        if target is None:
            return self._nothing(step, f"to forget for {step.text!r}")
        self.memory.forget(target.id, reason=f"asked: {step.text or 'forget it'}", **self.where)
        return StepResult(operator="forget", ok=True, did=f"forgot {target.id}",
                          memory_ids=[target.id], detail={"text": target.text})

    def _pin(self, step: Step, done: Sequence[StepResult]) -> StepResult:
        target = self._target(step, done)
        if target is None:
            return self._nothing(step, f"to pin for {step.text!r}")
        self.memory.pin(target.id, **self.where)
        return StepResult(operator="pin", ok=True, did=f"pinned {target.id}",
                          memory_ids=[target.id], detail={"text": target.text})

    def _share(self, step: Step, done: Sequence[StepResult]) -> StepResult:
        target = self._target(step, done)
        if target is None:
            return self._nothing(step, f"to share for {step.text!r}")
        audience = step.audience or "team"
        where = {**self.where, "user_id": None if audience == "team" else audience}
        # the copy is said by whoever said the original: sharing launders no trust
        copy = self.memory.remember(target.text, kind=target.kind, subject=target.subject,
                                    metadata={"shared_from": target.id}, door=self.door,
                                    role=target.provenance.source, **where)
        return StepResult(operator="share", ok=True,
                          did=f"shared {target.id} with {audience} as {copy.id}",
                          memory_ids=[target.id, copy.id], detail={"audience": audience})

    def _link(self, step: Step, done: Sequence[StepResult]) -> StepResult:
        assert step.entity is not None
        target = self._target(step, done)
        if target is None:
            return self._nothing(step, f"to link to {step.entity!r}")
        store = self.memory.store
        names = [str(n) for n in target.metadata.get("entities", [])]
        if step.entity not in names:
            names.append(step.entity)
        with store.transaction():
            store.set_entities(target.id, names)
            store.set_fields(target.id, None, action="linked", reason=f"linked to {step.entity}",
                             metadata={**target.metadata, "entities": names})
            others = [m.id for m in store.with_entities(
                self.scope.model_copy(update={"nested": True}), [step.entity], limit=50)
                if m.id != target.id]
            edges = [(target.id, o, "mentions", 1.0) for o in others]
            store.link(edges + [(b, a, t, w) for a, b, t, w in edges], add=True)
        return StepResult(operator="link", ok=True,
                          did=f"linked {target.id} to {step.entity} ({len(others)} more memories)",
                          memory_ids=[target.id, *others], detail={"entity": step.entity})

    def _remind(self, step: Step, done: Sequence[StepResult]) -> StepResult:
        assert step.text is not None
        now = self.now()
        due = _day(step.date).timestamp() if step.date else now
        scope = self.scope.model_copy(update={"session_id": None})
        held = self.screen(step.text)  # a reminder is shown to the model: screened like any text
        memory_id = new_reminder(self.memory.store, scope, step.text, due, now=now,
                                 passages=split_passages(step.text, self.chunk_tokens), held=held,
                                 provenance=provenance(self.door, "user"))
        day = datetime.fromtimestamp(due, timezone.utc).date().isoformat()
        if held is not None:
            return StepResult(operator="remind", ok=False, did=f"reminder {memory_id} held for "
                              f"review: {held}", memory_ids=[memory_id], detail={"due": day})
        return StepResult(operator="remind", ok=True, did=f"reminder {memory_id} due {day}",
                          memory_ids=[memory_id], detail={"due": day, "text": step.text})

    def _read(self, step: Step, k: int) -> list[Hit]:
        assert step.text is not None
        since = _day(step.date) if step.date else None
        until = _day(step.until) if step.until else (since + timedelta(days=1) if since else None)
        return self.memory.search(step.text, k=k, since=since, until=until, **self.where)

    def _search(self, step: Step, done: Sequence[StepResult]) -> StepResult:
        hits = self._read(step, 5)
        return StepResult(operator="search", ok=bool(hits), did=f"found {len(hits)}",
                          memory_ids=[h.memory.id for h in hits],
                          detail={"found": [h.memory.text for h in hits]})

    def _summarise(self, step: Step, done: Sequence[StepResult]) -> StepResult:
        hits = self._read(step, 8)
        lines = list(dict.fromkeys(" ".join(h.memory.text.split()) for h in hits))
        return StepResult(operator="summarise", ok=bool(hits),
                          did=f"summarised {len(lines)} memories",
                          memory_ids=[h.memory.id for h in hits],
                          detail={"summary": "\n".join(f"- {line}" for line in lines)})
