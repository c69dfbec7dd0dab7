"""``remem bench redaction``: do planted secrets and personal data reach the disk?

Each line of the corpus (``benchmarks/redaction/planted.jsonl``, format in its README) is
a text with values planted in it (credentials, private keys, connection strings,
e-mail addresses, phone, card, IBAN and national id numbers), or an ordinary text with
none (code, prose, tool output). Every line goes into a fresh store through each door
the way that door stores text: the SDK's ``add``, ``add_events``, ``remember`` and
``update``, the REST service, the MCP server (through the MCP client), the Claude Code
hooks, the instruction-file importer and the chat proxy (its turns and its injection
log). After the background work is over, the SQLite file, its WAL and shared memory are
read as bytes, before and after the store is closed.

- ``leaked``: the share of planted values found there verbatim: the value, or any run of
  12 or more letters and digits of it, case-insensitively (full-text indexes keep words
  in lower case) (goal 0);
- ``false_positives``: the share of the ordinary texts the store holds changed.

Both are given for the ``dev`` lines (the ones the detectors were built on) and the
``heldout`` lines (never tuned on) apart.
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config import Config
from ..memory import Memory
from .progress import Reporter

__all__ = ["DOORS", "leaks", "run"]

DOORS = ("add", "add_events", "remember", "update", "rest", "mcp", "hook", "import", "proxy")
_PIECE = re.compile(r"[A-Za-z0-9]{12,}")
_MARK = re.compile(r"\[redacted:\w+\]|\[\w+:sha256:[0-9a-f]{12}\]")


def leaks(raw: bytes, values: list[str]) -> list[str]:
    """The values found in ``raw`` (a store's bytes): whole, or by a long alphanumeric run."""
    low = raw.lower()
    found = []
    for value in values:
        pieces = [value, *_PIECE.findall(value)]
        if any(p.lower().encode("utf-8") in low for p in pieces):
            found.append(value)
    return found


def _store_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm"))
                    if p.exists())


class _Doors:
    """Stores one text through one door, in user ``user``'s scope."""

    def __init__(self, m: Memory, root: Path) -> None:
        self.m = m
        self.root = root
        self._rest: Any = None
        self._proxy: Any = None

    def agent(self, user: str) -> Any:
        from ..integrations.agent import AgentMemory
        from ..integrations.scope import AgentScope

        return AgentMemory(self.m, AgentScope(user_id=user, project="shop", root=self.root))

    def feed(self, door: str, item: dict[str, Any], user: str) -> None:
        text, context = item["text"], item.get("context")
        where = {"user_id": user, "project": "shop", "session_id": "s1"}
        if door == "add":
            self.m.add({"role": "user", "content": text}, **where)
        elif door == "add_events":
            field = "command" if context == "command" else "output"
            event = {"type": "tool_call", "tool": "Bash", "exit_code": 0,
                     "command": text if field == "command" else "cat notes.txt"}
            if field == "output":
                event["output"] = text
            self.m.add_events([event], **where)
        elif door == "remember":
            self.m.remember(text, kind="fact", **where)
        elif door == "update":
            first = self.m.remember("a note to be corrected", kind="fact", **where)
            self.m.update(first.id, text=text, reason=f"corrected: {text[:200]}",
                          user_id=user, project="shop")
        elif door == "rest":
            response = self.rest().post("/v1/memories", json={
                "messages": [{"role": "user", "content": text}], **where})
            response.raise_for_status()
        elif door == "mcp":
            asyncio.run(self._mcp(user, text[:4000]))
        elif door == "hook":
            self._hook(user, text, context)
        elif door == "import":
            self._import(user, text)
        elif door == "proxy":
            self._via_proxy(user, text)
        else:
            raise ValueError(f"unknown door {door!r}: use one of {', '.join(DOORS)}")

    def rest(self) -> Any:
        if self._rest is None:
            from fastapi.testclient import TestClient

            from ..serve import create_app

            self._rest = TestClient(create_app(self.m), base_url="http://127.0.0.1:8420")
            self._rest.__enter__()
        return self._rest

    async def _mcp(self, user: str, text: str) -> None:
        from mcp.client._memory import InMemoryTransport
        from mcp.client.client import Client

        from ..mcp.server import build_server

        async with Client(InMemoryTransport(build_server(self.agent(user)))) as client:
            result = await client.call_tool("memory_remember", {"text": text, "kind": "convention"})
            if result.is_error:
                raise RuntimeError(f"memory_remember failed: {result.content}")

    def _hook(self, user: str, text: str, context: str | None) -> None:
        from ..integrations.hooks import HookInput, record

        agent = self.agent(user)
        if context in ("command", "output"):
            command = text if context == "command" else "cat notes.txt"
            output = text if context == "output" else ""
            payload = HookInput(session_id="s1", cwd=str(self.root), tool_name="Bash",
                                tool_input={"command": command},
                                tool_response={"stdout": output, "stderr": "", "exit_code": 0})
            record("PostToolUse", payload, agent)
        else:
            record("UserPromptSubmit", HookInput(session_id="s1", cwd=str(self.root), prompt=text), agent)

    def _import(self, user: str, text: str) -> None:
        from ..integrations.importers import import_files

        path = self.root / "CLAUDE.md"
        path.write_text(f"# Notes\n\n{text}\n", encoding="utf-8")
        import_files(self.agent(user), "claude-md", path)

    def _via_proxy(self, user: str, text: str) -> None:
        from ..config import ServerConfig
        from ..serve.events import EventHub
        from ..serve.proxy import ChatProxy, _Exchange

        if self._proxy is None:
            self._proxy = ChatProxy(self.m, EventHub(self.m), ServerConfig())
        exchange = _Exchange(org_id=None, user_id=user, project="shop", session_id="s1",
                             model="stand-in", question=text, answer=f"Noted: {text}",
                             complete=True)
        self._proxy.record(exchange)
        ctx = self._proxy.recall(text, org_id=None, user_id=user, project="shop", session_id="s1")
        if not ctx.sections:  # an empty block is not logged: log one naming the turn
            first = self.m.list(user_id=user, project="shop", include_episodes=True, limit=1)
            ctx = ctx.model_copy(update={"sections": {"recall": [first[0].id]}})
        self._proxy.log(ctx, text, exchange)

    def close(self) -> None:
        if self._rest is not None:
            self._rest.__exit__(None, None, None)


def _stored_texts(m: Memory, user: str) -> list[str]:
    items = m.list(user_id=user, project="shop", include_episodes=True, include_inactive=True,
                   limit=100)
    return [i.text for i in items]


def _one_door(door: str, rows: list[dict[str, Any]], config: Config, tmp: Path,
              advance: Callable[[], None]) -> list[dict[str, Any]]:
    path = tmp / f"{door}.db"
    root = tmp / f"{door}-project"
    (root / ".git").mkdir(parents=True)
    out: list[dict[str, Any]] = []
    m = Memory(path, config=config)
    doors = _Doors(m, root)
    try:
        for n, item in enumerate(rows):
            user = f"u{n}"
            doors.feed(door, item, user)
            advance()
        m.flush()
        changed = {n: any(_MARK.search(t) for t in _stored_texts(m, f"u{n}"))
                   for n, item in enumerate(rows) if not item["planted"]}
        before = _store_bytes(path)
    finally:
        doors.close()
        m.close()
    raw = before + _store_bytes(path)
    for n, item in enumerate(rows):
        found = leaks(raw, item["planted"]) if item["planted"] else []
        out.append({"id": item["id"], "door": door, "split": item["split"], "shape": item["shape"],
                    "planted": len(item["planted"]), "leaked": len(found),
                    "changed": changed.get(n, False)})
    return out


def _figures(results: list[dict[str, Any]]) -> dict[str, Any]:
    planted = [r for r in results if r["planted"]]
    benign = [r for r in results if not r["planted"]]
    values = sum(r["planted"] for r in planted)
    return {"planted_items": len(planted), "planted_values": values,
            "leaked_values": sum(r["leaked"] for r in planted),
            "leaked": round(sum(r["leaked"] for r in planted) / values, 4) if values else None,
            "items_with_a_leak": sum(1 for r in planted if r["leaked"]),
            "benign": len(benign), "false_positives": round(
                sum(r["changed"] for r in benign) / len(benign), 4) if benign else None}


def run(data: str | Path, *, config: Config | None = None, doors: tuple[str, ...] = DOORS,
        limit: int | None = None, progress: bool = True) -> dict[str, Any]:
    """Leak and false-positive figures per door and split, and for all doors together."""
    rows = [json.loads(line) for line in Path(data).read_text(encoding="utf-8").splitlines()
            if line.strip()][:limit]
    for door in doors:
        if door not in DOORS:
            raise ValueError(f"unknown door {door!r}: use one of {', '.join(DOORS)}")
    config = config or Config(embedder="hash")
    results: list[dict[str, Any]] = []
    shown = Reporter("redaction", len(rows) * len(doors)) if progress else None
    with tempfile.TemporaryDirectory() as tmp:
        for door in doors:
            results += _one_door(door, rows, config, Path(tmp),
                                 shown.advance if shown is not None else lambda: None)
    if shown is not None:
        shown.close()
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        for key in (f"{r['split']}/all", f"{r['split']}/door:{r['door']}"):
            groups[key].append(r)
    by_shape: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        if r["planted"]:
            by_shape[r["shape"]].append(r)
    shapes = {s: sum(r["leaked"] for r in rs) for s, rs in sorted(by_shape.items())}
    dev, held = _figures(groups["dev/all"]), _figures(groups["heldout/all"])
    return {"data": str(data), "doors": list(doors), "headline": {
        "leaked_dev": dev["leaked"], "leaked_heldout": held["leaked"],
        "false_positives_dev": dev["false_positives"],
        "false_positives_heldout": held["false_positives"],
        "shapes": len(by_shape), "planted_items": len({r["id"] for r in results if r["planted"]}),
        "benign_items": len({r["id"] for r in results if not r["planted"]})},
        "figures": {k: _figures(v) for k, v in sorted(groups.items())},
        "leaks_by_shape": {s: n for s, n in shapes.items() if n},
        "leaked_items": sorted({f"{r['door']}:{r['id']}" for r in results if r["leaked"]})[:100],
        "false_positive_items": sorted({r["id"] for r in results if r["changed"]})[:100]}
