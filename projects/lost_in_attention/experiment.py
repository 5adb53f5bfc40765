"""Lost in Attention: the geometry of attention and FFN updates, and attention replaced by
predefined matrices, in a toy vision-language decoder and in SmolLM2-135M.

    python launch/run.py projects/lost_in_attention                    # cpu: one toy VLM seed
    python launch/run.py projects/lost_in_attention --config smollm2   # SmolLM2 on Wikipedia
    python launch/run.py projects/lost_in_attention --config smoke     # seconds, for tests
    python launch/reproduce.py projects/lost_in_attention              # every table

backbone "toy": train the toy VLM (toy_vlm.py) on MNIST questions, then measure the residual
geometry of every layer on `eval.geometry_samples` test items and the answer accuracy per
question type under every attention replacement (replacement.py). backbone "smollm2" or
"checkpoint": a pretrained text decoder, forward passes only, on Wikipedia lead sections: the
same geometry, and next-token accuracy under the replacements (text_model.py).
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Literal

from shared.config import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt


@dataclasses.dataclass(frozen=True)
class ToyModelConfig:
    dim: PositiveInt = 128  # width (spec: d = 128)
    num_layers: PositiveInt = 4  # decoder blocks (spec: 4)
    num_heads: PositiveInt = 4  # attention heads (spec: 4)
    ffn_dim: PositiveInt = 344  # SwiGLU hidden width (~0.8M parameters in all)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    steps: PositiveInt = 480  # AdamW steps (~3.5 min on 2 cores: three seeds fit the table budget)
    batch_size: PositiveInt = 64  # items per step (random image, random question)
    lr: PositiveFloat = 1e-3  # peak learning rate (spec: AdamW 1e-3)
    warmup_steps: NonNegativeInt = 40  # linear warm-up, then cosine to 0
    weight_decay: NonNegativeFloat = 0.01  # AdamW decay on matrices only


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    images_per_type: PositiveInt = 500  # test images asked each question (accuracy)
    geometry_samples: PositiveInt = 256  # test items whose residual geometry is measured
    noise_draws: PositiveInt = 5  # forward passes with fresh noise per stochastic mode
    late_from: NonNegativeInt = 2  # noise_late replaces layers >= this (spec: 2)
    batch_size: PositiveInt = 500  # items per evaluation forward


@dataclasses.dataclass(frozen=True)
class TextConfig:
    """The text decoders (SmolLM2, a checkpoint) on Wikipedia lead sections."""

    documents: PositiveInt = 256  # leads with at least `tokens` tokens, in corpus order
    tokens: PositiveInt = 64  # tokens per lead (the first ones)
    late_from: NonNegativeInt = 20  # noise_late replaces layers >= this (SmolLM2: 30 blocks)
    noise_draws: PositiveInt = 5  # forward passes with fresh noise per stochastic mode
    batch_size: PositiveInt = 16  # leads per forward


@dataclasses.dataclass(frozen=True)
class CheckpointConfig:
    """A LLaMA-layout decoder converted offline: an orbax checkpoint of its nnx.Param state and
    its Hugging Face tokenizer.json (the paper's LVLMs are LLaVA-style; their language model,
    e.g. Vicuna-7B, is one of these)."""

    layout: str = "vicuna-7b"  # a name in text_model.LAYOUTS
    checkpoint: str = ""  # orbax checkpoint directory
    tokenizer_file: str = ""  # tokenizer.json


@dataclasses.dataclass(frozen=True)
class Config:
    seed: NonNegativeInt = 0  # model init, batches, evaluation subsets and noise draws
    backbone: Literal["toy", "smollm2", "checkpoint"] = "toy"
    dataset: Literal["mnist", "digits"] = "mnist"  # toy: MNIST 28x28 or sklearn digits 8x8
    patch: PositiveInt = 4  # toy: patch side (MNIST 4 -> 49 visual tokens, as the spec)
    model: ToyModelConfig = ToyModelConfig()
    train: TrainConfig = TrainConfig()
    eval: EvalConfig = EvalConfig()
    text: TextConfig = TextConfig()
    checkpoint: CheckpointConfig = CheckpointConfig()
    mesh_shape: tuple[PositiveInt, ...] = ()  # checkpoint: (data, model) mesh, FSDP + tensor
    checkpoints: bool = True  # toy: orbax checkpoints of training (a killed run resumes)

    def __post_init__(self):
        if self.mesh_shape and len(self.mesh_shape) != 2:
            raise ValueError(f"mesh_shape={self.mesh_shape}: give (data, model) sizes")
        if self.backbone == "toy" and self.eval.late_from >= self.model.num_layers:
            raise ValueError(
                f"eval.late_from={self.eval.late_from} leaves no layer of the "
                f"{self.model.num_layers}-layer toy model to replace; lower it"
            )


CONFIGS: dict[str, Config] = {
    "smoke": Config(
        dataset="digits",
        patch=2,
        model=ToyModelConfig(dim=32, num_layers=3, num_heads=2, ffn_dim=64),
        train=TrainConfig(steps=6, batch_size=32, warmup_steps=2),
        eval=EvalConfig(images_per_type=40, geometry_samples=6, noise_draws=2, batch_size=80),
        checkpoints=False,
    ),
    "cpu": Config(),
    "smollm2": Config(backbone="smollm2"),
    # The paper's setting as far as it is known: an open LLaVA-style decoder's language model
    # (7B, LLaMA layout) hooked on text, sharded over a (data, model) mesh. Its images would
    # need the vision tower and projector, which are not part of this reproduction.
    "paper": Config(
        backbone="checkpoint",
        checkpoint=CheckpointConfig(
            layout="vicuna-7b",
            checkpoint="data/vicuna_7b_v1_5",
            tokenizer_file="data/vicuna_7b_v1_5/tokenizer.json",
        ),
        text=TextConfig(documents=2048, tokens=256, late_from=21, batch_size=32),
        mesh_shape=(4, 2),
    ),
}


def run(cfg: Config, workdir: pathlib.Path) -> dict[str, float]:
    if cfg.backbone == "toy":
        from projects.lost_in_attention.toy_run import run_toy

        return run_toy(cfg, workdir)
    from projects.lost_in_attention.text_model import run_text

    return run_text(cfg, workdir)
