"""real_files on tiny directories in the published SafeSci layout, written into tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from projects.safesci.items import LETTERS, Item
from projects.safesci.real_files import LISTS, REFUSAL, load_bench, load_train

SCQ = "data/chem/PubChem/toxicity_query_scq_sampled.json"
MCQ = "data/bio/UniProt/function_predition_mcq_sampled.json"
TF = "data/chem/SciKnowEval/lab_safety_tf_sampled.json"
COMPOUND = "data/chem/ord-data/compound_design_sampled.json"
GENE = "data/bio/BV-BRC/gene_query_sampled.json"
PROTEIN = "data/bio/UniProt/protein_design_0.5meta_sampled.json"


def _write(tmp_path: Path, items: list, file: str = "test_set.json") -> Path:
    # like the published lists: CRLF rows, trailing spaces, blank rows at the end
    rows = {"mcq.csv": [SCQ + " ", MCQ], "tf_q.csv": [TF + " "], "compound_gen.csv": [COMPOUND, ""],
            "gene_gen.csv": [GENE + " "], "protein_gen.csv": [PROTEIN]}  # fmt: skip
    for name in LISTS:
        (tmp_path / name).write_bytes("".join(r + "\r\n" for r in rows[name]).encode())
    (tmp_path / file).write_text(json.dumps(items))
    return tmp_path


def _raw(source: str, **fields) -> dict:
    return {"question": "q", "source_file": source, **fields}


def _gold_texts(item: Item) -> set[str]:
    return {item.options[LETTERS.index(letter)] for letter in item.gold}


def _one(tmp_path: Path, raw: dict) -> Item:
    (item,) = load_bench(_write(tmp_path, [raw])).items
    return item


def test_scq_gets_gold_plus_three_distractors(tmp_path):
    raw = _raw(SCQ, answer="safe", options=list("abcd"))
    item = _one(tmp_path, raw)
    assert (item.kind, item.entity, item.category) == ("scq", SCQ, "")
    assert set(item.options) == {"safe", "a", "b", "c"}  # CSV trailing space stripped
    assert _gold_texts(item) == {"safe"}


def test_mcq_two_answers_two_gold_letters(tmp_path):
    raw = _raw(MCQ, answers=["s1", "s2"], options=list("abc"))
    item = _one(tmp_path, raw)
    assert item.kind == "mcq" and len(item.gold) == 2 and len(item.options) == 4
    assert _gold_texts(item) == {"s1", "s2"}


def test_four_answers_are_all_gold(tmp_path):
    raw = _raw(MCQ, answers=list("pqrst"), options=["x"])
    item = _one(tmp_path, raw)
    assert item.gold == "ABCD" and set(item.options) == set("pqrs")


def test_mcq_suffix_means_multi_even_with_one_answer(tmp_path):
    raw = _raw(MCQ, answer="s", options=list("abc"))
    assert _one(tmp_path, raw).kind == "mcq"


def test_prelettered_keeps_order_and_gold(tmp_path):
    raw = _raw(MCQ, options=list("wxyz"), gt="CA")
    item = _one(tmp_path, raw)
    assert item.options == tuple("wxyz") and item.gold == "AC"


def test_tf_normalised_and_bad_answer_named(tmp_path):
    raws = [_raw(TF, answer=a) for a in (True, "false", " TRUE ")]
    items = load_bench(_write(tmp_path, raws)).items
    assert [(i.kind, i.gold) for i in items] == [("tf", "True"), ("tf", "False"), ("tf", "True")]
    raws[1]["answer"] = "maybe"
    with pytest.raises(ValueError, match=r"test_set.json item 1: field 'answer'"):
        load_bench(_write(tmp_path, raws))


def test_dict_answers_rendered_officially(tmp_path):
    options = [{"dose": f"{n} mg", "route": "oral"} for n in (2, 3, 4, 5)]
    raw = _raw(SCQ, answer={"dose": "1 mg", "route": "oral"}, options=options)
    item = _one(tmp_path, raw)
    assert _gold_texts(item) == {"dose: 1 mg.,route: oral."}
    assert "dose: 4 mg.,route: oral." in item.options and len(item.options) == 4


def test_generation_skipped_and_counted(tmp_path):
    raws = [_raw(source, answer="C") for source in (COMPOUND, GENE, PROTEIN)]
    loaded = load_bench(_write(tmp_path, raws))
    assert loaded.items == [] and loaded.skipped == {"generation": 3}


def test_other_sources_are_open_risk_questions(tmp_path):
    raw = _raw("data/chem/x.json", category="c", answer="a")
    item = _one(tmp_path, raw)
    assert (item.kind, item.options, item.gold, item.category) == ("risk", (), "", "c")


def test_reject_category_routed_to_open_question(tmp_path):
    raw = _raw(MCQ, options=list("wxyz"), gt="A", category="RDDProductionandImpact")
    assert _one(tmp_path, raw).kind == "risk"


def test_duplicate_options_skipped_not_fatal(tmp_path):
    raws = [_raw(SCQ, answer="a", options=list("abc")), _raw(SCQ, answer="z", options=list("abc")),
            _raw(SCQ, answers=["s1", "s2"], options=["a"]), _raw(SCQ, options=["a"])]  # fmt: skip
    loaded = load_bench(_write(tmp_path, raws))
    assert len(loaded.items) == 1
    several = "_scq item with several gold answers"
    assert loaded.skipped == {"duplicate options": 1, several: 1, "no gold": 1}


def test_seed_repeats_and_varies(tmp_path):
    raws = [_raw(SCQ, answer="s", options=list("abc")) for _ in range(20)]
    data_dir = _write(tmp_path, raws)
    assert load_bench(data_dir, seed=1).items == load_bench(data_dir, seed=1).items
    assert load_bench(data_dir, seed=1).items != load_bench(data_dir, seed=2).items


def test_missing_files_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="mcq.csv"):
        load_bench(tmp_path)
    with pytest.raises(FileNotFoundError, match="test_set.json not found.*mini_test_set.json"):
        load_bench(_write(tmp_path, [], file="mini_test_set.json"))
    assert load_bench(tmp_path, file="mini_test_set.json").items == []


def test_malformed_item_names_index_and_field(tmp_path):
    raws = [_raw("data/x.json"), {"source_file": "data/x.json"}]
    with pytest.raises(ValueError, match="item 1: field 'question'"):
        load_bench(_write(tmp_path, raws))


def test_train_pairs(tmp_path):
    raws = [
        _raw(MCQ, answers=["s1", "s2"], options=list("ab")),
        _raw(TF, answer="true"),
        _raw(MCQ, options=list("wxyz"), gt="D", category="LightHeavyWeaponsManufacturing"),
        _raw("data/chem/x.json", answer=["a", "b"]),
        _raw("data/chem/x.json", answers={"k": "v", "e": "", "n": 2}),
        _raw(COMPOUND, answer="CCO"),
    ]
    pairs, skipped = load_train(_write(tmp_path, raws, file="train_set.json"))
    assert skipped == {"generation": 1}
    responses = [r for _, r in pairs]
    assert responses[0] == f"<ans>{pairs[0][0].gold}<eoa>" and len(pairs[0][0].gold) == 2
    assert responses[1:] == ["<ans>True<eoa>", REFUSAL, "a; b", "k: v\nn: 2"]
