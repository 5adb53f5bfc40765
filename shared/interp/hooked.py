"""The decoder's forward pass with its insides exposed: `trace`.

`trace` walks the model's own modules (the same `project`, `mix`, `o_proj`, norms and MLPs as
`Llama.__call__`), so without an intervention its logits equal the plain forward bit for bit,
and the plain forward itself carries no hook at all. Everything is a pure function of arrays:
wrap it in `nnx.jit` (or split the model and `jax.jit`) and `vmap` over intervention arrays.

Captured names (each stacked over layers, `L` first):
  resid_pre  [L, B, T, D]  residual stream entering block l (before its norm)
  attn_out   [L, B, T, D]  the attention update added back (o_proj of the heads)
  resid_mid  [L, B, T, D]  resid_pre + attn_out
  ffn_out    [L, B, T, D]  the FFN update added back
  resid_post [L, B, T, D]  resid_mid + ffn_out (= resid_pre of block l + 1)
  heads      [L, B, T, N, H]  each head's output before o_proj (after any patch)
  probs      [L, B, N, T, S]  the attention probabilities used (after any override)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from shared.interp.intervention import AttentionOverride, Intervention
from shared.models.attention import dot_product_attention
from shared.models.llama import Llama

CAPTURABLE = ("resid_pre", "attn_out", "resid_mid", "ffn_out", "resid_post", "heads", "probs")


def _repeat_kv(k: jax.Array, groups: int) -> jax.Array:
    return k if groups == 1 else jnp.repeat(k, groups, 2)


def attention_probs(q: jax.Array, k: jax.Array, mask: jax.Array) -> jax.Array:
    """softmax(q k^T / sqrt(H)) over the visible keys: q [B, T, N, H], k [B, S, N, H],
    mask broadcastable to [B, N, T, S] -> [B, N, T, S] float32."""
    logits = jnp.einsum("BTNH,BSNH->BNTS", q, k).astype(jnp.float32) / jnp.sqrt(q.shape[-1])
    return jax.nn.softmax(jnp.where(mask, logits, jnp.finfo(jnp.float32).min), axis=-1)


def override_probs(probs: jax.Array, mask: jax.Array, spec: AttentionOverride) -> jax.Array:
    """The model's probabilities [B, N, T, S] with the entries `spec.where` replaced."""
    where = spec.where & mask
    new = jnp.where(where, spec.probs, 0.0)
    if spec.keep_mass:  # the replaced entries keep the row mass the model gave them
        mass_model = jnp.sum(jnp.where(where, probs, 0.0), axis=-1, keepdims=True)
        mass_new = jnp.sum(new, axis=-1, keepdims=True)
        new = new * jnp.where(mass_new > 0, mass_model / jnp.where(mass_new > 0, mass_new, 1), 0)
    return jnp.where(where, new, probs)


def trace(
    model: Llama,
    tokens: jax.Array,
    *,
    intervention: Intervention | None = None,
    capture: tuple[str, ...] = (),
    positions: jax.Array | None = None,
    key_valid: jax.Array | None = None,
    embeddings: jax.Array | None = None,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """tokens [B, T] -> (logits [B, T, vocab] float32, {name: stacked activations}).

    The arguments `positions`, `key_valid` and `embeddings` mean what they mean for
    `Llama.__call__` (cache-free forward only)."""
    unknown = sorted(set(capture) - set(CAPTURABLE))
    if unknown:
        raise ValueError(f"capture names {unknown} are unknown; choose from {CAPTURABLE}")
    iv = intervention or Intervention()
    cfg = model.cfg
    explicit = bool(iv.attention) or "probs" in capture
    if explicit and (
        cfg.attention != "dot_product"
        or model.layers[0].self_attn.attention_fn is not dot_product_attention
    ):
        raise ValueError(
            "attention probabilities exist only for dot-product attention: build the model with "
            "attention='dot_product' and the default attention_fn to override or capture them"
        )
    overrides = iv.attention or {}
    bad = sorted(k for k in overrides if not 0 <= k < cfg.num_layers)
    if bad:
        raise ValueError(f"attention override layers {bad} outside 0..{cfg.num_layers - 1}")
    cos, sin, mask, _ = model.positional(tokens, None, positions, key_valid)
    padded = key_valid is not None
    groups = cfg.num_heads // cfg.num_kv_heads
    x = model.embed_tokens(tokens) if embeddings is None else embeddings
    store: dict[str, list[jax.Array]] = {name: [] for name in capture}

    def keep(name: str, value: jax.Array) -> None:
        if name in store:
            store[name].append(value)

    for i, layer in enumerate(model.layers):
        if iv.steer is not None:
            x = x + iv.steer[i].astype(x.dtype)
        keep("resid_pre", x)
        attn = layer.self_attn
        b, t, _ = x.shape
        q, k, v = attn.project(layer.input_layernorm(x), cos, sin)
        if i in overrides or "probs" in capture:
            probs = attention_probs(q, _repeat_kv(k, groups), mask)
        if i in overrides:
            probs = override_probs(probs, mask, overrides[i])
            heads = jnp.einsum("BNTS,BSNH->BTNH", probs.astype(v.dtype), _repeat_kv(v, groups))
        else:
            heads, _ = attn.mix(q, k, v, mask, None, None, padded)
        if iv.head_mask is not None:
            heads = jnp.where(
                iv.head_mask[i][..., None], iv.head_values[i].astype(heads.dtype), heads
            )
        keep("heads", heads)
        if "probs" in capture:
            keep("probs", probs)
        a = attn.o_proj(heads.reshape(b, t, -1))
        keep("attn_out", a)
        x = x + a
        keep("resid_mid", x)
        f = layer.mlp(layer.post_attention_layernorm(x))
        keep("ffn_out", f)
        x = x + f
        keep("resid_post", x)
    return model.unembed(x), {name: jnp.stack(vals) for name, vals in store.items()}
