"""Supervised fine-tuning of a decoder on (prompt, response) pairs, with the loss on response
tokens only (ConPress's SFT stage, ../papers/conpress.md section 2).

Rows follow the LM windows' layout (shared.train.lm): `tokens [n, seq_len + 1]`, inputs
`tokens[:, :-1]`, targets `tokens[:, 1:]`. A row is the prompt, the response, an optional eos,
then `pad_id` up to the row length (right padding). `loss_mask [n, seq_len]` is aligned with the
targets: 1 exactly where the target is a response token (the eos included), 0 on prompt targets
and padding. The prompt's own tokens are never targets, so the first response token is predicted
from the last prompt position; a prompt must therefore hold at least one token (a BOS).

Loss: the mean next-token cross-entropy (nats) over the response tokens of the whole batch,
sum(mask * nll) / sum(mask), so a long response weighs more than a short one (as Hugging Face's
ignore-index mean does); a batch without response tokens gives 0, never NaN.
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from shared.config import Fraction, NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt
from shared.data.pipeline import batch_iterator
from shared.train.loop import train_loop
from shared.train.optimizers import adamw_no_decay_on_vectors, warmup_cosine


@dataclasses.dataclass(frozen=True)
class PackedPairs:
    """Fixed-length rows of (prompt, response) pairs."""

    tokens: np.ndarray  # [n, seq_len + 1] int32: prompt, response, eos?, pad_id...
    loss_mask: np.ndarray  # [n, seq_len] float32: 1 where tokens[:, 1:] is a response token
    truncated: np.ndarray  # [n] bool: responses cut to fit the row (only with truncate=True)


def pack_pairs(
    pairs: Sequence[tuple[Sequence[int], Sequence[int]]],
    seq_len: int,
    *,
    eos_id: int | None = None,
    pad_id: int = 0,
    truncate: bool = False,
) -> PackedPairs:
    """Packs `(prompt ids, response ids)` pairs into rows of `seq_len + 1` tokens.

    `eos_id` is appended to every response (and is a target). A pair longer than a row raises,
    unless `truncate=True`: then the response (with its eos) is cut at the row's end, so a cut
    response never ends with eos, and `truncated` marks the row. The prompt is never cut.
    """
    if seq_len < 1:
        raise ValueError(f"seq_len={seq_len} must be >= 1")
    width = seq_len + 1
    tokens = np.full((len(pairs), width), pad_id, np.int32)
    mask = np.zeros((len(pairs), seq_len), np.float32)
    truncated = np.zeros(len(pairs), bool)
    for i, (prompt, response) in enumerate(pairs):
        prompt = list(prompt)
        target = list(response) + ([] if eos_id is None else [eos_id])
        if not prompt:
            raise ValueError(
                f"pair {i} has an empty prompt: its first response token would have no position "
                "that predicts it; start every prompt with a BOS token"
            )
        if not target:
            raise ValueError(
                f"pair {i} has an empty response and no eos_id: it has nothing to learn; "
                "drop it or pass eos_id"
            )
        if len(prompt) >= width:
            raise ValueError(
                f"pair {i}: its prompt alone ({len(prompt)} tokens) leaves no room for a response "
                f"in a row of seq_len + 1 = {width} tokens; raise seq_len to at least "
                f"{len(prompt)} (truncation never cuts prompts)"
            )
        total = len(prompt) + len(target)
        if total > width:
            if not truncate:
                eos = "" if eos_id is None else " + eos (1)"
                raise ValueError(
                    f"pair {i}: prompt ({len(prompt)} tokens) + response ({len(response)}){eos} "
                    f"= {total} tokens exceed a row of seq_len + 1 = {width}; raise seq_len to "
                    f"at least {total - 1}, or pass truncate=True to cut long responses"
                )
            target = target[: width - len(prompt)]
            truncated[i] = True
        row = prompt + target
        tokens[i, : len(row)] = row
        # target j is tokens[j + 1]: response tokens sit at len(prompt) .. len(row) - 1
        mask[i, len(prompt) - 1 : len(row) - 1] = 1.0
    return PackedPairs(tokens, mask, truncated)


def unpack_row(tokens: np.ndarray, loss_mask: np.ndarray) -> tuple[list[int], list[int]]:
    """One packed row [seq_len + 1], mask [seq_len] -> (prompt ids, response ids incl. eos)."""
    targets = np.flatnonzero(loss_mask)
    if targets.size == 0:
        raise ValueError("the row has no response tokens (an all-padding row)")
    first, last = int(targets[0]), int(targets[-1])
    return tokens[: first + 1].tolist(), tokens[first + 1 : last + 2].tolist()


def masked_next_token_loss(logits: jax.Array, targets: jax.Array, mask: jax.Array) -> jax.Array:
    """sum(mask * nll) / sum(mask): logits [B, T, V], targets [B, T] int, mask [B, T] (0 or 1).

    Targets where mask is 0 are never read (any id is fine there, even out of range), so they
    change neither the loss nor its gradient. No response token at all gives 0.
    """
    keep = mask > 0
    logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    safe = jnp.where(keep, targets, 0)
    nll = -jnp.take_along_axis(logp, safe[..., None], axis=-1)[..., 0]
    return jnp.sum(jnp.where(keep, nll, 0.0)) / jnp.maximum(jnp.sum(keep), 1)


def sft_loss(model: nnx.Module, tokens: jax.Array, loss_mask: jax.Array) -> jax.Array:
    """The response-token loss of packed rows: tokens [B, L + 1], loss_mask [B, L]."""
    return masked_next_token_loss(model(tokens[:, :-1]), tokens[:, 1:], loss_mask)


@functools.partial(jax.jit, static_argnums=0)
def _nll_sum_and_count(graphdef, state, tokens, loss_mask):
    model = nnx.merge(graphdef, state)
    count = jnp.sum(loss_mask > 0)
    return sft_loss(model, tokens, loss_mask) * jnp.maximum(count, 1), count


def evaluate_sft(model: nnx.Module, packed: PackedPairs, batch_size: int = 32) -> float:
    """The mean response-token loss (nats) over every row of `packed` (a token-weighted mean)."""
    n = len(packed.tokens)
    if n == 0:
        raise ValueError("no rows to evaluate")
    graphdef, state = nnx.split(model)
    total, count = 0.0, 0
    for i in range(0, n, batch_size):
        tokens, mask = packed.tokens[i : i + batch_size], packed.loss_mask[i : i + batch_size]
        pad = batch_size - len(tokens)  # all-padding rows: one compiled shape, excluded
        tokens = np.concatenate([tokens, np.repeat(tokens[:1], pad, 0)])
        mask = np.concatenate([mask, np.zeros((pad, mask.shape[1]), mask.dtype)])
        s, c = _nll_sum_and_count(graphdef, state, jnp.asarray(tokens), jnp.asarray(mask))
        total, count = total + float(s), count + int(c)
    return total / count


@functools.partial(jax.jit, static_argnums=0)
def _sft_step(graphdef, state, batch):
    """One AdamW step on `state = nnx.state((model, optimizer))`: graphdef is static, so models
    of one config with one optimizer object share the compiled step."""
    model, optimizer = nnx.merge(graphdef, state)
    loss, grads = nnx.value_and_grad(sft_loss)(model, batch["tokens"], batch["loss_mask"])
    optimizer.update(model, grads)
    metrics = {
        "loss": loss,
        "grad_norm": optax.global_norm(grads),
        "response_tokens": jnp.sum(batch["loss_mask"]),
    }
    return nnx.state((model, optimizer)), metrics


@dataclasses.dataclass(frozen=True)
class SFTConfig:
    steps: PositiveInt = 200  # optimizer steps
    batch_size: PositiveInt = 16  # rows per step
    lr: PositiveFloat = 1e-3  # peak learning rate
    warmup_fraction: Fraction = 0.1  # linear warm-up share of the steps
    final_lr_fraction: Fraction = 0.1  # cosine decays to lr * this
    weight_decay: NonNegativeFloat = 0.0  # AdamW decay on matrices (never on 1-D gains)
    grad_clip: NonNegativeFloat = 1.0  # global-norm clip before AdamW (0: none)
    seed: NonNegativeInt = 0  # data order


@functools.cache  # one object per config: runs of equal configs share one compiled step
def sft_optimizer(cfg: SFTConfig) -> optax.GradientTransformation:
    """AdamW (no decay on 1-D tensors, optional clipping) on the shared warm-up + cosine."""
    warmup = int(cfg.warmup_fraction * cfg.steps)
    schedule = warmup_cosine(cfg.lr, cfg.steps, warmup, cfg.final_lr_fraction)
    return adamw_no_decay_on_vectors(schedule, cfg.weight_decay, grad_clip=cfg.grad_clip)


def train_sft(
    model: nnx.Module,
    packed: PackedPairs,
    cfg: SFTConfig,
    *,
    tx: optax.GradientTransformation | None = None,
    workdir: pathlib.Path | None = None,
    phase: str = "sft",
    checkpoints: bool = True,
    log_every: int = 50,
    checkpoint_every: int = 0,
) -> nnx.Module:
    """Fine-tunes `model` in place on `packed` rows and returns it.

    Batches are drawn by a seeded grain iterator (reshuffled every epoch, resumable exactly).
    With `workdir`, per-step metrics (loss, grad_norm before clipping, response_tokens) go to
    workdir/metrics.jsonl under `phase`, and unless `checkpoints=False` the run checkpoints to
    workdir/checkpoints/<phase> (at the end and every `checkpoint_every` steps) and resumes from
    there. A NaN loss stops the run naming the step (shared.train.loop).
    """
    optimizer = nnx.Optimizer(model, tx or sft_optimizer(cfg), wrt=nnx.Param)
    graphdef, state = nnx.split((model, optimizer))
    rows = {"tokens": packed.tokens, "loss_mask": packed.loss_mask}
    ckpt_dir = workdir / "checkpoints" / phase if workdir is not None and checkpoints else None
    state = train_loop(
        state=state,
        step_fn=lambda state, batch, step: _sft_step(graphdef, state, batch),
        batches=batch_iterator(rows, cfg.batch_size, cfg.seed),
        num_steps=cfg.steps,
        checkpoint_dir=ckpt_dir,
        checkpoint_every=checkpoint_every,
        metrics_path=None if workdir is None else workdir / "metrics.jsonl",
        name=phase,
        items_per_step=cfg.batch_size,
        log_every=log_every,
    )
    nnx.update((model, optimizer), state)
    return model
