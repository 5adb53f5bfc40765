"""The image tokenizer: a fully convolutional VQ-VAE around VAR's multi-scale residual quantizer
(quantizer.py), in two variants.

- "standard" (VAR): loss = |x - Dec(f_hat)|_1 + vq_loss.
- "hit" — Reconstruction (not confirmed by the paper) of Hierarchical Image Tokenization: the
  prefix of scales <= k_s, pooled to p_{k_s}, must decode to the image downsampled by 4/s
  (the decoder is convolutional, so a p x p latent decodes to a (r p) x (r p) image), and the
  first scales of the HR tokenization must agree with the tokenization of the LR image itself
  (token overlap): with hr_prefix the scales whose side is at most the LR latent's,
      L = |x - Dec(f_hat)|_1 + sum_{s in prefixes} |Dec(pool(f_hat_{<=k_s})) - down(x)|_1
          + vq_loss + overlap * CE(-|pooled HR residual - e|^2 -> LR tokens) over hr_prefix
  The LR tokens are the quantizer's own codes of Enc(LR), taken as targets (stop-gradient).
Downsampled targets use area averaging (exact for the integer factors here).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from projects.var_sr.quantizer import MultiScaleRQ
from projects.var_sr.resize import resize


class ConvAutoencoder(nnx.Module):
    """Enc: [b, S, S, 3] -> [b, S/4, S/4, dim]; Dec: any [b, p, p, dim] -> [b, 4p, 4p, 3]."""

    def __init__(self, dim: int = 16, width: int = 64, *, rngs: nnx.Rngs):
        w = width
        self.enc = nnx.List([nnx.Conv(3, w // 2, (3, 3), rngs=rngs),
                             nnx.Conv(w // 2, w, (3, 3), strides=2, rngs=rngs),
                             nnx.Conv(w, w, (3, 3), strides=2, rngs=rngs)])  # fmt: skip
        self.to_latent = nnx.Conv(w, dim, (1, 1), rngs=rngs)
        self.from_latent = nnx.Conv(dim, w, (3, 3), rngs=rngs)
        self.dec = nnx.List([nnx.Conv(w, w, (3, 3), rngs=rngs),
                             nnx.Conv(w, w // 2, (3, 3), rngs=rngs)])  # fmt: skip
        self.to_rgb = nnx.Conv(w // 2, 3, (3, 3), rngs=rngs)

    def encode(self, x: jax.Array) -> jax.Array:
        for conv in self.enc:
            x = nnx.relu(conv(x))
        return self.to_latent(x)

    def decode(self, z: jax.Array) -> jax.Array:
        h = nnx.relu(self.from_latent(z))
        for conv in self.dec:
            b, s, _, c = h.shape
            h = jax.image.resize(h, (b, 2 * s, 2 * s, c), "nearest")
            h = nnx.relu(conv(h))
        return nnx.sigmoid(self.to_rgb(h))


class Tokenizer(nnx.Module):
    def __init__(
        self,
        patch_nums: Sequence[int] = (1, 2, 4, 8),
        vocab: int = 256,
        dim: int = 16,
        width: int = 64,
        *,
        rngs: nnx.Rngs,
    ):
        self.ae = ConvAutoencoder(dim, width, rngs=rngs)
        self.rq = MultiScaleRQ(dim, vocab, patch_nums, rngs=rngs)
        self.patch_nums = tuple(patch_nums)

    def tokenize(self, x: jax.Array) -> list[jax.Array]:
        """Images [b, S, S, 3] -> token ids per scale [b, p_k, p_k]."""
        return self.rq(self.ae.encode(x))[1]

    def decode_prefix(self, codes: Sequence[jax.Array], side: int, p: int) -> jax.Array:
        """Tokens of the first len(codes) scales -> the image of their prefix at latent side p
        ([b, 4p, 4p, 3]): f_hat_{<=k} pooled to p, then decoded."""
        f_hat = self.rq.decode_codes(codes, side)[-1]
        return self.ae.decode(f_hat if p == side else resize(f_hat, p, p, "area"))


def tokenizer_loss(
    model: Tokenizer,
    x: jax.Array,
    lr: jax.Array | None,
    variant: str,
    prefix_sides: Sequence[int] = (2, 4),
    overlap: float = 1.0,
) -> tuple[jax.Array, dict]:
    """x [b, S, S, 3] HR images; lr [b, S/4, S/4, 3] their LR versions ("hit" only)."""
    if variant not in ("standard", "hit"):
        raise ValueError(f"tokenizer variant {variant!r} is not 'standard' or 'hit'")
    f = model.ae.encode(x)
    side = f.shape[1]
    f_q, codes, vq, partial = model.rq(f)
    rec = jnp.mean(jnp.abs(model.ae.decode(f_q) - x))
    out = {"rec": rec, "vq": vq}
    loss = rec + vq
    if variant == "hit":
        for p in prefix_sides:
            k = model.patch_nums.index(p)
            # the prefix's own gradient path: decoder, codebook and phi. A straight-through
            # estimate to the encoder (f + sg(prefix - f)) is far off for a coarse prefix.
            img = model.ae.decode(resize(partial[k], p, p, "area"))
            target = resize(x, img.shape[1], img.shape[2], "area")
            out[f"prefix{p}"] = jnp.mean(jnp.abs(img - target))
            loss = loss + out[f"prefix{p}"]
        lr_codes = [jax.lax.stop_gradient(c) for c in model.tokenize(lr)]  # LR's own scales
        out["overlap"] = overlap_ce(model.rq, f, lr_codes, side)
        loss = loss + overlap * out["overlap"]
    return loss, out


def overlap_ce(rq: MultiScaleRQ, f: jax.Array, targets: Sequence[jax.Array], side: int):
    """Cross-entropy of the HR quantizer's assignments at its first len(targets) scales (logits
    -|pooled residual - e_v|^2) toward the target tokens; the residual follows the targets."""
    rest, total = f, 0.0
    e = rq.codebook.value
    for k, z in enumerate(targets):
        p = rq.patch_nums[k]
        pooled = resize(rest, p, p, "area")
        logits = -(jnp.sum(pooled**2, -1, keepdims=True) - 2 * pooled @ e.T + jnp.sum(e**2, -1))
        total = total + optax.softmax_cross_entropy_with_integer_labels(logits, z).mean()
        rest = rest - rq._phi(k, rq._up(z, side))
    return total / max(len(targets), 1)


def token_overlap(hr_codes: Sequence[jax.Array], lr_codes: Sequence[jax.Array]) -> float:
    """Share of positions where the HR tokenization's first scales equal the LR tokenization
    (Table 2's token-overlap rate), over the scales the LR image has."""
    same = sum(float(jnp.sum(a == b)) for a, b in zip(hr_codes, lr_codes))
    return same / sum(int(b.size) for b in lr_codes)
