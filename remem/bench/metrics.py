"""LLM-free retrieval metrics, as pure functions over ranked ids.

A ranking is a list of turn ids, best first, each id once (:func:`flatten` builds one
from hits that may cite several turns); ``k`` counts turns. Session-level figures rank
the distinct sessions of those turns in order of first appearance (:func:`sessions_of`).

NDCG uses the gain curve of LongMemEval's official script, 1 + sum(rel_i / log2 i) for
i >= 2, and an ideal ranking with every relevant item first. At session level it is
computed on the ranking of distinct sessions; the official script instead scores the turn
ranking with session labels, which counts a session once per retrieved turn.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import re
import string
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

__all__ = [
    "STEMMER_NAME",
    "budget_cut",
    "dcg",
    "flatten",
    "locomo_f1",
    "ndcg_at_k",
    "normalize_answer",
    "recall_all_at_k",
    "recall_any_at_k",
    "recall_at_k",
    "sessions_of",
    "token_f1",
]


def flatten(hits: Iterable[Sequence[str]]) -> list[str]:
    """Hits (each the turn ids it cites) as one ranking of distinct, non-empty turn ids."""
    return list(dict.fromkeys(t for hit in hits for t in hit if t))


def sessions_of(ranked: Sequence[str], session_of: Mapping[str, str]) -> list[str]:
    """The distinct sessions of ranked turns, in order of first appearance."""
    return list(dict.fromkeys(session_of[t] for t in ranked if t in session_of))


def recall_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """The share of ``relevant`` found in the top ``k`` (LoCoMo's evidence recall)."""
    if not relevant:
        raise ValueError("recall needs at least one relevant id")
    top = set(ranked[:k])
    return sum(1 for r in relevant if r in top) / len(relevant)


def recall_any_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1.0 if any relevant id is in the top ``k``, else 0.0 (LongMemEval)."""
    top = set(ranked[:k])
    return float(any(r in top for r in relevant))


def recall_all_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1.0 if every relevant id is in the top ``k``, else 0.0 (LongMemEval)."""
    top = set(ranked[:k])
    return float(all(r in top for r in relevant))


def dcg(relevances: Sequence[float], k: int) -> float:
    """Discounted cumulative gain of the first ``k`` relevances, LongMemEval's curve."""
    rel = list(relevances[:k])
    if not rel:
        return 0.0
    return rel[0] + sum(r / math.log2(i) for i, r in enumerate(rel[1:], start=2))


def ndcg_at_k(ranked: Sequence[str], relevant: Collection[str], k: int,
              n_relevant: int | None = None) -> float:
    """NDCG@k with binary relevance; ``n_relevant`` is how many relevant items the corpus
    holds (default ``len(relevant)``). 0.0 when there is none."""
    wanted = set(relevant)
    total = len(wanted) if n_relevant is None else n_relevant
    ideal = dcg([1.0] * min(total, k), k)
    if ideal == 0:
        return 0.0
    return dcg([1.0 if r in wanted else 0.0 for r in ranked[:k]], k) / ideal


def budget_cut(ranked: Sequence[str], tokens: Callable[[str], int], budget: int) -> list[str]:
    """The leading turns of ``ranked`` whose texts fit in ``budget`` tokens together:
    taken in rank order, stopping at the first one that no longer fits."""
    out: list[str] = []
    used = 0
    for turn in ranked:
        cost = tokens(turn)
        if used + cost > budget:
            break
        out.append(turn)
        used += cost
    return out


# --- answer overlap (LoCoMo's token F1) -------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """Lower case, no commas or punctuation, no a/an/the/and, single spaces (as LoCoMo)."""
    text = text.replace(",", "").lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


# the paper stems with nltk's Porter stemmer; without nltk words are compared whole
STEMMER_NAME = ("porter (nltk)" if importlib.util.find_spec("nltk") is not None
                else "none (nltk not installed)")


@functools.lru_cache(maxsize=1)
def _stemmer() -> Callable[[str], str]:
    try:
        from nltk.stem import PorterStemmer  # type: ignore
    except ImportError:
        return lambda w: w
    stem: Callable[[str], str] = PorterStemmer().stem
    return stem


def token_f1(prediction: str, gold: str, stem: Callable[[str], str] | None = None) -> float:
    """Token-overlap F1 of normalised, stemmed words."""
    stem = stem or _stemmer()
    pred = [stem(w) for w in normalize_answer(prediction).split()]
    ref = [stem(w) for w in normalize_answer(gold).split()]
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def locomo_f1(prediction: str, gold: str, category: int,
              stem: Callable[[str], str] | None = None) -> float:
    """F1 as the LoCoMo paper scores it per category: multi-hop (1) matches each
    comma-separated gold part to its best predicted part; open-domain (3) keeps the gold
    up to the first ``;``; adversarial (5) is 1.0 when the answer says the information is
    not there."""
    if category == 5:
        low = prediction.lower()
        return float("no information available" in low or "not mentioned" in low)
    if category == 3:
        gold = gold.split(";")[0].strip()
    if category == 1:
        preds = [p.strip() for p in prediction.split(",")]
        golds = [g.strip() for g in gold.split(",")]
        return sum(max(token_f1(p, g, stem) for p in preds) for g in golds) / len(golds)
    return token_f1(prediction, gold, stem)
