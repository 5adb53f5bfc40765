"""Training the TopK SAE on token vectors: Adam on L_rec + aux_weight · L_aux (+ λ · InfoNCE over
MaxSim of the codes of (query, document) pairs, in-batch negatives), unit-norm decoder rows after
each step, dead latents tracked in tokens since they last fired."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from projects.ssr.projection import batch_maxsim, info_nce
from projects.ssr.sae import TopKSAE, sae_losses, unit_norm_decoder

Pairs = Callable[[np.random.Generator], tuple[np.ndarray, ...]]


def train_sae(
    sae: TopKSAE, x: np.ndarray, cfg, seed: int, pairs: Pairs | None = None, weight: float = 0.0
) -> dict[str, float]:
    """Trains in place on x [n, dim] (cfg: steps, batch_size, lr, aux_k, aux_weight,
    dead_after); with `pairs` (rng -> padded query tokens, mask, document tokens, mask) adds
    weight · InfoNCE over the codes' MaxSim. Returns the last step's losses, the dead share."""
    tx = optax.adam(cfg.lr)
    opt = nnx.Optimizer(sae, tx, wrt=nnx.Param)
    graphdef, state = nnx.split((sae, opt))

    @jax.jit
    def step(state, xb, since, pair):
        sae, opt = nnx.merge(graphdef, state)
        dead = since > cfg.dead_after

        def loss_fn(m):
            rec, aux, fired = sae_losses(m, xb, dead, cfg.aux_k)
            nce = jnp.zeros(())
            if pair:
                q, qm, d, dm = pair
                nce = info_nce(batch_maxsim(m.encode(q), qm, m.encode(d), dm))
            return rec + cfg.aux_weight * aux + weight * nce, (rec, aux, fired)

        (_, (rec, aux, fired)), grads = nnx.value_and_grad(loss_fn, has_aux=True)(sae)
        opt.update(sae, grads)
        unit_norm_decoder(sae)
        since = jnp.where(fired, 0, since + xb.shape[0])
        return nnx.state((sae, opt)), since, rec, aux

    rng = np.random.default_rng(seed)
    since = jnp.zeros(sae.width, jnp.int32)
    rec = aux = jnp.nan
    for _ in range(cfg.steps):
        idx = rng.integers(0, len(x), min(cfg.batch_size, len(x)))
        pair = tuple(jnp.asarray(a) for a in pairs(rng)) if pairs is not None else ()
        state, since, rec, aux = step(state, jnp.asarray(x[idx]), since, pair)
    nnx.update((sae, opt), state)
    return {
        "rec": float(rec),
        "aux": float(aux),
        "dead_share": float((np.asarray(since) > cfg.dead_after).mean()),
    }
