"""The local C4 reader on small generated shards (JSON lines, gzip, ArrayRecord with JSON and
tf.train.Example records), the official pad-to-max-length examples and packing, with the byte
tokenizer (the T5 sentencepiece model is not needed)."""

import gzip
import json
import sys

import numpy as np
import pytest

from shared.data import c4
from shared.data.lm_pipeline import pack_documents
from shared.data.resolver import MissingDataError
from shared.data.tokenizers import ByteTokenizer

DOCS = [f"Document {i}: " + "word " * (i % 7) + "end." for i in range(30)]
TOK = ByteTokenizer()


def _write_json(path, texts, gz):
    lines = "".join(json.dumps({"text": t, "url": "u", "timestamp": "t"}) + "\n" for t in texts)
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(lines)
    else:
        path.write_text(lines, encoding="utf-8")


@pytest.fixture
def root(tmp_path):
    # Shard 1 is plain JSON, shards 0 and 2 gzip; a validation shard and an unrelated file.
    _write_json(tmp_path / "c4-train.00001-of-01024.json", DOCS[10:20], gz=False)
    _write_json(tmp_path / "c4-train.00000-of-01024.json.gz", DOCS[:10], gz=True)
    _write_json(tmp_path / "c4-train.00002-of-01024.json.gz", DOCS[20:], gz=True)
    _write_json(tmp_path / "c4-validation.00000-of-00008.json.gz", ["held out"], gz=True)
    (tmp_path / "README.txt").write_text("not a shard")
    return tmp_path


def test_files_in_shard_order_and_documents(root):
    files = c4.c4_files(root, "train")
    assert [p.name[:14] for p in files] == ["c4-train.00000", "c4-train.00001", "c4-train.00002"]
    assert list(c4.read_documents(files)) == DOCS
    assert list(c4.read_documents(c4.c4_files(root, "validation"))) == ["held out"]
    with pytest.raises(MissingDataError, match="c4-train.00000-of-01024.json.gz"):
        c4.c4_files(root / "missing", "train")
    with pytest.raises(ValueError, match="split"):
        c4.c4_files(root, "test")


def test_shuffles_are_seeded_permutations_and_host_shards_partition(root):
    files = c4.c4_files(root, "train")
    a = list(c4.read_documents(files, seed=3, shuffle_buffer=8))
    assert sorted(a) == sorted(DOCS) and a != DOCS
    assert a == list(c4.read_documents(files, seed=3, shuffle_buffer=8))
    assert a != list(c4.read_documents(files, seed=4, shuffle_buffer=8))
    parts = [list(c4.read_documents(files, seed=3, shard_index=i, shard_count=2)) for i in (0, 1)]
    assert sorted(parts[0] + parts[1]) == sorted(DOCS) and not set(parts[0]) & set(parts[1])
    with pytest.raises(ValueError, match="shard_index"):
        list(c4.read_documents(files, shard_index=2, shard_count=2))


def test_bad_line_names_file_and_line(tmp_path):
    (tmp_path / "c4-train.00000-of-01024.json").write_text('{"text": "ok"}\n{"url": "x"}\n')
    with pytest.raises(ValueError, match=r"c4-train.00000-of-01024.json:2"):
        list(c4.read_documents(c4.c4_files(tmp_path, "train")))


def test_pad_examples_match_the_official_padding():
    out = c4.pad_examples(["ab", "x" * 20, ""], TOK, max_length=8, pad_id=0)
    eos = TOK.eos_id
    np.testing.assert_array_equal(out["tokens"][0], [97, 98, eos, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(out["labels"][0], [97, 98, eos, -100, -100, -100, -100, -100])
    # Truncation keeps max_length - 1 tokens and ends with eos (HF's T5 tokenizer does this).
    np.testing.assert_array_equal(out["tokens"][1], [120] * 7 + [eos])
    np.testing.assert_array_equal(out["labels"][1], out["tokens"][1])
    np.testing.assert_array_equal(out["tokens"][2], [eos] + [0] * 7)
    # The official value mask (labels[input_ids == pad] = -100) gives the same labels here.
    official = np.where(out["tokens"] == 0, -100, out["tokens"])
    np.testing.assert_array_equal(out["labels"], official)
    assert out["tokens"].dtype == np.int32 and out["labels"].dtype == np.int32
    with pytest.raises(ValueError, match="pad_id"):
        c4.pad_examples(["ab"], TOK, max_length=8)


def test_examples_and_streams_reuse_packing(root):
    with pytest.raises(ValueError, match="pad_id"):  # the byte tokenizer has no pad id
        c4.c4_examples(root, "train", TOK, mode="pad", max_length=16)
    tok = ByteTokenizer()
    tok.pad_id = 0
    pad = c4.c4_examples(root, "train", tok, mode="pad", max_length=16, max_documents=12)
    assert pad["tokens"].shape == pad["labels"].shape == (12, 16)
    np.testing.assert_array_equal(pad["tokens"], c4.pad_examples(DOCS[:12], tok, 16)["tokens"])
    pack = c4.c4_examples(root, "train", tok, mode="pack", max_length=16)
    np.testing.assert_array_equal(pack["tokens"], pack_documents(DOCS, tok, 16))
    # Streams: the same examples batch by batch, the last partial batch dropped.
    batches = list(c4.stream_batches(DOCS, tok, 4, mode="pad", max_length=16))
    assert len(batches) == 7
    np.testing.assert_array_equal(
        np.concatenate([b["labels"] for b in batches]),
        c4.pad_examples(DOCS[:28], tok, 16)["labels"],
    )
    batches = list(c4.stream_batches(DOCS, tok, 4, mode="pack", max_length=16))
    windows = pack_documents(DOCS, tok, 16)
    np.testing.assert_array_equal(np.concatenate([b["tokens"] for b in batches]),
                                  windows[: len(windows) // 4 * 4])  # fmt: skip
    with pytest.raises(ValueError, match="mode"):
        c4.c4_examples(root, "train", tok, mode="concat")


def _tf_example_class():
    """tf.train.Example built from its schema with protobuf (TensorFlow is not installed)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="c4_example.proto", package="t", syntax="proto3")

    def msg(name, *fields):
        m = fdp.message_type.add(name=name)
        for fname, num, ftype, label, tname in fields:
            m.field.add(name=fname, number=num, type=ftype, label=label, type_name=tname)
        return m

    rep, opt = F.LABEL_REPEATED, F.LABEL_OPTIONAL
    msg("BytesList", ("value", 1, F.TYPE_BYTES, rep, None))
    msg("Int64List", ("value", 1, F.TYPE_INT64, rep, None))
    msg("Feature", ("bytes_list", 1, F.TYPE_MESSAGE, opt, ".t.BytesList"),
        ("int64_list", 3, F.TYPE_MESSAGE, opt, ".t.Int64List"))  # fmt: skip
    feats = msg("Features", ("feature", 1, F.TYPE_MESSAGE, rep, ".t.Features.FeatureEntry"))
    entry = feats.nested_type.add(name="FeatureEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=opt)
    entry.field.add(name="value", number=2, type=F.TYPE_MESSAGE, label=opt, type_name=".t.Feature")
    msg("Example", ("features", 1, F.TYPE_MESSAGE, opt, ".t.Features"))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("t.Example"))


def test_array_record_shards_with_json_and_tf_example_records(tmp_path):
    from array_record.python.array_record_module import ArrayRecordWriter

    example = _tf_example_class()
    texts = ["first doc", "second, with ünïcode", "third " * 50]
    writer = ArrayRecordWriter(str(tmp_path / "c4-train.array_record-00000-of-01024"), "")
    for i, t in enumerate(texts):
        if i == 1:
            writer.write(json.dumps({"text": t}).encode())
            continue
        ex = example()
        ex.features.feature["url"].bytes_list.value.append(b"https://example.com")
        ex.features.feature["timestamp"].int64_list.value.extend([1, 2**40])
        ex.features.feature["text"].bytes_list.value.append(t.encode())
        writer.write(ex.SerializeToString())
    writer.close()
    assert list(c4.read_documents(c4.c4_files(tmp_path, "train"))) == texts
    with pytest.raises(ValueError, match="no bytes feature 'body'"):
        c4.example_text(ex.SerializeToString(), "body")


def test_t5_tokenizer_names_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "sentencepiece", None)  # as when it is not installed
    with pytest.raises(ImportError, match=r"pip install sentencepiece==0\.2\.3"):
        c4.T5SentencePiece(tmp_path / "spiece.model")


def test_lm_data_packs_train_and_caps_validation_tokens(root):
    data = c4.lm_data(root, 4, tokenizer=TOK, max_train_documents=20, val_tokens=10**6)
    shuffled = list(c4.read_documents(c4.c4_files(root, "train"), seed=42))[:20]
    assert shuffled != DOCS[:20]  # the file order is shuffled with the seed
    np.testing.assert_array_equal(data.train, pack_documents(shuffled, TOK, 4))
    np.testing.assert_array_equal(data.val, pack_documents(["held out"], TOK, 4))
    assert data.vocab_size == 257
    # Reading stops once the validation budget is reached: "held out" + eos is 9 tokens.
    _write_json(root / "c4-validation.00001-of-00008.json.gz", ["x" * 40] * 5, gz=True)
    assert c4.lm_data(root, 4, tokenizer=TOK, val_tokens=9).val.shape == (1, 5)
    assert c4.lm_data(root, 4, tokenizer=TOK, val_tokens=10).val.shape == (10, 5)  # 9 + 41
