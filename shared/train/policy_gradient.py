"""Sequence-level policy gradient for a decoder: REINFORCE with a baseline, and GRPO.

A rollout is B prompts [B, P] (equal lengths, no padding) with sampled responses [B, R] and
`lengths [B]`: the valid response tokens of each row (an emitted eos included); positions past a
row's length are padding and carry neither log-probability nor gradient. Definitions:

- log pi(y_b | x_b) = sum_{t < len_b} log pi(y_{b,t} | x_b, y_{b,<t}) (the sequence log-prob).
- REINFORCE: A_b = r_b - baseline, the baseline being the batch mean of r by default (it includes
  r_b itself, which scales the expected gradient by (1 - 1/B) without changing its direction) or
  a value the caller passes, e.g. a running mean it keeps.
- GRPO (rewards [num_prompts, G], G samples per prompt): A = (r - mean_group) / (std_group + eps)
  with the population std (ddof=0) and eps=1e-6; a group whose rewards are all equal gets A = 0
  exactly; G = 1 is an error. verl divides by the sample std (ddof=1, so its A is smaller by
  sqrt((G - 1) / G)) and gives a group of one its raw reward; we do neither.
- Loss: -(1/B) sum_b A_b log pi(y_b | x_b), the mean over sequences, advantages held constant.
  Its gradient is the score-function (REINFORCE) estimate; no 1/len_b token mean (which would
  favour long wrong answers and short right ones), no importance ratio or clipping (one on-policy
  update per batch of samples: the ratio is 1 and PPO's clip inactive), and no KL penalty to a
  reference model (left out: the k3 estimator used as a loss follows the reverse KL's gradient;
  a caller wanting a KL term can fold -beta * (log pi - log pi_ref) into its rewards).

The RL loop (`train_policy_gradient`) runs on `shared.train.loop.train_loop` (checkpoints,
resume, NaN stop) and takes the sampler and the reward as functions, so another generator (e.g. a
batched one with left-padded prompts) plugs in; the prompts' log-probs must then be computed with
the same attention mask and positions the sampler used, which `response_log_probs` (no prompt
padding) does not do yet.
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib
from collections.abc import Callable
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from shared import rng
from shared.config import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt
from shared.data.pipeline import batch_iterator
from shared.models.sampling import generate
from shared.train.loop import train_loop
from shared.train.optimizers import adamw_no_decay_on_vectors

GRPO_EPS = 1e-6  # added to the group std (verl's default)

# sample_fn(model, prompts [B, P], key) -> (responses [B, <= max_new_tokens] int, lengths [B])
SampleFn = Callable[[nnx.Module, np.ndarray, jax.Array], tuple[np.ndarray, np.ndarray]]
# reward_fn(prompts [B, P], responses [B, R]) -> rewards [B] float (one per sequence)
RewardFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


def response_lengths(responses: np.ndarray, eos_id: int | None) -> np.ndarray:
    """[B, R] -> [B]: tokens up to and including the first eos (R when a row has none)."""
    responses = np.asarray(responses)
    if eos_id is None:
        return np.full(len(responses), responses.shape[1], np.int32)
    is_eos = responses == eos_id
    return np.where(is_eos.any(1), is_eos.argmax(1) + 1, responses.shape[1]).astype(np.int32)


def generate_sampler(max_new_tokens: int, *, eos_id: int | None = None) -> SampleFn:
    """A `SampleFn` over `shared.models.sampling.generate` at temperature 1 (the policy itself:
    another temperature would make the update off-policy). Responses are padded to
    `max_new_tokens` with eos (or are that long without an eos_id)."""

    def sample(model: nnx.Module, prompts: np.ndarray, key: jax.Array):
        out = generate(model, prompts, max_new_tokens, temperature=1.0, key=key, eos_id=eos_id)
        if out.shape[1] < max_new_tokens:  # every row ended early: fill with eos, as generate does
            out = np.pad(out, ((0, 0), (0, max_new_tokens - out.shape[1])), constant_values=eos_id)
        return out, response_lengths(out, eos_id)

    return sample


def response_log_probs(
    model: nnx.Module, prompts: jax.Array, responses: jax.Array, lengths: jax.Array
) -> jax.Array:
    """log pi(y_t | x, y_<t) of each response token: prompts [B, P] (P >= 1), responses [B, R],
    lengths [B] -> [B, R] float32, 0 at positions t >= lengths (padding, never read)."""
    p, r = prompts.shape[1], responses.shape[1]
    if p < 1:
        raise ValueError("prompts are empty: the first response token needs a position before it")
    valid = jnp.arange(r)[None, :] < lengths[:, None]
    tokens = jnp.concatenate([prompts, jnp.where(valid, responses, 0)], axis=1)
    logits = model(tokens[:, :-1])[:, p - 1 :]  # position p - 1 + t predicts response token t
    logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    token = jnp.take_along_axis(logp, tokens[:, p:, None], axis=-1)[..., 0]
    return jnp.where(valid, token, 0.0)


def sequence_log_probs(
    model: nnx.Module, prompts: jax.Array, responses: jax.Array, lengths: jax.Array
) -> jax.Array:
    """log pi(y | x) of whole responses: the sum of `response_log_probs` over valid tokens [B]."""
    return jnp.sum(response_log_probs(model, prompts, responses, lengths), axis=1)


def sequence_rewards(token_rewards: jax.Array, lengths: jax.Array) -> jax.Array:
    """Token-level rewards [B, R] -> sequence rewards [B]: the sum over valid positions.

    The official PRM code (prm_biasbench.md section 3) puts the outcome reward on token 0 of the
    response; any placement within the response gives the same sum, hence the same sequence-level
    advantage (REINFORCE or GRPO). It would not be the same for a token-level critic (PPO/GAE)."""
    valid = jnp.arange(token_rewards.shape[1])[None, :] < lengths[:, None]
    return jnp.sum(jnp.where(valid, token_rewards, 0.0), axis=1)


@jax.jit  # jitted: one compile, not one per eager op (the loop calls it every step)
def reinforce_advantages(
    rewards: jax.Array, baseline: jax.Array | float | None = None
) -> jax.Array:
    """[B] -> [B]: r - baseline; `baseline=None` uses the batch mean of `rewards`."""
    rewards = jnp.asarray(rewards, jnp.float32)
    return rewards - (jnp.mean(rewards) if baseline is None else baseline)


@functools.partial(jax.jit, static_argnames="eps")
def grpo_advantages(rewards: jax.Array, eps: float = GRPO_EPS) -> jax.Array:
    """Group-normalized advantages: rewards [num_prompts, G] -> [num_prompts, G].

    (r - mean) / (population std + eps) within each row (the G samples of one prompt); a row of
    equal rewards gets 0 exactly (not rounding noise divided by eps)."""
    rewards = jnp.asarray(rewards, jnp.float32)
    if rewards.ndim != 2 or rewards.shape[1] < 2:
        raise ValueError(
            f"GRPO needs rewards [num_prompts, G] with G >= 2 samples per prompt, got shape "
            f"{rewards.shape}: a group of one has no spread to normalize by"
        )
    mean = jnp.mean(rewards, axis=1, keepdims=True)
    std = jnp.std(rewards, axis=1, keepdims=True)  # ddof=0
    spread = jnp.max(rewards, axis=1, keepdims=True) > jnp.min(rewards, axis=1, keepdims=True)
    return jnp.where(spread, (rewards - mean) / (std + eps), 0.0)


def policy_gradient_loss(token_log_probs: jax.Array, advantages: jax.Array) -> jax.Array:
    """-(1/B) sum_b A_b sum_t log pi(y_{b,t}): token_log_probs [B, R] (0 on padding), A [B]."""
    advantages = jax.lax.stop_gradient(advantages)
    return -jnp.mean(advantages * jnp.sum(token_log_probs, axis=1))


@functools.partial(jax.jit, static_argnums=0)
def policy_gradient_update(graphdef, state, prompts, responses, lengths, advantages):
    """One on-policy step on `state = nnx.state((model, optimizer))` (graphdef from
    `nnx.split((model, optimizer))`); returns (new state, metrics)."""
    model, optimizer = nnx.merge(graphdef, state)

    def loss_fn(model):
        logp = response_log_probs(model, prompts, responses, lengths)
        return policy_gradient_loss(logp, advantages), logp

    (loss, logp), grads = nnx.value_and_grad(loss_fn, has_aux=True)(model)
    optimizer.update(model, grads)
    metrics = {
        "loss": loss,
        "grad_norm": optax.global_norm(grads),
        "seq_log_prob": jnp.mean(jnp.sum(logp, axis=1)),
        "response_len": jnp.mean(lengths.astype(jnp.float32)),
    }
    return nnx.state((model, optimizer)), metrics


@dataclasses.dataclass(frozen=True)
class PolicyGradientConfig:
    method: Literal["grpo", "reinforce"] = "grpo"  # advantage: group-normalized or r - batch mean
    steps: PositiveInt = 200  # updates (one batch of fresh samples each)
    prompts_per_step: PositiveInt = 8  # distinct prompts per update
    samples_per_prompt: PositiveInt = 8  # G: responses sampled per prompt (GRPO needs >= 2)
    max_new_tokens: PositiveInt = 16  # response length bound R
    eos_id: int | None = None  # ends a response (default sampler); None: always R tokens
    lr: PositiveFloat = 1e-3  # Adam learning rate (constant)
    grad_clip: NonNegativeFloat = 1.0  # global-norm clip before Adam (0: none)
    grpo_eps: PositiveFloat = GRPO_EPS  # added to the group std
    seed: NonNegativeInt = 0  # prompt order and sampling keys


@functools.cache  # one object per config: runs of equal configs share one compiled update
def policy_gradient_optimizer(cfg: PolicyGradientConfig) -> optax.GradientTransformation:
    """Adam at a constant `lr` (no weight decay), after an optional global-norm clip."""
    return adamw_no_decay_on_vectors(cfg.lr, 0.0, grad_clip=cfg.grad_clip)


def _checked_rollout(responses, lengths, rewards, b, r, where):
    responses, lengths = np.asarray(responses, np.int32), np.asarray(lengths, np.int32)
    rewards = np.asarray(rewards, np.float32)
    if responses.ndim != 2 or len(responses) != b or responses.shape[1] > r:
        raise ValueError(
            f"{where}: sample_fn returned responses of shape {responses.shape}; expected "
            f"[{b}, <= max_new_tokens={r}]"
        )
    if lengths.shape != (b,) or lengths.min() < 0 or lengths.max() > responses.shape[1]:
        raise ValueError(f"{where}: sample_fn's lengths must be [{b}] in [0, response width]")
    if rewards.shape != (b,):
        raise ValueError(
            f"{where}: reward_fn returned shape {rewards.shape}; it must return one reward per "
            f"sequence, shape [{b}]"
        )
    if not np.all(np.isfinite(rewards)):
        raise ValueError(f"{where}: reward_fn returned non-finite rewards {rewards}")
    pad = ((0, 0), (0, r - responses.shape[1]))  # one compiled update shape
    return np.pad(responses, pad), lengths, rewards


def train_policy_gradient(
    model: nnx.Module,
    prompts: np.ndarray,
    reward_fn: RewardFn,
    cfg: PolicyGradientConfig,
    *,
    sample_fn: SampleFn | None = None,
    tx: optax.GradientTransformation | None = None,
    workdir: pathlib.Path | None = None,
    phase: str = "pg",
    checkpoints: bool = True,
    log_every: int = 10,
    checkpoint_every: int = 0,
) -> nnx.Module:
    """Trains `model` in place by on-policy policy gradient on `prompts [N, P]`; returns it.

    Each step takes `prompts_per_step` prompts (a seeded, resumable shuffle), repeats each
    `samples_per_prompt` times (rows g*G .. g*G + G - 1 share prompt g), samples with
    `sample_fn` (default: `generate_sampler(max_new_tokens, eos_id=eos_id)`) under the key
    fold_in(stream(seed, "sample"), step), scores with `reward_fn`, and makes one update. With
    `workdir`, metrics (loss, reward, grad_norm, seq_log_prob, response_len and, for GRPO,
    zero_spread_groups: the share of groups with equal rewards, which teach nothing) go to
    workdir/metrics.jsonl, and unless `checkpoints=False` the run checkpoints to
    workdir/checkpoints/<phase> and resumes from there exactly.
    """
    prompts = np.asarray(prompts, np.int32)
    if prompts.ndim != 2:
        raise ValueError(
            f"prompts must be [num_prompts, length] (equal lengths), got {prompts.shape}"
        )
    g = cfg.samples_per_prompt
    if cfg.method == "grpo" and g < 2:
        raise ValueError(f"method='grpo' needs samples_per_prompt >= 2, got {g}")
    sample_fn = sample_fn or generate_sampler(cfg.max_new_tokens, eos_id=cfg.eos_id)
    optimizer = nnx.Optimizer(model, tx or policy_gradient_optimizer(cfg), wrt=nnx.Param)
    graphdef, state = nnx.split((model, optimizer))
    model_graphdef = nnx.graphdef(model)
    sample_key = rng.stream(cfg.seed, "sample")

    def step_fn(state, batch, step):
        group_prompts = np.repeat(batch["prompts"], g, axis=0)  # [P * G, T], group-major
        policy = nnx.merge(model_graphdef, state[0])
        responses, lengths = sample_fn(policy, group_prompts, rng.step_key(sample_key, step))
        rewards = reward_fn(group_prompts, responses)
        responses, lengths, rewards = _checked_rollout(
            responses, lengths, rewards, len(group_prompts), cfg.max_new_tokens,
            f"{phase} step {step + 1}",
        )  # fmt: skip
        extra = {"reward": float(rewards.mean())}
        if cfg.method == "grpo":
            grouped = rewards.reshape(-1, g)
            advantages = grpo_advantages(grouped, cfg.grpo_eps).reshape(-1)
            extra["zero_spread_groups"] = float(np.mean(grouped.max(1) == grouped.min(1)))
        else:
            advantages = reinforce_advantages(rewards)
        state, metrics = policy_gradient_update(
            graphdef, state, group_prompts, responses, lengths, advantages
        )
        return state, {**metrics, **extra}

    ckpt_dir = workdir / "checkpoints" / phase if workdir is not None and checkpoints else None
    state = train_loop(
        state=state,
        step_fn=step_fn,
        batches=batch_iterator({"prompts": prompts}, cfg.prompts_per_step, cfg.seed),
        num_steps=cfg.steps,
        checkpoint_dir=ckpt_dir,
        checkpoint_every=checkpoint_every,
        metrics_path=None if workdir is None else workdir / "metrics.jsonl",
        name=phase,
        items_per_step=cfg.prompts_per_step * g,
        log_every=log_every,
    )
    nnx.update((model, optimizer), state)
    return model
