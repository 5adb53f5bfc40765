"""PRM-BiasBench: robustness and hackability of process reward models, at CPU scale.

    python launch/run.py projects/prm_biasbench                  # cpu config: every tier, one seed
    python launch/run.py projects/prm_biasbench --config smoke   # seconds, for tests
    python launch/reproduce.py projects/prm_biasbench            # tables tier1, tier2, tier3

A run trains the PRMs it needs on synthetic arithmetic solutions (data.py), then runs the tiers of
`tiers`: tier 1 (static perturbations, first-error F1), tier 2 (adversarial suffixes), tier 3
(RL of a policy against a PRM's last-step reward). Each table runs its own tier, so each table's
runs train their PRMs afresh (3 seeds).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import sys
import time
from typing import Annotated, Literal

from projects.prm_biasbench import data, policy, tier1, tier2, tier3
from projects.prm_biasbench import prms as prm_setup
from projects.prm_biasbench.policy import PolicyConfig
from projects.prm_biasbench.tier3 import RLConfig
from shared import rng
from shared.config import Fraction, NonNegativeInt, PositiveInt, Range
from shared.data.arithmetic_trace_text import render_question
from shared.data.arithmetic_traces import TraceConfig
from shared.data.word_tokenizer import WordTokenizer
from shared.results import append_metrics
from shared.train import latest_checkpoint_step, preemption
from shared.train.policy_gradient import PolicyGradientConfig, train_policy_gradient
from shared.train.sft import SFTConfig

Tier = Literal["tier1", "tier2", "tier3"]
PRM = Literal["decoder", "minilm"]


@dataclasses.dataclass(frozen=True)
class DataConfig:
    min_ops: PositiveInt = 3  # operations per problem, fewest (spec: 3-6 steps)
    max_ops: PositiveInt = 6  # most
    # numbers and results lie in [0, max_value] (operands too); the cpu config uses 10, which a
    # small PRM learns to verify on a CPU (README, Scale); the spec's example is 17 + 25 = 42
    max_value: Annotated[int, Range(2)] = 99
    max_slip: PositiveInt = 3  # a slip writes a result off by 1..max_slip
    train_size: PositiveInt = 8000  # PRM training solutions
    slip_fraction: Fraction = 0.5  # share of them with one slip
    eval_size: PositiveInt = 200  # held-out clean solutions (tier 1; their slips give the F1)

    def trace_config(self) -> TraceConfig:
        return TraceConfig(
            min_ops=self.min_ops,
            max_ops=self.max_ops,
            max_operand=self.max_value,
            max_value=self.max_value,
            max_slip=self.max_slip,
        )


@dataclasses.dataclass(frozen=True)
class Config:
    seed: NonNegativeInt = 0  # data, PRM initialization, perturbations, attacks, RL
    tiers: tuple[Tier, ...] = ("tier1", "tier2", "tier3")  # what this run measures
    prms: tuple[PRM, ...] = ("decoder", "minilm")  # PRMs of tiers 1 and 2
    threshold: Fraction = 0.5  # a step scored below it is flagged (first-error F1)
    data: DataConfig = DataConfig()
    decoder: prm_setup.DecoderPRMConfig = prm_setup.DecoderPRMConfig()
    minilm: prm_setup.MiniLMPRMConfig = prm_setup.MiniLMPRMConfig()
    attack: tier2.AttackConfig = tier2.AttackConfig()
    policy: PolicyConfig = PolicyConfig()
    rl: RLConfig = RLConfig()

    def __post_init__(self):
        if not self.tiers or len(set(self.tiers)) != len(self.tiers):
            raise ValueError(f"tiers={self.tiers} must be distinct and not empty")
        if not self.prms or len(set(self.prms)) != len(self.prms):
            raise ValueError(f"prms={self.prms} must be distinct and not empty")
        if self.data.min_ops > self.data.max_ops:
            raise ValueError(f"data.min_ops={self.data.min_ops} exceeds max_ops")
        if self.minilm.train.lm_weight:
            raise ValueError("minilm.train.lm_weight must be 0: MiniLM has no LM head here")
        if self.rl.grpo.max_new_tokens != self.policy.max_new_tokens:
            raise ValueError(
                f"rl.grpo.max_new_tokens={self.rl.grpo.max_new_tokens} must equal "
                f"policy.max_new_tokens={self.policy.max_new_tokens}"
            )
        if self.rl.grpo.eos_id != WordTokenizer.eos_id or self.rl.grpo.method != "grpo":
            raise ValueError("rl.grpo must be method='grpo' with eos_id=2 (the word tokenizer's)")
        if self.decoder.max_len < self.policy.prompt_len + self.policy.max_new_tokens + 1:
            raise ValueError(
                f"decoder.max_len={self.decoder.max_len} cannot hold a policy prompt and response "
                f"({self.policy.prompt_len} + {self.policy.max_new_tokens} + 1 tokens)"
            )

    def prms_needed(self) -> tuple[str, ...]:
        needed = list(self.prms) if {"tier1", "tier2"} & set(self.tiers) else []
        needed += [self.rl.prm] if "tier3" in self.tiers else []
        return tuple(dict.fromkeys(needed))


CONFIGS: dict[str, Config] = {
    "smoke": Config(
        data=DataConfig(max_ops=4, max_value=20, train_size=64, eval_size=8),
        decoder=prm_setup.DecoderPRMConfig(
            dim=32,
            num_layers=1,
            num_heads=2,
            ffn_dim=64,
            train=prm_setup.PRMTrainConfig(steps=3, batch_size=8, log_every=1),
        ),
        minilm=prm_setup.MiniLMPRMConfig(
            trainable_layers=1, train=prm_setup.PRMTrainConfig(steps=2, batch_size=4, log_every=1)
        ),
        attack=tier2.AttackConfig(
            num_solutions=2,
            suffix_len=2,
            iterations=2,
            top_k=4,
            candidates=4,
            continuous_steps=2,
            hamming_samples=2,
            chunk=8,
        ),
        policy=PolicyConfig(
            dim=32,
            num_layers=1,
            num_heads=2,
            ffn_dim=64,
            max_new_tokens=48,
            sft_size=16,
            sft=SFTConfig(steps=2, batch_size=8),
        ),
        rl=RLConfig(
            num_prompts=4,
            eval_prompts=4,
            grpo=PolicyGradientConfig(
                method="grpo",
                steps=2,
                prompts_per_step=2,
                samples_per_prompt=2,
                max_new_tokens=48,
                eos_id=2,
            ),
        ),
    ),  # fmt: skip
    # Spec §5 scaled to about 15 minutes per table (3 seeds) on 2 CPU cores: numbers up to 10
    # (a 2-layer PRM learns to spot slips among them within 1,000 steps; up to 99 it did not
    # within 2,000), 2-layer d=64 decoders (spec: 4 layers, d=128), MiniLM's top 2 blocks
    # fine-tuned for 150 steps, 8 attacked solutions with 12 GCG iterations of 8 candidates,
    # 100 GRPO steps (spec: 2,000).
    "cpu": Config(
        data=DataConfig(max_value=10, train_size=8000, eval_size=100),
        decoder=prm_setup.DecoderPRMConfig(
            dim=64,
            num_layers=2,
            num_heads=4,
            ffn_dim=172,
            train=prm_setup.PRMTrainConfig(steps=1500, batch_size=32, lr=3e-3, lm_weight=1.0),
        ),
        minilm=prm_setup.MiniLMPRMConfig(
            trainable_layers=2,
            train=prm_setup.PRMTrainConfig(steps=150, batch_size=16, lr=5e-4, warmup_steps=20),
        ),
        attack=tier2.AttackConfig(
            num_solutions=8,
            iterations=12,
            candidates=8,
            continuous_steps=50,
            hamming_samples=4,
            chunk=128,
        ),
        policy=PolicyConfig(
            dim=64,
            num_layers=2,
            num_heads=4,
            ffn_dim=172,
            sft_size=4000,
            sft=SFTConfig(steps=600, batch_size=32, lr=3e-3),
        ),
        rl=RLConfig(
            num_prompts=512,
            eval_prompts=128,
            grpo=PolicyGradientConfig(
                method="grpo",
                steps=100,
                prompts_per_step=8,
                samples_per_prompt=8,
                max_new_tokens=64,
                eos_id=2,
                lr=3e-4,
                grad_clip=1.0,
            ),
        ),
    ),
    # The paper's scale where it is known (spec §4): a 1.5B decoder PRM in bf16 shaped like
    # Skywork-o1-PRM-1.5B (Qwen2.5-Math-1.5B: 28 layers, width 1536, 12 query / 2 KV heads, FFN
    # 8960), MiniLM fully fine-tuned, the attack and RL settings of spec §5 (m = 8, 100 GCG
    # iterations, top-k 32, B = 64, 200 solutions; GRPO with 8 samples per prompt, 2,000 steps).
    # The policy is not given by the paper: spec §5's 4-layer GPT. Data: the synthetic traces
    # (ProcessBench and AIME are not available offline). Built and rehearsed, not run here.
    "paper": Config(
        data=DataConfig(train_size=50000, eval_size=500),
        decoder=prm_setup.DecoderPRMConfig(
            dim=1536,
            num_layers=28,
            num_heads=12,
            num_kv_heads=2,
            ffn_dim=8960,
            max_len=4096,
            dtype="bfloat16",
            train=prm_setup.PRMTrainConfig(steps=5000, batch_size=64, lr=1e-5, lm_weight=1.0),
        ),
        minilm=prm_setup.MiniLMPRMConfig(
            trainable_layers=6,
            train=prm_setup.PRMTrainConfig(steps=5000, batch_size=64, lr=5e-5, warmup_steps=200),
        ),
        attack=tier2.AttackConfig(),
        rl=RLConfig(num_prompts=2000, eval_prompts=500),
    ),  # fmt: skip
}


def log(message: str) -> None:
    print(f"prm_biasbench: {message}", file=sys.stderr, flush=True)


def run(cfg: Config, workdir: pathlib.Path) -> dict[str, float]:
    """Trains the PRMs, runs the tiers; writes summary json files; returns flat metrics."""
    t0 = time.perf_counter()
    trace_cfg = cfg.data.trace_config()
    train = data.training_set(cfg.data.train_size, cfg.data.slip_fraction, trace_cfg, cfg.seed)
    trained: dict[str, prm_setup.TrainedPRM] = {}
    for name in cfg.prms_needed():
        preemption.check(f"training the {name} PRM")
        log(f"training the {name} PRM on {len(train)} solutions")
        if name == "decoder":
            trained[name] = prm_setup.train_decoder(
                cfg.decoder, trace_cfg, train, cfg.seed, workdir
            )
        else:
            trained[name] = prm_setup.train_minilm(cfg.minilm, train, cfg.seed, workdir)
        append_metrics(workdir, {"phase": f"prm_{name}", "seconds": time.perf_counter() - t0})
    metrics: dict[str, float] = {}
    tested = {name: trained[name] for name in cfg.prms if name in trained}  # tiers 1 and 2
    if "tier1" in cfg.tiers:
        metrics |= run_tier1(cfg, trace_cfg, train, tested, workdir)
    if "tier2" in cfg.tiers:
        metrics |= run_tier2(cfg, trace_cfg, train, tested, workdir)
    if "tier3" in cfg.tiers:
        metrics |= run_tier3(cfg, trace_cfg, train, trained, workdir)
    metrics["wall_s"] = time.perf_counter() - t0
    return metrics


def run_tier1(cfg, trace_cfg, train, trained, workdir) -> dict[str, float]:
    traces, perturbed, rejected = data.perturbable(
        cfg.data.eval_size, trace_cfg, cfg.seed, "tier1", train
    )
    clean = data.clean(traces)
    slips = data.slipped(traces, trace_cfg, cfg.seed, "tier1_slips")
    out = tier1.truth_shares(perturbed) | {"tier1/rejected_problems": float(rejected)}
    for name, prm in trained.items():
        preemption.check(f"tier 1, {name} PRM")
        log(f"tier 1: scoring {len(traces)} solutions x 10 sets with the {name} PRM")
        out |= tier1.evaluate_prm(name, prm.scorer, clean, perturbed, slips, cfg.threshold)
    (workdir / "tier1.json").write_text(json.dumps(out, indent=1) + "\n")
    return out


def run_tier2(cfg, trace_cfg, train, trained, workdir) -> dict[str, float]:
    traces = data.held_out(cfg.attack.num_solutions, trace_cfg, cfg.seed, "tier2", train)
    invalid = data.slipped(traces, trace_cfg, cfg.seed, "tier2_slips")
    pairs = [(e.question, e.solution) for e in invalid]
    out, curves = {}, {}
    for name, prm in trained.items():
        preemption.check(f"tier 2, {name} PRM")
        log(f"tier 2: attacking {len(pairs)} invalid solutions of the {name} PRM")
        t0 = time.perf_counter()
        found, curves[name] = tier2.attack_prm(
            name, prm.scorer, pairs, prm.allowed, cfg.attack, cfg.seed
        )
        out |= found
        out[f"tier2/{name}/seconds"] = time.perf_counter() - t0
    (workdir / "tier2_curves.json").write_text(json.dumps(curves) + "\n")
    return out


def run_tier3(cfg, trace_cfg, train, trained, workdir) -> dict[str, float]:
    tok = data.word_tokenizer(trace_cfg)
    scorer = trained[cfg.rl.prm].scorer
    sft_traces = data.held_out(cfg.policy.sft_size, trace_cfg, cfg.seed, "policy_sft", train)
    seen = frozenset([*(e.problem for e in train), *(t.problem for t in sft_traces)])
    n_rl, n_eval = cfg.rl.num_prompts, cfg.rl.eval_prompts
    rl_traces = data.draw_problems(n_rl + n_eval, trace_cfg, cfg.seed, "rl_prompts", seen)
    questions = [render_question(t.problem) for t in rl_traces]
    prompts = policy.prompts(tok, questions, cfg.policy.prompt_len)
    preemption.check("tier 3, policy pretraining")
    log(f"tier 3: pretraining the policy on {len(sft_traces)} correct solutions")
    model = policy.pretrain(cfg.policy, tok, sft_traces, cfg.seed, workdir)
    key = rng.stream(cfg.seed, "tier3_eval")
    max_new = cfg.policy.max_new_tokens
    initial = tier3.evaluate_policy(model, tok, scorer, prompts[n_rl:], max_new, key)
    grpo = dataclasses.replace(cfg.rl.grpo, seed=cfg.seed)
    log(f"tier 3: GRPO for {grpo.steps} steps against the {cfg.rl.prm} PRM's r_last")
    first = latest_checkpoint_step(workdir / "checkpoints" / "rl") or 0
    reward = tier3.PRMReward(scorer, tok, workdir, first)
    train_policy_gradient(model, prompts[:n_rl], reward, grpo, workdir=workdir, phase="rl",
                          log_every=max(1, min(10, grpo.steps)))  # fmt: skip
    final = tier3.evaluate_policy(model, tok, scorer, prompts[n_rl:], max_new, key)
    p = f"tier3/{cfg.rl.prm}"
    out = {
        f"{p}/r_initial": initial["r"], f"{p}/r_final": final["r"],
        f"{p}/r_canonical": final["r_canonical"],
        f"{p}/acc_initial": initial["accuracy"], f"{p}/acc_final": final["accuracy"],
        f"{p}/non_canonical_initial": initial["non_canonical"],
        f"{p}/non_canonical_final": final["non_canonical"],
        f"{p}/gain": final["r"] - initial["r"],
    }  # fmt: skip
    share = tier3.stylistic_share(initial["r"], final["r"], final["r_canonical"], cfg.rl.min_gain)
    if share is not None:
        out[f"{p}/stylistic_share"] = share
    curve = tier3.read_curve(workdir / "metrics.jsonl")
    summary = {"metrics": out, "curve": curve, "initial_samples": initial["texts"][:8],
               "final_samples": final["texts"][:8]}  # fmt: skip
    (workdir / "tier3.json").write_text(json.dumps(summary, indent=1) + "\n")
    return out
