"""The optimization problems of the tables, each as pure functions PASO can vmap.

A `Problem` holds the initial parameters, the data (a pytree of arrays passed to the gradient, so
that nothing large is baked into the compiled program), `grad_fn(params, t, data)` whose minibatch
and random draws depend only on the step index t, the optax optimizer and `evaluate(params)`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from shared import rng
from shared.config import NonNegativeInt, PositiveFloat, PositiveInt
from shared.models.llama import SIZES, Llama, LlamaConfig, next_token_loss
from shared.models.mlp import MLP


class Problem(NamedTuple):
    name: str
    params: Any  # θ_0
    data: Any  # pytree of arrays, the third argument of grad_fn
    grad_fn: Callable  # (params, step, data) -> grads
    tx: optax.GradientTransformation
    evaluate: Callable  # params -> {"metric": float, ...} on held-out data
    metric: str  # what evaluate()["metric"] is, e.g. "test accuracy"


def step_indices(perm: jax.Array, t: jax.Array, batch: int) -> jax.Array:
    """Minibatch of step t: entries t·B .. t·B+B−1 (mod n) of a fixed seeded permutation, so
    batch t is the same batch in every run (the official cv_nccl `step -> batch` mapping)."""
    return jnp.take(perm, (t * batch + jnp.arange(batch)) % perm.shape[0])


def split_model(model: nnx.Module):
    graphdef, params = nnx.split(model)
    return graphdef, params


# --- (a) Ackley, the official OptEx comparison -------------------------------------------------
@dataclasses.dataclass(frozen=True)
class AckleyConfig:
    dim: PositiveInt = 10_000  # d (official optex_cmp: 1e4)
    init_range: PositiveFloat = 1.0  # θ_0 ~ U(-r, r) (official: (-1, 1))
    lr: PositiveFloat = 1e-3  # Adam learning rate (official)
    steps: PositiveInt = 1000  # T (official: 1000)


def ackley(x: jax.Array) -> jax.Array:
    d = x.shape[0]
    a = -20.0 * jnp.exp(-0.2 * jnp.sqrt(jnp.sum(x**2) / d))
    return a - jnp.exp(jnp.sum(jnp.cos(2 * jnp.pi * x)) / d) + 20.0 + jnp.e


def ackley_problem(cfg: AckleyConfig, seed: int) -> Problem:
    x0 = jax.random.uniform(
        rng.stream(seed, "init"), (cfg.dim,), jnp.float32, -cfg.init_range, cfg.init_range
    )
    grad = jax.grad(lambda p, t, data: ackley(p["x"]))  # deterministic: t is unused
    return Problem(
        "ackley",
        {"x": x0},
        {},
        grad,
        optax.adam(cfg.lr),
        lambda p: {"metric": float(ackley(p["x"]))},
        "f(θ_T) (optimum 0)",
    )


# --- (b) MLP on MNIST --------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class MLPConfig:
    hidden: tuple[PositiveInt, ...] = (128,)  # hidden widths of the 784 -> ... -> 10 MLP
    batch_size: PositiveInt = 64  # minibatch per step
    lr: PositiveFloat = 1e-3  # Adam learning rate
    steps: PositiveInt = 500  # T
    train_size: NonNegativeInt = 0  # first n training images (0: all 50,000)
    test_size: NonNegativeInt = 0  # first n test images (0: all 10,000)


def _mnist(train_size: int, test_size: int):
    from shared.data.images import load_mnist

    m = load_mnist()
    n_tr = train_size or len(m.train.x)
    n_te = test_size or len(m.test.x)
    flat = lambda a, n: np.asarray(a.x[:n]).reshape(n, -1)  # noqa: E731
    return flat(m.train, n_tr), np.asarray(m.train.y[:n_tr]), flat(m.test, n_te), m.test.y[:n_te]


def mlp_problem(cfg: MLPConfig, seed: int) -> Problem:
    xtr, ytr, xte, yte = _mnist(cfg.train_size, cfg.test_size)
    model = MLP(784, cfg.hidden, 10, rngs=nnx.Rngs(rng.stream(seed, "init")))
    graphdef, params = split_model(model)
    perm = rng.numpy_rng(seed, "data").permutation(len(xtr)).astype(np.int32)
    data = {"x": jnp.asarray(xtr), "y": jnp.asarray(ytr), "perm": jnp.asarray(perm)}

    def loss(p, t, d):
        idx = step_indices(d["perm"], t, cfg.batch_size)
        logits = nnx.merge(graphdef, p)(d["x"][idx])
        return optax.softmax_cross_entropy_with_integer_labels(logits, d["y"][idx]).mean()

    @jax.jit
    def _eval(p, x, y):
        logits = nnx.merge(graphdef, p)(x)
        ce = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
        return jnp.mean(jnp.argmax(logits, -1) == y), ce

    def evaluate(p):
        acc, ce = _eval(p, jnp.asarray(xte), jnp.asarray(yte))
        return {"metric": float(acc), "loss": float(ce)}

    return Problem(
        "mnist_mlp", params, data, jax.grad(loss), optax.adam(cfg.lr), evaluate, "test accuracy"
    )


# --- (c) small LLaMA on text ---------------------------------------------------------------------
# Llama-3.2-1B dimensions (16 layers, width 2048, 32 query / 8 key-value heads, SwiGLU 8192, tied
# embeddings, RoPE base 500000); the vocabulary is set by the tokenizer.
LLAMA_1B = LlamaConfig(257, 2048, 16, 32, 8, 8192, rope_base=500000.0, tie_embeddings=True)


@dataclasses.dataclass(frozen=True)
class LMConfig:
    size: str = "nano"  # shared.models.llama.SIZES key, or "llama-3.2-1b"
    corpus: str = "shakespeare"  # shared.data.text corpus: shakespeare or wikipedia
    seq_len: PositiveInt = 64  # tokens per training window (byte-level)
    batch_size: PositiveInt = 16  # windows per step
    lr: PositiveFloat = 3e-3  # constant-LR Adam (as the official LLM runs)
    steps: PositiveInt = 300  # T
    eval_windows: PositiveInt = 128  # validation windows for the perplexity


def llama_config(size: str, seq_len: int) -> LlamaConfig:
    if size == "llama-3.2-1b":
        base = LLAMA_1B
    elif size in SIZES:
        base = SIZES[size]
    else:
        raise ValueError(f"llama.size={size!r}: choose 'llama-3.2-1b' or one of {list(SIZES)}")
    return dataclasses.replace(base, vocab_size=257, max_seq_len=max(seq_len, base.max_seq_len))


def lm_windows(cfg: LMConfig, seed: int) -> tuple[np.ndarray, np.ndarray]:
    from shared.data.lm_pipeline import pack_documents
    from shared.data.text import load_corpus
    from shared.data.tokenizers import ByteTokenizer

    corpus = load_corpus(cfg.corpus, seed=0)  # the split is fixed; seeds vary init and order
    tok = ByteTokenizer()
    return pack_documents(corpus.train, tok, cfg.seq_len), pack_documents(
        corpus.validation, tok, cfg.seq_len
    )


def lm_grad_fn(graphdef, batch_size: int) -> Callable:
    def loss(p, t, d):
        w = d["windows"][step_indices(d["perm"], t, batch_size)]
        return next_token_loss(nnx.merge(graphdef, p)(w[:, :-1]), w[:, 1:])

    return jax.grad(loss)


def llama_module(cfg: LMConfig, seed: int) -> Llama:
    return Llama(llama_config(cfg.size, cfg.seq_len), rngs=nnx.Rngs(rng.stream(seed, "init")))


def llama_model(cfg: LMConfig, seed: int):
    return split_model(llama_module(cfg, seed))


def llama_problem(cfg: LMConfig, seed: int) -> Problem:
    train, val = lm_windows(cfg, seed)
    graphdef, params = llama_model(cfg, seed)
    perm = rng.numpy_rng(seed, "data").permutation(len(train)).astype(np.int32)
    data = {"windows": jnp.asarray(train), "perm": jnp.asarray(perm)}
    probe = jnp.asarray(val[rng.numpy_rng(0, "eval").permutation(len(val))[: cfg.eval_windows]])

    @jax.jit
    def _eval(p):
        return next_token_loss(nnx.merge(graphdef, p)(probe[:, :-1]), probe[:, 1:])

    def evaluate(p):
        loss = float(_eval(p))
        return {"metric": float(np.exp(loss)), "loss": loss}

    return Problem(
        "llama",
        params,
        data,
        lm_grad_fn(graphdef, cfg.batch_size),
        optax.adam(cfg.lr),
        evaluate,
        "validation perplexity (bytes)",
    )
