"""Var-T-JEPA: JEPA as variational inference in a coupled latent-variable model.

Reconstruction (not confirmed by the paper): the paper's exact model is not public; only the
abstract's structure is (one ELBO; encoders as variational posteriors; the predictor as a learned
conditional prior). Our instantiation, per feature token j with latent z_j in R^H:
  q(z_j | x)             = N(mu_j, diag sigma_j^2)   from the encoder's output token
  p(z_C)                 = N(0, I)                    standard normal prior for context latents
  p(z_T | z_C, pos_T)    = N(m_j, diag s_j^2)         the predictor, fed reparameterized z_C
  p(x_j | z_j)                                        Gaussian NLL (numerical) / softmax CE
  -ELBO = NLL(x_C | z_C) + NLL(x_T | z_T) + KL(q(z_C) || N(0, I))
          + beta * KL(q(z_T) || p(z_T | z_C))
Context posteriors see only the context features; target posteriors come from the same encoder on
the full row (as I-JEPA's target encoder sees the whole input), gathered at the target positions.
There is no [REG] token, no EMA and no stop-gradient by default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from projects.var_jepa.gaussian import gaussian_nll
from projects.var_jepa.tjepa_model import Encoder, ModelConfig, Predictor
from shared.config import NonNegativeFloat


@dataclasses.dataclass(frozen=True)
class VarConfig:
    beta: NonNegativeFloat = 1.0  # weight of the JEPA KL term
    reconstruction: bool = True  # the likelihood terms NLL(x_C|z_C) + NLL(x_T|z_T)
    prior_kl: bool = True  # KL(q(z_C) || N(0, I))
    # "shared": target posteriors from the trained encoder (gradients through both sides);
    # "ema": from an EMA copy without gradient (the JEPA-style ablation).
    target_encoder: Literal["shared", "ema"] = "shared"
    min_log_sigma: float = -7.0  # floor of log sigma, for float32 safety (soft, via softplus)


class FeatureDecoder(nnx.Module):
    """p(x_j | z_j): one linear head per feature, numerical -> (mean, log sigma), categorical ->
    logits over its card_j levels (padded to the largest cardinality and masked)."""

    def __init__(
        self,
        n_num: int,
        cat_cardinalities: Sequence[int],
        dim: int,
        *,
        rngs: nnx.Rngs,
        init_log_noise: float = -2.0,
    ):
        d = n_num + len(cat_cardinalities)
        width = max([2, *cat_cardinalities])
        self.weight = nnx.Param(nnx.initializers.lecun_normal()(rngs.params(), (d, dim, width)))
        # Numerical features start with a small observation noise (sigma = e^-2, data are
        # standardized): with sigma ~ 1 = the data's variance, ignoring the latents is a
        # stationary point of the ELBO (Lucas et al., 2019) and training never leaves it.
        bias = np.zeros((d, width), np.float32)
        bias[:n_num, 1] = init_log_noise
        self.bias = nnx.Param(jnp.asarray(bias))
        self.is_cat = tuple([False] * n_num + [True] * len(cat_cardinalities))
        self.levels = tuple([2] * n_num + [int(c) for c in cat_cardinalities])

    def nll(self, z: jax.Array, feature: jax.Array, x: jax.Array) -> jax.Array:
        """z: [..., N, H] latents of features `feature` [..., N] whose observed values are
        x [..., N] (numerical value, or category code as float) -> NLL [..., N]."""
        out = (
            jnp.einsum("...nh,...nhk->...nk", z, self.weight[...][feature])
            + self.bias[...][feature]
        )
        num = gaussian_nll(x, out[..., 0], out[..., 1])
        levels = jnp.asarray(self.levels)[feature]
        logits = jnp.where(jnp.arange(out.shape[-1]) < levels[..., None], out, -1e9)
        code = jnp.clip(x.astype(jnp.int32), 0, out.shape[-1] - 1)
        cat = (
            jax.nn.logsumexp(logits, -1) - jnp.take_along_axis(logits, code[..., None], -1)[..., 0]
        )
        return jnp.where(jnp.asarray(self.is_cat)[feature], cat, num)


class VarTJEPA(nnx.Module):
    def __init__(
        self,
        n_num: int,
        cat_cardinalities: Sequence[int],
        cfg: ModelConfig,
        var: VarConfig,
        *,
        rngs: nnx.Rngs,
    ):
        h = cfg.hidden_dim
        d = n_num + len(cat_cardinalities)
        self.encoder = Encoder(n_num, cat_cardinalities, cfg, n_cls=0, rngs=rngs)
        # Zero-initialized, so every posterior starts at the prior N(0, I): a random head starts
        # with ~H/2 nats of KL per token, whose fastest cure is to shut the head (collapse).
        self.posterior_head = nnx.Linear(h, 2 * h, kernel_init=nnx.initializers.zeros, rngs=rngs)
        self.predictor = Predictor(h, 2 * h, d, cfg, rngs=rngs)
        self.decoder = FeatureDecoder(n_num, cat_cardinalities, h, rngs=rngs)
        self.min_log_sigma = var.min_log_sigma

    def _split(self, out: jax.Array) -> tuple[jax.Array, jax.Array]:
        mu, raw = jnp.split(out, 2, axis=-1)
        return mu, self.min_log_sigma + jax.nn.softplus(raw - self.min_log_sigma)

    def posterior(self, x_num, x_cat, positions=None, valid=None, key=None):
        """(mu, log sigma) of q(z | x) for the tokens at `positions` [B, N] -> [B, N, H] each."""
        return self._split(self.posterior_head(self.encoder(x_num, x_cat, positions, valid, key)))

    def prior(self, z_ctx, ctx_pos, ctx_valid, trgt_pos, trgt_valid, key=None):
        """(m, log s) of p(z_T | z_C, pos_T) -> [P, B, Nt, H] each."""
        return self._split(self.predictor(z_ctx, ctx_pos, ctx_valid, trgt_pos, trgt_valid, key))


def observed_values(x_num: jax.Array, x_cat: jax.Array) -> jax.Array:
    """[B, Dn], [B, Dc] -> [B, D] float: numerical values then category codes."""
    return jnp.concatenate([x_num, x_cat.astype(x_num.dtype)], axis=1)


def row_gather(x: jax.Array, idx: jax.Array) -> jax.Array:
    """x: [B, D, ...], idx: [..., B, N] (leading set axes allowed) -> [..., B, N, ...]."""
    rows = jnp.arange(x.shape[0])[:, None]  # broadcasts against the trailing [B, N] of idx
    return x[rows, idx]
