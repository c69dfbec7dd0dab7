"""``remem bench parametric``: recall of memorised facts with and without a LoRA adapter.

No real model ships with remem, so by default the base model is a small Llama trained
from scratch here (byte-level tokenizer, :mod:`remem.tiers.tiny`) on a generic
question-and-answer corpus of synthetic facts that are not the memories: closed-book
questions about those facts in every phrasing, and open-book ones (the fact among other
notes, then the question) so that it can also read notes in its prompt. Then a LoRA
adapter is trained on the memories' training phrasings
(:func:`~remem.tiers.adapters.render_pairs`), and the model is asked the phrasings kept
out of training, three ways: the base model alone, the base model with the adapter, and
the base model with the memory's text (and one other memory's) as notes in its prompt.
Scores: exact match and token F1 of the generated answer against the memory's text, and
whether the fact's value (a day, a port, a tool...) is in the answer. Costs: training
seconds, adapter bytes, and the time per answer of each way.

With ``model_dir`` (or ``REMEM_TEST_MODEL_DIR`` in the tests) a real local model is
used as it is, without pretraining.
"""

from __future__ import annotations

import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from ..model import MemoryItem
from .metrics import normalize_answer, token_f1

__all__ = ["Fact", "facts", "measure"]

#: Notes in an open-book prompt: the fact asked about and one other.
NOTES = 2
LATENCY_SAMPLES = 12
#: Questions per pretraining step.
PRETRAIN_BATCH = 16
PRETRAIN_LR = 3e-3

_SYLLABLES = ("ka", "lo", "mi", "ren", "tas", "vo", "zu", "bel", "dor", "fin", "gar", "hul", "jex",
              "kor", "lum", "nax", "pim", "quo", "ros", "sil", "tev", "ur", "wyn", "xal", "yor", "zed")
_ATTRIBUTES = (
    ("deploy day", "{n} deploys on {v}.", ("Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays")),
    ("package manager", "{n} uses {v} for packages.", ("pnpm", "npm", "yarn", "uv", "poetry", "pip")),
    ("owner", "{n} is owned by {v}.", ("Alice", "Bob", "Chen", "Dana", "Emeka", "Farah", "Goran")),
    ("port", "{n} listens on port {v}.", ("8080", "8443", "5432", "6379", "3000", "9000")),
    ("database", "{n} stores its data in {v}.", ("Postgres", "MySQL", "SQLite", "Redis", "MongoDB")),
    ("region", "{n} runs in {v}.", ("Lisbon", "Dublin", "Tokyo", "Oregon", "Frankfurt")),
)


@dataclass(frozen=True)
class Fact:
    """A synthetic fact: what it is about, its text, and the value a question asks for."""

    subject: str
    text: str
    value: str

    def memory(self, memory_id: str) -> MemoryItem:
        now = datetime.now(timezone.utc)
        return MemoryItem(id=memory_id, kind="fact", text=self.text, subject=self.subject,
                          maturity="canonical", observed_at=now, created_at=now, updated_at=now)


def facts(count: int, seed: int, avoid: set[str] = frozenset()) -> list[Fact]:  # type: ignore[assignment]
    """``count`` facts about made-up services, one attribute each; names in ``avoid`` are not used."""
    rng = random.Random(seed)
    out: list[Fact] = []
    used = set(avoid)
    while len(out) < count:
        name = "".join(rng.choice(_SYLLABLES) for _ in range(rng.choice((2, 3)))).capitalize()
        if name in used:
            continue
        used.add(name)
        attribute, template, values = rng.choice(_ATTRIBUTES)
        value = rng.choice(values)
        out.append(Fact(f"{name} {attribute}", template.format(n=name, v=value), value))
    return out


def _names(items: Sequence[Fact]) -> set[str]:
    return {f.subject.split(" ", 1)[0] for f in items}


def _pretrain(torch: Any, model: Any, tokenizer: Any, corpus: Sequence[Fact], steps: int, seed: int,
              progress: Callable[[str], object]) -> float:
    """Train every weight of ``model`` on questions about ``corpus``, closed- and open-book."""
    from ..tiers.adapters import render_pairs
    from ..tiers.lora import TrainSettings, fit, prompt

    rng = random.Random(seed)
    memories = [f.memory(f"g{i}") for i, f in enumerate(corpus)]
    pairs = [p for m in memories for p in render_pairs(m, phrasings=99) + render_pairs(m, held_out=True)]
    batch = PRETRAIN_BATCH
    examples: list[tuple[str, str]] = []
    for _ in range(steps * batch):
        pair = rng.choice(pairs)
        notes: list[str] = []
        if rng.random() < 0.5:
            notes = [pair.answer] + [m.text for m in rng.sample(memories, NOTES - 1)]
            rng.shuffle(notes)
        examples.append((prompt(pair.question, notes), pair.answer))
    started = time.perf_counter()
    settings = TrainSettings(epochs=1, lr=PRETRAIN_LR, batch_size=batch, seed=seed)
    loss = fit(torch, model, tokenizer, examples, settings)
    progress(f"pretrained {steps} steps in {time.perf_counter() - started:.0f} s, last loss {loss:.3f}")
    return loss


def _others(held: Sequence[Fact], fact: Fact) -> list[Fact]:
    return [h for h in held if h is not fact]


def _latency(torch: Any, lora: Any, questions: Sequence[tuple[str, Fact, list[str]]],
             with_notes: bool) -> float:
    """Median milliseconds to write exactly 32 tokens after each question (no early stop),
    so that the three ways are timed on the same work."""
    from ..tiers.lora import prompt

    times = []
    for question, _, notes in questions:
        ids = lora.tokenizer(prompt(question, notes if with_notes else ()), return_tensors="pt")["input_ids"]
        started = time.perf_counter()
        with torch.inference_mode():
            lora.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=32,
                                min_new_tokens=32, do_sample=False, pad_token_id=lora.tokenizer.eos_token_id)
        times.append(time.perf_counter() - started)
    return round(statistics.median(times) * 1000, 1)


def _score(answers: Sequence[tuple[str, Fact]]) -> dict[str, float]:
    n = max(1, len(answers))
    return {
        "exact_match": round(sum(normalize_answer(a) == normalize_answer(f.text) for a, f in answers) / n, 3),
        "token_f1": round(sum(token_f1(a, f.text) for a, f in answers) / n, 3),
        "value_recall": round(sum(f.value.lower() in a.lower() for a, f in answers) / n, 3),
    }


def measure(*, memories: int = 32, corpus: int = 200, pretrain_steps: int = 450, hidden: int = 128,
            layers: int = 4, model_dir: Path | None = None, threads: int | None = None,
            options: dict[str, float] | None = None, seed: int = 0,
            progress: Callable[[str], object] = lambda line: None) -> dict[str, Any]:
    """Train an adapter on ``memories`` synthetic facts and score recall three ways (see the module)."""
    from ..tiers.activation import load_causal_lm
    from ..tiers.adapters import render_pairs
    from ..tiers.lora import LoraMemory, require_parametric
    from ..tiers.tiny import byte_tokenizer, describe, random_llama

    torch, transformers, peft = require_parametric()
    if threads is not None:
        torch.set_num_threads(threads)
    held = facts(memories, seed + 1)
    generic = facts(corpus, seed + 2, avoid=_names(held))
    pretrain_s = 0.0
    if model_dir is None:
        model = random_llama(hidden_size=hidden, layers=layers, heads=max(1, hidden // 32),
                             max_positions=512, init_std=0.02, seed=seed)
        tokenizer = byte_tokenizer()
        started = time.perf_counter()
        pretrain_loss = _pretrain(torch, model, tokenizer, generic, pretrain_steps, seed, progress)
        pretrain_s = time.perf_counter() - started
        note = (f"trained from scratch here: {pretrain_steps} steps of {PRETRAIN_BATCH} questions about "
                f"{corpus} other synthetic facts (final loss {pretrain_loss:.3f})")
    else:
        model, tokenizer = load_causal_lm(model_dir)
        note = f"loaded from {model_dir}"
    lora = LoraMemory(model=model, tokenizer=tokenizer)
    items = [f.memory(f"m{i}") for i, f in enumerate(held)]
    settings = {"epochs": 12, "lr": 5e-3, "rank": 16, "alpha": 32, **(options or {})}
    with tempfile.TemporaryDirectory(prefix="remem-bench-lora-") as tmp:
        info = lora.train(items, out_dir=Path(tmp) / "adapter", options=settings)
        progress(f"adapter trained in {info.metrics['train_seconds']:.0f} s")
        rng = random.Random(seed)
        questions = [(p.question, f, [f.text] + [o.text for o in rng.sample(_others(held, f), NOTES - 1)])
                     for m, f in zip(items, held, strict=True) for p in render_pairs(m, held_out=True)]
        for _, _, notes in questions:
            rng.shuffle(notes)
        limit = max(len(f.text.encode()) for f in held) + 8
        rows: dict[str, dict[str, Any]] = {}
        for way in ("base model", "with the adapter", "memory text in the prompt"):
            if way == "with the adapter":
                lora.load(info.path)
            else:
                lora.unload()
            answers, seconds = [], []
            for question, fact, notes in questions:
                started = time.perf_counter()
                answer = lora.answer(question, notes=notes if way.startswith("memory") else (),
                                     max_new_tokens=limit)
                seconds.append(time.perf_counter() - started)
                answers.append((answer, fact))
            shown = list(zip(questions, answers, strict=True))[:3]
            rows[way] = {**_score(answers), "ms_per_answer": round(statistics.median(seconds) * 1000, 1),
                         "ms_per_32_tokens": _latency(torch, lora, questions[:LATENCY_SAMPLES],
                                                      way.startswith("memory")),
                         "examples": [{"question": q, "expected": f.text, "answer": a}
                                      for (q, f, _), (a, _) in shown]}
            progress(f"{way}: {rows[way]['exact_match']:.2f} exact, {rows[way]['token_f1']:.2f} F1")
        adapter_bytes = int(info.metrics["adapter_bytes"])
    return {
        "model": describe(model), "model_note": note, "pretrain_s": round(pretrain_s, 1),
        "memories": memories, "pairs_trained": info.settings["pairs"], "questions": len(questions),
        "settings": {k: info.settings[k] for k in ("rank", "alpha", "epochs", "phrasings", "lr",
                                                   "batch_size")},
        "train_s": info.metrics["train_seconds"], "adapter_bytes": adapter_bytes,
        "final_loss": info.metrics["final_loss"], "rows": rows,
        "torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__,
        "threads": torch.get_num_threads(), "cpus": os.cpu_count(), "machine": platform.machine(),
        "python": platform.python_version(), "date": date.today().isoformat(),
    }
