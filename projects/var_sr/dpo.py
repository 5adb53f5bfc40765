"""The DPO regularizer of the SR transformer — Reconstruction (the standard DPO form; the paper's
exact form and constants are not confirmed):

    L = CE(y_w) + lam * -log sigmoid(beta [(log pi(y_w) - log pi_ref(y_w))
                                           - (log pi(y_l) - log pi_ref(y_l))])
y_w: the HR tokens, y_l: the tokens of the bicubic-upsampled LR image, both scored by teacher
forcing given the LR prefix; pi_ref: a frozen copy of the CE-trained model. The reference-free
variant drops the pi_ref terms.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def sequence_log_prob(logits: jax.Array, tokens: jax.Array, mask: jax.Array) -> jax.Array:
    """Sum over the masked positions of log p(token): logits [b, L, V], tokens and mask [b, L]
    (mask selects the predicted scales, > k_1) -> [b]."""
    logp = jax.nn.log_softmax(logits, -1)
    picked = jnp.take_along_axis(logp, tokens[..., None], -1)[..., 0]
    return jnp.sum(jnp.where(mask, picked, 0.0), -1)


def dpo_regularizer(
    logp_w: jax.Array,
    logp_l: jax.Array,
    ref_w: jax.Array | None,
    ref_l: jax.Array | None,
    beta: float,
    lam: float,
) -> jax.Array:
    """lam * mean_b -log sigmoid(beta * margin); ref_* None: the reference-free variant."""
    margin = logp_w - logp_l
    if ref_w is not None and ref_l is not None:
        margin = margin - (ref_w - ref_l)
    elif (ref_w is None) != (ref_l is None):
        raise ValueError("give both reference log-probabilities or neither")
    return lam * jnp.mean(-jax.nn.log_sigmoid(beta * margin))
