import dataclasses
import json

import jax
import numpy as np
import optax
import pytest
from flax import nnx

from shared.data.lm_pipeline import pack_documents, unigram_entropy
from shared.data.text import load_corpus
from shared.data.tokenizers import ByteTokenizer
from shared.distributed import data_mesh
from shared.models.llama import SIZES, Llama
from shared.train import adamw_no_decay_on_vectors, latest_checkpoint_step, warmup_cosine
from shared.train.lm import LMTrainConfig, evaluate_lm, global_grad_norm, train_lm


@pytest.fixture(scope="module")
def shakespeare_windows():
    corpus, tok = load_corpus("shakespeare"), ByteTokenizer()
    train = pack_documents(corpus.train, tok, 64)
    val = pack_documents(corpus.validation, tok, 64)[:256]
    return train, val, unigram_entropy(train[:, 1:], val[:, 1:], tok.vocab_size)


def test_tiny_llama_learns_shakespeare_below_the_unigram_entropy(shakespeare_windows, tmp_path):
    train, val, unigram = shakespeare_windows
    model = Llama(dataclasses.replace(SIZES["nano"], vocab_size=257), rngs=nnx.Rngs(0))
    initial = evaluate_lm(model, val, 16)
    assert abs(initial - np.log(257)) < 0.1  # init std 0.02: near-uniform predictions
    cfg = LMTrainConfig(steps=100, batch_size=16, eval_every=50, eval_windows=len(val))
    history = train_lm(model, train, val, cfg, workdir=tmp_path)
    losses = [initial, *history["val_loss"]]
    assert history["step"] == [50, 100]
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    # letter frequencies alone give `unigram` (3.31 nats/byte); context must do clearly better
    assert losses[-1] < unigram - 0.3, (losses, unigram)
    assert (tmp_path / "metrics.jsonl").exists()
    assert evaluate_lm(model, val, 16) == pytest.approx(losses[-1], rel=1e-6)


def test_evaluation_counts_every_window_once():
    model = Llama(dataclasses.replace(SIZES["nano"], vocab_size=257), rngs=nnx.Rngs(1))
    windows = np.random.default_rng(0).integers(0, 257, (11, 17)).astype(np.int32)
    per_window = [evaluate_lm(model, windows[i : i + 1], 4) for i in range(11)]
    assert evaluate_lm(model, windows, 4) == pytest.approx(np.mean(per_window), rel=1e-5)


def _records(path, phase):
    return [r for r in map(json.loads, path.read_text().splitlines()) if r["phase"] == phase]


def test_a_phase_logs_every_grad_norm_checkpoints_under_its_name_and_resumes(tmp_path):
    """The options attn_qat's phases use: no validation, a given optimizer, the global gradient
    norm of every step, checkpoints under checkpoints/<phase>; a rerun trains no more."""
    windows = np.random.default_rng(0).integers(0, 257, (24, 17)).astype(np.int32)
    cfg = LMTrainConfig(steps=4, batch_size=4, seed=3)
    tx = adamw_no_decay_on_vectors(warmup_cosine(1e-3, 4, 1, end_ratio=1.0), 0.01, grad_clip=0.5)

    def train(model):
        return train_lm(
            model, windows, None, cfg, tx=tx, workdir=tmp_path, phase="qat",
            grad_metrics=global_grad_norm, log_every=1,
        )  # fmt: skip

    a = Llama(dataclasses.replace(SIZES["nano"], vocab_size=257), rngs=nnx.Rngs(0))
    assert train(a) == {"step": [], "val_loss": []}
    records = _records(tmp_path / "metrics.jsonl", "qat")
    assert [r["step"] for r in records] == [1, 2, 3, 4]
    assert all(r["grad_norm"] > 0 and np.isfinite(r["loss"]) for r in records)
    assert latest_checkpoint_step(tmp_path / "checkpoints" / "qat") == 4
    b = Llama(dataclasses.replace(SIZES["nano"], vocab_size=257), rngs=nnx.Rngs(1))
    train(b)  # same workdir and phase: restored from step 4, no step run, nothing logged
    assert len(_records(tmp_path / "metrics.jsonl", "qat")) == 4
    for x, y in zip(jax.tree.leaves(nnx.state(a)), jax.tree.leaves(nnx.state(b))):
        np.testing.assert_array_equal(x, y)


def test_mesh_placement_of_the_batch_gives_the_same_losses(tmp_path):
    windows = np.random.default_rng(1).integers(0, 257, (16, 9)).astype(np.int32)
    cfg = LMTrainConfig(steps=2, batch_size=8, seed=0)
    losses = {}
    for name, mesh in (("single", None), ("mesh", data_mesh())):
        model = Llama(dataclasses.replace(SIZES["nano"], vocab_size=257), rngs=nnx.Rngs(0))
        train_lm(model, windows, None, cfg, workdir=tmp_path, phase=name, checkpoints=False,
                 log_every=1, mesh=mesh)  # fmt: skip
        losses[name] = [r["loss"] for r in _records(tmp_path / "metrics.jsonl", name)]
    assert not (tmp_path / "checkpoints").exists()
    np.testing.assert_allclose(losses["mesh"], losses["single"], rtol=1e-5)


def test_a_run_on_a_mesh_resumes_from_its_checkpoint_as_if_unbroken(tmp_path):
    """A restored leaf is committed where its template leaf lives: the optimizer's step count,
    made on one device, must already sit on the mesh (else the resumed step mixes devices)."""
    windows = np.random.default_rng(2).integers(0, 257, (16, 9)).astype(np.int32)
    tx = optax.adam(1e-3)  # the same at every step: 2 + 1 steps equal 3
    models = {}
    for phase, steps in (("unbroken", (3,)), ("resumed", (2, 3))):
        for n in steps:
            models[phase] = Llama(dataclasses.replace(SIZES["nano"], vocab_size=257),
                                  rngs=nnx.Rngs(0))  # fmt: skip
            train_lm(models[phase], windows, None, LMTrainConfig(steps=n, batch_size=8), tx=tx,
                     workdir=tmp_path, phase=phase, mesh=data_mesh())  # fmt: skip
    assert latest_checkpoint_step(tmp_path / "checkpoints" / "resumed") == 3
    for x, y in zip(jax.tree.leaves(nnx.state(models["unbroken"])),
                    jax.tree.leaves(nnx.state(models["resumed"]))):  # fmt: skip
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-7)
