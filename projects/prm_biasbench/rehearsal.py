"""Rehearsal of the `paper` config (shared/rehearsal.py): every tier end to end with the paper's
layout (the bf16 decoder PRM with grouped-query attention, MiniLM from its package, GCG with
m = 8 suffix tokens, GRPO) and the models and sets shrunk: 2 steps of each training phase, a
checkpoint at each phase's last step. The runs use one device (no mesh).

    python launch/rehearse.py projects/prm_biasbench
"""

from __future__ import annotations

import json
import pathlib

from shared.rehearsal import Rehearsal


def check(cfg, run_dir: pathlib.Path) -> list[str]:
    problems = [f"no {n}" for n in ("tier1.json", "tier2_curves.json", "tier3.json")
                if not (run_dir / n).exists()]  # fmt: skip
    if not problems:
        curve = json.loads((run_dir / "tier3.json").read_text())["curve"]
        if curve["step"] != [1, 2]:
            problems.append(f"tier3.json: RL curve steps {curve['step']}, expected [1, 2]")
        if (
            len(json.loads((run_dir / "tier2_curves.json").read_text())["decoder"]["hamming_r"])
            != 9
        ):
            problems.append("tier2: the Hamming curve should have m + 1 = 9 points")
    return problems


_TRAIN = ("steps=2", "batch_size=2", "warmup_steps=0")

REHEARSAL = Rehearsal(
    data="generated arithmetic traces (shared/data/arithmetic_traces.py); all-MiniLM-L6-v2 "
    "from its package",
    shrink=(
        "data.train_size=16",
        "data.eval_size=4",
        "decoder.dim=48",
        "decoder.num_layers=2",
        "decoder.num_heads=6",
        "decoder.ffn_dim=64",
        *(f"decoder.train.{s}" for s in _TRAIN),
        "minilm.trainable_layers=1",
        *(f"minilm.train.{s}" for s in _TRAIN),
        "attack.num_solutions=2",
        "attack.iterations=2",
        "attack.top_k=4",
        "attack.candidates=4",
        "attack.continuous_steps=2",
        "attack.hamming_samples=2",
        "attack.chunk=16",
        "policy.dim=32",
        "policy.num_layers=1",
        "policy.num_heads=2",
        "policy.ffn_dim=64",
        "policy.sft_size=8",
        "policy.sft.steps=2",
        "policy.sft.batch_size=4",
        "rl.num_prompts=4",
        "rl.eval_prompts=2",
        "rl.grpo.steps=2",
        "rl.grpo.prompts_per_step=2",
        "rl.grpo.samples_per_prompt=2",
    ),  # fmt: skip
    checkpoints={"prm_decoder": 2, "prm_minilm": 2, "policy_sft": 2, "rl": 2},
    check=check,
)
