"""Function vectors, Todd-style (ericwtodd/function_vectors, read for its semantics):

    ā_{l,h}   mean over clean prompts of head (l,h)'s output at the final token (before o_proj)
    CIE_{l,h} P(y | corrupted, a_{l,h} := ā_{l,h}) − P(y | corrupted), at the last token
    AIE_{l,h} mean CIE over trials
    FV        Σ_{(l,h) in top-k AIE} o_proj_l(ā_{l,h} in head slot h of a zero vector)

Prompts are left-padded batches (`pad_batch`): tokens [B, T], pads [B]. Patching the last
token's head output changes only the last position, so the CIE of every (layer, head) pair is
one prefix run into a KV cache plus a single-token forward per pair (`last_token_logits`,
vmapped over the pairs), which equals the full traced forward with the same patch (tested).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from shared.interp import Intervention, steering, trace
from shared.models.llama import KVCache, Llama


def pad_batch(prompts: list[list[int]], pad_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Token lists -> (tokens [B, T] right-aligned, pads [B])."""
    t = max(len(p) for p in prompts)
    tokens = np.full((len(prompts), t), pad_id, np.int32)
    for i, p in enumerate(prompts):
        tokens[i, t - len(p) :] = p
    return tokens, np.asarray([t - len(p) for p in prompts], np.int32)


def _pos_valid(pads: jax.Array, t: int) -> tuple[jax.Array, jax.Array]:
    slots = jnp.arange(t)[None, :]
    return jnp.maximum(slots - pads[:, None], 0), slots >= pads[:, None]


@functools.partial(jax.jit, static_argnums=0)
def _traced(graphdef, state, tokens, pads, iv):
    model = nnx.merge(graphdef, state)
    positions, valid = _pos_valid(pads, tokens.shape[1])
    return trace(
        model, tokens, intervention=iv, capture=("heads", "resid_pre"), positions=positions,
        key_valid=valid,
    )  # fmt: skip


def run_traced(model: Llama, tokens, pads, iv: Intervention | None = None):
    """(logits [B, T, V], {"heads": [L, B, T, N, H], "resid_pre": [L, B, T, D]})."""
    graphdef, state = nnx.split(model)
    return _traced(graphdef, state, jnp.asarray(tokens), jnp.asarray(pads), iv or Intervention())


def mean_head_outputs(model: Llama, tokens, pads, batch: int = 32) -> np.ndarray:
    """ā [L, N, H]: each head's output at the final token, averaged over the prompts."""
    total = None
    for i in range(0, len(tokens), batch):
        _, cap = run_traced(model, tokens[i : i + batch], pads[i : i + batch])
        s = np.asarray(cap["heads"][:, :, -1].sum(1))
        total = s if total is None else total + s
    return total / len(tokens)


def last_token_logits(model: Llama, cache: KVCache, last, pads, valid, mask, values, steer=None):
    """Logits [B, V] of the final token `last` [B] after the prefix held in `cache`, with head
    outputs replaced where mask [L, N] is set by values [L, N, H] (and steer [L, D] added to
    the residual entering each block)."""
    b = last.shape[0]
    positions = (cache.length - pads)[:, None]
    cos, sin, amask, start = model.positional(last[:, None], cache, positions, valid)
    x = model.embed_tokens(last[:, None])
    for i, layer in enumerate(model.layers):
        if steer is not None:
            x = x + steer[i]
        attn = layer.self_attn
        q, k, v = attn.project(layer.input_layernorm(x), cos, sin)
        heads, _ = attn.mix(q, k, v, amask, (cache.k[i], cache.v[i]), start, True)
        heads = jnp.where(mask[i][None, None, :, None], values[i][None, None], heads)
        x = x + attn.o_proj(heads.reshape(b, 1, -1))
        x = x + layer.mlp(layer.post_attention_layernorm(x))
    return model.unembed(x)[:, 0]


def prefix_cache(model: Llama, tokens, pads) -> tuple[KVCache, jax.Array]:
    """The prefix tokens[:, :-1] run into a cache of T slots; (cache, key_valid [B, T])."""
    b, t = tokens.shape
    positions, valid = _pos_valid(pads, t)
    cache = KVCache.empty(model.cfg, b, t)
    _, cache = model(tokens[:, :-1], cache=cache, positions=positions[:, :-1], key_valid=valid)
    return cache, valid


@functools.partial(jax.jit, static_argnums=0)
def _cie_all(graphdef, state, tokens, pads, targets, mean_heads):
    """P(target) after patching each (l, h) with ā_{l,h} at the last token, [L, N, B], and the
    unpatched P(target) [B]."""
    model = nnx.merge(graphdef, state)
    cfg = model.cfg
    cache, valid = prefix_cache(model, tokens, pads)
    last = tokens[:, -1]
    nl, nh = cfg.num_layers, cfg.num_heads

    def prob(mask):
        logits = last_token_logits(model, cache, last, pads, valid, mask, mean_heads)
        p = jax.nn.softmax(logits, axis=-1)
        return jnp.take_along_axis(p, targets[:, None], -1)[:, 0]

    def one(pair):
        layer, h = pair // nh, pair % nh
        mask = (jnp.arange(nl)[:, None] == layer) & (jnp.arange(nh)[None, :] == h)
        return prob(mask)

    patched = jax.lax.map(one, jnp.arange(nl * nh), batch_size=min(nl * nh, 32))
    base = prob(jnp.zeros((nl, nh), bool))
    return patched.reshape(nl, nh, -1), base


def causal_indirect_effects(model: Llama, tokens, pads, targets, mean_heads) -> np.ndarray:
    """CIE [L, N, B] of patching ā_{l,h} into each head at the last token of the corrupted
    prompts (tokens [B, T]) on the probability of their first answer token `targets` [B]."""
    graphdef, state = nnx.split(model)
    patched, base = _cie_all(
        graphdef, state, jnp.asarray(tokens), jnp.asarray(pads), jnp.asarray(targets),
        jnp.asarray(mean_heads),
    )  # fmt: skip
    return np.asarray(patched - base[None, None])


def top_heads(aie: np.ndarray, k: int) -> list[tuple[int, int]]:
    """The k (layer, head) pairs of largest AIE [L, N], largest first."""
    order = np.argsort(-aie, axis=None, kind="stable")[:k]
    return [tuple(int(x) for x in np.unravel_index(i, aie.shape)) for i in order]


def function_vector(model: Llama, mean_heads: np.ndarray, heads: list[tuple[int, int]]):
    """FV [D] = Σ over `heads` of o_proj_l applied to ā_{l,h} in slot h of a zero vector
    (the model has no o_proj bias; with one, Todd's code adds it once per head)."""
    nh, hd = model.cfg.num_heads, model.cfg.resolved_head_dim
    fv = jnp.zeros((model.cfg.dim,), jnp.float32)
    for layer, h in heads:
        slot = jnp.zeros((nh, hd), jnp.float32).at[h].set(jnp.asarray(mean_heads[layer, h]))
        fv = fv + model.layers[layer].self_attn.o_proj(slot.reshape(1, -1))[0].astype(jnp.float32)
    return np.asarray(fv)


@functools.partial(jax.jit, static_argnums=(0, 5))
def _greedy(graphdef, state, tokens, pads, steer_rows, max_new):
    """Greedy continuation of left-padded prompts, recomputing the whole buffer each step:
    steer_rows [L, B, T + max_new, D] is added to the residual entering each block."""
    model = nnx.merge(graphdef, state)
    b, t = tokens.shape
    buf = jnp.concatenate([tokens, jnp.zeros((b, max_new), tokens.dtype)], axis=1)
    positions, valid = _pos_valid(pads, t + max_new)
    iv = Intervention(steer=steer_rows)

    def step(i, buf):
        logits, _ = trace(model, buf, intervention=iv, positions=positions, key_valid=valid)
        nxt = jnp.argmax(jax.lax.dynamic_index_in_dim(logits, t - 1 + i, 1, False), -1)
        return jax.lax.dynamic_update_index_in_dim(buf, nxt.astype(buf.dtype), t + i, 1)

    return jax.lax.fori_loop(0, max_new, step, buf)[:, t:]


def generate(
    model: Llama,
    tokens,
    pads,
    max_new: int,
    *,
    vector=None,
    layer: int = 0,
    alpha: float = 0.0,
    where: str = "last",
    batch: int = 64,
) -> np.ndarray:
    """Greedy new tokens [B, max_new]; with `vector` [D], alpha * vector is added to the
    residual entering block `layer` at the prompt's last position ("last") or at the last and
    every generated position ("all")."""
    graphdef, state = nnx.split(model)
    cfg = model.cfg
    out = []
    for i in range(0, len(tokens), batch):
        tk, pd = jnp.asarray(tokens[i : i + batch]), jnp.asarray(pads[i : i + batch])
        b, t = tk.shape
        if vector is None:
            steer = jnp.zeros((cfg.num_layers, 1, t + max_new, cfg.dim), jnp.float32)
        else:
            slots = jnp.arange(t + max_new)[None, :]
            at = (slots == t - 1) if where == "last" else (slots >= t - 1)
            steer = steering(cfg.num_layers, layer, jnp.asarray(vector), alpha, at)
        out.append(np.asarray(_greedy(graphdef, state, tk, pd, steer, max_new)))
    return np.concatenate(out)


@functools.partial(jax.jit, static_argnums=0)
def _token_nll(graphdef, state, tokens, pads):
    model = nnx.merge(graphdef, state)
    positions, valid = _pos_valid(pads, tokens.shape[1])
    logits = model(tokens, positions=positions, key_valid=valid)
    logp = jax.nn.log_softmax(logits[:, :-1], -1)
    return -jnp.take_along_axis(logp, tokens[:, 1:, None], -1)[..., 0]


def token_nll(model: Llama, tokens, pads, batch: int = 64) -> np.ndarray:
    """[B, T-1] negative log-likelihood of each next token under the unsteered model."""
    graphdef, state = nnx.split(model)
    return np.concatenate([
        np.asarray(_token_nll(graphdef, state, jnp.asarray(tokens[i : i + batch]),
                              jnp.asarray(pads[i : i + batch])))
        for i in range(0, len(tokens), batch)
    ])  # fmt: skip


def answer_accuracy(
    model: Llama,
    prompts,
    answers,
    *,
    vector=None,
    layer: int = 0,
    alpha: float = 0.0,
    batch: int = 32,
) -> float:
    """Exact match of greedy answers, computed teacher-forced: a row is right iff the argmax at
    every answer position is the answer token, which is what greedy decoding produces. With
    `vector`, alpha * vector enters block `layer` at the prompt's last token only (as in
    `generate(..., where="last")`)."""
    cfg = model.cfg
    hits = []
    for i in range(0, len(prompts), batch):
        rows = [list(p) + list(a) for p, a in zip(prompts[i : i + batch], answers[i : i + batch])]
        alen = np.asarray([len(a) for a in answers[i : i + batch]])
        tok, pads = pad_batch(rows)
        t = tok.shape[1]
        last = t - 1 - alen  # the prompt's last slot per row
        if vector is None:
            iv = Intervention()
        else:
            at = jnp.arange(t)[None, :] == jnp.asarray(last)[:, None]
            iv = Intervention(steer=steering(cfg.num_layers, layer, jnp.asarray(vector), alpha, at))
        logits, _ = run_traced(model, tok, pads, iv)
        pred = np.asarray(jnp.argmax(logits, -1))
        for r, n in enumerate(alen):
            hits.append(bool(np.all(pred[r, last[r] : last[r] + n] == tok[r, last[r] + 1 :])))
    return float(np.mean(hits))
