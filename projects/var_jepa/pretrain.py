"""Self-supervised pretraining of T-JEPA and Var-T-JEPA: state, jitted steps, the loop.

Both methods share the mask sampler, the optimizer (AdamW, no decay on 1-D tensors, warm-up +
cosine) and the shared training loop (checkpoints, resume, SIGTERM, NaN checks). State is the
house idiom: `nnx.split((model, optimizer))` as `state["train"]` (plus the EMA target's
parameters as `state["target"]`), merged and updated inside a pure `jax.jit` step.
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from projects.var_jepa import masks
from projects.var_jepa.gaussian import gaussian_kl, reparameterize, standard_normal_kl
from projects.var_jepa.tjepa_model import Encoder, ModelConfig, Predictor, token_positions
from projects.var_jepa.var_model import VarConfig, VarTJEPA, observed_values, row_gather
from shared import distributed, rng
from shared.config import Fraction, NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt
from shared.data.pipeline import batch_iterator
from shared.data.tabular import TabularData
from shared.train import adamw_no_decay_on_vectors, train_loop, warmup_cosine


@dataclasses.dataclass(frozen=True)
class PretrainConfig:
    # optimizer steps (the official code counts epochs: steps = epochs * rows / batch)
    steps: PositiveInt = 1500
    batch_size: PositiveInt = 256
    lr: PositiveFloat = 1e-3  # T-JEPA jannis: 3.66e-4
    warmup_steps: NonNegativeInt = 100
    # Suggested setting; biases and 1-D tensors are not decayed
    weight_decay: NonNegativeFloat = 1e-5
    ema_start: Fraction = 0.996  # EMA momentum, linear from ema_start to ema_end over the run
    ema_end: Fraction = 1.0
    # element-wise clamp of context-encoder gradients (official)
    encoder_grad_clamp: PositiveFloat = 1.0
    # T-JEPA: mask sizes change per batch; each size axis is padded up to one of this many bucket
    # edges (masks.padded_sizes) and jit compiles one step per (context, target) bucket pair;
    # 1 pads to the largest sizes (one compilation), 0 uses the exact sizes (no padding).
    size_buckets: NonNegativeInt = 3
    checkpoint_every: NonNegativeInt = 500  # 0: only at the end and on SIGTERM
    log_every: PositiveInt = 50
    # Shard each batch over all devices (of all hosts) and replicate the state; each process
    # loads only its slice of the global batch.
    data_parallel: bool = False


def ema_momentum(step: jax.Array, total: int, start: float, end: float) -> jax.Array:
    """Linear schedule: `start` at step 0, `end` at the last step (total - 1)."""
    return start + (end - start) * step / max(total - 1, 1)


def ema_update(target: Any, online: Any, momentum: jax.Array) -> Any:
    return jax.tree.map(lambda t, o: momentum * t + (1.0 - momentum) * o, target, online)


def _batch_arrays(data: TabularData) -> dict[str, np.ndarray]:
    return {"x_num": data.x_num, "x_cat": data.x_cat}


@dataclasses.dataclass
class Pretrained:
    """A trained model as (graphdef, params), ready for embedding."""

    graphdef: Any
    params: Any


def _optimizer(cfg: PretrainConfig) -> optax.GradientTransformation:
    return adamw_no_decay_on_vectors(
        warmup_cosine(cfg.lr, cfg.steps, cfg.warmup_steps), cfg.weight_decay
    )


# ---------------------------------------------------------------------------------------------
# T-JEPA
class TJEPA(nnx.Module):
    def __init__(self, n_num: int, cards, cfg: ModelConfig, *, rngs: nnx.Rngs):
        self.encoder = Encoder(n_num, cards, cfg, cfg.n_cls_tokens, rngs=rngs)
        self.predictor = Predictor(
            cfg.hidden_dim, cfg.hidden_dim, self.encoder.num_tokens, cfg, rngs=rngs
        )


def tjepa_loss(
    model: TJEPA,
    target_encoder: Encoder,
    batch: dict,
    key: jax.Array,
    sizes: jax.Array,
    mask_cfg: masks.MaskConfig,
    n_cls: int,
    pads: tuple[int, int] | None = None,
):
    """MSE between predicted and target-encoder tokens at the target positions.

    sizes: [2] int (n_ctx, n_trgt) of this batch; pads: the static padded (context, target)
    sizes, at least `sizes` (None: the largest sizes, masks.max_sizes)."""
    d_mask = model.encoder.num_tokens - n_cls  # maskable indices 0..D-1
    b = batch["x_num"].shape[0]
    max_ctx, max_trgt = masks.max_sizes(d_mask, mask_cfg) if pads is None else pads
    k_mask, k_enc, k_pred, k_tgt = jax.random.split(key, 4)
    # named scopes group the profile of `benchmark.py --profile` by part of the step
    with jax.named_scope("masks"):
        ctx, ctx_valid, trgt, trgt_valid = masks.sample_indices(
            k_mask, b, d_mask, sizes[0], sizes[1], max_ctx, max_trgt, mask_cfg.num_preds
        )
        ctx_pos, ctx_valid_b, trgt_pos = token_positions(
            ctx, ctx_valid, trgt, n_cls, mask_cfg.mask_includes_reg
        )
    # Targets: the EMA encoder on the full row, no gradient (dropout stays on, as officially).
    with jax.named_scope("target_encoder"):
        full = jax.lax.stop_gradient(target_encoder(batch["x_num"], batch["x_cat"], key=k_tgt))
        targets = row_gather(full, trgt_pos)  # [P, B, Nt, H]
    with jax.named_scope("context_encoder"):
        z_ctx = model.encoder(batch["x_num"], batch["x_cat"], ctx_pos, ctx_valid_b, k_enc)
    with jax.named_scope("predictor"):
        pred = model.predictor(z_ctx, ctx_pos, ctx_valid_b, trgt_pos, trgt_valid, k_pred)
    w = trgt_valid[None, None, :, None].astype(pred.dtype)
    loss = jnp.sum(jnp.square(pred - targets) * w) / (
        jnp.sum(w) * b * mask_cfg.num_preds * pred.shape[-1]
    )
    emb_var = jnp.mean(jnp.var(full.reshape(b, -1), axis=0))  # collapse monitor
    return loss, {"loss": loss, "target_emb_var": emb_var}


def tjepa_setup(
    data: TabularData,
    model_cfg: ModelConfig,
    mask_cfg: masks.MaskConfig,
    cfg: PretrainConfig,
    seed: int,
):
    """The initial state `{"train": nnx.state((model, optimizer)), "target": encoder params}`,
    the step function `(state, batch, step) -> (state, metrics)` and the target encoder's
    graphdef."""
    keys = rng.streams(seed, "init", "data", "step")
    model = TJEPA(
        data.x_num.shape[1], data.cat_cardinalities, model_cfg, rngs=nnx.Rngs(params=keys["init"])
    )
    enc_graphdef = nnx.graphdef(model.encoder)
    optimizer = nnx.Optimizer(model, _optimizer(cfg), wrt=nnx.Param)
    graphdef, train_state = nnx.split((model, optimizer))
    state = {"train": train_state, "target": nnx.state(model.encoder)}
    n_cls = model_cfg.n_cls_tokens
    d_mask = model.encoder.num_tokens - n_cls

    @functools.partial(jax.jit, static_argnames="pads")
    def step(state, batch, step_i, sizes, pads):
        key = rng.step_key(keys["step"], step_i)
        model, optimizer = nnx.merge(graphdef, state["train"])
        target_encoder = nnx.merge(enc_graphdef, state["target"])

        def loss_fn(m):
            return tjepa_loss(m, target_encoder, batch, key, sizes, mask_cfg, n_cls, pads)

        grads, metrics = nnx.grad(loss_fn, has_aux=True)(model)
        c = cfg.encoder_grad_clamp
        with jax.named_scope("optimizer"):
            grads["encoder"] = jax.tree.map(lambda g: jnp.clip(g, -c, c), grads["encoder"])
            optimizer.update(model, grads)
        with jax.named_scope("ema"):
            m = ema_momentum(step_i, cfg.steps, cfg.ema_start, cfg.ema_end)
            target = ema_update(state["target"], nnx.state(model.encoder), m)
        return {"train": nnx.state((model, optimizer)), "target": target}, metrics

    def step_fn(state, batch, step_i):
        sizes = masks.sample_sizes(rng.numpy_rng(seed, "mask_sizes", step_i), d_mask, mask_cfg)
        pads = masks.padded_sizes(sizes, d_mask, mask_cfg, cfg.size_buckets)
        return step(state, batch, jnp.int32(step_i), jnp.asarray(sizes, jnp.int32), pads=pads)

    step_fn.jitted = step  # (state, batch, step, sizes, pads=...), for benchmarks and tests
    return state, step_fn, enc_graphdef


def train_tjepa(
    data: TabularData,
    model_cfg: ModelConfig,
    mask_cfg: masks.MaskConfig,
    cfg: PretrainConfig,
    seed: int,
    workdir: pathlib.Path | None,
    name: str = "tjepa",
) -> Pretrained:
    """Trains T-JEPA; returns the target encoder (the one used downstream)."""
    state, step_fn, enc_graphdef = tjepa_setup(data, model_cfg, mask_cfg, cfg, seed)
    state = _run(state, step_fn, data, cfg, seed, workdir, name)
    return Pretrained(enc_graphdef, state["target"])


# ---------------------------------------------------------------------------------------------
# Var-T-JEPA (Reconstruction, see var_model.py)
def var_loss(
    model: VarTJEPA,
    target_model: VarTJEPA | None,
    batch: dict,
    key: jax.Array,
    sizes: jax.Array,
    mask_cfg: masks.MaskConfig,
    var: VarConfig,
):
    """The negative ELBO per feature (averaged over rows and target sets, divided by D)."""
    x_num, x_cat = batch["x_num"], batch["x_cat"]
    b = x_num.shape[0]
    d = model.encoder.num_tokens
    max_ctx, max_trgt = masks.max_sizes(d, mask_cfg)
    k_mask, k_c, k_t, k_zc, k_zt, k_p = jax.random.split(key, 6)
    ctx, ctx_valid, trgt, trgt_valid = masks.sample_indices(
        k_mask, b, d, sizes[0], sizes[1], max_ctx, max_trgt, mask_cfg.num_preds
    )
    x_obs = observed_values(x_num, x_cat)  # [B, D]
    # q(z_C | x_C): the encoder sees the context features only.
    cv = jnp.broadcast_to(ctx_valid, ctx.shape)
    mu_c, ls_c = model.posterior(x_num, x_cat, ctx, cv, k_c)
    z_c = reparameterize(k_zc, mu_c, ls_c)
    # q(z_T | x): the encoder on the full row, gathered at the target positions.
    source = model if target_model is None else target_model
    mu_all, ls_all = source.posterior(x_num, x_cat, key=k_t)
    if target_model is not None:
        mu_all, ls_all = jax.lax.stop_gradient((mu_all, ls_all))
    mu_t, ls_t = row_gather(mu_all, trgt), row_gather(ls_all, trgt)  # [P, B, Nt, H]
    z_t = reparameterize(k_zt, mu_t, ls_t)
    m, ls_p = model.prior(z_c, ctx, cv, trgt, trgt_valid, k_p)
    cw = ctx_valid.astype(mu_c.dtype)[None, :]  # [1, Nc]
    tw = trgt_valid.astype(mu_c.dtype)[None, None, :]  # [1, 1, Nt]
    p = mask_cfg.num_preds
    kl_t = jnp.sum(gaussian_kl(mu_t, ls_t, m, ls_p).sum(-1) * tw) / (b * p)
    kl_c = jnp.sum(standard_normal_kl(mu_c, ls_c).sum(-1) * cw) / b
    rec_c = jnp.sum(model.decoder.nll(z_c, ctx, row_gather(x_obs[..., None], ctx)[..., 0]) * cw) / b
    rec_t = jnp.sum(
        model.decoder.nll(z_t, trgt, row_gather(x_obs[..., None], trgt)[..., 0]) * tw
    ) / (b * p)
    neg_elbo = var.beta * kl_t
    if var.prior_kl:
        neg_elbo += kl_c
    if var.reconstruction:
        neg_elbo += rec_c + rec_t
    loss = neg_elbo / d
    emb_var = jnp.mean(jnp.var(mu_all.reshape(b, -1), axis=0))
    return loss, {
        "loss": loss,
        "kl_target": kl_t,
        "kl_context": kl_c,
        "nll_context": rec_c,
        "nll_target": rec_t,
        "mean_sigma": jnp.mean(jnp.exp(ls_all)),
        "target_emb_var": emb_var,
    }


def train_var_tjepa(
    data: TabularData,
    model_cfg: ModelConfig,
    mask_cfg: masks.MaskConfig,
    var: VarConfig,
    cfg: PretrainConfig,
    seed: int,
    workdir: pathlib.Path | None,
    name: str = "var_tjepa",
) -> Pretrained:
    keys = rng.streams(seed, "init", "data", "step")
    model = VarTJEPA(
        data.x_num.shape[1],
        data.cat_cardinalities,
        model_cfg,
        var,
        rngs=nnx.Rngs(params=keys["init"]),
    )
    model_graphdef = nnx.graphdef(model)
    optimizer = nnx.Optimizer(model, _optimizer(cfg), wrt=nnx.Param)
    graphdef, train_state = nnx.split((model, optimizer))
    ema = var.target_encoder == "ema"
    state = {"train": train_state}
    if ema:
        state["target"] = nnx.state(model)
    d = model.encoder.num_tokens

    @jax.jit
    def step(state, batch, step_i, sizes):
        key = rng.step_key(keys["step"], step_i)
        model, optimizer = nnx.merge(graphdef, state["train"])
        target = nnx.merge(model_graphdef, state["target"]) if ema else None

        def loss_fn(m):
            return var_loss(m, target, batch, key, sizes, mask_cfg, var)

        grads, metrics = nnx.grad(loss_fn, has_aux=True)(model)
        optimizer.update(model, grads)
        new = {"train": nnx.state((model, optimizer))}
        if ema:
            mom = ema_momentum(step_i, cfg.steps, cfg.ema_start, cfg.ema_end)
            new["target"] = ema_update(state["target"], nnx.state(model), mom)
        return new, metrics

    def step_fn(state, batch, step_i):
        sizes = masks.sample_sizes(rng.numpy_rng(seed, "mask_sizes", step_i), d, mask_cfg)
        return step(state, batch, jnp.int32(step_i), jnp.asarray(sizes, jnp.int32))

    state = _run(state, step_fn, data, cfg, seed, workdir, name)
    if ema:
        return Pretrained(model_graphdef, state["target"])
    return Pretrained(model_graphdef, nnx.state(nnx.merge(graphdef, state["train"])[0]))


def _run(
    state,
    step_fn,
    data: TabularData,
    cfg: PretrainConfig,
    seed: int,
    workdir: pathlib.Path | None,
    name: str,
):
    batches = batch_iterator(
        _batch_arrays(data),
        min(cfg.batch_size, len(data)),
        seed=int(rng.numpy_rng(seed, "data").integers(2**31)),
        process_rows=cfg.data_parallel,
    )
    if cfg.data_parallel:
        state, step_fn = distributed.data_parallel(state, step_fn, distributed.data_mesh())
    return train_loop(
        state=state,
        step_fn=step_fn,
        batches=batches,
        num_steps=cfg.steps,
        checkpoint_dir=None if workdir is None else workdir / "checkpoints" / name,
        checkpoint_every=cfg.checkpoint_every,
        metrics_path=None if workdir is None else workdir / "metrics.jsonl",
        name=name,
        items_per_step=cfg.batch_size,
        log_every=cfg.log_every,
    )


# ---------------------------------------------------------------------------------------------
# Embeddings for downstream use
def embed(pre: Pretrained, kind: str, data: TabularData, batch_size: int = 1024):
    """Frozen-encoder embeddings of every row, flattened: T-JEPA [N, (D + n_cls) * H] from the
    target encoder; Var-T-JEPA [N, D * H] posterior means, plus sigma [N, D, H]."""
    model = nnx.merge(pre.graphdef, pre.params)

    @jax.jit
    def f(x_num, x_cat):
        if kind == "tjepa":
            z = model(x_num, x_cat)
            return z.reshape(z.shape[0], -1), jnp.zeros((z.shape[0], 0, z.shape[-1]))
        mu, ls = model.posterior(x_num, x_cat)
        return mu.reshape(mu.shape[0], -1), jnp.exp(ls)

    outs = [
        f(data.x_num[i : i + batch_size], data.x_cat[i : i + batch_size])
        for i in range(0, len(data), batch_size)
    ]
    return np.concatenate([o[0] for o in outs]), np.concatenate([o[1] for o in outs])
