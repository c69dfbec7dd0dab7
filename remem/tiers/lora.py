"""LoRA adapters trained from memories on a local causal LM (peft), saved as safetensors.

:class:`LoraMemory` implements :class:`~remem.tiers.parametric.ParametricMemory`:
``train`` renders question-and-answer pairs from the memories
(:func:`~remem.tiers.adapters.render_pairs`), trains a low-rank adapter on the base
model's attention and MLP projections with the loss on the answers only, and writes the
adapter folder: ``adapter_model.safetensors`` and ``adapter_config.json`` (peft's, no
pickle) and ``manifest.json`` (the base model's hash, the memory ids and versions, the
settings, the date). ``load`` puts one on the base model, ``answer`` asks it a question,
and ``activation`` composes it with activation memory: the KV cache of the core block
computed by the adapted model (its key covers the adapter's weights, so a cache made
without the adapter, or with another, is not reused).

Needs ``pip install "remem[parametric]"`` (torch, transformers, peft, safetensors),
imported when a model is used.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import random
import shutil
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, ValidationError
from ..model import MemoryItem, Scope
from .activation import load_causal_lm
from .adapters import model_folder_sha256, now_utc, read_manifest, render_pairs, write_manifest
from .parametric import AdapterInfo

if TYPE_CHECKING:
    from .activation import ActivationMemory

__all__ = ["LoraMemory", "TrainSettings", "fit", "prompt", "require_parametric", "train_scope"]

#: The projections LoRA adapts when the model has them (Llama, Mistral, Qwen and kin).
PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def require_parametric() -> tuple[ModuleType, ModuleType, ModuleType]:
    """torch, transformers and peft, or a ConfigError that says how to get them."""
    try:
        import peft
        import safetensors  # noqa: F401  (peft saves adapters with it)
        import torch
        import transformers
    except ImportError as exc:
        raise ConfigError(f'parametric memory needs torch, transformers, peft and safetensors ({exc}): '
                          f'pip install "remem[parametric]"') from exc
    return torch, transformers, peft


def prompt(question: str, notes: Sequence[str] = ()) -> str:
    """The prompt an adapter is trained and asked with; ``notes`` (memory texts) go
    before the question when the memories are given as plain text instead."""
    head = "".join(f"Note: {' '.join(n.split())}\n" for n in notes)
    return f"{head}Question: {' '.join(question.split())}\nAnswer:"


@dataclass(frozen=True)
class TrainSettings:
    """How an adapter is trained; every field can be given in ``train(options=...)``.

    ``rank``/``alpha``: the LoRA rank and scale; ``epochs`` over all pairs;
    ``phrasings``: questions per memory; ``lr``: AdamW's learning rate; ``batch_size``;
    ``seed``: shuffling and initialisation; ``max_tokens``: a pair is cut to this.
    """

    rank: int = 8
    alpha: int = 16
    epochs: int = 8
    phrasings: int = 4
    lr: float = 2e-3
    batch_size: int = 8
    seed: int = 0
    max_tokens: int = 256

    @classmethod
    def from_options(cls, options: Mapping[str, object] | None) -> TrainSettings:
        """Settings from a mapping of field -> value; a wrong name or value is a ValidationError."""
        settings = cls()
        for name, value in (options or {}).items():
            fields = {f.name: f for f in dataclasses.fields(cls)}
            if name not in fields:
                raise ValidationError("options", f"{name!r} is not a training setting; use one of "
                                      f"{', '.join(fields)}")
            kind = float if name == "lr" else int
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0 or (
                    kind is int and value != int(value)):
                raise ValidationError("options", f"{name}={value!r}: expected a positive {kind.__name__}")
            settings = dataclasses.replace(settings, **{name: kind(value)})
        return settings


class LoraMemory:
    """Parametric memory on one local causal LM: LoRA adapters trained from memories.

    Give the base model as a local folder (``base_model_dir``, loaded on first use and
    hashed over its weight files), or as a loaded ``model`` and ``tokenizer`` (then the
    hash covers the weights in memory). Calls on one instance are serialised.

    >>> lora = LoraMemory("~/models/qwen2.5-0.5b")
    >>> info = lora.train(memories, out_dir="adapters/alice")
    >>> lora.load(info.path)
    >>> lora.answer("Which package manager does Alice use?")
    """

    def __init__(self, base_model_dir: str | os.PathLike[str] | None = None, *, model: Any = None,
                 tokenizer: Any = None) -> None:
        if (model is None) != (tokenizer is None):
            raise ValidationError("model", "give both a model and its tokenizer, or neither")
        if base_model_dir is None and model is None:
            raise ValidationError("base_model_dir", "give the base model's folder (or a model and tokenizer)")
        self.base_model_dir = None if base_model_dir is None else Path(base_model_dir).expanduser()
        self._model = model
        self._tokenizer = tokenizer
        self._sha256: str | None = None
        self._peft: Any = None
        self._info: AdapterInfo | None = None
        self._lock = threading.RLock()

    # --- the base model -----------------------------------------------------------------

    @property
    def model(self) -> Any:
        """The model as it runs now: the base model, with the loaded adapter's layers if any."""
        self._ensure()
        return self._peft.get_base_model() if self._peft is not None else self._model

    @property
    def tokenizer(self) -> Any:
        self._ensure()
        return self._tokenizer

    def _ensure(self) -> None:
        require_parametric()
        if self._model is None:
            assert self.base_model_dir is not None
            self._model, self._tokenizer = load_causal_lm(self.base_model_dir)

    @property
    def base_model_sha256(self) -> str:
        """sha256 of the base model's weight files (or, for a model given in memory, of its weights)."""
        if self._sha256 is None:
            if self.base_model_dir is not None:
                self._sha256 = model_folder_sha256(self.base_model_dir)
            else:
                self._sha256 = _weights_sha256(self._model)
        return self._sha256

    @property
    def base_model_name(self) -> str:
        if self.base_model_dir is not None:
            return str(self.base_model_dir)
        return str(getattr(self._model, "name_or_path", "") or type(self._model).__name__)

    # --- the interface --------------------------------------------------------------------

    def train(self, memories: Sequence[MemoryItem], base_model_dir: str | os.PathLike[str] | None = None, *,
              out_dir: str | os.PathLike[str] | None = None, options: Mapping[str, object] | None = None,
              scope: Scope | None = None, progress: Callable[[int], object] | None = None) -> AdapterInfo:
        """Train an adapter on ``memories`` and save it in ``out_dir`` (default: a new
        temporary folder); the adapter loaded before, if any, stays loaded.

        ``base_model_dir``, when given, must be this instance's base model folder.
        ``options`` are :class:`TrainSettings` fields; ``scope`` is recorded in the
        manifest; ``progress`` is called with each epoch done (a job renews its lease).
        """
        if base_model_dir is not None and (
                self.base_model_dir is None or Path(base_model_dir).expanduser().resolve()
                != self.base_model_dir.resolve()):
            raise ConfigError(f"{base_model_dir}: this LoraMemory's base model is {self.base_model_name}; "
                              f"make a LoraMemory for the other model")
        if not memories:
            raise ValidationError("memories", "nothing to train: no memories given")
        settings = TrainSettings.from_options(options)
        torch, _, peft = require_parametric()
        with self._lock:
            self._ensure()
            before = self._info
            self.unload()
            started = time.perf_counter()
            pairs = [p for m in memories for p in render_pairs(m, phrasings=settings.phrasings)]
            with warnings.catch_warnings():  # peft calls a transformers method deprecated in 5.x
                warnings.simplefilter("ignore", FutureWarning)
                tuned = peft.get_peft_model(self._model, peft.LoraConfig(
                    r=settings.rank, lora_alpha=settings.alpha, lora_dropout=0.0, bias="none",
                    target_modules=_targets(self._model), task_type="CAUSAL_LM"))
            try:
                loss = fit(torch, tuned, self._tokenizer, [(prompt(p.question), p.answer) for p in pairs],
                           settings, progress)
                seconds = time.perf_counter() - started
                target = Path(out_dir).expanduser() if out_dir is not None else Path(
                    tempfile.mkdtemp(prefix="remem-adapter-"))
                target.mkdir(parents=True, exist_ok=True)
                # the embeddings are not adapted; saying so keeps peft from looking the base model up online
                tuned.save_pretrained(str(target), safe_serialization=True, save_embedding_layers=False)
            finally:
                self._model = tuned.unload()  # the base model's own modules back, unchanged
                self._model.eval()
            (target / "README.md").unlink(missing_ok=True)  # peft's model card template
            weights = target / "adapter_model.safetensors"
            info = AdapterInfo(
                path=str(target), base_model=self.base_model_name, base_model_sha256=self.base_model_sha256,
                memory_ids=[m.id for m in memories], memory_versions={m.id: m.version for m in memories},
                method="lora", rank=settings.rank, created_at=now_utc(),
                scope={} if scope is None else scope.model_dump(include={"org_id", "user_id", "agent_id",
                                                                          "project"}),
                settings={**dataclasses.asdict(settings), "pairs": len(pairs), "prompt": prompt("{question}"),
                          "target_modules": sorted(_targets(self._model))},
                metrics={"final_loss": round(loss, 4), "train_seconds": round(seconds, 2),
                         "adapter_bytes": float(weights.stat().st_size)})
            write_manifest(target, info)
            if before is not None:
                self.load(before.path)
            return info

    def load(self, adapter_path: str | os.PathLike[str]) -> AdapterInfo:
        """Put the adapter saved in ``adapter_path`` on the base model, replacing any other.

        Refused (ConfigError) when its manifest names another base model (by hash).
        """
        _, _, peft = require_parametric()
        info = read_manifest(adapter_path)
        with self._lock:
            self._ensure()
            if info.base_model_sha256 not in (None, self.base_model_sha256):
                raise ConfigError(f"{adapter_path}: trained on another base model "
                                  f"({info.base_model}); retrain it on {self.base_model_name}")
            self.unload()
            with warnings.catch_warnings():  # peft calls a transformers method deprecated in 5.x
                warnings.simplefilter("ignore", FutureWarning)
                self._peft = peft.PeftModel.from_pretrained(self._model, str(adapter_path),
                                                            is_trainable=False)
            self._peft.eval()
            self._info = info
            return info

    def unload(self) -> None:
        """Take the loaded adapter off; the base model is as it was. No-op if none."""
        with self._lock:
            if self._peft is not None:
                self._model = self._peft.unload()
                self._model.eval()
            self._peft, self._info = None, None

    def info(self) -> AdapterInfo | None:
        return self._info

    # --- using it -----------------------------------------------------------------------

    def answer(self, question: str, *, notes: Sequence[str] = (), max_new_tokens: int = 64) -> str:
        """The model's greedy answer to ``question`` (with the loaded adapter, if any),
        up to the end of its first line; ``notes`` are memory texts put in the prompt."""
        torch, _, _ = require_parametric()
        with self._lock:
            model, tokenizer = self.model, self.tokenizer
            ids = tokenizer(prompt(question, notes), return_tensors="pt")["input_ids"]
            with torch.inference_mode():
                out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                     max_new_tokens=max_new_tokens, do_sample=False,
                                     pad_token_id=_pad_id(tokenizer), eos_token_id=tokenizer.eos_token_id)
        text = tokenizer.decode(out[0, ids.shape[1]:].tolist(), skip_special_tokens=True)
        return text.strip().split("\n", 1)[0].strip()

    def activation(self, cache_dir: str | os.PathLike[str], *, name: str = "core") -> ActivationMemory:
        """Activation memory on the model as it runs now (with the loaded adapter): the
        core block's KV cache is computed through the adapter and kept in ``cache_dir``.
        Make a new one after ``load`` or ``unload``."""
        from .activation import ActivationMemory

        with self._lock:
            return ActivationMemory(self.model, self.tokenizer, cache_dir, name=name)


def train_scope(lora: LoraMemory, memories: Sequence[MemoryItem], folder: Path, scope: Scope,
                options: Mapping[str, object] | None = None,
                progress: Callable[[int], object] | None = None) -> AdapterInfo:
    """Train into a new folder beside ``folder`` and return its info (for a registry to install)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    built = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        return lora.train(memories, out_dir=built, options=options, scope=scope, progress=progress)
    except BaseException:
        shutil.rmtree(built, ignore_errors=True)
        raise


def _targets(model: Any) -> list[str]:
    names = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules()}
    found = [p for p in PROJECTIONS if p in names]
    if not found:
        raise ConfigError(f"{type(model).__name__}: none of the projections LoRA adapts "
                          f"({', '.join(PROJECTIONS)}); this model is not supported")
    return found


def _pad_id(tokenizer: Any) -> int | None:
    for value in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if isinstance(value, int):
            return value
    return None


def _encode(tokenizer: Any, head_text: str, answer: str, max_tokens: int) -> tuple[list[int], int]:
    """A prompt and its answer as token ids (then end of text), and where the answer starts."""
    head = tokenizer(head_text)["input_ids"]
    tail = tokenizer(" " + answer, add_special_tokens=False)["input_ids"]
    if tokenizer.eos_token_id is not None:
        tail = [*tail, tokenizer.eos_token_id]
    ids = (head + tail)[:max_tokens]
    return ids, min(len(head), len(ids))


def fit(torch: Any, model: Any, tokenizer: Any, pairs: Sequence[tuple[str, str]], settings: TrainSettings,
        progress: Callable[[int], object] | None = None) -> float:
    """Train ``model``'s trainable weights on (prompt, answer) ``pairs``, the loss on the
    answers only; returns the mean loss of the last 20 batches."""
    examples = [_encode(tokenizer, head, answer, settings.max_tokens) for head, answer in pairs]
    pad = _pad_id(tokenizer) or 0
    rng = random.Random(settings.seed)
    torch.manual_seed(settings.seed)
    params = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(params, lr=settings.lr, weight_decay=0.0)
    model.train()
    last: list[float] = []
    try:
        for epoch in range(settings.epochs):
            order = list(range(len(examples)))
            rng.shuffle(order)
            for start in range(0, len(order), settings.batch_size):
                batch = [examples[i] for i in order[start:start + settings.batch_size]]
                width = max(len(ids) for ids, _ in batch)
                ids = torch.full((len(batch), width), pad, dtype=torch.long)
                labels = torch.full((len(batch), width), -100, dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for row, (tokens, answer_at) in enumerate(batch):
                    ids[row, :len(tokens)] = torch.tensor(tokens)
                    labels[row, answer_at:len(tokens)] = torch.tensor(tokens[answer_at:])
                    mask[row, :len(tokens)] = 1
                loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
                last = [*last[-19:], float(loss.detach())]
            if progress is not None:
                progress(epoch + 1)
    finally:
        model.eval()
    return sum(last) / max(1, len(last))


def _weights_sha256(model: Any) -> str:
    """sha256 over a loaded model's parameters (names, shapes and bytes)."""
    torch, _, _ = require_parametric()
    digest = hashlib.sha256()
    with torch.no_grad():
        for name, tensor in sorted(model.state_dict().items()):
            flat = tensor.detach().to("cpu").contiguous().reshape(-1)
            digest.update(f"{name}{tuple(tensor.shape)}{tensor.dtype}".encode())
            digest.update(flat.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()
