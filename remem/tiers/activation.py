"""Activation memory: the KV cache of the core memory block, computed once and reused.

A causal language model turns a prompt into keys and values at every layer before it
writes its first token (the prefill); for a long prompt that is most of the wait. The
core memory block (``Memory.context(...)``, first ``core_tokens`` tokens) is the same
from one request to the next until the memories change, so its keys and values can be
computed once, kept on disk, and handed to the model with each request: only the
question after the block is prefilled.

:class:`ActivationMemory` does this for a local Hugging Face causal LM:
``prepare(block)`` loads the block's cache from disk or computes and stores it;
``generate(suffix)`` answers a prompt that is the block followed by ``suffix``.

The cache file is safetensors (tensors and string metadata; no pickle, no code), keyed
by a hash of the model (its class, name, configuration and a sample of its weights),
the tokenizer and the block text, with a checksum of its tensors. A file whose key
differs (the block, the model or the tokenizer changed) is stale and is replaced; a file
that cannot be read or fails its checksum is refused (:class:`KVCacheError`) and, in
``prepare``, rebuilt.

The request is tokenized as the block's tokens followed by the suffix's own tokens (the
suffix without special tokens), with and without the cache, so both see the same ids.
Put any chat-template prefix at the start of the block. Only models whose every layer
is full attention are supported (no sliding-window or recurrent layers).

Needs ``pip install "remem[activation]"`` (torch, transformers, safetensors); they are
imported when a model is used, not when this module is.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import os
import re
import threading
import time
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ConfigError, RememError, ValidationError
from ..model import Context

if TYPE_CHECKING:
    import torch
    from transformers import DynamicCache

__all__ = ["ActivationMemory", "Generation", "KVCache", "KVCacheError", "core_block", "load_causal_lm",
           "require"]

log = logging.getLogger(__name__)

FORMAT = "remem-kv-cache"
FORMAT_VERSION = "1"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_LATER_SECTIONS = ("\n\n## Relevant to this session\n", "\n\n## Found for the request\n")

Source = Literal["built", "disk", "memory"]


class KVCacheError(RememError):
    """A KV cache file cannot be used: unreadable, not a remem KV cache, or damaged."""


def require() -> tuple[ModuleType, ModuleType, ModuleType]:
    """torch, transformers and safetensors.torch, or a ConfigError that says how to get them."""
    try:
        import safetensors.torch
        import torch
        import transformers
    except ImportError as exc:
        raise ConfigError(
            f'activation memory needs torch, transformers and safetensors ({exc}): '
            f'pip install "remem[activation]"') from exc
    return torch, transformers, safetensors.torch


def core_block(context: Context) -> str:
    """The stable core block at the start of ``context.text`` ("" when it has none).

    This is the part of a context that stays the same between requests, the one worth
    caching; what follows it (working memory, search results) changes with the session.
    """
    if not context.sections.get("core"):
        return ""
    if context.core_text:
        return context.core_text
    text = context.text
    ends = [i for i in (text.find(title) for title in _LATER_SECTIONS) if i >= 0]
    return text[: min(ends)] if ends else text


@dataclass(frozen=True)
class Generation:
    """What :meth:`ActivationMemory.generate` produced.

    ``token_ids`` are the new tokens only; ``prompt_tokens`` counts the whole prompt, of
    which ``cached_tokens`` came from the stored cache (0 without it); ``seconds`` is the
    wall time of the call.
    """

    text: str
    token_ids: tuple[int, ...]
    prompt_tokens: int
    cached_tokens: int
    seconds: float


class KVCache:
    """The keys and values a model computed for a block of text, with the block's token ids.

    ``layers`` holds one ``(keys, values)`` pair per layer, each shaped
    ``[1, kv_heads, tokens, head_dim]``. ``key`` identifies the model, tokenizer and block
    it was computed from. ``source`` says where this copy came from: ``"built"`` (computed
    now), ``"disk"`` (read from a file) or ``"memory"`` (held from an earlier call);
    ``rebuilt_because`` says why an existing file was not used, when one was not.
    """

    def __init__(self, key: str, token_ids: torch.Tensor, layers: Sequence[tuple[torch.Tensor, torch.Tensor]],
                 *, source: Source = "built", rebuilt_because: str | None = None) -> None:
        self.key = key
        self.token_ids = token_ids
        self.layers = list(layers)
        self.source: Source = source
        self.rebuilt_because = rebuilt_because

    def __repr__(self) -> str:
        return (f"KVCache(key={self.key[:12]}..., tokens={self.tokens}, layers={len(self.layers)}, "
                f"source={self.source!r})")

    @property
    def tokens(self) -> int:
        """How many tokens the cache holds."""
        return int(self.token_ids.shape[0])

    @property
    def nbytes(self) -> int:
        """Size of the keys and values in bytes."""
        return sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in self.layers)

    @classmethod
    def compute(cls, model: Any, token_ids: torch.Tensor, key: str) -> KVCache:
        """Run ``model`` over ``token_ids`` (1-D) once and keep the keys and values it made."""
        torch, transformers, _ = require()
        cache = transformers.DynamicCache(config=model.config)
        device = _device(model)
        kwargs: dict[str, Any] = {_cache_kwarg(model): cache, "use_cache": True}
        if "logits_to_keep" in inspect.signature(model.forward).parameters:
            kwargs["logits_to_keep"] = 1  # the logits of every position are not needed
        with torch.inference_mode():
            out = model(input_ids=token_ids.to(device).unsqueeze(0), **kwargs)
        del out  # the cache passed in was filled in place
        layers = getattr(cache, "layers", None)
        if layers is None:
            raise ConfigError(f"transformers {transformers.__version__} is too old for activation memory "
                              f'(its DynamicCache has no layers): pip install -U "remem[activation]"')
        if any(type(layer) is not transformers.cache_utils.DynamicLayer for layer in layers):
            raise ConfigError(
                f"activation memory supports models whose every layer is full attention; "
                f"{type(model).__name__} has sliding-window or recurrent layers")
        pairs = [(layer.keys.detach().clone(), layer.values.detach().clone()) for layer in layers]
        return cls(key, token_ids.detach().cpu().clone(), pairs, source="built")

    def to_dynamic_cache(self, config: Any = None) -> DynamicCache:
        """A new ``transformers.DynamicCache`` holding a copy of these keys and values.

        Generation appends to the cache it is given, so each request needs its own copy.
        """
        _, transformers, _ = require()
        cache = transformers.DynamicCache(self.layers, config=config)
        first = cache.layers[0].keys if cache.layers else None
        if first is not None and self.layers and first.data_ptr() == self.layers[0][0].data_ptr():
            # a transformers release that adopts the given tensors instead of copying them
            cache = transformers.DynamicCache([(k.clone(), v.clone()) for k, v in self.layers], config=config)
        return cache

    def save(self, path: str | os.PathLike[str], metadata: Mapping[str, str] | None = None) -> Path:
        """Write the cache to ``path`` as safetensors, atomically (a reader never sees half a file)."""
        _, _, st = require()
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tensors = {"token_ids": self.token_ids.to("cpu").contiguous()}
        for i, (k, v) in enumerate(self.layers):
            tensors[f"layer.{i}.keys"] = k.detach().to("cpu").contiguous()
            tensors[f"layer.{i}.values"] = v.detach().to("cpu").contiguous()
        meta = dict(metadata or {})
        meta.update(format=FORMAT, version=FORMAT_VERSION, key=self.key, layers=str(len(self.layers)),
                    tokens=str(self.tokens), checksum=_checksum(tensors))
        tmp = target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        try:
            st.save_file(tensors, str(tmp), metadata=meta)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        return target

    @classmethod
    def load(cls, path: str | os.PathLike[str], device: Any = "cpu") -> KVCache:
        """Read a cache written by :meth:`save`; raises :class:`KVCacheError` if the file is
        not one, or is damaged (its checksum does not match)."""
        require()
        from safetensors import SafetensorError, safe_open

        where = Path(path)
        if not where.is_file():
            raise FileNotFoundError(2, "no KV cache file", str(where))
        try:
            with safe_open(str(where), framework="pt", device="cpu") as f:
                meta = f.metadata() or {}
                if meta.get("format") != FORMAT:
                    raise KVCacheError(f"{where}: not a remem KV cache file")
                if meta.get("version") != FORMAT_VERSION:
                    raise KVCacheError(f"{where}: KV cache format version {meta.get('version')!r}, "
                                       f"this remem reads {FORMAT_VERSION}")
                n_layers, n_tokens = int(meta["layers"]), int(meta["tokens"])
                names = ["token_ids"] + [f"layer.{i}.{part}" for i in range(n_layers)
                                         for part in ("keys", "values")]
                if set(f.keys()) != set(names):
                    raise KVCacheError(f"{where}: its tensors do not match its metadata")
                tensors = {name: f.get_tensor(name) for name in names}
        except KVCacheError:
            raise
        except (SafetensorError, OSError, ValueError, KeyError, RuntimeError) as exc:
            raise KVCacheError(f"{where}: not a readable KV cache file ({exc})") from exc
        if _checksum(tensors) != meta.get("checksum"):
            raise KVCacheError(f"{where}: damaged KV cache file (checksum mismatch)")
        ids = tensors["token_ids"]
        layers = [(tensors[f"layer.{i}.keys"], tensors[f"layer.{i}.values"]) for i in range(n_layers)]
        if ids.dim() != 1 or ids.shape[0] != n_tokens or any(
                k.dim() != 4 or k.shape != v.shape or k.shape[2] != n_tokens for k, v in layers):
            raise KVCacheError(f"{where}: KV cache tensors of unexpected shapes")
        layers = [(k.to(device), v.to(device)) for k, v in layers]
        return cls(meta["key"], ids, layers, source="disk")


class ActivationMemory:
    """The KV cache of one block of text (the core memory block) for a local causal LM.

    ``model`` and ``tokenizer`` are a Hugging Face causal LM (in eval mode) and its
    tokenizer, already loaded; :meth:`from_pretrained` loads both from a local folder.
    The cache is kept in ``cache_dir`` as ``<name>.safetensors``: one block per name (use
    one name per user or project whose block differs). ``model_id`` names the weights;
    by default it is derived from the model's class, name, configuration and a sample of
    its weights. Calls on one instance are serialised.

    >>> am = ActivationMemory(model, tokenizer, "~/.remem/kv")
    >>> am.prepare(core_block(memory.context(user_id="alice")))
    >>> am.generate("Which package manager do I use?", max_new_tokens=32).text
    """

    def __init__(self, model: Any, tokenizer: Any, cache_dir: str | os.PathLike[str], *,
                 name: str = "core", model_id: str | None = None) -> None:
        require()
        if not _NAME.match(name):
            raise ValidationError("name", f"{name!r}: use letters, digits, '.', '-' or '_' (at most 128)")
        self.model = model
        self.tokenizer = tokenizer
        self.cache_dir = Path(cache_dir).expanduser()
        self.name = name
        self.model_id = model_id or _model_fingerprint(model)
        self.tokenizer_id = _tokenizer_fingerprint(tokenizer)
        self._cache_kwarg = _cache_kwarg(model)
        self._current: KVCache | None = None
        self._lock = threading.RLock()

    @classmethod
    def from_pretrained(cls, model_path: str | os.PathLike[str], cache_dir: str | os.PathLike[str], *,
                        name: str = "core", dtype: str | None = None) -> ActivationMemory:
        """Load a causal LM and its tokenizer from a local folder (never from a hub)."""
        model, tokenizer = load_causal_lm(model_path, dtype=dtype)
        return cls(model, tokenizer, cache_dir, name=name)

    @property
    def path(self) -> Path:
        """The cache file of this name."""
        return self.cache_dir / f"{self.name}.safetensors"

    @property
    def cache(self) -> KVCache | None:
        """The cache prepared last, or None before :meth:`prepare`."""
        return self._current

    def key(self, block: str) -> str:
        """The hash that identifies ``block``'s cache for this model and tokenizer."""
        digest = hashlib.sha256()
        for part in (self.model_id, self.tokenizer_id, block):
            digest.update(part.encode("utf-8", "surrogatepass"))
            digest.update(b"\0")
        return digest.hexdigest()

    def prepare(self, block: str) -> KVCache:
        """The KV cache of ``block``: held, read from disk, or computed now and stored.

        A file made for another block, model or tokenizer is replaced; a damaged file is
        refused, logged and replaced.
        """
        if not isinstance(block, str) or not block:
            raise ValidationError("block", "expected the non-empty text of the block to cache")
        key = self.key(block)
        with self._lock:
            if self._current is not None and self._current.key == key:
                self._current.source = "memory"
                return self._current
            reason = "no cache file yet"
            try:
                loaded = KVCache.load(self.path, _device(self.model))
            except FileNotFoundError:
                loaded = None
            except KVCacheError as exc:
                log.warning("%s; rebuilding it", exc)
                loaded, reason = None, f"the file was refused: {exc}"
            if loaded is not None and loaded.key == key:
                self._current = loaded
                return loaded
            if loaded is not None:
                reason = "the block, the model or the tokenizer changed"
            ids = self._encode(block, special=True)
            limit = getattr(self.model.config, "max_position_embeddings", None)
            if isinstance(limit, int) and ids.shape[0] >= limit:
                raise ValidationError("block", f"{ids.shape[0]} tokens; the model reads at most {limit}")
            built = KVCache.compute(self.model, ids, key)
            built.rebuilt_because = reason
            block_hash = hashlib.sha256(block.encode("utf-8", "surrogatepass")).hexdigest()
            built.save(self.path, {"model_id": self.model_id, "tokenizer_id": self.tokenizer_id,
                                   "block_sha256": block_hash, "model_class": type(self.model).__name__})
            self._current = built
            return built

    def generate(self, prompt_suffix: str, max_new_tokens: int = 32, *, use_cache: bool = True,
                 **generate_kwargs: Any) -> Generation:
        """Continue the prepared block followed by ``prompt_suffix``; greedy unless
        ``generate_kwargs`` (passed to ``model.generate``) say otherwise.

        With ``use_cache=False`` the same prompt is prefilled in full, for comparison.
        """
        torch, _, _ = require()
        if not isinstance(max_new_tokens, int) or isinstance(max_new_tokens, bool) or max_new_tokens < 1:
            raise ValidationError("max_new_tokens", f"expected a positive integer, got {max_new_tokens!r}")
        if not isinstance(prompt_suffix, str):
            raise ValidationError("prompt_suffix", f"expected text, got {type(prompt_suffix).__name__}")
        with self._lock:
            prepared = self._current
            if prepared is None:
                raise ConfigError("no block prepared: call prepare(block) first")
            suffix = self._encode(prompt_suffix, special=False)
            if suffix.shape[0] == 0:
                raise ValidationError("prompt_suffix", "must hold at least one token after the block")
            start = time.perf_counter()
            device = _device(self.model)
            ids = torch.cat([prepared.token_ids, suffix]).unsqueeze(0).to(device)
            kwargs: dict[str, Any] = {"do_sample": False, "pad_token_id": self._pad_id()}
            kwargs.update(generate_kwargs)
            if use_cache:
                kwargs[self._cache_kwarg] = prepared.to_dynamic_cache(self.model.config)
            with torch.inference_mode():
                out = self.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                          max_new_tokens=max_new_tokens, **kwargs)
            seconds = time.perf_counter() - start
        new = tuple(int(t) for t in out[0, ids.shape[1]:].tolist())
        text = self.tokenizer.decode(list(new), skip_special_tokens=True)
        return Generation(text=text, token_ids=new, prompt_tokens=int(ids.shape[1]),
                          cached_tokens=prepared.tokens if use_cache else 0, seconds=seconds)

    def time_to_first_token(self, prompt_suffix: str, *, use_cache: bool = True) -> float:
        """Seconds from the request to its first token (the prefill), with or without the cache."""
        return self.generate(prompt_suffix, max_new_tokens=1, use_cache=use_cache).seconds

    def _encode(self, text: str, *, special: bool) -> torch.Tensor:
        torch, _, _ = require()
        ids = self.tokenizer(text, add_special_tokens=special)["input_ids"]
        return torch.tensor(ids, dtype=torch.long)

    def _pad_id(self) -> int | None:
        for value in (getattr(self.model.generation_config, "pad_token_id", None),
                      self.tokenizer.pad_token_id, self.tokenizer.eos_token_id):
            if isinstance(value, int):
                return value
        return None


def load_causal_lm(model_path: str | os.PathLike[str], *, dtype: str | None = None) -> tuple[Any, Any]:
    """A causal LM (in eval mode) and its tokenizer from a local folder (never from a hub)."""
    torch, transformers, _ = require()
    folder = Path(model_path).expanduser()
    if not folder.is_dir():
        raise ConfigError(f"{folder}: not a folder; remem loads models from a local folder only "
                          f"(config.json, weights and tokenizer files)")
    kwargs: dict[str, Any] = {"local_files_only": True}
    if dtype is not None:
        if not isinstance(getattr(torch, dtype, None), torch.dtype):
            raise ValidationError("dtype", f"{dtype!r} is not a torch dtype (e.g. 'float32', 'bfloat16')")
        kwargs["dtype"] = getattr(torch, dtype)
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        model = transformers.AutoModelForCausalLM.from_pretrained(str(folder), **kwargs)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{folder}: cannot load a causal language model from it: {exc}") from exc
    return model.eval(), tokenizer


def _device(model: Any) -> Any:
    return next(model.parameters()).device


def _cache_kwarg(model: Any) -> str:
    # transformers 5 renamed ``past_key_values`` to ``cache``; the old name still works there but warns
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _checksum(tensors: Mapping[str, torch.Tensor]) -> str:
    torch, _, _ = require()
    crc = 0
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        crc = zlib.crc32(name.encode(), crc)
        crc = zlib.crc32(str(t.dtype).encode() + str(tuple(t.shape)).encode(), crc)
        if t.numel():
            crc = zlib.crc32(t.reshape(-1).view(torch.uint8).numpy().data, crc)
    return f"{crc:08x}"


def _model_fingerprint(model: Any) -> str:
    """A hash of the model's class, name, configuration and 32 values of each weight."""
    torch, _, _ = require()
    digest = hashlib.sha256()
    digest.update(type(model).__name__.encode())
    digest.update(str(getattr(model, "name_or_path", "")).encode())
    digest.update(model.config.to_json_string(use_diff=False).encode())
    with torch.no_grad():
        for name, param in sorted(model.named_parameters(), key=lambda item: item[0]):
            flat = param.detach().reshape(-1)
            step = max(1, flat.numel() // 32)
            sample = flat[::step][:32].to("cpu", torch.float64)
            digest.update(f"{name}{tuple(param.shape)}{param.dtype}".encode())
            digest.update(sample.numpy().tobytes())
    return digest.hexdigest()


def _tokenizer_fingerprint(tokenizer: Any) -> str:
    """A hash of the tokenizer's full definition (vocabulary, merges, special tokens)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    body = backend.to_str() if backend is not None else json.dumps(sorted(tokenizer.get_vocab().items()))
    special = json.dumps(getattr(tokenizer, "special_tokens_map", {}), sort_keys=True, default=str)
    digest = hashlib.sha256(f"{type(tokenizer).__name__}\0{body}\0{special}".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()
