"""Token rows for training: several (prompt, response) examples per row, the loss on responses.

The base model sees prompts of 1 to 8 questions, whose lengths differ eightfold; one example
per row would pad the short ones to the longest. So whole examples are laid one after another
in rows of `seq_len + 1` tokens (`bos prompt sep response eos bos prompt ...`), never split
across rows, and the rest of a row is padding. The layout is that of
`shared.train.sft.PackedPairs` (targets tokens[:, 1:], loss_mask aligned with them, 1 exactly on
response tokens and their eos), so `train_sft` trains on it unchanged. Attention is not reset
between the examples of a row: each starts with bos after an eos (Reconstruction, the usual
packing of pretraining corpora).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from shared.train.sft import PackedPairs


def pack_examples(
    examples: Sequence[tuple[Sequence[int], Sequence[int]]],
    seq_len: int,
    *,
    eos_id: int,
    pad_id: int = 0,
) -> PackedPairs:
    """(prompt ids, response ids) pairs -> rows holding as many whole examples as fit, in
    order. The prompt should start with bos; eos is appended to each response."""
    width = seq_len + 1
    rows: list[list[int]] = [[]]
    masks: list[list[float]] = [[]]
    for i, (prompt, response) in enumerate(examples):
        prompt, target = list(prompt), [*response, eos_id]
        if not prompt:
            raise ValueError(f"example {i} has an empty prompt: start it with a bos token")
        size = len(prompt) + len(target)
        if size > width:
            raise ValueError(
                f"example {i} needs {size} tokens, more than a row of seq_len + 1 = {width}: "
                f"raise seq_len to at least {size - 1}"
            )
        if len(rows[-1]) + size > width:
            rows.append([])
            masks.append([])
        rows[-1] += prompt + target
        masks[-1] += [0.0] * len(prompt) + [1.0] * len(target)
    tokens = np.full((len(rows), width), pad_id, np.int32)
    loss_mask = np.zeros((len(rows), seq_len), np.float32)
    for r, (row, mask) in enumerate(zip(rows, masks)):
        tokens[r, : len(row)] = row
        loss_mask[r, : len(row) - 1] = mask[1:]  # target j is token j + 1
    return PackedPairs(tokens, loss_mask, np.zeros(len(rows), bool))
