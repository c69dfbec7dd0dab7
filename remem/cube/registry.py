"""The local registry: a folder of cube files (``$REMEM_HOME/cubes`` by default).

``remem cube pack`` without ``--out`` writes ``NAME-VERSION.cube`` there; ``install``
takes a path or the name of a cube in the registry (its newest version).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import CubeError, RememError
from .format import CubeManifest, read_cube
from .install import verify

__all__ = ["Entry", "entries", "registry_path", "resolve"]


@dataclass(frozen=True)
class Entry:
    """One cube of the registry: its file, its manifest, and whether it verified."""

    path: Path
    manifest: CubeManifest | None
    verified: bool
    problem: str | None = None


def registry_path(folder: Path, name: str, version: str) -> Path:
    """Where the registry keeps version ``version`` of cube ``name``."""
    return folder / f"{name}-{version}.cube"


def entries(folder: Path) -> list[Entry]:
    """Every ``*.cube`` file of the folder, checked, by name then version."""
    out = []
    for path in sorted(folder.glob("*.cube")) if folder.is_dir() else []:
        try:
            cube = read_cube(path)
        except RememError as exc:
            out.append(Entry(path, None, False, str(exc)))
            continue
        try:
            verify(cube)
            out.append(Entry(path, cube.manifest, True))
        except RememError as exc:
            out.append(Entry(path, cube.manifest, False, str(exc)))
    return out


def _version_key(version: str) -> tuple[int, ...]:
    head = version.split("-")[0].split("+")[0]
    return tuple(int(p) for p in head.split(".") if p.isdigit())


def resolve(target: str, folder: Path) -> Path:
    """A cube file from a path, or from a name in the registry (its newest version)."""
    path = Path(target).expanduser()
    if path.is_file():
        return path
    named = [e for e in entries(folder) if e.manifest is not None and e.manifest.name == target]
    if not named:
        raise CubeError(f"{target}: no such cube file, and no cube of that name in the "
                        f"registry {folder}")
    return max(named, key=lambda e: _version_key(e.manifest.version)).path  # type: ignore[union-attr]
