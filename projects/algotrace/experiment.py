"""AlgoTrace at CPU scale: function vectors and primitive vectors of a small decoder trained on
ICL tasks and graph-navigation traces, and Todd-style function vectors of SmolLM2-135M.

    python launch/run.py projects/algotrace                             # cpu: fv + primitives
    python launch/run.py projects/algotrace --set "analyses=('fv',)"     # one analysis
    python launch/run.py projects/algotrace --config smoke               # seconds, for tests
    python launch/reproduce.py projects/algotrace --table fv             # Table 1 (toy), Fig 1

A run trains the decoder of `model` on the task mixture (one seed), then runs each analysis of
`analyses`: "fv" (toy.py: Table 1 rows, AIE, layer curve), "primitives" (primitives.py:
clusters, primitive vectors, injection sweep, composition, cross-task) or "fv_smollm2"
(smollm2_fv.py, no training). See README.md for what is Reconstruction.
"""

from __future__ import annotations

import dataclasses
import pathlib

from shared.config import NonNegativeInt, PositiveInt
from shared.train.lm import LMTrainConfig

ANALYSES = ("fv", "primitives", "fv_smollm2")


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    # "" builds the decoder from the fields below; a shared SIZES name (e.g. "llama-3.1-8b")
    # takes that layout with the task vocabulary
    size: str = ""
    dim: PositiveInt = 128  # width (spec: d = 128)
    num_layers: PositiveInt = 4  # blocks (spec: 4)
    num_heads: PositiveInt = 4  # heads (spec: 4)
    ffn_dim: PositiveInt = 344  # SwiGLU hidden width
    seq_len: PositiveInt = 128  # training window; prompts + generation must fit max_seq_len
    max_seq_len: PositiveInt = 256  # context


@dataclasses.dataclass(frozen=True)
class FVConfig:
    shots: PositiveInt = 10  # demonstrations per ICL prompt (Todd: 10)
    mean_prompts: PositiveInt = 100  # clean prompts averaged into ā (Todd: 100)
    trials: PositiveInt = 25  # corrupted (label-shuffled) prompts per task for the CIE (Todd: 25)
    top_heads: PositiveInt = 10  # heads summed into the FV (Todd: 10)
    dev_prompts: PositiveInt = 25  # zero-shot prompts per task that pick the best layer
    eval_prompts: PositiveInt = 50  # zero-shot / 10-shot test prompts per task (spec: 50)


@dataclasses.dataclass(frozen=True)
class PrimitiveConfig:
    cluster_layer: NonNegativeInt = 2  # residual stream entering this block is clustered
    clusters: PositiveInt = 8  # k-means k (spec: 8)
    inject_layer: NonNegativeInt = 2  # steering enters this block (a hyperparameter; see README)
    alphas: tuple[float, ...] = (-2.0, -1.0, 0.0, 1.0, 2.0, 4.0)  # spec's sweep
    compose_alpha: float = 1.0  # scale of v_P, v_Q and v_P + v_Q in the composition table
    prompts: PositiveInt = 50  # navigation prompts per condition (spec: 50)
    vector_prompts: PositiveInt = 200  # reference traces whose prefixes build the vectors
    max_new: PositiveInt = 72  # generated tokens per trace (reference traces: 20-60)


@dataclasses.dataclass(frozen=True)
class SmolConfig:
    shots: PositiveInt = 10  # demonstrations per prompt
    mean_prompts: PositiveInt = 20  # clean prompts averaged into ā per task
    trials: PositiveInt = 10  # label-shuffled prompts per task for the CIE
    top_heads: PositiveInt = 10  # heads in the FV
    dev_prompts: PositiveInt = 15  # zero-shot prompts per task that pick the best layer
    eval_prompts: PositiveInt = 25  # test prompts per task
    layer_stride: PositiveInt = 2  # injection layers 0, stride, 2*stride, ... are swept
    max_answer_tokens: PositiveInt = 4  # greedy tokens compared with the answer


@dataclasses.dataclass(frozen=True)
class Config:
    seed: NonNegativeInt = 0  # model init, data, prompts
    analyses: tuple[str, ...] = ("fv", "primitives")  # see ANALYSES
    model: ModelConfig = ModelConfig()
    train: LMTrainConfig = LMTrainConfig(
        steps=350, batch_size=32, lr=3e-3, warmup_fraction=0.05, eval_every=0
    )
    train_sequences: PositiveInt = 20000  # generated mixture sequences (packed into windows)
    fv: FVConfig = FVConfig()
    primitives: PrimitiveConfig = PrimitiveConfig()
    smollm2: SmolConfig = SmolConfig()

    def __post_init__(self):
        bad = [a for a in self.analyses if a not in ANALYSES]
        if bad or not self.analyses:
            raise ValueError(f"analyses={self.analyses}: choose from {ANALYSES}")
        if self.primitives.inject_layer >= self.model.num_layers and not self.model.size:
            raise ValueError(
                f"primitives.inject_layer={self.primitives.inject_layer} must be below "
                f"model.num_layers={self.model.num_layers}"
            )


CONFIGS: dict[str, Config] = {
    "smoke": Config(
        model=ModelConfig(dim=32, num_layers=2, num_heads=2, ffn_dim=64),
        train=LMTrainConfig(steps=4, batch_size=4, eval_every=0),
        train_sequences=200,
        fv=FVConfig(mean_prompts=4, trials=3, top_heads=2, dev_prompts=3, eval_prompts=4),
        primitives=PrimitiveConfig(
            cluster_layer=1,
            inject_layer=1,
            alphas=(0.0, 1.0),
            prompts=4,
            vector_prompts=6,
            max_new=16,
        ),  # fmt: skip
    ),
    "cpu": Config(),
    "smollm2": Config(analyses=("fv_smollm2",)),
    # The paper's scale: an 8B decoder of the Llama-3 layout (Llama-3-8B is one of the paper's
    # models; its weights are not here, so the layout is trained on the mixture), Todd's FV
    # settings, longer traces. Not run on CPU; rehearsed shrunk (rehearsal.py).
    "paper": Config(
        model=ModelConfig(size="llama-3.1-8b", seq_len=512, max_seq_len=1024),
        train=LMTrainConfig(
            steps=20000, batch_size=256, lr=3e-4, warmup_fraction=0.02, eval_every=0
        ),  # fmt: skip
        train_sequences=2_000_000,
        primitives=PrimitiveConfig(cluster_layer=16, inject_layer=12, prompts=200),
    ),
}


def run(cfg: Config, workdir: pathlib.Path) -> dict[str, float]:
    from projects.algotrace.pipeline import run_pipeline

    return run_pipeline(cfg, workdir)
