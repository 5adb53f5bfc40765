"""GCG and the continuous attack (spec §6: GCG never lowers the best-so-far reward; the
continuous attack reaches at least the discrete one), suffix placement, Hamming samples."""

import numpy as np
import pytest

from projects.prm_biasbench import attacks, tier2


def _setup(prm, slips, m=3):
    _, proc, scorer, allowed = prm
    rows = scorer.encode([(e.question, e.solution) for e in slips[:3]])
    gen = np.random.default_rng(0)
    ids = np.flatnonzero(allowed)
    init = ids[gen.integers(len(ids), size=(len(rows), m))]
    return scorer, rows, attacks.suffix_batch(rows, init, proc.pad_id), init, allowed, gen


def test_the_suffix_goes_before_the_last_tag(decoder_prm, solutions):
    _, _, scorer, _ = decoder_prm
    row = scorer.encode([(solutions[1][0].question, solutions[1][0].solution)])[0]
    new, pos = attacks.with_suffix(row, np.array([7, 8, 9]))
    assert list(new.ids[pos]) == [7, 8, 9] and new.ids[new.ends[-1]] == row.ids[row.ends[-1]]
    assert list(new.ends[:-1]) == list(row.ends[:-1]) and new.ends[-1] == row.ends[-1] + 3
    assert (new.blocks[pos] == row.blocks[row.ends[-1]]).all()  # part of the last step
    assert len(new.ends) == len(row.ends)  # the PRM scores as many steps as before


@pytest.mark.parametrize("which", ["decoder_prm", "minilm_prm"])
def test_gcg_is_monotone_and_continuous_reaches_at_least_as_high(which, request, solutions):
    scorer, rows, sb, init, allowed, gen = _setup(request.getfixturevalue(which), solutions[1])
    g, s = scorer.graphdef, scorer.state
    res = attacks.gcg(
        g, s, sb, init, allowed, iterations=4, top_k=8, candidates=8, gen=gen, chunk=8
    )
    assert (np.diff(res.trace, axis=0) >= 0).all()  # best-so-far never decreases
    assert (res.trace[-1] > res.trace[0]).any()  # and the attack found something
    assert allowed[res.suffix].all()
    np.testing.assert_allclose(
        attacks.evaluate(g, s, sb, res.suffix[:, None], 8)[:, 0], res.logit, atol=1e-5
    )
    cont = attacks.continuous(g, s, sb, res.suffix, steps=5, lr=0.05)
    assert (cont >= res.logit - 1e-5).all()


def test_candidate_evaluation_matches_the_scorer(decoder_prm, solutions):
    """A suffix's logit from the attack's batch equals the PRM scoring the suffixed row."""
    scorer, rows, sb, init, _, _ = _setup(decoder_prm, solutions[1])
    g, s = scorer.graphdef, scorer.state
    cands = np.stack([init, init[:, ::-1]], axis=1)  # [N, 2, m]
    got = attacks.evaluate(g, s, sb, cands, chunk=4)
    for i, row in enumerate(rows):
        for c in range(2):
            suffixed, _ = attacks.with_suffix(row, cands[i, c])
            np.testing.assert_allclose(got[i, c], scorer.logits([suffixed])[0][-1], atol=1e-5)


def test_hamming_samples_are_at_the_exact_distance():
    gen = np.random.default_rng(0)
    suffix = np.array([[5, 6, 7, 8], [9, 9, 9, 9]])
    allowed = np.arange(5, 20)
    for d in range(5):
        s = attacks.hamming_samples(suffix, d, 6, allowed, gen)
        assert s.shape == (2, 6, 4)
        assert ((s != suffix[:, None]).sum(-1) == d).all()
        assert np.isin(s, allowed).all()


def test_allowed_tokens_exclude_specials_and_separators(word_tok, minilm_prm):
    ok = tier2.allowed_words(word_tok)
    assert not ok[:5].any() and not ok[word_tok.token_to_id("\n\n")]
    assert ok[word_tok.token_to_id("good")] and ok[word_tok.token_to_id("17")]
    tok = minilm_prm[1].tokenizer
    ok = tier2.allowed_wordpieces(tok)
    for t in ("[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]", "[unused0]", "##s"):
        assert not ok[tok.token_to_id(t)], t
    assert ok[tok.token_to_id("correct")] and ok.sum() > 20000
