"""``remem bench ingest`` on a few turns, with the real bundled embedder."""

from __future__ import annotations

from remem.bench.ingest import run


def test_ingest_bench_reports_what_was_found_by_words_at_once_and_by_meaning_later() -> None:
    result = run(n=30, session=10, batch=1, probe_every=5, extractor="off", peers=("nosuch",),
                 progress=False)
    remem = result["remem"]
    assert remem["turns"] == 30 and remem["probes"] == 6
    assert remem["searchable_at_once"] == 1.0  # every probed turn, by its words, at ack
    assert remem["found_by_meaning"] == 1.0  # and by meaning once its vector is stored
    assert remem["until_found_by_meaning_s"]["p50"] is not None
    assert remem["ack_per_s"] > 0 and remem["embed_backlog_at_last_ack"] >= 0
    # with the memory agent off nothing waits for it, and the rest of the work ends
    assert remem["agent_backlog_at_last_ack"] == 0 and remem["until_agent_done_s"] is not None
    assert result["nosuch"] == {"skipped": "no such peer"}
