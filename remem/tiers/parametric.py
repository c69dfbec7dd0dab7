"""Parametric memory: the interface for adapters (LoRA) trained from memories.

Memories that hold for months (preferences, conventions, pitfalls with their fixes)
can be trained into a small adapter on a local model, so the model knows them without
their text in the prompt. This module fixes the interface: an implementation trains an
adapter from memories, loads and unloads one onto its base model, and says which one is
loaded. :class:`remem.tiers.lora.LoraMemory` is remem's (LoRA with peft); what goes
into an adapter and the record kept of it are in :mod:`remem.tiers.adapters`.

It needs nothing beyond remem itself; an implementation brings its own training stack.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ..model import MemoryItem

__all__ = ["AdapterInfo", "ParametricMemory"]


class AdapterInfo(BaseModel):
    """An adapter trained from memories: where it is, what it was trained on and from.

    ``memory_ids`` and ``memory_versions`` say exactly which memories (at which version)
    it learned, so a later change or forget can be detected and the adapter retrained.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str = Field(description="folder or file holding the adapter's weights")
    base_model: str = Field(description="the model it adapts (a local path or a model id)")
    memory_ids: list[str] = Field(default_factory=list)
    memory_versions: dict[str, int] = Field(default_factory=dict, description="memory id -> version learned")
    method: str = Field("lora", description="how it was trained, e.g. 'lora'")
    rank: int | None = Field(None, ge=1, description="the adapter's rank, for LoRA")
    created_at: datetime
    metrics: dict[str, float] = Field(default_factory=dict,
                                      description="e.g. final loss, recall on a probe set")
    base_model_sha256: str | None = Field(None, description="sha256 of the base model's weight files")
    scope: dict[str, str | None] = Field(default_factory=dict,
                                         description="org_id, user_id, agent_id, project it was trained for")
    settings: dict[str, Any] = Field(default_factory=dict, description="the training settings")


@runtime_checkable
class ParametricMemory(Protocol):
    """What a parametric memory does: train an adapter from memories and put it in use.

    Implementations own one base model. Training does not change which adapter is
    loaded; ``load`` does. Errors are :class:`remem.RememError` subclasses.
    """

    def train(self, memories: Sequence[MemoryItem], base_model_dir: str | None = None, *,
              out_dir: str | None = None, options: Mapping[str, object] | None = None) -> AdapterInfo:
        """Train an adapter from ``memories`` on the base model (the one in
        ``base_model_dir`` when given) and save it (under ``out_dir`` when given)."""
        ...

    def load(self, adapter_path: str) -> AdapterInfo:
        """Put the adapter saved at ``adapter_path`` on the base model, replacing any other."""
        ...

    def unload(self) -> None:
        """Take the loaded adapter off, leaving the base model as it was; no-op if none."""
        ...

    def info(self) -> AdapterInfo | None:
        """The loaded adapter, or None when the base model runs alone."""
        ...
