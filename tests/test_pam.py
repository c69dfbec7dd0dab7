"""Portable AI Memory (PAM 1.0): a round trip out of remem and back in, through the SDK
and the command line; a file from another tool; a changed file refused whole."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from remem import Config, Memory, ValidationError
from remem.cli import app
from remem.cube.format import canonical
from remem.cube.pam import content_hash, integrity_checksum

HASH = Config(embedder="hash")
runner = CliRunner()


def _fill(m: Memory) -> dict[str, str]:
    deploy = m.remember("We deploy with make ship", kind="convention", user_id="alice",
                        project="web", pinned=True)
    tea = m.remember("Alice takes her tea without sugar", kind="preference", user_id="alice")
    who = m.remember("Alice is the web team's tech lead", kind="persona", user_id="alice")
    old = m.remember("The staging host is vega", kind="fact", user_id="alice", project="web")
    m.forget(old.id, reason="vega is gone", user_id="alice", project="web")
    m.store.link([(deploy.id, tea.id, "co_used", 0.5)])
    m.flush()
    return {"deploy": deploy.id, "tea": tea.id, "who": who.id, "old": old.id}


def _view(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    return sorted((m["content"], m["type"], m["custom_type"], m["status"],
                   m["metadata"]["remem"]["kind"], m["metadata"]["remem"]["pinned"])
                  for m in doc["memories"])


def test_a_round_trip_through_pam_gives_back_the_same_memories(tmp_path: Path) -> None:
    with Memory(tmp_path / "a.db", config=HASH) as a, Memory(tmp_path / "b.db", config=HASH) as b:
        ids = _fill(a)
        doc = a.export_pam(user_id="alice")
        assert (doc["schema"], doc["schema_version"], doc["owner"]) == \
            ("portable-ai-memory", "1.0", {"id": "alice"})
        by_id = {m["id"]: m for m in doc["memories"]}
        assert by_id[ids["tea"]]["type"] == "preference" and by_id[ids["who"]]["type"] == "identity"
        assert (by_id[ids["deploy"]]["type"], by_id[ids["deploy"]]["custom_type"]) == \
            ("custom", "convention")
        assert by_id[ids["old"]]["status"] == "retracted"
        # the hashes as the spec defines them, computed here from scratch
        text = by_id[ids["tea"]]["content"]
        assert by_id[ids["tea"]]["content_hash"] == \
            "sha256:" + hashlib.sha256(text.strip().lower().encode()).hexdigest()
        ordered = sorted(doc["memories"], key=lambda m: m["id"])
        assert doc["integrity"] == {"canonicalization": "RFC8785", "total_memories": 4,
                                    "checksum": "sha256:" + hashlib.sha256(canonical(ordered)).hexdigest()}
        assert [(r["from"], r["to"], r["type"]) for r in doc["relations"]] == \
            [(ids["deploy"], ids["tea"], "related_to")]
        new_ids = b.import_pam(json.loads(json.dumps(doc)), user_id="carol")
        b.flush()
        again = b.export_pam(user_id="carol")
        assert len(new_ids) == 4 and _view(again) == _view(doc)
        assert len(again["relations"]) == 1
        # each imported memory cites its source, the content kept verbatim
        tea = next(m for m in b.list(user_id="carol", include_inactive=True)
                   if m.text.startswith("Alice takes"))
        source = b.get(tea.sources[0], user_id="carol")
        assert source.text == tea.text and source.role == "import"
        assert tea.metadata["pam"]["id"] == ids["tea"]
        hit = b.search("sugar in tea", user_id="carol", include_episodes=False)[0]
        assert hit.memory.id == tea.id


def test_the_command_line_exports_and_imports_pam(tmp_path: Path) -> None:
    db_a, db_b = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    with Memory(db_a, config=HASH) as a:
        _fill(a)
    env = {"REMEM_EMBEDDER": "hash"}
    out = tmp_path / "memory-store.json"
    done = runner.invoke(app, ["export", "--format", "pam", "--user", "alice", "--db", db_a,
                               "--out", str(out)], env=env)
    assert done.exit_code == 0, done.output
    imported = runner.invoke(app, ["import", "--format", "pam", str(out), "--user", "dave",
                                   "--db", db_b, "--json"], env=env)
    assert imported.exit_code == 0, imported.output
    assert json.loads(imported.stdout)["imported"] == 4
    doc = json.loads(out.read_text())
    doc["memories"][0]["content"] += " and always on Fridays"
    doc["memories"][0]["content_hash"] = content_hash(doc["memories"][0]["content"])
    out.write_text(json.dumps(doc))
    refused = runner.invoke(app, ["import", "--format", "pam", str(out), "--user", "dave",
                                  "--db", db_b], env=env)
    assert refused.exit_code == 1 and "integrity.checksum" in refused.stderr
    assert "nothing was imported" in refused.stderr
    with Memory(db_b, config=HASH) as b:
        assert len(list(b.list(user_id="dave", include_inactive=True))) == 4


def _foreign() -> dict[str, Any]:
    """A memory store as another tool writes it (types remem has no kind for)."""
    memories = [
        {"id": "mem-1", "type": "identity", "custom_type": None, "status": "active",
         "content": "User speaks Portuguese and English", "tags": ["language"],
         "temporal": {"created_at": "2025-03-01T10:00:00Z"},
         "provenance": {"platform": "chatgpt", "extraction_method": "llm_inference"},
         "metadata": {"language": "en", "domain": "personal"}},
        {"id": "mem-2", "type": "environment", "custom_type": None, "status": "deprecated",
         "content": "User runs Debian on a ThinkPad",
         "temporal": {"created_at": "2025-04-01T10:00:00Z", "valid_until": None},
         "provenance": {"platform": "claude"}},
        {"id": "mem-3", "type": "custom", "custom_type": "security_clearance",
         "content": "User holds no clearance", "temporal": {"created_at": "2025-05-01T10:00:00Z"},
         "provenance": {"platform": "manual"}},
    ]
    for m in memories:
        m["content_hash"] = content_hash(m["content"])
    return {"schema": "portable-ai-memory", "schema_version": "1.0", "owner": {"id": "u-1"},
            "memories": memories,
            "relations": [{"id": "r1", "from": "mem-2", "to": "mem-1", "type": "supports",
                           "created_at": "2025-04-01T10:00:00Z"}],
            "integrity": {"checksum": integrity_checksum(memories), "total_memories": 3}}


def test_a_file_from_another_tool_maps_to_the_nearest_kinds(tmp_path: Path) -> None:
    with Memory(tmp_path / "b.db", config=HASH) as b:
        b.import_pam(_foreign(), user_id="erin")
        got = {m.text: m for m in b.list(user_id="erin", include_inactive=True)}
        assert got["User speaks Portuguese and English"].kind == "persona"
        assert got["User runs Debian on a ThinkPad"].kind == "project"
        assert got["User runs Debian on a ThinkPad"].status == "archived"
        assert got["User holds no clearance"].kind == "fact"
        assert got["User speaks Portuguese and English"].metadata["pam"]["platform"] == "chatgpt"


@pytest.mark.parametrize("change, field", [
    (lambda d: d.update(schema="something-else"), "schema"),
    (lambda d: d["memories"][1].pop("provenance"), "memories[1].provenance"),
    (lambda d: d["memories"][0].update(content="User speaks only Klingon"), "memories[0].content_hash"),
    (lambda d: d["memories"][2].update(custom_type=None), "memories[2].custom_type"),
    (lambda d: d["memories"][0]["temporal"].update(created_at="last tuesday"),
     "memories[0].temporal.created_at"),
    (lambda d: d["memories"].append(copy.deepcopy(d["memories"][0])), "memories[3].id"),
    (lambda d: d["relations"].append({"id": "r2", "from": "mem-1", "to": "mem-9",
                                      "type": "supports"}), "relations[1]"),
    (lambda d: d["integrity"].update(total_memories=7), "integrity.total_memories"),
])
def test_a_bad_file_is_refused_whole_naming_the_field(tmp_path: Path, change: Any, field: str) -> None:
    doc = _foreign()
    change(doc)
    with Memory(tmp_path / "b.db", config=HASH) as b:
        with pytest.raises(ValidationError) as caught:
            b.import_pam(doc, user_id="erin")
        assert caught.value.field == field
        assert b.stats().memories == 0 and b.stats().episodes == 0
