"""Tiny PRMs shared by this project's tests (random weights: the tests check wiring, not skill)."""

import pytest
from flax import nnx

from projects.prm_biasbench import data, prm_models, processors, tier2
from projects.prm_biasbench.scoring import Scorer
from shared.data.arithmetic_traces import TraceConfig
from shared.data.tokenizers import minilm_tokenizer
from shared.models.bert import Bert, BertConfig
from shared.models.llama import LlamaConfig

SMALL = TraceConfig(max_ops=4, max_operand=20, max_value=20)


@pytest.fixture(scope="session")
def word_tok():
    return data.word_tokenizer(SMALL)


@pytest.fixture(scope="session")
def decoder_prm(word_tok):
    """(model, processor, scorer, allowed) of a 1-layer random decoder PRM."""
    cfg = LlamaConfig(word_tok.vocab_size, 32, 1, 2, 2, 64, max_seq_len=96)
    good, bad = (word_tok.token_to_id(w) for w in prm_models.LABEL_WORDS)
    model = prm_models.DecoderPRM(cfg, good, bad, rngs=nnx.Rngs(0))
    proc = processors.DecoderProcessor(word_tok, 96)
    return model, proc, Scorer(model, proc, batch_size=8), tier2.allowed_words(word_tok)


@pytest.fixture(scope="session")
def minilm_prm():
    """(model, processor, scorer, allowed) of a 1-layer random BERT with MiniLM's vocabulary."""
    tok = minilm_tokenizer()
    cfg = BertConfig(num_layers=1, dim=16, num_heads=2, ffn_dim=32, max_positions=128)
    model = prm_models.MiniLMPRM(Bert(cfg, rngs=nnx.Rngs(1)), rngs=nnx.Rngs(2))
    proc = processors.MiniLMProcessor(tok, 128)
    return model, proc, Scorer(model, proc, batch_size=8), tier2.allowed_wordpieces(tok)


@pytest.fixture(scope="session")
def solutions():
    """Held-out clean and slipped examples of the small trace config."""
    traces = data.draw_problems(6, SMALL, 0, "tests")
    return data.clean(traces), data.slipped(traces, SMALL, 0, "tests_slips")
