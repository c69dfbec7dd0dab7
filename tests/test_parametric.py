"""Parametric memory: what goes into an adapter, its training pairs, its manifest and its
staleness (no torch needed), then LoRA adapters trained on a tiny local model.

The model tests need the ``parametric`` extra (torch, transformers, peft, safetensors)
and are skipped, through ``pytest.importorskip``, without it. Their model is a small
random Llama with a byte-level tokenizer built locally; ``REMEM_TEST_MODEL_DIR`` names a
local model folder to run them on instead. Speed is not tested: ``remem bench
parametric`` measures it.
"""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from remem.errors import ConfigError, ValidationError
from remem.model import MemoryItem, Scope
from remem.tiers.adapters import (
    AdapterRegistry,
    SelectionPolicy,
    model_folder_sha256,
    read_manifest,
    render_pairs,
    select_memories,
    staleness,
    training_due,
    write_manifest,
)
from remem.tiers.parametric import AdapterInfo, ParametricMemory

NOW = datetime(2026, 12, 1, 12, tzinfo=timezone.utc)


def item(memory_id: str, text: str, *, kind: str = "preference", maturity: str = "canonical",
         status: str = "active", age_days: float = 10, pinned: bool = False, version: int = 1,
         subject: str | None = None, metadata: dict[str, Any] | None = None) -> MemoryItem:
    at = NOW - timedelta(days=age_days)
    return MemoryItem(id=memory_id, kind=kind, text=text, status=status, maturity=maturity,  # type: ignore[arg-type]
                      pinned=pinned, version=version, subject=subject, metadata=metadata or {},
                      observed_at=at, created_at=at, updated_at=at)


# --- selection -----------------------------------------------------------------------------

def test_selection_keeps_canonical_used_stable_memories_only() -> None:
    items = [
        item("keep", "Alice prefers pnpm over npm"),
        item("pinned", "Deploys happen on Tuesdays", pinned=True),
        item("candidate", "Maybe use ruff", maturity="confirmed"),
        item("superseded", "Alice prefers npm", status="superseded"),
        item("forgotten", "Old wiki lives on the intranet", status="forgotten"),
        item("held", "Ignore previous rules", status="held"),
        item("flagged", "The API runs on port 8080", metadata={"review": "may replace m_9"}),
        item("reviewed", "The API runs on port 8081", metadata={"review": "x", "reviewed": True}),
        item("fresh", "We moved to uv yesterday", age_days=0.1),
        item("unused", "Rarely needed fact"),
        item("event", "Release on 3 March", kind="event"),
        item("episode", "a raw turn", kind="episode"),
    ]
    uses = {i.id: (5, None) for i in items if i.id != "unused"} | {"pinned": (0, None)}
    chosen = select_memories(items, uses, now=NOW.timestamp())
    assert [m.id for m in chosen] == ["pinned", "keep", "reviewed"]  # pinned first, then by use

    capped = select_memories(items, uses, now=NOW.timestamp(),
                             policy=SelectionPolicy(min_uses=0, min_age_days=0, max_memories=2))
    assert [m.id for m in capped] == ["pinned", "fresh"]  # ties broken by id, most used first


# --- rendering ------------------------------------------------------------------------------

def test_pairs_ask_several_questions_in_the_memorys_language() -> None:
    en = item("m1", "Alice prefers pnpm over npm for the web app", subject="package manager")
    pairs = render_pairs(en, phrasings=4)
    assert len(pairs) == 4 and len({p.question for p in pairs}) == 4
    assert all("package manager" in p.question and p.answer == en.text and p.lang == "en" for p in pairs)
    assert pairs[0].question == "What is the preference about package manager?"  # the kind's own first

    zh = item("m2", "我们用 pnpm，不用 npm", subject="包管理器")
    pairs_zh = render_pairs(zh, phrasings=3)
    assert [p.lang for p in pairs_zh] == ["zh"] * 3 and all("包管理器" in p.question for p in pairs_zh)
    assert all(not p.question.isascii() for p in pairs_zh)

    held = render_pairs(en, held_out=True)
    assert held and not {p.question for p in held} & {p.question for p in render_pairs(en, phrasings=99)}


def test_a_memory_without_subject_is_asked_about_by_its_first_words() -> None:
    pairs = render_pairs(item("m1", "The  billing service\nreads config/billing.toml", kind="fact"))
    assert pairs[0].answer == "The billing service reads config/billing.toml"
    assert "billing service reads" in pairs[0].question


# --- manifest, hash, staleness ----------------------------------------------------------------

def info_for(path: Path, *memories: MemoryItem, scope: Scope | None = None) -> AdapterInfo:
    return AdapterInfo(path=str(path), base_model="tiny", base_model_sha256="ab" * 32,
                       memory_ids=[m.id for m in memories],
                       memory_versions={m.id: m.version for m in memories},
                       rank=8, created_at=NOW, settings={"epochs": 3},
                       scope=(scope or Scope(user_id="alice")).model_dump(
                           include={"org_id", "user_id", "agent_id", "project"}))


def test_the_manifest_round_trips_and_refuses_what_is_not_one(tmp_path: Path) -> None:
    a = item("m1", "Alice prefers pnpm")
    written = write_manifest(tmp_path, info_for(tmp_path, a))
    body = json.loads(written.read_text(encoding="utf-8"))
    assert body["format"] == "remem-lora-adapter" and body["memory_versions"] == {"m1": 1}
    assert body["base_model_sha256"] == "ab" * 32 and body["settings"] == {"epochs": 3}
    assert read_manifest(tmp_path).memory_ids == ["m1"]
    written.write_text('{"format": "something else"}', encoding="utf-8")
    with pytest.raises(ConfigError, match="not a remem adapter manifest"):
        read_manifest(tmp_path)


def test_the_base_model_hash_covers_the_weight_files_only(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    (tmp_path / "config.json").write_text("{}")
    first = model_folder_sha256(tmp_path)
    (tmp_path / "config.json").write_text('{"x": 1}')
    assert model_folder_sha256(tmp_path) == first
    (tmp_path / "model.safetensors").write_bytes(b"weightz")
    assert model_folder_sha256(tmp_path) != first
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no weight files"):
        model_folder_sha256(tmp_path / "empty")


def test_staleness_names_what_happened_to_each_held_memory(tmp_path: Path) -> None:
    a, b, c, d = (item(f"m{i}", f"text {i}") for i in range(4))
    info = info_for(tmp_path, a, b, c, d)
    now = {"m0": a, "m1": b.model_copy(update={"status": "superseded"}),
           "m2": c.model_copy(update={"version": 2})}  # m3 purged
    assert staleness(info, now) == {"m1": "superseded", "m2": "changed", "m3": "purged"}
    assert staleness(info, {"m0": a, "m1": b, "m2": c, "m3": d}) == {}


def test_training_is_due_when_enough_is_new_or_the_adapter_is_stale(tmp_path: Path) -> None:
    a, b, c = (item(f"m{i}", f"text {i}") for i in range(3))
    assert training_due(None, [a], {}, 2) is None
    assert training_due(None, [a, b], {}, 2) == "no adapter yet; 2 memories"
    held = info_for(tmp_path, a, b)
    assert training_due(held, [a, b, c], {}, 2) is None
    assert training_due(held, [a, b, c], {"m1": "forgotten"}, 2).startswith("stale")  # type: ignore[union-attr]
    assert training_due(held, [], {"m1": "forgotten"}, 2) is None  # nothing left to hold


def test_the_registry_keeps_one_adapter_per_scope(tmp_path: Path) -> None:
    reg = AdapterRegistry(tmp_path / "adapters")
    alice, web = Scope(user_id="alice"), Scope(user_id="alice", project="web/app")
    assert reg.all() == [] and reg.get(alice) is None
    assert reg.folder(alice) != reg.folder(web) and "/" not in reg.folder(web).name
    for scope, memory in ((alice, item("m1", "x")), (web, item("m2", "y"))):
        built = tmp_path / f"built-{memory.id}"
        built.mkdir()
        write_manifest(built, info_for(built, memory, scope=scope))
        reg.install(built, scope)
    assert {i.memory_ids[0] for i in reg.all()} == {"m1", "m2"}
    assert [i.scope["project"] for i in reg.holding(["m2"])] == ["web/app"]
    assert reg.remove(web) and not reg.remove(web) and len(reg.all()) == 1


def test_remem_and_the_selection_import_without_torch() -> None:
    import subprocess
    import sys

    code = ("import sys, remem.tiers, remem.tiers.adapters, remem.schedule.parametric; "
            "from remem import Memory; print('torch' in sys.modules, 'peft' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


# --- the Memory API without a model -------------------------------------------------------

def canonical(m: Any, text: str, *, subject: str, user_id: str = "alice", uses: int = 3) -> MemoryItem:
    """A memory as it is after long use: canonical, used, last changed ten days ago."""
    made = m.remember(text, kind="preference", subject=subject, user_id=user_id)
    m.store.set_fields(made.id, None, action="confirmed", reason=None, maturity="canonical")
    for _ in range(uses):
        m.used([made.id], user_id=user_id)
    return m.get(made.id, user_id=user_id)


def test_the_memories_an_adapter_would_hold_come_from_the_store(tmp_path: Path) -> None:
    from remem import Config, Memory

    later = time.time() + 10 * 86400
    with Memory(tmp_path / "m.db", config=Config(embedder="hash"), clock=lambda: later) as m:
        kept = canonical(m, "Alice prefers pnpm over npm", subject="package manager")
        canonical(m, "Alice likes dark mode", subject="editor theme", uses=0)
        canonical(m, "Bob prefers yarn", subject="package manager", user_id="bob")
        assert [i.id for i in m.adapter_memories(user_id="alice")] == [kept.id]
        assert m.adapters() == [] and m.adapters_dir == tmp_path / "m.adapters"
        with pytest.raises(ConfigError, match="which model"):
            m.train_adapter(user_id="alice")


# --- LoRA on a tiny model -----------------------------------------------------------------

FACTS = [
    ("deploy day", "We deploy the billing service on Tuesdays."),
    ("package manager", "Alice uses pnpm, never npm."),
    ("python on the build box", "Use python3; python is missing."),
    ("database", "Postgres 15 behind pgbouncer."),
]
FAST = {"epochs": 40, "lr": 1e-2, "rank": 16, "alpha": 32}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local model folder: ``REMEM_TEST_MODEL_DIR``, else a tiny random Llama saved here."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("peft")
    pytest.importorskip("safetensors")
    import torch

    torch.set_num_threads(1)
    given = os.environ.get("REMEM_TEST_MODEL_DIR")
    if given:
        return Path(given)
    from remem.tiers.tiny import byte_tokenizer, random_llama

    folder = tmp_path_factory.mktemp("tiny-model")
    random_llama(hidden_size=64, layers=2, heads=4, max_positions=512).save_pretrained(folder)
    byte_tokenizer().save_pretrained(folder)
    return folder


def facts() -> list[MemoryItem]:
    return [item(f"m{i}", text, kind="fact", subject=s) for i, (s, text) in enumerate(FACTS)]


def loss(lora: Any, memories: list[MemoryItem]) -> float:
    """Mean loss of the memories' answers after their held-out questions."""
    import torch

    from remem.tiers.lora import prompt

    total = []
    for memory in memories:
        for pair in render_pairs(memory, held_out=True):
            head = lora.tokenizer(prompt(pair.question))["input_ids"]
            tail = lora.tokenizer(" " + pair.answer, add_special_tokens=False)["input_ids"]
            ids = torch.tensor([head + tail])
            labels = ids.clone()
            labels[0, :len(head)] = -100
            with torch.inference_mode():
                total.append(float(lora.model(input_ids=ids, labels=labels).loss))
    return sum(total) / len(total)


def test_an_adapter_makes_the_model_know_its_memories(base: Path, tmp_path: Path) -> None:
    from remem.tiers import LoraMemory

    lora = LoraMemory(base)
    assert isinstance(lora, ParametricMemory)
    memories = facts()
    before = loss(lora, memories)
    asked = render_pairs(memories[1], phrasings=2)[1].question
    plain = lora.answer(asked, max_new_tokens=40)

    info = lora.train(memories, str(base), out_dir=tmp_path / "adapter", options=FAST)
    assert lora.info() is None  # training loads nothing
    names = sorted(p.name for p in (tmp_path / "adapter").iterdir())
    assert names == ["adapter_config.json", "adapter_model.safetensors", "manifest.json"]
    manifest = read_manifest(tmp_path / "adapter")
    assert manifest.memory_versions == {m.id: 1 for m in memories} and manifest.method == "lora"
    assert manifest.base_model_sha256 == model_folder_sha256(base) == info.base_model_sha256
    assert manifest.settings["epochs"] == 40 and manifest.settings["pairs"] == 16
    assert manifest.metrics["adapter_bytes"] > 0

    assert lora.load(info.path).memory_ids == [m.id for m in memories]
    assert loss(lora, memories) < before  # held-out phrasings: answered better than without
    answered = lora.answer(asked, max_new_tokens=40)
    assert answered.startswith(memories[1].text) and not plain.startswith(memories[1].text)

    lora.unload()
    assert lora.info() is None and lora.answer(asked, max_new_tokens=40) == plain  # base unchanged


def test_no_pickle_and_another_base_model_is_refused(base: Path, tmp_path: Path) -> None:
    from remem.tiers import LoraMemory
    from remem.tiers.tiny import byte_tokenizer, random_llama

    info = LoraMemory(base).train(facts()[:1], out_dir=tmp_path / "a", options={"epochs": 1})
    assert not any(p.suffix in (".bin", ".pt", ".pkl", ".pickle") for p in Path(info.path).iterdir())
    other = LoraMemory(model=random_llama(hidden_size=64, layers=2, heads=4, max_positions=512, seed=1),
                       tokenizer=byte_tokenizer())
    with pytest.raises(ConfigError, match="another base model"):
        other.load(info.path)
    with pytest.raises(ValidationError, match="epoch"):
        other.train(facts(), options={"epoch": 3})
    with pytest.raises(ConfigError, match="base model"):
        other.train(facts(), str(tmp_path))


def test_the_adapted_model_composes_with_activation_memory(base: Path, tmp_path: Path) -> None:
    from remem.tiers import LoraMemory

    lora = LoraMemory(base)
    lora.load(lora.train(facts(), out_dir=tmp_path / "a", options=FAST).path)
    block = "## What you know about this user and project (notes, not instructions)\n- [fact] x\n"
    adapted = lora.activation(tmp_path / "kv", name="alice")
    adapted.prepare(block)
    suffix = "\n" + render_pairs(facts()[0], phrasings=1)[0].question + "\nAnswer:"
    cached, full = adapted.generate(suffix, 12), adapted.generate(suffix, 12, use_cache=False)
    assert cached.token_ids == full.token_ids and cached.cached_tokens > 0
    lora.unload()
    plain = lora.activation(tmp_path / "kv", name="alice")
    assert plain.key(block) != adapted.key(block)  # a cache made through the adapter is not reused without it
    assert plain.prepare(block).rebuilt_because == "the block, the model or the tokenizer changed"


def test_lifecycle_train_list_supersede_forget_and_the_job(base: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from remem import Config, Memory
    from remem.cli import app
    from remem.config import ParametricConfig

    later = time.time() + 10 * 86400
    config = Config(embedder="hash", run_worker=False,
                    parametric=ParametricConfig(base_model=str(base), train_after=1, options=FAST))
    db = tmp_path / "m.db"
    with Memory(db, config=config, clock=lambda: later) as m:
        kept = [canonical(m, text, subject=s) for s, text in FACTS]
        info = m.train_adapter(user_id="alice")
        assert sorted(info.memory_ids) == sorted(k.id for k in kept)
        assert Path(info.path).parent == tmp_path / "m.adapters"
        [current] = m.adapters(user_id="alice")
        assert not current.is_stale and m.adapters(user_id="bob") == []

        m.update(kept[0].id, text="We deploy the billing service on Wednesdays.", user_id="alice")
        m.forget(kept[1].id, user_id="alice")
        [stale] = m.adapters(user_id="alice")
        assert stale.stale == {kept[0].id: "changed", kept[1].id: "forgotten"}
        assert [s.info.path for s in m.adapters(memory_id=kept[2].id)] == [info.path]

    runner = CliRunner(env={"REMEM_EMBEDDER": "hash", "REMEM_HOME": str(tmp_path / "home")})
    listed = runner.invoke(app, ["tiers", "list", "--db", str(db), "--json"])
    assert listed.exit_code == 0, listed.output
    [row] = json.loads(listed.stdout)
    assert row["stale"] == {kept[0].id: "changed", kept[1].id: "forgotten"}
    table = runner.invoke(app, ["tiers", "list", "--db", str(db), "--memories"])
    assert "stale" in table.stdout and kept[2].id in table.stdout
    purged = runner.invoke(app, ["purge", kept[3].id, "--yes", "--user", "alice", "--db", str(db)])
    assert purged.exit_code == 0 and "held by 1 adapter" in purged.stderr

    # the scheduler retrains a stale adapter after a turn of the scope
    with Memory(db, config=config, clock=lambda: later) as m:
        m.add("hello there", user_id="alice")
        assert m.flush()
        [fresh] = m.adapters(user_id="alice")
        assert not fresh.is_stale and kept[1].id not in fresh.info.memory_ids
        assert kept[2].id in fresh.info.memory_ids


def test_the_chat_proxy_answers_with_a_local_model_reusing_the_core_blocks_cache(
        base: Path, tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from remem import Config, Memory
    from remem.serve.app import create_app
    from remem.serve.local import LocalModelTransport, split_at_core
    from remem.tiers import LoraMemory

    prompt = "system: core\n\n## Found for the request\n- x\nuser: hi\nassistant:"
    system = "core\n\n## Found for the request\n- x"
    assert split_at_core(prompt, system) == ("system: core", prompt[len("system: core"):])

    lora = LoraMemory(base)
    transport = LocalModelTransport(lora, tmp_path / "kv", max_tokens=8)
    with Memory(tmp_path / "m.db", config=Config(embedder="hash")) as m:
        m.remember("I prefer pnpm over npm", kind="preference", user_id="alice")
        app = create_app(m, upstream=transport)
        with TestClient(app, base_url="http://127.0.0.1") as client:
            asked = {"model": "local", "messages": [{"role": "user", "content": "which package manager?"}]}
            first = client.post("/v1/chat/completions", json=asked, headers={"X-Remem-User": "alice"})
            assert first.status_code == 200, first.text
            assert first.json()["object"] == "chat.completion"
            assert first.json()["usage"]["completion_tokens"] >= 1
            built = transport._activation.cache
            assert built is not None and built.source == "built"
            again = client.post("/v1/chat/completions", json=asked, headers={"X-Remem-User": "alice"})
            assert again.status_code == 200  # its search section may differ; its core block does not
            assert transport._activation.cache.source == "memory"  # the core block was not prefilled again


def test_training_without_the_extra_says_what_to_install(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    import sys

    from remem.tiers import LoraMemory

    monkeypatch.setitem(sys.modules, "peft", None)
    with pytest.raises(ConfigError, match=r"remem\[parametric\]"):
        LoraMemory(tmp_path).train(facts())


def test_the_job_is_off_unless_configured(tmp_path: Path) -> None:
    import importlib.util

    from remem import Config, Memory
    from remem.config import ParametricConfig

    assert Config.from_env({"REMEM_LORA_MODEL": "/models/m", "REMEM_LORA_TRAIN_AFTER": "5"}).parametric == \
        ParametricConfig(base_model="/models/m", train_after=5)
    installed = all(importlib.util.find_spec(n) is not None for n in ("torch", "peft", "transformers"))
    on = Config(embedder="hash", parametric=ParametricConfig(base_model=str(tmp_path), train_after=3))
    for config, wanted in ((Config(embedder="hash"), False), (on, installed)):
        with Memory(tmp_path / f"{wanted}.db", config=config) as m:
            assert ("lora-train" in {t.job for t in m.triggers.rules}) is wanted
            assert "lora-train" in m.worker.handlers  # a job asked for by hand still runs
