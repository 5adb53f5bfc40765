"""The Flax BERT encoder and all-MiniLM-L6-v2 loaded from its safetensors file.

Reference numbers are in shared/MODELS.md (all-MiniLM-L6-v2 section).
"""

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from safetensors.numpy import load_file

from shared.data.resolver import package_file
from shared.data.tokenizers import minilm_tokenizer
from shared.models.bert import Bert, BertConfig, mean_pool
from shared.models.pretrained import minilm
from shared.models.transformer import EncoderBlock

FOOD, BREAD = "A man is eating food.", "A man is eating a piece of bread."
UNRELATED = [
    (FOOD, "The stock market fell sharply on Monday."),
    ("The cat sleeps on the windowsill.", "Interest rates were raised by the central bank."),
    ("She plays the violin in an orchestra.", "The volcano erupted, covering the town in ash."),
]


@pytest.fixture(scope="module")
def model() -> Bert:
    return minilm.load_minilm()


@pytest.fixture(scope="module")
def tensors() -> dict[str, np.ndarray]:
    return load_file(str(package_file(*minilm.MODEL_DIR, "model.safetensors")))


@pytest.fixture(scope="module")
def encoder(model) -> minilm.SentenceEncoder:
    return minilm.SentenceEncoder(model, minilm_tokenizer())


def test_reference_pair_cosine_and_token_ids(encoder):
    tok = minilm_tokenizer()
    assert tok.encode(FOOD) == [101, 1037, 2158, 2003, 5983, 2833, 1012, 102]
    assert tok.encode(BREAD) == [101, 1037, 2158, 2003, 5983, 1037, 3538, 1997, 7852, 1012, 102]
    e = encoder([FOOD, BREAD])
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-6)
    cos = float(e[0] @ e[1])
    print(f"cos(food, bread) = {cos:.5f}")
    assert abs(cos - 0.75534) < 0.005


def test_unrelated_pairs_are_near_orthogonal(encoder):
    related = float(np.prod(encoder([FOOD, BREAD]), axis=0).sum())
    for a, b in UNRELATED:
        ea, eb = encoder([a, b])
        cos = float(ea @ eb)
        print(f"cos({a!r}, {b!r}) = {cos:.4f}")
        assert abs(cos) < 0.2 and cos < related - 0.5


def test_padding_invariance(encoder):
    long = " ".join(["The committee reviewed every paragraph of the very long report."] * 6)
    alone = encoder([FOOD])  # shape [1, 16]: 8 tokens + 8 padding columns
    batched = encoder([long, FOOD])  # shape [2, 128]: FOOD row has 120 padding columns
    np.testing.assert_allclose(alone[0], batched[1], atol=1e-5)


def test_bucketed_lengths_bound_recompilation(model):
    texts = [" ".join(["word"] * n) for n in range(1, 24, 2)]  # 12 texts, 3..25 tokens
    enc = minilm.SentenceEncoder(model, batch_size=2)
    before = minilm.TRACE_COUNT["embed"]
    first = enc(texts)
    compiled = minilm.TRACE_COUNT["embed"] - before
    # 6 batches of 2 sorted texts, padded to length buckets 16 and 32: at most 2 shapes.
    assert compiled <= 2, compiled
    np.testing.assert_array_equal(enc(texts[::-1]), first[::-1])
    assert minilm.TRACE_COUNT["embed"] - before == compiled  # a second pass compiles nothing
    assert [minilm.padded_length(n, 512) for n in (1, 16, 17, 300, 600)] == [16, 16, 32, 512, 512]
    assert minilm.padded_length(9, 12) == 12  # never beyond the model's positions


def test_encode_sentences_default_model_reuses_compiled_forward(encoder):
    expected = encoder([FOOD, BREAD])
    before = minilm.TRACE_COUNT["embed"]
    got = minilm.encode_sentences([FOOD, BREAD])  # loads the packaged model once more
    # a freshly loaded model has an equal graphdef, so the shared jitted forward is reused
    assert minilm.TRACE_COUNT["embed"] == before
    np.testing.assert_array_equal(got, expected)


def test_parameter_count_and_every_tensor_consumed(model, tensors):
    assert len(tensors) == 104
    total_in_file = sum(v.size for v in tensors.values())
    skipped = sum(tensors[n].size for n in minilm.SKIPPED)
    n_params = sum(x.size for x in jax.tree.leaves(nnx.state(model, nnx.Param)))
    print(f"file: {total_in_file:,} values; model: {n_params:,} parameters")
    # 22.7M in the file = the encoder + 512 position ids + the 384x384 pooler (unused here)
    assert total_in_file == 22_713_728 and skipped == 512 + 384 * 384 + 384
    assert n_params == total_in_file - skipped == 22_565_376

    cfg = BertConfig()
    mapped = minilm.flax_params_from_hf(tensors, cfg)
    assert sum(v.size for v in mapped.values()) == n_params and len(mapped) == 77
    with pytest.raises(ValueError, match="unused tensors.*encoder.layer.6"):
        minilm.flax_params_from_hf({**tensors, "encoder.layer.6.output.dense.bias": 0}, cfg)
    partial = {k: v for k, v in tensors.items() if k != "encoder.layer.3.attention.self.key.bias"}
    with pytest.raises(ValueError, match="layer.3.attention.self.key.bias.*missing"):
        minilm.flax_params_from_hf(partial, cfg)


def test_config_mismatch_fails_clearly(tmp_path):
    hf = json.loads(package_file(*minilm.MODEL_DIR, "config.json").read_text())
    (tmp_path / "config.json").write_text(
        json.dumps({**hf, "hidden_act": "gelu_new", "num_hidden_layers": 12})
    )
    with pytest.raises(ValueError, match="num_hidden_layers=12.*hidden_act='gelu_new'"):
        minilm.check_config(tmp_path / "config.json")


def _np_layer_norm(x, w, b, eps=1e-12):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps) * w + b


def _np_bert(t: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    """HF BertModel's forward in float64 numpy from the raw tensors, one unpadded text."""
    t = {k: v.astype(np.float64) for k, v in t.items()}
    erf = np.vectorize(math.erf)
    s = len(ids)
    x = t["embeddings.word_embeddings.weight"][ids] + t["embeddings.position_embeddings.weight"][:s]
    x = x + t["embeddings.token_type_embeddings.weight"][0]
    x = _np_layer_norm(x, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"])

    def dense(h, name):
        return h @ t[name + ".weight"].T + t[name + ".bias"]

    for i in range(6):
        p = f"encoder.layer.{i}."
        q, k, v = (
            dense(x, p + f"attention.self.{n}").reshape(s, 12, 32).transpose(1, 0, 2)
            for n in ("query", "key", "value")
        )
        logits = q @ k.transpose(0, 2, 1) / math.sqrt(32)
        w = np.exp(logits - logits.max(-1, keepdims=True))
        a = (w / w.sum(-1, keepdims=True)) @ v  # [heads, s, 32]
        a = dense(a.transpose(1, 0, 2).reshape(s, 384), p + "attention.output.dense")
        x = _np_layer_norm(
            x + a, *(t[p + f"attention.output.LayerNorm.{n}"] for n in ("weight", "bias"))
        )
        h = dense(x, p + "intermediate.dense")
        h = dense(0.5 * h * (1 + erf(h / math.sqrt(2))), p + "output.dense")
        x = _np_layer_norm(x + h, *(t[p + f"output.LayerNorm.{n}"] for n in ("weight", "bias")))
    return x


def test_matches_independent_numpy_forward(encoder, tensors):
    # Whole pipeline (mapping, fused qkv order, post-LN, erf GELU, masked mean, L2) against
    # HF BertModel's arithmetic written out in float64 numpy from the untouched file tensors.
    tok = minilm_tokenizer()
    for text, emb in zip([FOOD, BREAD], encoder([FOOD, BREAD])):
        ref = _np_bert(tensors, tok.encode(text)).mean(0)
        # float32 forward vs float64: unit vectors agree to ~1e-6 per component
        np.testing.assert_allclose(emb, ref / np.linalg.norm(ref), atol=1e-5)


def _random_bert(cfg: BertConfig, seed: int = 0) -> Bert:
    """Bert with numpy-random parameters: abstract init, then fill (eager init of ~80 arrays
    compiles one tiny XLA program per op and costs seconds on a loaded 2-core CI box)."""
    bert = nnx.eval_shape(lambda: Bert(cfg, rngs=nnx.Rngs(0)))
    rng = np.random.default_rng(seed)
    flat = dict(nnx.to_flat_state(nnx.state(bert, nnx.Param)))
    for path, var in flat.items():
        w = rng.normal(0.0, 0.3, var.shape) + (path[-1] == "scale")  # LayerNorm scale near 1
        var.set_value(jnp.asarray(w, jnp.float32))
    nnx.update(bert, nnx.from_flat_state(flat))
    return bert


def test_random_init_bert_and_encoder_block_defaults():
    cfg = BertConfig(vocab_size=50, dim=16, num_layers=2, num_heads=2, ffn_dim=32, max_positions=12)
    bert = _random_bert(cfg)
    forward = nnx.jit(lambda m, ids, valid: m(ids, valid, token_types=jnp.zeros_like(ids)))
    ids = jnp.asarray(np.random.default_rng(1).integers(1, 50, (3, 7)), jnp.int32)
    valid = jnp.arange(7)[None] < jnp.array([[7], [4], [1]])
    hidden = forward(bert, ids, valid)
    assert hidden.shape == (3, 7, 16) and bool(jnp.isfinite(hidden).all())
    # the states of valid tokens do not depend on what the padding positions hold
    other = forward(bert, jnp.where(valid, ids, 49), valid)
    np.testing.assert_allclose(jnp.where(valid[..., None], other, hidden), hidden, atol=1e-5)
    assert not np.allclose(other[1, 4:], hidden[1, 4:])  # (padding states themselves do)
    pooled = mean_pool(hidden, valid)
    np.testing.assert_allclose(pooled[2], hidden[2, 0], atol=1e-6)
    assert mean_pool(hidden, jnp.zeros_like(valid)).sum() == 0  # no NaN for all-padding rows
    with pytest.raises(ValueError, match="max_positions=12"):
        bert(jnp.ones((1, 13), jnp.int32), jnp.ones((1, 13), bool))
    # BERT-specific settings reach the shared block ...
    block = bert.encoder.blocks[0]
    assert block.norm1.epsilon == block.norm2.epsilon == bert.embed_norm.epsilon == 1e-12
    assert not block.norm_first
    x = jnp.array([-1.5, 0.3, 2.0])
    exact = 0.5 * x * (1 + jax.scipy.special.erf(x / jnp.sqrt(2.0)))
    np.testing.assert_allclose(block.activation(x), exact, rtol=1e-6)
    # ... while EncoderBlock's defaults are what existing callers had (tanh GELU, eps 1e-6).
    default = nnx.eval_shape(lambda: EncoderBlock(8, 2, 16, rngs=nnx.Rngs(0)))
    assert default.norm1.epsilon == default.norm2.epsilon == 1e-6 and default.norm_first
    assert default.activation is nnx.gelu


def test_word_vectors_and_an_extra_mask():
    """`word_vectors` equal to the lookup change nothing; a block-causal `mask` makes the states
    of a prefix independent of what follows it, and equal to the prefix run alone."""
    cfg = BertConfig(vocab_size=50, dim=16, num_layers=2, num_heads=2, ffn_dim=32, max_positions=12)
    bert = _random_bert(cfg)
    ids = jnp.asarray(np.random.default_rng(2).integers(1, 50, (2, 8)), jnp.int32)
    valid = jnp.ones((2, 8), bool)
    plain = bert(ids, valid)
    same = bert(ids, valid, word_vectors=bert.word_embed(ids))
    np.testing.assert_allclose(same, plain, atol=1e-6)
    all_true = bert(ids, valid, mask=jnp.ones((1, 1, 8, 8), bool))
    np.testing.assert_allclose(all_true, plain, atol=1e-6)
    blocks = jnp.array([0, 0, 0, 1, 1, 2, 2, 2])
    causal = (blocks[None, :] <= blocks[:, None])[None, None]  # query block >= key block
    full = bert(ids, valid, mask=causal)
    other = bert(ids.at[:, 5:].set(7), valid, mask=causal)
    np.testing.assert_allclose(full[:, :5], other[:, :5], atol=1e-6)
    prefix = bert(ids[:, :5], valid[:, :5], mask=causal[..., :5, :5])
    np.testing.assert_allclose(full[:, :5], prefix, atol=1e-5)
    assert not np.allclose(full[:, :5], plain[:, :5], atol=1e-3)  # the mask did something
