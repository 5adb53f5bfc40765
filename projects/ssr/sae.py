"""TopK sparse autoencoder over token embeddings (as openai/sparse_autoencoder's model.py).

  a = W_enc (x − b_pre) + b_lat ;  z = ReLU(TopK_k(a)) (the k largest pre-activations, ReLU on
  them, zeros elsewhere: z ≥ 0, ‖z‖₀ ≤ k) ;  x̂ = W_dec z + b_pre
  L_rec = ‖x − x̂‖² / ‖x − mean(x)‖² (normalized MSE over the batch)
  L_aux = the same for the residual e = x − x̂ (held fixed) rebuilt from the top-k_aux
          pre-activations of the dead latents (no firing in the last `dead_after` tokens), weight
          `aux_weight`; it pulls dead latents back into use.
Decoder rows are kept at unit norm after every step (the scale lives in the encoder).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
from flax import nnx


class TopKSAE(nnx.Module):
    def __init__(self, dim: int, width: int, k: int, *, rngs: nnx.Rngs, relu: bool = True):
        if not 0 < k <= width:
            raise ValueError(f"k={k} must be in 1..width={width}")
        w = jax.random.normal(rngs.params(), (width, dim)) / np.sqrt(dim)
        w = w / jnp.linalg.norm(w, axis=1, keepdims=True)
        self.w_dec = nnx.Param(w)  # [width, dim], unit rows
        self.w_enc = nnx.Param(w.T)  # [dim, width], tied at init
        self.b_pre = nnx.Param(jnp.zeros(dim))
        self.b_lat = nnx.Param(jnp.zeros(width))
        self.k, self.width, self.relu = k, width, relu

    def pre_activations(self, x: jax.Array) -> jax.Array:
        return (x - self.b_pre[...]) @ self.w_enc[...] + self.b_lat[...]

    def topk(self, a: jax.Array, k: int | None = None) -> tuple[jax.Array, jax.Array]:
        """(values, latent ids) [..., k] of the k largest pre-activations, ReLU applied."""
        vals, ids = jax.lax.top_k(a, self.k if k is None else k)
        return (jax.nn.relu(vals) if self.relu else vals), ids

    def encode(self, x: jax.Array) -> jax.Array:
        """Dense codes [..., width]."""
        vals, ids = self.topk(self.pre_activations(x))
        return _scatter(vals, ids, self.width)

    def decode(self, z: jax.Array) -> jax.Array:
        """Dense codes [..., width] -> reconstructions [..., dim]."""
        return z @ self.w_dec[...] + self.b_pre[...]

    def decode_topk(self, vals: jax.Array, ids: jax.Array) -> jax.Array:
        """The same from the k (value, latent) pairs: k decoder rows instead of all of them."""
        return jnp.einsum("...k,...kd->...d", vals, self.w_dec[...][ids]) + self.b_pre[...]

    def __call__(self, x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        """(reconstruction, dense codes, pre-activations)."""
        a = self.pre_activations(x)
        vals, ids = self.topk(a)
        return self.decode_topk(vals, ids), _scatter(vals, ids, self.width), a


def _scatter(vals: jax.Array, ids: jax.Array, width: int) -> jax.Array:
    flat_v, flat_i = vals.reshape(-1, vals.shape[-1]), ids.reshape(-1, ids.shape[-1])
    out = jnp.zeros((flat_v.shape[0], width), vals.dtype)
    out = out.at[jnp.arange(flat_v.shape[0])[:, None], flat_i].set(flat_v)
    return out.reshape(*vals.shape[:-1], width)


def normalized_mse(x_hat: jax.Array, x: jax.Array) -> jax.Array:
    return jnp.sum((x_hat - x) ** 2) / jnp.maximum(jnp.sum((x - x.mean(0)) ** 2), 1e-12)


def sae_losses(
    sae: TopKSAE, x: jax.Array, dead: jax.Array, aux_k: int
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(L_rec, L_aux, fired [width] bool) for a batch x [n, dim]; dead: [width] bool. L_aux is
    computed only when some latent is dead (the dead-latent TopK costs as much as the rest)."""
    a = sae.pre_activations(x)
    vals, ids = sae.topk(a)
    x_hat = sae.decode_topk(vals, ids)
    rec = normalized_mse(x_hat, x)
    e = jax.lax.stop_gradient(x - x_hat)

    def aux_loss(a):
        v, i = sae.topk(jnp.where(dead, a, -jnp.inf), min(aux_k, sae.width))
        v = jnp.where(jnp.isfinite(v), v, 0.0)  # fewer dead latents than aux_k
        return normalized_mse(sae.decode_topk(v, i) - sae.b_pre[...], e)

    aux = jax.lax.cond(dead.any(), aux_loss, lambda a: jnp.zeros((), a.dtype), a)
    fired = jnp.zeros(sae.width, bool).at[ids.ravel()].max(vals.ravel() > 0)
    return rec, aux, fired


def unit_norm_decoder(sae: TopKSAE) -> None:
    w = sae.w_dec[...]
    sae.w_dec[...] = w / jnp.maximum(jnp.linalg.norm(w, axis=1, keepdims=True), 1e-12)


@functools.partial(jax.jit, static_argnums=0)
def _topk_codes(graphdef: nnx.GraphDef, state: nnx.State, xb: jax.Array):
    m = nnx.merge(graphdef, state)
    return m.topk(m.pre_activations(xb))


def sparse_codes(sae: TopKSAE, x: np.ndarray, batch: int = 8192) -> sp.csr_matrix:
    """Codes of x [n, dim] as a CSR matrix [n, width] (k stored entries per row, zeros dropped).
    Every batch is padded to `batch` rows, so one compilation serves every call."""
    graphdef, state = nnx.split(sae)
    vals, ids = [], []
    for s in range(0, len(x), batch):
        xb = np.zeros((batch, x.shape[1]), np.float32)
        n = len(x[s : s + batch])
        xb[:n] = x[s : s + batch]
        v, i = _topk_codes(graphdef, state, jnp.asarray(xb))
        vals.append(np.asarray(v)[:n])
        ids.append(np.asarray(i)[:n])
    v, i = (np.concatenate(a) if a else np.zeros((0, sae.k)) for a in (vals, ids))
    indptr = np.arange(0, v.size + 1, sae.k)
    z = sp.csr_matrix((v.ravel(), i.ravel(), indptr), shape=(len(x), sae.width))
    z.eliminate_zeros()
    z.sort_indices()
    return z
