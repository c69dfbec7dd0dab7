"""The import graph: only the store imports a database driver.

Read from the source (no module is imported), so the test also covers modules whose
optional dependencies are not installed.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import remem
from remem import Config, ConfigError, Memory
from remem.store import create_store

ROOT = Path(remem.__file__).parent
DRIVERS = ("sqlite3", "psycopg", "psycopg_pool", "pgvector", "sqlite_vec")
#: a benchmark baseline that is an FTS5 index of its own, compared with remem; not a store
OWN_DATABASE = {"bench/baselines.py"}


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_no_module_above_the_store_imports_a_database_driver() -> None:
    offenders = {}
    for path in sorted(ROOT.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name.startswith("store/") or name in OWN_DATABASE:
            continue
        drivers = imports(path) & set(DRIVERS)
        if drivers:
            offenders[name] = sorted(drivers)
    assert offenders == {}


def test_the_layers_above_the_store_name_no_adapter() -> None:
    offenders = []
    for path in sorted(ROOT.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name.startswith("store/"):
            continue
        text = path.read_text(encoding="utf-8")
        if "store.sqlite" in text or "store.postgres" in text or "SQLiteStore" in text:
            offenders.append(name)
    assert offenders == []


def test_a_postgresql_url_without_the_driver_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(ConfigError, match=r"pip install 'remem\[postgres\]'"):
        create_store("postgresql://remem@localhost/remem", dim=8, embedder="unit")
    with pytest.raises(ConfigError, match="unknown store URL scheme 'redis'"):
        Memory("redis://localhost/0", config=Config(embedder="hash"))


def test_a_store_url_reaches_the_configuration() -> None:
    config = Config.from_env({"REMEM_STORE_URL": "postgresql://remem@db/remem"})
    assert config.store == "postgresql://remem@db/remem"
    assert Config.from_env({}).store is None


def test_a_password_in_a_store_url_is_never_shown(pg_url: str) -> None:
    url = pg_url.replace("postgresql://postgres@", "postgresql://postgres:s3cret@")
    with Memory(url, config=Config(embedder="hash")) as m:
        assert "s3cret" not in str(m.path) and "s3cret" not in m.stats().path
        assert ":***@" in m.stats().path
