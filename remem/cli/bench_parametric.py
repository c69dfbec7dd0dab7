"""``remem bench parametric``: recall of memorised facts with and without a LoRA adapter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.table import Table

from .app import JsonOpt, bench_app, boundary
from .output import err_console, out_console


@bench_app.command("parametric")
def parametric(
    memories: Annotated[int, typer.Option(min=4, help="Memories (synthetic facts) in the adapter.")] = 32,
    pretrain_steps: Annotated[int, typer.Option(
        min=1, help="Steps (16 questions each) training the small base model from scratch.")] = 450,
    corpus: Annotated[int, typer.Option(min=10, help="Other facts the base model is pretrained on.")] = 200,
    epochs: Annotated[int, typer.Option(min=1, help="Epochs of adapter training.")] = 12,
    model: Annotated[Path | None, typer.Option(
        exists=True, file_okay=False, envvar="REMEM_TEST_MODEL_DIR",
        help="A local causal LM folder to use as it is (default: $REMEM_TEST_MODEL_DIR, else a "
             "small Llama trained here).")] = None,
    threads: Annotated[int | None, typer.Option(
        min=1, help="Threads torch may use (default: its own choice, printed).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Recall of facts with and without a LoRA adapter trained on them.

    Questions phrased as training never phrased them, answered by the base model alone,
    with a LoRA adapter trained on the memories, and with the memory's text in the
    prompt: exact match, token F1, the fact's value found, and the costs (training
    seconds, adapter bytes, time per answer).

    Needs pip install "remem\\[parametric]".

    Example: remem bench parametric --memories 32 --threads 1
    """
    from ..bench.parametric import measure

    def say(line: str) -> None:
        err_console().print(line, highlight=False)

    with boundary():
        result = measure(memories=memories, corpus=corpus, pretrain_steps=pretrain_steps, model_dir=model,
                         threads=threads, options={"epochs": epochs}, progress=say)
    if as_json:
        typer.echo(json.dumps(result, ensure_ascii=False))
        return
    console = out_console()
    console.print(f"model: {result['model']}; {result['model_note']}", highlight=False)
    console.print(f"torch {result['torch']}, transformers {result['transformers']}, peft {result['peft']}, "
                  f"{result['threads']} threads, {result['cpus']} CPUs ({result['machine']}), "
                  f"{result['date']}", highlight=False)
    console.print(f"{result['memories']} memories, {result['pairs_trained']} training questions; "
                  f"{result['questions']} held-out questions; adapter {result['settings']}", highlight=False)
    table = Table(box=box.SIMPLE_HEAD)
    for title in ("answered by", "exact match", "token F1", "value found", "per answer", "32 tokens"):
        table.add_column(title, justify="left" if title == "answered by" else "right")
    for way, row in result["rows"].items():
        table.add_row(way, f"{row['exact_match']:.2f}", f"{row['token_f1']:.2f}",
                      f"{row['value_recall']:.2f}", f"{row['ms_per_answer']:.0f} ms",
                      f"{row['ms_per_32_tokens']:.0f} ms")
    console.print(table)
    console.print(f"adapter: trained in {result['train_s']:.1f} s, {result['adapter_bytes'] / 1e6:.2f} MB "
                  f"(safetensors), final loss {result['final_loss']}; base model pretraining "
                  f"{result['pretrain_s']:.0f} s", highlight=False)
