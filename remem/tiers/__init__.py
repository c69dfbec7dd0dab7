"""Memory tiers on a local model: activation memory (a KV cache) and parametric memory.

- :mod:`remem.tiers.activation`: the keys and values a local causal language model
  computes for the stable core memory block, stored on disk (safetensors) and reused, so
  a request that starts with that block only prefills the rest.
- :mod:`remem.tiers.parametric`: the interface that adapters trained from memories
  (LoRA) will plug into; no implementation yet.
- :mod:`remem.tiers.tiny`: a byte-level tokenizer and a small randomly initialised Llama
  model, built locally, for tests and benchmarks.

These need the ``activation`` extra (``pip install "remem[activation]"``: torch,
transformers, safetensors), imported only when a model is used, so importing this
package does not need them. Models are loaded from local folders only.
"""

from .activation import ActivationMemory, Generation, KVCache, KVCacheError, core_block
from .parametric import AdapterInfo, ParametricMemory

__all__ = [
    "ActivationMemory",
    "AdapterInfo",
    "Generation",
    "KVCache",
    "KVCacheError",
    "ParametricMemory",
    "core_block",
]
