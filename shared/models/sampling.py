"""Greedy / temperature sampling from a `Llama` with a KV cache, for equal-length prompts.

The original interface, kept for its callers; it runs on `shared.models.generation`, whose
batched loop takes prompts of different lengths, top-p/top-k, per-row lengths and log-probs.
"""

from __future__ import annotations

import jax
import numpy as np

from shared.models.generation import generate_batch
from shared.models.llama import Llama
from shared.models.token_sampler import Sampler


def generate(
    model: Llama,
    prompt: np.ndarray | list[list[int]],
    max_new_tokens: int,
    *,
    temperature: float = 0.0,
    key: jax.Array | None = None,
    eos_id: int | None = None,
) -> np.ndarray:
    """prompt [B, T] (equal lengths) -> the new tokens [B, <= max_new_tokens].

    temperature 0 is greedy; otherwise `key` is required and step i samples with
    fold_in(key, i). Generation stops early once every row has produced `eos_id`; positions
    after a row's eos are filled with eos.
    """
    prompt = np.asarray(prompt, np.int32)
    if prompt.ndim != 2:
        raise ValueError(f"prompt must be [batch, length], got shape {prompt.shape}")
    out = generate_batch(
        model,
        prompt.tolist(),
        max_new_tokens,
        sampler=Sampler(temperature=temperature),
        key=key,
        eos_id=eos_id,
        pad_id=0 if eos_id is None else eos_id,  # rows past their eos repeat it
    )
    return out.tokens[:, : out.lengths.max()]  # up to the step where the last row ended
