"""Activation memory (the stored KV cache of the core block) and the parametric-memory interface.

The model tests need the ``activation`` extra (torch, transformers, safetensors); they
are skipped, through ``pytest.importorskip``, when it is not installed. The tests of the
interface, of ``core_block`` and of importing remem without torch run either way. The
model is a tiny random Llama with a byte-level tokenizer, built locally (no download).
Speed is not tested here: ``remem bench activation`` measures it.
"""

from __future__ import annotations

import json
import logging
import pickle
import struct
import subprocess
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from remem.errors import ConfigError, ValidationError
from remem.model import Context, MemoryItem
from remem.tiers import AdapterInfo, ParametricMemory, core_block

BLOCK = "## What you know about this user and project (notes, not instructions)\n" + "".join(
    f"- [{kind}] {text}\n" for kind, text in [
        ("preference", "Alice prefers pnpm over npm for the web app"),
        ("convention", "Run `make test` before every commit in the api repo"),
        ("pitfall", "`python` is not found on the build box; use `python3`"),
        ("project", "The billing service talks to Postgres 15 through pgbouncer"),
    ] * 2)
SUFFIX = "\nQuestion: which package manager does Alice use?\nAnswer:"


@pytest.fixture(scope="module")
def tiny() -> tuple[Any, Any]:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("safetensors")
    from remem.tiers.tiny import byte_tokenizer, random_llama

    return random_llama(hidden_size=64, layers=2, heads=4, max_positions=1024), byte_tokenizer()


def memory(tiny: tuple[Any, Any], folder: Path, **kwargs: Any) -> Any:
    from remem.tiers import ActivationMemory

    return ActivationMemory(tiny[0], tiny[1], folder, **kwargs)


def header(path: Path) -> dict[str, Any]:
    """The JSON header of a safetensors file, read by hand (8-byte length, then JSON)."""
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    parsed: dict[str, Any] = json.loads(data[8:8 + length])
    return parsed


# --- the cached path answers exactly as the full prefill ------------------------------

def test_cached_generation_matches_uncached(tiny: tuple[Any, Any], tmp_path: Path) -> None:
    import torch

    am = memory(tiny, tmp_path)
    cache = am.prepare(BLOCK)
    assert cache.source == "built" and cache.tokens == len(BLOCK.encode()) + 1  # bytes and <s>

    cached = am.generate(SUFFIX, 12)
    full = am.generate(SUFFIX, 12, use_cache=False)
    assert cached.token_ids == full.token_ids
    assert len(set(cached.token_ids)) > 1, "a model that repeats one token would prove little"
    assert cached.cached_tokens == cache.tokens and full.cached_tokens == 0
    assert cached.prompt_tokens == full.prompt_tokens == cache.tokens + len(SUFFIX.encode())
    # generation appended to a copy: the held cache is unchanged and gives the same answer again
    assert all(k.shape[2] == cache.tokens for k, _ in cache.layers)
    assert am.generate(SUFFIX, 12).token_ids == cached.token_ids

    model, tokenizer = tiny
    ids = tokenizer(BLOCK + SUFFIX)["input_ids"]
    suffix_ids = tokenizer(SUFFIX, add_special_tokens=False)["input_ids"]
    assert cache.token_ids.tolist() + suffix_ids == ids  # the request is the block's ids, then the suffix's
    with torch.inference_mode():
        expected = model(input_ids=torch.tensor([ids])).logits[0, -1]
        got = model(input_ids=torch.tensor([suffix_ids]), cache=cache.to_dynamic_cache(model.config),
                    use_cache=True).logits[0, -1]
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)


def test_a_new_instance_reuses_the_file(tiny: tuple[Any, Any], tmp_path: Path) -> None:
    first = memory(tiny, tmp_path)
    first.prepare(BLOCK)
    again = first.prepare(BLOCK)
    assert again.source == "memory"
    second = memory(tiny, tmp_path)
    loaded = second.prepare(BLOCK)
    assert loaded.source == "disk" and loaded.key == again.key
    assert second.generate(SUFFIX, 8).token_ids == first.generate(SUFFIX, 8).token_ids


# --- the file: safetensors, no pickle -------------------------------------------------

def test_the_cache_file_is_safetensors_and_loads_without_pickle(
        tiny: tuple[Any, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    am = memory(tiny, tmp_path)
    cache = am.prepare(BLOCK)
    assert am.path == tmp_path / "core.safetensors"
    data = am.path.read_bytes()
    assert not data.startswith(b"PK") and not data.startswith(b"\x80")  # not torch.save's zip, not a pickle
    head = header(am.path)
    meta = head.pop("__metadata__")
    assert meta["format"] == "remem-kv-cache" and meta["key"] == cache.key
    assert meta["model_id"] == am.model_id and meta["tokenizer_id"] == am.tokenizer_id
    assert meta["tokens"] == str(cache.tokens) and meta["layers"] == "2"
    assert set(head) == {"token_ids", "layer.0.keys", "layer.0.values", "layer.1.keys", "layer.1.values"}
    assert head["token_ids"]["dtype"] == "I64" and head["layer.0.keys"]["dtype"] == "F32"
    assert head["layer.1.values"]["shape"] == [1, 4, cache.tokens, 16]

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("pickle was used to read the cache")

    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(torch, "load", refuse)
    assert memory(tiny, tmp_path).prepare(BLOCK).source == "disk"


# --- stale and corrupt files ----------------------------------------------------------

def test_a_changed_block_or_model_rebuilds_and_replaces_the_file(tiny: tuple[Any, Any],
                                                                 tmp_path: Path) -> None:
    from remem.tiers.tiny import random_llama

    am = memory(tiny, tmp_path)
    old = am.prepare(BLOCK)
    changed = BLOCK + "- [preference] Alice now prefers bun\n"
    new = am.prepare(changed)
    assert new.source == "built" and new.key != old.key and new.tokens > old.tokens
    assert sorted(p.name for p in tmp_path.iterdir()) == ["core.safetensors"]  # replaced, no temp files left
    assert header(am.path)["__metadata__"]["key"] == new.key

    stale = memory(tiny, tmp_path).prepare(BLOCK)  # the file now holds the other block
    assert stale.source == "built" and "changed" in (stale.rebuilt_because or "")
    assert stale.key == old.key

    other_model = random_llama(hidden_size=64, layers=2, heads=4, max_positions=1024, seed=1)
    from remem.tiers import ActivationMemory

    rebuilt = ActivationMemory(other_model, tiny[1], tmp_path).prepare(BLOCK)
    assert rebuilt.source == "built" and rebuilt.key != old.key

    separate = memory(tiny, tmp_path, name="bob").prepare(changed)  # another name, another file
    assert separate.source == "built" and (tmp_path / "bob.safetensors").is_file()


@pytest.mark.parametrize("damage", ["garbage", "truncated", "flipped", "foreign"])
def test_a_corrupt_file_is_refused_then_rebuilt(tiny: tuple[Any, Any], tmp_path: Path, damage: str,
                                                caplog: pytest.LogCaptureFixture) -> None:
    import torch
    from safetensors.torch import save_file

    from remem.tiers import KVCache, KVCacheError

    am = memory(tiny, tmp_path)
    good = am.prepare(BLOCK)
    data = am.path.read_bytes()
    if damage == "garbage":
        am.path.write_bytes(b"\x00" * 64)
    elif damage == "truncated":
        am.path.write_bytes(data[: len(data) // 2])
    elif damage == "flipped":  # a valid file whose tensor bytes changed
        am.path.write_bytes(data[:-100] + bytes([data[-100] ^ 0xFF]) + data[-99:])
    else:  # a safetensors file that is not a remem KV cache
        save_file({"weight": torch.zeros(2, 2)}, str(am.path))

    with pytest.raises(KVCacheError, match=str(am.path).replace("\\", "\\\\")) as refused:
        KVCache.load(am.path)
    if damage == "flipped":
        assert "checksum" in str(refused.value)

    with caplog.at_level(logging.WARNING, logger="remem.tiers.activation"):
        rebuilt = memory(tiny, tmp_path).prepare(BLOCK)
    assert rebuilt.source == "built" and "refused" in (rebuilt.rebuilt_because or "")
    assert "rebuilding" in caplog.text
    assert KVCache.load(am.path).key == good.key  # the file is whole again


# --- loading from a local folder, and bad input ---------------------------------------

def test_from_pretrained_reads_a_local_folder_only(tiny: tuple[Any, Any], tmp_path: Path) -> None:
    from remem.tiers import ActivationMemory

    model, tokenizer = tiny
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    loaded = ActivationMemory.from_pretrained(tmp_path / "model", tmp_path / "kv")
    loaded.prepare(BLOCK)
    original = memory(tiny, tmp_path / "kv2")
    original.prepare(BLOCK)
    assert loaded.generate(SUFFIX, 8).token_ids == original.generate(SUFFIX, 8).token_ids

    with pytest.raises(ConfigError, match="local folder"):
        ActivationMemory.from_pretrained("some-org/some-model", tmp_path / "kv")


def test_bad_input_is_refused(tiny: tuple[Any, Any], tmp_path: Path) -> None:
    am = memory(tiny, tmp_path)
    with pytest.raises(ConfigError, match="prepare"):
        am.generate(SUFFIX)
    with pytest.raises(ValidationError, match="block"):
        am.prepare("")
    with pytest.raises(ValidationError, match="block"):
        am.prepare("x" * 2000)  # over the model's 1024 positions
    am.prepare(BLOCK)
    with pytest.raises(ValidationError, match="prompt_suffix"):
        am.generate("")
    with pytest.raises(ValidationError, match="max_new_tokens"):
        am.generate(SUFFIX, 0)
    with pytest.raises(ValidationError, match="name"):
        memory(tiny, tmp_path, name="../escape")


# --- without the extra ----------------------------------------------------------------

def test_remem_imports_without_torch_and_says_what_to_install() -> None:
    code = (
        "import sys\n"
        "for name in ('torch', 'transformers', 'safetensors'):\n"
        "    sys.modules[name] = None\n"
        "import remem, remem.cli, remem.tiers\n"
        "from remem.tiers import ActivationMemory\n"
        "try:\n"
        "    ActivationMemory(None, None, 'kv')\n"
        "except remem.ConfigError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert 'pip install "remem[activation]"' in done.stdout


# --- core_block -------------------------------------------------------------------------

def test_core_block_is_the_stable_start_of_a_context() -> None:
    core = ("## What you know about this user and project (notes, not instructions)\n"
            "- [preference] Alice prefers pnpm")
    working = "## Relevant to this session\n- [fact] the build is red"
    recall = "## Found for the request\n- [fact] pnpm 9 is installed"
    both = Context(text=f"{core}\n\n{working}\n\n{recall}", memories=[], tokens=30, core_tokens=12,
                   sections={"core": ["m1"], "working": ["m2"], "recall": ["m3"]})
    assert core_block(both) == core
    only = Context(text=core, memories=[], tokens=12, core_tokens=12, sections={"core": ["m1"]})
    assert core_block(only) == core
    none = Context(text=working, memories=[], tokens=10, core_tokens=0,
                   sections={"core": [], "working": ["m2"]})
    assert core_block(none) == ""


# --- the parametric-memory interface ----------------------------------------------------

class DictAdapters:
    """A minimal structural implementation: an "adapter" is a JSON file of memory texts."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.loaded: AdapterInfo | None = None

    def train(self, memories: Sequence[MemoryItem], *, out_dir: str | None = None,
              options: Mapping[str, object] | None = None) -> AdapterInfo:
        path = Path(out_dir or self.folder) / "adapter.json"
        path.write_text(json.dumps({m.id: m.text for m in memories}), encoding="utf-8")
        return AdapterInfo(path=str(path), base_model="none", memory_ids=[m.id for m in memories],
                           memory_versions={m.id: m.version for m in memories}, method="lookup",
                           created_at=datetime.now(timezone.utc))

    def load(self, adapter_path: str) -> AdapterInfo:
        ids = list(json.loads(Path(adapter_path).read_text(encoding="utf-8")))
        self.loaded = AdapterInfo(path=adapter_path, base_model="none", memory_ids=ids, method="lookup",
                                  created_at=datetime.now(timezone.utc))
        return self.loaded

    def unload(self) -> None:
        self.loaded = None

    def info(self) -> AdapterInfo | None:
        return self.loaded


def test_a_conforming_class_is_a_parametric_memory(tmp_path: Path) -> None:
    now = datetime.now(timezone.utc)
    item = MemoryItem(id="m_1", kind="preference", text="Alice prefers pnpm", observed_at=now,
                      created_at=now, updated_at=now)
    impl: ParametricMemory = DictAdapters(tmp_path)  # checked structurally by a type checker too
    assert isinstance(impl, ParametricMemory)
    trained = impl.train([item])
    assert trained.memory_versions == {"m_1": 1} and impl.info() is None  # training loads nothing
    assert impl.load(trained.path).memory_ids == ["m_1"]
    assert impl.info() is not None
    impl.unload()
    assert impl.info() is None
    assert not isinstance(object(), ParametricMemory)
    with pytest.raises(ValueError):
        AdapterInfo(path="a", base_model="b", created_at=now, rank=0)


def test_a_kv_build_job_keeps_the_cache_of_the_core_block_current(
        tiny: tuple[Any, Any], tmp_path: Path) -> None:
    from remem import Config, Memory

    kv = memory(tiny, tmp_path / "kv")
    with Memory(tmp_path / "m.db", config=Config(embedder="hash")) as m:
        m.remember("I prefer pnpm over npm", kind="preference", user_id="alice")
        m.use_activation(kv, user_id="alice", budget_tokens=200)
        first = kv.cache
        assert first is not None and first.key == kv.key(m.context(user_id="alice",
                                                                     budget_tokens=200).core_text)

        m.add("I prefer tabs over spaces.", user_id="alice", session_id="s1")
        assert m.flush(timeout=60)

        built = [j for j in m.jobs(kind="kv-build") if j.state == "done"]
        block = m.context(user_id="alice", budget_tokens=200).core_text
        assert built and "tabs" in block
        assert kv.cache is not None and kv.cache.key == kv.key(block) != first.key
