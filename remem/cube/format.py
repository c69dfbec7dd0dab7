"""The MemCube file: what it holds, how it is laid out, and how it is checked.

A cube is a zip archive of four JSON files and nothing else (no pickles, no code):

- ``manifest.json``: name, version, description, licence, the embedder of the store it
  was packed from, counts, and the SHA-256 of each data file;
- ``memories.jsonl``: one memory a line, with its versions, its sources (ids of other
  lines: the episodes it was derived from) and its metadata;
- ``edges.jsonl``: one typed edge a line, between two memories of the cube;
- ``signature.json``: an Ed25519 signature over the manifest in canonical JSON (RFC 8785).

The signature covers the manifest, the manifest covers each data file by its checksum,
so one changed byte anywhere is found. Every record is a strict model: an unknown field,
a wrong type or a dangling reference is an error that names the line.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import zipfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import rfc8785
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr
from pydantic import ValidationError as PydanticError

from ..errors import CubeError, CubeVerifyError
from ..model import EPISODE_KINDS, KINDS

__all__ = ["FORMAT", "FORMAT_VERSION", "MAX_BYTES", "Cube", "CubeEdge", "CubeHistory",
           "CubeManifest", "CubeMemory", "CubeSignature", "canonical", "digest", "read_cube",
           "write_cube"]

FORMAT = "remem-cube"
FORMAT_VERSION = 1
#: A cube larger than this (unpacked) is refused before it is read.
MAX_BYTES = 512 * 1024 * 1024
FILES = ("manifest.json", "memories.jsonl", "edges.jsonl", "signature.json")
NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
VERSION = re.compile(r"\d+(\.\d+){0,2}([-+][0-9A-Za-z.-]{1,32})?")
SHA256 = re.compile(r"sha256:[0-9a-f]{64}")
STATUSES = ("active", "superseded", "archived", "forgotten", "held")
MATURITIES = ("candidate", "confirmed", "canonical")
Strict = ConfigDict(frozen=True, extra="forbid", strict=True)


class CubeHistory(BaseModel):
    """One version of a memory, as its history keeps it."""

    model_config = Strict

    version: StrictInt = Field(ge=1)
    action: StrictStr = Field(min_length=1, max_length=64)
    text: StrictStr
    status: Literal["active", "superseded", "archived", "forgotten", "held"]
    reason: StrictStr | None = None
    at: StrictFloat | StrictInt


class CubeMemory(BaseModel):
    """One line of ``memories.jsonl``: an episode (a source) or a derived memory."""

    model_config = Strict

    id: StrictStr = Field(min_length=1, max_length=128)
    kind: StrictStr
    text: StrictStr = Field(min_length=1)
    raw: StrictBool
    role: StrictStr | None = Field(None, max_length=128)
    subject: StrictStr | None = Field(None, max_length=256)
    status: Literal["active", "superseded", "archived", "forgotten", "held"] = "active"
    maturity: Literal["candidate", "confirmed", "canonical"] = "candidate"
    pinned: StrictBool = False
    event_time: StrictFloat | StrictInt | None = None
    observed_at: StrictFloat | StrictInt
    valid_from: StrictFloat | StrictInt | None = None
    valid_to: StrictFloat | StrictInt | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    sources: list[StrictStr] = Field(default_factory=list)
    history: list[CubeHistory] = Field(default_factory=list)

    def model_post_init(self, __context: Any) -> None:
        kinds = EPISODE_KINDS if self.raw else KINDS
        if self.kind not in kinds:
            raise ValueError(f"kind {self.kind!r} is not a kind of "
                             f"{'episode' if self.raw else 'memory'}: use one of {', '.join(kinds)}")
        if self.raw and self.sources:
            raise ValueError("an episode has no sources")
        versions = [h.version for h in self.history]
        if versions != sorted(set(versions)):
            raise ValueError("history versions must rise one by one")


class CubeEdge(BaseModel):
    """One line of ``edges.jsonl``: a typed, weighted edge between two memories of the cube."""

    model_config = Strict

    src: StrictStr = Field(min_length=1, max_length=128)
    dst: StrictStr = Field(min_length=1, max_length=128)
    type: StrictStr = Field(pattern=r"^[a-z_]{1,32}$")
    weight: StrictFloat | StrictInt = Field(ge=0, le=1e6)


class CubeEmbedder(BaseModel):
    """The embedder of the store a cube was packed from (vectors are not packed: the
    installing store embeds the text with its own)."""

    model_config = Strict

    name: StrictStr = Field(min_length=1, max_length=128)
    dim: StrictInt = Field(ge=1, le=65536)


class CubeSigner(BaseModel):
    """Who signed: the Ed25519 public key (raw, base64url) and its fingerprint."""

    model_config = Strict

    algorithm: Literal["Ed25519"] = "Ed25519"
    public_key: StrictStr = Field(pattern=r"^[A-Za-z0-9_-]{43}=?$")
    fingerprint: StrictStr = Field(pattern=r"^[0-9a-f]{16}$")
    name: StrictStr | None = Field(None, max_length=128)


class CubeManifest(BaseModel):
    """``manifest.json``: what the cube is and the checksums of what it holds."""

    model_config = Strict

    format: Literal["remem-cube"] = FORMAT
    format_version: Literal[1] = FORMAT_VERSION
    name: StrictStr = Field(pattern=NAME.pattern)
    version: StrictStr = Field(pattern=VERSION.pattern)
    description: StrictStr = Field("", max_length=4000)
    license: StrictStr = Field(min_length=1, max_length=128)
    created_at: StrictStr
    created_by: StrictStr = Field(max_length=128)
    embedder: CubeEmbedder
    counts: dict[Literal["memories", "episodes", "edges", "versions"], StrictInt]
    checksums: dict[Literal["memories.jsonl", "edges.jsonl"], StrictStr]
    signer: CubeSigner

    def model_post_init(self, __context: Any) -> None:
        try:
            datetime.fromisoformat(self.created_at)
        except ValueError:
            raise ValueError(f"created_at {self.created_at!r} is not an ISO 8601 time") from None
        for name, value in self.checksums.items():
            if not SHA256.fullmatch(value):
                raise ValueError(f"checksum of {name} is not sha256:<64 hex>")
        if set(self.checksums) != {"memories.jsonl", "edges.jsonl"}:
            raise ValueError("checksums must name memories.jsonl and edges.jsonl")
        if set(self.counts) != {"memories", "episodes", "edges", "versions"}:
            raise ValueError("counts must give memories, episodes, edges and versions")


class CubeSignature(BaseModel):
    """``signature.json``: the signature of the canonical manifest."""

    model_config = Strict

    algorithm: Literal["Ed25519"] = "Ed25519"
    value: StrictStr = Field(pattern=r"^[A-Za-z0-9_-]{86}(==)?$")


class Cube(BaseModel):
    """A cube read from its file and checked record by record (not yet verified: see
    :func:`remem.cube.verify`)."""

    model_config = ConfigDict(frozen=True)

    manifest: CubeManifest
    memories: list[CubeMemory]
    edges: list[CubeEdge]
    signature: CubeSignature
    data: dict[str, bytes] = Field(repr=False, description="the bytes of each data file")


def canonical(value: Any) -> bytes:
    """``value`` in canonical JSON (RFC 8785): the bytes that are hashed and signed."""
    return rfc8785.dumps(value)


def digest(data: bytes) -> str:
    """``sha256:<hex>`` of ``data``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def b64url(data: bytes) -> str:
    """Base64url without padding."""
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def jsonl(records: Sequence[BaseModel]) -> bytes:
    """Records as JSON Lines, one canonical JSON object a line."""
    return b"".join(canonical(r.model_dump(mode="json")) + b"\n" for r in records)


def write_cube(path: Path, manifest: CubeManifest, data: dict[str, bytes],
               signature: CubeSignature) -> None:
    """Write the archive through a temporary file: a failure leaves no half cube."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
            z.writestr("manifest.json", canonical(manifest.model_dump(mode="json")))
            z.writestr("memories.jsonl", data["memories.jsonl"])
            z.writestr("edges.jsonl", data["edges.jsonl"])
            z.writestr("signature.json", canonical(signature.model_dump(mode="json")))
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _problem(exc: PydanticError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"])
    message = error["msg"].removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def _json(name: str, raw: bytes, line: int | None = None) -> Any:
    where = f"{name} line {line}" if line is not None else name
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise CubeError(f"{where} is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise CubeError(f"{where} is not valid JSON: {exc.msg}") from None


def _records(name: str, raw: bytes, model: type[BaseModel]) -> list[Any]:
    out = []
    for number, line in enumerate(raw.split(b"\n"), 1):
        if not line.strip():
            continue
        obj = _json(name, line, number)
        if not isinstance(obj, dict):
            raise CubeError(f"{name} line {number}: expected a JSON object")
        try:
            out.append(model.model_validate(obj))
        except PydanticError as exc:
            raise CubeError(f"{name} line {number}: {_problem(exc)}") from None
    return out


def _entries(path: Path) -> dict[str, bytes]:
    """The files of the archive, refusing anything but the four expected ones."""
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
            names = [i.filename for i in infos]
            if sorted(names) != sorted(FILES):
                extra = sorted(set(names) - set(FILES))
                missing = sorted(set(FILES) - set(names))
                detail = (f"unexpected {', '.join(extra)}" if extra else "") + \
                    ("; " if extra and missing else "") + \
                    (f"missing {', '.join(missing)}" if missing else "")
                raise CubeError(f"{path} is not a remem cube: {detail or 'duplicate entries'}")
            if sum(i.file_size for i in infos) > MAX_BYTES:
                raise CubeError(f"{path} unpacks to more than {MAX_BYTES // 2**20} MiB; refused")
            return {name: z.read(name) for name in names}
    except zipfile.BadZipFile as exc:
        raise CubeVerifyError(f"{path} is damaged or not a cube (zip: {exc}); nothing was "
                              "read from it") from None
    except (zipfile.LargeZipFile, NotImplementedError, EOFError) as exc:
        raise CubeVerifyError(f"{path} cannot be read as a cube: {exc}") from None


def read_cube(path: str | Path) -> Cube:
    """Read and check every record of the cube at ``path``; CubeError naming the first
    problem (CubeVerifyError for a damaged archive)."""
    path = Path(path)
    if not path.is_file():
        raise CubeError(f"{path}: no such cube file")
    files = _entries(path)
    manifest_obj = _json("manifest.json", files["manifest.json"])
    signature_obj = _json("signature.json", files["signature.json"])
    try:
        manifest = CubeManifest.model_validate(manifest_obj)
    except PydanticError as exc:
        raise CubeError(f"manifest.json: {_problem(exc)}") from None
    try:
        signature = CubeSignature.model_validate(signature_obj)
    except PydanticError as exc:
        raise CubeError(f"signature.json: {_problem(exc)}") from None
    memories = _records("memories.jsonl", files["memories.jsonl"], CubeMemory)
    edges = _records("edges.jsonl", files["edges.jsonl"], CubeEdge)
    return Cube(manifest=manifest, memories=memories, edges=edges, signature=signature,
                data={"memories.jsonl": files["memories.jsonl"], "edges.jsonl": files["edges.jsonl"],
                      "manifest.json": files["manifest.json"]})


def manifest_bytes(manifest: CubeManifest) -> bytes:
    """What the signature signs."""
    return canonical(manifest.model_dump(mode="json"))

