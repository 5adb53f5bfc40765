"""LFPM at CPU scale: backdoor mitigation in model merging by an anti-backdoor task vector learned
along the linear path θ_m + s·τ_a (arXiv 2606.12498), against BadMerging on a 3-task merge.

    python launch/run.py projects/lfpm                          # cpu: full fine-tuning, one seed
    python launch/run.py projects/lfpm --set finetune='lora'    # rank-4 LoRA (PEFT)
    python launch/run.py projects/lfpm --config smoke           # seconds, for tests
    python launch/reproduce.py projects/lfpm                    # table1_full and table1_lora

One run = one seed (pipeline.py): label-free pretraining of θ_0, fine-tuning of every task (the
attacked one three ways: BadMerging, no-FI poisoning, clean), TA and TIES merges at each λ, every
defense on each merge, Figure 1 (CTL) and Figure 2 (ASR/CA along s).
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Literal

from shared.config import Fraction, NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt

MNIST_TASKS = ("mnist", "fashion", "inv_parity")
TA8 = ("sun397", "cars", "resisc45", "eurosat", "svhn", "gtsrb", "mnist", "dtd")
ATTACKS = ("badmerging", "nofi", "clean")
DEFENSES = ("none", "finetune", "prune", "negation", "lfpm_single", "lfpm_path")


@dataclasses.dataclass(frozen=True)
class DataConfig:
    source: Literal["mnist", "local"] = "mnist"  # mnist: T1-T3 offline; local: data_dir
    data_dir: str = ""  # source "local": folder of <task>/{train,test}.npz (tasks.py)
    tasks: tuple[str, ...] = MNIST_TASKS  # names (source "mnist": exactly MNIST_TASKS)
    attacked: str = "fashion"  # the task the attacker fine-tunes (T2)
    train_per_task: PositiveInt = 5000  # training images drawn per task (at most)
    test_per_task: PositiveInt = 500  # test images drawn per task (at most)
    clean_fraction: Fraction = 0.01  # D_c: the defender's clean share of each training draw
    pretrain_per_source: PositiveInt = 5000  # unlabelled images per source (mnist) / per task


@dataclasses.dataclass(frozen=True)
class EncoderConfig:
    kind: Literal["cnn", "vit"] = "cnn"  # shared/models/image_encoders.py
    dim: PositiveInt = 64  # feature width (the heads' input)
    widths: tuple[PositiveInt, ...] = (16, 32)  # cnn: conv channels (stride 2 after the first)
    patch: PositiveInt = 4  # vit: patch side
    depth: PositiveInt = 2  # vit: blocks
    heads: PositiveInt = 4  # vit: attention heads
    width: NonNegativeInt = 0  # vit: token width (0: dim)


@dataclasses.dataclass(frozen=True)
class PretrainCfg:
    steps: NonNegativeInt = 150  # label-free autoencoder steps (0: random θ_0)
    batch_size: PositiveInt = 128
    lr: PositiveFloat = 1e-3


@dataclasses.dataclass(frozen=True)
class FinetuneConfig:
    steps: PositiveInt = 120  # Adam steps per task (and per attack)
    batch_size: PositiveInt = 64
    lr: PositiveFloat = 1e-3  # full fine-tuning
    lora_rank: PositiveInt = 4  # PEFT: LoRA rank on every encoder kernel
    lora_lr: PositiveFloat = 5e-3  # PEFT
    head_steps: PositiveInt = 200  # attacker: head fitted on θ_0 features first
    head_lr: PositiveFloat = 1e-2


@dataclasses.dataclass(frozen=True)
class AttackConfig:
    variants: tuple[Literal["badmerging", "nofi", "clean"], ...] = ATTACKS  # attacked-task FT
    target: NonNegativeInt = 0  # y_tgt
    alpha: NonNegativeFloat = 1.0  # weight of the backdoor term
    r_min: Fraction = 0.2  # BadMerging: r ~ U[r_min, 1]
    trigger_size: PositiveInt = 3  # white square in the bottom-right corner


@dataclasses.dataclass(frozen=True)
class MergeConfig:
    methods: tuple[Literal["ta", "ties"], ...] = ("ta", "ties")
    lams: tuple[PositiveFloat, ...] = (0.3, 0.5, 0.7, 1.0)  # merging coefficient λ
    ties_keep: Fraction = 0.2  # TIES: top share of |τ| kept per task vector


@dataclasses.dataclass(frozen=True)
class DefenseConfig:
    defenses: tuple[str, ...] = DEFENSES
    # attack variants every defense is run on (the others: merge without defense only); sized
    # so that a cpu table (3 seeds) fits about 10 minutes on 2 cores
    defend: tuple[str, ...] = ("badmerging",)
    steps: PositiveInt = 40  # Adam steps of finetune, negation and LFPM
    batch_size: PositiveInt = 8  # D_c inputs per task per step
    lr: PositiveFloat = 1e-3  # full fine-tuning
    lora_lr: PositiveFloat = 5e-3  # PEFT
    mu: NonNegativeFloat = 1.0  # LFPM: weight of ℓ_clean
    path_points: PositiveInt = 8  # LFPM path: S
    prune_fraction: Fraction = 0.8  # share of the merged task vector zeroed
    neg_scale: NonNegativeFloat = 1.0  # negation: θ_m − neg_scale · τ_neg


@dataclasses.dataclass(frozen=True)
class FigureConfig:
    path_method: Literal["ta", "ties"] = "ta"  # Figure 2: the merge whose τ_a are swept
    path_lam: PositiveFloat = 0.5
    path_grid: PositiveInt = 6  # s = 0, 1/(n-1), ..., 1
    ctl_alphas: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
    ctl_probe: PositiveInt = 128  # test images per task in the CTL probe batch


@dataclasses.dataclass(frozen=True)
class Config:
    seed: NonNegativeInt = 0  # data draws, initialisation, every training
    finetune: Literal["full", "lora"] = "full"  # full fine-tuning or rank-r LoRA (PEFT)
    data: DataConfig = DataConfig()
    encoder: EncoderConfig = EncoderConfig()
    pretrain: PretrainCfg = PretrainCfg()
    fine: FinetuneConfig = FinetuneConfig()
    attack: AttackConfig = AttackConfig()
    merge: MergeConfig = MergeConfig()
    defense: DefenseConfig = DefenseConfig()
    figure: FigureConfig = FigureConfig()

    def __post_init__(self):
        d = self.data
        if d.source == "mnist" and d.tasks != MNIST_TASKS:
            raise ValueError(f"data.tasks must be {MNIST_TASKS} with data.source='mnist'")
        if d.source == "local" and not d.data_dir:
            raise ValueError("data.source='local' reads a folder: set data.data_dir")
        if d.attacked not in d.tasks:
            raise ValueError(f"data.attacked={d.attacked!r} is not one of data.tasks={d.tasks}")
        if len(set(d.tasks)) < 2:
            raise ValueError("data.tasks: merging needs at least two tasks")
        bad = [x for x in self.defense.defenses if x not in DEFENSES]
        if bad:
            raise ValueError(f"defense.defenses: {bad} are not in {DEFENSES}")
        bad = [v for v in self.defense.defend if v not in self.attack.variants]
        if bad:
            raise ValueError(f"defense.defend: {bad} are not in attack.variants")
        if self.figure.path_method not in self.merge.methods:
            raise ValueError("figure.path_method must be one of merge.methods")
        if self.figure.path_lam not in self.merge.lams:
            raise ValueError("figure.path_lam must be one of merge.lams")
        if not 0 < self.merge.ties_keep:
            raise ValueError("merge.ties_keep must be > 0")


_SMOKE = Config(
    data=DataConfig(train_per_task=200, test_per_task=100, clean_fraction=0.1,
                    pretrain_per_source=100),  # fmt: skip
    encoder=EncoderConfig(widths=(4,), dim=16),  # one conv: less to compile
    pretrain=PretrainCfg(steps=3, batch_size=32),
    fine=FinetuneConfig(steps=3, batch_size=16, head_steps=3),
    merge=MergeConfig(lams=(1.0,)),
    defense=DefenseConfig(defend=("badmerging",), steps=2, batch_size=4, path_points=2),
    figure=FigureConfig(path_lam=1.0, path_grid=3, ctl_alphas=(0.0, 0.5, 1.0), ctl_probe=16),
)

CONFIGS: dict[str, Config] = {
    "smoke": _SMOKE,
    "cpu": Config(),
    # The common setup of this line of work (not confirmed for this paper): a CLIP ViT-B/32-shaped
    # image tower (224 px, patch 32, width 768, 12 blocks, 12 heads, 512-d features) on the 8
    # task-arithmetic tasks read from a local folder. No CLIP weights exist offline: θ_0 comes
    # from label-free pretraining here. Trigger 22 x 22 (about 1% of the image, an assumption).
    "paper": Config(
        data=DataConfig(source="local", data_dir="data/task_arithmetic8", tasks=TA8,
                        attacked="cars", train_per_task=10**9, test_per_task=10**9,
                        pretrain_per_source=20000),  # fmt: skip
        encoder=EncoderConfig(kind="vit", dim=512, patch=32, depth=12, heads=12, width=768),
        pretrain=PretrainCfg(steps=20000, batch_size=256, lr=1e-4),
        fine=FinetuneConfig(steps=2000, batch_size=128, lr=1e-5, lora_rank=16, lora_lr=1e-4,
                            head_steps=1000, head_lr=1e-3),  # fmt: skip
        attack=AttackConfig(trigger_size=22),
        defense=DefenseConfig(steps=500, batch_size=32, lr=1e-5, lora_lr=1e-4),
        figure=FigureConfig(ctl_probe=256),
    ),
}


def run(cfg: Config, workdir: pathlib.Path) -> dict[str, float]:
    from projects.lfpm.pipeline import run_pipeline

    return run_pipeline(cfg, workdir)
