"""Super-resolution with the next-scale transformer: training sequences, the loss (CE on the
HR tokens of the scales after the LR prefix, plus the DPO regularizer), and evaluation.

Scales (cpu): patch_nums (1, 2, 4, 8) on an 8 x 8 latent of a 32 x 32 image; the LR image
(8 x 8) has a 2 x 2 latent, so its tokens are scales <= k_1 = 1; the prefix of scales <= k_2 = 2
decodes to 16 x 16 (x2) and all scales to 32 x 32 (x4).
Sequences: y_w = [LR tokens (scales <= k_1), HR tokens (> k_1)]; y_l = [LR tokens, tokens of the
bicubic-upsampled LR image (> k_1)]. Inputs are teacher-forced from each sequence's own tokens.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from projects.var_sr.dpo import dpo_regularizer, sequence_log_prob
from projects.var_sr.tokenizer import Tokenizer
from projects.var_sr.transformer import NextScaleTransformer, flatten_codes, generate


def lr_scales(tokenizer: Tokenizer, lr_side: int) -> int:
    """Number of scales the LR image fills: those up to its latent side."""
    latent = lr_side // 4
    if latent not in tokenizer.patch_nums:
        raise ValueError(f"the LR latent side {latent} is not one of {tokenizer.patch_nums}")
    return tokenizer.patch_nums.index(latent) + 1


def sequences(tokenizer: Tokenizer, hr, lr, up_lr, chunk: int = 256) -> dict:
    """Token ids and teacher-forcing inputs of y_w and y_l for every image (arrays [n, ...])."""
    k1 = lr_scales(tokenizer, lr.shape[1])
    parts = [
        _sequence_chunk(tokenizer, hr[i : i + chunk], lr[i : i + chunk], up_lr[i : i + chunk], k1)
        for i in range(0, len(hr), chunk)
    ]
    return {k: np.concatenate([np.asarray(p[k]) for p in parts]) for k in parts[0]}


# Module-level jitted programs: tokenizers (or transformers) of one structure share a compilation.
@functools.partial(nnx.jit, static_argnames="k1")
def _sequence_chunk(tok, hr, lr, up, k1):
    side = tok.patch_nums[-1]
    pre = tok.tokenize(lr)[:k1]
    out = {}
    for name, img in (("w", hr), ("l", up)):
        codes = pre + tok.tokenize(img)[k1:]
        out[f"codes_{name}"] = flatten_codes(codes)
        for k, x in enumerate(tok.rq.teacher_inputs(codes, side), start=1):
            out[f"in_{name}{k}"] = x
    return out


def predicted_mask(patch_nums, k1: int) -> np.ndarray:
    """[L] bool: the positions of the scales after the LR prefix (the ones with a loss)."""
    return np.concatenate([np.full(p * p, k >= k1) for k, p in enumerate(patch_nums)])


def sr_loss(tf: NextScaleTransformer, batch: dict, key, mask, dpo: dict | None):
    """CE on y_w's predicted positions (+ lam * DPO when `dpo` = {beta, lam, reference_free});
    batch also carries ref_w/ref_l (the frozen reference's log-probabilities) for DPO."""
    n_in = len(tf.patch_nums) - 1
    logits_w = tf([batch[f"in_w{k}"] for k in range(1, n_in + 1)])
    logits_l = tf([batch[f"in_l{k}"] for k in range(1, n_in + 1)])
    m = jnp.asarray(mask)[None]
    ce_all = optax.softmax_cross_entropy_with_integer_labels(logits_w, batch["codes_w"])
    ce = jnp.sum(jnp.where(m, ce_all, 0.0)) / (m.sum() * logits_w.shape[0])
    logp_w = sequence_log_prob(logits_w, batch["codes_w"], m)
    logp_l = sequence_log_prob(logits_l, batch["codes_l"], m)
    aux = {"ce": ce, "margin": jnp.mean(logp_w - logp_l)}
    loss = ce
    if dpo is not None:
        ref = (None, None) if dpo["reference_free"] else (batch["ref_w"], batch["ref_l"])
        reg = dpo_regularizer(logp_w, logp_l, *ref, dpo["beta"], dpo["lam"])
        aux["dpo"] = reg
        loss = loss + reg
    return loss, aux


def reference_log_probs(tf: NextScaleTransformer, seqs: dict, mask, chunk: int = 256) -> dict:
    """log pi_ref(y_w), log pi_ref(y_l) of every sequence under the (frozen) model `tf`."""
    n = len(seqs["codes_w"])
    parts = [_reference_chunk(tf, {k: v[i : i + chunk] for k, v in seqs.items()}, mask)
             for i in range(0, n, chunk)]  # fmt: skip
    return {k: np.concatenate([np.asarray(p[k]) for p in parts]) for k in parts[0]}


@nnx.jit
def _reference_chunk(tf, part, mask):
    n_in = len(tf.patch_nums) - 1
    out = {}
    for name in ("w", "l"):
        logits = tf([part[f"in_{name}{k}"] for k in range(1, n_in + 1)])
        out[f"ref_{name}"] = sequence_log_prob(logits, part[f"codes_{name}"], mask[None])
    return out


def super_resolve(tokenizer: Tokenizer, tf: NextScaleTransformer, lr) -> dict:
    """LR [n, s, s, 3] -> {"x2": [n, 2s, 2s, 3], "x4": [n, 4s, 4s, 3]} in one generation: the
    LR tokens as prefix, the rest generated greedily; x2 = the prefix decode at 2x the LR side."""
    k1 = lr_scales(tokenizer, lr.shape[1])
    out = _super_resolve(tokenizer, tf, jnp.asarray(lr), k1, 2 * lr.shape[1] // 4)
    return {k: np.asarray(v) for k, v in out.items()}


@functools.partial(nnx.jit, static_argnames=("k1", "p2"))
def _super_resolve(tok, tf, lr, k1, p2):
    side = tok.patch_nums[-1]
    codes = generate(tf, tok.rq, tok.tokenize(lr)[:k1], side)
    k2 = tok.patch_nums.index(p2) + 1
    return {"x2": tok.decode_prefix(codes[:k2], side, p2),
            "x4": tok.decode_prefix(codes, side, side)}  # fmt: skip


def bicubic_up(lr, factor: int) -> np.ndarray:
    n, s, _, c = lr.shape
    return np.asarray(jax.image.resize(jnp.asarray(lr), (n, factor * s, factor * s, c), "bicubic"))
