"""The PRM processors, models and scorer: tags, prefix scores, padding invariance, bad input."""

import copy

import numpy as np
import pytest
from flax import nnx

from projects.prm_biasbench import prm_models, prm_train, processors
from projects.prm_biasbench.prms import minilm_trainable
from projects.prm_biasbench.steps import split_steps
from shared.models.bert import Bert, BertConfig


def test_decoder_processor_tags_every_chunk(decoder_prm, solutions, word_tok):
    _, proc, _, _ = decoder_prm
    e = solutions[0][0]
    row = proc.encode(e.question, e.solution)
    assert len(row.ends) == len(split_steps(e.solution)) == len(e.labels)
    assert all(word_tok.words[row.ids[i]] == "\n\n" for i in row.ends)
    assert row.ids[0] == word_tok.bos_id and word_tok.words[row.ids[row.ends[0]]] == "\n\n"
    assert list(row.blocks[row.ends]) == list(range(1, len(row.ends) + 1))
    # the text between tags is each chunk, encoded on its own
    chunks = split_steps(e.solution)
    start = int(np.flatnonzero(row.ids == word_tok.sep_id)[0]) + 1
    for chunk, end in zip(chunks, row.ends):
        assert word_tok.decode(row.ids[start:end]) == chunk
        start = end + 1


def test_minilm_processor_layout(minilm_prm, solutions):
    _, proc, _, _ = minilm_prm
    e = solutions[0][0]
    row = proc.encode(e.question, e.solution)
    tok = proc.tokenizer
    assert row.ids[0] == tok.token_to_id("[CLS]")
    assert all(row.ids[i] == tok.token_to_id("[SEP]") for i in row.ends)
    question_sep = int(np.flatnonzero(row.blocks == 0)[-1])
    assert row.ids[question_sep] == tok.token_to_id("[SEP]")
    assert (row.types[: question_sep + 1] == 0).all() and (row.types[question_sep + 1 :] == 1).all()
    assert tok.decode(row.ids[question_sep + 1 : row.ends[0]]) == "step 1 : " + " ".join(
        split_steps(e.solution)[0].lower().split(" ")[2:]
    )


@pytest.mark.parametrize("which", ["decoder_prm", "minilm_prm"])
def test_step_scores_are_prefix_scores(which, request, solutions):
    """r_k depends on the question and steps 1..k only (causal / block-causal attention)."""
    _, _, scorer, _ = request.getfixturevalue(which)
    e = solutions[1][2]
    chunks = split_steps(e.solution)
    changed = "\n\n".join([*chunks[:2], "Step 3: 1 + 1 = 2", *chunks[3:]])
    prefix = "\n\n".join(chunks[:2])
    full, other, short = scorer([(e.question, s) for s in (e.solution, changed, prefix)])
    np.testing.assert_allclose(full[:2], other[:2], atol=1e-6)
    np.testing.assert_allclose(full[:2], short, atol=1e-6)
    assert abs(full[2] - other[2]) > 1e-7


@pytest.mark.parametrize("which", ["decoder_prm", "minilm_prm"])
def test_scores_do_not_depend_on_the_batch(which, request, solutions):
    _, _, scorer, _ = request.getfixturevalue(which)
    clean, slips = solutions
    pairs = [(e.question, e.solution) for e in clean + slips]
    together = scorer(pairs)
    alone = [scorer([p])[0] for p in pairs[:3]]
    for a, b in zip(alone, together):
        np.testing.assert_allclose(a, b, atol=1e-6)
    assert all(len(s) == len(e.labels) for s, e in zip(together, clean + slips))


def test_a_prompt_longer_than_the_context_is_refused(decoder_prm, minilm_prm, solutions):
    e = solutions[0][0]
    long = "\n\n".join([e.solution] * 12)
    for _, proc, _, _ in (decoder_prm, minilm_prm):
        with pytest.raises(ValueError, match="more than the PRM's context"):
            proc.encode(e.question, long)


def test_training_lowers_the_loss_and_freezes_what_it_should(decoder_prm, minilm_prm, solutions):
    clean, slips = solutions
    examples = clean + slips
    model, proc, _, _ = decoder_prm
    model = copy.deepcopy(model)
    rows = [proc.encode(e.question, e.solution) for e in examples]
    arrays = prm_train.training_arrays(rows, [e.labels for e in examples], proc.pad_id)
    assert arrays["lm_mask"][: len(clean)].any() and not arrays["lm_mask"][len(clean) :].any()

    def loss(m):
        logits = m(arrays)
        steps = np.take_along_axis(np.asarray(logits), arrays["ends"], 1)
        return float(prm_train.step_bce(steps, arrays["labels"], arrays["ends_valid"])[0])

    before = loss(model)
    cfg = prm_train.PRMTrainConfig(steps=30, batch_size=12, lr=3e-3, warmup_steps=0, log_every=30)
    prm_train.train_prm(model, nnx.Param, arrays, cfg, 0, None, None, "test")
    assert loss(model) < before - 0.1
    # MiniLM: only the head and the top blocks are trainable
    cfg = BertConfig(num_layers=3, dim=16, num_heads=2, ffn_dim=32, vocab_size=50)
    bert = nnx.eval_shape(
        lambda: prm_models.MiniLMPRM(Bert(cfg, rngs=nnx.Rngs(0)), rngs=nnx.Rngs(0))
    )

    def chosen(layers):
        return {p[:4] for p, _ in nnx.to_flat_state(nnx.state(bert, minilm_trainable(3, layers)))}

    assert chosen(0) == {("head", "bias"), ("head", "kernel")}
    blocks = {p for p in chosen(1) if p[:3] == ("bert", "encoder", "blocks")}
    assert blocks == {("bert", "encoder", "blocks", 2)} and len(chosen(1)) == 3
    assert ("bert", "word_embed", "embedding") in chosen(3)  # every layer: everything


def test_collate_refuses_rows_wider_than_the_batch(decoder_prm, solutions):
    _, proc, _, _ = decoder_prm
    row = proc.encode(solutions[0][0].question, solutions[0][0].solution)
    with pytest.raises(ValueError, match="exceeds the batch shape"):
        processors.collate([row], proc.pad_id, width=4)
