"""A small causal language model built locally: a byte-level tokenizer and a random Llama.

Nothing is downloaded: the tokenizer maps each UTF-8 byte to one token (ids 0-255, then
``<s>`` = 256 and ``</s>`` = 257) and the model is a Llama architecture with random
weights from a fixed seed. Its text is noise, but its prefill does the work of a real
model of the same shape, so it serves tests and speed benchmarks of activation memory.

Needs ``pip install "remem[activation]"``.
"""

from __future__ import annotations

from typing import Any

from .activation import require

__all__ = ["BOS", "EOS", "VOCAB_SIZE", "byte_tokenizer", "describe", "random_llama"]

BOS, EOS = 256, 257
VOCAB_SIZE = 258


def _byte_symbols() -> list[str]:
    """The printable character byte-level BPE uses for each byte value (GPT-2's table)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    symbols: dict[int, str] = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in symbols:
            symbols[b] = chr(256 + extra)
            extra += 1
    return [symbols[b] for b in range(256)]


def byte_tokenizer() -> Any:
    """A ``PreTrainedTokenizerFast`` with one token per byte that starts each text with ``<s>``."""
    require()
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {symbol: i for i, symbol in enumerate(_byte_symbols())}
    vocab.update({"<s>": BOS, "</s>": EOS})
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", BOS)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="</s>")


def random_llama(*, hidden_size: int = 256, layers: int = 4, heads: int = 4,
                 intermediate_size: int | None = None, max_positions: int = 8448, seed: int = 0,
                 init_std: float = 0.3,
                 dtype: str = "float32") -> Any:
    """A ``LlamaForCausalLM`` with random weights (seeded), in eval mode, for :func:`byte_tokenizer`.

    ``init_std`` is the spread of the random weights; the default is wider than for
    training (0.02), so that greedy decoding does not just repeat one token.
    """
    torch, transformers, _ = require()
    config = transformers.LlamaConfig(
        vocab_size=VOCAB_SIZE, hidden_size=hidden_size,
        intermediate_size=intermediate_size or hidden_size * 8 // 3,
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
        max_position_embeddings=max_positions, bos_token_id=BOS, eos_token_id=EOS, pad_token_id=EOS,
        tie_word_embeddings=True, initializer_range=init_std)
    generator_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        model = transformers.LlamaForCausalLM(config)
    finally:
        torch.random.set_rng_state(generator_state)  # leave the caller's random stream as it was
    model.name_or_path = f"remem-random-llama-h{hidden_size}-l{layers}-seed{seed}"
    return model.to(getattr(torch, dtype)).eval()


def describe(model: Any) -> str:
    """One line naming a model's class, size and shape, for benchmark output."""
    cfg = model.config
    params = sum(p.numel() for p in model.parameters())
    return (f"{getattr(model, 'name_or_path', '') or type(model).__name__} ({type(model).__name__}, "
            f"{params / 1e6:.1f}M parameters, hidden {cfg.hidden_size}, {cfg.num_hidden_layers} layers, "
            f"{cfg.num_attention_heads} heads, vocab {cfg.vocab_size}, "
            f"max positions {cfg.max_position_embeddings})")
