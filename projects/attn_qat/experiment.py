"""Attn-QAT: FP4 attention with quantization-aware training, on a decoder whose attention mode
is a config field (`LlamaConfig.attention`).

    python launch/run.py projects/attn_qat                   # cpu: SmolLM2-135M on Wikipedia
    python launch/run.py projects/attn_qat --config ablation # small LLaMA on Shakespeare
    python launch/run.py projects/attn_qat --config smoke    # seconds, for tests
    python launch/reproduce.py projects/attn_qat             # both tables and the figure

One run: build the starting model (SmolLM2 as published, or a small LLaMA pretrained from
scratch with full-precision attention), evaluate it with full-precision and FP4 attention (FP4
without training = PTQ), then, once per variant and always from that same start, continue
training with the variant's attention and evaluate again under both attentions. Every step's
global gradient norm is logged (metrics.jsonl) for the stability statistics and the figure.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Literal

import jax
import jax.numpy as jnp
from flax import nnx
from tqdm.auto import tqdm

from projects.attn_qat import grad_fidelity
from projects.attn_qat import model as models
from projects.attn_qat.data import load_windows
from projects.attn_qat.evaluate import evaluate
from projects.attn_qat.train import PhaseConfig, stability, train_phase
from shared.config import NonNegativeInt, PositiveInt
from shared.distributed import make_mesh
from shared.models.llama import Llama
from shared.models.llama_sharding import MODES as SHARDING_MODES
from shared.models.llama_sharding import shard_llama

# Attention while training a variant: full precision or an FP4 mode with a backward.
VARIANTS = ("dot_product", "bf16", "drop_in_qat", "attn_qat", "only_o_prime", "only_quantized_p")
# Attention at evaluation: metric-name -> decoder attention ("fp4" = FP4 forward of the kernel).
INFERENCE = {"full": "dot_product", "fp4": "fp4_ptq"}


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    # smollm2: SmolLM2-135M-Instruct weights (offline GGUF); scratch: a small LLaMA from random
    # init (pretrained in this run); llama31-70b: the paper config's model (weights from
    # init_checkpoint)
    source: Literal["smollm2", "scratch", "llama31-70b"] = "smollm2"
    dim: PositiveInt = 256  # scratch: model width
    num_layers: PositiveInt = 4  # scratch: decoder blocks
    num_heads: PositiveInt = 4  # scratch: heads (head_dim = dim / heads; must be a multiple of 16)
    ffn_dim: PositiveInt = 688  # scratch: SwiGLU hidden width
    init_checkpoint: str = ""  # llama31-70b: orbax checkpoint of the parameters to continue from
    attention_impl: Literal["auto", "pallas", "reference"] = "auto"  # FP4 attention kernel
    rehearsal: bool = False  # llama31-70b: its layout shrunk (model.LLAMA31_70B_REHEARSAL)


@dataclasses.dataclass(frozen=True)
class DataConfig:
    corpus: Literal["wikipedia", "shakespeare", "c4"] = "wikipedia"  # text (c4: local shards)
    tokenizer: Literal["smollm2", "byte"] = "smollm2"  # must match the model's vocabulary
    seq_len: PositiveInt = 128  # tokens per window
    # held-out next-token targets (fixed windows, same for every run)
    eval_tokens: PositiveInt = 4096
    eval_batch: PositiveInt = 8  # windows per evaluation batch
    data_dir: str = ""  # c4: folder of the c4/en shards (JSON lines, .json.gz or ArrayRecord)


@dataclasses.dataclass(frozen=True)
class Config:
    seed: NonNegativeInt = 0  # scratch init, data order of every phase
    model: ModelConfig = ModelConfig()
    data: DataConfig = DataConfig()
    # from-scratch pretraining with full-precision attention (scratch models only)
    pretrain: PhaseConfig = PhaseConfig()
    # continued training / QAT finetune, run once per variant from the same starting weights
    finetune: PhaseConfig = PhaseConfig(steps=20, batch_size=4, lr=3e-5, warmup_steps=2)
    variants: tuple[str, ...] = ("dot_product", "drop_in_qat", "attn_qat")  # see VARIANTS
    eval_start: bool = True  # evaluate the starting weights too (the BF16 and PTQ rows)
    checkpoints: bool = True  # orbax checkpoints per phase (resume after a kill)
    mesh_shape: tuple[PositiveInt, ...] = ()  # (data, model) device mesh; () = one device
    sharding: str = "fsdp"  # shared.models.llama_sharding mode over the mesh
    # qat: the training protocol above; grad_fidelity: no model, only the cosine of each
    # attention mode's dQ/dK/dV against float64 attention (grad_fidelity.py, `fidelity`)
    measure: Literal["qat", "grad_fidelity"] = "qat"
    # grad_fidelity: sequence lengths, shapes, input distributions, modes
    fidelity: grad_fidelity.FidelityConfig = grad_fidelity.FidelityConfig()

    def validate(self) -> None:
        m, d = self.model, self.data
        bad = [v for v in self.variants if v not in VARIANTS]
        if bad or not self.variants:
            raise ValueError(f"variants={self.variants}: choose a non-empty subset of {VARIANTS}")
        if (m.source == "smollm2") != (d.tokenizer == "smollm2"):
            raise ValueError("data.tokenizer must be 'smollm2' exactly when model.source='smollm2'")
        if m.source == "scratch" and (m.dim % m.num_heads or (m.dim // m.num_heads) % 16):
            raise ValueError(
                f"model.dim={m.dim} / model.num_heads={m.num_heads} must give a head_dim that is "
                "a multiple of 16 (the NVFP4 group along head_dim)"
            )
        if m.source != "scratch" and self.pretrain.steps:
            raise ValueError("pretrain.steps must be 0 unless model.source='scratch'")
        if d.seq_len < 16 or d.eval_batch < 1:
            raise ValueError("data.seq_len must be >= 16 and data.eval_batch >= 1")
        if self.mesh_shape and len(self.mesh_shape) != 2:
            raise ValueError(f"mesh_shape={self.mesh_shape} must be () or (data, model)")
        if self.sharding not in SHARDING_MODES:
            raise ValueError(f"sharding={self.sharding!r}: choose one of {SHARDING_MODES}")
        self.pretrain.validate("pretrain")
        self.finetune.validate("finetune")

    def __post_init__(self):
        self.validate()


_ABLATION_MODEL = ModelConfig(source="scratch", dim=128, num_layers=2, num_heads=2, ffn_dim=344)
_ALL = ("dot_product", "drop_in_qat", "attn_qat", "only_o_prime", "only_quantized_p")

CONFIGS: dict[str, Config] = {
    # Seconds: a one-block model on Shakespeare bytes, every phase and two variants.
    "smoke": Config(
        model=ModelConfig(source="scratch", dim=32, num_layers=1, num_heads=2, ffn_dim=64),
        data=DataConfig("shakespeare", "byte", seq_len=32, eval_tokens=64, eval_batch=2),
        pretrain=PhaseConfig(steps=2, batch_size=2, lr=1e-3, warmup_steps=1),
        finetune=PhaseConfig(steps=3, batch_size=2, lr=1e-4),
        variants=("attn_qat",),
    ),
    # Table `llm`: SmolLM2-135M, held-out Wikipedia, a very short continued training.
    "cpu": Config(
        data=DataConfig("wikipedia", "smollm2", seq_len=128, eval_tokens=1024, eval_batch=8),
        finetune=PhaseConfig(steps=8, batch_size=1, lr=5e-5, warmup_steps=1),
        checkpoints=False,  # 1.6 GB of weights + Adam state per variant: not worth it here
    ),
    # Table `llm_long`: the same comparison with 25x the continued-training tokens (100 steps of
    # 2 x 128 against 8 of 1 x 128), a cosine decay and 4x the held-out tokens, so that a change
    # of the FP4 penalty can be told from the seed spread (estimated at 70-90 min on 2 cores).
    "long": Config(
        data=DataConfig("wikipedia", "smollm2", seq_len=128, eval_tokens=4096, eval_batch=8),
        finetune=PhaseConfig(steps=100, batch_size=2, lr=5e-5, warmup_steps=10, schedule="cosine"),
        checkpoints=False,  # as `cpu`: 1.6 GB per variant; a killed run loses one variant
    ),
    # Table `ablation`: the spec's protocol (pretrain, PTQ, QAT finetune from the same
    # checkpoint), scaled to a 2-block LLaMA (head_dim 64 as in the spec) on Shakespeare bytes.
    "ablation": Config(
        model=_ABLATION_MODEL,
        data=DataConfig("shakespeare", "byte", seq_len=64, eval_tokens=4096, eval_batch=32),
        pretrain=PhaseConfig(steps=240, batch_size=8, lr=3e-3, warmup_steps=24, schedule="cosine"),
        finetune=PhaseConfig(steps=60, batch_size=8, lr=1e-4, warmup_steps=5),
        variants=_ALL,
    ),
    # Continued pretraining of a Llama-3.1-70B-shaped model on C4 with the fused Pallas kernels,
    # FSDP + tensor parallel over a 16 x 8 mesh. Reconstruction: the paper gives no LLM learning
    # rate, batch or token count; these follow the FastVideo recipe's constant-LR AdamW.
    "paper": Config(
        model=ModelConfig(source="llama31-70b", attention_impl="pallas"),
        data=DataConfig(
            "c4", "byte", seq_len=4096, eval_tokens=4096 * 256, eval_batch=16, data_dir="data/c4"
        ),
        finetune=PhaseConfig(steps=2000, batch_size=256, lr=1e-5, warmup_steps=100),
        variants=("attn_qat",),
        mesh_shape=(16, 8),
        sharding="fsdp+tensor",
    ),  # fmt: skip
}
# `python launch/run.py projects/attn_qat --config grad_fidelity` (table `grad_fidelity`): the
# dQ/dK/dV cosine of every attention mode against float64 attention, L = 128 ... 2048, head_dim
# 128, bf16 inputs; no model or data (the model, data and phase fields above are unused).
CONFIGS["grad_fidelity"] = Config(measure="grad_fidelity", checkpoints=False)


def build_start(cfg: Config, vocab_size: int, workdir: pathlib.Path, mesh) -> tuple[Llama, dict]:
    """The starting model (pretrained from scratch here when model.source='scratch')."""
    m = cfg.model
    if m.source == "smollm2":
        from shared.models.pretrained.smollm2 import load_smollm2

        return load_smollm2(), {}
    if m.source == "llama31-70b":
        return restore_paper_model(cfg, mesh), {}
    lcfg = models.scratch_config(
        vocab_size, m.dim, m.num_layers, m.num_heads, m.ffn_dim, cfg.data.seq_len
    )
    model = Llama(lcfg, rngs=nnx.Rngs(jax.random.fold_in(jax.random.key(cfg.seed), 0)))
    return model, {}


def restore_paper_model(cfg: Config, mesh) -> Llama:
    """The paper model's parameters restored from model.init_checkpoint onto the mesh."""
    import orbax.checkpoint as ocp

    if not cfg.model.init_checkpoint:
        raise ValueError(
            "model.init_checkpoint is empty: continued pretraining needs the pretrained weights "
            "as an orbax checkpoint of the decoder's nnx.Param state"
        )
    abstract = paper_abstract_model(cfg)
    if mesh is not None:
        shard_llama(abstract, mesh, cfg.sharding)
    state = nnx.state(abstract, nnx.Param)
    path = pathlib.Path(cfg.model.init_checkpoint).absolute()
    restored = ocp.StandardCheckpointer().restore(path, state)
    nnx.update(abstract, restored)
    return abstract


def paper_abstract_model(cfg: Config, num_layers: int | None = None) -> Llama:
    """The paper model without memory (jax.ShapeDtypeStruct leaves), with its attention;
    `num_layers` truncates it (tests build the per-block shapes cheaply)."""
    base = models.LLAMA31_70B_REHEARSAL if cfg.model.rehearsal else models.LLAMA31_70B
    lcfg = dataclasses.replace(
        base,
        num_layers=num_layers or base.num_layers,
        max_seq_len=max(base.max_seq_len, cfg.data.seq_len),
        attention="attn_qat",
        attention_impl=cfg.model.attention_impl,
    )
    return nnx.eval_shape(lambda: Llama(lcfg, rngs=nnx.Rngs(0)))


def _eval_both(model, windows, cfg: Config, prefix: str) -> dict[str, float]:
    out = {}
    for key, attention in INFERENCE.items():
        r = evaluate(model, windows, attention, cfg.data.eval_batch, cfg.model.attention_impl)
        out |= {f"{prefix}/{key}_{k}": v for k, v in r.items()}
    return out


def run(cfg: Config, workdir: pathlib.Path) -> dict[str, float]:
    """Start model -> evaluation -> one continued training per variant -> evaluation (or, with
    measure='grad_fidelity', the gradient cosines of grad_fidelity.py)."""
    if cfg.measure == "grad_fidelity":
        return grad_fidelity.measure(cfg.fidelity, cfg.seed)
    mesh = None
    if cfg.mesh_shape:
        if jax.device_count() != cfg.mesh_shape[0] * cfg.mesh_shape[1]:
            raise ValueError(
                f"mesh_shape={cfg.mesh_shape} needs {cfg.mesh_shape[0] * cfg.mesh_shape[1]} "
                f"devices; {jax.device_count()} are visible"
            )
        mesh = make_mesh(cfg.mesh_shape, ("data", "model"))
    d = cfg.data
    windows = load_windows(d.corpus, d.tokenizer, d.seq_len, d.eval_tokens, d.data_dir)
    model, metrics = build_start(cfg, windows.vocab_size, workdir, mesh)
    if mesh is not None and cfg.model.source != "llama31-70b":
        shard_llama(model, mesh, cfg.sharding)
    key = jax.random.key(cfg.seed)
    if cfg.pretrain.steps:
        norms = train_phase(
            model, windows.train, cfg.pretrain, seed=int(jax.random.randint(
                jax.random.fold_in(key, 1), (), 0, 2**31 - 1)), name="pretrain",
            workdir=workdir, checkpoints=cfg.checkpoints, mesh=mesh,
        )  # fmt: skip
        metrics |= stability(norms, "pretrain")
    # Published weights on fixed held-out windows give the same numbers for every seed: only
    # seed 0 evaluates them (a from-scratch start depends on the seed and is always evaluated).
    if cfg.eval_start and (cfg.model.source == "scratch" or cfg.seed == 0):
        metrics |= _eval_both(model, windows.eval, cfg, "pretrained")
    graphdef, start = nnx.split(model)
    for i, variant in enumerate(tqdm(cfg.variants, desc="variants", disable=None)):
        # Every variant restarts from a copy of the same starting weights.
        fresh = nnx.merge(graphdef, jax.tree.map(jnp.array, start))
        trained = models.with_attention(fresh, variant, cfg.model.attention_impl)
        norms = train_phase(
            trained, windows.train, cfg.finetune, seed=cfg.seed * 1000 + 2 + i,
            name=f"finetune_{variant}", workdir=workdir, checkpoints=cfg.checkpoints, mesh=mesh,
        )  # fmt: skip
        metrics |= stability(norms, variant)
        metrics |= _eval_both(trained, windows.eval, cfg, variant)
    return metrics
