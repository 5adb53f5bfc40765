import json

import numpy as np
import pytest

from shared.data.arithmetic_trace_text import (
    render_conpress,
    render_prm,
    render_question,
    vocabulary,
)
from shared.data.arithmetic_traces import HARD, IN_DISTRIBUTION, sample_trace, with_slip
from shared.data.tokenizers import Tokenizer
from shared.data.word_tokenizer import RESERVED, WordTokenizer, join_words, pre_tokenize


def trace_texts(n: int, seed: int = 0) -> list[str]:
    """Questions, PRM solutions (clean, slipped), ConPress solutions (0-6 checks); both splits."""
    rng = np.random.default_rng(seed)
    texts = []
    for i in range(n):
        cfg = HARD if i % 4 == 0 else IN_DISTRIBUTION
        trace = sample_trace(rng, cfg)
        slipped = with_slip(trace, rng, cfg)
        texts += [render_question(trace.problem), render_prm(trace), render_prm(slipped)]
        texts.append(render_conpress(trace, int(rng.integers(7)), rng))
    return texts


def test_reserved_ids_are_fixed_and_the_protocol_holds():
    tok = WordTokenizer(["a", "b"])
    assert (tok.pad_id, tok.bos_id, tok.eos_id, tok.sep_id, tok.unk_id) == (0, 1, 2, 3, 4)
    assert [tok.token_to_id(t) for t in RESERVED] == [0, 1, 2, 3, 4]
    assert RESERVED == ("<pad>", "<bos>", "<eos>", "<sep>", "<unk>")
    assert tok.token_to_id("a") == 5 and tok.vocab_size == 7
    assert isinstance(tok.vocab_size, int)
    checked: Tokenizer = tok  # the attributes and methods of the shared protocol
    assert checked.decode(checked.encode("b a")) == "b a"
    with pytest.raises(KeyError, match="'c' is not in the vocabulary"):
        tok.token_to_id("c")


@pytest.mark.parametrize(
    "text, words",
    [
        ("Step 1: 17 + 25 = 42\n\nAnswer: 42", "Step|1|:|17|+|25|=|42|\n\n|Answer|:|42"),
        ("step: 9 * 3 = 27\n\\boxed{27}", "step|:|9|*|3|=|27|\n|\\boxed|{|27|}"),
        ("Start with 5. Subtract 5.", "Start|with|5|.|Subtract|5|."),
        ("### Q1: (a, b) x - y... <unk>", "###|Q1|:|(|a|,|b|)|x|-|y|...|<unk>"),
        ("\\boxed{\\frac{1}{2}}", "\\boxed|{|\\frac|{|1|}|{|2|}}"),
        # an answer tag is one word (SafeSci's <ans>...<eoa>); a bare "<" stays punctuation
        ("# ANSWER: <ans> BC <eoa>", "#|ANSWER|:|<ans>|BC|<eoa>"),
        ("<smiles> CCO </smiles> 3 < 4 < - x", "<smiles>|CCO|</smiles>|3|<|4|<|-|x"),
    ],
)
def test_pre_tokenize_splits_words_punctuation_and_newline_runs(text, words):
    assert pre_tokenize(text) == words.split("|")
    assert join_words(pre_tokenize(text)) == text  # all of these are canonical


def test_round_trip_on_generated_traces_of_every_format():
    texts = trace_texts(200)
    tok = WordTokenizer(vocabulary(HARD))  # HARD's numbers include IN_DISTRIBUTION's
    for text in texts:
        ids = tok.encode(text)
        assert tok.unk_id not in ids, tok.unknown_words(text)
        assert tok.decode(ids) == text


def test_from_corpus_of_traces_round_trips_and_stays_within_the_generator_vocabulary():
    texts = trace_texts(100, seed=1)
    tok = WordTokenizer.from_corpus(texts)
    assert set(tok.words[len(RESERVED) :]) <= set(vocabulary(HARD))
    assert all(tok.decode(tok.encode(t)) == t for t in texts)


def test_from_corpus_orders_by_frequency_then_code_point():
    tok = WordTokenizer.from_corpus(["b a c", "a c d", "c"])
    assert tok.words[len(RESERVED) :] == ("c", "a", "b", "d")  # 3, 2, then ties 1, 1 by name
    again = WordTokenizer.from_corpus(["c", "a c d", "b a c"])  # order of texts does not matter
    assert again.words == tok.words


def test_from_corpus_min_count_and_max_size():
    texts = ["b a c", "a c d", "c"]
    assert WordTokenizer.from_corpus(texts, min_count=2).words[5:] == ("c", "a")
    assert WordTokenizer.from_corpus(texts, max_size=7).words[5:] == ("c", "a")
    assert WordTokenizer.from_corpus(texts, max_size=7).vocab_size == 7
    assert WordTokenizer.from_corpus(texts, min_count=3, max_size=100).words[5:] == ("c",)


@pytest.mark.parametrize(
    "texts, kwargs, message",
    [
        ([], {}, "empty vocabulary"),
        (["  \t "], {}, "empty vocabulary"),
        (["a b"], {"min_count": 2}, "no word occurs at least min_count=2"),
        (["a b"], {"min_count": 0}, "min_count must be >= 1"),
        (["a b"], {"max_size": 5}, "max_size must exceed the 5 reserved ids"),
        (["ok", "a <eos> b"], {}, "corpus text 1 contains the reserved token '<eos>'"),
    ],
)
def test_from_corpus_errors(texts, kwargs, message):
    with pytest.raises(ValueError, match=message):
        WordTokenizer.from_corpus(texts, **kwargs)


@pytest.mark.parametrize(
    "words, message",
    [
        ([], "at least one word"),
        (["a", "<unk>"], r"'<unk>' is reserved \(id 4\)"),
        (["a", "b", "a"], "'a' appears twice"),
        (["17+"], "'17\\+' is not a single word"),
        (["two words"], "not a single word"),
        ([""], "not a single word"),
    ],
)
def test_explicit_vocabulary_errors(words, message):
    with pytest.raises(ValueError, match=message):
        WordTokenizer(words)


def test_unknown_words_encode_to_unk_and_decode_to_a_visible_marker():
    tok = WordTokenizer(vocabulary(IN_DISTRIBUTION))  # numbers 0..99
    text = "Step 1: 99 + 1 = 100"
    ids = tok.encode(text)
    assert ids[-1] == tok.unk_id and ids.count(tok.unk_id) == 1
    assert tok.unknown_words(text) == ["100"]
    assert tok.decode(ids) == "Step 1: 99 + 1 = <unk>"
    assert tok.encode(tok.decode(ids)) == ids  # the marker re-encodes to unk


def test_decode_skips_pad_bos_eos_sep_unless_asked():
    tok = WordTokenizer(["a", "b"])
    ids = [tok.bos_id, 5, tok.sep_id, 6, tok.unk_id, tok.eos_id, tok.pad_id]
    assert tok.decode(ids) == "a b <unk>"
    shown = tok.decode(ids, skip_special=False)
    assert shown == "<bos> a <sep> b <unk> <eos> <pad>"
    assert tok.encode(shown) == ids
    with pytest.raises(ValueError, match=r"id 7 is outside the vocabulary \[0, 7\)"):
        tok.decode([7])
    assert tok.decode(np.array([5, 6], np.int32)) == "a b"


def test_non_canonical_spacing_is_normalised_idempotently():
    messy = "a  ,b(a )\t{ b }.\n\n\nb :a  \n"
    tok = WordTokenizer.from_corpus([messy])
    once = tok.decode(tok.encode(messy))
    assert once == "a, b (a){b}.\n\n\nb: a\n"
    assert tok.decode(tok.encode(once)) == once


def test_encode_batch_pads_right():
    tok = WordTokenizer(["a", "b"])
    ids, valid = tok.encode_batch(["a", "a b a"])
    assert ids.tolist() == [[5, 0, 0], [5, 6, 5]] and ids.dtype == np.int32
    assert valid.tolist() == [[True, False, False], [True, True, True]]


def test_save_and_load_give_the_same_tokenizer(tmp_path):
    tok = WordTokenizer(vocabulary(HARD))
    path = tmp_path / "vocab.json"
    tok.save(path)
    loaded = WordTokenizer.load(path)
    assert loaded.words == tok.words
    text = trace_texts(2)[1]
    assert loaded.encode(text) == tok.encode(text)


def test_load_rejects_foreign_files(tmp_path):
    path = tmp_path / "vocab.json"
    path.write_text(json.dumps({"a": 1}))
    with pytest.raises(ValueError, match="not a word tokenizer file"):
        WordTokenizer.load(path)
    WordTokenizer(["a"]).save(path)
    data = json.loads(path.read_text())
    data["reserved"] = ["<pad>", "<unk>"]
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="reserves"):
        WordTokenizer.load(path)
