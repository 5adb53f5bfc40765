"""Period detection (TimesNet FFT_for_Period) and the period-aware masks.

FFT_for_Period (thuml/Time-Series-Library, models/TimesNet.py): xf = rfft(x, time); amplitude
averaged over batch and channels; amp[0] = 0 (DC); top-k frequencies f; period = T // f.
Reconstruction (not confirmed by the paper): mask type k masks contiguous blocks of length
max(1, round(p_k / 4)) so that a ratio of 0.25 of the steps is masked.
"""

from __future__ import annotations

import numpy as np


def fft_periods(x: np.ndarray, k: int) -> np.ndarray:
    """x: [B, T, C] -> the k periods T // f of the largest mean amplitudes, sorted ascending."""
    amp = np.abs(np.fft.rfft(x, axis=1)).mean(axis=(0, 2))
    amp[0] = 0.0
    freqs = np.argsort(-amp, kind="stable")[:k]
    freqs = freqs[freqs > 0]  # a constant series has no periodic bins left
    if len(freqs) == 0:
        raise ValueError("fft_periods: the series is constant; no period can be detected")
    return np.sort(x.shape[1] // freqs)


def spans_from_periods(periods: np.ndarray) -> tuple[int, ...]:
    """Reconstruction: block length of each mask type = max(1, round(period / 4)), deduplicated."""
    return tuple(sorted({max(1, int(round(p / 4))) for p in periods}))


def train_masks(
    rng: np.random.Generator,
    batch: int,
    length: int,
    channels: int,
    spans: tuple[int, ...],
    ratio: float = 0.25,
) -> np.ndarray:
    """[B, T, C] bool (True = masked): per window one span drawn uniformly; per channel a random
    block offset and round(ratio * #blocks) blocks of that span chosen at random."""
    out = np.zeros((batch, length, channels), bool)
    for b in range(batch):
        span = spans[rng.integers(len(spans))]
        for c in range(channels):
            offset = rng.integers(span)
            block = (np.arange(length) + offset) // span
            n_blocks = block[-1] + 1
            chosen = rng.choice(n_blocks, max(1, int(round(ratio * n_blocks))), replace=False)
            out[b, :, c] = np.isin(block, chosen)
    return out


def score_masks(length: int, channels: int, span: int, ratio: float = 0.25) -> np.ndarray:
    """[S, T, C] bool: S = round(1 / ratio) shifted masks that together mask every (t, c) exactly
    once; channel c is shifted by c blocks so dominant and auxiliary are rarely masked together."""
    n = int(round(1 / ratio))
    block = np.arange(length)[:, None] // span + np.arange(channels)[None, :]
    return np.stack([block % n == s for s in range(n)])
