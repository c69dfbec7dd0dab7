"""The multi-stage retriever: plan -> recall channels -> fusion -> neighbours -> packing."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import zip_longest

import numpy as np

from ..config import RetrievalConfig
from ..embed import Embedder
from ..model import Hit, MemoryItem, Scope
from ..store.base import Filters, Store
from ..text import estimate_tokens, words
from .features import FEATURES, feature_matrix, item_words
from .fusion import LearnedFusion, load_fusion, rrf, rrf_add
from .query import STOPWORDS, QueryPlan, analyse

__all__ = ["EDGE_WEIGHTS", "Candidates", "Retriever"]

#: How much each kind of edge says that two memories belong together.
EDGE_WEIGHTS = {"co_used": 1.0, "derived_from": 0.8, "mentions": 0.5, "same_topic": 0.3,
                "files": 0.6, "supersedes": 0.0}


@dataclass(frozen=True)
class Candidates:
    """What the channels found for one query: the pool (best by rank fusion first), its
    rows, each one's rank per channel, its fused score, and its features; each row's
    distinct words and token estimate, worked out once for the features and the packing."""

    plan: QueryPlan
    rowids: list[int]
    items: dict[int, MemoryItem]
    ranks: dict[int, dict[str, int]]
    fused: dict[int, float]
    reasons: dict[str, str]
    features: np.ndarray
    bags: dict[int, frozenset[str]] = field(default_factory=dict)
    tokens: dict[int, int] = field(default_factory=dict)
    #: each turn the neighbour channel found, and the strong hit it is next to
    seeds: dict[int, int] = field(default_factory=dict)


def _below_seeds(scores: dict[int, float], found: Candidates) -> None:
    """A turn that only sits next to a strong hit (no words of the query, not nearer in
    meaning than the hit) is the hit's context: it never ranks above it."""
    for rowid, seed in found.seeds.items():
        own = found.ranks.get(rowid, {})
        seed_vector = found.ranks.get(seed, {}).get("vector")
        if "fulltext" in own or seed not in scores or rowid not in scores:
            continue
        if "vector" in own and (seed_vector is None or own["vector"] < seed_vector):
            continue
        scores[rowid] = min(scores[rowid], scores[seed] - 1e-6)


def _near(a: frozenset[str], b: frozenset[str]) -> bool:
    """Near-duplicates: nine in ten of their words shared (Jaccard), both not tiny."""
    if len(a) < 4 or len(b) < 4:
        return a == b and bool(a)
    return len(a & b) >= 0.9 * len(a | b)


class Retriever:
    """Finds the memories that answer a query, each with how it was found.

    Channels: ``fulltext`` (BM25 over passages and, weighted less, the turns around
    them), ``vector`` (cosine over passages), ``time`` (inside a time span the query
    names), ``speaker`` (said by someone the query names), ``neighbor`` (the turns just
    before and after the strongest hits), ``graph`` (memories linked to the strongest
    hits by an edge or a shared entity), ``topic`` (the key memories of the mind-map
    topic the query's words point to), ``evidence`` (the turns that matching derived
    memories cite), ``aspects`` (full text per name, for a query naming several).
    The pool they find is ordered by the learned fusion (``fusion="learned"``, the
    shipped model over ranks, scores and cheap features) or by weighted rank fusion;
    then hits that only repeat one above are collapsed. No LLM anywhere on this path.
    """

    def __init__(self, store: Store, embedder: Embedder, config: RetrievalConfig) -> None:
        self.store = store
        self.embedder = embedder
        self.config = config
        # its thread starts with the first search
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="remem-query")
        self._fusion: LearnedFusion | None = None  # loaded with the first learned ranking

    def close(self) -> None:
        """Stop the query-embedding thread."""
        self._executor.shutdown(wait=True)

    def __call__(self, query: str, *, scope: Scope, filters: Filters, k: int,
                 budget_tokens: int | None, now: datetime) -> list[Hit]:
        found = self.candidates(query, scope=scope, filters=filters, k=k, now=now)
        cfg = self.config
        if cfg.fusion == "learned" and found.rowids:
            prob = self._model().score(found.features)
            scores = {r: float(p) for r, p in zip(found.rowids, prob, strict=True)}
        else:
            scores = found.fused
        _below_seeds(scores, found)
        ordered = sorted(found.rowids, key=lambda r: (-scores[r], r))
        items = found.items
        if cfg.diversity > 0:
            ordered = self._diversify(ordered, scores, items, cfg.diversity)
        hits: list[int] = []
        shown: tuple[list[frozenset[str]], list[frozenset[str]]] = ([], [])  # memories, turns
        used = 0
        bags, tokens = found.bags, found.tokens
        for rowid in ordered[: max(k * 3, k + 30)]:  # the best of the pool only
            if rowid not in items:
                continue
            item = items[rowid]
            bag = bags.get(rowid) or item_words(item)
            # a near-duplicate of a hit of its own sort above (turn of turn, memory of
            # memory) says nothing new; a memory and the turn it restates both stay
            if cfg.collapse and any(_near(bag, o) for o in shown[item.is_episode]):
                continue
            if budget_tokens is not None:
                cost = tokens.get(rowid) or estimate_tokens(item.text)
                if used + cost > budget_tokens:
                    continue
                used += cost
            hits.append(rowid)
            shown[item.is_episode].append(bag)
            if len(hits) >= k:
                break
        sources = self.store.sources(hits)
        return [
            Hit.model_construct(
                memory=items[r], score=scores[r], channels=found.ranks[r],
                reasons=[found.reasons[c] for c in found.ranks[r]], sources=sources[r],
                tokens=tokens.get(r) or estimate_tokens(items[r].text),
            )
            for r in hits
        ]

    def _model(self) -> LearnedFusion:
        if self._fusion is None:
            self._fusion = load_fusion(self.config.fusion_weights, FEATURES)
        return self._fusion

    def candidates(self, query: str, *, scope: Scope, filters: Filters, k: int,
                   now: datetime) -> Candidates:
        """Every channel's recall for ``query``, fused by rank, the best kept as the pool
        the ranking model orders (with its features)."""
        cfg = self.config
        plan = analyse(query, now)
        rankings: dict[str, list[int]] = {}
        reasons: dict[str, str] = {}
        # an embedder that lets go of the GIL (a remote model) embeds the query while the
        # full-text search runs, so a search costs the slower of the two, not their sum;
        # one that holds it would only be slowed down by the Python work beside it
        embedding: Future[np.ndarray] | None = None
        if cfg.weight_vector > 0:
            if getattr(self.embedder, "parallel_queries", True):
                embedding = self._executor.submit(self.embedder.embed_queries, [query])
            else:
                embedding = Future()
                embedding.set_result(self.embedder.embed_queries([query]))
        text_hits = self.store.fulltext(plan.terms, scope, filters, cfg.candidates,
                                        cfg.weight_context)
        bm25 = dict(text_hits)
        rankings["fulltext"] = [r for r, _ in text_hits]
        reasons["fulltext"] = "matched words: " + ", ".join(plan.terms[:8])
        aspects = self._aspects(plan, scope, filters)
        if aspects:
            rankings["aspects"] = aspects
            reasons["aspects"] = "matches one of the people or things the query names"
        size = max(k * 4, k + 20, cfg.pool)
        # rows the pool will likely hold, read while the model is still embedding the query
        early = self._early(rankings["fulltext"][:size]) \
            if embedding is not None and not embedding.done() else {}
        cosine: dict[int, float] = {}
        if embedding is not None:
            vec = embedding.result()[0]
            near = self.store.vector(vec, scope, filters, cfg.candidates)
            cosine = dict(near)
            rankings["vector"] = [r for r, _ in near]
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
                   "speaker": cfg.weight_speaker, "graph": cfg.weight_graph,
                   "evidence": cfg.weight_evidence, "aspects": cfg.weight_aspects}
        scores, ranks = rrf(rankings, weights, cfg.rrf_k)

        def add(channel: str, ids: list[int]) -> None:  # what rrf() over all channels gives
            rankings[channel] = ids
            rrf_add(scores, ranks, channel, ids, weights.get(channel, 1.0), cfg.rrf_k)

        names = plan.names
        if names and cfg.weight_speaker > 0 and scores:
            roles = self.store.roles(list(scores))
            add("speaker", [r for r in sorted(scores, key=scores.__getitem__, reverse=True)
                            if (roles.get(r) or "").lower() in names])
            reasons["speaker"] = "said by someone the query names"
        seed_of: dict[int, int] = {}
        if cfg.neighbor_seeds and cfg.weight_neighbor > 0 and scores:
            seeds = sorted(scores, key=scores.__getitem__, reverse=True)[: cfg.neighbor_seeds]
            pairs = self.store.neighbors(seeds, cfg.neighbor_window, scope, filters)
            order = {s: i for i, s in enumerate(seeds)}
            # a turn next to several seeds counts once, at its best seed's rank
            for n, seed in sorted(pairs, key=lambda p: order[p[1]]):
                seed_of.setdefault(n, seed)
            add("neighbor", list(seed_of))
            reasons["neighbor"] = "next to a strong hit in the same conversation"
        if cfg.weight_graph > 0 and scores:
            seeds = sorted(scores, key=scores.__getitem__, reverse=True)[: max(cfg.neighbor_seeds, 5)]
            linked = self._linked(seeds, scope, filters)
            if linked:
                add("graph", linked)
                reasons["graph"] = "linked to a strong hit (same entity, used together, derived)"
        pool = sorted(scores, key=lambda r: (-scores[r], r))[:size]
        items = self._rows(pool, early)
        if cfg.weight_evidence > 0 and items:
            cited = self._evidence(pool, items, scope, filters)
            if cited:
                add("evidence", cited)
                reasons["evidence"] = "cited by a matching memory"
                pool = list(dict.fromkeys(pool + [r for r in cited if r not in items]))
                items.update(self._rows([r for r in pool if r not in items], early))
        pool = [r for r in pool if r in items]
        bags = {r: early[r][1] if r in early else item_words(items[r]) for r in pool}
        tokens = {r: early[r][2] if r in early else estimate_tokens(items[r].text) for r in pool}
        features = feature_matrix(plan, pool, items, ranks, scores, bm25, cosine,
                                  bags=bags, tokens=tokens)
        return Candidates(plan, pool, items, {r: ranks[r] for r in pool},
                          {r: scores[r] for r in pool}, reasons, features, bags, tokens,
                          {r: s for r, s in seed_of.items() if r in items and s in items})

    def _early(self, rowids: list[int]) -> dict[int, tuple[MemoryItem, frozenset[str], int]]:
        """Rows with their words and token estimates, read ahead of need."""
        return {r: (item, item_words(item), estimate_tokens(item.text))
                for r, item in self.store.get_rows(rowids).items()}

    def _rows(self, rowids: list[int],
              early: dict[int, tuple[MemoryItem, frozenset[str], int]]) -> dict[int, MemoryItem]:
        """The rows of ``rowids`` that exist, those read ahead taken from ``early``."""
        out = {r: early[r][0] for r in rowids if r in early}
        out.update(self.store.get_rows([r for r in rowids if r not in early]))
        return out

    def _aspects(self, plan: QueryPlan, scope: Scope, filters: Filters) -> list[int]:
        """For a query naming several people or things, the full-text hits of each name
        with the rest of the query, taken in turn: a part of a multi-hop question that
        the whole query's words would drown."""
        cfg = self.config
        if cfg.weight_aspects <= 0 or len(plan.entities) < 2:
            return []
        rest = [t for t in plan.terms if t not in plan.names]
        lists = []
        for entity in plan.entities[:3]:
            own = [w for w in words(entity) if w not in STOPWORDS and w != "s"]
            if own:
                lists.append([r for r, _ in self.store.fulltext(
                    own + rest, scope, filters, cfg.candidates // 2, cfg.weight_context)])
        out: dict[int, None] = {}
        for group in zip_longest(*lists):
            out.update((r, None) for r in group if r is not None)
        return list(out)

    def _evidence(self, pool: list[int], items: dict[int, MemoryItem], scope: Scope,
                  filters: Filters) -> list[int]:
        """The turns cited by the derived memories among the best of the pool, in the
        order of the memories that cite them."""
        derived = [r for r in pool[:30] if r in items and not items[r].is_episode]
        if not derived:
            return []
        cites = self.store.sources(derived)
        ids = list(dict.fromkeys(s.id for r in derived for s in cites.get(r, [])))
        if not ids:
            return []
        rowid_of = self.store.rowids(ids)
        ok = self.store.accept(list(rowid_of.values()), scope, filters)
        return [rowid_of[i] for i in ids if i in rowid_of and rowid_of[i] in ok]

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
