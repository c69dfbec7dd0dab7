"""Memory tiers on a local model: activation memory (a KV cache) and parametric memory.

- :mod:`remem.tiers.activation`: the keys and values a local causal language model
  computes for the stable core memory block, stored on disk (safetensors) and reused, so
  a request that starts with that block only prefills the rest.
- :mod:`remem.tiers.parametric`: the interface of adapters trained from memories;
  :mod:`remem.tiers.lora` implements it with LoRA (peft) and :mod:`remem.tiers.adapters`
  says which memories go in, renders their training pairs and keeps each adapter's
  manifest (no model runtime needed for those).
- :mod:`remem.tiers.tiny`: a byte-level tokenizer and a small randomly initialised Llama
  model, built locally, for tests and benchmarks.

These need the ``activation`` extra (``pip install "remem[activation]"``: torch,
transformers, safetensors) or, for adapters, ``parametric`` (the same and peft),
imported only when a model is used, so importing this package does not need them.
Models are loaded from local folders only.
"""

from .activation import ActivationMemory, Generation, KVCache, KVCacheError, core_block
from .adapters import AdapterRegistry, AdapterState, Pair, SelectionPolicy, render_pairs, select_memories
from .lora import LoraMemory, TrainSettings
from .parametric import AdapterInfo, ParametricMemory

__all__ = [
    "ActivationMemory",
    "AdapterInfo",
    "AdapterRegistry",
    "AdapterState",
    "Generation",
    "KVCache",
    "KVCacheError",
    "LoraMemory",
    "Pair",
    "ParametricMemory",
    "SelectionPolicy",
    "TrainSettings",
    "core_block",
    "render_pairs",
    "select_memories",
]
