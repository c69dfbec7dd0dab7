"""The public surface of the package: what ``from remem import ...`` offers."""

from __future__ import annotations

import importlib
import inspect
from importlib.metadata import version

import remem


def test_all_is_sorted_and_unique() -> None:
    assert remem.__all__ == sorted(set(remem.__all__))


def test_all_is_exactly_the_public_names() -> None:
    public = {name for name, value in vars(remem).items()
              if not name.startswith("_") and not inspect.ismodule(value)}
    assert set(remem.__all__) == public


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
