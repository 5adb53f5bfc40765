"""Building and training the two PRMs of a run (spec §5 options (a) and (b)).

(a) `decoder`: the shared LLaMA decoder with the word tokenizer of the traces, trained from scratch.
(b) `minilm`: the packaged all-MiniLM-L6-v2 with a step-scoring head, fine-tuned: the head and the
top `trainable_layers` blocks (all parameters when it equals the 6 layers).
Both train on the same examples with the same loss (prm_train.py); checkpoints go to
`checkpoints/prm_<name>` under the run directory.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Annotated, Literal

import numpy as np
from flax import nnx

from projects.prm_biasbench import data, tier2
from projects.prm_biasbench.prm_models import LABEL_WORDS, DecoderPRM, MiniLMPRM
from projects.prm_biasbench.prm_train import PRMTrainConfig, train_prm, training_arrays
from projects.prm_biasbench.processors import DecoderProcessor, MiniLMProcessor
from projects.prm_biasbench.scoring import Scorer
from shared import rng
from shared.config import NonNegativeInt, PositiveInt, Range
from shared.data.tokenizers import minilm_tokenizer
from shared.models.llama import LlamaConfig
from shared.models.pretrained.minilm import load_minilm

PRM_NAMES = ("decoder", "minilm")


@dataclasses.dataclass(frozen=True)
class DecoderPRMConfig:
    dim: PositiveInt = 128  # model width (spec: d = 128)
    num_layers: PositiveInt = 4  # decoder blocks (spec: 4)
    num_heads: PositiveInt = 4  # attention heads
    num_kv_heads: NonNegativeInt = 0  # key/value heads (grouped-query); 0: as many as num_heads
    ffn_dim: PositiveInt = 344  # SwiGLU width (the shared `tiny` size)
    max_len: PositiveInt = 192  # context: longer prompts are refused
    dtype: Literal["float32", "bfloat16"] = "float32"  # compute dtype (parameters stay float32)
    train: PRMTrainConfig = PRMTrainConfig()


@dataclasses.dataclass(frozen=True)
class MiniLMPRMConfig:
    # top encoder blocks fine-tuned with the head; 6 = every parameter (embeddings included)
    trainable_layers: Annotated[int, Range(0, 6)] = 6
    max_len: Annotated[int, Range(8, 512)] = 256  # context (MiniLM has 512 positions)
    train: PRMTrainConfig = PRMTrainConfig(lr=1e-4, warmup_steps=20)


@dataclasses.dataclass
class TrainedPRM:
    name: str
    scorer: Scorer  # the frozen model behind its processor
    allowed: np.ndarray  # [V] bool: tokens an adversarial suffix may use


def decoder_llama_config(cfg: DecoderPRMConfig, vocab_size: int) -> LlamaConfig:
    kv_heads = cfg.num_kv_heads or cfg.num_heads
    return LlamaConfig(
        vocab_size, cfg.dim, cfg.num_layers, cfg.num_heads, kv_heads, cfg.ffn_dim,
        max_seq_len=cfg.max_len, dtype=cfg.dtype,
    )  # fmt: skip


def minilm_trainable(num_layers: int, trainable_layers: int):
    """nnx filter of the fine-tuned MiniLM parameters: head + top blocks (or everything)."""
    if trainable_layers >= num_layers:
        return nnx.Param
    first = num_layers - trainable_layers

    def top(path, value) -> bool:
        if path[0] == "head":
            return True
        return path[:3] == ("bert", "encoder", "blocks") and int(path[3]) >= first

    return nnx.All(nnx.Param, top)


def train_decoder(
    cfg: DecoderPRMConfig, trace_cfg, train: list[data.Example], seed: int, workdir: pathlib.Path
) -> TrainedPRM:
    tok = data.word_tokenizer(trace_cfg)
    good, bad = (tok.token_to_id(w) for w in LABEL_WORDS)
    model = DecoderPRM(
        decoder_llama_config(cfg, tok.vocab_size), good, bad,
        rngs=nnx.Rngs(params=rng.stream(seed, "prm_decoder_init")),
    )  # fmt: skip
    proc = DecoderProcessor(tok, cfg.max_len)
    _train(model, nnx.Param, proc, train, cfg.train, seed, workdir, "prm_decoder")
    return TrainedPRM("decoder", Scorer(model, proc), tier2.allowed_words(tok))


def train_minilm(
    cfg: MiniLMPRMConfig, train: list[data.Example], seed: int, workdir: pathlib.Path
) -> TrainedPRM:
    tok = minilm_tokenizer()
    bert = load_minilm()
    model = MiniLMPRM(bert, rngs=nnx.Rngs(params=rng.stream(seed, "prm_minilm_init")))
    proc = MiniLMProcessor(tok, cfg.max_len)
    trainable = minilm_trainable(bert.cfg.num_layers, cfg.trainable_layers)
    _train(model, trainable, proc, train, cfg.train, seed, workdir, "prm_minilm")
    return TrainedPRM("minilm", Scorer(model, proc), tier2.allowed_wordpieces(tok))


def _train(model, trainable, proc, train, cfg, seed, workdir, name) -> None:
    rows = [proc.encode(e.question, e.solution) for e in train]
    arrays = training_arrays(rows, [e.labels for e in train], proc.pad_id)
    train_prm(
        model, trainable, arrays, cfg, seed,
        checkpoint_dir=workdir / "checkpoints" / name,
        metrics_path=workdir / "metrics.jsonl",
        name=name,
    )  # fmt: skip
