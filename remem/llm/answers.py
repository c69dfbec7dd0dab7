"""Asking a chat model for a JSON answer, and sending an unusable one back.

Every caller that needs structured output (the LLM extractor, the planner, the team judge)
asks the same way: the answer is read as one JSON object (a ``<think>`` block and a code
fence around it are tolerated), checked by the caller's ``parse``, and when that fails
the model is shown its answer and what is wrong with it, up to ``attempts`` calls.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pydantic

from ..errors import ConfigError, ExtractionError
from .client import ChatModel, Message

__all__ = ["InvalidAnswer", "ask_json", "describe", "load_json_object"]

log = logging.getLogger(__name__)

T = TypeVar("T")

_REPAIR = ("Your answer above is not usable: {problem}. Answer again with only the corrected "
           "JSON object.")
_MAX_ECHO_CHARS = 4000
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^```[\w-]*\s*\n?(.*?)\n?```$", re.DOTALL)


class InvalidAnswer(ValueError):
    """An answer that is no JSON object, or one that says something impossible (an unknown
    turn, a rule number that does not exist); the message is what the model is told."""


def load_json_object(raw: str) -> dict[str, Any]:
    """The JSON object a model answered, or :class:`InvalidAnswer` saying why not."""
    text = _THINK.sub("", raw).strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        start, end = text.find("{"), text.rfind("}")
        try:
            data = json.loads(text[start:end + 1]) if 0 <= start < end else None
        except json.JSONDecodeError:
            data = None
        if data is None:
            raise InvalidAnswer(f"it is not valid JSON ({exc.msg} at line {exc.lineno} column "
                                f"{exc.colno}); answer with one JSON object and nothing else") from None
    if not isinstance(data, dict):
        raise InvalidAnswer(f"it is a JSON {type(data).__name__}, not the JSON object asked for")
    return data


def describe(exc: pydantic.ValidationError) -> str:
    """A validation error as a short list of 'where: what' the model can act on."""
    parts = []
    for err in exc.errors()[:6]:
        where = ""
        for loc in err["loc"]:
            where += f"[{loc}]" if isinstance(loc, int) else (f".{loc}" if where else str(loc))
        parts.append(f"{where or 'the object'}: {err['msg']}")
    more = len(exc.errors()) - 6
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def ask_json(client: ChatModel, messages: Sequence[Message], parse: Callable[[dict[str, Any]], T],
             *, attempts: int, step: str) -> T:
    """``parse`` of the model's JSON answer to ``messages``; an answer that is no JSON
    object, or that ``parse`` refuses (:class:`InvalidAnswer`, a pydantic validation
    error), is sent back with what is wrong, up to ``attempts`` calls in all; then
    :class:`~remem.errors.ExtractionError` for ``step``."""
    if attempts < 1:
        raise ConfigError(f"attempts must be at least 1, not {attempts}")
    messages = list(messages)
    problem = ""
    for attempt in range(1, attempts + 1):
        raw = client.complete(messages, json_mode=True, temperature=0)
        try:
            return parse(load_json_object(raw))
        except pydantic.ValidationError as exc:
            problem = describe(exc)
        except InvalidAnswer as exc:
            problem = str(exc)
        log.info("%s: answer %d of %d was invalid: %s", step, attempt, attempts, problem)
        messages += [{"role": "assistant", "content": raw[:_MAX_ECHO_CHARS]},
                     {"role": "user", "content": _REPAIR.format(problem=problem)}]
    raise ExtractionError(step, f"the model's answer was still invalid after {attempts} "
                                f"call(s): {problem}")
