"""The memory agent: new episodes in, organised memories out.

For the candidate memories the extractor found in a batch of new episodes, it compares
each with what is already known in the scope:

- the same thing again (same kind and subject, same or nearly the same words) is merged:
  the memory gains the new sources, and is confirmed when seen in another session;
- a new value of the same attribute (see :mod:`.relate`: a trained pair head over the
  nearest memories in meaning) supersedes the old memory: ``valid_to``, status
  ``superseded``, a ``supersedes`` edge and a history entry; never a delete;
- anything else is a new memory, with its entities, its place in the mind map and, for
  a procedure that keeps working, a skill candidate.

A user's request to forget something, in any wording the heads recognise ("forget what
I said about X", "别记那个了"), forgets the memories it is about and hides the turns that
said it (soft: recoverable, with history). All of a batch is written in one transaction,
with the job that asked for it.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np

from ..config import AgentConfig
from ..embed import Embedder
from ..extract.attribution import said_of_another
from ..extract.heads import Reader
from ..extract.requests import forget_requests, points_back, topic_words
from ..extract.statements import is_fragment, units
from ..govern import ScreenPolicy
from ..model import TRUST_LEVELS, Candidate, MemoryItem, Scope, new_id
from ..store.base import NewMemory, Store
from ..text import clauses, has_cjk, split_passages
from ..text import stems as _stems
from .relate import family, forget_targets, relate, telling
from .similarity import content_words, jaccard, normalise
from .skills import is_success, skill_name, steps_of, task_of
from .team import SKILL_KINDS, refinement
from .topics import MindMap

__all__ = ["MemoryAgent", "Prepared", "maturity_for", "shared_scope"]

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class Prepared:
    """Candidates (with their scope and evidence text) and vectors for their texts."""

    found: list[tuple[Scope, Candidate, str]]
    vectors: dict[str, Any] = field(default_factory=dict)
    #: episodes held for review (their id and why), and nothing derived from them
    held: dict[str, str] = field(default_factory=dict)


def maturity_for(sessions: int, helpful: int) -> str:
    """candidate -> confirmed (seen in two sessions, or found helpful) -> canonical."""
    score = sessions + 2 * helpful
    return "canonical" if score >= 4 else "confirmed" if score >= 2 else "candidate"


def _ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def _speaker(item: MemoryItem) -> str:
    """Who said an item: tool output for an agent event, else its role."""
    if item.kind == "event" and isinstance(item.metadata.get("event"), dict):
        return "tool"
    return (item.role or "user").lower()


def _screened_as(item: MemoryItem) -> str:
    """Whose words an item is screened as: text from anywhere (an import, a cube) as
    tool output, whoever first said it."""
    return "tool" if item.provenance.trust == "external" else _speaker(item)


def _role(speaker: str) -> str:
    """The role the heads read a speaker's text as."""
    return speaker if speaker in ("assistant", "tool") else "user"


def shared_scope(item: MemoryItem) -> Scope:
    """Where memories derived from an episode live: its scope, across sessions."""
    return Scope(org_id=item.org_id, user_id=item.user_id, agent_id=item.agent_id,
                 project=item.project)


class MemoryAgent:
    """Extracts, merges, supersedes and organises memories in one store."""

    def __init__(self, store: Store, embedder: Embedder, config: AgentConfig, *,
                 reader: Reader | None = None, chunk_tokens: int = 200) -> None:
        self.store = store
        self.embedder = embedder
        self.config = config
        self.reader = reader or Reader()
        self.chunk_tokens = chunk_tokens
        self.mindmap = MindMap(store, config.topic_max_size)

    @functools.cached_property
    def policy(self) -> ScreenPolicy:
        """When screened text is held: the thresholds come with whichever reader reads
        threats, loaded on first use."""
        thresholds = self.reader.threat_thresholds
        if not thresholds:
            return ScreenPolicy()
        # the linear head reads a user's dictated rules as instructions too, less surely,
        # so its thresholds keep a floor; the tuned reader's were chosen for it alone, and
        # the linear head's sure readings (blatant overrides) are held beside them
        return ScreenPolicy(thresholds, minimum={}, second_opinion=0.95) \
            if self.reader.tuned_screening else ScreenPolicy(thresholds)

    # --- the extract job ------------------------------------------------------------------

    def prepare(self, found: Sequence[tuple[Scope, Candidate, str]],
                episode_ids: Sequence[str] = ()) -> Prepared:
        """Candidates with vectors for their texts, and the episodes to hold for review:
        the slow part of absorbing them, done before the write transaction."""
        held = self.screen(self.store.items_by_id(list(episode_ids)))
        return Prepared(list(found), self.embed([c.text for _, c, _ in found
                                                 if not set(c.source_ids) & set(held)]), held)

    def apply(self, prepared: Prepared, episode_ids: Sequence[str]) -> dict[str, int]:
        """Write what the candidates mean for the store: merges, new memories,
        supersessions, forgets, held episodes. Call inside one store transaction."""
        counts: Counter[str] = Counter()
        for ep_id, reason in prepared.held.items():
            self.store.set_fields(ep_id, None, action="held", status="held", reason=reason)
            counts["held"] += 1
        for scope, cand, evidence in prepared.found:
            if set(cand.source_ids) & set(prepared.held):
                continue  # what a held turn says is not a memory until a person says so
            action, _ = self.absorb(cand, scope, evidence=evidence,
                                    vector=prepared.vectors.get(cand.text))
            counts[action] += 1
        counts["forgotten"] += len(self._forget_requests(
            [i for i in episode_ids if i not in prepared.held]))
        return {k: v for k, v in counts.items() if v}

    def screen_text(self, text: str, role: str | None = "user") -> str | None:
        """Why a text must be held for review (see :meth:`screen`), or None."""
        return self._holds([("text", text, (role or "user").lower())]).get("text")

    def screen(self, items: Sequence[MemoryItem]) -> dict[str, str]:
        """The items (turns, tool output, proposed memories) that try to instruct the
        agent against its user, with why: each is read sentence by sentence by the
        screening head, under the policy for its speaker (:mod:`remem.govern.screen`)."""
        return self._holds([(item.id, item.text, _screened_as(item)) for item in items
                            if item.status == "active" and not item.metadata.get("reviewed")])

    def _holds(self, texts: Sequence[tuple[str, str, str]]) -> dict[str, str]:
        """For (key, text, speaker) triples, the keys to hold and why."""
        pieces = [(key, piece, speaker) for key, text, speaker in texts
                  for piece in ([u.text for u in units(text)] or [text])]
        readings = self.reader.read([p for _, p, _ in pieces], [_role(s) for _, _, s in pieces])
        held: dict[str, str] = {}
        for (key, _, speaker), reading in zip(pieces, readings, strict=True):
            reason = self.policy.hold(reading.threat_p, speaker, second_p=reading.linear_threat_p)
            if reason and key not in held:
                held[key] = reason
        return held

    def embed(self, texts: Sequence[str]) -> dict[str, Any]:
        """Vectors for new memories' short texts; a failure leaves them to the embed queue."""
        todo = [t for t in dict.fromkeys(texts) if len(split_passages(t, self.chunk_tokens)) == 1]
        if not todo:
            return {}
        try:
            return dict(zip(todo, self.embedder.embed_passages(todo), strict=True))
        except Exception as exc:  # noqa: BLE001 - the embed queue retries it later
            log.warning("embedding %d new memories failed, queued instead: %s", len(todo), exc)
            return {}

    # --- one candidate --------------------------------------------------------------------

    def absorb(self, cand: Candidate, scope: Scope, *, evidence: str = "",
               vector: Any = None, session_id: str | None = None,
               metadata: dict[str, Any] | None = None,
               known_in: Scope | None = None, held: str | None = None) -> tuple[str, str]:
        """Merge, supersede or create for one candidate; returns (action, memory id).
        ``scope`` is where a new memory is written; ``known_in`` where what it may repeat
        or replace is looked for (by default ``scope`` and the levels above it).
        ``metadata`` (e.g. code anchors) goes onto the memory; on a merge, lists are
        joined and other keys kept as they were. A ``held`` candidate (the reason) is
        stored alone, held for review: it merges into and replaces nothing. A
        ``replaces_only`` candidate that replaces nothing is not stored ("dropped", "")."""
        source = self.store.items_by_id(cand.source_ids[:1])
        session = session_id or (source[0].session_id if source else None)
        if held is not None:
            item = self._create(cand, scope, session, vector, metadata or {})
            self.store.set_fields(item.id, None, action="held", status="held", reason=held)
            return "held", item.id
        if known_in is None and source:
            known_in = shared_scope(source[0])
        look = (known_in or scope).model_copy(update={"nested": True, "session_id": None})
        # the same words again, however old the memory; then near duplicates among the recent
        existing = self.store.derived(look, family(cand.kind), limit=300)
        existing = self.store.derived(look, [cand.kind], text=cand.text, limit=1) + existing
        # only the writer's own memories can be merged into or replaced, never the team's
        existing = [m for m in existing if m.user_id == scope.user_id]
        norm, mine = normalise(cand.text), content_words(cand.text)
        for m in existing:
            if m.kind != cand.kind:
                continue
            if normalise(m.text) == norm or ((m.subject or "") == cand.subject and jaccard(
                    mine, content_words(m.text)) >= self.config.merge_similarity):
                return self._merge_or_refine(m, cand, session, metadata or {})
        rels = relate(self.reader, cand.said or cand.text, list({m.id: m for m in existing}.values()),
                      change=cand.intent in ("update", "correction"), brief=cand.replaces_only,
                      kind=cand.kind)
        # what the agent or a tool says never replaces what a more trusted speaker said (an
        # assistant's "the repo still has package-lock.json" is not the user's new stack):
        # at most it may, for a person to decide
        trust = TRUST_LEVELS.index(source[0].provenance.trust) if source else 0
        rels = [replace(r, action="unsure") if r.action == "supersede"
                and TRUST_LEVELS.index(r.memory.provenance.trust) < trust else r for r in rels]
        # another's change ("Gabe says his team moved to Kotlin 2.0") is news, not ours
        said = cand.said or cand.text
        rels = [r for r in rels if r.action == "same" or not said_of_another(said, r.memory.text)]
        if rels and rels[0].action == "same" and rels[0].memory.kind == cand.kind:
            return self._merge_or_refine(rels[0].memory, cand, session, metadata or {})
        # past the clearest one, only memories of the same kind: earlier versions of it;
        # and a project's statement never replaces what holds for the user everywhere,
        # unless it is the user's own (a wish, who they are) said again with a new value.
        # A change said of what a memory names ("bumped us to node 22" against "still on
        # node 18 here, it's in .nvmrc") replaces it wherever it was filed, and so does a
        # brief change, which is only the new value of what it replaces.
        personal = cand.kind in ("preference", "profile", "persona")
        # and what the same turn said is said beside it, not replaced by it
        replaced = [r.memory for n, r in enumerate(rels) if r.action == "supersede"
                    and (n == 0 or r.memory.kind == cand.kind or (r.changed and r.named >= 2))
                    and not set(r.memory.sources) & set(cand.source_ids)
                    and not (scope.project is not None and r.memory.project is None
                             and not (personal and r.memory.kind == cand.kind)
                             and not (r.changed and r.named > 0) and not cand.replaces_only)]
        if replaced and scope.project is not None and all(m.project is None for m in replaced):
            scope = scope.model_copy(update={"project": None})  # where the old value lived
        if cand.replaces_only and (not replaced or cand.kind in ("event", "skill")):
            return "dropped", ""  # a brief change of nothing known says nothing alone
        item = self._create(cand, scope, session, vector, metadata or {})
        if replaced and cand.kind not in ("event", "skill"):
            at = _ts(cand.event_time) or _ts(cand.observed_at) or time.time()
            for old in replaced:
                self.store.supersede(old.id, item.id, at=at, reason=f"replaced by: {cand.text}")
            return "superseded", item.id
        unsure = [r.memory for r in rels if r.action == "unsure"]
        if unsure and cand.kind not in ("event", "skill"):
            # both stay true until a person says otherwise (Memory.flagged / settle_flag)
            note = f"may replace {unsure[0].id}: {unsure[0].text[:120]}"
            self.store.set_fields(item.id, None, action="flagged", reason=note,
                                  metadata={**item.metadata, "review": note})
            return "unsure", item.id
        return "created", item.id

    def _merge_or_refine(self, known: MemoryItem, cand: Candidate, session: str | None,
                         extra: dict[str, Any]) -> tuple[str, str]:
        """Merge a candidate that says a memory again; but a team rule said again with
        another split (roles, order, checks) is the rule's next version."""
        refined = refinement(known.text, cand.text) if cand.kind in SKILL_KINDS else None
        if refined is None:
            self._merge(known, cand, session, extra)
            return "merged", known.id
        self.store.update_text(known.id, shared_scope(known), refined,
                               split_passages(refined, self.chunk_tokens),
                               f"refined: {cand.text[:200]}", new_id("j_"))
        return "refined", known.id

    def _merge(self, memory: MemoryItem, cand: Candidate, session: str | None,
               extra: dict[str, Any]) -> None:
        meta = dict(memory.metadata)
        for key, value in extra.items():
            if isinstance(value, list) and isinstance(meta.get(key), list):
                meta[key] = meta[key] + [v for v in value if v not in meta[key]]
            else:
                meta.setdefault(key, value)
        sessions = list(meta.get("sessions", []))
        if session is not None and session not in sessions:
            sessions.append(session)
        meta["sessions"] = sessions
        meta["seen"] = int(meta.get("seen", 1)) + 1
        if memory.kind == "procedure" and is_success(cand.text):
            meta["successes"] = int(meta.get("successes", 0)) + 1
        maturity = max(memory.maturity, maturity_for(len(sessions), int(meta.get("helpful", 0))),
                       key=["candidate", "confirmed", "canonical"].index)
        self.store.merge_into(memory.id, cand.source_ids, metadata=meta, maturity=maturity,
                              reason=f"seen again ({cand.rule})")
        if memory.kind == "procedure" and int(meta.get("successes", 0)) >= self.config.skill_after:
            self._promote(memory.id, meta)

    def _create(self, cand: Candidate, scope: Scope, session: str | None, vector: Any,
                extra: dict[str, Any]) -> MemoryItem:
        meta: dict[str, Any] = {**extra,
            "entities": cand.entities, "tags": cand.tags, "rule": cand.rule,
            "confidence": cand.confidence, "sessions": [session] if session else [], "seen": 1,
        }
        if cand.kind == "procedure":
            meta["successes"] = int(is_success(cand.text))
        memory_id = new_id("m_")
        passages = split_passages(cand.text, self.chunk_tokens)
        self.store.insert([NewMemory(
            id=memory_id, kind=cand.kind, text=cand.text, raw=False, scope=scope,
            observed_at=_ts(cand.observed_at) or time.time(), event_time=_ts(cand.event_time),
            subject=cand.subject, metadata=meta, passages=passages, source_ids=cand.source_ids,
        )], None if vector is not None else new_id("j_"))
        if vector is not None:
            self.store.put_memory_vectors(memory_id, [vector])
        self.store.set_entities(memory_id, cand.entities)
        item = self.store.items_by_id([memory_id])[0]
        self.mindmap.place(item)
        if cand.kind == "procedure" and meta["successes"] >= self.config.skill_after:
            self._promote(memory_id, meta)
        return item

    def _promote(self, procedure_id: str, meta: dict[str, Any]) -> None:
        """Make (or refresh) the skill candidate of a procedure that keeps working."""
        proc = self.store.items_by_id([procedure_id])[0]
        scope = shared_scope(proc)
        mine = [s for s in self.store.derived(scope, ["skill"], statuses=("active", "archived"))
                if s.metadata.get("procedure") == procedure_id]
        if mine:
            skill = mine[0]
            self.store.merge_into(skill.id, proc.sources, metadata={
                **skill.metadata, "successes": meta.get("successes", 0)}, maturity=skill.maturity,
                reason="the procedure worked again")
            return
        task, steps = task_of(proc.text), steps_of(proc.text)
        text = f"Skill: {task}" + (f". Steps: {'; '.join(steps)}" if steps else "")
        skill_id = new_id("m_")
        self.store.insert([NewMemory(
            id=skill_id, kind="skill", text=text, raw=False, scope=scope, observed_at=time.time(),
            subject=proc.subject,
            metadata={"skill_status": "candidate", "procedure": procedure_id, "task": task,
                      "name": skill_name(task),
                      "steps": steps, "successes": meta.get("successes", 0)},
            passages=split_passages(text, self.chunk_tokens), source_ids=proc.sources,
        )], new_id("j_"))
        self.store.link([(skill_id, procedure_id, "derived_from", 1.0)])

    # --- "forget what I said about X" -----------------------------------------------------

    def _forget_requests(self, episode_ids: Sequence[str]) -> list[str]:
        forgotten: list[str] = []
        batch = self.store.items_by_id(episode_ids)
        for n, ep in enumerate(batch):
            # only the user asks the agent; in a chat between named people ("Caroline",
            # "Mel") a "forget it" is said to the other person, not to the memory
            if ep.kind != "episode" or _speaker(ep) != "user":
                continue
            for request in forget_requests(self.reader, ep.text):
                forgotten += self.forget_about(request.text, ep, later={e.id for e in batch[n:]},
                                               keeps=request.keeps)
        return forgotten

    def forget_about(self, request: str, said_in: MemoryItem, *,
                     later: set[str] | frozenset[str] = frozenset(),
                     keeps: Sequence[str] = ()) -> list[str]:
        """Forget what ``request`` is about, in the scope of the turn that said it.

        The targets (see :func:`.relate.forget_targets`) are cut into clauses and the
        clauses the request touches are what is forgotten. Memories that say it are
        forgotten whole, unless the user asked to keep the rest (``keeps``: "forget the
        client's name, the stack is fine to keep"): then they keep a new version without
        it. The turns that said it, or restate its rare words, are hidden. Soft: status
        ``forgotten``, with history.
        ``later`` names the turns said with or after the request: what they say is new,
        not a target. Returns the ids changed."""
        look = shared_scope(said_in).model_copy(update={"nested": True})
        said = self.store.recent_turns(shared_scope(said_in), 200, before=said_in.id)
        # what the user said; a reply that restates it goes with it below (its rare words)
        turns = [t for t in said if t.kind == "episode" and _role(_speaker(t)) == "user"]
        # what this user said can be forgotten by them; the team's memories cannot
        memories = [m for m in self.store.derived(look, limit=1000) if m.user_id == said_in.user_id]
        # what the request's own turn and the replies to it say is new, not a target
        later = {said_in.id, *later}
        known = [m for m in memories if not set(m.sources) & later]
        for kept in keeps:  # what the user keeps is not what the request is about
            request = request.replace(kept, " ").strip()
        if self._sets_aside(request, turns, said_in, known):
            return []
        targets = forget_targets(self.reader, request, known + turns)
        if not targets:
            return []
        topic = {w for w in content_words(request) - self.reader.heads.forget_words if telling(w)}
        stems = _stems(topic)
        gone: list[str] = []
        for t in targets:  # best first: what the clearest target loses guides the others
            gone += self._touched(clauses(t.text), topic, request, gone, keeps)
        episodes = {t.id for t in targets if t.is_episode} | {s for t in targets for s in t.sources}
        episodes.discard(said_in.id)  # it may say other things worth keeping: decided below
        # what the memories derived from those turns say about the topic goes too
        hits: dict[str, list[str]] = {}
        by_id = {t.id: t for t in said}
        for m in memories:
            parts = clauses(m.text)
            near = [by_id[s] for s in m.sources if s in episodes and s in by_id]
            hit = [c for c in parts if c in gone or (near and _stems(content_words(c)) & stems)]
            if not hit and (m in targets or any(_from_touched(m.text, ep.text, gone) for ep in near)):
                # all of it, unless the user keeps a part: then what is not kept
                hit = (keeps and self._not_kept(parts, near, gone, keeps)) or parts
            hits[m.id] = hit
        forgotten = gone + [c for h in hits.values() for c in h]
        # what goes goes whole, unless the user keeps a part: a tool's output that repeats
        # any rare word of it ("PAY-2231" in a git log) goes too
        whole = forgotten if keeps else \
            forgotten + [t.text for t in targets] + [m.text for m in memories if hits[m.id]]
        # and every turn or event that restates its rare words, and every memory that
        # restates the names of what the request touched: in a small store every word is
        # rare, and another memory may well say "provider" where only "Plivo" was asked about
        rare = self._rare_words(whole, turns)
        episodes |= {t.id for t in said if _restates(rare, t.text)}
        touched = {w for c in forgotten for w in content_words(c)}
        named = {w for w in rare & touched if has_cjk(w) or any(c.isdigit() for c in w)
                 or w in _capitalised(" ".join(forgotten))}
        episodes.discard(said_in.id)
        reason = f"asked to forget: {request[:200]}"
        changed: list[str] = []
        kept_from_request = False
        for m in memories:
            parts = clauses(m.text)
            hit = hits[m.id] + [c for c in parts if c not in hits[m.id] and _restates(named, c)]
            if not hit:
                kept_from_request |= said_in.id in m.sources
                continue
            text = _join([c for c in parts if c not in hit]) if keeps else ""
            if text and not is_fragment(text):
                self.store.update_text(m.id, look, text, split_passages(text, self.chunk_tokens),
                                       reason, new_id("j_"))
                kept_from_request |= said_in.id in m.sources
            else:
                self.store.set_fields(m.id, None, action="forgotten", status="forgotten",
                                      reason=reason)
            changed.append(m.id)
        if not kept_from_request:
            episodes.add(said_in.id)
        for item in self.store.items_by_id(sorted(episodes)):
            if item.status == "active":
                self.store.set_fields(item.id, None, action="forgotten", status="forgotten",
                                      reason=reason)
                changed.append(item.id)
        return changed

    def _sets_aside(self, request: str, turns: Sequence[MemoryItem], said_in: MemoryItem,
                    known: Sequence[MemoryItem]) -> bool:
        """Whether a request that names nothing ("forget it, I'll do it myself") sets aside
        what was just said rather than anything remembered: a sentence of its own turn that
        both readers read as chatter and that names nothing said before ("ugh, this rebase
        is a mess. forget it"), or a turn of its session that holds nothing worth keeping
        (a task, a question). Then there is nothing to forget."""
        words = self.reader.heads.forget_words
        pieces = units(request)
        if len(pieces) == 2 and points_back(pieces[1].text, words):
            said = pieces[0].text
            reading = self.reader.read([said], ["user"])[0]
            topic = {w for w in _stems(topic_words(said, words)) if telling(w)}
            before = [m for m in [*known, *turns] if m.id != said_in.id]
            return (not reading.worth and reading.intent == "chitchat"
                    and reading.second_intent in (None, "chitchat")
                    and not any(topic & _stems(content_words(m.text)) for m in before))
        if len(pieces) != 1 or not points_back(request, words) or any(
                telling(w) for w in _stems(topic_words(request, words))):
            return False
        mine = [t for t in turns if t.session_id == said_in.session_id]
        if not mine:
            return False
        pieces = [u.text for u in units(mine[-1].text)] or [mine[-1].text]
        return not any(r.worth for r in self.reader.read(pieces, ["user"] * len(pieces)))

    def _touched(self, parts: list[str], topic: set[str], request: str,
                 gone: Sequence[str], keeps: Sequence[str] = ()) -> list[str]:
        """The clauses a forget request is about: those sharing its topic words or
        restating a clause already forgotten, else the nearest in meaning to the request
        and not to what the user keeps."""
        if len(parts) <= 1:
            return parts
        said = {w for c in gone for w in content_words(c) if telling(w)}
        touched = [c for c in parts if topic & content_words(c) or _restates(said, c)]
        if not touched:
            near = self.reader.similarity(parts, request)
            for kept in keeps:
                near = near - np.maximum(0.0, self.reader.similarity(parts, kept) - near.mean())
            touched = [parts[int(near.argmax())]]
        # a bare value ("13812345678") goes with the clause it follows
        return [c for i, c in enumerate(parts) if c in touched
                or (_bare(c) and i > 0 and parts[i - 1] in touched)]

    def _not_kept(self, parts: Sequence[str], turns: Sequence[MemoryItem], gone: Sequence[str],
                  keeps: Sequence[str]) -> list[str]:
        """The clauses of a memory drawn from a touched sentence that the user does not
        keep: a clause stays when the clause of the turns it was drawn from (the one it
        shares most words with: the memory names the speaker where the turn says "I") is
        not gone and it names what the user keeps ("keep the editor part", less the
        wording all such requests share)."""
        said = [c for t in turns for c in clauses(t.text)]
        wording = self.reader.heads.forget_words | self.reader.heads.keep_words
        kept = _stems({w for k in keeps for w in content_words(k) - wording if telling(w)})
        if not said or not kept:
            return []
        return [p for p in parts if not _stems(content_words(p)) & kept
                or max(said, key=lambda c: jaccard(content_words(p), content_words(c))) in gone]

    def _rare_words(self, texts: Sequence[str], turns: Sequence[MemoryItem]) -> set[str]:
        """Words of ``texts`` that few of ``turns`` use: names, numbers, identifiers."""
        if not texts:
            return set()
        counts: Counter[str] = Counter(w for t in turns for w in content_words(t.text))
        limit = max(2, len(turns) // 20)
        return {w for text in texts for w in content_words(text)
                if counts[w] <= limit and (len(w) >= 5 or has_cjk(w) or any(c.isdigit() for c in w))
                and w not in self.reader.heads.forget_words}


_OPENING = re.compile(r"^(?:(?:and|but|while|whereas)\s+|(?:而且|并且|但是|另外)，?)", re.IGNORECASE)


def _join(parts: Sequence[str]) -> str:
    text = ""
    for p in parts:  # no space after a full-width comma
        text += p.strip() if not text or text[-1] in "，；。" else " " + p.strip()
    text = _OPENING.sub("", text.strip(" ,;，；"))  # the clause before it is gone
    return text[:1].upper() + text[1:]


def _from_touched(memory: str, turn: str, gone: Sequence[str]) -> bool:
    """Whether a memory derived from ``turn`` came from a sentence of it that the request
    touched: a sentence is said as one thought ("dealing with health stuff, surgery on
    Thursday, so I may be slow"), so what was drawn from it goes with the part asked about."""
    sentences = [u.text for u in units(turn)]
    if not sentences:
        return False
    words = content_words(memory)
    source = max(sentences, key=lambda u: len(words & content_words(u)))
    return any(c in source for c in gone)


def _bare(clause: str) -> bool:
    """A value with nothing said about it: one token ("13812345678", an address)."""
    return len(clause.strip(" ,;，；。.").split()) <= 1 and not (has_cjk(clause) and len(clause) > 6)


_CAPITALISED = re.compile(r"(?<=[^\s.!?:;\u2014-])(\s+)([A-Z][\w'-]*)")


def _capitalised(text: str) -> set[str]:
    """The words written with a capital inside a sentence, lower-cased: names."""
    return {m.group(2).lower() for m in _CAPITALISED.finditer(text)}


def _restates(rare: set[str], text: str) -> bool:
    """Shares a rare word with a forgotten text (two, for Chinese bigrams)."""
    shared = rare & content_words(text)
    return any(not has_cjk(w) for w in shared) or len(shared) >= 2
