"""A LLaMA-style decoder in Flax NNX: RMSNorm, rotary positions, SwiGLU, grouped-query attention.

Layout follows HF `LlamaForCausalLM` (pre-norm blocks, no biases, `rotate_half` RoPE on pairs
(i, i + head_dim/2), tied or untied output head, init normal(0, 0.02)), so real checkpoints load
with a plain name map. Attention goes through the same pluggable function as the encoder blocks,
with key/value heads repeated to the query heads; the default dot-product attention (through
`grouped_attention`) and FP4 attention take them unrepeated.

Incremental decoding passes a `KVCache` (explicit arrays, so the whole step is a pure function):
`logits, cache = model(tokens, cache=cache)` writes the new keys/values at `cache.length`.
Left-padded batches (rows of different lengths) add per-row RoPE `positions` and a `key_valid`
mask of the real key slots (see `shared.models.generation`); without them nothing changes.

`LlamaConfig.attention` names the attention of the full (cache-free) causal forward:
"dot_product" (the pluggable masked function, default) or a mode of
`kernels_pallas.fp4_attention` (FP4 attention, called with causal=True, so any model can be
trained or evaluated with it). Decoding with a KV cache always uses dot-product attention.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from flax import nnx, struct

from shared.models.attention import (
    AttentionFn,
    causal_grouped_attention,
    dot_product_attention,
    grouped_attention,
    key_padding_mask,
)


@dataclasses.dataclass(frozen=True)
class LlamaConfig:
    vocab_size: int  # number of token ids
    dim: int  # model width
    num_layers: int  # decoder blocks
    num_heads: int  # query heads
    num_kv_heads: int  # key/value heads (grouped-query attention when < num_heads)
    ffn_dim: int  # SwiGLU hidden width
    head_dim: int = 0  # 0 means dim // num_heads
    rope_base: float = 10000.0  # RoPE frequency base
    norm_eps: float = 1e-6  # RMSNorm epsilon
    tie_embeddings: bool = False  # output head = embedding table transposed
    max_seq_len: int = 2048  # longest sequence (KV-cache capacity bound)
    init_std: float = 0.02  # std of the normal init of every matrix
    dtype: str = "float32"  # compute dtype (parameters stay float32)
    # attention of the cache-free forward: "dot_product" or a kernels_pallas.fp4_attention mode
    attention: str = "dot_product"
    attention_impl: str = "auto"  # FP4 attention implementation: "auto" | "pallas" | "reference"

    def __post_init__(self):
        if self.attention != "dot_product" and self.attention not in _fp4_modes():
            raise ValueError(
                f"attention={self.attention!r} is unknown; choose 'dot_product' or one of "
                f"{_fp4_modes()}"
            )
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_heads={self.num_heads} must be a multiple of num_kv_heads={self.num_kv_heads}"
            )
        if not self.head_dim and self.dim % self.num_heads:
            raise ValueError(f"dim={self.dim} is not divisible by num_heads={self.num_heads}")
        if self.resolved_head_dim % 2:
            raise ValueError(f"head_dim={self.resolved_head_dim} must be even for RoPE")

    @property
    def resolved_head_dim(self) -> int:
        return self.head_dim or self.dim // self.num_heads


def _fp4_modes() -> tuple[str, ...]:
    from kernels_pallas.fp4_attention import MODES  # imported on use: only FP4 models need it

    return tuple(MODES)


@functools.cache
def causal_attention(name: str, impl: str) -> Callable | None:
    """(q [B,T,N,H], k, v [B,T,K,H]) -> [B,T,N,H] causal attention named by `name`; None for
    "dot_product" (the masked pluggable function is used). Cached: one function per name, so
    models of the same config share a graph definition and a compiled step."""
    if name == "dot_product":
        return None
    from kernels_pallas.fp4_attention import fp4_attention

    return functools.partial(fp4_attention, mode=name, causal=True, impl=impl)


def _scale_cfg(dim: int, ffn: int, heads: int, layers: int) -> LlamaConfig:
    # The SCALE paper's C4 models: T5 tokenizer (vocab 32000), RMSNorm eps 1e-6, untied head.
    return LlamaConfig(32000, dim, layers, heads, heads, ffn, max_seq_len=256)


SIZES: dict[str, LlamaConfig] = {
    # CPU sizes for tests and small runs (vocab set by the tokenizer: `dataclasses.replace`).
    "nano": LlamaConfig(257, 64, 2, 4, 2, 172, max_seq_len=256),
    "tiny": LlamaConfig(257, 128, 4, 4, 4, 344, max_seq_len=512),
    # SCALE (../papers/scale.md, official configs/llama_*.json).
    "60m": _scale_cfg(512, 1376, 8, 8),
    "130m": _scale_cfg(768, 2048, 12, 12),
    "350m": _scale_cfg(1024, 2736, 16, 24),
    "1b": _scale_cfg(2048, 5461, 32, 24),
    "7b": _scale_cfg(4096, 11008, 32, 32),
    # SmolLM2-135M (GGUF metadata): weights load with shared.models.pretrained.smollm2.
    "smollm2-135m": LlamaConfig(
        49152, 576, 30, 9, 3, 1536, rope_base=100000.0, norm_eps=1e-5, tie_embeddings=True,
        max_seq_len=8192,
    ),
    # Llama-3.1-8B(-Instruct) shapes (plain RoPE: no llama3 frequency scaling here), the
    # layout of open 8B models that paper configs read from converted checkpoints.
    "llama-3.1-8b": LlamaConfig(
        128256, 4096, 32, 32, 8, 14336, rope_base=500000.0, norm_eps=1e-5, max_seq_len=16384,
        dtype="bfloat16",
    ),
}  # fmt: skip


@struct.dataclass
class KVCache:
    """Keys/values of all layers, k/v: [layers, B, capacity, kv_heads, head_dim].

    `length` counts the filled positions."""

    k: jax.Array
    v: jax.Array
    length: jax.Array  # int32 scalar

    @classmethod
    def empty(cls, cfg: LlamaConfig, batch: int, capacity: int) -> KVCache:
        if capacity > cfg.max_seq_len:
            raise ValueError(f"cache capacity {capacity} exceeds max_seq_len={cfg.max_seq_len}")
        shape = (cfg.num_layers, batch, capacity, cfg.num_kv_heads, cfg.resolved_head_dim)
        zeros = jnp.zeros(shape, jnp.dtype(cfg.dtype))
        return cls(zeros, zeros, jnp.zeros((), jnp.int32))


class RMSNorm(nnx.Module):
    def __init__(self, dim: int, eps: float):
        self.weight = nnx.Param(jnp.ones((dim,), jnp.float32))
        self.eps = eps

    def __call__(self, x: jax.Array) -> jax.Array:
        """x / sqrt(mean(x^2) + eps) * w, computed in float32."""
        x32 = x.astype(jnp.float32)
        x32 = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + self.eps)
        return (x32 * self.weight[...]).astype(x.dtype)


def rope_angles(positions: jax.Array, head_dim: int, base: float) -> tuple[jax.Array, jax.Array]:
    """positions [B, T] -> cos, sin [B, T, 1, head_dim] (frequencies repeated for both halves)."""
    inv_freq = base ** (-jnp.arange(0, head_dim, 2, dtype=jnp.float32) / head_dim)
    angles = positions.astype(jnp.float32)[..., None] * inv_freq
    angles = jnp.concatenate([angles, angles], axis=-1)[:, :, None, :]
    return jnp.cos(angles), jnp.sin(angles)


def apply_rope(x: jax.Array, cos: jax.Array, sin: jax.Array) -> jax.Array:
    """HF `rotate_half` RoPE: x [B, T, N, H] rotated on pairs (i, i + H/2)."""
    half = x.shape[-1] // 2
    rotated = jnp.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return (x.astype(jnp.float32) * cos + rotated.astype(jnp.float32) * sin).astype(x.dtype)


def _linear(din: int, dout: int, cfg: LlamaConfig, rngs: nnx.Rngs) -> nnx.Linear:
    return nnx.Linear(
        din,
        dout,
        use_bias=False,
        kernel_init=nnx.initializers.normal(cfg.init_std),
        dtype=jnp.dtype(cfg.dtype),
        rngs=rngs,
    )


class Attention(nnx.Module):
    def __init__(self, cfg: LlamaConfig, *, rngs: nnx.Rngs, attention_fn: AttentionFn):
        h = cfg.resolved_head_dim
        self.q_proj = _linear(cfg.dim, cfg.num_heads * h, cfg, rngs)
        self.k_proj = _linear(cfg.dim, cfg.num_kv_heads * h, cfg, rngs)
        self.v_proj = _linear(cfg.dim, cfg.num_kv_heads * h, cfg, rngs)
        self.o_proj = _linear(cfg.num_heads * h, cfg.dim, cfg, rngs)
        self.cfg = cfg
        self.attention_fn = attention_fn
        self.causal_fn = causal_attention(cfg.attention, cfg.attention_impl)

    def __call__(self, x, cos, sin, mask, kv=None, start=None, padded=False):
        """x [B, T, D]; kv: this layer's cached (k, v) [B, S, K, H] written at `start`.
        `padded`: the mask also hides pad keys, so the causal-only fast paths do not apply.

        Returns the output [B, T, D] and the updated (k, v) (None without a cache)."""
        b, t, _ = x.shape
        q, k, v = self.project(x, cos, sin)
        out, kv = self.mix(q, k, v, mask, kv, start, padded)
        return self.o_proj(out.reshape(b, t, -1)), kv

    def project(self, x, cos, sin):
        """x [B, T, D] -> q [B, T, N, H], k/v [B, T, K, H], with RoPE on q and k."""
        b, t, _ = x.shape
        cfg, h = self.cfg, self.cfg.resolved_head_dim
        q = apply_rope(self.q_proj(x).reshape(b, t, cfg.num_heads, h), cos, sin)
        k = apply_rope(self.k_proj(x).reshape(b, t, cfg.num_kv_heads, h), cos, sin)
        v = self.v_proj(x).reshape(b, t, cfg.num_kv_heads, h)
        return q, k, v

    def mix(self, q, k, v, mask, kv=None, start=None, padded=False):
        """Each head's output before o_proj, [B, T, N, H], and the updated cache (k, v)."""
        cfg = self.cfg
        if kv is not None:
            k = jax.lax.dynamic_update_slice(kv[0], k.astype(kv[0].dtype), (0, start, 0, 0))
            v = jax.lax.dynamic_update_slice(kv[1], v.astype(kv[1].dtype), (0, start, 0, 0))
            kv = (k, v)
        causal_only = kv is None and not padded  # the mask is the causal triangle, nothing more
        if causal_only and self.causal_fn is not None:
            out = self.causal_fn(q, k, v)  # FP4 attention takes the K/V heads as they are
        elif self.attention_fn is dot_product_attention:  # the same function, K/V unrepeated
            if causal_only:
                out = causal_grouped_attention(q, k, v)  # skips the blocks above the diagonal
            else:
                out = grouped_attention(q, k, v, mask)
        else:
            groups = cfg.num_heads // cfg.num_kv_heads  # query head j reads kv head j // groups
            k, v = jnp.repeat(k, groups, 2), jnp.repeat(v, groups, 2)
            out = self.attention_fn(q, k, v, mask)
        return out, kv


class SwiGLU(nnx.Module):
    def __init__(self, cfg: LlamaConfig, *, rngs: nnx.Rngs):
        self.gate_proj = _linear(cfg.dim, cfg.ffn_dim, cfg, rngs)
        self.up_proj = _linear(cfg.dim, cfg.ffn_dim, cfg, rngs)
        self.down_proj = _linear(cfg.ffn_dim, cfg.dim, cfg, rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.down_proj(jax.nn.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderBlock(nnx.Module):
    def __init__(self, cfg: LlamaConfig, *, rngs: nnx.Rngs, attention_fn: AttentionFn):
        self.input_layernorm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.self_attn = Attention(cfg, rngs=rngs, attention_fn=attention_fn)
        self.post_attention_layernorm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.mlp = SwiGLU(cfg, rngs=rngs)

    def __call__(self, x, cos, sin, mask, kv=None, start=None, padded=False):
        a, kv = self.self_attn(self.input_layernorm(x), cos, sin, mask, kv, start, padded)
        x = x + a
        return x + self.mlp(self.post_attention_layernorm(x)), kv


class Llama(nnx.Module):
    """tokens [B, T] int -> logits [B, T, vocab] (float32)."""

    def __init__(
        self,
        cfg: LlamaConfig,
        *,
        rngs: nnx.Rngs,
        attention_fn: AttentionFn = dot_product_attention,
    ):
        if cfg.attention != "dot_product" and attention_fn is not dot_product_attention:
            raise ValueError(
                f"attention={cfg.attention!r} and a custom attention_fn both set the attention; "
                "keep attention='dot_product' to use attention_fn"
            )
        self.cfg = cfg
        self.embed_tokens = nnx.Embed(
            cfg.vocab_size,
            cfg.dim,
            embedding_init=nnx.initializers.normal(cfg.init_std),
            dtype=jnp.dtype(cfg.dtype),
            rngs=rngs,
        )
        self.layers = nnx.List(
            [DecoderBlock(cfg, rngs=rngs, attention_fn=attention_fn) for _ in range(cfg.num_layers)]
        )
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.lm_head = None if cfg.tie_embeddings else _linear(cfg.dim, cfg.vocab_size, cfg, rngs)

    def __call__(
        self,
        tokens: jax.Array,
        *,
        cache: KVCache | None = None,
        positions: jax.Array | None = None,
        key_valid: jax.Array | None = None,
        embeddings: jax.Array | None = None,
    ) -> jax.Array | tuple[jax.Array, KVCache]:
        """Without a cache: causal attention over `tokens`, positions 0..T-1, returns logits.

        With a cache: `tokens` sit in slots cache.length .. cache.length+T-1 and attend to
        every filled cache slot; returns (logits, cache advanced by T).

        Left-padded rows: `positions` [B, T] int gives each token's RoPE position (0 at the
        row's first real token; default: its slot) and `key_valid` [B, S] bool marks the real
        key slots (S = T without a cache, the cache capacity with one), so no query attends to a
        pad. Queries at pad slots see no key; their outputs are finite and meaningless as long
        as pad slots hold in-vocabulary ids (an out-of-range id embeds as NaN).

        `embeddings` [B, T, D] replace the lookup of `tokens` (gradients and continuous
        optimization with respect to the input embeddings; `tokens` still gives the shape)."""
        t = tokens.shape[1]
        cos, sin, mask, start = self.positional(tokens, cache, positions, key_valid)
        padded = key_valid is not None
        x = self.embed_tokens(tokens) if embeddings is None else embeddings
        new_k, new_v = [], []
        for i, layer in enumerate(self.layers):
            kv = None if cache is None else (cache.k[i], cache.v[i])
            x, kv = layer(x, cos, sin, mask, kv, start, padded)
            if kv is not None:
                new_k.append(kv[0])
                new_v.append(kv[1])
        logits = self.unembed(x)
        if cache is None:
            return logits
        return logits, KVCache(jnp.stack(new_k), jnp.stack(new_v), cache.length + t)

    def positional(self, tokens, cache=None, positions=None, key_valid=None):
        """RoPE cos/sin [B, T, 1, H], the attention mask ([1|B, 1, T, S], True = attend) and
        the first slot of `tokens` (the arguments as in `__call__`)."""
        b, t = tokens.shape
        if cache is None and t > self.cfg.max_seq_len:
            raise ValueError(f"sequence length {t} exceeds max_seq_len={self.cfg.max_seq_len}")
        padded = key_valid is not None
        if padded and cache is None and self.cfg.attention != "dot_product":
            raise ValueError(
                f"attention={self.cfg.attention!r} takes no padding mask: run padded batches "
                "with attention='dot_product' (or with a KV cache, which always uses it)"
            )
        start = jnp.zeros((), jnp.int32) if cache is None else cache.length
        slots = start + jnp.arange(t)
        if positions is None:
            positions = jnp.broadcast_to(slots, (b, t))
        cos, sin = rope_angles(positions, self.cfg.resolved_head_dim, self.cfg.rope_base)
        keys = jnp.arange(t if cache is None else cache.k.shape[2])
        # [1, 1, T, S]; causal in slots, which is causal in positions for padded rows too
        mask = (keys[None, :] <= slots[:, None])[None, None]  # [1, 1, T, S]
        if padded:
            mask = mask & key_padding_mask(key_valid)  # [B, 1, T, S]
        return cos, sin, mask, start

    def unembed(self, x: jax.Array) -> jax.Array:
        """Final residual stream [B, T, D] -> float32 logits [B, T, vocab]."""
        x = self.norm(x)
        logits = self.embed_tokens.attend(x) if self.lm_head is None else self.lm_head(x)
        return logits.astype(jnp.float32)


def count_params(model: nnx.Module) -> int:
    return sum(x.size for x in jax.tree.leaves(nnx.state(model, nnx.Param)))


def next_token_loss(logits: jax.Array, targets: jax.Array) -> jax.Array:
    """Mean cross-entropy in nats; logits [B, T, V], targets [B, T] int."""
    logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))
