"""Full-text search over a store's passages, held as an inverted index in memory, scored
exactly as SQLite FTS5's ``bm25()`` scores them, whichever store holds the rows.

FTS5 scores every row that holds any query word before it can sort them: at 100k turns
indexed with their neighbours' text, one common word matches a third of the table.
This index keeps, per term, numpy arrays of the rows that hold it and how often (in the
turn's own text and in its neighbours'), so a query scores only its terms' rows, in a
few vector operations, with FTS5's own formula. The postings are kept per user, so a
search reads only its user's rows (and those of the level above), however many users
share the store; the count of rows holding a term, which the idf needs, stays the whole
table's and is kept per user, counted again only after a row of that user died. The formula:

    score = sum over query terms of idf * f * (k1 + 1) / (f + k1 * (1 - b + b * D / avgD))

where ``f`` is the term's count in the body plus ``context_weight`` times its count in
the context, ``D`` the row's length in tokens (both columns), ``avgD`` their mean over
the table, and ``idf = ln((N - n + 0.5) / (n + 0.5))`` (at least 1e-6) with ``n`` the
rows holding the term.

Tokens are FTS5's own: text is cut at whitespace and ASCII punctuation in Python and
each distinct piece is handed once to an FTS5 table in a private in-memory database
(``porter unicode61 remove_diacritics 2``, as ``passages_fts``), whose terms are cached.
So case folding, diacritics and the Porter stemmer can never drift from the store's.

The store stays the only durable copy. Each adapter logs every passage whose row was
added, changed (its neighbours' context) or deleted, and gives the index what changed
since it last looked, in any process (:class:`FulltextRows`); the index rebuilds from the
table when the log has been trimmed past that point. A changed or deleted row leaves a
dead slot until more than half of the slots are dead, and then the index is rebuilt.
"""

from __future__ import annotations

import logging
import math
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

import numpy as np

from ..model import Scope
from .sqlite import statements as sql

__all__ = ["FulltextIndex", "FulltextRows", "Tokenizer"]

log = logging.getLogger(__name__)

_SCOPE_FIELDS = ("org_id", "user_id", "agent_id", "project", "session_id")
_USER = _SCOPE_FIELDS.index("user_id")
_K1, _B = 1.2, 0.75
_TOKENIZE = "porter unicode61 remove_diacritics 2"  # as passages_fts (schema.py)
# whitespace and ASCII punctuation separate tokens for unicode61 whatever its options
_PIECE = re.compile(r"[^\s!-/:-@\[-`{-~]+")


#: a row of the index: passage rowid, body, context, memory rowid, org, user, agent,
#: project, session (the body and context as the store segments them for full text)
Row = Sequence[Any]


class FulltextRows(Protocol):
    """What a store gives its full-text index: its rows, and what changed since a cursor."""

    def snapshot(self) -> AbstractContextManager[object]:
        """One read of the log and of the rows it names."""

    def changes(self, cursor: Any) -> tuple[Any, list[int] | None]:
        """A cursor for now, and the passages changed since ``cursor``: None when the
        cursor is None or the log no longer reaches back to it (read every row)."""

    def rows(self, passages: Sequence[int] | None) -> Iterator[list[Row]]:
        """Batches of the rows of these passages (None: of every passage)."""

    def count(self) -> int:
        """About how many passages the store holds (to decide whether to load in the
        background)."""


class Tokenizer:
    """FTS5's terms for texts, through a private FTS5 table, as integer term ids.

    Each distinct piece of text (between whitespace and ASCII punctuation) is tokenized
    by FTS5 once; a batch of texts is then cut in one regex pass and mapped to term ids
    with numpy, so indexing costs a few C loops per batch, not Python work per word.
    """

    _SEP = "\x01"  # a separator for unicode61, so it never joins a piece of real text

    def __init__(self) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(sql.FTS5_TERMS_TABLE.format(tokenize=_TOKENIZE))
        self._db.execute(sql.FTS5_TERMS_VOCAB)
        self._lock = threading.Lock()
        self._encode_lock = threading.Lock()
        self.term_ids: dict[str, int] = {}
        self._piece_ids: dict[str, int] = {self._SEP: 0}
        self._starts: list[int] = [0, 0]  # piece id -> its terms in _flat[start:end]
        self._flat: list[int] = []
        self._arrays: tuple[np.ndarray, np.ndarray] | None = None
        self._words: dict[str, list[str]] = {}

    def _fts5_terms(self, pieces: Sequence[str]) -> list[list[str]]:
        with self._lock:
            self._db.execute(sql.FTS5_TERMS_BEGIN)
            self._db.executemany(sql.FTS5_TERMS_INSERT, enumerate(pieces, 1))
            found: dict[int, list[tuple[int, str]]] = {}
            for term, doc, offset in self._db.execute(sql.FTS5_TERMS_SELECT_V):
                found.setdefault(doc, []).append((offset, term))
            self._db.execute(sql.FTS5_TERMS_DELETE)
            self._db.execute(sql.COMMIT)
        return [[t for _, t in sorted(found.get(i, ()))] for i in range(1, len(pieces) + 1)]

    def _learn(self, pieces: Iterable[str]) -> None:
        new = [p for p in set(pieces) if p not in self._piece_ids]
        if not new:
            return
        ids = self.term_ids
        for piece, terms in zip(new, self._fts5_terms(new), strict=True):
            self._piece_ids[piece] = len(self._starts) - 1
            self._flat.extend(ids.setdefault(t, len(ids)) for t in terms)
            self._starts.append(len(self._flat))
        self._arrays = None

    def terms(self, text: str) -> list[str]:
        """The terms FTS5 indexes (or queries) for ``text``, in order."""
        known = self._words.get(text)
        if known is None:
            known = [t for terms in self._fts5_terms([text]) for t in terms] if text else []
            if len(self._words) > 50_000:  # query words: bounded, unlike the index's pieces
                self._words.clear()
            self._words[text] = known
        return list(known)

    def encode(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The term id of every token of ``texts``, and the index of the text it is in."""
        sep = self._SEP
        joined = f" {sep} ".join(t.replace(sep, " ") if sep in t else t for t in texts)
        pieces = _PIECE.findall(joined)
        with self._encode_lock:  # pieces learnt and their arrays rebuilt together
            self._learn(pieces)
            if self._arrays is None:
                self._arrays = (np.asarray(self._starts, dtype=np.int64),
                                np.asarray(self._flat, dtype=np.int64))
            starts, flat = self._arrays
            piece = np.fromiter(map(self._piece_ids.__getitem__, pieces), dtype=np.int64,
                                count=len(pieces))
        text = np.cumsum(piece == 0)  # separators between texts: piece id 0, no terms
        count = starts[piece + 1] - starts[piece]
        total = int(count.sum())
        # each piece's terms, in order: flat[start + 0 .. start + count - 1]
        first = np.repeat(starts[piece] - (np.cumsum(count) - count), count)
        return flat[first + np.arange(total)], np.repeat(text, count)

    def close(self) -> None:
        self._db.close()


class _Postings:
    """The slots of one user's rows holding one term, with its count in body and context
    (growing), and how many of them are alive: holding it in the body, or anywhere."""

    __slots__ = ("parts", "slots", "body", "context", "live", "seen")

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.slots = np.empty(0, dtype=np.int64)
        self.body = np.empty(0, dtype=np.float64)
        self.context = np.empty(0, dtype=np.float64)
        self.live = (0, 0)  # rows alive holding the term: in the body, anywhere
        self.seen = -1  # the deaths among the user's rows ``live`` was counted at

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self.parts:
            parts = [(self.slots, self.body, self.context), *self.parts]
            self.slots = np.concatenate([p[0] for p in parts])
            self.body = np.concatenate([p[1] for p in parts])
            self.context = np.concatenate([p[2] for p in parts])
            self.parts = []
        return self.slots, self.body, self.context

    def add(self, slots: np.ndarray, body: np.ndarray, context: np.ndarray) -> None:
        """New rows (alive) holding the term."""
        self.parts.append((slots, body, context))
        in_body = int(np.count_nonzero(body))
        self.live = (self.live[0] + in_body, self.live[1] + len(slots))

    def alive(self, alive: np.ndarray, deaths: int) -> tuple[int, int]:
        """Rows alive holding the term (in the body, anywhere), counted again only after
        a row of the user died."""
        if self.seen != deaths:
            slots, body, _ = self.arrays()
            live = alive[slots]
            self.live = (int(np.count_nonzero(live & (body > 0))), int(np.count_nonzero(live)))
            self.seen = deaths
        return self.live


class FulltextIndex:
    """In-memory copy of a store's full text with the scope of each row; see the module."""

    def __init__(self, tokenizer: Tokenizer | None = None, warm_rows: int = 20_000,
                 retry_s: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.tokens = tokenizer or Tokenizer()
        self._lock = threading.Lock()
        self.built = False  # True once loaded from the table (it then stays current)
        #: a store with at least this many passages loads the index in the background
        self.warm_rows = warm_rows
        self.warming: threading.Thread | None = None
        #: a background load that failed is tried again after this many seconds
        self.retry_s = retry_s
        self._clock = clock
        self._failed_at: float | None = None
        self._warm_lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._cursor: Any = None
        self._n = 0  # slots used, alive or dead
        self._alive_count = 0
        self._total_length = 0.0
        # term -> user code -> postings: a search reads only its user's rows (and the
        # level above), however many users the store holds
        self._terms: dict[int, dict[int, _Postings]] = {}
        self._deaths: dict[int, int] = {}  # user code -> rows of the user that died
        self._died = 0  # rows that died, all users
        self._live: dict[int, tuple[int, int, int]] = {}  # term -> (_died, as _Postings.live)
        self._slot_of: dict[int, int] = {}
        self._passage = np.empty(1024, dtype=np.int64)
        self._memory = np.empty(1024, dtype=np.int64)
        self._length = np.empty(1024, dtype=np.float64)
        self._alive = np.zeros(1024, dtype=bool)
        self._codes = np.empty((1024, len(_SCOPE_FIELDS)), dtype=np.int32)
        self._interned: dict[str | None, int] = {None: 0}

    def __len__(self) -> int:
        """Rows indexed (the live ones)."""
        return self._alive_count

    def nbytes(self) -> int:
        """The size of the index's arrays (postings and rows; not Python's dicts)."""
        with self._lock:
            postings = sum(a.nbytes for by_user in self._terms.values()
                           for p in by_user.values() for a in p.arrays())
            rows = sum(a.nbytes for a in (self._passage, self._memory, self._length, self._alive,
                                          self._codes))
        return postings + rows

    # --- keeping current ------------------------------------------------------------------

    def _code(self, value: str | None) -> int:
        code = self._interned.get(value)
        if code is None:
            code = self._interned[value] = len(self._interned)
        return code

    def _grow(self, need: int) -> None:
        cap = len(self._passage)
        if need <= cap:
            return
        while cap < need:
            cap *= 2
        self._passage = np.resize(self._passage, cap)
        self._memory = np.resize(self._memory, cap)
        self._length = np.resize(self._length, cap)
        alive = np.zeros(cap, dtype=bool)
        alive[: self._n] = self._alive[: self._n]
        self._alive = alive
        self._codes = np.resize(self._codes, (cap, len(_SCOPE_FIELDS)))

    def _kill(self, passage: int) -> None:
        slot = self._slot_of.pop(passage, None)
        if slot is not None:
            user = int(self._codes[slot, _USER])
            self._deaths[user] = self._deaths.get(user, 0) + 1
            self._died += 1
            self._alive[slot] = False
            self._alive_count -= 1
            self._total_length -= self._length[slot]

    def _add(self, rows: Sequence[Sequence[object]]) -> None:
        """Index rows laid out as :data:`Row` (none of them indexed now)."""
        if not rows:
            return
        k, start = len(rows), self._n
        self._grow(start + k)
        body_terms, body_doc = self.tokens.encode([str(r[1] or "") for r in rows])
        ctx_terms, ctx_doc = self.tokens.encode([str(r[2] or "") for r in rows])
        codes = np.array([[self._code(v) for v in r[4:9]] for r in rows], dtype=np.int32)
        lengths = (np.bincount(body_doc, minlength=k) + np.bincount(ctx_doc, minlength=k)).astype(np.float64)
        key = np.concatenate([(body_terms * k + body_doc) * 2, (ctx_terms * k + ctx_doc) * 2 + 1])
        if len(key):
            key, counts = np.unique(key, return_counts=True)
            pair, column = np.divmod(key, 2)  # sorted by term, then row, then column
            first = np.ones(len(pair), dtype=bool)
            first[1:] = pair[1:] != pair[:-1]
            entry = np.cumsum(first) - 1
            body_tf = np.zeros(int(entry[-1]) + 1)
            ctx_tf = np.zeros(int(entry[-1]) + 1)
            body_tf[entry[column == 0]] = counts[column == 0]
            ctx_tf[entry[column == 1]] = counts[column == 1]
            term, doc = np.divmod(pair[first], k)
            user = codes[doc, _USER]
            by = np.lexsort((doc, user, term))  # by term, then user, then row
            term, doc, user, body_tf, ctx_tf = term[by], doc[by], user[by], body_tf[by], ctx_tf[by]
            slots = doc + start
            bounds = np.flatnonzero(np.r_[True, (term[1:] != term[:-1]) | (user[1:] != user[:-1]), True])
            postings = self._terms
            for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
                self._live.pop(int(term[a]), None)
                by_user = postings.setdefault(int(term[a]), {})
                entry_of = by_user.get(int(user[a]))
                if entry_of is None:
                    entry_of = by_user[int(user[a])] = _Postings()
                    entry_of.seen = self._deaths.get(int(user[a]), 0)
                entry_of.add(slots[a:b], body_tf[a:b], ctx_tf[a:b])
        end = start + k
        self._passage[start:end] = [r[0] for r in rows]
        self._memory[start:end] = [r[3] for r in rows]
        self._codes[start:end] = codes
        self._length[start:end] = lengths
        self._alive[start:end] = True
        self._slot_of.update((int(r[0]), start + i) for i, r in enumerate(rows))  # type: ignore[call-overload]
        self._n = end
        self._alive_count += k
        self._total_length += float(lengths.sum())

    def _rebuild(self, source: FulltextRows, cursor: Any) -> None:
        self._reset()
        for rows in source.rows(None):
            self._add(rows)
        self._cursor = cursor
        self.built = True

    def load(self, source: FulltextRows) -> None:
        """Load (or bring up to date) the index, e.g. from a thread of its own."""
        with self._lock:
            self.sync(source)

    def sync(self, source: FulltextRows) -> None:
        """Take in what changed since the last call, from any process (callers hold
        the lock)."""
        with source.snapshot():
            cursor, changed = source.changes(self._cursor if self._n else None)
            if (changed is None or not self._n
                    or self._n - self._alive_count > max(self._alive_count, 1000)):
                self._rebuild(source, cursor)  # trimmed past us, replaced, new, or mostly dead
                return
            for passage in changed:
                self._kill(passage)
            for i in range(0, len(changed), 500):
                for rows in source.rows(changed[i : i + 500]):
                    self._add(rows)
            self._cursor = cursor

    def ready(self, source: FulltextRows) -> bool:
        """True when the index can answer now. A large store's index is loaded by a
        thread of its own (seconds per 100k rows) while the store's SQL answers, so that
        a process that searches once is not made to wait for it. A load that failed is
        tried again after ``retry_s``, the SQL answering meanwhile."""
        if self.built:
            return True
        with self._warm_lock:
            if self.warming is not None:
                if self.warming.is_alive():
                    return False
                self.warming = None
            if self.built:
                return True
            if self._failed_at is not None and self._clock() - self._failed_at < self.retry_s:
                return False
            self._failed_at = None
            if source.count() < self.warm_rows:
                return True  # small enough to load in the search itself

            def load() -> None:
                try:
                    self.load(source)
                except Exception:  # the store closed meanwhile, or a broken row
                    self._failed_at = self._clock()
                    log.warning("loading the full-text index failed; the store's SQL answers",
                                exc_info=True)

            self.warming = threading.Thread(target=load, name="remem-fulltext", daemon=True)
            self.warming.start()
            return False

    # --- searching --------------------------------------------------------------------------

    def phrases(self, words: Sequence[str]) -> list[str] | None:
        """The FTS5 term of each query word; None when a word is not exactly one term
        (a phrase of several, which this index does not hold positions for)."""
        out = []
        for word in words:
            terms = self.tokens.terms(word)
            if len(terms) != 1:
                return None
            out.append(terms[0])
        return out

    def _scope_mask(self, slots: np.ndarray, scope: Scope) -> np.ndarray:
        codes = self._codes[slots]
        mask = np.ones(len(slots), dtype=bool)
        for col, name in enumerate(_SCOPE_FIELDS):
            value = getattr(scope, name)
            if value is None and name != "org_id":
                continue
            match = codes[:, col] == self._interned.get(value, -1)
            if scope.nested and name in ("user_id", "agent_id", "project"):
                above = codes[:, col] == 0  # None: the level above
                if name != "user_id" and scope.user_id is None:
                    above &= codes[:, _SCOPE_FIELDS.index("user_id")] == 0
                match |= above
            mask &= match
        return mask

    def scores(self, terms: Sequence[str], context_weight: float,
               users: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Slots matching any term and their BM25 scores, among the rows of the ``users``
        (codes; None: every user's) only; the statistics are the whole table's (callers
        hold the lock)."""
        n_rows = self._alive_count
        if n_rows == 0:
            return np.empty(0, dtype=np.int64), np.empty(0)
        avg = self._total_length / n_rows
        all_slots, all_scores = [], []
        ids = self.tokens.term_ids
        for term in terms:
            tid = ids.get(term)
            by_user = None if tid is None else self._terms.get(tid)
            if not by_user:
                continue
            hits = self._holding(tid, by_user)[1 if context_weight else 0]
            if not hits:
                continue
            idf = math.log((n_rows - hits + 0.5) / (hits + 0.5))
            idf = idf if idf > 0 else 1e-6
            mine = by_user.values() if users is None else [by_user[u] for u in users if u in by_user]
            for postings in mine:
                slots, body, context = postings.arrays()
                f = body + context_weight * context if context_weight else body
                keep = self._alive[slots] & (f > 0)
                if not keep.any():
                    continue
                slots, f = slots[keep], f[keep]
                length = self._length[slots]
                all_slots.append(slots)
                all_scores.append(idf * (f * (_K1 + 1)) / (f + _K1 * (1 - _B + _B * length / avg)))
        if not all_slots:
            return np.empty(0, dtype=np.int64), np.empty(0)
        if len(all_slots) == 1:
            return all_slots[0], all_scores[0]
        slots, weights = np.concatenate(all_slots), np.concatenate(all_scores)
        if len(slots) * 8 >= self._n:  # many of the table's rows: a pass over it beats a sort
            total = np.bincount(slots, weights=weights, minlength=self._n)
            matched = np.flatnonzero(total)
            return matched, total[matched]
        matched, at = np.unique(slots, return_inverse=True)
        return matched, np.bincount(at, weights=weights, minlength=len(matched))

    def _holding(self, tid: int, by_user: dict[int, _Postings]) -> tuple[int, int]:
        """Rows alive in the whole table holding a term (in the body, anywhere), as FTS5
        counts them for its idf; counted again after a row was added with it or died."""
        known = self._live.get(tid)
        if known is None or known[0] != self._died:
            counts = [p.alive(self._alive, self._deaths.get(u, 0)) for u, p in by_user.items()]
            known = self._live[tid] = (self._died, sum(c[0] for c in counts), sum(c[1] for c in counts))
        return known[1], known[2]

    def _users(self, scope: Scope) -> list[int] | None:
        """The user codes whose rows a search in ``scope`` may see (None: any)."""
        if scope.user_id is None:
            return None
        mine = self._interned.get(scope.user_id)
        users = [] if mine is None else [mine]
        return users + [0] if scope.nested else users

    def answer(self, source: FulltextRows, words: Sequence[str], scope: Scope, limit: int,
               context_weight: float, accept: Callable[[list[int]], set[int]],
               ) -> list[tuple[int, float]] | None:
        """:meth:`search` for query words, or None when the store's SQL must answer: the
        index is still loading, or a word is several tokens (a phrase). Callers inside a
        write transaction ask the SQL instead, which sees the transaction's own rows (and
        the index must never take in rows that may yet be rolled back)."""
        if not words or not self.ready(source):
            return None
        phrases = self.phrases(words)
        if phrases is None:
            return None
        return self.search(source, phrases, scope, limit, context_weight, accept)

    def search(self, source: FulltextRows, terms: Sequence[str], scope: Scope, limit: int,
               context_weight: float, accept: Callable[[list[int]], set[int]]) -> list[tuple[int, float]]:
        """The ``limit`` best memories by the BM25 score of their best passage.

        ``terms`` are FTS5 terms (:meth:`phrases`); ``accept`` receives candidate memory
        rowids and returns those that pass the store's SQL scope and filter check.
        """
        with self._lock:
            self.sync(source)
            slots, scores = self.scores(terms, float(context_weight), self._users(scope))
            inside = self._scope_mask(slots, scope)
            slots, scores = slots[inside], scores[inside]
            passages = self._passage[slots]
            memory = self._memory[slots]
        if not len(slots):
            return []
        want = limit * 2
        while True:
            take = min(len(slots), want)
            top = np.argpartition(-scores, take - 1)[:take] if take < len(slots) else np.arange(len(slots))
            # FTS5 breaks ties by rowid
            top = top[np.lexsort((passages[top], -scores[top]))]
            best: dict[int, float] = {}
            for i in top:
                best.setdefault(int(memory[i]), float(scores[i]))
            ok = accept(list(best)) if best else set()
            found = [(m, s) for m, s in best.items() if m in ok]
            if len(found) >= limit or take >= len(slots):
                return found[:limit]
            want *= 8
