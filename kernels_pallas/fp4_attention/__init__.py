"""FP4 (NVFP4) flash attention with the Attn-QAT backward, and its ablations.

`fp4_attention(q, k, v, mode=...)` maps q [B, T, N, H], k/v [B, S, K, H] (K dividing N:
grouped-query attention, heads not repeated) to [B, T, N, H] and is differentiable (custom_vjp).
Modes:

- "bf16": no quantization; plain flash attention (gradients equal jax.grad of softmax attention).
- "fp4_ptq": NVFP4 fake-quantized forward (Q, K, V, and P~ per key tile), meant for evaluation
  without training; its gradient is defined as drop-in QAT's.
- "drop_in_qat": FP4 forward + the unchanged high-precision FlashAttention backward: on the
  high-precision Q, K, V, with D = rowsum(dO * O) and dV from the unquantized recomputed P.
- "attn_qat": FP4 forward + both fixes, on the fake-quantized Q, K, V: D = rowsum(dO * O') with
  the high-precision O' = P~ V^F / l, and dV = fq(P)^T dO with P recomputed and quantized.
- "only_o_prime": Attn-QAT with fix 1 alone (D from O'; dV from unquantized P).
- "only_quantized_p": Attn-QAT with fix 2 alone (dV from fq(P); D from the quantized O).

impl: "reference" (dense jnp, reference.py), "pallas" (kernel.py), "auto" = reference on CPU and
pallas on GPU/TPU. interpret (pallas only): None = True on CPU.
"""

from __future__ import annotations

import jax

from kernels_pallas.fp4_attention.reference import (
    MODE_FLAGS,
    MODES,
    BlockSizes,
    fp4_attention_reference,
)

__all__ = ["MODES", "MODE_FLAGS", "BlockSizes", "fp4_attention"]

IMPLS = ("auto", "pallas", "reference")


def fp4_attention(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    *,
    mode: str,
    causal: bool = True,
    impl: str = "auto",
    block_sizes: BlockSizes | None = None,
    interpret: bool | None = None,
) -> jax.Array:
    """FP4 attention: q [B, T, N, H], k/v [B, S, K, H] -> [B, T, N, H] in q.dtype (see module doc).

    causal=True: the T queries are the last T of the S positions (T <= S; T == S is plain causal
    attention), so query i sees keys j <= S - T + i. Lengths need not be multiples of the tiles:
    keys are padded and masked, padded queries are dropped.
    """
    if mode not in MODES:
        raise ValueError(f"mode={mode!r} is not one of {MODES}")
    if impl not in IMPLS:
        raise ValueError(f"impl={impl!r} is not one of {IMPLS}")
    bs = block_sizes or BlockSizes()
    on_cpu = jax.default_backend() == "cpu"
    if impl == "reference" or (impl == "auto" and on_cpu):
        return fp4_attention_reference(q, k, v, mode, causal, bs)
    from kernels_pallas.fp4_attention.kernel import fp4_flash_attention

    return fp4_flash_attention(
        q, k, v, mode, causal, bs, on_cpu if interpret is None else interpret
    )
