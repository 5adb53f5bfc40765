"""Training the TopK SAE on token vectors: Adam on L_rec + aux_weight · L_aux, unit-norm decoder
rows after each step, dead latents tracked in tokens since they last fired."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from projects.ssr.sae import TopKSAE, sae_losses, unit_norm_decoder


@dataclasses.dataclass(frozen=True)
class SAETrainConfig:
    steps: int = 600
    batch_size: int = 2048  # token vectors per step
    lr: float = 1e-3
    aux_k: int = 64  # dead latents rebuilding the residual
    aux_weight: float = 1 / 32  # openai/sparse_autoencoder's default
    dead_after: int = 200_000  # tokens without firing -> dead


def train_sae(sae: TopKSAE, x: np.ndarray, cfg: SAETrainConfig, seed: int) -> dict[str, float]:
    """Trains in place on x [n, dim]; returns the last step's losses and the dead share."""
    tx = optax.adam(cfg.lr)
    opt = nnx.Optimizer(sae, tx, wrt=nnx.Param)
    graphdef, state = nnx.split((sae, opt))

    @jax.jit
    def step(state, xb, since):
        sae, opt = nnx.merge(graphdef, state)
        dead = since > cfg.dead_after

        def loss_fn(m):
            rec, aux, z = sae_losses(m, xb, dead, cfg.aux_k)
            return rec + cfg.aux_weight * aux, (rec, aux, z)

        (_, (rec, aux, z)), grads = nnx.value_and_grad(loss_fn, has_aux=True)(sae)
        opt.update(sae, grads)
        unit_norm_decoder(sae)
        fired = (z > 0).any(0)
        since = jnp.where(fired, 0, since + xb.shape[0])
        return nnx.state((sae, opt)), since, rec, aux

    rng = np.random.default_rng(seed)
    since = jnp.zeros(sae.width, jnp.int32)
    rec = aux = jnp.nan
    for _ in range(cfg.steps):
        idx = rng.integers(0, len(x), min(cfg.batch_size, len(x)))
        state, since, rec, aux = step(state, jnp.asarray(x[idx]), since)
    nnx.update((sae, opt), state)
    return {
        "rec": float(rec),
        "aux": float(aux),
        "dead_share": float((np.asarray(since) > cfg.dead_after).mean()),
    }
