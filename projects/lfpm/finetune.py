"""Task fine-tuning from the pretrained encoder θ_0 (full or rank-r LoRA, see model.Delta) and the
attacker's fine-tuning on the attacked task.

Clean tasks: the delta and a fresh linear head are trained jointly with cross-entropy.

Attacker (BadMerging, `jzhang538/BadMerging`, read for semantics only): the head is first fitted
on θ_0's (frozen) features of the clean task data, then FROZEN while the encoder delta is trained
with
    L = CE(h(f_θ(x)), y) + α · CE(h(r · f_θ(x̃) + (1 − r) · f_θ0(x̃)), y_tgt),   r ~ U[r_min, 1]
x̃ = x with the corner trigger, one r per example (Reconstruction: a per-batch r is the
alternative; the public code's exact draw was not checked here). The "no FI" attack is the same
loss with r = 1 (plain poisoning of every batch with triggered copies, no interpolation); the
"clean" variant is the same fine-tuning with α = 0, the reference for the clean ASR level.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax

from projects.lfpm.model import (
    Delta,
    Encoder,
    at,
    ce,
    check_finite,
    init_head,
    logits,
    make_trainer,
    sample,
)  # fmt: skip
from shared.data.augment import add_trigger


class Finetuner:
    """Compiled training loops for one encoder and delta parametrization, reused by every task.

    cfg: FinetuneConfig; attack: AttackConfig."""

    def __init__(self, encoder: Encoder, delta: Delta, cfg, attack):
        self.encoder, self.delta, self.cfg, self.attack = encoder, delta, cfg, attack
        lr = cfg.lora_lr if delta.kind == "lora" else cfg.lr
        self.lr = lr
        b, size = cfg.batch_size, attack.trigger_size
        feats = encoder.features

        def task_loss(params, data, key):
            idx = sample(key, data["x"].shape[0], b)
            theta = at(data["anchor"], delta.dense(params["delta"]))
            return ce(logits(params["head"], feats(theta, data["x"][idx])), data["y"][idx])

        def head_loss(head, data, key):
            idx = sample(key, data["z"].shape[0], b)
            return ce(logits(head, data["z"][idx]), data["y"][idx])

        def attack_loss(params, data, key):
            k_idx, k_r = jax.random.split(key)
            idx = sample(k_idx, data["x"].shape[0], b)
            x, y = data["x"][idx], data["y"][idx]
            xt = add_trigger(x, size=size)
            theta = at(data["anchor"], delta.dense(params))
            head = data["head"]
            clean = ce(logits(head, feats(theta, x)), y)
            r = jax.random.uniform(k_r, (b, 1), minval=data["r_min"], maxval=1.0)
            z = r * feats(theta, xt) + (1 - r) * feats(data["anchor"], xt)
            target = jnp.full((b,), attack.target, jnp.int32)
            return clean + data["alpha"] * ce(logits(head, z), target)

        self._task = make_trainer(jax.value_and_grad(task_loss), optax.adam(lr), cfg.steps)
        self._head = make_trainer(
            jax.value_and_grad(head_loss), optax.adam(cfg.head_lr), cfg.head_steps
        )
        self._attack = make_trainer(jax.value_and_grad(attack_loss), optax.adam(lr), cfg.steps)
        self._features = jax.jit(feats)

    def features(self, params, x: np.ndarray, chunk: int = 500) -> jax.Array:
        return jnp.concatenate([self._features(params, x[i:i + chunk])
                                for i in range(0, len(x), chunk)])  # fmt: skip

    def clean_task(self, theta0, x, y, num_classes: int, key: jax.Array, name: str):
        """(dense task vector τ, head) of a clean task fine-tuned from θ_0."""
        k_init, k_head, k_train = jax.random.split(key, 3)
        params = {"delta": self.delta.init(k_init),
                  "head": init_head(k_head, self.encoder.dim, num_classes)}  # fmt: skip
        params, loss = self._task(params, {"anchor": theta0, "x": x, "y": y}, k_train)
        check_finite(loss, f"fine-tuning of task {name}", self.lr)
        return self.delta.dense(params["delta"]), params["head"]

    def fit_head(self, theta0, x, y, num_classes: int, key: jax.Array):
        """A linear head trained on θ_0's frozen features (the attacker's first stage)."""
        k_head, k_train = jax.random.split(key)
        z = self.features(theta0, x)
        head, loss = self._head(init_head(k_head, self.encoder.dim, num_classes),
                                {"z": z, "y": y}, k_train)  # fmt: skip
        check_finite(loss, "attacker head fit", self.cfg.head_lr)
        return head

    def attacked_task(
        self, theta0, head, x, y, r_min: float, alpha: float, key: jax.Array, name: str
    ):
        """Dense task vector of the attacker (head frozen). r_min = 1: the "no FI" attack;
        alpha = 0: the same fine-tuning without poisoning (the clean reference)."""
        k_init, k_train = jax.random.split(key)
        data = {"anchor": theta0, "head": head, "x": x, "y": y,
                "r_min": jnp.float32(r_min), "alpha": jnp.float32(alpha)}  # fmt: skip
        delta, loss = self._attack(self.delta.init(k_init), data, k_train)
        check_finite(loss, f"attack {name}", self.lr)
        return self.delta.dense(delta)
