import dataclasses

import numpy as np
import pytest
from flax import nnx

from shared.data.lm_pipeline import pack_documents, unigram_entropy
from shared.data.text import load_corpus
from shared.data.tokenizers import ByteTokenizer
from shared.models.llama import SIZES, Llama
from shared.train.lm import LMTrainConfig, evaluate_lm, train_lm


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
