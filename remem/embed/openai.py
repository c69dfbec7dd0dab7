"""Any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, vLLM, Ollama, llama.cpp)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import ConfigError, EmbeddingError

__all__ = ["OpenAIEmbedder"]


class OpenAIEmbedder:
    """Embeds through ``POST {base_url}/embeddings``; the dimension is learned on first use."""

    def __init__(self, model: str, *, base_url: str | None, api_key: str | None,
                 timeout_s: float = 30.0) -> None:
        try:
            import httpx
        except ImportError as exc:
            raise ConfigError(
                "the openai embedder needs httpx: pip install 'remem[openai]'") from exc
        if not base_url:
            raise ConfigError("the openai embedder needs openai_base_url (REMEM_OPENAI_BASE_URL)")
        self.name = f"openai:{model}"
        self._model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(base_url=base_url.rstrip("/"), headers=headers,
                                    timeout=timeout_s)
        self.dim = int(self._embed(["dimension probe"]).shape[1])

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        import httpx

        try:
            response = self._client.post("/embeddings", json={"model": self._model, "input": list(texts)})
            response.raise_for_status()
            data = sorted(response.json()["data"], key=lambda d: d["index"])
        except (httpx.HTTPError, KeyError, ValueError) as exc:
            raise EmbeddingError(f"embedding endpoint failed: {exc}") from exc
        out = np.asarray([d["embedding"] for d in data], dtype=np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts) if texts else np.empty((0, self.dim), np.float32)

    embed_passages = embed_queries
