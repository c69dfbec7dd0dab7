"""Validation at the door: turn what callers pass into checked values, or say what is wrong."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import pydantic
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from .errors import ValidationError
from .model import DOORS, EPISODE_KINDS, KINDS, TRUST_LEVELS, AgentEvent, Scope

__all__ = ["FILTER_KINDS", "Message", "check_label", "check_metadata", "clean_text", "parse_events",
           "parse_kinds", "parse_messages", "parse_provenance", "parse_scope", "parse_time"]

#: Every kind a search or a listing can be narrowed to.
FILTER_KINDS = tuple(dict.fromkeys((*KINDS, *EPISODE_KINDS)))

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


class Message(BaseModel):
    """One turn as callers may pass it: ``role`` or ``speaker``, ``content`` or ``text``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    role: str | None = None
    speaker: str | None = None
    content: str | None = None
    text: str | None = None
    name: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    timestamp: str | datetime | None = None


def parse_time(value: str | datetime | None, field: str) -> float | None:
    """Epoch seconds from an ISO 8601 string or a datetime; naive means UTC."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValidationError(
                field, f"{value!r} is not an ISO 8601 time; write e.g. 2023-05-08T13:56:00"
            ) from None
    if not isinstance(value, datetime):
        raise ValidationError(field, f"expected an ISO 8601 string or datetime, got {type(value).__name__}")
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.timestamp()


def clean_text(value: object, field: str, max_chars: int, *, strip_controls: bool = False) -> str:
    """Check a text: a str, valid UTF-8, no control characters, not empty, not too long."""
    if not isinstance(value, str):
        raise ValidationError(field, f"expected text, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(field, "is not valid UTF-8 (it holds lone surrogates); "
                              "decode your bytes as UTF-8 first") from None
    if strip_controls:
        value = _CONTROL.sub("", _ANSI.sub("", value))
    elif (bad := _CONTROL.search(value)) is not None:
        raise ValidationError(field, f"holds the control character {bad.group()!r} at "
                              f"position {bad.start()}; remove it")
    if not value.strip():
        raise ValidationError(field, "is empty; give some text")
    if len(value) > max_chars:
        raise ValidationError(field, f"is {len(value):,} characters, over the limit of "
                              f"{max_chars:,}; split it into several messages")
    return value


def check_label(value: object, field: str) -> None:
    """Check a short string (an id, a role, a reason): valid UTF-8, no control characters."""
    if value is None:
        return
    if not isinstance(value, str):
        raise ValidationError(field, f"expected a string, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(field, "is not valid UTF-8 (it holds lone surrogates)") from None
    if (bad := _CONTROL.search(value)) is not None:
        raise ValidationError(field, f"holds the control character {bad.group()!r}; remove it")


def check_metadata(value: object, field: str) -> dict[str, Any]:
    """Check that metadata is a dict the store can keep as JSON text."""
    if not isinstance(value, dict):
        raise ValidationError(field, f"expected a dict, got {type(value).__name__}")
    if _depth(value) > MAX_METADATA_DEPTH:
        raise ValidationError(field, f"is nested more than {MAX_METADATA_DEPTH} levels deep; "
                              "flatten it")
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
        raise ValidationError(field, f"cannot be stored as JSON: {exc}") from None
    return value


#: How deep metadata may nest: deeper is refused before anything recurses into it.
MAX_METADATA_DEPTH = 32


def _depth(value: object) -> int:
    """How deeply dicts and lists nest in ``value``, counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            if deepest > MAX_METADATA_DEPTH:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest


def _first_error(exc: pydantic.ValidationError, prefix: str) -> ValidationError:
    err = exc.errors()[0]
    loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
    problem = "is not a known field" if err["type"] == "extra_forbidden" else err["msg"].lower()
    if err["type"] in ("union_tag_invalid", "union_tag_not_found"):  # the event's "type"
        loc += "." + err["ctx"]["discriminator"].strip("'")
        problem = (f"{err['ctx']['tag']!r} is not one of {err['ctx']['expected_tags']}"
                   if err["type"] == "union_tag_invalid" else "is missing")
    return ValidationError(f"{prefix}{loc}", problem)


def parse_scope(*, nested: bool = False, **fields: Any) -> Scope:
    """A Scope from keyword arguments; ``org_id=None`` means the default org. ``nested``
    widens reads to the levels above (see :class:`~remem.model.Scope`)."""
    if fields.get("org_id") is None:
        fields["org_id"] = "default"
    for name, value in fields.items():
        if value is not None and not isinstance(value, str):
            raise ValidationError(name, f"expected a string id, got {type(value).__name__}")
        if isinstance(value, str) and not value.strip():
            raise ValidationError(name, "is empty; pass None to leave it out")
        check_label(value, name)
    return Scope(**fields, nested=nested)


def parse_kinds(kinds: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """``kinds`` as a tuple (one kind may be given as a plain string); ValidationError
    for a name that is not a kind, which would otherwise match nothing, silently."""
    if kinds is None:
        return None
    given = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    for kind in given:
        if kind not in FILTER_KINDS:
            raise ValidationError("kind", f"{kind!r} is not a kind of memory; use one of "
                                           f"{', '.join(FILTER_KINDS)}")
    return given


def parse_provenance(trust: str | Sequence[str] | None, door: str | Sequence[str] | None
                     ) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
    """``trust`` and ``door`` filters as tuples (one value may be a plain string);
    ValidationError for a trust level or a door that does not exist."""
    out: list[tuple[str, ...] | None] = []
    for name, value, known in (("trust", trust, TRUST_LEVELS), ("door", door, (*DOORS, "unknown"))):
        if value is None:
            out.append(None)
            continue
        given = (value,) if isinstance(value, str) else tuple(value)
        for one in given:
            if one not in known:
                raise ValidationError(name, f"{one!r}: use one of {', '.join(known)}")
        out.append(given)
    return out[0], out[1]


ParsedMessage = tuple[str | None, str, dict[str, Any], float | None]


def parse_messages(messages: object, max_chars: int) -> list[ParsedMessage]:
    """``(role, text, metadata, time)`` per message from a string, a dict or a list of dicts."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    elif isinstance(messages, Mapping):
        messages = [messages]
    if not isinstance(messages, Sequence) or isinstance(messages, bytes):
        raise ValidationError("messages", "expected a string, a dict or a list of dicts, "
                              f"got {type(messages).__name__}")
    if not messages:
        raise ValidationError("messages", "is empty; give at least one message")
    out = []
    for i, raw in enumerate(messages):
        where = f"messages[{i}]"
        if isinstance(raw, str):
            raw = {"role": "user", "content": raw}
        if not isinstance(raw, Mapping):
            raise ValidationError(where, f"expected a dict or a string, got {type(raw).__name__}")
        try:
            msg = Message.model_validate(dict(raw))
        except pydantic.ValidationError as exc:
            raise _first_error(exc, where) from None
        if msg.content is not None and msg.text is not None:
            raise ValidationError(where, "has both content and text; give one")
        body = msg.content if msg.content is not None else msg.text
        if body is None:
            raise ValidationError(f"{where}.content", "is missing; every message needs content")
        text = clean_text(body, f"{where}.content", max_chars)
        for label in ("role", "speaker", "name"):
            check_label(getattr(msg, label), f"{where}.{label}")
        check_metadata(msg.metadata, f"{where}.metadata")
        role = msg.speaker or msg.name or msg.role
        meta = dict(msg.metadata)
        if msg.speaker and msg.role:
            meta.setdefault("role", msg.role)
        out.append((role, text, meta, parse_time(msg.timestamp, f"{where}.timestamp")))
    return out


_EVENTS: TypeAdapter[list[AgentEvent]] = TypeAdapter(list[AgentEvent])


def parse_events(events: object) -> list[Any]:
    """Agent events from dicts (or event objects), checked against the event model."""
    if isinstance(events, Mapping):
        events = [events]
    if not isinstance(events, Sequence) or not events:
        raise ValidationError("events", "expected a non-empty list of event dicts")
    raw = [e.model_dump() if isinstance(e, BaseModel) else e for e in events]
    try:
        return _EVENTS.validate_python(raw)
    except pydantic.ValidationError as exc:
        raise _first_error(exc, "events") from None
