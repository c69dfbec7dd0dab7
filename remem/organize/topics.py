"""The memory mind map: a topic tree per scope, built as memories arrive.

Each memory joins the leaf topic whose keywords it shares most (entities and content
words); when none shares enough, it starts a new topic. A topic that grows past
``max_size`` is split in two by its most telling keyword, so the tree rebalances as it
grows. Labels are the topics' most frequent keywords (rules mode has no model to name
them).
"""

from __future__ import annotations

from collections import Counter

from ..model import MemoryItem, Scope, TopicNode
from ..store.base import Store
from ..store.rows import TopicRow
from ..text import words
from .similarity import content_words

__all__ = ["MindMap", "keywords"]

# the extractors' own wording ("User prefers ...", "Files for ...") says nothing of a topic
_GENERIC = frozenset(words(
    "user users prefers prefer likes like loves hates wants want need needs always never use uses "
    "using used project environment files file for run then outcome steps skill to instead "
    "available here not is are has have success 用户 结果"))
_JOIN_AT = 0.2  # share of a memory's keywords a topic must hold for it to join


def keywords(item: MemoryItem, limit: int = 6) -> list[str]:
    """The words that say what a memory is about: its entities first, then content words."""
    ents = [str(e).lower() for e in item.metadata.get("entities", [])]
    body = [w for w in content_words(item.text) if w not in _GENERIC and (len(w) > 2 or not w.isascii())
            and not w.isdigit()]
    return list(dict.fromkeys([*ents, *sorted(body, key=lambda w: item.text.lower().find(w))]))[:limit]


def _label(counts: dict[str, int]) -> str:
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    return " · ".join(w for w, _ in top) or "misc"


class MindMap:
    """Places memories in the topic tree of their scope and reads the tree back."""

    def __init__(self, store: Store, max_size: int = 24) -> None:
        self.store = store
        self.max_size = max_size

    @staticmethod
    def scope_of(item: MemoryItem) -> Scope:
        return Scope(org_id=item.org_id, user_id=item.user_id, agent_id=item.agent_id,
                     project=item.project)

    def place(self, item: MemoryItem) -> int:
        """Put a memory in its best topic (making or splitting topics); return the topic."""
        scope = self.scope_of(item)
        topics = self.store.topics(scope)
        parents = {t.parent for t in topics}
        leaves = [t for t in topics if t.rowid not in parents]
        kws = keywords(item)
        best, best_score = None, 0.0
        for t in leaves:
            score = sum(1 for w in kws if w in t.keywords) / max(len(kws), 1)
            if score > best_score:
                best, best_score = t, score
        if best is None or best_score < _JOIN_AT:
            counts = dict(Counter(kws))
            rowid = self.store.save_topic(scope, None, parent=None, label=_label(counts),
                                          keywords=counts, size=1)
            self.store.place([item.id], rowid)
            return rowid
        counts = Counter(best.keywords)
        counts.update(kws)
        self.store.save_topic(scope, best, parent=best.parent, label=_label(dict(counts)),
                              keywords=dict(counts), size=best.size + 1)
        self.store.place([item.id], best.rowid)
        self._grow_ancestors(scope, topics, best.parent)
        if best.size + 1 > self.max_size:
            self._split(scope, best.rowid)
        return best.rowid

    def _grow_ancestors(self, scope: Scope, topics: list[TopicRow], parent: int | None) -> None:
        by_id = {t.rowid: t for t in topics}
        while parent is not None and parent in by_id:
            t = by_id[parent]
            self.store.save_topic(scope, t, parent=t.parent, label=t.label, keywords=t.keywords,
                                  size=t.size + 1)
            parent = t.parent

    def _split(self, scope: Scope, rowid: int) -> None:
        """Split a large leaf in two by the keyword that best halves its memories."""
        members = self.store.topic_members([rowid])[rowid]
        if len(members) < 4:
            return
        kws = {m.id: set(keywords(m)) for m in members}
        freq = Counter(w for ws in kws.values() for w in ws)
        # the keyword held by closest to half of the members divides them best
        pivot = min((w for w, n in freq.items() if 0 < n < len(members)),
                    key=lambda w: (abs(freq[w] - len(members) / 2), w), default=None)
        if pivot is None:
            return
        groups: dict[bool, list[MemoryItem]] = {True: [], False: []}
        for m in members:
            groups[pivot in kws[m.id]].append(m)
        for side, group in groups.items():
            counts = Counter(w for m in group for w in kws[m.id])
            label = pivot if side else _label({w: n for w, n in counts.items() if w != pivot})
            child = self.store.save_topic(scope, None, parent=rowid, label=label,
                                          keywords=dict(counts), size=len(group))
            self.store.place([m.id for m in group], child)

    def refresh(self, scope: Scope) -> None:
        """Count the keywords, labels and sizes of a scope's topics again from the memories
        still active in them (after a purge or a forget, no topic keeps their words)."""
        topics = self.store.topics(scope)
        members = self.store.topic_members([t.rowid for t in topics])
        children: dict[int | None, list[TopicRow]] = {}
        for t in topics:
            children.setdefault(t.parent, []).append(t)

        def count(t: TopicRow) -> tuple[Counter[str], int]:
            own = members.get(t.rowid, [])
            counts, size = Counter(w for m in own for w in keywords(m)), len(own)
            for child in children.get(t.rowid, []):
                sub, n = count(child)
                counts.update(sub)
                size += n
            if dict(counts) != t.keywords or size != t.size:
                self.store.save_topic(scope, t, parent=t.parent, label=_label(dict(counts)),
                                      keywords=dict(counts), size=size)
            return counts, size

        for root in children.get(None, []):
            count(root)

    def tree(self, scope: Scope, *, per_topic: int = 20) -> TopicNode:
        """The tree of a scope and every scope inside it (a field left out matches any, as
        in search), topics with their (most used first) memories."""
        topics = self.store.topics(scope, exact=False)
        members = self.store.topic_members([t.rowid for t in topics])
        children: dict[int | None, list[TopicRow]] = {}
        for t in topics:
            children.setdefault(t.parent, []).append(t)

        def node(t: TopicRow) -> TopicNode:
            kids = [node(c) for c in children.get(t.rowid, [])]
            kids = [k for k in kids if k.size]
            mems = members.get(t.rowid, [])
            size = len(mems) + sum(k.size for k in kids)
            top = sorted(t.keywords, key=lambda w: (-t.keywords[w], w))[:6]
            return TopicNode(id=t.rowid, label=t.label, keywords=top, size=size,
                             children=kids, memories=mems[:per_topic])

        roots = [n for n in (node(t) for t in children.get(None, [])) if n.size]
        roots.sort(key=lambda n: (-n.size, n.label))
        return TopicNode(id=None, label="memories", size=sum(r.size for r in roots), children=roots)

    def topics_for(self, scope: Scope, query_words: set[str], limit: int = 2) -> list[int]:
        """Leaf topics whose keywords the query shares, best first."""
        topics = self.store.topics(scope)
        parents = {t.parent for t in topics}
        scored = []
        for t in topics:
            if t.rowid in parents:
                continue
            total = sum(t.keywords.values()) or 1
            score = sum(t.keywords.get(w, 0) for w in query_words) / total
            if score > 0:
                scored.append((score, t.rowid))
        return [r for _, r in sorted(scored, reverse=True)[:limit]]
