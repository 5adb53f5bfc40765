"""SafeSci: an exact objective safety-evaluation harness, SafeSci-mini, and safety fine-tuning.

    python launch/run.py projects/safesci                    # cpu: table main's word models
    python launch/run.py projects/safesci --config smollm2   # SmolLM2-135M-Instruct rows
    python launch/run.py projects/safesci --config smoke     # seconds, for tests
    python launch/reproduce.py projects/safesci              # table main

A run builds SafeSci-mini (or reads the published files), then asks every test item of every
model in `models` through the harness: the word-level decoder pretrained on fact sentences and
fine-tuned on each SFT variant (`repeats` SFT seeds), and/or SmolLM2 zero- and few-shot. See
pipeline.py for the stages and README.md for what is Reconstruction.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Literal

from shared.config import NonNegativeInt, PositiveInt
from shared.train.sft import SFTConfig

WORD_MODELS = ("none", "helpful", "balanced", "refusal_heavy")  # the decoder's SFT variants
SMOLLM2_MODELS = ("smollm2_zero_shot", "smollm2_few_shot")
CHECKPOINT_MODELS = ("checkpoint", "checkpoint_sft")  # a converted open model, before/after SFT
MODELS = WORD_MODELS + SMOLLM2_MODELS + CHECKPOINT_MODELS
SEEN = "@sft_compounds"  # suffix of a word model's scores on knowledge items of SFT compounds
ALL_MCQ = "@all_mcq"  # suffix of SmolLM2's log-likelihood scores on every MCQ test item
# Llama-3.1-8B-Instruct's chat template with eval.py's system turn
LLAMA3_TEMPLATE = (
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful "
    "assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n{prompt}<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n"
)


@dataclasses.dataclass(frozen=True)
class DataConfig:
    # mini: SafeSci-mini generated here; files: the published SafeSciBench/SafeSciTrain layout
    source: Literal["mini", "files"] = "mini"
    compounds: PositiveInt = 300  # mini: invented compounds in the knowledge base
    train_compounds: PositiveInt = 200  # mini: compounds whose items feed SFT (rest: test)
    seed: NonNegativeInt = 0  # knowledge base, items, option shuffles
    data_dir: str = ""  # files: folder of test_set.json, train_set.json and the CSV lists
    test_file: str = "test_set.json"  # files: the benchmark file (or mini_test_set.json)


@dataclasses.dataclass(frozen=True)
class DecoderConfig:
    dim: PositiveInt = 192  # width (spec: d = 192)
    num_layers: PositiveInt = 4  # decoder blocks (spec: 4)
    num_heads: PositiveInt = 4  # attention heads
    ffn_dim: PositiveInt = 512  # SwiGLU hidden width
    max_seq_len: PositiveInt = 160  # context: the longest prompt + max_new_tokens must fit


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    max_new_tokens: PositiveInt = 32  # word decoder's response budget (greedy)
    batch_size: PositiveInt = 128  # word decoder: prompts per generation call
    # SmolLM2 answers the items of this many test compounds (2-3 s an item on 2 cores)
    smollm2_compounds: PositiveInt = 10
    # SmolLM2's budget (official: 2048); refusals show in the first sentence
    smollm2_max_new_tokens: PositiveInt = 48
    # and, zero-shot, scores every MCQ test item by log-likelihood (one prefill each)
    smollm2_ll_all: bool = True
    smollm2_batch_size: PositiveInt = 16  # SmolLM2: prompts per generation call
    few_shot: NonNegativeInt = 2  # solved train items shown in smollm2_few_shot prompts
    # the word decoder is also asked the knowledge items of this many SFT compounds
    sft_compounds: PositiveInt = 30


@dataclasses.dataclass(frozen=True)
class CheckpointConfig:
    """A LLaMA-layout open model converted offline (orbax checkpoint of its nnx.Param state and
    its Hugging Face tokenizer.json), e.g. Llama-3.1-8B-Instruct, one of the paper's models."""

    layout: Literal["llama-3.1-8b", "rehearsal"] = "llama-3.1-8b"
    init_checkpoint: str = ""  # orbax checkpoint directory
    tokenizer_file: str = ""  # tokenizer.json
    chat_template: str = LLAMA3_TEMPLATE  # "{prompt}" marks the user turn
    eos_token: str = "<|eot_id|>"  # ends the assistant turn (also the pad)
    batch_size: PositiveInt = 64  # prompts per generation call
    max_new_tokens: PositiveInt = 2048  # eval.py: max_tokens 2048
    # Full fine-tuning on the training file. Reconstruction: the official runs are LoRA (rank
    # 32, all linear layers, lr 1e-4, 5 epochs, cosine, warm-up 0.1, batch 8 x 8 accumulation,
    # cutoff 4096, LLaMA-Factory YAML); LoRA is not built here, so the lr is a full-tuning one.
    sft: SFTConfig = SFTConfig(steps=2000, batch_size=64, lr=1e-5, warmup_fraction=0.1)
    sft_seq_len: PositiveInt = 4096  # the official cutoff_len


@dataclasses.dataclass(frozen=True)
class Config:
    seed: NonNegativeInt = 0  # decoder init and pretraining order; SFT repeat r: seed*1000 + r
    data: DataConfig = DataConfig()
    model: DecoderConfig = DecoderConfig()
    models: tuple[str, ...] = WORD_MODELS  # which models a run evaluates (see MODELS)
    # 400 steps (about 50 epochs of the facts): the loss is near its floor (about 0.05 nats)
    pretrain: SFTConfig = SFTConfig(steps=400, batch_size=32, lr=3e-3, warmup_fraction=0.05)
    pretrain_seq_len: PositiveInt = 128  # tokens per pretraining row of packed facts
    # about 3 epochs of the 2000 pairs: what the 15-minute table allows (9 fine-tunings)
    sft: SFTConfig = SFTConfig(steps=200, batch_size=32, lr=1e-3, warmup_fraction=0.1)
    sft_seq_len: PositiveInt = 64  # tokens per SFT row (one prompt and its response)
    sft_examples: PositiveInt = 4000  # cap on SFT pairs per variant
    repeats: PositiveInt = 3  # SFT seeds (the table pools their 5 subsamples each)
    eval: EvalConfig = EvalConfig()
    checkpoint: CheckpointConfig = CheckpointConfig()  # the checkpoint* models
    mesh_shape: tuple[PositiveInt, ...] = ()  # (data, model) mesh for the checkpoint model
    checkpoints: bool = True  # orbax checkpoints of pretraining and each SFT (resumable)

    def __post_init__(self):
        bad = [m for m in self.models if m not in MODELS]
        if bad or not self.models:
            raise ValueError(f"models={self.models}: choose one or more of {MODELS}")
        if self.data.source == "files" and not self.data.data_dir:
            raise ValueError("data.source='files' needs data.data_dir (the published layout)")
        if self.data.source == "files" and any(m in WORD_MODELS for m in self.models):
            raise ValueError(
                "the word-level decoder is built for SafeSci-mini's vocabulary: with "
                "data.source='files' evaluate smollm2_* or checkpoint* models"
            )
        if self.mesh_shape and len(self.mesh_shape) != 2:
            raise ValueError(f"mesh_shape={self.mesh_shape}: give (data, model) sizes")
        if self.data.source == "mini" and self.data.train_compounds >= self.data.compounds:
            raise ValueError(
                f"data.train_compounds={self.data.train_compounds} must be below "
                f"data.compounds={self.data.compounds}: the test split needs compounds"
            )


CONFIGS: dict[str, Config] = {
    "smoke": Config(
        data=DataConfig(compounds=12, train_compounds=8),
        model=DecoderConfig(dim=32, num_layers=1, num_heads=2, ffn_dim=64),
        pretrain=SFTConfig(steps=3, batch_size=4, lr=3e-3, warmup_fraction=0.0),
        sft=SFTConfig(steps=3, batch_size=4, lr=1e-3, warmup_fraction=0.0),
        repeats=2,
        eval=EvalConfig(max_new_tokens=8, batch_size=16),
        checkpoints=False,
    ),
    # Table main, word-level rows: the spec's CPU plan (300 compounds, 200 for SFT).
    "cpu": Config(),
    # Table main, SmolLM2 rows: the official prompts, zero- and few-shot.
    "smollm2": Config(models=SMOLLM2_MODELS, checkpoints=False),
    # The paper's layout: the published SafeSciBench/SafeSciTrain files; Llama-3.1-8B-Instruct
    # (one of the 24 models, one of the three fine-tuned) greedy with 2048 new tokens, before
    # and after SFT on the training file, FSDP + tensor parallel over 16 x 8 devices.
    "paper": Config(
        data=DataConfig(source="files", data_dir="data/safesci"),
        models=CHECKPOINT_MODELS,
        checkpoint=CheckpointConfig(
            init_checkpoint="data/llama_3_1_8b_instruct",
            tokenizer_file="data/llama_3_1_8b_instruct/tokenizer.json",
        ),
        mesh_shape=(16, 8),
    ),
}


def run(cfg: Config, workdir: pathlib.Path) -> dict[str, float]:
    from projects.safesci.pipeline import run_pipeline

    return run_pipeline(cfg, workdir)
