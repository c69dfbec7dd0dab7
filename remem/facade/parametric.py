"""Memory's methods for parametric memory: the LoRA adapters trained from a scope's
memories, which memories they hold, whether they are current, and training one."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._inputs import parse_scope
from ..config import adapters_path
from ..model import MemoryItem
from ..schedule import parametric
from ..tiers.adapters import AdapterRegistry, AdapterState
from ..tiers.parametric import AdapterInfo
from .base import FacadeBase

__all__ = ["ParametricMethods"]


class ParametricMethods(FacadeBase):
    """Adapters (parametric memory) of a :class:`~remem.memory.Memory`."""

    @property
    def adapters_dir(self) -> Path:
        """The folder of this store's adapters (``config.parametric.adapters``, else
        ``<store file>.adapters`` beside an SQLite file)."""
        return adapters_path(self.config, self.path)

    def adapter_memories(self, *, org_id: str | None = None, user_id: str | None = None,
                         agent_id: str | None = None,
                         project: str | None = None) -> builtins.list[MemoryItem]:
        """The memories of a scope that qualify for its adapter now (canonical, active,
        used often or pinned, unchanged for a while; see ``config.parametric``)."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        return parametric.eligible(self.store, scope, self.config.parametric, self.clock())

    def adapters(self, *, org_id: str | None = None, user_id: str | None = None,
                 agent_id: str | None = None, project: str | None = None,
                 memory_id: str | None = None) -> builtins.list[AdapterState]:
        """The adapters of this store (of a user or project when named; those holding
        ``memory_id`` when given), each with the memories it holds and ``stale``: memory
        id -> what happened to it since (superseded, forgotten, archived, purged, changed)."""
        self._check_open()
        named = {k: v for k, v in dict(org_id=org_id, user_id=user_id, agent_id=agent_id,
                                       project=project).items() if v is not None}
        scope = parse_scope(**named) if named else None
        return parametric.adapter_states(self.store, AdapterRegistry(self.adapters_dir), scope, memory_id)

    def train_adapter(self, model_dir: str | Path | None = None, *, org_id: str | None = None,
                      user_id: str | None = None, agent_id: str | None = None,
                      project: str | None = None, options: Mapping[str, object] | None = None,
                      lora: Any = None) -> AdapterInfo:
        """Train (or retrain) the LoRA adapter of a scope on a local model folder
        (default ``config.parametric.base_model``) from the memories
        :meth:`adapter_memories` gives, and install it in :attr:`adapters_dir`.
        Needs ``pip install "remem[parametric]"``. ``options``: training settings
        (:class:`~remem.tiers.lora.TrainSettings`); ``lora``: a
        :class:`~remem.tiers.lora.LoraMemory` to train with instead of loading the folder.

        >>> m.train_adapter("~/models/qwen2.5-0.5b", user_id="alice")   # doctest: +SKIP
        """
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        folder = model_dir if model_dir is not None else self.config.parametric.base_model
        if folder is None and lora is None:
            from ..errors import ConfigError

            raise ConfigError("which model? give its local folder (remem tiers train --model DIR) "
                              "or set REMEM_LORA_MODEL")
        return parametric.train_adapter(self.store, AdapterRegistry(self.adapters_dir), scope,
                                        folder, self.config.parametric, options=options, now=self.clock(),
                                        lora=lora)

    def use_adapter(self, lora: Any, *, org_id: str | None = None, user_id: str | None = None,
                    agent_id: str | None = None, project: str | None = None) -> AdapterState | None:
        """Load the scope's adapter onto ``lora`` (a :class:`~remem.tiers.lora.LoraMemory`)
        when there is one, stale or not (``stale`` says what changed since); None, and
        nothing loaded, when the scope has none. Pair it with :meth:`use_activation`
        (``lora.activation(...)``) to reuse the core block's KV cache on the adapted model."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        info = AdapterRegistry(self.adapters_dir).get(parametric.exact(scope))
        if info is None:
            lora.unload()
            return None
        lora.load(info.path)
        return parametric.state(self.store, info)
