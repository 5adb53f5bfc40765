"""The decoders of the study and how one model's weights are re-used under another attention.

The attention mode is a field of the shared decoder's config (`LlamaConfig.attention`), so
switching a trained model between full-precision and FP4 attention re-binds the same weights to
the graph of a decoder built with the other mode (no copy, no retraining).
"""

from __future__ import annotations

import dataclasses

from flax import nnx

from shared.models.llama import Llama, LlamaConfig

# Llama-3.1-70B shapes (Table 4 of the paper continues pretraining of Llama-3.1-70B and
# Qwen3-14B). Reconstruction: the shared decoder has plain RoPE (no llama3 frequency scaling)
# and no Qwen3 QK-norm, so this is the 70B's shape, not a bit-exact Llama-3.1 forward.
LLAMA31_70B = LlamaConfig(
    vocab_size=128256, dim=8192, num_layers=80, num_heads=64, num_kv_heads=8, ffn_dim=28672,
    rope_base=500000.0, norm_eps=1e-5, max_seq_len=8192, dtype="bfloat16",
)  # fmt: skip
# The same layout shrunk for rehearsals of the paper config (rehearsal.py): 8:1 grouped-query
# attention, FFN 3.5 x width, untied head, bfloat16; head_dim 16 (one NVFP4 group).
LLAMA31_70B_REHEARSAL = dataclasses.replace(
    LLAMA31_70B, vocab_size=512, dim=128, num_layers=2, num_heads=8, num_kv_heads=1, ffn_dim=448
)


def scratch_config(
    vocab_size: int, dim: int, num_layers: int, num_heads: int, ffn_dim: int, max_seq_len: int
) -> LlamaConfig:
    return LlamaConfig(vocab_size, dim, num_layers, num_heads, num_heads, ffn_dim,
                       max_seq_len=max_seq_len)  # fmt: skip


def with_attention(model: Llama, attention: str, impl: str = "auto") -> Llama:
    """The same parameters (shared, not copied) in a decoder whose attention is `attention`."""
    cfg = dataclasses.replace(model.cfg, attention=attention, attention_impl=impl)
    graphdef, _ = nnx.split(nnx.eval_shape(lambda: Llama(cfg, rngs=nnx.Rngs(0))))
    return nnx.merge(graphdef, nnx.state(model))
