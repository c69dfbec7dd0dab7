"""Optional answer generation and judging through an OpenAI-compatible endpoint.

A model answers each question from the context a system retrieved; a judge model grades
each answer against the gold one, ``judge_runs`` times (mean and spread are reported).
The strict judge, the default, counts a vague or partly wrong answer as WRONG; the
lenient one accepts an answer that carries the gold answer's key point. Token F1 is
computed as in the LoCoMo paper. Needs ``httpx`` (the ``openai`` or ``test`` extra).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import RememError

__all__ = ["ChatClient", "LLMError", "LLMSettings", "answer_messages", "judge_messages",
           "parse_verdict", "settings_from_env"]

ANSWER_PROMPT = (
    "You answer questions about past conversations, using only the memories below. "
    "Answer with a short phrase. If the memories do not hold the answer, reply exactly: "
    "not mentioned."
)
JUDGE_PROMPTS = {
    "strict": (
        "You grade an answer against a gold answer. Reply with one word: CORRECT or WRONG. "
        "CORRECT only if the answer states the same facts as the gold answer; wording may "
        "differ, and a date may be written another way if it names the same day or period. "
        "An answer that is vague, incomplete, partly wrong, hedges between options, adds a "
        "wrong detail, or says the information is missing when the gold answer gives it, "
        "is WRONG."
    ),
    "lenient": (
        "You grade an answer against a gold answer. Reply with one word: CORRECT or WRONG. "
        "CORRECT if the answer carries the key point of the gold answer, even if it is "
        "longer, less precise, or phrased differently; WRONG otherwise."
    ),
}
_VERDICT = re.compile(r"\b(CORRECT|WRONG|INCORRECT)\b")


class LLMError(RememError):
    """The endpoint could not be reached or gave no usable reply."""


@dataclass(frozen=True)
class LLMSettings:
    """Where the model is and how it is used (``api_key`` is never written to results)."""

    base_url: str
    model: str
    api_key: str | None = None
    judge: str = "strict"
    judge_runs: int = 3
    judge_temperature: float = 0.7
    timeout_s: float = 120.0

    def __post_init__(self) -> None:
        if self.judge not in JUDGE_PROMPTS:
            raise ValueError(f"judge must be one of {', '.join(JUDGE_PROMPTS)}, not {self.judge!r}")
        if self.judge_runs < 1:
            raise ValueError("judge_runs must be at least 1")

    def public(self) -> dict[str, Any]:
        """The settings as recorded in results: everything but the key."""
        return {"base_url": self.base_url, "model": self.model, "judge": self.judge,
                "judge_runs": self.judge_runs, "judge_temperature": self.judge_temperature}


def settings_from_env(environ: Mapping[str, str], **given: Any) -> LLMSettings | None:
    """Settings from explicit values, else ``REMEM_BENCH_LLM_BASE_URL``, ``..._MODEL`` and
    ``..._API_KEY`` (or ``OPENAI_API_KEY``); None when no endpoint is configured."""
    base_url = given.pop("base_url", None) or environ.get("REMEM_BENCH_LLM_BASE_URL")
    model = given.pop("model", None) or environ.get("REMEM_BENCH_LLM_MODEL")
    api_key = (given.pop("api_key", None) or environ.get("REMEM_BENCH_LLM_API_KEY")
               or environ.get("OPENAI_API_KEY"))
    if not base_url:
        return None
    if not model:
        raise ValueError("an LLM endpoint needs a model name (--llm-model)")
    return LLMSettings(base_url=base_url.rstrip("/"), model=model, api_key=api_key, **given)


class ChatClient:
    """A minimal chat-completions client (``POST {base_url}/chat/completions``)."""

    def __init__(self, settings: LLMSettings, *, transport: Any = None) -> None:
        try:
            import httpx
        except ImportError as exc:
            raise LLMError("LLM answers need httpx: pip install 'remem[openai]'") from exc
        headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
        self.settings = settings
        self._httpx = httpx
        self._client = httpx.Client(base_url=settings.base_url, headers=headers,
                                    timeout=settings.timeout_s, transport=transport)
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def complete(self, messages: Sequence[dict[str, str]], *, temperature: float = 0.0,
                 max_tokens: int = 200) -> str:
        """The model's reply to ``messages``; token usage is added up when reported."""
        body = {"model": self.settings.model, "messages": list(messages),
                "temperature": temperature, "max_tokens": max_tokens}
        try:
            response = self._client.post("/chat/completions", json=body)
            response.raise_for_status()
            data = response.json()
            text = data["choices"][0]["message"]["content"] or ""
        except self._httpx.HTTPError as exc:
            raise LLMError(f"the LLM endpoint failed: {exc}") from exc
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise LLMError(f"the LLM endpoint sent no chat completion: {exc!r}") from exc
        usage = data.get("usage") or {}
        self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        self.completion_tokens += int(usage.get("completion_tokens") or 0)
        return str(text).strip()

    def close(self) -> None:
        self._client.close()


def answer_messages(question: str, asked_at: datetime,
                    memories: Sequence[tuple[datetime, str, str]]) -> list[dict[str, str]]:
    """The answer prompt: memories (time, speaker, text) oldest first, then the question."""
    lines = [f"[{when:%Y-%m-%d %H:%M}] {speaker}: {text}"
             for when, speaker, text in sorted(memories, key=lambda m: m[0])]
    body = ("Memories:\n" + ("\n".join(lines) or "(none)")
            + f"\n\nToday is {asked_at:%Y-%m-%d %H:%M}.\nQuestion: {question}\nAnswer:")
    return [{"role": "system", "content": ANSWER_PROMPT}, {"role": "user", "content": body}]


def judge_messages(question: str, gold: str, answer: str, judge: str) -> list[dict[str, str]]:
    """The judge prompt for one answer."""
    body = f"Question: {question}\nGold answer: {gold}\nAnswer to grade: {answer}\nVerdict:"
    return [{"role": "system", "content": JUDGE_PROMPTS[judge]}, {"role": "user", "content": body}]


def parse_verdict(reply: str) -> bool | None:
    """True for CORRECT, False for WRONG (or INCORRECT), None when neither word is there."""
    found = _VERDICT.search(reply.upper())
    if found is None:
        return None
    return found.group(1) == "CORRECT"
