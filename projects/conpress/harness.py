"""One measurement harness for every model: group questions into N-question prompts, sample
batched outputs, parse them, count per-question tokens, and check answers.

A `Backend` says how a model reads prompts and writes text (the synthetic model: word ids with
bos ... sep; SmolLM2: its chat template and BPE). `measure` returns per-(question, sample)
arrays for r(N) and accuracy, and the `Candidate` answers for the SFT filters; a dropped output
(parse failure) is counted, never raised.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import jax
import numpy as np

from projects.conpress.accounting import count_tokens, token_spans
from projects.conpress.filters import Candidate
from projects.conpress.parsing import parse_output
from projects.conpress.prompts import build_prompt
from shared.models.generation import generate_batch
from shared.models.llama import Llama
from shared.models.token_sampler import Sampler


@dataclasses.dataclass(frozen=True)
class Backend:
    model: Llama
    encode_prompt: Callable[[str], list[int]]  # prompt text -> ids the model continues
    encode_text: Callable[[str], list[int]]  # response text -> ids (SFT targets)
    decode: Callable[[Sequence[int]], str]  # generated ids -> text
    eos_id: int
    pad_id: int
    # N -> the padded prompt length of every N-question prompt of the run (one compiled
    # decoding loop per N); an N missing here pads each call to its longest prompt
    prompt_lens: dict[int, int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Question:
    qid: int  # index in its pool
    text: str  # one line
    gold: str  # reference answer
    bucket: int = 0  # difficulty (synthetic: number of operations)


@dataclasses.dataclass
class Measurement:
    """Outcomes of `questions` asked in groups of `n`, `samples` times, arrays [Q, S]."""

    n: int
    tokens: np.ndarray  # per-question tokens (segment, or whole single output); 0 if dropped
    correct: np.ndarray  # bool: the boxed answer matches the gold answer
    parsed: np.ndarray  # bool: the output this answer came from parsed
    truncated: np.ndarray  # bool: that output hit the token budget before eos
    outputs: int  # sampled outputs (prompts x samples)
    failures: int  # outputs dropped by the parser
    errors: dict[str, int]  # parse error kind -> count
    candidates: list[Candidate]  # every parsed answer, for the filters
    output_tokens: np.ndarray  # [outputs] all generated tokens of each output (markers too)
    texts: list[str]  # every decoded output, prompt-major (for inspection)

    @property
    def failure_rate(self) -> float:
        return self.failures / self.outputs if self.outputs else float("nan")


def _error_kind(error: str) -> str:
    return error.split(" marker")[0] if " marker" in error else error.split(":")[0]


def check_context(backend: Backend, prompt_len: int, max_new: int, what: str) -> None:
    """A prompt and its budget must fit the model's context (LlamaConfig.max_seq_len)."""
    limit = backend.model.cfg.max_seq_len
    if prompt_len + max_new > limit:
        raise ValueError(
            f"{what}: a prompt of {prompt_len} tokens plus a budget of {max_new} new tokens "
            f"exceeds the model's context of {limit} tokens (its max_seq_len): ask fewer "
            "questions per prompt (ns, conpress_n), lower sampling.max_new_per_question, or "
            "raise model.max_seq_len"
        )


def generate_texts(
    backend: Backend,
    prompts: Sequence[str],
    max_new: int,
    sampler: Sampler,
    key: jax.Array,
    samples: int,
    batch_size: int,
    prompt_len: int | None = None,
) -> list[tuple[list[int], bool]]:
    """(generated ids without eos, hit the budget) for each prompt x sample (prompt-major).

    Samples are repeated prompts; every batch is full (the last one padded with copies) and
    left-padded to `prompt_len` (default: the longest prompt), so that calls of one prompt
    size N reuse one compiled decoding loop for every model and sample count."""
    ids = [x for p in prompts for x in [backend.encode_prompt(p)] * samples]
    width = prompt_len or max(len(x) for x in ids)
    if max(len(x) for x in ids) > width:
        raise ValueError(f"a prompt has {max(len(x) for x in ids)} tokens, over prompt_len={width}")
    check_context(backend, width, max_new, f"{len(prompts)} prompts")
    batch_size = min(batch_size, len(ids))  # a small call is not padded up to a full batch
    out = []
    for b in range(0, len(ids), batch_size):
        chunk = ids[b : b + batch_size]
        real = len(chunk)
        chunk += [chunk[0]] * (batch_size - real)
        gen = generate_batch(
            backend.model, chunk, max_new, sampler=sampler, key=jax.random.fold_in(key, b),
            eos_id=backend.eos_id, pad_id=backend.pad_id, prompt_len=width,
        )  # fmt: skip
        for row, length in zip(gen.tokens[:real], gen.lengths[:real]):
            row = row[:length].tolist()
            ended = bool(row) and row[-1] == backend.eos_id
            out.append((row[:-1] if ended else row, not ended))
    return out


def measure(
    backend: Backend,
    questions: Sequence[Question],
    n: int,
    samples: int,
    sampler: Sampler,
    key: jax.Array,
    max_new: int,
    batch_size: int,
) -> Measurement:
    """Asks `questions` in consecutive groups of n (a last partial group is left out), each
    output with a budget of `max_new` tokens."""
    groups = [questions[i : i + n] for i in range(0, len(questions) - n + 1, n)]
    if not groups:
        raise ValueError(f"{len(questions)} questions make no group of {n}")
    prompts = [build_prompt([q.text for q in g]) for g in groups]
    outs = generate_texts(
        backend, prompts, max_new, sampler, key, samples, batch_size,
        backend.prompt_lens.get(n),
    )  # fmt: skip
    q_total = len(groups) * n
    shape = (q_total, samples)
    tokens, correct = np.zeros(shape, np.int64), np.zeros(shape, bool)
    parsed, truncated = np.zeros(shape, bool), np.zeros(shape, bool)
    errors: dict[str, int] = {}
    candidates, totals, texts = [], [], []
    for o, (ids, cut) in enumerate(outs):
        g, s = divmod(o, samples)
        text, spans = token_spans(ids, backend.decode)
        result = parse_output(text, n)
        totals.append(len(ids))
        texts.append(text)
        rows = slice(g * n, g * n + n)
        truncated[rows, s] = cut
        if not result.ok:
            kind = _error_kind(result.error)
            errors[kind] = errors.get(kind, 0) + 1
            continue
        counts = count_tokens(text, spans, result)
        for i, (q, seg) in enumerate(zip(groups[g], result.segments)):
            c = Candidate(q.qid, q.text, q.gold, seg.text, seg.answer, counts.segments[i], n, cut)
            candidates.append(c)
            tokens[g * n + i, s], correct[g * n + i, s] = c.tokens, c.correct
        parsed[rows, s] = True
    failures = sum(errors.values())
    return Measurement(
        n, tokens, correct, parsed, truncated, len(outs), failures, errors, candidates,
        np.asarray(totals, np.int64), texts,
    )  # fmt: skip
