"""``remem bench activation``: time to first token with and without the stored KV cache."""

from __future__ import annotations

import json
import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from ..errors import ValidationError
from .app import JsonOpt, bench_app, boundary
from .output import out_console

SUFFIX = "\n\nQuestion: which package manager does Alice use in the web project, and why?\nAnswer:"

_PEOPLE = ("Alice", "Bob", "Chen Wei", "Dana", "Emeka", "Farah", "Goran", "Hana")
_TOOLS = ("pnpm", "uv", "ruff", "pytest", "docker compose", "terraform", "make", "poetry", "vite", "gh")
_PARTS = ("the billing service", "the web app", "the auth gateway", "the search indexer",
          "the nightly export", "the mobile API", "the admin console", "the CI pipeline")
_LINES = (
    "- [preference] {p} prefers {t} over the alternatives for {c}",
    "- [convention] In {c}, run `{t}` before every commit; CI fails otherwise",
    "- [pitfall] `{t}` fails in {c} when the cache is cold; clear it and run again",
    "- [project] {c} is owned by {p} and deployed every Tuesday",
    "- [decision] {p} decided to keep {c} on Postgres 15 until the migration is tested",
    "- [procedure] To release {c}: bump the version, run `{t}`, tag, then push the tag",
    "- [profile] {p} works from Lisbon, usually 09:00-17:00 UTC, and reviews {c}",
    "- [fact] {c} reads its settings from config/{n}.toml, not from the environment",
)


def memory_block(count_tokens: Callable[[str], int], size: int, seed: int = 0) -> str:
    """A core-block-like text of about ``size`` tokens (never more), made of memory lines."""
    rng = random.Random(seed)
    text = "## What you know about this user and project (notes, not instructions)\n"
    used = count_tokens(text)
    while True:
        line = rng.choice(_LINES).format(p=rng.choice(_PEOPLE), t=rng.choice(_TOOLS), c=rng.choice(_PARTS),
                                         n=rng.randrange(100)) + "\n"
        cost = count_tokens(line)
        if used + cost > size:
            return text
        text += line
        used += cost


def measure(sizes: list[int], repeats: int, model_path: Path | None, cache_dir: Path,
            threads: int | None = None) -> dict[str, Any]:
    """Median time to first token, per block size, with no cache, the cache held in memory,
    and the cache read from its file by a new ActivationMemory."""
    from ..tiers.activation import ActivationMemory, require
    from ..tiers.tiny import byte_tokenizer, describe, random_llama

    torch, transformers, _ = require()
    if threads is not None:
        torch.set_num_threads(threads)
    if model_path is None:
        model, tokenizer = random_llama(), byte_tokenizer()
        model_note = "random weights (seed 0), byte-level tokenizer, built locally"
    else:
        loaded = ActivationMemory.from_pretrained(model_path, cache_dir, name="warmup")
        model, tokenizer = loaded.model, loaded.tokenizer
        model_note = f"loaded from {model_path}"
    limit = getattr(model.config, "max_position_embeddings", None)

    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    suffix_tokens = count(SUFFIX)
    for size in sizes:
        if isinstance(limit, int) and size + suffix_tokens + 1 > limit:
            raise ValidationError("sizes", f"{size} tokens and the question do not fit the model's "
                                  f"{limit} positions")

    warm = ActivationMemory(model, tokenizer, cache_dir, name="warmup")
    warm.prepare(memory_block(count, 200))
    for use_cache in (True, False):
        warm.time_to_first_token(SUFFIX, use_cache=use_cache)

    rows = []
    for size in sizes:
        name = f"block-{size}"
        block = memory_block(count, size)
        am = ActivationMemory(model, tokenizer, cache_dir, name=name)
        start = time.perf_counter()
        cache = am.prepare(block)
        build_s = time.perf_counter() - start
        none, held, disk = [], [], []
        for _ in range(repeats):  # interleaved, so drift on shared cores hits all three alike
            none.append(am.time_to_first_token(SUFFIX, use_cache=False))
            held.append(am.time_to_first_token(SUFFIX, use_cache=True))
            start = time.perf_counter()
            fresh = ActivationMemory(model, tokenizer, cache_dir, name=name)
            if fresh.prepare(block).source != "disk":
                raise RuntimeError("the cache file was not reused")
            fresh.time_to_first_token(SUFFIX, use_cache=True)
            disk.append(time.perf_counter() - start)
        no_cache, in_memory, from_disk = (statistics.median(xs) for xs in (none, held, disk))
        rows.append({
            "block_tokens": cache.tokens, "suffix_tokens": suffix_tokens,
            "build_s": round(build_s, 3), "file_mb": round(am.path.stat().st_size / 1e6, 1),
            "ttft_no_cache_ms": round(no_cache * 1000, 1), "ttft_cache_memory_ms": round(in_memory * 1000, 1),
            "ttft_cache_disk_ms": round(from_disk * 1000, 1),
            "speedup_memory": round(no_cache / in_memory, 1), "speedup_disk": round(no_cache / from_disk, 1),
        })
    return {
        "model": describe(model), "model_note": model_note, "dtype": str(next(model.parameters()).dtype),
        "torch": torch.__version__, "transformers": transformers.__version__,
        "threads": torch.get_num_threads(), "cpus": os.cpu_count(), "machine": platform.machine(),
        "python": platform.python_version(), "date": date.today().isoformat(), "repeats": repeats,
        "suffix": SUFFIX.strip(), "rows": rows,
    }


def _sizes(raw: str) -> list[int]:
    try:
        sizes = [int(part) for part in raw.split(",") if part.strip()]
    except ValueError:
        raise typer.BadParameter(f"{raw!r}: write token counts separated by commas, e.g. 1000,4000",
                                 param_hint="--sizes") from None
    if not sizes or any(size < 16 for size in sizes):
        raise typer.BadParameter("each size must be at least 16 tokens", param_hint="--sizes")
    return sizes


@bench_app.command("activation")
def activation(
    sizes: Annotated[str, typer.Option(help="Block sizes in tokens, comma-separated.")] = "1000,4000,8000",
    repeats: Annotated[int, typer.Option(min=1, help="Timings per size and path; the median is shown.")] = 3,
    model: Annotated[Path | None, typer.Option(
        exists=True, file_okay=False,
        help="A local causal LM folder (default: a small random Llama built locally).")] = None,
    cache_dir: Annotated[Path | None, typer.Option(
        file_okay=False,
        help="Where the cache files go (default: a temporary folder, removed after).")] = None,
    threads: Annotated[int | None, typer.Option(
        min=1, help="Threads torch may use (default: its own choice, printed).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Time to first token with and without activation memory (the stored KV cache of the
    core block), for blocks of several sizes followed by a short question.

    Needs pip install "remem\\[activation]".

    Example: remem bench activation --sizes 1000,4000,8000 --repeats 3
    """
    wanted = _sizes(sizes)
    with boundary():
        if cache_dir is not None:
            result = measure(wanted, repeats, model, cache_dir, threads)
        else:
            with tempfile.TemporaryDirectory(prefix="remem-kv-") as tmp:
                result = measure(wanted, repeats, model, Path(tmp), threads)
    if as_json:
        typer.echo(json.dumps(result, ensure_ascii=False))
        return
    console = out_console()
    console.print(f"model: {result['model']}; {result['model_note']}; {result['dtype']}", highlight=False)
    console.print(f"torch {result['torch']}, transformers {result['transformers']}, {result['threads']} "
                  f"threads, {result['cpus']} CPUs ({result['machine']}), Python {result['python']}, "
                  f"{result['date']}", highlight=False)
    console.print(f"time to first token, median of {result['repeats']}; question of "
                  f"{result['rows'][0]['suffix_tokens']} tokens after the block", highlight=False)
    table = Table(box=box.SIMPLE_HEAD)
    for title in ("block tokens", "no cache", "cache (RAM)", "cache (disk)", "x (RAM)", "x (disk)", "build",
                  "file"):
        table.add_column(title, justify="right")
    for row in result["rows"]:
        table.add_row(f"{row['block_tokens']:,}", _ms(row["ttft_no_cache_ms"]),
                      _ms(row["ttft_cache_memory_ms"]), _ms(row["ttft_cache_disk_ms"]),
                      f"{row['speedup_memory']}", f"{row['speedup_disk']}",
                      f"{row['build_s']:.2f} s", f"{row['file_mb']} MB")
    console.print(table)
    console.print("x: how many times faster than no cache. RAM: the cache held by the ActivationMemory; "
                  "disk: a new ActivationMemory reads the file (checksum included) first. build: computing "
                  "and writing the cache once.", highlight=False)


def _ms(value: float) -> str:
    return f"{value:,.0f} ms" if value >= 10 else f"{value:.1f} ms"
