"""Masked-reconstruction detectors in Flax NNX: one temporal encoder, three channel couplings.

x [B, T, C] is cut per channel into patches of `patch` steps; a channel-independent Transformer
encodes each channel's N = T / patch tokens; a coupling layer mixes channels at each patch
position; a linear head reconstructs the patch values.
  coupling "none":      channel-independent (baseline)
  coupling "symmetric": all-to-all self-attention over channels (baseline)
  coupling "role":      Reconstruction (not confirmed by the paper) of TeamWork's role-aware gated
      interaction: h_D <- h_D + MHA(q=h_D, kv=h_D); msg_a = MHA(q=h_a, kv=h_D);
      g_a = sigmoid(W_g [h_a; msg_a] + b_g); h_a <- h_a + g_a * msg_a. Keys are restricted to
      dominant channels, so nothing flows auxiliary -> dominant (asymmetry). `gate=False` is the
      no-gate ablation (g = 1).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax
import jax.numpy as jnp
from flax import nnx

from shared.config import PositiveInt
from shared.models.attention import dot_product_attention
from shared.models.transformer import EncoderBlock, TransformerEncoder

Coupling = Literal["none", "symmetric", "role"]


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    d_model: PositiveInt = 32  # token width
    num_heads: PositiveInt = 4  # attention heads (temporal and channel attention)
    num_layers: PositiveInt = 1  # temporal Transformer layers per channel
    ff_dim: PositiveInt = 64  # feed-forward width
    patch: PositiveInt = 10  # steps per token (10, not 4: 2.5x fewer tokens on 2 CPU cores)


class CrossAttention(nnx.Module):
    """Multi-head attention of queries xq over keys/values xkv restricted by `key_ok`."""

    def __init__(self, dim: int, num_heads: int, *, rngs: nnx.Rngs):
        self.num_heads = num_heads
        self.q = nnx.Linear(dim, dim, rngs=rngs)
        self.kv = nnx.Linear(dim, 2 * dim, rngs=rngs)
        self.out = nnx.Linear(dim, dim, rngs=rngs)

    def __call__(self, xq: jax.Array, xkv: jax.Array, key_ok: jax.Array) -> jax.Array:
        """xq, xkv: [B, S, D]; key_ok: [S] bool -> [B, S, D]."""
        b, s, d = xq.shape
        h = self.num_heads
        q = self.q(xq).reshape(b, s, h, d // h)
        k, v = jnp.split(self.kv(xkv).reshape(b, s, 2 * h, d // h), 2, 2)
        return self.out(
            dot_product_attention(q, k, v, key_ok[None, None, None, :]).reshape(b, s, d)
        )


class RoleInteraction(nnx.Module):
    """Reconstruction of the role-aware gated interaction (see module docstring)."""

    def __init__(self, dim: int, num_heads: int, ff_dim: int, gate: bool, *, rngs: nnx.Rngs):
        self.norm = nnx.LayerNorm(dim, rngs=rngs)
        self.dom_attn = CrossAttention(dim, num_heads, rngs=rngs)
        self.aux_attn = CrossAttention(dim, num_heads, rngs=rngs)
        self.gate = nnx.Linear(2 * dim, dim, rngs=rngs) if gate else None
        self.norm2 = nnx.LayerNorm(dim, rngs=rngs)
        self.ff1 = nnx.Linear(dim, ff_dim, rngs=rngs)
        self.ff2 = nnx.Linear(ff_dim, dim, rngs=rngs)

    def __call__(self, h: jax.Array, is_dom: jax.Array) -> jax.Array:
        """h: [B', C, D] (B' = batch x patches); is_dom: [C] bool -> [B', C, D]."""
        hn = self.norm(h)
        dom_update = self.dom_attn(hn, hn, is_dom)  # every query reads dominant keys only
        msg = self.aux_attn(hn, hn, is_dom)
        if self.gate is not None:
            msg = jax.nn.sigmoid(self.gate(jnp.concatenate([hn, msg], -1))) * msg
        h = h + jnp.where(is_dom[None, :, None], dom_update, msg)
        # per-token feed-forward: channel-wise, so it keeps the asymmetry
        return h + self.ff2(nnx.gelu(self.ff1(self.norm2(h))))


class MaskedReconstructor(nnx.Module):
    def __init__(
        self,
        cfg: ModelConfig,
        window: int,
        channels: int,
        coupling: Coupling,
        gate: bool = True,
        *,
        rngs: nnx.Rngs,
    ):
        if window % cfg.patch:
            raise ValueError(f"window={window} must be a multiple of model.patch={cfg.patch}")
        d = cfg.d_model
        self.cfg, self.coupling = cfg, coupling
        # input per patch: values and the mask indicator, so masked zeros are not read as data
        self.embed = nnx.Linear(2 * cfg.patch, d, rngs=rngs)
        self.pos = nnx.Param(0.02 * jax.random.normal(rngs.params(), (window // cfg.patch, d)))
        self.chan = nnx.Param(0.02 * jax.random.normal(rngs.params(), (channels, d)))
        self.temporal = TransformerEncoder(cfg.num_layers, d, cfg.num_heads, cfg.ff_dim, rngs=rngs)
        if coupling == "symmetric":
            self.mix = EncoderBlock(d, cfg.num_heads, cfg.ff_dim, rngs=rngs)
        elif coupling == "role":
            self.mix = RoleInteraction(d, cfg.num_heads, cfg.ff_dim, gate, rngs=rngs)
        elif coupling != "none":
            raise ValueError(f"coupling={coupling!r}: choose none, symmetric or role")
        self.norm = nnx.LayerNorm(d, rngs=rngs)
        self.head = nnx.Linear(d, cfg.patch, rngs=rngs)

    def __call__(self, x: jax.Array, mask: jax.Array, is_dom: jax.Array) -> jax.Array:
        """x, mask: [B, T, C] (mask True = hidden); is_dom: [C] bool -> reconstruction [B, T, C]."""
        b, t, c = x.shape
        p, n = self.cfg.patch, t // self.cfg.patch
        inp = jnp.stack([jnp.where(mask, 0.0, x), mask.astype(x.dtype)], -1)  # [B, T, C, 2]
        tok = inp.reshape(b, n, p, c, 2).transpose(0, 3, 1, 2, 4).reshape(b, c, n, 2 * p)
        h = self.embed(tok) + self.pos[None, None] + self.chan[None, :, None]  # [B, C, N, D]
        h = self.temporal(h.reshape(b * c, n, -1)).reshape(b, c, n, -1)
        if self.coupling != "none":
            hc = h.transpose(0, 2, 1, 3).reshape(b * n, c, -1)
            hc = self.mix(hc, is_dom) if self.coupling == "role" else self.mix(hc)
            h = hc.reshape(b, n, c, -1).transpose(0, 2, 1, 3)
        out = self.head(self.norm(h))  # [B, C, N, P]
        return out.transpose(0, 2, 3, 1).reshape(b, t, c)
