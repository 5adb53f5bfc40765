"""Self-distillation pretraining of one variant (DINO, or M-IDoL's MoE objectives on top of it).

One step (Reconstruction of M-IDoL, spec sec. 2):
1. multi-crop views of the batch (G global + L local);
2. teacher (EMA network, no gradient) on the G global views: router probabilities, averaged over
   the views, pick each image's expert e* (hard); the teacher logits of e*;
3. student on all views: logits of the same expert e* (the teacher's choice, so both sides live
   in one prototype space), router probabilities of the global views;
4. loss = DINO(student, teacher centred by c_{e*}) + lambda_route * L_route (or, for the
   supervised-router ablation, CE(router, modality id)) + lambda_sep * L_sep;
5. AdamW on the student; teacher <- EMA(student) with momentum 0.996 -> 1 (cosine); per-expert
   centres <- EMA of the teacher logits routed to them.
The router learns from L_route (or the CE) alone: the hard choice passes no gradient from the
DINO term (a straight-through or soft mixture of experts is the alternative the spec names).
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from projects.m_idol import losses
from projects.m_idol.model import ModelConfig, Network
from projects.m_idol.multicrop import CropConfig, multicrop
from shared import rng
from shared.config import Fraction, NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt
from shared.data.pipeline import batch_iterator
from shared.train.loop import train_loop
from shared.train.optimizers import adamw_no_decay_on_vectors, warmup_cosine


@dataclasses.dataclass(frozen=True)
class Variant:
    experts: bool  # MoE projector (E experts + router) or DINO's single head
    router: Literal["none", "entropy", "supervised"]  # L_route, CE(router, modality), or none
    separation: bool  # L_sep on the experts' first layers


VARIANTS = {
    "dino": Variant(False, "none", False),
    "moe_route": Variant(True, "entropy", False),
    "full": Variant(True, "entropy", True),
    "supervised_router": Variant(True, "supervised", True),  # ablation: modality labels used
}


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    steps: PositiveInt = 600  # AdamW steps
    batch_size: PositiveInt = 64
    lr: PositiveFloat = 5e-4  # peak, after linear warm-up; cosine to 0
    warmup_steps: NonNegativeInt = 50
    weight_decay: NonNegativeFloat = 0.04  # DINO's start value (not on biases / norms)
    grad_clip: NonNegativeFloat = 3.0  # DINO's clip
    student_temp: PositiveFloat = 0.1
    teacher_temp: PositiveFloat = 0.04
    ema_base: Fraction = 0.996  # teacher momentum at step 0 (-> 1 at the last step)
    centre_momentum: Fraction = 0.9
    lambda_route: NonNegativeFloat = 1.0  # weight of L_route (or of the supervised CE)
    lambda_sep: NonNegativeFloat = 0.1  # weight of L_sep
    checkpoint_every: NonNegativeInt = 0  # 0: at the end (and on SIGTERM) only
    log_every: PositiveInt = 50
    fast_compile: bool = False  # XLA optimization level 0: faster compile, slower steps (smoke)


def teacher_outputs(teacher: Network, views: jax.Array):
    """views [G, b, s, s, C] -> (expert e* [b], teacher logits of e* [G, b, K], router probs
    averaged over the views [b, E])."""
    g, b = views.shape[:2]
    z = teacher.features(views.reshape(g * b, *views.shape[2:])).reshape(g, b, -1)
    probs = jax.nn.softmax(teacher.route(z), -1).mean(0)
    expert = jnp.argmax(probs, -1)
    return expert, teacher.experts(z, expert), probs


def loss_weights(variant: Variant, cfg: TrainConfig) -> dict[str, jax.Array]:
    """The weight of each auxiliary term for a variant, passed to the step as data: the MoE
    variants then share one compiled step (every term is computed; a weight 0 switches it off)."""
    return {
        "route": jnp.float32(cfg.lambda_route if variant.router == "entropy" else 0.0),
        "router_ce": jnp.float32(cfg.lambda_route if variant.router == "supervised" else 0.0),
        "sep": jnp.float32(cfg.lambda_sep if variant.separation else 0.0),
    }


def student_loss(student: Network, views_g, views_l, expert, t_logits, centre, modality,
                 weights: dict, cfg: TrainConfig):  # fmt: skip
    """The total loss and its terms; views_g [G, b, ...], views_l [L, b, ...]."""
    g, b = views_g.shape[:2]
    z = student.features(views_g.reshape(g * b, *views_g.shape[2:])).reshape(g, b, -1)
    if views_l.shape[0]:
        n_l = views_l.shape[0]
        z_l = student.features(views_l.reshape(n_l * b, *views_l.shape[2:])).reshape(n_l, b, -1)
        z = jnp.concatenate([z, z_l])
    intra = losses.dino_loss(student.experts(z, expert), t_logits, centre, cfg.student_temp,
                             cfg.teacher_temp)  # fmt: skip
    r_logits = student.route(z[:g]).reshape(g * b, -1)
    if r_logits.shape[-1] > 1:  # one expert (DINO): no routing, and modality ids out of range
        ce = optax.softmax_cross_entropy_with_integer_labels(r_logits, jnp.tile(modality, g))
    else:
        ce = jnp.zeros(1)
    terms = {
        "dino": intra,
        "route": losses.route_loss(jax.nn.softmax(r_logits, -1)),
        "router_ce": ce.mean(),
        "sep": losses.separation_loss(student.experts.first[...]),
    }
    total = intra + sum(weights[k] * terms[k] for k in weights)
    return total, terms


def optimizer(cfg: TrainConfig) -> optax.GradientTransformation:
    """AdamW (no decay on biases / norms), linear warm-up then cosine to 0, DINO's clip."""
    schedule = warmup_cosine(cfg.lr, cfg.steps, cfg.warmup_steps)
    return adamw_no_decay_on_vectors(schedule, cfg.weight_decay, grad_clip=cfg.grad_clip)


def _train_step(state, batch, step_i, key_data, weights, *, graphdef, cfg: TrainConfig,
               crops: CropConfig):  # fmt: skip
    """One step on state {"student", "opt", "teacher", "centres"} -> (state, metrics).

    A module-level jit with hashable static arguments, and the seed's key and the variant's loss
    weights as data: every seed and every MoE variant of one shape share one compiled program.
    """
    key = jax.random.fold_in(jax.random.wrap_key_data(key_data), step_i)
    teacher = nnx.merge(graphdef, state["teacher"])
    views_g, views_l = multicrop(key, batch["x"], crops)
    expert, t_logits, probs = teacher_outputs(teacher, views_g)
    t_logits = jax.lax.stop_gradient(t_logits)
    centre = state["centres"][expert]  # [b, K]

    def loss_fn(params):
        return student_loss(nnx.merge(graphdef, params), views_g, views_l, expert, t_logits,
                            centre, batch["modality"], weights, cfg)  # fmt: skip

    (loss, terms), grads = jax.value_and_grad(loss_fn, has_aux=True)(state["student"])
    updates, opt = optimizer(cfg).update(grads, state["opt"], state["student"])
    student = optax.apply_updates(state["student"], updates)
    momentum = losses.ema_momentum(step_i, cfg.steps, cfg.ema_base)
    t_probs = losses.teacher_probs(t_logits, centre, cfg.teacher_temp)
    usage = jax.nn.one_hot(expert, probs.shape[-1]).mean(0)
    metrics = {
        "loss": loss,
        **terms,
        # collapse monitor: per-sample entropy -> 0 with the marginal -> 0 is one dominant
        # prototype; per-sample -> log K is the uniform collapse
        "teacher_entropy": losses.entropy(t_probs).mean(),
        "teacher_marginal_entropy": losses.entropy(t_probs.mean((0, 1))),
        "expert_usage_entropy": losses.entropy(usage),
        "momentum": momentum,
    }
    new = {
        "student": student,
        "opt": opt,
        "teacher": losses.ema_update(state["teacher"], student, momentum),
        "centres": losses.update_centres(
            state["centres"], t_logits, expert, cfg.centre_momentum
        ),  # fmt: skip
    }
    return new, metrics


# XLA's backend optimization level 0 compiles ~3x faster and runs ~2x slower: for initializers
# (run once) and for the smoke config's two steps, where compiling is all the cost.
FAST_COMPILE = {"xla_backend_optimization_level": 0}
_STATIC = {"static_argnames": ("graphdef", "cfg", "crops"), "donate_argnums": 0}
train_step = jax.jit(_train_step, **_STATIC)
train_step_fast_compile = jax.jit(_train_step, **_STATIC, compiler_options=FAST_COMPILE)


def init_network(model_cfg: ModelConfig, experts: int, channels: int, key: jax.Array) -> Network:
    """The network initialized by one compiled program, cached per shape (eagerly, every
    initializer of every shape compiles on its own: seconds each on CPU)."""
    graphdef, init = _initializer(model_cfg, experts, channels)
    return nnx.merge(graphdef, init(key))


@functools.cache
def _initializer(model_cfg: ModelConfig, experts: int, channels: int):
    build = lambda k: Network(model_cfg, experts, channels, rngs=nnx.Rngs(params=k))
    graphdef = nnx.graphdef(nnx.eval_shape(lambda: build(jax.random.key(0))))
    return graphdef, jax.jit(lambda k: nnx.state(build(k)), compiler_options=FAST_COMPILE)


@dataclasses.dataclass
class Pretrained:
    teacher: Network  # the EMA network: its encoder gives the evaluated features
    centres: np.ndarray  # [E, K]


def pretrain(
    x: np.ndarray,
    modality: np.ndarray,
    variant_name: str,
    model_cfg: ModelConfig,
    cfg: TrainConfig,
    crops: CropConfig,
    seed: int,
    workdir: pathlib.Path | None,
    name: str,
) -> Pretrained:
    """x [n, s, s, C] in [0, 1], modality [n] (read by the supervised router only)."""
    variant = VARIANTS[variant_name]
    keys = rng.streams(seed, "init", "data", "steps")
    experts = model_cfg.experts if variant.experts else 1
    student = init_network(model_cfg, experts, x.shape[-1], keys["init"])
    graphdef, params = nnx.split(student)
    state = {
        "student": params,
        "opt": optimizer(cfg).init(params),
        "teacher": jax.tree.map(jnp.copy, params),  # a copy: the step donates its input state
        "centres": jnp.zeros((experts, model_cfg.prototypes), jnp.float32),
    }
    key_data = jax.random.key_data(keys["steps"])
    weights = loss_weights(variant, cfg)
    jitted = train_step_fast_compile if cfg.fast_compile else train_step
    step = functools.partial(jitted, graphdef=graphdef, cfg=cfg, crops=crops)
    batches = batch_iterator(
        {"x": x.astype(np.float32), "modality": modality.astype(np.int32)},
        min(cfg.batch_size, len(x)),
        seed=int(rng.numpy_rng(seed, "data").integers(2**31)),
    )
    state = train_loop(
        state=state,
        step_fn=lambda s, batch, i: step(s, batch, jnp.int32(i), key_data, weights),
        batches=batches,
        num_steps=cfg.steps,
        checkpoint_dir=None if workdir is None else workdir / "checkpoints" / name,
        checkpoint_every=cfg.checkpoint_every,
        metrics_path=None if workdir is None else workdir / "metrics.jsonl",
        name=name,
        items_per_step=cfg.batch_size,
        log_every=cfg.log_every,
    )
    teacher = nnx.merge(graphdef, state["teacher"])
    return Pretrained(teacher, np.asarray(state["centres"]))
