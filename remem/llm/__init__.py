"""A port to chat models: any OpenAI-compatible chat-completions endpoint.

httpx (``pip install "remem[openai]"``) is imported only when a :class:`ChatClient` is made,
so importing this package costs nothing.
"""

from __future__ import annotations

from .client import ChatClient, ChatModel, Message

__all__ = ["ChatClient", "ChatModel", "Message"]
