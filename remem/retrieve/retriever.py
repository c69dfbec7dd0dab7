"""The multi-stage retriever: plan -> recall channels -> fusion -> neighbours -> packing."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

from ..config import RetrievalConfig
from ..embed import Embedder
from ..model import Hit, MemoryItem, Scope
from ..store.base import Filters, Store
from ..text import estimate_tokens
from .fusion import rrf
from .query import analyse

__all__ = ["EDGE_WEIGHTS", "Retriever"]

#: How much each kind of edge says that two memories belong together.
EDGE_WEIGHTS = {"co_used": 1.0, "derived_from": 0.8, "mentions": 0.5, "same_topic": 0.3,
                "files": 0.6, "supersedes": 0.0}


class Retriever:
    """Finds the memories that answer a query, each with how it was found.

    Channels: ``fulltext`` (BM25 over passages and, weighted less, the turns around
    them), ``vector`` (cosine over passages), ``time`` (inside a time span the query
    names), ``speaker`` (said by someone the query names), ``neighbor`` (the turns just
    before and after the strongest hits), ``graph`` (memories linked to the strongest
    hits by an edge or a shared entity), ``topic`` (the key memories of the mind-map
    topic the query's words point to). No LLM anywhere on this path.
    """

    def __init__(self, store: Store, embedder: Embedder, config: RetrievalConfig) -> None:
        self.store = store
        self.embedder = embedder
        self.config = config
        # its thread starts with the first search
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="remem-query")

    def close(self) -> None:
        """Stop the query-embedding thread."""
        self._executor.shutdown(wait=True)

    def __call__(self, query: str, *, scope: Scope, filters: Filters, k: int,
                 budget_tokens: int | None, now: datetime) -> list[Hit]:
        cfg = self.config
        plan = analyse(query, now)
        rankings: dict[str, list[int]] = {}
        reasons: dict[str, str] = {}
        # the model embeds the query while SQLite runs the full-text search (both let go
        # of the GIL), so a search costs the slower of the two, not their sum
        embedding = self._executor.submit(self.embedder.embed_queries, [query]) \
            if cfg.weight_vector > 0 else None
        rankings["fulltext"] = [r for r, _ in self.store.fulltext(
            plan.terms, scope, filters, cfg.candidates, cfg.weight_context)]
        reasons["fulltext"] = "matched words: " + ", ".join(plan.terms[:8])
        if embedding is not None:
            vec = embedding.result()[0]
            rankings["vector"] = [r for r, _ in self.store.vector(vec, scope, filters, cfg.candidates)]
            reasons["vector"] = "close in meaning"
        if plan.span is not None and cfg.weight_time > 0:
            start, end = plan.span
            window = self.store.time_window(start, end, scope, filters, cfg.candidates)
            rankings["time"] = [r for r, _ in window]
            reasons["time"] = ("inside the time span the query names "
                              f"({datetime.fromtimestamp(start, timezone.utc).date()})")
        if cfg.weight_topic > 0:
            topic = self.store.topic_members_for(plan.terms, scope, filters, limit=10)
            if topic:
                rankings["topic"] = topic
                reasons["topic"] = "a key memory of the topic the query is about"
        weights = {"fulltext": cfg.weight_fulltext, "vector": cfg.weight_vector, "topic": cfg.weight_topic,
                   "time": cfg.weight_time, "neighbor": cfg.weight_neighbor,
                   "speaker": cfg.weight_speaker}
        scores, ranks = rrf(rankings, weights, cfg.rrf_k)
        if plan.names and cfg.weight_speaker > 0 and scores:
            roles = self.store.roles(list(scores))
            rankings["speaker"] = [r for r in sorted(scores, key=scores.__getitem__, reverse=True)
                                   if (roles.get(r) or "").lower() in plan.names]
            reasons["speaker"] = "said by someone the query names"
            scores, ranks = rrf(rankings, weights, cfg.rrf_k)
        if cfg.neighbor_seeds and cfg.weight_neighbor > 0 and scores:
            seeds = sorted(scores, key=scores.__getitem__, reverse=True)[: cfg.neighbor_seeds]
            pairs = self.store.neighbors(seeds, cfg.neighbor_window, scope, filters)
            order = {s: i for i, s in enumerate(seeds)}
            # a turn next to several seeds counts once, at its best seed's rank
            rankings["neighbor"] = list(dict.fromkeys(
                n for n, _ in sorted(pairs, key=lambda p: order[p[1]])))
            reasons["neighbor"] = "next to a strong hit in the same conversation"
            scores, ranks = rrf(rankings, weights, cfg.rrf_k)
        if cfg.weight_graph > 0 and scores:
            seeds = sorted(scores, key=scores.__getitem__, reverse=True)[: max(cfg.neighbor_seeds, 5)]
            linked = self._linked(seeds, scope, filters)
            if linked:
                rankings["graph"] = linked
                reasons["graph"] = "linked to a strong hit (same entity, used together, derived)"
                weights["graph"] = cfg.weight_graph
                scores, ranks = rrf(rankings, weights, cfg.rrf_k)
        ordered = sorted(scores, key=lambda r: (-scores[r], r))[: max(k * 4, k + 20)]
        items = self.store.get_rows(ordered)
        if cfg.diversity > 0:
            ordered = self._diversify(ordered, scores, items, cfg.diversity)
        hits: list[int] = []
        used = 0
        for rowid in ordered:
            if rowid not in items:
                continue
            if budget_tokens is not None:
                cost = estimate_tokens(items[rowid].text)
                if used + cost > budget_tokens:
                    continue
                used += cost
            hits.append(rowid)
            if len(hits) >= k:
                break
        sources = self.store.sources(hits)
        return [
            Hit.model_construct(
                memory=items[r], score=scores[r], channels=ranks[r],
                reasons=[reasons[c] for c in ranks[r]], sources=sources[r],
                tokens=estimate_tokens(items[r].text),
            )
            for r in hits
        ]

    def _linked(self, seeds: list[int], scope: Scope, filters: Filters) -> list[int]:
        """Memories one or two edges away from the seeds, best first: the edge's type
        weight times its strength, discounted by the seed's rank; a second hop counts half."""
        score = self._hop(seeds, 1.0)
        second = [r for r in sorted(score, key=lambda r: -score[r])[:10] if r not in seeds]
        for other, w in self._hop(second, 0.5).items():
            score[other] = score.get(other, 0.0) + w
        ok = self.store.accept(list(score), scope, filters)
        return sorted((r for r in score if r in ok), key=lambda r: (-score[r], r))

    def _hop(self, seeds: list[int], factor: float) -> dict[int, float]:
        score: dict[int, float] = {}
        rank = {s: i for i, s in enumerate(seeds)}
        for seed, other, kind, weight in self.store.edges_of(seeds):
            w = factor * EDGE_WEIGHTS.get(kind, 0.0) * min(weight, 3.0) / (1 + rank[seed])
            if w > 0:  # a linked memory that is a hit already is lifted too
                score[other] = score.get(other, 0.0) + w
        for other, seed in self.store.entity_neighbors(seeds):
            score[other] = score.get(other, 0.0) + factor * EDGE_WEIGHTS["mentions"] / (1 + rank[seed])
        return score

    @staticmethod
    def _diversify(ordered: list[int], scores: dict[int, float], items: dict[int, MemoryItem],
                   diversity: float) -> list[int]:
        """Re-order so that each further hit from an already represented session counts
        ``(1 - diversity)`` times less: answers spread over conversations surface."""
        left = [r for r in ordered if r in items]
        taken: dict[str | None, int] = {}
        out: list[int] = []
        while left:
            best = max(left, key=lambda r: scores[r] * (1 - diversity) ** taken.get(items[r].session_id, 0))
            left.remove(best)
            out.append(best)
            taken[items[best].session_id] = taken.get(items[best].session_id, 0) + 1
        return out
