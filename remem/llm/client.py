"""A synchronous client for any OpenAI-compatible chat-completions endpoint.

Works with vLLM, Ollama, llama.cpp server, DashScope, DeepSeek and OpenAI: one plain
``POST {base_url}/chat/completions`` per call, nothing vendor-specific.

    >>> client = ChatClient("http://localhost:11434/v1", "qwen2.5:7b")
    >>> client.complete([{"role": "user", "content": 'Answer {"ok": true} as JSON.'}])
    '{"ok": true}'
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ..errors import ConfigError, LLMError

__all__ = ["ChatClient", "ChatModel", "Message"]

#: One chat message: ``{"role": "system" | "user" | "assistant", "content": "..."}``.
Message = Mapping[str, str]

_EXCERPT = 300


class ChatModel(Protocol):
    """Anything that completes a chat: :class:`ChatClient`, or a stand-in."""

    def complete(self, messages: Sequence[Message], *, json_mode: bool = True,
                 temperature: float = 0) -> str: ...


class ChatClient:
    """A chat model behind an OpenAI-compatible endpoint.

    Parameters:
        base_url: the API root, e.g. ``http://localhost:8000/v1`` (vLLM),
            ``http://localhost:11434/v1`` (Ollama), ``https://api.deepseek.com/v1``.
        model: the model name the endpoint knows.
        api_key: sent as ``Authorization: Bearer ...`` when given; never logged nor put in
            an error message.
        timeout_s: the longest wait for connecting and for each read, in seconds.

    Raises :class:`~remem.errors.ConfigError` when httpx is missing or ``base_url`` is
    empty. Use it as a context manager, or call :meth:`close`, to release its connections.
    """

    def __init__(self, base_url: str, model: str, api_key: str | None = None,
                 timeout_s: float = 30) -> None:
        try:
            import httpx
        except ImportError as exc:
            raise ConfigError('the LLM client needs httpx: pip install "remem[openai]"') from exc
        if not base_url or not base_url.strip():
            raise ConfigError("the LLM client needs a base_url, e.g. http://localhost:11434/v1")
        if not model:
            raise ConfigError("the LLM client needs a model name")
        self.base_url = base_url.strip().rstrip("/")
        self.model = model
        self.timeout_s = timeout_s
        self._api_key = api_key or None
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(headers=headers, timeout=httpx.Timeout(timeout_s))
        # Learned from a 400: the server does not accept response_format, so stop sending it.
        self._json_mode_supported = True

    def __repr__(self) -> str:
        return f"ChatClient(base_url={self.base_url!r}, model={self.model!r})"

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the client's connections."""
        self._http.close()

    def complete(self, messages: Sequence[Message], *, json_mode: bool = True,
                 temperature: float = 0) -> str:
        """The model's reply (the first choice's message content) to ``messages``.

        With ``json_mode`` the request asks for a JSON object (``response_format``); a
        server that rejects that field with 400 is asked again without it, and is not sent
        it again. The reply is returned as the model wrote it: checking it is the caller's
        job.

        Raises :class:`~remem.errors.LLMError` on a timeout, a connection failure, a
        non-2xx answer (with the status and a short excerpt of the body) or a body that is
        not a chat completion.
        """
        body: dict[str, Any] = {"model": self.model, "temperature": temperature,
                                "messages": [dict(m) for m in messages]}
        if json_mode and self._json_mode_supported:
            first = self._post({**body, "response_format": {"type": "json_object"}})
            if first.status_code != 400:
                return self._content(first)
            retry = self._post(body)
            if retry.is_success:
                self._json_mode_supported = False
            return self._content(retry)
        return self._content(self._post(body))

    def _post(self, body: dict[str, Any]) -> Any:
        import httpx

        url = f"{self.base_url}/chat/completions"
        try:
            return self._http.post(url, json=body)
        except httpx.TimeoutException as exc:
            raise LLMError(f"the chat endpoint {url} did not answer within {self.timeout_s:g}s "
                           f"({type(exc).__name__}); is the model loaded, or is llm_timeout_s "
                           "too short?") from exc
        except httpx.HTTPError as exc:
            raise LLMError(f"could not reach the chat endpoint {url}: "
                           f"{self._redact(str(exc)) or type(exc).__name__}") from exc

    def _content(self, response: Any) -> str:
        url = f"{self.base_url}/chat/completions"
        if not response.is_success:
            raise LLMError(f"the chat endpoint {url} answered HTTP {response.status_code}: "
                           f"{self._excerpt(response.text)}", status=response.status_code)
        try:
            data = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise LLMError(f"the chat endpoint {url} answered something that is not JSON: "
                           f"{self._excerpt(response.text)}", status=response.status_code) from None
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise LLMError(f"the chat endpoint {url} answered JSON without "
                           f"choices[0].message.content: {self._excerpt(response.text)}",
                           status=response.status_code) from None
        if not isinstance(content, str):
            reason = data["choices"][0].get("finish_reason")
            raise LLMError(f"the chat endpoint {url} answered no text (content is "
                           f"{type(content).__name__}, finish_reason {reason!r})",
                           status=response.status_code)
        return content

    def _excerpt(self, text: str) -> str:
        text = " ".join(self._redact(text).split())
        if not text:
            return "(empty body)"
        return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "..."

    def _redact(self, text: str) -> str:
        # some servers echo the key they refused; it must not reach logs through our errors
        return text.replace(self._api_key, "***") if self._api_key else text
