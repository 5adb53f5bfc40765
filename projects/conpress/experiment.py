"""ConPress: learning efficient reasoning from multi-question contextual pressure.

    python launch/run.py projects/conpress                   # cpu: synthetic task, table main
    python launch/run.py projects/conpress --config smollm2  # real model: r(N) of SmolLM2-135M
    python launch/run.py projects/conpress --config smoke    # seconds, for tests
    python launch/reproduce.py projects/conpress             # tables main, smollm2 + figures

One run: build the base model (synthetic: train a word-level decoder on single- and
multi-question prompts whose outputs share a check-line budget, i.e. pressure BUILT IN; or load
SmolLM2 / a checkpoint), then `repeats` times with fresh sampling and SFT seeds: measure r(N)
with parse failures, sample N-question outputs on the pool, parse and filter per-question
segments into single-question SFT pairs (ConPress) next to correct single-question samples (the
control), fine-tune a copy of the base model on each, and evaluate every model on the held-out
splits. See pipeline.py for the stages, README.md for what is Reconstruction.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Literal

from shared.config import Fraction, NonNegativeFloat, NonNegativeInt, PositiveInt
from shared.train.sft import SFTConfig

VARIANTS = ("control", "conpress", "conpress_unfiltered", "conpress_length")


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    # synthetic: word-level LLaMA trained in the run; smollm2: SmolLM2-135M-Instruct (offline
    # GGUF, no training); checkpoint: a LLaMA-layout model from init_checkpoint (paper config)
    source: Literal["synthetic", "smollm2", "checkpoint"] = "synthetic"
    dim: PositiveInt = 96  # synthetic: width
    num_layers: PositiveInt = 4  # synthetic: decoder blocks
    num_heads: PositiveInt = 4  # synthetic: heads (no grouped-query attention)
    ffn_dim: PositiveInt = 256  # synthetic: SwiGLU hidden width
    max_seq_len: PositiveInt = 1280  # synthetic: context; prompt + budget must fit
    layout: Literal["r1-distill-llama-8b", "rehearsal"] = "r1-distill-llama-8b"  # checkpoint
    init_checkpoint: str = ""  # checkpoint: orbax checkpoint of the nnx.Param state
    tokenizer_file: str = ""  # checkpoint: Hugging Face tokenizer.json
    # checkpoint: the model's chat template, "{prompt}" marks the user message
    chat_template: str = "<｜begin▁of▁sentence｜><｜User｜>{prompt}<｜Assistant｜><think>\n"


@dataclasses.dataclass(frozen=True)
class TaskConfig:
    # synthetic: arithmetic traces; word_problems: 1-2-step word problems (r(N) only, no SFT);
    # files: JSON lines in data_dir (questions.FILES: train pool, MATH500, AIME25)
    source: Literal["synthetic", "word_problems", "files"] = "synthetic"
    # synthetic: numbers and results lie in [0, max_value] (spec: < 100; the CPU tables use 20)
    max_value: PositiveInt = 99
    max_checks: NonNegativeInt = 6  # synthetic: check lines per output drawn from 0..max_checks
    base_questions: NonNegativeInt = 48000  # synthetic: questions in the base training data
    base_ns: tuple[PositiveInt, ...] = (1, 2, 4)  # synthetic: prompt sizes in that data
    pool_questions: PositiveInt = 512  # questions sampled for SFT data (the training pool)
    eval_questions: PositiveInt = 128  # held-out in-distribution questions
    hard_questions: NonNegativeInt = 128  # held-out hard questions (0: none)
    data_dir: str = ""  # files: the folder of the JSON-lines files


@dataclasses.dataclass(frozen=True)
class SamplingConfig:
    temperature: NonNegativeFloat = 1.0  # 0: greedy
    top_p: Fraction = 1.0  # nucleus mass (1: off)
    samples: PositiveInt = 2  # samples per prompt for r(N) and the evaluation
    pool_samples: PositiveInt = 4  # samples per prompt when collecting SFT data (spec: k)
    max_new_per_question: PositiveInt = 128  # token budget of an N-question output: N x this,
    max_new_total: NonNegativeInt = 0  # ... but at most this many (0: no cap; paper: 32k)
    batch_size: PositiveInt = 128  # sequences (prompts x samples) per generation call


@dataclasses.dataclass(frozen=True)
class Config:
    seed: NonNegativeInt = 0  # base model init and data; repeat r uses seed * 1000 + r
    model: ModelConfig = ModelConfig()
    task: TaskConfig = TaskConfig()
    sampling: SamplingConfig = SamplingConfig()
    # synthetic base training: response-only loss on rows of several examples (packing.py)
    base: SFTConfig = SFTConfig(steps=1500, batch_size=8, lr=2e-3, warmup_fraction=0.05)
    base_seq_len: PositiveInt = 416  # tokens per base training row (a 4-question example fits)
    sft: SFTConfig = SFTConfig(steps=40, batch_size=16, lr=3e-4, warmup_fraction=0.1)
    sft_seq_len: PositiveInt = 144  # tokens per SFT row (one single-question pair of 3-6 ops)
    ns: tuple[PositiveInt, ...] = (1, 2, 4)  # prompt sizes of the r(N) measurement
    rn_questions: PositiveInt = 64  # held-out in-distribution questions asked at every N
    conpress_n: PositiveInt = 4  # prompt size whose segments become ConPress data
    sft_examples: PositiveInt = 512  # cap; every variant trains on the same number of pairs
    # fewer surviving SFT pairs than this stop the run; 0: the SFT stages are skipped (with a
    # warning) when none survives (smoke: its untrained model answers nothing correctly)
    min_sft_pairs: NonNegativeInt = 1
    variants: tuple[str, ...] = VARIANTS  # SFT variants (see VARIANTS)
    repeats: PositiveInt = 3  # sampling + SFT seeds inside the run (the table's spread)
    checkpoints: bool = True  # orbax checkpoints of base training and each SFT
    mesh_shape: tuple[PositiveInt, ...] = ()  # (data, model) mesh for the checkpoint model

    def __post_init__(self):
        bad = [v for v in self.variants if v not in VARIANTS]
        if bad:
            raise ValueError(f"variants={self.variants}: choose from {VARIANTS}")
        m, t = self.model, self.task
        if (m.source == "synthetic") != (t.source == "synthetic"):
            raise ValueError("model.source='synthetic' goes with task.source='synthetic' only")
        if m.source == "smollm2" and t.source != "word_problems":
            raise ValueError("model.source='smollm2' measures task.source='word_problems'")
        if t.source == "word_problems" and self.variants:
            raise ValueError("task.source='word_problems' measures r(N) only: set variants=()")
        if t.source == "files" and not t.data_dir:
            raise ValueError("task.source='files' needs task.data_dir")
        if 1 not in self.ns:
            raise ValueError(f"ns={self.ns} must contain 1: r(N) divides by the single setting")
        if self.rn_questions < max(self.ns):
            raise ValueError(f"rn_questions={self.rn_questions} < the largest N of ns={self.ns}")
        if self.task.pool_questions < self.conpress_n:
            raise ValueError(f"task.pool_questions must be >= conpress_n={self.conpress_n}")
        if self.rn_questions > t.eval_questions:
            raise ValueError(
                f"rn_questions={self.rn_questions} > task.eval_questions={t.eval_questions}: "
                "r(N) asks held-out in-distribution questions"
            )
        if m.source == "synthetic" and max(self.base_seq_len, self.sft_seq_len) > m.max_seq_len:
            raise ValueError(
                f"base_seq_len={self.base_seq_len} and sft_seq_len={self.sft_seq_len} must not "
                f"exceed model.max_seq_len={m.max_seq_len}"
            )
        if self.mesh_shape and (len(self.mesh_shape) != 2 or m.source != "checkpoint"):
            raise ValueError("mesh_shape=(data, model) applies to model.source='checkpoint' only")


_SMOKE_SFT = SFTConfig(steps=3, batch_size=4, lr=1e-3, warmup_fraction=0.0)

CONFIGS: dict[str, Config] = {
    # Seconds: a one-block model, a few questions, every stage once.
    "smoke": Config(
        model=ModelConfig(dim=32, num_layers=1, num_heads=2, ffn_dim=64, max_seq_len=512),
        task=TaskConfig(
            base_questions=64,
            base_ns=(1, 2),
            pool_questions=16,
            eval_questions=8,
            hard_questions=4,
        ),  # fmt: skip
        sampling=SamplingConfig(samples=1, pool_samples=2, max_new_per_question=48, batch_size=8),
        base=SFTConfig(steps=4, batch_size=4, lr=3e-3, warmup_fraction=0.0),
        base_seq_len=256,
        sft=_SMOKE_SFT,
        rn_questions=8,
        ns=(1, 2),
        conpress_n=2,
        sft_examples=8,
        min_sft_pairs=0,
        repeats=2,
        checkpoints=False,
    ),
    # Table `main` (and the synthetic r(N) table and figures): the spec's CPU-scale protocol.
    # 927 s with 128 + 128 evaluation questions; 96 + 64 keep the table within 15 minutes.
    "cpu": Config(
        task=TaskConfig(max_value=20, eval_questions=96, hard_questions=64),
        sampling=SamplingConfig(temperature=0.6, top_p=0.95, pool_samples=2),
    ),
    # Table `smollm2`: SmolLM2-135M-Instruct on word problems, N in {1, 2, 4}, r(N) only; 24
    # questions (24, 12 and 6 prompts) x 3 sampling seeds fit the table budget.
    "smollm2": Config(
        model=ModelConfig(source="smollm2"),
        task=TaskConfig(source="word_problems", pool_questions=4, eval_questions=24),
        sampling=SamplingConfig(
            temperature=0.6, top_p=0.95, samples=1, max_new_per_question=96, batch_size=24
        ),
        ns=(1, 2, 4),
        rn_questions=24,
        variants=(),
        checkpoints=False,
    ),
    # The paper's layout: an 8B reasoning model, MATH500 / AIME25 files, N = 4 prompts, 4
    # samples, T 0.6, top-p 0.95, 32k tokens, 8k SFT pairs, full fine-tuning lr 1e-5 for 2
    # epochs (spec section 4; model and several settings are Reconstruction, see README).
    "paper": Config(
        model=ModelConfig(
            source="checkpoint",
            init_checkpoint="data/r1_distill_llama_8b",
            tokenizer_file="data/r1_distill_llama_8b/tokenizer.json",
        ),
        task=TaskConfig(
            source="files",
            data_dir="data/conpress",
            pool_questions=8000,
            eval_questions=500,
            hard_questions=30,
        ),
        sampling=SamplingConfig(
            temperature=0.6,
            top_p=0.95,
            samples=4,
            pool_samples=4,
            max_new_per_question=32768,
            max_new_total=32768,
            batch_size=64,
        ),
        sft=SFTConfig(
            steps=250, batch_size=64, lr=1e-5, warmup_fraction=0.05, weight_decay=0.0, grad_clip=1.0
        ),
        sft_seq_len=32768 + 1024,
        ns=(1, 2, 4, 8),
        rn_questions=500,
        sft_examples=8000,
        repeats=1,
        mesh_shape=(16, 8),
    ),
}


def run(cfg: Config, workdir: pathlib.Path) -> dict[str, float]:
    from projects.conpress.pipeline import run_pipeline

    return run_pipeline(cfg, workdir)
