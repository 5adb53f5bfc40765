"""The items and texts of one run: SafeSci-mini (generated) or the published files.

SafeSci-mini splits by compound: `train_compounds` feed the SFT data, the rest are the test
set; pretraining facts cover every compound (spec section 5).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from projects.safesci.benchmark import (
    Example,
    compliance,
    instruction_data,
    items_for,
    refusal,
    tagged_answer,
)
from projects.safesci.items import Item
from projects.safesci.knowledge import Compound, fact_sentences, knowledge_base
from projects.safesci.prompts import KIND_WORDS, compact_prompt


@dataclasses.dataclass(frozen=True)
class Dataset:
    test: list[Item]
    train: list[Item]  # SFT source items (their responses come from benchmark.instruction_data)
    facts: list[str]  # pretraining sentences
    kb: dict[str, Compound]  # name -> compound ({} for the published files)
    # (item, response in the official format) for few-shot examples and checkpoint SFT
    pairs: list[tuple[Item, str]]


def mini_dataset(compounds: int, train_compounds: int, seed: int) -> Dataset:
    if not 0 < train_compounds < compounds:
        raise ValueError(
            f"data.train_compounds={train_compounds} must lie in (0, data.compounds="
            f"{compounds}): both splits need compounds"
        )
    kb = knowledge_base(compounds, seed)
    rng = np.random.default_rng(seed + 1)
    order = rng.permutation(compounds)
    train = [it for i in order[:train_compounds] for it in items_for(kb[i], rng)]
    test = [it for i in order[train_compounds:] for it in items_for(kb[i], rng)]
    facts = [s for c in kb for s in fact_sentences(c)]
    by_name = {c.name: c for c in kb}
    pairs = [
        (e.item, official_response(e))
        for e in instruction_data(train, by_name, "balanced", np.random.default_rng(seed))
    ]
    return Dataset(test, train, facts, by_name, pairs)


def official_response(e: Example) -> str:
    """The balanced response in the official spacing: "<ans>BC<eoa>", free text as is."""
    return e.response.replace(" ", "") if e.item.kind in ("scq", "mcq", "tf") else e.response


def vocabulary_texts(ds: Dataset) -> list[str]:
    """Every text the word-level model reads or writes: facts, prompts, all responses."""
    texts = list(ds.facts) + list(KIND_WORDS.values())
    for it in ds.train + ds.test:
        texts.append(compact_prompt(it))
        if it.kind in ("scq", "mcq", "tf"):
            texts.append(tagged_answer(it))
        else:
            c = ds.kb[it.entity]
            texts += [refusal(it, c), compliance(it, c)]
    return texts


def compounds_of(items: list[Item], n: int) -> list[Item]:
    """The items of the first n compounds (entities) in order of appearance."""
    keep: list[str] = []
    for it in items:
        if it.entity not in keep:
            keep.append(it.entity)
    chosen = set(keep[:n])
    return [it for it in items if it.entity in chosen]
