"""The network trained by self-distillation: the shared ViT (shared/models/image_encoders.py), a
router and E expert projection heads (the MoE projector); the teacher is a second copy whose
parameters are an EMA of these.

Expert e (Reconstruction, spec sec. 2): z [D] -> u = A_e^T z [r] (the first layer, a rank-r
projection: the subspace of z the expert reads, whose orthonormalized A_e enter L_sep) -> GELU MLP
(hidden) -> bottleneck, L2-normalized -> cosine logits against K unit prototypes (DINO's
weight-normalized last layer, g = 1). A full-rank first layer (D -> 2048, as the spec's paper
head) spans all of R^D, which would make L_sep a constant; so the first layer is rank r <= D / E,
and the other layers form the spec's 2-layer MLP. DINO-only: one expert with r = D.
Router: r(x) = softmax(W_g z / tau_r).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import nnx

from shared.config import PositiveFloat, PositiveInt
from shared.models.image_encoders import ViTEncoder, image_encoder


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    image_size: PositiveInt = 32  # global view side (the encoder's native size)
    patch: PositiveInt = 4
    width: PositiveInt = 64  # token width
    depth: PositiveInt = 3  # pre-LN blocks
    heads: PositiveInt = 4
    dim: PositiveInt = 64  # D: feature z (the [CLS] output projected), the probed representation
    experts: PositiveInt = 5  # E of the MoE variants (one per modality)
    subspace: PositiveInt = 12  # r: rank of each expert's first layer (E * r <= D: separable)
    hidden: PositiveInt = 128  # expert MLP hidden width
    bottleneck: PositiveInt = 64  # expert output before the prototypes
    prototypes: PositiveInt = 256  # K
    router_temp: PositiveFloat = 1.0  # tau_r


def _normalize(v: jax.Array, axis: int = -1) -> jax.Array:
    return v / jnp.maximum(jnp.linalg.norm(v, axis=axis, keepdims=True), 1e-12)


class Experts(nnx.Module):
    """E expert heads (parameters stacked on a leading expert axis)."""

    def __init__(self, num: int, dim: int, subspace: int, hidden: int, bottleneck: int,
                 prototypes: int, *, rngs: nnx.Rngs):  # fmt: skip
        # fan-in scaling per expert: axis 1 is the input, axis 0 the expert
        init = jax.nn.initializers.variance_scaling(
            1.0, "fan_in", "truncated_normal", in_axis=1, out_axis=2, batch_axis=(0,)
        )
        self.first = nnx.Param(init(rngs.params(), (num, dim, subspace)))
        self.w1 = nnx.Param(init(rngs.params(), (num, subspace, hidden)))
        self.b1 = nnx.Param(jnp.zeros((num, hidden)))
        self.w2 = nnx.Param(init(rngs.params(), (num, hidden, bottleneck)))
        self.b2 = nnx.Param(jnp.zeros((num, bottleneck)))
        protos = jax.random.normal(rngs.params(), (num, bottleneck, prototypes))
        self.protos = nnx.Param(protos)

    def __call__(self, z: jax.Array, expert: jax.Array) -> jax.Array:
        """z: [V, b, D] (V views of b samples), expert: [b] -> logits [V, b, K] of each
        sample's expert (only that one is evaluated: the heads would otherwise cost as much
        as the encoder)."""
        first, w1, b1, w2, b2, protos = (p[...][expert] for p in (
            self.first, self.w1, self.b1, self.w2, self.b2, self.protos))  # fmt: skip
        u = jnp.einsum("vbd,bdr->vbr", z, first)
        h = jax.nn.gelu(jnp.einsum("vbr,brh->vbh", u, w1) + b1)
        y = jnp.einsum("vbh,bhk->vbk", h, w2) + b2
        return jnp.einsum("vbk,bkp->vbp", _normalize(y), _normalize(protos, 1))


class Network(nnx.Module):
    """Encoder + router + experts. `num_experts == 1` is DINO's single projection head."""

    def __init__(self, cfg: ModelConfig, num_experts: int, channels: int = 3, *,
                 rngs: nnx.Rngs):  # fmt: skip
        self.encoder = image_encoder(
            "vit", cfg.image_size, channels, cfg.dim, rngs=rngs, patch=cfg.patch,
            depth=cfg.depth, heads=cfg.heads, width=cfg.width,
        )  # fmt: skip
        subspace = cfg.dim if num_experts == 1 else cfg.subspace
        if num_experts * subspace > cfg.dim and num_experts > 1:
            raise ValueError(
                f"model.subspace={cfg.subspace} x {num_experts} experts exceeds model.dim="
                f"{cfg.dim}: the experts' subspaces could not be orthogonal; lower subspace"
            )
        self.router = nnx.Linear(cfg.dim, num_experts, use_bias=False, rngs=rngs)
        self.experts = Experts(num_experts, cfg.dim, subspace, cfg.hidden, cfg.bottleneck,
                               cfg.prototypes, rngs=rngs)  # fmt: skip
        self.router_temp = cfg.router_temp
        self.num_experts = num_experts

    def features(self, x: jax.Array) -> jax.Array:
        """x: [b, s, s, C] (s a multiple of the patch) -> z [b, D]."""
        return encode(self.encoder, x)

    def route(self, z: jax.Array) -> jax.Array:
        """z [..., D] -> router logits [..., E] (already divided by tau_r)."""
        return self.router(z) / self.router_temp


def encode(vit: ViTEncoder, x: jax.Array) -> jax.Array:
    """The ViT on images of any side that is a multiple of its patch: z [b, D].

    At the encoder's own size this is `vit(x)`. ViTEncoder fixes its image size; DINO's local
    crops are smaller, so their position embeddings are the [CLS] one plus the patch grid's
    resized bicubically to the crop's grid (DINO's interpolate_pos_encoding), with the same
    modules and parameters.
    """
    b, h, w, c = x.shape
    if (h, w) == (vit.image_size, vit.image_size):
        return vit(x)
    p = vit.patch
    if h % p or w % p:
        raise ValueError(f"a {h}x{w} view is not a multiple of the patch {p}")
    tokens = x.reshape(b, h // p, p, w // p, p, c).transpose(0, 1, 3, 2, 4, 5)
    t = vit.embed(tokens.reshape(b, (h // p) * (w // p), p * p * c))
    pos = vit.pos[...]
    side = vit.image_size // p
    grid = pos[1:].reshape(side, side, pos.shape[-1])
    grid = jax.image.resize(grid, (h // p, w // p, pos.shape[-1]), "bicubic")
    pos = jnp.concatenate([pos[:1], grid.reshape(-1, pos.shape[-1])])
    cls = jnp.broadcast_to(vit.cls[...], (b, 1, t.shape[-1]))
    t = jnp.concatenate([cls, t], 1) + pos
    for block in vit.blocks:
        t = block(t)
    return vit.proj(vit.norm(t[:, 0]))
