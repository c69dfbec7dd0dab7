"""The planner a configuration asks for: rules, or an LLM when one is configured."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from ..config import AgentConfig
from ..errors import ConfigError
from .heads import Reader
from .plan import Plan, RulesPlanner

__all__ = ["Planner", "create_planner"]


class Planner(Protocol):
    """Turns a request into a :class:`~remem.extract.plan.Plan`."""

    name: str

    def plan(self, text: str, now: datetime) -> Plan: ...


def create_planner(agent: AgentConfig, reader: Reader) -> Planner:
    """``agent.planner``: ``"rules"`` (no model), ``"llm"`` (the chat endpoint at
    ``agent.llm_base_url``) or ``"auto"``: the LLM when an endpoint is configured, else
    the rules.

    Raises :class:`~remem.errors.ConfigError` for ``"llm"`` without ``llm_base_url``.
    """
    choice = agent.planner
    if choice == "auto":
        choice = "llm" if agent.llm_base_url else "rules"
    if choice == "rules":
        return RulesPlanner(reader)
    if not agent.llm_base_url:
        raise ConfigError("planner 'llm' needs llm_base_url, the OpenAI-compatible endpoint of "
                          "the model (REMEM_LLM_BASE_URL), or use planner 'rules'")
    from ..llm import ChatClient
    from .plan_llm import LLMPlanner

    client = ChatClient(agent.llm_base_url, agent.llm_model, api_key=agent.llm_api_key,
                        timeout_s=agent.llm_timeout_s)
    return LLMPlanner(client, attempts=agent.llm_attempts)
