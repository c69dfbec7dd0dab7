"""``AsyncMemory``: :class:`~remem.Memory` for asyncio code.

Every public method of Memory is here with the same signature, awaited; the call runs in
a worker thread (:func:`asyncio.to_thread`) on the one Memory it wraps, ``sync``.
``tests/test_memory.py`` fails when a method is missing or its signature differs.
"""

from __future__ import annotations

import asyncio
import builtins
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from ..config import Config
    from ..cube import CubeManifest, Installed, SigningKey
    from ..embed import Embedder
    from ..memory import Memory
    from ..model import (
        AddResult,
        Context,
        HeedRate,
        HistoryEntry,
        Hit,
        Injection,
        JobInfo,
        Link,
        MemoryItem,
        Page,
        RetentionResult,
        Share,
        Stats,
        TopicNode,
    )
    from ..organize.team import TeamPlan
    from ..schedule.orchestrate import DoResult
    from ..tiers.adapters import AdapterState
    from ..tiers.parametric import AdapterInfo

__all__ = ["AsyncMemory"]


class AsyncMemory:
    """``Memory`` for asyncio code: the same methods, awaited; work runs in a thread.

    >>> async with AsyncMemory("team.db") as m:
    ...     await m.add("we use pnpm", user_id="alice")
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *,
                 config: Config | None = None, embedder: Embedder | None = None,
                 reembed: bool = False, create: bool = True,
                 clock: Callable[[], float] | None = None) -> None:
        from ..memory import Memory

        self.sync: Memory = Memory(path, config=config, embedder=embedder, reembed=reembed,
                                   create=create, clock=clock)

    async def _call(self, name: str, args: dict[str, Any]) -> Any:
        """Memory's method ``name`` in a worker thread, given the caller's parameters
        (its ``locals()``) by name."""
        kwargs = {key: value for key, value in args.items() if key != "self"}
        return await asyncio.to_thread(getattr(self.sync, name), **kwargs)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._call("close", locals())

    async def flush(self, timeout: float | None = None) -> bool:
        return await self._call("flush", locals())

    async def wait(self, job_ids: Sequence[str], *, kinds: Sequence[str] | None = None,
                   timeout: float | None = None) -> bool:
        return await self._call("wait", locals())

    async def run_jobs(self) -> None:
        await self._call("run_jobs", locals())

    async def stop_jobs(self) -> None:
        await self._call("stop_jobs", locals())

    async def add(self, messages: str | dict[str, Any] | Sequence[dict[str, Any] | str], *,
                  user_id: str | None = None, agent_id: str | None = None, project: str | None = None,
                  session_id: str | None = None, org_id: str | None = None,
                  timestamp: str | datetime | None = None,
                  metadata: dict[str, Any] | None = None,
                  on_ready: Callable[[AddResult], object] | None = None,
                  writer: str | None = None, door: str = "sdk") -> AddResult:
        return await self._call("add", locals())

    async def add_events(self, events: Sequence[dict[str, Any]] | dict[str, Any], *,
                         user_id: str | None = None, agent_id: str | None = None,
                         project: str | None = None, session_id: str | None = None,
                         org_id: str | None = None, timestamp: str | datetime | None = None,
                         metadata: dict[str, Any] | None = None,
                         on_ready: Callable[[AddResult], object] | None = None,
                         door: str = "sdk") -> AddResult:
        return await self._call("add_events", locals())

    async def remember(self, text: str, *, kind: str = "fact", subject: str | None = None,
                       org_id: str | None = None, user_id: str | None = None,
                       agent_id: str | None = None, project: str | None = None,
                       session_id: str | None = None, role: str = "user", pinned: bool = False,
                       metadata: dict[str, Any] | None = None, writer: str | None = None,
                       event_time: str | datetime | None = None,
                       intent: str = "statement", door: str = "sdk") -> MemoryItem:
        return await self._call("remember", locals())

    async def search(self, query: str, *, org_id: str | None = None, user_id: str | None = None,
                     agent_id: str | None = None, project: str | None = None,
                     session_id: str | None = None, k: int = 10, kinds: Sequence[str] | None = None,
                     since: str | datetime | None = None, until: str | datetime | None = None,
                     as_of: str | datetime | None = None, budget_tokens: int | None = None,
                     include_episodes: bool = True, include_superseded: bool = False,
                     include_archived: bool = False, include_shared: bool = True,
                     trust: str | Sequence[str] | None = None,
                     door: str | Sequence[str] | None = None) -> builtins.list[Hit]:
        return await self._call("search", locals())

    async def get(self, memory_id: str, *, org_id: str | None = None, user_id: str | None = None,
                  project: str | None = None, agent_id: str | None = None) -> MemoryItem:
        return await self._call("get", locals())

    async def list(self, *, org_id: str | None = None, user_id: str | None = None,
                   agent_id: str | None = None, project: str | None = None,
                   session_id: str | None = None, kinds: Sequence[str] | None = None,
                   include_episodes: bool = False, include_inactive: bool = False,
                   statuses: Sequence[str] | None = None, as_of: str | datetime | None = None,
                   since: str | datetime | None = None, until: str | datetime | None = None,
                   maturity: str | None = None, subject: str | None = None,
                   limit: int = 50, cursor: str | None = None,
                   trust: str | Sequence[str] | None = None,
                   door: str | Sequence[str] | None = None) -> Page:
        return await self._call("list", locals())

    async def context(self, *, org_id: str | None = None, user_id: str | None = None,
                      agent_id: str | None = None, project: str | None = None,
                      session_id: str | None = None, query: str | None = None,
                      budget_tokens: int = 1000, log: bool = False, door: str = "context") -> Context:
        return await self._call("context", locals())

    async def export(self, *, org_id: str | None = None, user_id: str | None = None,
                     agent_id: str | None = None, project: str | None = None,
                     session_id: str | None = None, include_episodes: bool = True) -> Iterator[MemoryItem]:
        # read in the thread: the store's connection is not handed to the event loop
        found = await asyncio.to_thread(lambda: builtins.list(self.sync.export(
            org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
            session_id=session_id, include_episodes=include_episodes)))
        return iter(found)

    async def stats(self, *, org_id: str | None = None, user_id: str | None = None) -> Stats:
        return await self._call("stats", locals())

    async def change_token(self) -> int:
        return await self._call("change_token", locals())

    async def stored_embedder(self) -> str:
        return await self._call("stored_embedder", locals())

    async def embed_backlog(self) -> int:
        return await self._call("embed_backlog", locals())

    async def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        return await self._call("embed", locals())

    # --- one memory by id -------------------------------------------------------------

    async def update(self, memory_id: str, *, text: str, reason: str | None = None,
                     org_id: str | None = None, user_id: str | None = None,
                     project: str | None = None, agent_id: str | None = None) -> MemoryItem:
        return await self._call("update", locals())

    async def forget(self, memory_id: str, *, reason: str | None = None, org_id: str | None = None,
                     user_id: str | None = None, project: str | None = None,
                     agent_id: str | None = None) -> MemoryItem:
        return await self._call("forget", locals())

    async def restore(self, memory_id: str, *, reason: str | None = None, org_id: str | None = None,
                      user_id: str | None = None, project: str | None = None,
                      agent_id: str | None = None) -> MemoryItem:
        return await self._call("restore", locals())

    async def pin(self, memory_id: str, *, pinned: bool = True, org_id: str | None = None,
                  user_id: str | None = None, project: str | None = None,
                  agent_id: str | None = None) -> MemoryItem:
        return await self._call("pin", locals())

    async def purge(self, memory_id: str, *, org_id: str | None = None, user_id: str | None = None,
                    project: str | None = None, agent_id: str | None = None) -> builtins.list[str]:
        return await self._call("purge", locals())

    async def used(self, memory_ids: Sequence[str], *, org_id: str | None = None,
                   user_id: str | None = None, agent_id: str | None = None,
                   project: str | None = None) -> None:
        await self._call("used", locals())

    async def history(self, memory_id: str, *, org_id: str | None = None, user_id: str | None = None,
                      project: str | None = None, agent_id: str | None = None) -> builtins.list[HistoryEntry]:
        return await self._call("history", locals())

    async def links(self, memory_id: str, *, org_id: str | None = None, user_id: str | None = None,
                    project: str | None = None, agent_id: str | None = None,
                    limit: int = 100) -> builtins.list[Link]:
        return await self._call("links", locals())

    async def around(self, memory_id: str, *, window: int = 1, org_id: str | None = None,
                     user_id: str | None = None, project: str | None = None,
                     agent_id: str | None = None
                     ) -> tuple[builtins.list[MemoryItem], builtins.list[MemoryItem]]:
        return await self._call("around", locals())

    # --- review and upkeep ------------------------------------------------------------

    async def feedback(self, memory_id: str, verdict: str, note: str | None = None, *,
                       org_id: str | None = None, user_id: str | None = None,
                       project: str | None = None, agent_id: str | None = None) -> MemoryItem:
        return await self._call("feedback", locals())

    async def held(self, *, org_id: str | None = None, user_id: str | None = None,
                   agent_id: str | None = None, project: str | None = None,
                   limit: int = 100) -> builtins.list[MemoryItem]:
        return await self._call("held", locals())

    async def review(self, memory_id: str, *, approve: bool, note: str | None = None,
                     org_id: str | None = None, user_id: str | None = None,
                     agent_id: str | None = None, project: str | None = None) -> MemoryItem:
        return await self._call("review", locals())

    async def flagged(self, *, org_id: str | None = None, user_id: str | None = None,
                      agent_id: str | None = None, project: str | None = None,
                      limit: int = 100) -> builtins.list[MemoryItem]:
        return await self._call("flagged", locals())

    async def settle_flag(self, memory_id: str, *, keep: bool, org_id: str | None = None,
                          user_id: str | None = None, agent_id: str | None = None,
                          project: str | None = None) -> MemoryItem:
        return await self._call("settle_flag", locals())

    async def tree(self, *, org_id: str | None = None, user_id: str | None = None,
                   agent_id: str | None = None, project: str | None = None) -> TopicNode:
        return await self._call("tree", locals())

    async def skills(self, *, org_id: str | None = None, user_id: str | None = None,
                     agent_id: str | None = None, project: str | None = None,
                     status: str | None = None) -> builtins.list[MemoryItem]:
        return await self._call("skills", locals())

    async def approve_skill(self, memory_id: str, *, org_id: str | None = None,
                            user_id: str | None = None, agent_id: str | None = None,
                            project: str | None = None) -> MemoryItem:
        return await self._call("approve_skill", locals())

    async def decay(self, *, now: str | datetime | None = None,
                    org_id: str | None = None) -> builtins.list[str]:
        return await self._call("decay", locals())

    async def apply_retention(self, *, now: str | datetime | None = None, dry_run: bool = False,
                              org_id: str | None = None,
                              user_id: str | None = None) -> RetentionResult:
        return await self._call("apply_retention", locals())

    async def strength(self, memory_id: str, *, now: str | datetime | None = None,
                       org_id: str | None = None, user_id: str | None = None,
                       project: str | None = None, agent_id: str | None = None) -> float:
        return await self._call("strength", locals())

    # --- logs and jobs ----------------------------------------------------------------

    async def log_context(self, ctx: Context, *, door: str, query: str | None = None,
                          org_id: str | None = None, user_id: str | None = None,
                          agent_id: str | None = None, project: str | None = None,
                          session_id: str | None = None) -> Injection | None:
        return await self._call("log_context", locals())

    async def log_injection(self, *, door: str, given: Sequence[tuple[str, str, Sequence[str]]],
                            tokens: int, query: str | None = None, org_id: str | None = None,
                            user_id: str | None = None, agent_id: str | None = None,
                            project: str | None = None, session_id: str | None = None,
                            text: str | None = None, at: str | datetime | None = None) -> Injection:
        return await self._call("log_injection", locals())

    async def injections(self, *, org_id: str | None = None, user_id: str | None = None,
                         agent_id: str | None = None, project: str | None = None,
                         session_id: str | None = None, door: str | None = None,
                         limit: int = 50, cursor: str | None = None) -> Page:
        return await self._call("injections", locals())

    async def injected(self, memory_id: str, *, org_id: str | None = None, user_id: str | None = None,
                       agent_id: str | None = None, project: str | None = None,
                       limit: int = 20) -> builtins.list[Injection]:
        return await self._call("injected", locals())

    async def heed(self, *, org_id: str | None = None, user_id: str | None = None,
                   agent_id: str | None = None, project: str | None = None,
                   session_id: str | None = None,
                   since: str | datetime | None = None) -> builtins.list[HeedRate]:
        return await self._call("heed", locals())

    async def record_access(self, *, door: str, action: str, org_id: str | None = None,
                            user_id: str | None = None, actor: str | None = None,
                            key_id: str | None = None, target: str | None = None,
                            status: int | None = None) -> str:
        return await self._call("record_access", locals())

    async def audit(self, *, org_id: str | None = None, user_id: str | None = None,
                    door: str | None = None, actor: str | None = None, key_id: str | None = None,
                    action: str | None = None, target: str | None = None,
                    since: str | datetime | None = None, until: str | datetime | None = None,
                    limit: int = 50, cursor: str | None = None) -> Page:
        return await self._call("audit", locals())

    async def jobs(self, *, state: str | None = None, kind: str | None = None,
                   org_id: str | None = None, user_id: str | None = None,
                   limit: int = 50) -> builtins.list[JobInfo]:
        return await self._call("jobs", locals())

    async def job(self, job_id: str, *, org_id: str | None = None, user_id: str | None = None) -> JobInfo:
        return await self._call("job", locals())

    async def job_states(self, job_ids: Sequence[str]) -> dict[str, str]:
        return await self._call("job_states", locals())

    async def retry_job(self, job_id: str, *, org_id: str | None = None) -> JobInfo:
        return await self._call("retry_job", locals())

    async def cancel_job(self, job_id: str, *, org_id: str | None = None) -> JobInfo:
        return await self._call("cancel_job", locals())

    # --- requests, reminders, sessions ------------------------------------------------

    async def do(self, text: str, *, org_id: str | None = None, user_id: str | None = None,
                 agent_id: str | None = None, project: str | None = None,
                 dry_run: bool = False, door: str = "sdk") -> DoResult:
        return await self._call("do", locals())

    async def reminders(self, *, org_id: str | None = None, user_id: str | None = None,
                        agent_id: str | None = None, project: str | None = None,
                        due: bool = False) -> builtins.list[MemoryItem]:
        return await self._call("reminders", locals())

    async def dismiss_reminder(self, memory_id: str, *, done: bool = False,
                               org_id: str | None = None, user_id: str | None = None,
                               agent_id: str | None = None, project: str | None = None) -> MemoryItem:
        return await self._call("dismiss_reminder", locals())

    async def plan(self, request: str, *, org_id: str | None = None, user_id: str | None = None,
                   project: str | None = None, agent_id: str = "leader") -> TeamPlan:
        return await self._call("plan", locals())

    async def prefetch(self, *, org_id: str | None = None, user_id: str | None = None,
                       agent_id: str | None = None, project: str | None = None,
                       session_id: str) -> builtins.list[str]:
        return await self._call("prefetch", locals())

    async def end_session(self, *, session_id: str, org_id: str | None = None,
                          user_id: str | None = None, agent_id: str | None = None,
                          project: str | None = None) -> builtins.list[str]:
        return await self._call("end_session", locals())

    async def use_activation(self, activation: Any, *, org_id: str | None = None,
                             user_id: str | None = None, agent_id: str | None = None,
                             project: str | None = None, budget_tokens: int = 1000) -> None:
        await self._call("use_activation", locals())

    # --- parametric memory (adapters) ------------------------------------------------

    @property
    def adapters_dir(self) -> Path:
        return self.sync.adapters_dir

    async def adapter_memories(self, *, org_id: str | None = None, user_id: str | None = None,
                               agent_id: str | None = None,
                               project: str | None = None) -> builtins.list[MemoryItem]:
        return await self._call("adapter_memories", locals())

    async def adapters(self, *, org_id: str | None = None, user_id: str | None = None,
                       agent_id: str | None = None, project: str | None = None,
                       memory_id: str | None = None) -> builtins.list[AdapterState]:
        return await self._call("adapters", locals())

    async def train_adapter(self, model_dir: str | Path | None = None, *, org_id: str | None = None,
                            user_id: str | None = None, agent_id: str | None = None,
                            project: str | None = None, options: Mapping[str, object] | None = None,
                            lora: Any = None) -> AdapterInfo:
        return await self._call("train_adapter", locals())

    async def use_adapter(self, lora: Any, *, org_id: str | None = None, user_id: str | None = None,
                          agent_id: str | None = None, project: str | None = None) -> AdapterState | None:
        return await self._call("use_adapter", locals())

    # --- sharing, cubes, PAM ----------------------------------------------------------

    async def share(self, *, grantee: str, user_id: str | None = None, project: str | None = None,
                    org_id: str | None = None, grantee_kind: str = "user", access: str = "read",
                    created_by: str | None = None) -> Share:
        return await self._call("share", locals())

    async def unshare(self, share_id: str, *, org_id: str | None = None,
                      user_id: str | None = None) -> Share:
        return await self._call("unshare", locals())

    async def shares(self, *, org_id: str | None = None, user_id: str | None = None,
                     grantee: str | None = None) -> builtins.list[Share]:
        return await self._call("shares", locals())

    async def signing_key(self, *, create: bool = True) -> SigningKey:
        return await self._call("signing_key", locals())

    async def pack_cube(self, out: str | os.PathLike[str] | None = None, *, name: str,
                        user_id: str | None = None, project: str | None = None,
                        agent_id: str | None = None, org_id: str | None = None, version: str = "1.0.0",
                        description: str = "", license: str = "CC-BY-4.0",
                        kinds: Sequence[str] | None = None, include_episodes: bool = False,
                        signer_name: str | None = None) -> tuple[Path, CubeManifest]:
        return await self._call("pack_cube", locals())

    async def verify_cube(self, source: str | os.PathLike[str]) -> CubeManifest:
        return await self._call("verify_cube", locals())

    async def install_cube(self, source: str | os.PathLike[str], *, user_id: str | None = None,
                           project: str | None = None, agent_id: str | None = None,
                           org_id: str | None = None) -> Installed:
        return await self._call("install_cube", locals())

    async def uninstall_cube(self, name: str, *, user_id: str | None = None, project: str | None = None,
                             agent_id: str | None = None, org_id: str | None = None) -> builtins.list[str]:
        return await self._call("uninstall_cube", locals())

    async def installed_cubes(self, *, user_id: str | None = None, project: str | None = None,
                              agent_id: str | None = None,
                              org_id: str | None = None) -> dict[str, dict[str, Any]]:
        return await self._call("installed_cubes", locals())

    async def export_pam(self, *, user_id: str | None = None, project: str | None = None,
                         agent_id: str | None = None, org_id: str | None = None) -> dict[str, Any]:
        return await self._call("export_pam", locals())

    async def import_pam(self, document: Any, *, user_id: str | None = None, project: str | None = None,
                         agent_id: str | None = None, org_id: str | None = None) -> builtins.list[str]:
        return await self._call("import_pam", locals())
