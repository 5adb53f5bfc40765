"""The question pools of a run: the synthetic splits, the word problems of the SmolLM2 probe, and
the paper layout's JSON-lines files.

Every pool is a list of `harness.Question` (id, text, gold answer, difficulty bucket). Pools are
fixed by `POOL_SEED`, not by the run's seed, so every seed samples and is evaluated on the same
questions; held-out synthetic questions never repeat a training-pool question.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

import numpy as np

from projects.conpress import synthetic
from projects.conpress.harness import Question
from projects.conpress.word_problems import sample_word_problems
from shared.data.arithmetic_trace_text import render_question

POOL_SEED = 12345  # fixed: the questions do not change with the run's seed
# The paper layout: one file per pool in `task.data_dir`, one JSON object per line with a
# "problem" and an "answer" (MATH500's and AIME25's published fields), optional "level".
FILES = {"pool": "train.jsonl", "in_dist": "math500.jsonl", "hard": "aime25.jsonl"}


@dataclasses.dataclass(frozen=True)
class Pools:
    pool: list[Question]  # questions whose sampled answers become SFT data
    in_dist: list[Question]  # held-out, in distribution (MATH500 analogue)
    hard: list[Question]  # held-out, harder / longer (AIME25 analogue); may be empty


def synthetic_pools(pool: int, in_dist: int, hard: int, max_value: int) -> Pools:
    rng = np.random.default_rng(POOL_SEED)
    easy_cfg, hard_cfg = (
        synthetic.split_config(False, max_value),
        synthetic.split_config(True, max_value),
    )
    train = synthetic.draw_problems(rng, pool, easy_cfg)
    held = synthetic.draw_problems(rng, in_dist, easy_cfg, exclude=set(train))
    longer = synthetic.draw_problems(rng, hard, hard_cfg)

    def as_questions(problems):
        return [
            Question(i, render_question(p), synthetic.gold(p), len(p.operations))
            for i, p in enumerate(problems)
        ]

    return Pools(as_questions(train), as_questions(held), as_questions(longer))


def word_problem_pool(count: int) -> list[Question]:
    return [
        Question(i, p.text, str(p.answer), p.steps)
        for i, p in enumerate(sample_word_problems(count, POOL_SEED))
    ]


def read_jsonl(path: pathlib.Path, limit: int) -> list[Question]:
    """The first `limit` questions of a JSON-lines file (0: all)."""
    if not path.exists():
        raise FileNotFoundError(
            f"{path} is missing: task.data_dir must hold {', '.join(FILES.values())} "
            '(one {"problem": ..., "answer": ...} object per line)'
        )
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            text, gold = str(row["problem"]).strip(), str(row["answer"]).strip()
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise ValueError(f"{path}:{n}: not a {{'problem', 'answer'}} object ({e})") from e
        if not text or not gold:
            raise ValueError(f"{path}:{n}: empty problem or answer")
        level = row.get("level", 0)
        out.append(Question(len(out), text, gold, int(level) if str(level).isdigit() else 0))
        if limit and len(out) == limit:
            break
    return out


def file_pools(data_dir: str, pool: int, in_dist: int, hard: int) -> Pools:
    root = pathlib.Path(data_dir)
    return Pools(
        read_jsonl(root / FILES["pool"], pool),
        read_jsonl(root / FILES["in_dist"], in_dist),
        read_jsonl(root / FILES["hard"], hard),
    )
