"""SmolLM2-135M-Instruct loaded from GGUF into the Flax LLaMA, against ../shared/MODELS.md."""

import math

import jax.numpy as jnp
import numpy as np
from flax import nnx

from shared.data.lm_pipeline import pack_documents, token_stream, unigram_entropy
from shared.data.text import load_corpus
from shared.data.tokenizers import smollm2_tokenizer
from shared.models.llama import SIZES, count_params
from shared.models.pretrained.smollm2 import chat_prompt
from shared.models.sampling import generate
from shared.train.lm import evaluate_lm

PROMPT_IDS = [1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47, 2, 198, 1, 520, 9531, 198]
# Final-position top-5 logits in float32 (MODELS.md, cross-checked against PyTorch transformers).
TOP5 = {504: 27.859, 60: 26.130, 38634: 26.102, 15319: 25.962, 7026: 25.181}


def test_architecture_and_parameter_count(smollm2):
    assert smollm2.cfg == SIZES["smollm2-135m"]
    assert count_params(smollm2) == 134_515_008


def test_final_position_top5_logits_match_the_reference(smollm2):
    logits = nnx.jit(lambda m, x: m(x))(smollm2, jnp.asarray([PROMPT_IDS]))
    last = np.asarray(logits[0, -1])
    top = np.argsort(-last)[:5]
    assert list(top) == list(TOP5)
    # MODELS.md lists 3 decimals: its rounding allows 5e-4, plus float32 summation order.
    np.testing.assert_allclose(last[top], list(TOP5.values()), atol=1e-3)


def test_greedy_decoding_answers_paris(smollm2):
    tok = smollm2_tokenizer()
    prompt = tok.encode(chat_prompt("What is the capital of France?", system=None))
    assert prompt == PROMPT_IDS
    new = generate(smollm2, [prompt], 12, eos_id=tok.eos_id)
    assert tok.decode(new[0]) == "The capital of France is Paris."
    assert new[0, -1] == tok.eos_id


def test_held_out_wikipedia_perplexity_is_far_below_a_unigram_model(smollm2):
    tok = smollm2_tokenizer()
    corpus = load_corpus("wikipedia")
    windows = pack_documents(corpus.test, tok, 128)[:4]
    ppl = math.exp(evaluate_lm(smollm2, windows, batch_size=4))
    unigram = math.exp(unigram_entropy(token_stream(corpus.train, tok), windows[:, 1:], 49152))
    # launch/check_models.py: 18.6 vs 1,408 on all 204 test windows of 256 tokens
    assert ppl < unigram / 20, (ppl, unigram)
