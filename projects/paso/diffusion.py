"""(d) A small DDPM on MNIST: an MLP predicts the noise ε of x_t = √ᾱ_t x_0 + √(1 − ᾱ_t) ε.

The minibatch, the diffusion times and the noise of optimizer step t all come from t
(`fold_in(key, t)`), so the trajectory PASO solves is one fixed sequence of losses.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from projects.paso.problems import Problem, _mnist, split_model, step_indices
from shared import rng
from shared.config import NonNegativeInt, PositiveFloat, PositiveInt
from shared.models.mlp import MLP


@dataclasses.dataclass(frozen=True)
class DiffusionConfig:
    hidden: tuple[PositiveInt, ...] = (256, 256)  # widths of the noise-prediction MLP
    # sinusoidal embedding of the diffusion time, concatenated to the input
    time_dim: PositiveInt = 32
    diffusion_steps: PositiveInt = 1000  # DDPM steps, linear β from 1e-4 to 0.02 (Ho et al. 2020)
    batch_size: PositiveInt = 64  # images per optimizer step
    lr: PositiveFloat = 1e-3  # Adam learning rate
    steps: PositiveInt = 400  # T
    train_size: NonNegativeInt = 0  # first n training images (0: all 50,000)
    eval_size: NonNegativeInt = 1000  # test images for the held-out denoising loss


def alpha_bars(n: int) -> np.ndarray:
    betas = np.linspace(1e-4, 0.02, n, dtype=np.float64)
    return np.cumprod(1.0 - betas).astype(np.float32)


def time_embedding(t: jax.Array, dim: int, n: int) -> jax.Array:
    """[B] integer diffusion times -> [B, dim] sin/cos features of t / n."""
    freq = jnp.exp(-jnp.log(1000.0) * jnp.arange(dim // 2) / (dim // 2))
    angle = (t.astype(jnp.float32) / n)[:, None] * 1000.0 * freq[None]
    return jnp.concatenate([jnp.sin(angle), jnp.cos(angle)], -1)


def noise_loss(model: MLP, x0: jax.Array, key: jax.Array, cfg: DiffusionConfig, abar) -> jax.Array:
    """Mean squared error of the predicted noise; x0 [B, 784] in [-1, 1]."""
    kt, ke = jax.random.split(key)
    t = jax.random.randint(kt, (x0.shape[0],), 0, cfg.diffusion_steps)
    eps = jax.random.normal(ke, x0.shape)
    a = abar[t][:, None]
    xt = jnp.sqrt(a) * x0 + jnp.sqrt(1.0 - a) * eps
    inp = jnp.concatenate([xt, time_embedding(t, cfg.time_dim, cfg.diffusion_steps)], -1)
    return jnp.mean((model(inp) - eps) ** 2)


def diffusion_problem(cfg: DiffusionConfig, seed: int) -> Problem:
    xtr, _, xte, _ = _mnist(cfg.train_size, cfg.eval_size)
    model = MLP(784 + cfg.time_dim, cfg.hidden, 784, rngs=nnx.Rngs(rng.stream(seed, "init")))
    graphdef, params = split_model(model)
    perm = rng.numpy_rng(seed, "data").permutation(len(xtr)).astype(np.int32)
    abar = jnp.asarray(alpha_bars(cfg.diffusion_steps))
    data = {
        "x": jnp.asarray(2.0 * xtr - 1.0),
        "perm": jnp.asarray(perm),
        "key": rng.stream(seed, "noise"),
    }

    def loss(p, t, d):
        x0 = d["x"][step_indices(d["perm"], t, cfg.batch_size)]
        return noise_loss(nnx.merge(graphdef, p), x0, jax.random.fold_in(d["key"], t), cfg, abar)

    x_eval = jnp.asarray(2.0 * xte - 1.0)
    eval_key = rng.stream(0, "eval_noise")  # the same held-out noise for every run and seed

    @jax.jit
    def _eval(p):
        return noise_loss(nnx.merge(graphdef, p), x_eval, eval_key, cfg, abar)

    return Problem(
        "diffusion",
        params,
        data,
        jax.grad(loss),
        optax.adam(cfg.lr),
        lambda p: {"metric": float(_eval(p))},
        "held-out noise-prediction MSE",
    )
