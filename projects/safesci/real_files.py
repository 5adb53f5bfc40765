"""Loader for the published SafeSciBench / SafeSciTrain files (layout of yangyangyang127/SafeSci).

Items are routed by their `source_file` as eval.py `_get_prompt` does, through five CSV lists:
mcq.csv -> multiple choice (`_mcq` = multi-answer, `_scq` = single), tf_q.csv -> true/false, the
compound/gene/protein generation lists -> skipped and counted, anything else -> open question
scored by refusal (kind "risk"). Deliberate differences from the official code: options are
shuffled by a generator seeded with (seed, item index), so loads repeat and one item's edit leaves
the others' letters alone; items it would crash on or score ambiguously (an option text twice, no
gold, under two options, an `_scq` item with several gold answers) are skipped and counted.
"""

from __future__ import annotations

import collections
import csv
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from projects.safesci.items import LETTERS, TAGGED, Item, lettered

LISTS = ("mcq.csv", "tf_q.csv", "compound_gen.csv", "gene_gen.csv", "protein_gen.csv")
GENERATION_LISTS = LISTS[2:]
# eval.py's `mcq_as_reject_qa_categories`: multiple-choice items of these categories are asked as
# open questions, where refusing is the safe behaviour
REJECT_QA_CATEGORIES = frozenset(
    "CriticalNuclearParameters FacilitySecurityVulnerabilities NuclearDesignSpecifications "
    "MaliciousOperationalExploitation HighRiskMaterialSecurity RDDProductionandImpact "
    "ProliferationTechnologyRisks LightHeavyWeaponsManufacturing PsychologicalManipulationTactics "
    "CoerciveControlStrategies GroomingExploitationMethods GaslightingIsolationTechniques".split()
)
# prepare_for_training.py's target for an open question that has no answer
REFUSAL = "I am sorry, I cannot answer this question as it poses a high safety risk."
# distractors kept per number of gold answers, so that an item always shows four options
_N_DISTRACTORS = {1: 3, 2: 2, 3: 1}
_LAYOUT = (
    f"a SafeSci data directory holds {', '.join(LISTS)}, test_set.json (or mini_test_set.json) "
    "and train_set.json; download them as the README of yangyangyang127/SafeSci says"
)


class _Skip(Exception):
    """An item we cannot score faithfully; its message is the reason it is counted under."""


@dataclasses.dataclass(frozen=True)
class LoadedBench:
    items: list[Item]
    skipped: dict[str, int]  # reason -> number of items left out


def _need(path: Path) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: {_LAYOUT}")
    return path


def _read_list(path: Path) -> set[str]:
    with _need(path).open(encoding="utf-8", newline="") as f:
        # rows carry trailing spaces and the published lists end with blank rows
        return {row[0].strip() for row in csv.reader(f) if row and row[0].strip()}


def _bad(where: str, field: str, value: Any, expected: str) -> ValueError:
    return ValueError(f"{where}: field {field!r} is {value!r}; expected {expected}")


def _str_field(raw: dict, field: str, where: str) -> str:
    value = raw.get(field)
    if not isinstance(value, str):
        raise _bad(where, field, value, "a string")
    return value


def _str_list(value: Any, where: str, field: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _bad(where, field, value, "a list of strings")
    return value


def _dict_text(value: Any, where: str, field: str) -> str:
    """The official `dict_to_text` rendering of a dict option: "k1: v1.,k2: v2."."""
    if not isinstance(value, dict):
        raise _bad(where, field, value, "a dict, like the gold answer")
    return ",".join(f"{k}: {v}." for k, v in value.items())


def _shuffled(raw: dict, where: str, rng_key: tuple[int, int]) -> tuple[tuple[str, ...], str]:
    field = "answers" if "answers" in raw else "answer"  # eval.py prefers `answers` here
    answer, distractors = raw.get(field), raw.get("options", [])
    if not isinstance(distractors, list):
        raise _bad(where, "options", distractors, "a list")
    if answer in (None, "", [], {}):
        raise _Skip("no gold")
    if isinstance(answer, dict):
        answers = [_dict_text(answer, where, field)]
        distractors = [_dict_text(d, where, "options") for d in distractors[:3]]
    else:
        answers = _str_list([answer] if isinstance(answer, str) else answer, where, field)[:4]
        kept = _N_DISTRACTORS.get(len(answers), 0)
        distractors = _str_list(distractors[:kept], where, "options")
    options = answers + distractors
    if len(set(options)) < len(options):
        raise _Skip("duplicate options")  # `lettered` could not say which copy is gold
    if len(options) < 2:
        raise _Skip("fewer than two options")
    return lettered(answers, distractors, np.random.default_rng(rng_key))


def _given(raw: dict, where: str) -> tuple[tuple[str, ...], str]:
    """A pre-lettered item: `options` in letter order and `gt` its gold letters, kept as given."""
    options = _str_list(raw.get("options"), where, "options")
    gt = raw["gt"]
    if isinstance(gt, list):
        gt = "".join(_str_list(gt, where, "gt"))
    if not isinstance(gt, str):
        raise _bad(where, "gt", gt, "gold letters such as 'BC'")
    letters = "".join(c for c in gt.upper() if c.isalpha())  # tolerates "B, C" and "b c"
    if len(set(options)) < len(options):
        raise _Skip("duplicate options")
    if not 2 <= len(options) <= len(LETTERS):
        raise _Skip(f"not 2 to {len(LETTERS)} options")
    if not letters or set(letters) - set(LETTERS[: len(options)]):
        raise _Skip("gold letters not among options")
    return tuple(options), "".join(sorted(set(letters)))


def _tf_gold(raw: dict, where: str) -> str:
    value = raw.get("answer")
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().capitalize()
    raise _bad(where, "answer", value, "True or False (a boolean or a string in any case)")


def _to_item(raw: Any, where: str, lists: dict[str, set[str]], rng_key: tuple[int, int]) -> Item:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(raw).__name__}")
    question = _str_field(raw, "question", where)
    source = _str_field(raw, "source_file", where).strip()
    category = raw.get("category") or ""
    if not isinstance(category, str):
        raise _bad(where, "category", category, "a string")
    meta = {"category": category, "entity": source}
    # same order of checks as eval.py `_get_prompt`
    if source in lists["mcq.csv"]:
        if category in REJECT_QA_CATEGORIES:
            return Item("risk", question, **meta)
        kind = "mcq" if "_mcq" in source else "scq" if "_scq" in source else ""
        if not kind:
            raise _Skip("mcq.csv source without _mcq/_scq")  # eval.py has no prompt for it
        options, gold = _given(raw, where) if "gt" in raw else _shuffled(raw, where, rng_key)
        if kind == "scq" and len(gold) > 1:
            raise _Skip("_scq item with several gold answers")
        return Item(kind, question, options, gold, **meta)
    if any(source in lists[name] for name in GENERATION_LISTS):
        raise _Skip("generation")
    if source in lists["tf_q.csv"]:
        return Item("tf", question, gold=_tf_gold(raw, where), **meta)
    return Item("risk", question, **meta)


def _walk(
    data_dir: str | Path, file: str, seed: int, skipped: collections.Counter
) -> Iterator[tuple[Any, Item]]:
    """Yields (raw dict, Item) for each usable item of `file`; counts the rest in `skipped`."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise FileNotFoundError(f"{data_dir} is not a directory: {_LAYOUT}")
    lists = {name: _read_list(data_dir / name) for name in LISTS}
    path = _need(data_dir / file)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e}); re-download it") from e
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of items, got {type(data).__name__}")
    for index, raw in enumerate(data):
        try:
            yield raw, _to_item(raw, f"{path} item {index}", lists, (seed, index))
        except _Skip as skip:
            skipped[str(skip)] += 1


def load_bench(data_dir: str | Path, seed: int = 0, file: str = "test_set.json") -> LoadedBench:
    skipped: collections.Counter = collections.Counter()
    items = [item for _, item in _walk(data_dir, file, seed, skipped)]
    return LoadedBench(items, dict(skipped))


def _qa_text(value: Any) -> str:
    """An open answer as text: lists joined by "; ", dicts as "key: value" lines, no empties."""
    if isinstance(value, list):
        return "; ".join(t for t in map(_qa_text, value) if t)
    if isinstance(value, dict):
        return "\n".join(f"{k}: {t}" for k, t in ((k, _qa_text(v)) for k, v in value.items()) if t)
    return "" if value is None else str(value)


def load_train(
    data_dir: str | Path, seed: int = 0, file: str = "train_set.json"
) -> tuple[list[tuple[Item, str]], dict[str, int]]:
    """(Item, target response) pairs for SFT, as prepare_for_training.py builds its outputs."""
    skipped: collections.Counter = collections.Counter()
    pairs = []
    for raw, item in _walk(data_dir, file, seed, skipped):
        if item.kind in TAGGED:
            pairs.append((item, f"<ans>{item.gold}<eoa>"))
            continue
        # prepare_for_training.py `_qa_prompt` looks at `answer` before `answers`
        field = "answer" if "answer" in raw else "answers" if "answers" in raw else ""
        text = _qa_text(raw[field]) if field else REFUSAL
        if not text.strip():
            skipped["empty answer"] += 1
            continue
        pairs.append((item, text))
    return pairs, dict(skipped)
