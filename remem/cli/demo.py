"""``remem demo``: a throwaway store, a few turns of a coding session, three searches."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ..config import Config
from ..memory import Memory
from ..model import Hit
from .app import Owner, app, boundary
from .output import out_console, trim

SCOPE = Owner(user_id="alice", project="webapp")

TURNS: tuple[dict[str, Any], ...] = (
    {"role": "user", "timestamp": "2024-05-06T09:12:00Z",
     "content": "We deploy the web app with `make ship`; it builds the Docker image and "
                "pushes it to Fly.io."},
    {"role": "assistant", "timestamp": "2024-05-06T09:13:00Z",
     "content": "Noted: deploys go through `make ship`, and I will run `pnpm test` first."},
    {"role": "user", "timestamp": "2024-05-06T11:40:00Z",
     "content": "Please use pnpm, not npm, in this repo; the lockfile is pnpm-lock.yaml."},
    {"role": "assistant", "timestamp": "2024-05-07T10:05:00Z",
     "content": "The auth session test failed because the mock token had no `exp` claim. "
                "I added one in tests/fixtures/token.ts and the suite is green again."},
    {"role": "user", "timestamp": "2024-05-07T16:30:00Z",
     "content": "Review rule: every PR needs a changelog entry under [Unreleased] in "
                "docs/CHANGELOG.md."},
    {"role": "user", "timestamp": "2024-05-08T09:00:00Z",
     "content": "I'm on holiday from May 20 to May 31; Bob reviews the PRs while I'm away."},
    {"role": "assistant", "timestamp": "2024-05-08T09:02:00Z",
     "content": "Got it. I'll request reviews from Bob between May 20 and May 31."},
    {"role": "user", "timestamp": "2024-05-08T14:20:00Z",
     "content": "我们的数据库是 PostgreSQL 16，连接池用 PgBouncer，每天凌晨三点自动备份。"},
)

EVENT: dict[str, Any] = {
    "type": "tool_call", "tool": "Bash", "command": "pnpm test", "exit_code": 1,
    "timestamp": "2024-05-07T10:02:00Z",
    "output": "FAIL src/auth/session.test.ts\n  x refreshes an expired token\n"
              "  TypeError: Cannot read properties of undefined (reading 'exp')",
}

QUERIES = (
    "how do we deploy to production?",
    "why did the auth test fail?",
    "what is our database?",
)


def _hits_table(hits: list[Hit]) -> Table:
    """Each hit on two lines: its text, then its kind and the channels that found it."""
    table = Table.grid(padding=(0, 1))
    table.add_column(justify="right", style="dim")
    table.add_column(justify="right", style="green")
    table.add_column(ratio=1)
    for rank, hit in enumerate(hits, 1):
        found = " · ".join(f"{name} #{r}" for name, r in sorted(hit.channels.items(),
                                                                key=lambda kv: kv[1]))
        body = Text(trim(hit.memory.text, 140))
        body.append(f"\n{hit.memory.kind} · found by {found}", style="cyan")
        table.add_row(f"{rank}.", f"{hit.score:.3f}", body)
    return table


def run_demo(folder: Path, console: Console) -> None:
    """Fill a store in ``folder`` with the demo turns, then search it and print the hits."""
    started = time.perf_counter()
    with Memory(folder / "demo.db", config=Config.model_validate({})) as m:
        m.add(list(TURNS[:3]), session_id="s1", **SCOPE)
        m.add_events([EVENT], session_id="s2", **SCOPE)
        m.add(list(TURNS[3:]), session_id="s2", **SCOPE)
        m.flush()
        console.print(Panel.fit(
            Text.assemble(("remem demo", "bold"), f": {len(TURNS)} turns and 1 tool call of a "
                          "coding session (one in Chinese), stored in a throwaway file\n",
                          (str(folder / "demo.db"), "dim")),
        ))
        for query in QUERIES:
            console.print()
            console.print(Text.assemble(("search ", "bold green"), (f"“{query}”", "bold")))
            console.print(_hits_table(m.search(query, k=3, **SCOPE)))
    console.print()
    console.print(Text(f"done in {time.perf_counter() - started:.1f}s. Try it on your own store:",
                       style="dim"))
    console.print(Text('  remem add "We deploy with make ship" --user alice\n'
                       '  remem search "how do we deploy?" --user alice'))


@app.command()
def demo() -> None:
    """Show remem at work on a throwaway store: add a coding session, search it.

    Nothing is written outside a temporary folder. Example: remem demo
    """
    with boundary(), tempfile.TemporaryDirectory(prefix="remem-demo-") as folder:
        run_demo(Path(folder), out_console())
