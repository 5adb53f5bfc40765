import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from jax.sharding import PartitionSpec as P

from shared import distributed
from shared.models.attention import (
    causal_grouped_attention,
    dot_product_attention,
    grouped_attention,
)
from shared.models.llama import (
    SIZES,
    KVCache,
    Llama,
    RMSNorm,
    apply_rope,
    count_params,
    rope_angles,
)
from shared.models.llama_sharding import MODES, shard_llama
from shared.models.pretrained.smollm2 import unpermute_rope_rows
from shared.models.sampling import generate

NANO = dataclasses.replace(SIZES["nano"], vocab_size=97)


def _model(cfg=NANO, seed=0):
    return Llama(cfg, rngs=nnx.Rngs(seed))


@nnx.jit
def _forward(model, tokens, cache=None):
    return model(tokens, cache=cache)  # jitted: eager op-by-op dispatch is slow on CPU


def _tokens(shape, seed=1, vocab=NANO.vocab_size):
    return jax.random.randint(jax.random.key(seed), shape, 0, vocab)


def test_rms_norm_closed_form():
    norm = RMSNorm(6, eps=1e-5)
    norm.weight[...] = jnp.arange(1.0, 7.0)
    x = jnp.array([[1.0, -2.0, 3.0, 0.5, 0.0, 4.0]])
    expected = x / np.sqrt(np.mean(np.square(x)) + 1e-5) * np.arange(1.0, 7.0)
    np.testing.assert_allclose(norm(x), expected, rtol=1e-6)


def test_rope_scores_depend_only_on_relative_position():
    q, k = jax.random.normal(jax.random.key(0), (2, 1, 1, 1, 16))

    def score(m, n):  # noqa: E306
        cq, sq = rope_angles(jnp.array([[m]]), 16, 10000.0)
        ck, sk = rope_angles(jnp.array([[n]]), 16, 10000.0)
        return jnp.sum(apply_rope(q, cq, sq) * apply_rope(k, ck, sk))

    np.testing.assert_allclose(score(7, 3), score(104, 100), rtol=1e-4)
    assert abs(float(score(7, 3)) - float(score(7, 4))) > 1e-4
    c0, s0 = rope_angles(jnp.zeros((1, 1)), 16, 10000.0)
    np.testing.assert_array_equal(apply_rope(q, c0, s0), q)  # position 0 is the identity


def test_gguf_row_permutation_is_undone():
    """llama.cpp stores q/k rows for interleaved RoPE: W_gguf[h*H+2i+s] = W_hf[h*H+s*H/2+i].

    Build that layout from known HF rows; interleaved RoPE on the GGUF rows must equal
    rotate_half RoPE on the recovered rows, and the recovery must be exact."""
    n, hd, d = 3, 8, 5
    w_hf = np.random.default_rng(0).normal(size=(n * hd, d)).astype(np.float32)
    w_gguf = np.empty_like(w_hf)
    for h in range(n):
        for i in range(hd // 2):
            for s in range(2):
                w_gguf[h * hd + 2 * i + s] = w_hf[h * hd + s * hd // 2 + i]
    np.testing.assert_array_equal(unpermute_rope_rows(w_gguf, n), w_hf)

    x = np.random.default_rng(1).normal(size=(d,)).astype(np.float32)
    pos = 5.0
    freq = 10000.0 ** (-np.arange(0, hd, 2) / hd)
    cos, sin = rope_angles(jnp.array([[pos]]), hd, 10000.0)
    half = apply_rope(jnp.asarray((w_hf @ x).reshape(1, 1, n, hd)), cos, sin)
    pairs = (w_gguf @ x).reshape(n, hd // 2, 2)  # interleaved pairs (2i, 2i+1)
    a, b = pairs[..., 0], pairs[..., 1]
    ca, sa = np.cos(pos * freq), np.sin(pos * freq)
    inter = np.stack([a * ca - b * sa, a * sa + b * ca], -1)  # [n, hd/2, 2]
    # interleaved output pair i = rotate_half outputs (i, i + hd/2)
    np.testing.assert_allclose(
        np.asarray(half).reshape(n, 2, hd // 2).swapaxes(1, 2), inter, rtol=1e-5, atol=1e-6
    )


def test_decoder_is_causal():
    model = _model()
    x = _tokens((2, 12))
    y = x.at[:, 8:].set((x[:, 8:] + 1) % NANO.vocab_size)
    a, b = _forward(model, x), _forward(model, y)
    np.testing.assert_allclose(a[:, :8], b[:, :8], atol=1e-6)
    assert float(jnp.abs(a[:, 8:] - b[:, 8:]).max()) > 1e-3


def test_grouped_query_attention_equals_repeated_heads():
    """kv_heads=2 with 4 query heads == 4 kv heads whose weights repeat each kv head twice."""
    gqa = _model(NANO)  # 4 query heads, 2 kv heads
    mha = _model(dataclasses.replace(NANO, num_kv_heads=4))
    hd = NANO.resolved_head_dim
    for src, dst in zip(gqa.layers, mha.layers):
        for part in ("input_layernorm", "post_attention_layernorm", "mlp"):
            nnx.update(getattr(dst, part), nnx.state(getattr(src, part)))
        for name in ("q_proj", "o_proj"):
            nnx.update(getattr(dst.self_attn, name), nnx.state(getattr(src.self_attn, name)))
        for name in ("k_proj", "v_proj"):
            w = getattr(src.self_attn, name).kernel[...].reshape(NANO.dim, 2, hd)
            getattr(dst.self_attn, name).kernel[...] = jnp.repeat(w, 2, 1).reshape(NANO.dim, -1)
    nnx.update(mha.embed_tokens, nnx.state(gqa.embed_tokens))
    nnx.update(mha.lm_head, nnx.state(gqa.lm_head))
    x = _tokens((2, 10))
    np.testing.assert_allclose(_forward(gqa, x), _forward(mha, x), atol=2e-5)


def test_kv_cache_decoding_equals_the_full_forward():
    model = _model()
    x = _tokens((2, 11))
    full = _forward(model, x)
    cache = KVCache.empty(NANO, 2, 16)
    logits, cache = _forward(model, x[:, :6], cache)
    np.testing.assert_allclose(logits, full[:, :6], atol=2e-5)
    for t in range(6, 11):
        step, cache = _forward(model, x[:, t : t + 1], cache)
        np.testing.assert_allclose(step[:, 0], full[:, t], atol=2e-5)
    assert int(cache.length) == 11


def test_greedy_generation_follows_the_argmax_of_the_full_forward():
    model = _model()
    prompt = np.asarray(_tokens((2, 5)))
    new = generate(model, prompt, 6)
    seq = np.concatenate([prompt, new], 1)
    logits = np.asarray(_forward(model, jnp.asarray(seq)))
    np.testing.assert_array_equal(new, logits[:, 4:-1].argmax(-1))


def test_generation_stops_at_eos_and_needs_a_key_to_sample():
    model = _model()
    prompt = np.asarray(_tokens((1, 4)))
    first = int(generate(model, prompt, 1)[0, 0])
    assert generate(model, prompt, 8, eos_id=first).shape == (1, 1)
    with pytest.raises(ValueError, match="max_seq_len=256"):
        generate(model, prompt, 300)
    with pytest.raises(ValueError, match="PRNG key"):
        generate(model, prompt, 2, temperature=1.0)
    a = generate(model, prompt, 8, temperature=1.0, key=jax.random.key(3))
    b = generate(model, prompt, 8, temperature=1.0, key=jax.random.key(3))
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "size, expected",
    # 130M: the count of the official LLaMA-130M parameter set (../shared/papers/scale.md).
    [("130m", 134_105_856), ("smollm2-135m", 134_515_008)],
)
def test_parameter_counts_of_the_reference_sizes(size, expected):
    abstract = nnx.eval_shape(lambda: Llama(SIZES[size], rngs=nnx.Rngs(0)))
    assert count_params(abstract) == expected


def test_every_size_builds_abstractly():
    for name, cfg in SIZES.items():
        abstract = nnx.eval_shape(lambda cfg=cfg: Llama(cfg, rngs=nnx.Rngs(0)))
        assert count_params(abstract) > 0, name
    with pytest.raises(ValueError, match="num_kv_heads"):
        dataclasses.replace(NANO, num_kv_heads=3)


def test_init_std():
    model = _model(dataclasses.replace(SIZES["tiny"], vocab_size=512))
    w = np.asarray(model.layers[0].mlp.up_proj.kernel[...])
    assert abs(w.std() - 0.02) < 0.001


@pytest.mark.parametrize("mode", MODES)
def test_sharded_forward_on_8_devices_equals_one_device(mode):
    cfg = dataclasses.replace(NANO, num_kv_heads=4, vocab_size=128)
    x = _tokens((4, 16), vocab=128)
    reference = np.asarray(_forward(_model(cfg), x))
    mesh = distributed.make_mesh((2, 4), ("data", "model"))
    model = shard_llama(_model(cfg), mesh, mode)
    kernel = model.layers[0].self_attn.q_proj.kernel[...]
    shards = {"data": (64, 64), "fsdp": (32, 64), "tensor": (64, 16), "fsdp+tensor": (32, 16)}
    assert kernel.addressable_shards[0].data.shape == shards[mode]
    out = _forward(model, jax.device_put(x, distributed.batch_sharded(mesh)))
    np.testing.assert_allclose(np.asarray(out), reference, atol=1e-5)


def test_a_dimension_the_mesh_does_not_divide_is_kept_whole_with_a_warning():
    cfg = dataclasses.replace(NANO, num_kv_heads=4, vocab_size=128, ffn_dim=170)  # 170 % 4 != 0
    x = _tokens((4, 16), vocab=128)
    reference = np.asarray(_forward(_model(cfg), x))
    mesh = distributed.make_mesh((2, 4), ("data", "model"))
    with pytest.raises(ValueError, match=r"down_proj/kernel: dimension 0 of shape \(170, 64\)"):
        shard_llama(_model(cfg), mesh, "tensor", uneven="error")
    with pytest.warns(UserWarning) as caught:
        model = shard_llama(_model(cfg), mesh, "fsdp+tensor")
    named = sorted(str(w.message).split(":")[0] for w in caught)
    assert named == [
        f"layers/{i}/mlp/{p}_proj/kernel" for i in (0, 1) for p in ("down", "gate", "up")
    ]
    assert model.layers[0].mlp.up_proj.kernel[...].sharding.spec == P("data")
    assert model.layers[0].self_attn.q_proj.kernel[...].sharding.spec == P("data", "model")
    np.testing.assert_allclose(np.asarray(_forward(model, x)), reference, atol=1e-5)


def test_attention_field_selects_the_fp4_kernel_and_defaults_to_dot_product():
    assert NANO.attention == "dot_product"
    with pytest.raises(ValueError, match="attention='nope'"):
        dataclasses.replace(NANO, attention="nope")
    tokens = _tokens((2, 40))  # 40: not a multiple of the kernel's 32-token tiles
    ref = _forward(_model(), tokens)
    # The FP4 kernel with quantization off ("bf16") is exact causal attention; FP4 is not.
    off = _forward(_model(dataclasses.replace(NANO, attention="bf16")), tokens)
    np.testing.assert_allclose(off, ref, atol=1e-5, rtol=0)
    fp4 = _forward(_model(dataclasses.replace(NANO, attention="fp4_ptq")), tokens)
    assert np.abs(np.asarray(fp4) - np.asarray(ref)).max() > 1e-3


@pytest.mark.parametrize(
    "heads, kv_heads, t, block", [(4, 2, 40, 16), (9, 3, 64, 64), (4, 4, 7, 4)]
)
def test_grouped_attention_equals_repeated_heads_without_repeating(heads, kv_heads, t, block):
    """The decoder's default attention: grouped K/V heads (no jnp.repeat), and for the causal
    forward query blocks that skip the keys above the diagonal (t not a multiple of block too)."""
    kq, kk, kv, km = jax.random.split(jax.random.key(0), 4)
    q = jax.random.normal(kq, (2, t, heads, 16))
    k = jax.random.normal(kk, (2, t, kv_heads, 16))
    v = jax.random.normal(kv, (2, t, kv_heads, 16))
    rep = heads // kv_heads
    kr, vr = jnp.repeat(k, rep, 2), jnp.repeat(v, rep, 2)
    causal = jnp.tril(jnp.ones((t, t), bool))[None, None]
    ref = dot_product_attention(q, kr, vr, causal)
    np.testing.assert_allclose(causal_grouped_attention(q, k, v, block), ref, atol=1e-6)
    np.testing.assert_allclose(grouped_attention(q, k, v, causal), ref, atol=1e-6)
    for mask in (  # per batch and key, per head, and none
        jax.random.bernoulli(km, 0.7, (2, 1, 1, t)).at[..., 0].set(True),
        jax.random.bernoulli(km, 0.7, (1, heads, t, t)).at[..., 0].set(True),
        None,
    ):
        np.testing.assert_allclose(
            grouped_attention(q, k, v, mask), dot_product_attention(q, kr, vr, mask), atol=1e-6
        )


def test_input_embeddings_replace_the_token_lookup():
    model = _model()
    x = _tokens((2, 10))
    emb = model.embed_tokens(x)
    np.testing.assert_allclose(model(x, embeddings=emb), _forward(model, x), atol=1e-5)
    shifted = model(x, embeddings=emb.at[:, 4].add(0.5))
    np.testing.assert_allclose(shifted[:, :4], _forward(model, x)[:, :4], atol=1e-5)
    assert float(jnp.abs(shifted[:, 4:] - _forward(model, x)[:, 4:]).max()) > 1e-4
