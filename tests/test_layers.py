"""The import graph: layers import only downward (DESIGN.md's table), the doors reach the
store only through the facade, and only the store imports a database driver.

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


#: DESIGN.md's table, top to bottom: a module may import its own row and the rows below.
#: Modules the table does not name sit with the row they serve: the package root and the
#: facade's parts with ``memory.py``, ``migrate.py`` (moving a store, the CLI's ``remem
#: migrate``) beside it, the benchmarks with the doors they drive, the input checks and the
#: text helpers with the domain types.
LAYERS: tuple[frozenset[str], ...] = tuple(frozenset(row) for row in (
    ("serve", "mcp", "cli", "daemon", "__main__", "bench"),
    ("integrations",),
    ("memory", "facade", "__init__", "migrate"),
    ("schedule",),
    ("extract",),
    ("organize",),
    ("retrieve",),
    ("govern",),
    ("cube",),
    ("tiers",),
    ("store",),
    ("embed", "llm"),
    ("model", "config", "errors", "_inputs", "text"),
))
RANK = {area: i for i, row in enumerate(LAYERS) for area in row}
#: Upward imports the table allows by name ("knows about").
ALLOWED_UP = {("cube", "govern")}
#: Upward imports the code has and the table does not allow, listed module by module so
#: that no new one passes: the memory agent (organize/) reads with extract/'s trained
#: heads, statement splitting and forget requests.
KNOWN_UP = {
    "organize/agent.py": {"extract"},
    "organize/relate.py": {"extract"},
    "organize/team.py": {"extract"},
}
DOORS = ("serve", "mcp", "cli", "daemon", "integrations")


def _area(module: str) -> str:
    """The first part of a module's path under remem/ (``store``, ``memory``, ``__init__``)."""
    return module.split(".")[0] if module else "__init__"


def ours(path: Path, root: Path = ROOT) -> set[str]:
    """The areas of remem (first path parts under ``root``) a module imports, lazily or not."""
    name = path.relative_to(root).with_suffix("").parts
    package = [p for p in (name if path.name == "__init__.py" else name[:-1]) if p != "__init__"]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {_area(a.name.removeprefix("remem").lstrip(".")) for a in node.names
                      if a.name == "remem" or a.name.startswith("remem.")}
            continue
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level == 0:
            if node.module is None or not (node.module == "remem" or node.module.startswith("remem.")):
                continue
            base = node.module.removeprefix("remem").lstrip(".")
        else:
            parent = package[:len(package) - (node.level - 1)]
            base = ".".join([*parent, *([node.module] if node.module else [])])
        if base:
            found.add(_area(base))
        else:  # from the package root: a submodule by name, or a name the root exports
            found |= {a.name if (root / a.name).is_dir() or (root / f"{a.name}.py").exists()
                      else "__init__" for a in node.names}
    return found


def upward_imports(root: Path) -> dict[str, list[str]]:
    """Each module under ``root`` that imports a layer above its own, with those layers."""
    upward = {}
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        area = path.relative_to(root).parts[0].removesuffix(".py")
        # an area with no row is reported by test_every_part_of_the_package_has_a_row
        above = {target for target in ours(path, root)
                 if RANK.get(target, len(LAYERS)) < RANK.get(area, -1)
                 and (area, target) not in ALLOWED_UP} - KNOWN_UP.get(name, set())
        if above:
            upward[name] = sorted(above)
    return upward


def doors_importing_the_store(root: Path) -> list[str]:
    return [path.relative_to(root).as_posix() for door in DOORS
            for path in sorted((root / door).rglob("*.py")) if "store" in ours(path, root)]


def test_every_part_of_the_package_has_a_row() -> None:
    areas = {p.relative_to(ROOT).parts[0].removesuffix(".py") for p in ROOT.rglob("*.py")}
    assert areas - set(RANK) == set()


def test_no_layer_imports_a_layer_above_it() -> None:
    assert upward_imports(ROOT) == {}


def test_the_doors_reach_the_store_only_through_the_facade() -> None:
    assert doors_importing_the_store(ROOT) == []


def test_the_import_graph_sees_relative_absolute_and_lazy_imports(tmp_path: Path) -> None:
    for module, text in {
        "store/base.py": "",
        "serve/routes.py": "from ..store.base import Store\nfrom . import auth\n",
        "serve/auth.py": "def f():\n    from .. import Memory, store\n",
        "cli/app.py": "import remem.memory\n",
        "schedule/worker.py": "from remem.memory import Memory\n",
        "retrieve/assemble.py": "from ..schedule import reminders\n",
        "cube/pack.py": "from ..govern import sharing\n",
        "organize/team.py": "from ..extract.heads import Reader\n",
    }.items():
        (tmp_path / module).parent.mkdir(exist_ok=True)
        (tmp_path / module).write_text(text, encoding="utf-8")
    assert ours(tmp_path / "serve/routes.py", tmp_path) == {"store", "serve"}
    assert ours(tmp_path / "serve/auth.py", tmp_path) == {"__init__", "store"}
    assert upward_imports(tmp_path) == {"retrieve/assemble.py": ["schedule"],
                                        "schedule/worker.py": ["memory"]}
    assert doors_importing_the_store(tmp_path) == ["serve/auth.py", "serve/routes.py"]


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


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_full_text_ranked_in_sql_loads_no_index(backend: str, tmp_path: Path,
                                                request: pytest.FixtureRequest) -> None:
    where = request.getfixturevalue("pg_url") if backend == "postgres" else tmp_path / "m.db"
    config = Config.from_env({"REMEM_FULLTEXT": "sql"}, embedder="hash", embed_in_background=False)
    with Memory(where, config=config) as m:
        m.add("the billing service retries three times", user_id="ann")
        found = m.search("billing retries", user_id="ann")
        assert "the billing service retries three times" in [h.memory.text for h in found]
        assert m.store.fulltext_engine in ("fts5", "tsvector")
        assert m.store.fulltext_index is None  # no index held in this process
    with pytest.raises(ConfigError, match="fulltext"):
        Config.from_env({"REMEM_FULLTEXT": "bm25"})


def test_a_password_in_a_store_url_is_never_shown(pg_url: str) -> None:
    url = pg_url.replace("postgresql://postgres@", "postgresql://postgres:s3cret@")
    with Memory(url, config=Config(embedder="hash")) as m:
        assert "s3cret" not in str(m.path) and "s3cret" not in m.stats().path
        assert ":***@" in m.stats().path
