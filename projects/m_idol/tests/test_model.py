"""Multi-crop views, the variable-size ViT forward, the routed experts and the data folder."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from projects.m_idol.data import DataConfig, load
from projects.m_idol.generator import MODALITIES
from projects.m_idol.model import ModelConfig, encode
from projects.m_idol.multicrop import CropConfig, multicrop
from projects.m_idol.train import init_network

TINY = ModelConfig(patch=8, width=8, depth=1, heads=2, dim=20, subspace=4, hidden=8,
                   bottleneck=8, prototypes=16)  # fmt: skip


@pytest.fixture(scope="module")
def net():
    return init_network(TINY, 5, 3, jax.random.key(0))  # one compiled program, not eager ops


def test_multicrop_shapes_ranges_and_constant_images():
    cfg = CropConfig(jitter=0.0, flip=True)
    x = jnp.asarray(np.random.default_rng(0).random((3, 32, 32, 3)), jnp.float32)
    crop = jax.jit(lambda k, x: multicrop(k, x, cfg))
    g, loc = crop(jax.random.key(0), x)
    assert g.shape == (2, 3, 32, 32, 3) and loc.shape == (4, 3, 16, 16, 3)
    # bilinear weights are convex: every output lies within the image's own range
    for v in (g, loc):
        lo, hi = x.min(axis=(1, 2, 3)), x.max(axis=(1, 2, 3))
        assert np.all(np.asarray(v.min(axis=(2, 3, 4))) >= np.asarray(lo) - 1e-6)
        assert np.all(np.asarray(v.max(axis=(2, 3, 4))) <= np.asarray(hi) + 1e-6)
    const = jnp.full((3, 32, 32, 3), 0.3, jnp.float32)
    g, loc = crop(jax.random.key(1), const)
    np.testing.assert_allclose(np.asarray(loc), 0.3, atol=1e-6)
    assert not np.allclose(np.asarray(crop(jax.random.key(2), x)[0]), np.asarray(g))


def test_encode_is_the_shared_vit_at_its_size_and_accepts_local_crops(net):
    x = jnp.asarray(np.random.default_rng(1).random((2, 32, 32, 3)), jnp.float32)
    f = jax.jit(lambda n, x: (encode(n.encoder, x), n.encoder(x)))
    ours, shared = f(net, x)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(shared))
    local = jax.jit(lambda n, x: encode(n.encoder, x))(net, x[:, :16, :16])
    assert local.shape == (2, TINY.dim) and np.all(np.isfinite(np.asarray(local)))


def test_experts_evaluate_each_samples_own_expert(net):
    z = jnp.asarray(np.random.default_rng(2).normal(size=(3, 4, TINY.dim)), jnp.float32)
    expert = jnp.array([0, 3, 3, 4])
    routed = np.asarray(jax.jit(lambda n, z, e: n.experts(z, e))(net, z, expert))
    for b, e in enumerate(np.asarray(expert)):
        alone = np.asarray(net.experts(z[:, b : b + 1], jnp.full((1,), e)))[:, 0]
        np.testing.assert_allclose(routed[:, b], alone, rtol=1e-5, atol=1e-6)
    # cosine logits: bounded by 1 in magnitude
    assert np.abs(routed).max() <= 1 + 1e-5


def test_folder_data_reads_the_layout_and_names_what_is_missing(tmp_path):
    from PIL import Image

    root = tmp_path / "data"
    rng = np.random.default_rng(3)
    for name in MODALITIES:
        for folder in (root / "pretrain" / name, *(root / "eval" / name / c for c in "ab")):
            folder.mkdir(parents=True)
            for i in range(2):
                img = rng.integers(0, 256, (40, 36, 3), dtype=np.uint8)
                Image.fromarray(img).save(folder / f"{i}.png")
    pool, ev = load(DataConfig(source="folder", data_dir=str(root)), 0, 32)
    assert pool.x.shape == (10, 32, 32, 3) and ev.x.shape == (20, 32, 32, 3)
    assert 0 <= pool.x.min() and pool.x.max() <= 1
    np.testing.assert_array_equal(np.bincount(ev.modality), [4] * 5)
    assert ev.classes[0] == ("a", "b") and set(ev.fine) == {0, 1}
    import shutil

    shutil.rmtree(root / "eval" / "oct")
    with pytest.raises(FileNotFoundError, match="oct.*data.data_dir"):
        load(DataConfig(source="folder", data_dir=str(root)), 0, 32)
