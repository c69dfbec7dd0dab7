"""The MemCube file: what it holds, how it is laid out, and how it is checked.

A cube is one UTF-8 text file of JSON Lines and nothing else (no pickles, no code), each
line one canonical JSON object (RFC 8785) with one key saying what it is:

- ``{"manifest": ...}`` first: name, version, description, licence, the embedder of the
  store it was packed from, counts, the signer's public key, and the SHA-256 of the
  memory lines and of the edge lines, byte for byte;
- ``{"memory": ...}`` lines: one memory each, with its versions, its sources (ids of
  other lines: the episodes it was derived from) and its metadata;
- ``{"edge": ...}`` lines: one typed edge each, between two memories of the cube;
- ``{"signature": ...}`` last: Ed25519 over the manifest's canonical bytes.

The signature covers the manifest and the manifest covers every other line, and each
line must be exactly the canonical form of what it says, so one changed byte anywhere in
the file is found. (A zip or tar would carry header bytes, times, modes and comments, that
no checksum covers.) Every record is a strict model: an unknown field, a wrong type or a
dangling reference is an error that names the line.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
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
           "CubeManifest", "CubeMemory", "CubeSignature", "canonical", "digest", "edge_lines",
           "memory_lines", "read_cube", "write_cube"]

FORMAT = "remem-cube"
FORMAT_VERSION = 1
#: A cube larger than this is refused before it is read.
MAX_BYTES = 512 * 1024 * 1024
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
    """A ``memory`` line: an episode (a source) or a derived memory."""

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
    """An ``edge`` line: a typed, weighted edge between two memories of the cube."""

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
    public_key: StrictStr = Field(pattern=r"^[A-Za-z0-9_-]{43}$")
    fingerprint: StrictStr = Field(pattern=r"^[0-9a-f]{16}$")
    name: StrictStr | None = Field(None, max_length=128)


class CubeManifest(BaseModel):
    """The ``manifest`` line: what the cube is and the checksums of what it holds."""

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
    checksums: dict[Literal["memories", "edges"], StrictStr]
    signer: CubeSigner

    def model_post_init(self, __context: Any) -> None:
        try:
            datetime.fromisoformat(self.created_at)
        except ValueError:
            raise ValueError(f"created_at {self.created_at!r} is not an ISO 8601 time") from None
        for name, value in self.checksums.items():
            if not SHA256.fullmatch(value):
                raise ValueError(f"checksum of {name} is not sha256:<64 hex>")
        if set(self.checksums) != {"memories", "edges"}:
            raise ValueError("checksums must give memories and edges")
        if set(self.counts) != {"memories", "episodes", "edges", "versions"}:
            raise ValueError("counts must give memories, episodes, edges and versions")


class CubeSignature(BaseModel):
    """The ``signature`` line: the signature of the canonical manifest."""

    model_config = Strict

    algorithm: Literal["Ed25519"] = "Ed25519"
    value: StrictStr = Field(pattern=r"^[A-Za-z0-9_-]{86}$")


class Cube(BaseModel):
    """A cube read from its file and checked line by line (its signature not yet: see
    :func:`remem.cube.verify`)."""

    model_config = ConfigDict(frozen=True)

    manifest: CubeManifest
    memories: list[CubeMemory]
    edges: list[CubeEdge]
    signature: CubeSignature
    data: dict[str, bytes] = Field(repr=False, description="the bytes of the memory lines, of "
                                   "the edge lines and of the manifest, as signed")


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


def _line(key: str, record: BaseModel) -> bytes:
    return canonical({key: record.model_dump(mode="json")}) + b"\n"


def memory_lines(records: Sequence[CubeMemory]) -> bytes:
    """The memory lines of a cube, as the manifest's checksum covers them."""
    return b"".join(_line("memory", r) for r in records)


def edge_lines(records: Sequence[CubeEdge]) -> bytes:
    """The edge lines of a cube, as the manifest's checksum covers them."""
    return b"".join(_line("edge", r) for r in records)


def write_cube(path: Path, manifest: CubeManifest, data: dict[str, bytes],
               signature: CubeSignature) -> None:
    """Write the cube through a temporary file: a failure leaves no half cube."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(_line("manifest", manifest))
            f.write(data["memories"])
            f.write(data["edges"])
            f.write(_line("signature", signature))
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _problem(exc: PydanticError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"])
    message = error["msg"].removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def _parse(number: int, raw: bytes) -> tuple[str, Any]:
    """``(key, value)`` of one line, which must be the canonical JSON of one-key object."""
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise CubeVerifyError(f"line {number} is not JSON: the cube is damaged or not a cube") from None
    if not isinstance(obj, dict) or len(obj) != 1:
        raise CubeError(f"line {number}: expected an object with one key (manifest, memory, "
                        "edge or signature)")
    try:
        again = canonical(obj)
    except (TypeError, ValueError, rfc8785.CanonicalizationError):
        again = b""
    if again != raw:
        raise CubeVerifyError(f"line {number} is not as it was written (not canonical JSON): "
                              "the cube was changed")
    key, value = next(iter(obj.items()))
    if not isinstance(value, dict):
        raise CubeError(f"line {number}: {key} must be an object")
    return key, value


def _model(model: type[Any], value: dict[str, Any], where: str) -> Any:
    try:
        return model.model_validate(value)
    except PydanticError as exc:
        raise CubeError(f"{where}: {_problem(exc)}") from None


def read_cube(path: str | Path) -> Cube:
    """Read the cube at ``path``: its layout, the checksums the manifest gives, then every
    record; CubeVerifyError when bytes were changed, CubeError naming the first bad record.
    The signature is checked by :func:`remem.cube.install.verify`."""
    path = Path(path)
    if not path.is_file():
        raise CubeError(f"{path}: no such cube file")
    if path.stat().st_size > MAX_BYTES:
        raise CubeError(f"{path} is larger than {MAX_BYTES // 2**20} MiB; refused")
    data = path.read_bytes()
    if not data.endswith(b"\n"):
        raise CubeVerifyError(f"{path} does not end as a cube does: it is cut short or changed")
    lines = data[:-1].split(b"\n")
    if len(lines) < 2:
        raise CubeError(f"{path} is not a remem cube (no manifest and signature)")
    first, last = _parse(1, lines[0]), _parse(len(lines), lines[-1])
    if first[0] != "manifest" or last[0] != "signature":
        raise CubeError(f"{path} is not a remem cube: the first line must be its manifest, the "
                        "last its signature")
    manifest = _model(CubeManifest, first[1], "manifest")
    signature = _model(CubeSignature, last[1], "signature")
    body = lines[1:-1]
    # canonical JSON of a one-key object starts with that key: sort the lines by it
    memories_end = next((i for i, raw in enumerate(body) if not raw.startswith(b'{"memory":')),
                        len(body))
    for number, raw in enumerate(body[memories_end:], 2 + memories_end):
        if not raw.startswith(b'{"edge":'):
            key = raw.split(b":", 1)[0].strip(b'{"')[:32].decode("utf-8", "replace")
            raise CubeError(f"line {number}: unexpected record {key!r} (memory lines come "
                            "first, then edge lines)")
    # the checksums first: a changed byte is named as such before any record is read
    sections = {"memories": b"".join(raw + b"\n" for raw in body[:memories_end]),
                "edges": b"".join(raw + b"\n" for raw in body[memories_end:])}
    for name, section in sections.items():
        if digest(section) != manifest.checksums[name]:
            raise CubeVerifyError(f"the {name} do not match their checksum in the manifest: the "
                                  "cube was changed after it was signed")
    parsed = [_parse(n, raw) for n, raw in enumerate(body, 2)]
    memories = [_model(CubeMemory, v, f"line {n} (memory)")
                for n, (_, v) in enumerate(parsed[:memories_end], 2)]
    edges = [_model(CubeEdge, v, f"line {n} (edge)")
             for n, (_, v) in enumerate(parsed[memories_end:], 2 + memories_end)]
    return Cube(manifest=manifest, memories=memories, edges=edges, signature=signature,
                data={**sections, "manifest": lines[0][len(b'{"manifest":'):-1]})


def manifest_bytes(manifest: CubeManifest) -> bytes:
    """What the signature signs."""
    return canonical(manifest.model_dump(mode="json"))

