"""LightGCN + BPR training with a pluggable negative sampler, full-ranking evaluation.

The model is an ego-embedding table [U+I, d] (xavier-uniform, as in MixGCF's code) propagated by
`shared.graph.lightgcn`; it is kept as a plain array so that a whole block of epochs is one jitted
`lax.scan` (no module state to thread through).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

from projects.neg_sampling import samplers
from shared.config import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt
from shared.graph.lightgcn import lightgcn, normalized_edges
from shared.metrics.ranking import mean_over_users, recall_ndcg_at_k


@dataclasses.dataclass(frozen=True)
class TrainParams:
    dim: PositiveInt = 32
    num_layers: NonNegativeInt = 3
    lr: PositiveFloat = 1e-3
    batch_size: PositiveInt = 1024
    epochs: PositiveInt = 100
    eval_every: PositiveInt = 10  # epochs between validation checks (best-on-validation is kept)
    decay: NonNegativeFloat = 1e-4  # L2 on the batch's layer-0 embeddings, / batch size
    num_negatives: PositiveInt = 1  # K: 1 is BPR; K > 1 is log(1 + Σ_k exp(s_k − s⁺))
    top_k: PositiveInt = 20


def k_negative_loss(s_pos: jax.Array, s_neg: jax.Array) -> jax.Array:
    """Mean over rows of log(1 + Σ_k exp(s_neg_k − s_pos)); s_pos [B], s_neg [B, K].
    K = 1 is BPR: softplus(−(s_pos − s_neg))."""
    diff = s_neg - s_pos[:, None]
    return jax.nn.logsumexp(jnp.concatenate([jnp.zeros_like(s_pos)[:, None], diff], 1), 1).mean()


def negative_embeddings(
    layers: jax.Array, num_users: int, pos: jax.Array, items: jax.Array, alpha: jax.Array
) -> jax.Array:
    """Per-layer negatives [B, L+1, d]: α e_pos^(l) + (1 − α) e_item^(l); items, alpha [B, L+1]."""
    l_idx = jnp.arange(layers.shape[0])[None, :]
    e_item = layers[l_idx, num_users + items]  # [B, L+1, d]
    e_pos = layers[:, num_users + pos].transpose(1, 0, 2)
    return alpha[..., None] * e_pos + (1 - alpha[..., None]) * e_item


@dataclasses.dataclass(frozen=True)
class Graph:
    src: jax.Array
    dst: jax.Array
    weight: jax.Array


jax.tree_util.register_dataclass(Graph, data_fields=["src", "dst", "weight"], meta_fields=[])


def make_graph(train: np.ndarray, num_users: int, num_items: int) -> Graph:
    e = normalized_edges(train[:, 0], train[:, 1], num_users, num_items)
    return Graph(jnp.asarray(e.src), jnp.asarray(e.dst), jnp.asarray(e.weight))


def init_embeddings(key: jax.Array, num_nodes: int, dim: int) -> jax.Array:
    bound = np.sqrt(6.0 / (num_nodes + dim))  # xavier-uniform over the [N, d] table
    return jax.random.uniform(key, (num_nodes, dim), jnp.float32, -bound, bound)


@functools.partial(jax.jit, static_argnames=("sampler", "tp", "sp", "num_users", "epochs"))
def train_epochs(
    ego: jax.Array,
    opt_state,
    key: jax.Array,
    train: jax.Array,
    graph: Graph,
    data: samplers.SamplerData,
    true_pos: jax.Array,
    *,
    sampler: str,
    tp: TrainParams,
    sp: samplers.SamplerParams,
    num_users: int,
    epochs: int,
):
    """`epochs` epochs of shuffled mini-batches (remainder dropped, reshuffled every epoch).
    Returns (ego, opt_state, per-epoch mean loss [epochs], per-epoch false-negative rate)."""
    opt = optax.adam(tp.lr)
    steps = train.shape[0] // tp.batch_size

    def loss_fn(ego, k, users, pos):
        pooled, layers = lightgcn(ego, graph.src, graph.dst, graph.weight, tp.num_layers)
        keys = jax.random.split(k, tp.num_negatives)
        items, alpha = jax.vmap(
            lambda kk: samplers.sample(sampler, kk, users, pos, layers, num_users, data, sp)
        )(keys)  # [K, B, L+1]
        neg = jax.vmap(lambda it, al: negative_embeddings(layers, num_users, pos, it, al))(
            items, alpha
        )  # [K, B, L+1, d]
        e_u, e_p = pooled[users], pooled[num_users + pos]
        s_pos = (e_u * e_p).sum(-1)
        s_neg = jnp.einsum("bd,kbd->bk", e_u, neg.mean(2))
        reg = (
            (ego[users] ** 2).sum() + (ego[num_users + pos] ** 2).sum() + (neg[:, :, 0] ** 2).sum()
        ) / 2
        loss = k_negative_loss(s_pos, s_neg) + tp.decay * reg / users.shape[0]
        fnr = true_pos[users[None, :, None], items].mean()
        return loss, fnr

    def step(carry, batch):
        ego, opt_state, k = carry
        (loss, fnr), g = jax.value_and_grad(loss_fn, has_aux=True)(ego, k, batch[:, 0], batch[:, 1])
        updates, opt_state = opt.update(g, opt_state, ego)
        return (optax.apply_updates(ego, updates), opt_state, k), (loss, fnr)

    def epoch(carry, k):
        ego, opt_state = carry
        k_perm, k_steps = jax.random.split(k)
        perm = jax.random.permutation(k_perm, train.shape[0])[: steps * tp.batch_size]
        batches = train[perm].reshape(steps, tp.batch_size, 2)
        step_keys = jax.random.split(k_steps, steps)

        def body(c, xs):
            ego, opt_state, _ = c
            b, sk = xs
            return step((ego, opt_state, sk), b)

        (ego, opt_state, _), (loss, fnr) = jax.lax.scan(
            body, (ego, opt_state, k_steps), (batches, step_keys)
        )
        return (ego, opt_state), (loss.mean(), fnr.mean())

    (ego, opt_state), (loss, fnr) = jax.lax.scan(
        epoch, (ego, opt_state), jax.random.split(key, epochs)
    )
    return ego, opt_state, loss, fnr


@functools.partial(jax.jit, static_argnames=("num_users", "num_layers", "k"))
def evaluate(ego, graph: Graph, mask, target, *, num_users: int, num_layers: int, k: int):
    """Per-user (Recall@k, NDCG@k) [U] of full rankings with `mask` items removed."""
    pooled, _ = lightgcn(ego, graph.src, graph.dst, graph.weight, num_layers)
    scores = pooled[:num_users] @ pooled[num_users:].T
    return recall_ndcg_at_k(scores, mask, target, k)


def fit(
    sampler: str,
    key: jax.Array,
    inter,
    data: samplers.SamplerData,
    tp: TrainParams,
    sp: samplers.SamplerParams,
    progress=None,
) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Trains one sampler; returns (metrics at the best validation Recall@k, per-epoch curves)."""
    if len(inter.train) < tp.batch_size:
        raise ValueError(
            f"batch_size={tp.batch_size} exceeds the {len(inter.train)} training edges; "
            "lower train.batch_size"
        )
    nu = inter.num_users
    graph = make_graph(inter.train, nu, inter.num_items)
    k_init, k_train = jax.random.split(key)
    ego = init_embeddings(k_init, nu + inter.num_items, tp.dim)
    opt_state = optax.adam(tp.lr).init(ego)
    train = jnp.asarray(inter.train, jnp.int32)
    true_pos = jnp.asarray(inter.true_pos)
    m_train = jnp.asarray(inter.mask("train"))
    m_known = jnp.asarray(inter.mask("train", "valid"))
    m_obs = jnp.asarray(inter.mask("train", "valid", "test"))
    ev = functools.partial(evaluate, num_users=nu, num_layers=tp.num_layers, k=tp.top_k)
    valid_t = jnp.asarray(inter.mask("valid"))
    best, best_ego, curves = -1.0, ego, {"loss": [], "fnr": [], "valid_recall": []}
    for block, start in enumerate(range(0, tp.epochs, tp.eval_every)):
        n = min(tp.eval_every, tp.epochs - start)
        ego, opt_state, loss, fnr = train_epochs(
            ego, opt_state, jax.random.fold_in(k_train, block), train, graph, data, true_pos,
            sampler=sampler, tp=tp, sp=sp, num_users=nu, epochs=n,
        )  # fmt: skip
        if not np.isfinite(np.asarray(loss)).all():
            raise FloatingPointError(f"{sampler}: non-finite loss in epochs {start}..{start + n}")
        curves["loss"] += np.asarray(loss).tolist()
        curves["fnr"] += np.asarray(fnr).tolist()
        val = mean_over_users(ev(ego, graph, m_train, valid_t)[0])
        curves["valid_recall"].append(val)
        if val > best:
            best, best_ego = val, ego
        if progress is not None:
            progress.update(n)
    r_t, n_t = ev(best_ego, graph, m_known, jnp.asarray(inter.mask("test")))
    out = {
        "valid_recall": best,
        "recall": mean_over_users(r_t),
        "ndcg": mean_over_users(n_t),
        "fnr": float(np.mean(curves["fnr"])),
    }
    if len(inter.hidden):
        r_h, n_h = ev(best_ego, graph, m_obs, jnp.asarray(inter.mask("hidden")))
        out |= {"recall_hidden": mean_over_users(r_h), "ndcg_hidden": mean_over_users(n_h)}
    return out, curves
