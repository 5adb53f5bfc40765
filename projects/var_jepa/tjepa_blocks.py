"""The official T-JEPA transformer layer, made fast on CPU (project-local; shared/ is unchanged).

Math = `torch.nn.TransformerEncoderLayer` as T-JEPA uses it (post-LN, ReLU FFN, LayerNorm eps
1e-5, dropout p on the attention probabilities, on the attention output, on the FFN hidden layer
and on the FFN output). Two things make it fast on a 2-core CPU, both measured
(projects/var_jepa/README.md, "Throughput"):

- Dropout masks are drawn sparsely. XLA's CPU random bits cost ~20 ns per element (threefry and
  rbg alike), which at p ~ 0.002 is almost all wasted. `drop_mask` draws the gaps between dropped
  elements instead: iid Geometric(p) gaps (inverse CDF of jax.random.uniform), cumulated into
  flat positions and scattered into a boolean mask. That is exactly an iid Bernoulli(p) mask,
  except for two truncations: gaps beyond ~16.6/p (float32 uniforms, probability < 1e-7 per drop)
  and more than `mean + 10 sd + 16` drops per mask (probability < 1e-20).
- The FFN backward runs over blocks of tokens (`ffn`, a `custom_vjp`): the [tokens, ff_dim]
  hidden activation is recomputed per block of 512 tokens in cache instead of being written,
  read and masked in memory; on the small predictor (ff_dim 256, width 16) this is 2.3x faster.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
from flax import nnx

from shared.models.layers import split_key
from shared.models.transformer import TransformerEncoder

LN_EPS = 1e-5  # torch.nn.LayerNorm's default, used by every T-JEPA norm
FFN_BLOCK = 512  # tokens per block of the FFN backward (512 and 1024 measured best)


def drop_mask(key: jax.Array, shape: tuple[int, ...], rate: float) -> jax.Array:
    """Boolean mask of `shape`, True where dropped, iid Bernoulli(rate) (see module docstring)."""
    n = math.prod(shape)
    mean = n * rate
    k = int(math.ceil(mean + 10.0 * math.sqrt(mean) + 16.0))
    u = jax.random.uniform(key, (k,), jnp.float32)  # [0, 1)
    # Geometric(rate) number of kept elements before each dropped one (inverse CDF).
    gaps = jnp.floor(jnp.log1p(-u) / jnp.log1p(-jnp.float32(rate)))
    gaps = jnp.minimum(gaps, n).astype(jnp.int32)  # keeps the cumulative sum in int32
    pos = jnp.cumsum(gaps + 1) - 1
    return jnp.zeros((n,), bool).at[pos].set(True, mode="drop").reshape(shape)


def dropout(x: jax.Array, rate: float, key: jax.Array | None) -> jax.Array:
    """Inverted dropout with a sparse mask; the identity when `key` is None or `rate` is 0."""
    if key is None or rate == 0.0:
        return x
    return jnp.where(drop_mask(key, x.shape, rate), 0.0, x * (1.0 / (1.0 - rate))).astype(x.dtype)


def _ffn_forward(x, w1, b1, w2, b2, hidden_scale):
    h = jnp.maximum(x @ w1 + b1, 0.0)
    if hidden_scale is not None:
        h = h * hidden_scale
    return h @ w2 + b2


@functools.partial(jax.custom_vjp, nondiff_argnums=(6,))
def _ffn(x, w1, b1, w2, b2, dropped, rate):
    """x: [N, D] -> [N, D]; `dropped`: [N, F] bool mask of the hidden layer (or None)."""
    return _ffn_forward(x, w1, b1, w2, b2, _hidden_scale(dropped, rate))


def _hidden_scale(dropped, rate):
    if dropped is None:
        return None
    return jnp.where(dropped, 0.0, 1.0 / (1.0 - rate))


def _ffn_fwd(x, w1, b1, w2, b2, dropped, rate):
    return _ffn(x, w1, b1, w2, b2, dropped, rate), (x, w1, b1, w2, dropped)


def _ffn_bwd(rate, res, g):
    x, w1, b1, w2, dropped = res
    n = x.shape[0]
    blk = min(FFN_BLOCK, n)
    c = -(-n // blk)
    pad = c * blk - n

    def blocks(a):
        return jnp.pad(a, ((0, pad), (0, 0))).reshape(c, blk, a.shape[1])

    xs = (blocks(x), blocks(g)) + (() if dropped is None else (blocks(dropped),))

    def body(acc, xg):
        xb, gb = xg[0], xg[1]
        pre = xb @ w1 + b1
        h = jnp.maximum(pre, 0.0)
        gh = gb @ w2.T
        if dropped is not None:
            s = _hidden_scale(xg[2], rate)
            h, gh = h * s, gh * s
        gp = jnp.where(pre > 0, gh, 0.0)
        dw1, db1, dw2 = acc
        return (dw1 + xb.T @ gp, db1 + gp.sum(0), dw2 + h.T @ gb), gp @ w1.T

    init = (jnp.zeros_like(w1), jnp.zeros_like(b1), jnp.zeros_like(w2))
    (dw1, db1, dw2), dx = jax.lax.scan(body, init, xs)
    ddrop = None if dropped is None else jnp.zeros(dropped.shape, jax.dtypes.float0)
    return dx.reshape(c * blk, -1)[:n], dw1, db1, dw2, g.sum(0), ddrop


_ffn.defvjp(_ffn_fwd, _ffn_bwd)


def ffn(x: jax.Array, fc1: nnx.Linear, fc2: nnx.Linear, rate: float, key: jax.Array | None):
    """relu(x W1 + b1) -> dropout -> W2 + b2, for x [..., D]; blocked backward (module doc)."""
    shape = x.shape
    x2 = x.reshape(-1, shape[-1])
    dropped = None
    if key is not None and rate > 0.0:
        dropped = drop_mask(key, (x2.shape[0], fc1.kernel.shape[1]), rate)
    y = _ffn(x2, fc1.kernel[...], fc1.bias[...], fc2.kernel[...], fc2.bias[...], dropped, rate)
    return y.reshape(shape)


def attention(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    valid: jax.Array | None,
    rate: float,
    key: jax.Array | None,
) -> jax.Array:
    """q, k, v: [B, S, N, H]; valid: [B, S] (False = padding key) -> [B, S, N, H].
    Dropout on the attention probabilities, as torch's scaled_dot_product_attention."""
    logits = jnp.einsum("BTNH,BSNH->BNTS", q, k) / jnp.sqrt(jnp.float32(q.shape[-1]))
    if valid is not None:
        logits = jnp.where(valid[:, None, None, :], logits, jnp.finfo(jnp.float32).min)
    weights = dropout(jax.nn.softmax(logits, axis=-1), rate, key)
    return jnp.einsum("BNTS,BSNH->BTNH", weights, v)


class PostLNBlock(nnx.Module):
    """x = LN1(x + drop(MHA(x))); x = LN2(x + drop(FFN(x))), as torch's default layer."""

    def __init__(self, dim: int, num_heads: int, ff_dim: int, rate: float, *, rngs: nnx.Rngs):
        if dim % num_heads:
            raise ValueError(f"dim={dim} must be divisible by num_heads={num_heads}")
        self.num_heads = num_heads
        self.qkv = nnx.Linear(dim, 3 * dim, rngs=rngs)
        self.out = nnx.Linear(dim, dim, rngs=rngs)
        self.ff1 = nnx.Linear(dim, ff_dim, rngs=rngs)
        self.ff2 = nnx.Linear(ff_dim, dim, rngs=rngs)
        self.norm1 = nnx.LayerNorm(dim, epsilon=LN_EPS, rngs=rngs)
        self.norm2 = nnx.LayerNorm(dim, epsilon=LN_EPS, rngs=rngs)
        self.rate = rate

    def __call__(
        self, x: jax.Array, *, valid: jax.Array | None = None, key: jax.Array | None = None
    ) -> jax.Array:
        """x: [B, S, D]; valid: [B, S] bool (padding = False) -> [B, S, D]."""
        b, s, d = x.shape
        k_att, k_out, k_hid, k_ff = split_key(key, 4)
        with jax.named_scope("attention"):
            q, k, v = jnp.split(
                self.qkv(x).reshape(b, s, 3 * self.num_heads, d // self.num_heads), 3, 2
            )
            a = self.out(attention(q, k, v, valid, self.rate, k_att).reshape(b, s, d))
        x = self.norm1(x + dropout(a, self.rate, k_out))
        with jax.named_scope("ffn"):
            f = ffn(x, self.ff1, self.ff2, self.rate, k_hid)
        return self.norm2(x + dropout(f, self.rate, k_ff))


class PostLNEncoder(TransformerEncoder):
    """A stack of `PostLNBlock`s (torch.nn.TransformerEncoder without a final norm); the
    shared encoder's forward runs the blocks."""

    def __init__(
        self, num_layers: int, dim: int, num_heads: int, ff_dim: int, rate: float, *, rngs
    ):
        self.blocks = nnx.List(
            [PostLNBlock(dim, num_heads, ff_dim, rate, rngs=rngs) for _ in range(num_layers)]
        )
