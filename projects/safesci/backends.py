"""The models behind the harness: the word-level decoder trained here and SmolLM2-135M-Instruct
(offline GGUF), each wrapped as a `harness.Responder`.

Generation is greedy (eval.py: temperature 0) and batched: prompts are left-padded to one
length rounded up to `PAD_TO` and every batch is filled (with copies), so a run compiles a few
decoding loops, not one per call. A response is cut at the end token or at `max_new` tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from projects.safesci.harness import Responder
from projects.safesci.items import Item
from projects.safesci.prompts import SYSTEM, compact_prompt, official_prompt
from shared.models.generation import generate_batch, next_token_log_probs
from shared.models.llama import Llama
from shared.models.token_sampler import GREEDY

PAD_TO = 32


def _width(rows: list[list[int]]) -> int:
    return -(-max(len(r) for r in rows) // PAD_TO) * PAD_TO


def _batches(rows: list[list[int]], size: int):
    """(full batch of `size` rows, real rows) over rows; the last batch repeats its row 0."""
    for b in range(0, len(rows), size):
        chunk = rows[b : b + size]
        yield chunk + [chunk[0]] * (size - len(chunk)), len(chunk)


def token_responder(
    name: str,
    model: Llama,
    prompt: Callable[[Item], str],
    encode_prompt: Callable[[str], list[int]],
    encode: Callable[[str], list[int]],
    decode: Callable[[Sequence[int]], str],
    eos_id: int,
    pad_id: int,
    batch_size: int,
) -> Responder:
    """A Responder of a `Llama` with its own prompt encoding (chat template or bos ... sep)."""

    def generate(prompts: list[str], max_new: int) -> list[str]:
        rows = [encode_prompt(p) for p in prompts]
        width, size = _width(rows), min(batch_size, len(rows))
        out = []
        for batch, real in _batches(rows, size):
            gen = generate_batch(
                model, batch, max_new, sampler=GREEDY, key=None, eos_id=eos_id, pad_id=pad_id,
                prompt_len=width,
            )  # fmt: skip
            for row, length in zip(gen.tokens[:real], gen.lengths[:real]):
                ids = row[:length].tolist()
                out.append(decode(ids[:-1] if ids and ids[-1] == eos_id else ids))
        return out

    def choice_log_probs(prompts: list[str], prefix: str, choices: Sequence[str]) -> np.ndarray:
        ids = []
        for c in choices:
            t = encode(c)
            if len(t) != 1:
                raise ValueError(f"{name}: choice {c!r} is {len(t)} tokens; the score needs one")
            ids.append(t[0])
        rows = [encode_prompt(p) + encode(prefix) for p in prompts]
        width, size = _width(rows), min(batch_size, len(rows))
        out = []
        for batch, real in _batches(rows, size):
            out.append(next_token_log_probs(model, batch, pad_id, width)[:real][:, ids])
        return np.concatenate(out)

    return Responder(name, prompt, generate, choice_log_probs)


def word_responder(model: Llama, tok, batch_size: int, name: str = "word") -> Responder:
    """The word-level decoder reads `bos prompt sep` (compact prompts) and ends with eos."""
    return token_responder(
        name, model, compact_prompt, lambda p: [tok.bos_id, *tok.encode(p), tok.sep_id],
        tok.encode, tok.decode, tok.eos_id, tok.pad_id, batch_size,
    )  # fmt: skip


def smollm2_responder(
    model: Llama, batch_size: int, few_shot: Callable[[Item], Sequence[tuple[Item, str]]],
    name: str = "smollm2",
) -> Responder:  # fmt: skip
    """SmolLM2-135M-Instruct on the official prompts in its ChatML template with eval.py's
    system turn; `few_shot(item)` gives the solved examples shown before the question."""
    from shared.data.tokenizers import smollm2_tokenizer
    from shared.models.pretrained.smollm2 import chat_prompt

    tok = smollm2_tokenizer()
    return token_responder(
        name, model, lambda it: official_prompt(it, few_shot(it)),
        lambda p: tok.encode(chat_prompt(p, SYSTEM)), tok.encode, tok.decode, tok.eos_id,
        tok.pad_id, batch_size,
    )  # fmt: skip
