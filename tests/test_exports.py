"""The public surface of the package: what ``from remem import ...`` offers."""

from __future__ import annotations

import importlib
import inspect
from importlib.metadata import version

import remem


def test_all_is_sorted_and_unique() -> None:
    assert remem.__all__ == sorted(set(remem.__all__))


def test_all_is_exactly_the_public_names() -> None:
    # the names load on first use, so the package says what it offers through dir()
    public = {name for name in dir(remem) if not name.startswith("_")}
    assert set(remem.__all__) == public
    assert all(not inspect.ismodule(getattr(remem, name)) for name in public)


def test_importing_the_package_loads_nothing_heavy() -> None:
    import subprocess
    import sys

    code = "import sys, remem; print(sorted(m for m in ('numpy', 'pydantic', 'sqlite3') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_agent_hook_client_loads_only_what_a_hook_needs() -> None:
    # every module it loads costs each hook, on every prompt and shell command, its time;
    # a hook comes in through the command line's entry point
    import importlib.util
    import subprocess
    import sys

    heavy = ("argparse", "dataclasses", "logging", "numpy", "pathlib", "pydantic",
             "selectors", "sqlite3", "subprocess", "threading", "typing")
    if importlib.util.find_spec("_sha256") or importlib.util.find_spec("_sha2"):
        heavy += ("_hashlib",)  # OpenSSL, unless this Python has no built-in sha256
    code = ("import sys; before = set(sys.modules); import remem.cli, remem.daemon.client; "
            f"print(sorted(m for m in {heavy!r} if m in sys.modules and m not in before))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_exported_name_is_importable() -> None:
    module = importlib.import_module("remem")
    for name in remem.__all__:
        namespace: dict[str, object] = {}
        exec(f"from remem import {name}", namespace)
        assert namespace[name] is getattr(module, name)


def test_version_matches_the_installed_distribution() -> None:
    assert remem.__version__ == version("remem")


def test_errors_can_be_caught_as_the_builtin_kinds() -> None:
    assert issubclass(remem.ValidationError, ValueError)
    assert issubclass(remem.ValidationError, remem.ConfigError)
    assert issubclass(remem.NotFoundError, LookupError)
    assert issubclass(remem.ClosedError, RuntimeError)
    assert issubclass(remem.SchemaVersionError, remem.StoreError)
    assert issubclass(remem.EmbedderMismatchError, remem.StoreError)
    for name in remem.__all__:
        obj = getattr(remem, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, remem.RememError), name


def test_validation_error_names_its_field() -> None:
    err = remem.ValidationError("messages[2].content", "is empty; give some text")
    assert err.field == "messages[2].content"
    assert err.problem == "is empty; give some text"
    assert str(err) == "messages[2].content: is empty; give some text"
