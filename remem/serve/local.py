"""A local model as the chat proxy's upstream: ``remem serve --local-model DIR``.

:class:`LocalModelTransport` answers the proxy's ``POST .../chat/completions`` in this
process (an ``httpx`` transport, so the proxy's memory block, injection log and
remembering work as with a remote upstream). The model is a
:class:`~remem.tiers.lora.LoraMemory` (a local folder, with an adapter loaded when one
is given), and its answers reuse activation memory: the prompt up to the end of the core
memory block (the system message before the sections that change with each request) is
a KV cache kept on disk and computed once per block, so a request prefills only the rest.

Needs ``pip install "remem[parametric,server]"``. Answers are greedy; a streamed request
gets the whole answer as one chunk.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

__all__ = ["LocalModelTransport", "render_chat", "split_at_core"]

#: Where the part of a memory block that changes with each request starts.
_LATER_SECTIONS = ("\n\n## Relevant to this session\n", "\n\n## Found for the request\n")


def render_chat(messages: list[dict[str, Any]], tokenizer: Any) -> str:
    """The prompt of a chat: the tokenizer's chat template when it has one, else plain
    ``role: text`` lines ending with ``assistant:``."""
    flat = [{"role": str(m.get("role", "user")), "content": _text(m.get("content"))} for m in messages]
    if getattr(tokenizer, "chat_template", None):
        return str(tokenizer.apply_chat_template(flat, add_generation_prompt=True, tokenize=False))
    return "".join(f"{m['role']}: {m['content']}\n" for m in flat) + "assistant:"


def split_at_core(prompt: str, system: str) -> tuple[str, str]:
    """``prompt`` cut where the stable part ends: after the system message's text up to
    its first per-request section (whole when it has none); ("", prompt) without one."""
    if not system or system not in prompt:
        return "", prompt
    ends = [i for i in (system.find(title) for title in _LATER_SECTIONS) if i >= 0]
    stable = system[: min(ends)] if ends else system
    cut = prompt.index(system) + len(stable)
    return prompt[:cut], prompt[cut:]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict)).strip()
    return ""


class LocalModelTransport(httpx.AsyncBaseTransport):
    """An httpx transport that answers chat completions with a local model.

    ``lora`` is a :class:`~remem.tiers.lora.LoraMemory` (its loaded adapter, if any, is
    used); the core block's KV caches go to ``cache_dir``. One request runs at a time.
    """

    def __init__(self, lora: Any, cache_dir: str | Path, *, max_tokens: int = 256) -> None:
        self.lora = lora
        self.cache_dir = Path(cache_dir)
        self.max_tokens = max_tokens
        self._activation: Any = None
        self._built_for: tuple[int, str | None] | None = None
        self._lock = threading.Lock()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method != "POST" or not request.url.path.endswith("/chat/completions"):
            return _error(404, f"the local model answers POST .../chat/completions only, "
                               f"not {request.url.path}")
        try:
            body = json.loads(await request.aread())
            messages = list(body["messages"])
        except (ValueError, KeyError, TypeError):
            return _error(400, "the body is not a chat completion request")
        limit = body.get("max_completion_tokens") or body.get("max_tokens") or self.max_tokens
        answer, prompt_tokens, completion_tokens = await asyncio.to_thread(self._answer, messages, int(limit))
        model = str(body.get("model") or "local")
        made, ident = int(time.time()), f"chatcmpl-{uuid.uuid4().hex}"
        if body.get("stream"):
            chunk = {"id": ident, "object": "chat.completion.chunk", "created": made, "model": model,
                     "choices": [{"index": 0, "delta": {"role": "assistant", "content": answer},
                                  "finish_reason": "stop"}]}
            text = f"data: {json.dumps(chunk, ensure_ascii=False)}\n\ndata: [DONE]\n\n"
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=text.encode())
        reply = {"id": ident, "object": "chat.completion", "created": made, "model": model,
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                              "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                           "total_tokens": prompt_tokens + completion_tokens}}
        return httpx.Response(200, json=reply)

    def _answer(self, messages: list[dict[str, Any]], limit: int) -> tuple[str, int, int]:
        """The model's answer, with the stable start of the prompt from its KV cache."""
        with self._lock:
            tokenizer = self.lora.tokenizer
            prompt = render_chat(messages, tokenizer)
            system = next((_text(m.get("content")) for m in messages
                           if m.get("role") in ("system", "developer")), "")
            stable, rest = split_at_core(prompt, system)
            if not stable or not rest:
                stable, rest = prompt[:1], prompt[1:]  # nothing stable: a one-character block
            am = self._activation_memory()
            am.prepare(stable)
            out = am.generate(rest, max_new_tokens=max(1, limit))
            return out.text.strip(), out.prompt_tokens, len(out.token_ids)

    def _activation_memory(self) -> Any:
        # peft puts an adapter's layers into the same model object, so the adapter is compared too
        loaded = self.lora.info()
        now = (id(self.lora.model), loaded.path if loaded is not None else None)
        if self._activation is None or self._built_for != now:
            self._activation = self.lora.activation(self.cache_dir, name="proxy")
            self._built_for = now
        return self._activation


def _error(status: int, message: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"message": message, "type": "invalid_request_error"}})
