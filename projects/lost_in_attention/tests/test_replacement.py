"""Attention replacement on the toy VLM (spec section 6): the predefined matrices, the hooked
forward with the model's own softmax, and the text->image scope."""

import dataclasses

import jax
import numpy as np
import pytest
from flax import nnx

from projects.lost_in_attention import replacement
from projects.lost_in_attention.experiment import CONFIGS
from projects.lost_in_attention.questions import ID, QUESTION_LEN, answers, make_items, patches
from projects.lost_in_attention.toy_run import build_model
from shared.interp import AttentionOverride, Intervention

CFG = CONFIGS["smoke"]
N_IMAGE = 16  # 8x8 digits, 2x2 patches
SEQ = N_IMAGE + QUESTION_LEN
MEAN_POOL = np.tril(np.ones((SEQ, SEQ))) / np.arange(1, SEQ + 1)[:, None]  # causal mean pooling


@pytest.fixture(scope="module")
def toy():
    model = build_model(CFG, N_IMAGE)
    rng = np.random.default_rng(0)
    images = rng.uniform(size=(3, 8, 8, 1)).astype(np.float32)
    items = make_items(images, np.array([0, 5, 7]), CFG.patch)
    graphdef, state = nnx.split(model)

    @jax.jit
    def run(state, iv):
        m = nnx.merge(graphdef, state)
        return m.traced(items.patches, items.text, iv, capture=("probs",))

    return model, items, lambda iv: run(state, iv)


def _iv(mode, key=0, batch=12):
    m = CFG.model
    return replacement.intervention(
        mode, jax.random.key(key), batch=batch, num_heads=m.num_heads,
        num_layers=m.num_layers, seq=SEQ, n_image=N_IMAGE, late_from=CFG.eval.late_from,
    )  # fmt: skip


def test_predefined_matrices_are_causal_and_row_stochastic():
    for mode in ("noise_all", "noise_late", "uniform"):
        iv = _iv(mode)
        want = range(CFG.eval.late_from if mode == "noise_late" else 0, CFG.model.num_layers)
        assert sorted(iv.attention) == list(want), mode
        for ov in iv.attention.values():
            a = np.broadcast_to(np.asarray(ov.probs, np.float64), (12, CFG.model.num_heads,
                                                                   SEQ, SEQ))  # fmt: skip
            np.testing.assert_allclose(a.sum(-1), 1.0, atol=1e-6)
            assert not np.triu(a, 1).any()
    uniform = np.asarray(_iv("uniform").attention[0].probs, np.float64).reshape(SEQ, SEQ)
    np.testing.assert_allclose(uniform, MEAN_POOL, rtol=1e-6)
    a, b = (np.asarray(_iv("noise_all", k).attention[0].probs) for k in (0, 1))
    assert not np.allclose(a, b)  # a fresh draw per key
    with pytest.raises(ValueError, match="unknown"):
        _iv("softmax")


def test_uniform_attention_is_causal_mean_pooling_of_the_values(toy):
    """A' = uniform: each head's output at position i is the mean of the values 0..i."""
    _, _, run = toy
    _, acts = run(_iv("uniform"))
    probs = np.asarray(acts["probs"], np.float64)  # [L, B, H, T, T]
    np.testing.assert_allclose(probs, np.broadcast_to(MEAN_POOL, probs.shape), rtol=1e-6)


def test_own_softmax_as_override_reproduces_the_vanilla_logits(toy):
    """To float32 rounding: the model's fused causal attention (q pre-scaled, blocks above the
    diagonal skipped) and the explicit probabilities of the override path are two roundings of
    the same softmax(QKᵀ/√d) V; a real replacement moves the logits far more."""
    _, _, run = toy
    logits, acts = run(None)
    own = Intervention(attention={
        layer: AttentionOverride(acts["probs"][layer], np.ones((1, 1, SEQ, SEQ), bool))
        for layer in range(CFG.model.num_layers)})  # fmt: skip
    replaced, _ = run(own)
    np.testing.assert_allclose(replaced, logits, rtol=1e-5, atol=1e-6)
    noisy, _ = run(_iv("noise_all"))
    assert np.abs(np.asarray(noisy) - np.asarray(logits)).max() > 1e-3


def test_text_to_image_replaces_only_text_rows_on_image_keys_and_keeps_their_mass(toy):
    _, _, run = toy
    _, vanilla = run(None)
    _, mixed = run(_iv("text_to_image"))
    for layer in range(CFG.model.num_layers):
        v = np.asarray(vanilla["probs"][layer], np.float64)
        m = np.asarray(mixed["probs"][layer], np.float64)
        # image queries and text keys: the learned attention (only layer 0's inputs are equal,
        # later layers see the changed residual stream, so compare within the same run)
        if layer == 0:
            np.testing.assert_allclose(m[..., :N_IMAGE, :], v[..., :N_IMAGE, :], rtol=1e-6)
            np.testing.assert_allclose(m[..., N_IMAGE:, N_IMAGE:], v[..., N_IMAGE:, N_IMAGE:],
                                       rtol=1e-6)  # fmt: skip
            np.testing.assert_allclose(m[..., N_IMAGE:, :N_IMAGE].sum(-1),
                                       v[..., N_IMAGE:, :N_IMAGE].sum(-1), rtol=1e-5)  # fmt: skip
            assert not np.allclose(m[..., N_IMAGE:, :N_IMAGE], v[..., N_IMAGE:, :N_IMAGE])
        np.testing.assert_allclose(m.sum(-1), 1.0, atol=1e-5)
        assert not np.triu(m, 1).any()
    with pytest.raises(ValueError, match="image tokens"):
        replacement.intervention("text_to_image", jax.random.key(0), batch=1, num_heads=2,
                                 num_layers=3, seq=SEQ, n_image=0)  # fmt: skip


def test_questions_answers_and_patches():
    img = np.zeros((2, 4, 4, 1), np.float32)
    img[0, :2] = 1.0  # ink on top
    img[1, 2:] = 1.0
    a = answers(img, np.array([4, 9]))
    assert list(a["even"]) == [ID["yes"], ID["no"]] and list(a["above4"]) == [ID["no"], ID["yes"]]
    assert list(a["top"]) == [ID["yes"], ID["no"]] and list(a["digit"]) == [ID["4"], ID["9"]]
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    p = patches(x, 2)
    np.testing.assert_array_equal(p[0, 1], [2, 3, 6, 7])  # row-major patches, row-major pixels
    with pytest.raises(ValueError, match="patch=3"):
        patches(x, 3)


def test_config_guards():
    with pytest.raises(ValueError, match="late_from"):
        dataclasses.replace(CFG, eval=dataclasses.replace(CFG.eval, late_from=3))
