"""Defenses of the merged encoder θ_m, each returning the encoder to deploy (heads unchanged).

- "none": θ_m.
- "finetune": a delta on θ_m (dense, or LoRA in PEFT mode) trained with CE on D_c of every task
  (heads frozen), the same steps and batch as LFPM.
- "prune": magnitude pruning of the merged TASK VECTOR τ_m = θ_m − θ_0: its smallest-|entry|
  `prune_fraction` over the whole encoder is zeroed (merging.trim with keep = 1 − fraction),
  then θ_0 + τ_m is deployed. Pruning the weights themselves was the alternative; at this width
  it removes the pretrained features along with the backdoor.
- "negation": a task vector τ_neg fine-tuned from θ_0 on triggered D_c inputs of the attacked
  task labelled with the target (through the attacked task's head), subtracted:
  θ_m − neg_scale · τ_neg (a parameter-space task-arithmetic baseline).
- "lfpm_single", "lfpm_path": LFPM with S = 1 and S = path_points (lfpm.py).
The defender knows the trigger (an upper bound on what trigger inversion would give).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import optax

from projects.lfpm.lfpm import LFPM, clean_data
from projects.lfpm.model import Delta, Encoder, at, ce, check_finite, logits, make_trainer, sample
from shared.data.augment import add_trigger
from shared.models import merging

DEFENSES = ("none", "finetune", "prune", "negation", "lfpm_single", "lfpm_path")


@functools.partial(jax.jit, static_argnames="fraction")
def prune_task_vector(theta0, theta_m, fraction: float):
    """θ_0 + τ_m with the smallest-|entry| `fraction` of τ_m = θ_m − θ_0 set to zero."""
    tau = merging.task_vector(theta_m, theta0)
    return merging.add_scaled(theta0, merging.trim(tau, keep=1.0 - fraction), 1.0)


class Defenses:
    """Compiled trainers of every defense for one encoder and parametrization.

    cfg: DefenseConfig; attack: AttackConfig; attacked: index of the attacked task."""

    def __init__(self, encoder: Encoder, delta: Delta, cfg, attack, attacked: int):
        self.delta, self.cfg, self.attack, self.attacked = delta, cfg, attack, attacked
        self.lr = cfg.lora_lr if delta.kind == "lora" else cfg.lr
        feats, b, size = encoder.features, cfg.batch_size, attack.trigger_size

        def finetune_loss(params, data, key):
            theta = at(data["anchor"], delta.dense(params))
            losses = []
            for i, (head, x, y) in enumerate(zip(data["heads"], data["x"], data["y"])):
                idx = sample(jax.random.fold_in(key, i), x.shape[0], b)
                losses.append(ce(logits(head, feats(theta, x[idx])), y[idx]))
            return jnp.mean(jnp.stack(losses))

        def negation_loss(params, data, key):
            idx = sample(key, data["x"].shape[0], b)
            theta = at(data["anchor"], delta.dense(params))
            z = feats(theta, add_trigger(data["x"][idx], size=size))
            return ce(logits(data["head"], z), jnp.full((b,), attack.target, jnp.int32))

        tx = optax.adam(self.lr)
        self._finetune = make_trainer(jax.value_and_grad(finetune_loss), tx, cfg.steps)
        self._negation = make_trainer(jax.value_and_grad(negation_loss), tx, cfg.steps)
        self.lfpm = {
            "lfpm_single": LFPM(encoder, delta, cfg, 1, size, attacked),
            "lfpm_path": LFPM(encoder, delta, cfg, cfg.path_points, size, attacked),
        }

    def negation_vector(self, theta0, heads, clean_sets, key):
        """τ_neg: fine-tuned from θ_0 on (x̃, y_tgt) of the attacked task's D_c. Independent of
        the merge and of the attack variant (both share the attacker's head): once per run."""
        k_init, k_train = jax.random.split(key)
        data = {"anchor": theta0, "head": heads[self.attacked],
                "x": clean_sets[self.attacked][0]}  # fmt: skip
        params, loss = self._negation(self.delta.init(k_init), data, k_train)
        check_finite(loss, "negation task vector", self.lr)
        return self.delta.dense(params)

    def apply(self, name: str, theta0, theta_m, heads, clean_sets, key, tau_neg=None):
        """(deployed encoder, the trained dense delta or None) of defense `name`."""
        if name == "none":
            return theta_m, None
        if name == "prune":
            return prune_task_vector(theta0, theta_m, self.cfg.prune_fraction), None
        if name == "negation":
            if tau_neg is None:
                raise ValueError("negation needs tau_neg (Defenses.negation_vector)")
            return at(theta_m, tau_neg, -self.cfg.neg_scale), tau_neg
        if name == "finetune":
            k_init, k_train = jax.random.split(key)
            data = clean_data(theta_m, heads, clean_sets)
            params, loss = self._finetune(self.delta.init(k_init), data, k_train)
            check_finite(loss, "clean fine-tuning defense", self.lr)
            dense = self.delta.dense(params)
            return at(theta_m, dense), dense
        if name in self.lfpm:
            tau_a = self.lfpm[name].fit(theta_m, heads, clean_sets, key)
            return at(theta_m, tau_a), tau_a
        raise ValueError(f"defense {name!r} is not one of {DEFENSES}")
