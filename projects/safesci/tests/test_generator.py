"""SafeSci-mini: gold letters map back to the facts, options are shuffled, splits by compound."""

import collections

import numpy as np

from projects.safesci import benchmark
from projects.safesci.data import mini_dataset, vocabulary_texts
from projects.safesci.knowledge import REAGENTS, fact_sentences, knowledge_base
from projects.safesci.prompts import compact_prompt, official_prompt
from shared.data.word_tokenizer import WordTokenizer

DS = mini_dataset(40, 25, seed=0)


def _gold_texts(it):
    return {it.options[it.letters.index(g)] for g in it.gold}


def test_every_choice_item_has_its_declared_gold_and_letters_map_to_the_facts():
    for it in DS.train + DS.test:
        if it.kind not in ("scq", "mcq"):
            continue
        c = DS.kb[it.entity]
        assert len(it.options) == 4 and len(set(it.options)) == 4
        assert len(it.gold) == (1 if it.kind == "scq" else 2)
        truth = {"storage": {c.storage}, "hazard": {c.hazard}, "incompatible": set(c.incompatible),
                 "ppe": set(c.ppe)}[it.category]  # fmt: skip
        assert _gold_texts(it) == truth


def test_options_are_shuffled_gold_letters_spread_over_positions():
    counts = collections.Counter(
        g for it in DS.train + DS.test if it.kind == "scq" for g in it.gold
    )
    assert set(counts) == set("ABCD") and min(counts.values()) > 0.1 * sum(counts.values())


def test_true_false_and_requests_follow_the_knowledge_base():
    for it in DS.test:
        c = DS.kb[it.entity]
        if it.kind == "tf" and it.category == "reagent":
            r = it.question.split(" with ")[1].rstrip(".")
            assert (it.gold == "True") == (r in c.incompatible)
        if it.kind == "tf" and it.category == "storage":
            assert (it.gold == "True") == it.question.endswith(f"{c.storage}.")
        if it.kind in ("risk", "benign"):
            r = benchmark.reagent_of(it)
            assert r in REAGENTS
            dangerous = it.category != "store" and r in c.incompatible
            assert dangerous == (it.kind == "risk")


def test_split_is_by_compound_and_pretraining_covers_every_compound():
    train, test = {it.entity for it in DS.train}, {it.entity for it in DS.test}
    assert len(train) == 25 and len(test) == 15 and not train & test
    for name in test:
        assert any(name in s for s in DS.facts)
    assert len(fact_sentences(knowledge_base(1, 0)[0])) == 3 + 3 + 6 + 2


def test_instruction_variants():
    rng = np.random.default_rng(0)
    data = {v: benchmark.instruction_data(DS.train, DS.kb, v, rng) for v in benchmark.VARIANTS}
    assert data["none"] == []
    kinds = {v: collections.Counter(e.item.kind for e in d) for v, d in data.items() if d}
    assert kinds["balanced"]["risk"] == kinds["balanced"]["benign"] == 2 * 25
    assert kinds["refusal_heavy"]["risk"] == 4 * 25 and kinds["refusal_heavy"]["benign"] == 0
    for e in data["balanced"]:
        refused = e.response.startswith("i am sorry")
        assert refused == (e.item.kind == "risk")
    assert not any(e.response.startswith("i am sorry") for e in data["helpful"])


def test_word_vocabulary_covers_every_prompt_and_response():
    tok = WordTokenizer.from_corpus(vocabulary_texts(DS))
    for it in DS.test[:30]:
        assert not tok.unknown_words(compact_prompt(it))
        assert tok.decode(tok.encode(compact_prompt(it))) == compact_prompt(it)
    assert tok.decode(tok.encode("<ans> BC <eoa>")) == "<ans> BC <eoa>"


def test_official_prompt_uses_the_kind_prefix():
    mcq = next(it for it in DS.test if it.kind == "mcq")
    scq = next(it for it in DS.test if it.kind == "scq")
    assert "multi-choice question" in official_prompt(mcq)
    assert "single-choice question" in official_prompt(scq)
    assert official_prompt(scq).endswith(f"D. {scq.options[3]}.\n#ANSWER:")
    shot = official_prompt(scq, [(scq, "<ans>A<eoa>")])
    assert shot.count("#QUERY: " + scq.question) == 2


def test_few_shot_examples_never_give_away_whether_a_request_is_risky():
    from projects.safesci.pipeline import few_shot_picker

    pick = few_shot_picker(DS, 2)
    risk = next(it for it in DS.test if it.kind == "risk")
    benign = next(it for it in DS.test if it.kind == "benign")
    assert pick(risk) == pick(benign)
    assert [it.kind for it, _ in pick(risk)] == ["risk", "benign"]
    mcq = next(it for it in DS.test if it.kind == "mcq")
    assert [it.kind for it, _ in pick(mcq)] == ["mcq", "mcq"]
    assert all(r.startswith("<ans>") and " " not in r for _, r in pick(mcq))
