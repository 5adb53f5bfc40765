"""The stages between sampling and evaluation: which candidates each SFT variant gets, that SFT
trains a copy (never the base model), and that a prompt too long for the model's context stops
the run before any training, naming the fields to change."""

import dataclasses

import jax
import numpy as np
import pytest
from flax import nnx

from projects.conpress import experiment, pipeline
from projects.conpress.filters import Candidate
from projects.conpress.harness import Measurement
from projects.conpress.prompts import SINGLE_HEADER, build_prompt
from shared.config import apply_overrides
from shared.train.sft import evaluate_sft, pack_pairs

SMOKE = experiment.CONFIGS["smoke"]


def _measurement(n, cands, failures=0):
    empty = np.zeros((1, 1))
    return Measurement(n, empty, empty > 0, empty > 0, empty > 0, 4, failures, {}, cands, empty, [])


def _c(qid, answer, tokens, n):
    return Candidate(qid, f"q{qid}", "7", f"resp{qid}/{n}/{tokens}", answer, tokens, n)


def test_variants_get_their_candidates_at_one_common_size():
    multi = [_c(0, "7", 5, 4), _c(1, "7", 50, 4), _c(2, "8", 5, 4), _c(3, "7", 6, 4)]
    single = [_c(q, "7" if q != 3 else "9", 20, 1) for q in range(4)] + [_c(0, "7", 40, 1)]
    cfg = dataclasses.replace(SMOKE, sft_examples=100)
    picked, metrics = pipeline.select_pairs(_measurement(4, multi), _measurement(1, single), cfg, 0)
    assert {len(v) for v in picked.values()} == {2}  # the length filter keeps the fewest
    assert metrics["pool/sft_examples"] == 2
    assert metrics["pool/conpress_available"] == 3 and metrics["pool/control_available"] == 4
    assert metrics["pool/conpress_unfiltered_available"] == 4
    assert metrics["pool/conpress_length_available"] == 2  # 50 >= median 30 of question 1
    assert all(c.n == 1 and c.correct for c in picked["control"])
    assert all(c.n == 4 and c.correct for c in picked["conpress"])
    assert {c.question_id for c in picked["conpress_length"]} == {0, 3}
    capped, _ = pipeline.select_pairs(
        _measurement(4, multi), _measurement(1, single), dataclasses.replace(cfg, sft_examples=1), 0
    )
    assert {len(v) for v in capped.values()} == {1}


def test_no_surviving_pair_stops_the_run_unless_allowed():
    multi, single = _measurement(4, [], failures=4), _measurement(1, [_c(0, "8", 5, 1)])
    cfg = dataclasses.replace(SMOKE, min_sft_pairs=1)
    with pytest.raises(RuntimeError, match="parse failures 4/4.*min_sft_pairs=1"):
        pipeline.select_pairs(multi, single, cfg, 0)
    picked, metrics = pipeline.select_pairs(multi, single, SMOKE, 0)  # smoke: min_sft_pairs=0
    assert picked == {} and metrics["pool/sft_examples"] == 0


@pytest.fixture(scope="module")
def tiny():
    """The smoke config's untrained synthetic model and its pools."""
    pools = pipeline.pools_for(SMOKE)
    return pipeline.load_backend(SMOKE, None), pools


def test_finetune_trains_a_copy_on_single_question_pairs(tiny, tmp_path):
    backend, pools = tiny
    from shared.data.arithmetic_trace_text import parse_question, render_conpress
    from shared.data.arithmetic_traces import solve

    traces = [render_conpress(solve(parse_question(q.text))) for q in pools.pool[:8]]
    pairs = [(build_prompt([q.text]), t) for q, t in zip(pools.pool, traces)]
    assert all(p.startswith(SINGLE_HEADER) and "### Q" not in p + r for p, r in pairs)
    graphdef, start = nnx.split(backend.model)
    before = jax.tree.map(np.asarray, start)
    cfg = dataclasses.replace(SMOKE, sft=dataclasses.replace(SMOKE.sft, steps=20, lr=1e-2))
    ids = [(backend.encode_prompt(p), backend.encode_text(r)) for p, r in pairs]
    packed = pack_pairs(ids, cfg.sft_seq_len, eos_id=backend.eos_id)
    tuned, cut = pipeline.finetune(backend, start, graphdef, pairs, cfg, 0, tmp_path, "t")
    assert cut == 0.0
    assert evaluate_sft(tuned.model, packed, 4) < evaluate_sft(backend.model, packed, 4) - 0.5
    # The base model every variant starts from is untouched.
    after = jax.tree.map(np.asarray, nnx.state(backend.model))
    assert all(jax.tree.leaves(jax.tree.map(np.array_equal, before, after)))


def test_a_prompt_longer_than_the_context_stops_before_training(tiny):
    backend, pools = tiny
    short = pipeline.preflight(backend, pools, SMOKE)
    assert set(short.prompt_lens) == {1, 2}
    cfg = apply_overrides(SMOKE, ["sampling.max_new_per_question=400"])
    with pytest.raises(ValueError, match="longest 2-question prompt.*context of 512.*max_seq_len"):
        pipeline.preflight(backend, pools, cfg)
