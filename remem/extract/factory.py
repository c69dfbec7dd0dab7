"""The extractor a configuration asks for."""

from __future__ import annotations

from ..config import AgentConfig
from ..errors import ConfigError
from .base import Extractor
from .llm import LLMExtractor
from .rules import RulesExtractor

__all__ = ["create_extractor"]


def create_extractor(agent: AgentConfig) -> Extractor | None:
    """The extractor ``agent.extractor`` names, or None for ``"off"`` (episodes only).

    ``"rules"`` gives :class:`RulesExtractor`; ``"llm"`` gives :class:`LLMExtractor` over
    the chat endpoint at ``agent.llm_base_url`` (``llm_model``, ``llm_api_key``,
    ``llm_timeout_s``), with ``llm_attempts`` calls allowed per step.

    Raises :class:`~remem.errors.ConfigError` when ``"llm"`` is chosen without
    ``llm_base_url``, or when httpx is not installed (``pip install "remem[openai]"``).
    """
    if agent.extractor == "off":
        return None
    if agent.extractor == "rules":
        return RulesExtractor()
    if agent.extractor == "llm":
        if not agent.llm_base_url:
            raise ConfigError(
                "extractor 'llm' needs llm_base_url, the OpenAI-compatible endpoint of the model "
                "(e.g. http://localhost:11434/v1; REMEM_LLM_BASE_URL), or use extractor 'rules'")
        from ..llm import ChatClient

        client = ChatClient(agent.llm_base_url, agent.llm_model, api_key=agent.llm_api_key,
                            timeout_s=agent.llm_timeout_s)
        return LLMExtractor(client, attempts=agent.llm_attempts)
    raise ConfigError(f"unknown extractor {agent.extractor!r}; use 'rules', 'llm' or 'off'")
