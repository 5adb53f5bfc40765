"""The toy vision-language task: an image as patch tokens, then a question, then one answer token.

Each item is (image, question type). The image becomes `n_patches` visual tokens (non-overlapping
p x p patches, row-major); the question is four word tokens ending in "?"; the model answers
with one token predicted at the "?" position. Question types (../papers/lost_in_attention.md,
section 5, suggested settings):
  digit    "<q> which digit ?"  -> "0" .. "9"
  even     "<q> is even ?"      -> yes / no
  above4   "<q> above four ?"   -> yes / no   (digit > 4)
  top      "<q> top heavy ?"    -> yes / no   (more ink in the top half than in the bottom half)
"""

from __future__ import annotations

import dataclasses

import numpy as np

QUESTIONS = {
    "digit": ("<q>", "which", "digit", "?"),
    "even": ("<q>", "is", "even", "?"),
    "above4": ("<q>", "above", "four", "?"),
    "top": ("<q>", "top", "heavy", "?"),
}
QTYPES = tuple(QUESTIONS)
ANSWERS = tuple(str(d) for d in range(10)) + ("yes", "no")
IMAGE = "<img>"  # the token id standing at visual positions (its embedding is never used)
VOCAB = (IMAGE, *sorted({w for q in QUESTIONS.values() for w in q}), *ANSWERS)
ID = {w: i for i, w in enumerate(VOCAB)}
QUESTION_LEN = 4


def patches(images: np.ndarray, p: int) -> np.ndarray:
    """images [n, H, W, 1] -> [n, (H/p)(W/p), p*p] non-overlapping patches, row-major."""
    n, h, w, _ = images.shape
    if h % p or w % p:
        raise ValueError(f"patch={p} does not divide the {h}x{w} images; choose a divisor")
    x = images[..., 0].reshape(n, h // p, p, w // p, p).transpose(0, 1, 3, 2, 4)
    return np.ascontiguousarray(x.reshape(n, (h // p) * (w // p), p * p), np.float32)


def answers(images: np.ndarray, digits: np.ndarray) -> dict[str, np.ndarray]:
    """Question type -> answer token id per image [n]."""
    h = images.shape[1]
    ink_top = images[:, : h // 2].sum(axis=(1, 2, 3))
    ink_bottom = images[:, h - h // 2 :].sum(axis=(1, 2, 3))
    yes, no = ID["yes"], ID["no"]
    return {
        "digit": np.array([ID[str(d)] for d in digits], np.int32),
        "even": np.where(digits % 2 == 0, yes, no).astype(np.int32),
        "above4": np.where(digits > 4, yes, no).astype(np.int32),
        "top": np.where(ink_top > ink_bottom, yes, no).astype(np.int32),
    }


@dataclasses.dataclass(frozen=True)
class Items:
    """Items as arrays: patches [n, P, p*p] float32, text [n, 4] int32 (question ids),
    answer [n] int32, qtype [n] int32 (index into QTYPES)."""

    patches: np.ndarray
    text: np.ndarray
    answer: np.ndarray
    qtype: np.ndarray

    def __len__(self) -> int:
        return len(self.answer)

    def arrays(self) -> dict[str, np.ndarray]:
        return dataclasses.asdict(self)


def make_items(images: np.ndarray, digits: np.ndarray, p: int, qtypes=QTYPES) -> Items:
    """Every image asked every question of `qtypes` (len(qtypes) * n items, type-major)."""
    pt = patches(images, p)
    ans = answers(images, digits)
    n = len(images)
    q_ids = {q: np.array([ID[w] for w in QUESTIONS[q]], np.int32) for q in qtypes}
    return Items(
        patches=np.concatenate([pt] * len(qtypes)),
        text=np.concatenate([np.broadcast_to(q_ids[q], (n, QUESTION_LEN)) for q in qtypes]),
        answer=np.concatenate([ans[q] for q in qtypes]),
        qtype=np.concatenate([np.full(n, QTYPES.index(q), np.int32) for q in qtypes]),
    )


def majority_rate(items: Items) -> dict[str, float]:
    """Accuracy of always answering each question type's most frequent answer."""
    out = {}
    for i, q in enumerate(QTYPES):
        a = items.answer[items.qtype == i]
        if len(a):
            out[q] = float(np.bincount(a).max() / len(a))
    return out
