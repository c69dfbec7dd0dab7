"""Agent instruction files in (CLAUDE.md, AGENTS.md, Cursor rules), AGENTS.md out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from remem import Config, Memory
from remem.cli import app
from remem.integrations.agent import AgentMemory
from remem.integrations.importers import parse_text
from remem.integrations.scope import resolve_scope

runner = CliRunner()

CLAUDE_MD = """\
# Shop

This is the web shop backend, a Django app with a Celery worker and Postgres.

## Commands

- Run the tests with `make test`.

## Conventions

- Always use `pnpm`, never `npm`.
- Use type hints everywhere.
  Keep functions short.

## Gotchas

- `python` is not on the PATH here; use `python3`.

## Release

1. Bump the version in `pyproject.toml`.
2. Run:
   ```
   make release
   ```

## Preferences

- I prefer small commits with imperative messages.

<!-- remem:begin -->
- A line remem exported: not an instruction to import back.
<!-- remem:end -->
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    monkeypatch.setenv("REMEM_EMBEDDER", "hash")
    monkeypatch.setenv("REMEM_USER", "alice")
    return root


def remem(*args: str) -> Result:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def memories(db: Path, **kwargs: Any) -> list[Any]:
    with Memory(db, config=Config(embedder="hash")) as m:
        return list(m.list(user_id="alice", project="shop", limit=200, **kwargs))


def test_each_rule_gets_a_kind_from_its_heading_and_wording() -> None:
    found = [(s.kind, s.text, s.lines) for s in parse_text(CLAUDE_MD)]
    assert found == [
        ("project", "This is the web shop backend, a Django app with a Celery worker and Postgres.",
         (3, 3)),
        ("convention", "Commands: Run the tests with `make test`.", (7, 7)),
        ("convention", "Always use `pnpm`, never `npm`.", (11, 11)),
        ("convention", "Use type hints everywhere. Keep functions short.", (12, 13)),
        ("pitfall", "`python` is not on the PATH here; use `python3`.", (17, 17)),
        ("procedure", "Release: 1) Bump the version in `pyproject.toml`. 2) Run: `make release`",
         (21, 25)),
        ("preference", "I prefer small commits with imperative messages.", (29, 29)),
    ]


def test_rules_under_a_project_heading_are_conventions() -> None:
    found = parse_text("# Project rules\n\n- Always run `make lint` before pushing.\n"
                       "- Name branches after their ticket.\n")

    assert [s.kind for s in found] == ["convention", "convention"]


def test_import_claude_md_stores_typed_memories_that_cite_their_lines(project: Path) -> None:
    (project / "CLAUDE.md").write_text(CLAUDE_MD)
    db = project / "m.db"
    out = remem("import", "claude-md", "CLAUDE.md", "--db", str(db)).stdout
    assert "imported 7 memories" in out and "project shop, user alice" in out

    pitfall = next(m for m in memories(db, kinds=["pitfall"]))
    assert pitfall.text == "`python` is not on the PATH here; use `python3`."
    assert pitfall.pinned  # people wrote it down: it does not decay
    # the episode it came from keeps the provenance: the file, its lines and section
    with Memory(db, config=Config(embedder="hash")) as m:
        (source,) = [m.get(s) for s in pitfall.sources]
    assert source.metadata["source"] == {"format": "claude-md", "path": "CLAUDE.md",
                                         "lines": [17, 17], "section": "Shop > Gotchas"}
    assert source.metadata["anchors"][0]["lines"] == [17, 17]

    # importing again adds nothing new: the memory agent merges the same rules
    remem("import", "claude-md", "--db", str(db))  # the default path: CLAUDE.md of the project
    assert len(memories(db)) == 7

    # an edited rule marks its memory stale? for agents looking at that file
    with Memory(db, config=Config(embedder="hash")) as m:
        agent = AgentMemory(m, resolve_scope(cwd=project))
        assert "stale?" not in agent.for_files(["CLAUDE.md"])
        (project / "CLAUDE.md").write_text(CLAUDE_MD.replace("use `python3`", "use `python3.12`"))
        report = agent.for_files(["CLAUDE.md"])
    stale = [line for line in report.splitlines() if "stale?" in line]
    assert len(stale) == 1 and "python3" in stale[0]


def test_dry_run_shows_without_adding_and_json_import_still_works(project: Path) -> None:
    (project / "AGENTS.md").write_text("## Testing\n\n- Never skip the integration tests.\n")
    db = project / "m.db"
    out = remem("import", "agents-md", "AGENTS.md", "--dry-run", "--db", str(db)).stdout
    assert "convention" in out and "Never skip the integration tests" in out
    assert "nothing was added" in out
    assert not db.exists()  # a dry run on a store not made yet leaves none behind

    lines = project / "turns.jsonl"
    lines.write_text(json.dumps({"role": "user", "content": "we deploy on Fridays"}) + "\n")
    out = remem("import", str(lines), "--db", str(db), "--user", "alice").stdout
    assert "imported 1 episode" in out
    result = runner.invoke(app, ["import", "yaml-thing", "x.yaml"])
    assert result.exit_code == 1 and "claude-md, agents-md, cursor-rules" in result.output


def test_cursor_rules_folder_skips_front_matter_and_remems_own_rule(project: Path) -> None:
    rules = project / ".cursor" / "rules"
    rules.mkdir(parents=True)
    (rules / "style.mdc").write_text(
        "---\ndescription: Style\nglobs: src/**/*.ts\nalwaysApply: false\n---\n\n"
        "- Prefer named exports over default exports.\n- Avoid `any`; it breaks strict mode.\n")
    runner.invoke(app, ["install", "cursor"], catch_exceptions=False)  # writes remem.mdc
    db = project / "m.db"
    out = remem("import", "cursor-rules", "--db", str(db), "--json").stdout
    rows = json.loads(out)
    assert [(r["kind"], r["text"]) for r in rows] == [
        ("convention", "Prefer named exports over default exports."),
        ("pitfall", "Avoid `any`; it breaks strict mode."),
    ]
    assert all(r["path"].endswith("style.mdc") and r["id"].startswith("m_") for r in rows)


def test_export_agents_md_replaces_only_its_block_and_plain_export_stays_jsonl(project: Path) -> None:
    db = project / "m.db"
    with Memory(db, config=Config(embedder="hash")) as m:
        agent = AgentMemory(m, resolve_scope(cwd=project))
        confirmed = agent.remember("Run migrations with `make migrate`", kind="convention")
        agent.remember("`npm` fails here; use `pnpm`", kind="pitfall")
        agent.remember("Alice likes tabs", kind="preference")
        agent.feedback(confirmed.id, "helpful")  # a confirmed memory
    agents = project / "AGENTS.md"
    agents.write_text("# Agents\n\nHuman notes stay.\n")

    remem("export", "agents-md", "--out", "AGENTS.md", "--db", str(db))
    text = agents.read_text()
    assert text.startswith("# Agents\n\nHuman notes stay.\n")
    block = text[text.index("<!-- remem:begin -->"): text.index("<!-- remem:end -->")]
    assert "Run migrations with `make migrate`" in block
    assert "npm" not in block and "tabs" not in block  # not confirmed; not a convention

    remem("export", "agents-md", "--out", "AGENTS.md", "--candidates", "--db", str(db))
    text = agents.read_text()
    assert text.count("<!-- remem:begin -->") == 1 and "### Pitfalls" in text
    assert "use `pnpm`" in text and text.startswith("# Agents\n\nHuman notes stay.\n")

    # rules imported from AGENTS.md itself are not repeated in its block
    agents.write_text("# Agents\n\n- Never commit `.env` files.\n")
    remem("import", "agents-md", "--db", str(db))
    remem("export", "agents-md", "--out", "AGENTS.md", "--db", str(db))
    assert agents.read_text().count("Never commit `.env` files.") == 1
    (project / "CLAUDE.md").write_text("- Never commit `.env` files.\n")
    remem("import", "claude-md", "--db", str(db))  # the same rule, from another file: merged
    remem("export", "agents-md", "--out", "AGENTS.md", "--db", str(db))
    assert agents.read_text().count("Never commit `.env` files.") == 1

    lines = remem("export", "--db", str(db), "--user", "alice").stdout.splitlines()
    assert lines and all(json.loads(line)["id"] for line in lines)
