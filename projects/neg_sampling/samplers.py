"""Negative samplers for BPR on LightGCN embeddings.

Every sampler sees a pool of `n_negs` candidates per (user, positive) drawn from a proposal
(uniform over items; the popularity sampler's proposal is deg^0.75) with the user's forbidden
items rejected: a rejected draw is redrawn once, then replaced by an entry of a per-user pool of
allowed items (`data.negative_pool`), so a forbidden item is never returned. Forbidden = the
user's training positives (every sampler) or all true positives (the oracle).

A sampler returns, per row, the chosen item at each LightGCN layer [B, L+1] and a mixing weight
[B, L+1]: the negative's layer-l embedding is α e_pos^(l) + (1 − α) e_item^(l) (α = 0 except for
MixGCF). Choices use stop-gradient embeddings; the loss recomputes the embeddings with gradients.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

import jax
import jax.numpy as jnp

from shared.config import NonNegativeFloat, PositiveFloat, PositiveInt, Range

SamplerName = Literal["uniform", "popularity", "dns", "mixgcf", "ahns", "r1", "r2", "oracle"]
SAMPLERS: tuple[str, ...] = ("uniform", "popularity", "dns", "mixgcf", "ahns", "r1", "r2", "oracle")


@dataclasses.dataclass(frozen=True)
class SamplerParams:
    n_negs: PositiveInt = 32  # candidates per positive (hard samplers pick among them)
    tau: PositiveFloat = 1.0  # R1/R2 temperature of exp(s/τ)
    # R2: prior that an unobserved item is a hidden positive
    pi_plus: Annotated[float, Range(0.0, 1.0, high_open=True)] = 0.0
    # R2: ε, the smallest kept share of a candidate's weight
    r2_floor: Annotated[float, Range(0.0, 1.0, low_open=True)] = 1e-3
    ahns_alpha: float = 1.0  # AHNS: target β (s⁺ + α)^(p+1)
    ahns_beta: NonNegativeFloat = 0.1
    ahns_p: float = -2.0
    ahns_min_base: PositiveFloat = 1e-3  # guard: s⁺ + α is clipped to this (p < 0 blows up at 0)


@dataclasses.dataclass(frozen=True)
class SamplerData:
    """Arrays a sampler needs (jax arrays; a pytree so it can enter jit)."""

    forbidden: jax.Array  # [U, I] bool
    pool: jax.Array  # [U, M] int32, allowed items
    proposal_cdf: jax.Array  # [I] float32 cumulative proposal probabilities


jax.tree_util.register_dataclass(
    SamplerData, data_fields=["forbidden", "pool", "proposal_cdf"], meta_fields=[]
)


def draw_candidates(key: jax.Array, users: jax.Array, n: int, data: SamplerData) -> jax.Array:
    """[B, n] items from the proposal with forbidden items rejected (see module docstring)."""
    k1, k2, k3 = jax.random.split(key, 3)
    num_items = data.proposal_cdf.shape[0]

    def draw(k):
        u = jax.random.uniform(k, (users.shape[0], n), maxval=data.proposal_cdf[-1])
        return jnp.minimum(jnp.searchsorted(data.proposal_cdf, u, side="right"), num_items - 1)

    def bad(c):
        return data.forbidden[users[:, None], c]

    cand = draw(k1)
    cand = jnp.where(bad(cand), draw(k2), cand)
    fallback = jnp.take_along_axis(
        data.pool[users], jax.random.randint(k3, cand.shape, 0, data.pool.shape[1]), axis=1
    )
    return jnp.where(bad(cand), fallback, cand).astype(jnp.int32)


def r2_log_weights(scores: jax.Array, p: SamplerParams) -> jax.Array:
    """log of exp(s/τ) · max(1 − π⁺ w_c / mean_C w, ε) over candidates [B, n].

    Reconstruction (not confirmed by the paper): the PU posterior that an unobserved candidate
    is a hidden positive is π⁺ p⁺(c)/p_u(c); with p_u uniform and p⁺ ∝ exp(s/τ) (the model's own
    positive distribution), the ratio is w_c / mean w, estimated on the candidate pool. π⁺ = 0
    gives R1."""
    logits = scores / p.tau
    log_ratio = logits - jax.nn.logsumexp(logits, -1, keepdims=True) + jnp.log(scores.shape[-1])
    keep = jnp.maximum(1.0 - p.pi_plus * jnp.exp(log_ratio), p.r2_floor)
    return logits + jnp.log(keep)


def sample(
    name: str,
    key: jax.Array,
    users: jax.Array,
    pos: jax.Array,
    layers: jax.Array,
    num_users: int,
    data: SamplerData,
    p: SamplerParams,
) -> tuple[jax.Array, jax.Array]:
    """(items [B, L+1] int32, alpha [B, L+1]) for rows (users [B], pos [B]).

    layers: [L+1, U+I, d] LightGCN layer embeddings (treated as constants)."""
    layers = jax.lax.stop_gradient(layers)
    n_layers = layers.shape[0]
    k_cand, k_pick = jax.random.split(key)
    zeros = jnp.zeros((users.shape[0], n_layers), jnp.float32)

    def same_item(idx):
        return jnp.repeat(idx[:, None], n_layers, axis=1).astype(jnp.int32), zeros

    if name in ("uniform", "popularity", "oracle"):  # one proposal draw is the sample
        return same_item(draw_candidates(k_cand, users, 1, data)[:, 0])
    if name not in SAMPLERS:
        raise ValueError(f"sampler={name!r} is unknown; choose one of {list(SAMPLERS)}")
    cand = draw_candidates(k_cand, users, p.n_negs, data)  # [B, n]
    pooled = layers.mean(0)
    e_u = pooled[users]  # [B, d]
    s_c = jnp.einsum("bd,bnd->bn", e_u, pooled[num_users + cand])
    if name == "dns":
        idx = jnp.argmax(s_c, -1)
    elif name == "ahns":
        s_pos = jnp.einsum("bd,bd->b", e_u, pooled[num_users + pos])
        base = jnp.maximum(s_pos + p.ahns_alpha, p.ahns_min_base)
        target = p.ahns_beta * base ** (p.ahns_p + 1.0)
        idx = jnp.argmin(jnp.abs(s_c - target[:, None]), -1)
    elif name == "r1":
        # Reconstruction: self-normalized importance sampling of the full-softmax negative
        # distribution exp(s/τ) within a uniform pool; log q is constant, so no correction.
        idx = jax.random.categorical(k_pick, s_c / p.tau, axis=-1)
    elif name == "r2":
        idx = jax.random.categorical(k_pick, r2_log_weights(s_c, p), axis=-1)
    else:  # mixgcf: positive mixing per layer, then hop mixing (a pick per layer)
        alpha = jax.random.uniform(k_pick, (users.shape[0], n_layers))  # per row and layer
        e_ul = layers[:, users].transpose(1, 0, 2)  # [B, L+1, d]
        e_pl = layers[:, num_users + pos].transpose(1, 0, 2)  # [B, L+1, d]
        e_cl = layers[:, num_users + cand].transpose(1, 2, 0, 3)  # [B, n, L+1, d]
        mixed = alpha[:, None, :, None] * e_pl[:, None] + (1 - alpha[:, None, :, None]) * e_cl
        per_layer = jnp.einsum("bld,bnld->bnl", e_ul, mixed)
        pick = jnp.argmax(per_layer, axis=1)  # [B, L+1]
        return jnp.take_along_axis(cand, pick, axis=1).astype(jnp.int32), alpha
    return same_item(jnp.take_along_axis(cand, idx[:, None], axis=1)[:, 0])
