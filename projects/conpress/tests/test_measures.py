"""Token accounting, the compression ratio r(N), the filters and the SFT pairs (spec section 6),
against hand-computed values."""

import numpy as np
import pytest

from projects.conpress import synthetic
from projects.conpress.accounting import count_tokens, token_spans
from projects.conpress.compression import compression_ratio, token_reduction
from projects.conpress.filters import (
    Candidate,
    keep_correct,
    keep_shorter,
    median_lengths,
    sft_pairs,
    subsample,
)
from projects.conpress.parsing import parse_output
from projects.conpress.prompts import SINGLE_HEADER, build_prompt, join_answers

TRACES = [
    "step: 1 + 2 = 3\ncheck: 1 + 2 = 3\n\\boxed{3}",
    "step: 4 * 2 = 8\n\\boxed{8}",
    "\\boxed{5}",
]


def test_word_token_counts_sum_to_the_output_minus_markers():
    tok = synthetic.tokenizer()
    text = join_answers(TRACES)
    ids = tok.encode(text)
    decoded, spans = token_spans(ids, tok.decode)
    assert decoded == text
    parsed = parse_output(text, 3)
    counts = count_tokens(decoded, spans, parsed)
    # Each segment's count is its own text's tokens; markers are "\n ### Qi \n" (3-4 words).
    assert counts.segments == tuple(len(tok.encode(t)) for t in TRACES)
    assert counts.markers == 3 + 4 + 4 and counts.other == 0
    assert sum(counts.segments) + counts.markers == counts.total == len(ids)


def _byte_level_bpe():
    """A tiny byte-level BPE (SmolLM2's kind of tokenizer, trained here in milliseconds)."""
    import tokenizers
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(vocab_size=300, initial_alphabet=alphabet, show_progress=False)
    tok.train_from_iterator(["### Q1\n5 + 3 = 8, so \\boxed{8}."] * 20, trainer)
    return tok


def test_bpe_token_counts_add_up_with_a_preamble_and_split_characters():
    tok = _byte_level_bpe()
    text = "Sure 😀!\n### Q1\n5 + 3 = 8, so \\boxed{8}.\n### Q2: ü \\boxed{\\frac{1}{2}}"
    ids = tok.encode(text).ids
    decoded, spans = token_spans(ids, tok.decode)
    assert decoded == text and len(spans) == len(ids)
    assert any(tok.decode([i]) == "\ufffd" for i in ids)  # half characters: prefix decoding
    counts = count_tokens(decoded, spans, parse_output(decoded, 2))
    assert counts.other == len(tok.encode("Sure 😀!").ids)  # the preamble
    assert sum(counts.segments) + counts.markers + counts.other == counts.total == len(ids)
    assert counts.segments[0] == len(tok.encode("5 + 3 = 8, so \\boxed{8}.").ids)


def test_compression_ratio_on_a_hand_made_table():
    # 3 questions x 2 samples; lengths single / multi, correctness, parsed.
    st = np.array([[10, 20], [30, 40], [50, 60]])
    sc = np.array([[1, 1], [1, 0], [1, 1]], bool)
    mt = np.array([[5, 8], [15, 10], [0, 30]])
    mc = np.array([[1, 0], [1, 1], [1, 1]], bool)
    mp = np.array([[1, 1], [1, 1], [0, 1]], bool)
    r = compression_ratio(st, sc, mt, mc, mp)
    # correct in both and parsed: (0,0), (1,0), (2,1) -> (5 + 15 + 30) / (10 + 30 + 60)
    assert r.correct == pytest.approx(50 / 100, abs=0) and r.pairs_correct == 3
    # parsed: all but (2,0) -> (5 + 8 + 15 + 10 + 30) / (10 + 20 + 30 + 40 + 60)
    assert r.all == pytest.approx(68 / 160, abs=0) and r.pairs_all == 5
    # N = 1: the single-question arrays against themselves.
    one = compression_ratio(st, sc, st, sc, np.ones_like(sc))
    assert one.correct == 1.0 and one.all == 1.0
    none = compression_ratio(st, sc, mt, mc, np.zeros_like(mp))
    assert np.isnan(none.correct) and np.isnan(none.all)
    with pytest.raises(ValueError, match="one shape"):
        compression_ratio(st, sc, mt[:2], mc, mp)
    assert token_reduction(41.0, 100.0) == pytest.approx(0.59, abs=1e-15)


def _cand(qid, answer, tokens, n=4, gold="7"):
    text = f"r{qid} \\boxed{{{answer}}}"
    return Candidate(qid, f"Start with {qid}.", gold, text, answer, tokens, n)


def test_filters_keep_correct_and_short_segments_and_pairs_are_single_question():
    cands = [_cand(0, "7", 10), _cand(1, "7.0", 30), _cand(2, "8", 5), _cand(3, None, 5)]
    kept = keep_correct(cands)
    assert [c.question_id for c in kept] == [0, 1]
    singles = [_cand(q, "7", t, n=1) for q, t in [(0, 12), (0, 20), (0, 30), (1, 30), (1, 10)]]
    medians = median_lengths(singles)
    assert medians == {0: 20.0, 1: 20.0}
    # 10 < 20 kept; 30 >= 20 dropped; question 2 has no single samples: dropped.
    assert [c.question_id for c in keep_shorter(cands, medians)] == [0]
    with pytest.raises(ValueError, match="single-question"):
        median_lengths(cands)
    pairs = sft_pairs(kept)
    assert pairs[0] == (f"{SINGLE_HEADER}\nStart with 0.", "r0 \\boxed{7}")
    assert all("### Q" not in p and "### Q" not in r for p, r in pairs)
    assert pairs[1][0] == build_prompt([kept[1].question])
    sub = subsample(cands, 2, seed=0)
    assert len(sub) == 2 and sub == subsample(cands, 2, seed=0) and set(sub) <= set(cands)
    with pytest.raises(ValueError, match="cannot draw"):
        subsample(cands, 5, seed=0)
