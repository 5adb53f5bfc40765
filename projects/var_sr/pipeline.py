"""One run: for each seed, the SR pairs, both tokenizers (Table 2), the SR transformers (Table 1:
VAR-SR on the standard tokenizer, + HIT, + HIT + DPO over the beta x lambda grid) and their
log-likelihood margins during training (the figure). Records go to systems.jsonl,
tokenizers.jsonl and margins.jsonl."""

from __future__ import annotations

import functools
import json
import pathlib
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from tqdm.auto import tqdm

from projects.var_sr import data as sr_data
from projects.var_sr.resize import resize
from projects.var_sr.sr import (
    bicubic_up,
    lr_scales,
    predicted_mask,
    reference_log_probs,
    sequences,
    sr_loss,
    super_resolve,
)
from projects.var_sr.tokenizer import Tokenizer, token_overlap, tokenizer_loss
from projects.var_sr.train import fit
from projects.var_sr.transformer import NextScaleTransformer
from shared.metrics.image import psnr, rgb_to_y, ssim
from shared.results import append_metrics


def _area(x, side):
    return np.asarray(resize(jnp.asarray(x), side, side, "area"))


def quality(pred: np.ndarray, target: np.ndarray, scale: int) -> dict:
    """Mean PSNR/SSIM over images: RGB, and luma with a border crop of `scale` pixels."""
    return {k: float(v) for k, v in _quality(jnp.asarray(pred), jnp.asarray(target), scale).items()}


# One program per image shape: eagerly, every slice of SSIM's filter compiles on its own.
@functools.partial(jax.jit, static_argnames="scale")
def _quality(pred, target, scale):
    y_p, y_t = rgb_to_y(pred), rgb_to_y(target)
    return {"psnr": jnp.mean(psnr(pred, target)),
            "ssim": jnp.mean(ssim(pred, target)),
            "psnr_y": jnp.mean(psnr(y_p, y_t, border=scale)),
            "ssim_y": jnp.mean(ssim(y_p, y_t, border=scale))}  # fmt: skip


def _pairs(cfg, names, hr, key):
    lr = np.asarray(sr_data.degrade(jnp.asarray(hr), key, cfg.data.scale, cfg.data.noise))
    return hr, lr, np.clip(bicubic_up(lr, cfg.data.scale), 0.0, 1.0)


def run_pipeline(cfg, workdir: pathlib.Path) -> dict[str, float]:
    train_names, test_names = cfg.data.train_images, cfg.data.test_images
    if cfg.data.image_dir:
        train_names, test_names = sr_data.folder_images(cfg.data.image_dir)
    test_hr = sr_data.grid_crops(test_names, cfg.data.test_per_image, cfg.data.hr_size)
    _, test_lr, _ = _pairs(cfg, test_names, test_hr, jax.random.key(10**6))  # fixed test noise
    targets = {"x2": _area(test_hr, cfg.data.hr_size // 2), "x4": test_hr}
    files = {n: open(workdir / f"{n}.jsonl", "w") for n in ("systems", "tokenizers", "margins")}
    metrics: dict[str, list[float]] = {}

    def record(kind, rec):
        files[kind].write(json.dumps(rec) + "\n")
        files[kind].flush()
        if kind == "systems":
            append_metrics(workdir, {"system": rec["system"], "seed": str(rec["seed"]),
                                     "psnr_x4": rec["x4"]["psnr"]})  # fmt: skip
            for scale in ("x2", "x4"):
                for m, v in rec[scale].items():
                    metrics.setdefault(f"{rec['system']}/{scale}_{m}", []).append(v)

    grid = [(b, lam) for b in cfg.dpo.betas for lam in cfg.dpo.lams]
    bar = tqdm(total=len(cfg.seeds) * (5 + len(grid)), desc="var_sr")
    for seed in cfg.seeds:
        root = jax.random.key(seed)
        hr = sr_data.random_crops(train_names, cfg.data.train_crops, cfg.data.hr_size, seed)
        hr, lr, up = _pairs(cfg, train_names, hr, jax.random.fold_in(root, 0))
        bic = {s: quality(np.clip(bicubic_up(test_lr, f), 0, 1), targets[s], f)
               for s, f in (("x2", 2), ("x4", 4))}  # fmt: skip
        record("systems", {"system": "bicubic", "seed": seed, **bic})
        bar.update()
        for variant in ("standard", "hit"):
            t0 = time.perf_counter()
            tc = cfg.tokenizer
            tok = Tokenizer(cfg.data.patch_nums, tc.vocab, tc.dim, tc.width,
                            rngs=nnx.Rngs(jax.random.fold_in(root, 1)))  # fmt: skip

            tok_loss = _tokenizer_loss(variant, cfg.tokenizer.overlap)
            fit(tok, tok_loss, {"hr": hr, "lr": lr}, cfg.tokenizer.steps, cfg.tokenizer.batch_size,
                cfg.tokenizer.lr, jax.random.fold_in(root, 2))  # fmt: skip
            record("tokenizers", tokenizer_record(tok, variant, seed, test_hr, test_lr)
                   | {"seconds": time.perf_counter() - t0})  # fmt: skip
            bar.update()
            systems = train_sr(cfg, tok, variant, seed, hr, lr, up, grid, record, bar)
            for name, tf in systems.items():
                out = super_resolve(tok, tf, test_lr)
                record("systems", {"system": name, "seed": seed,
                                   **{s: quality(np.clip(out[s], 0, 1), targets[s], f)
                                      for s, f in (("x2", 2), ("x4", 4))}})  # fmt: skip
    bar.close()
    for f in files.values():
        f.close()
    return {k: float(np.mean(v)) for k, v in metrics.items()}


def tokenizer_record(tok: Tokenizer, variant: str, seed: int, test_hr, test_lr) -> dict:
    """Prefix-decode PSNR at every scale and the token-overlap rate on the test crops."""
    codes, lr_codes = _tokenize(tok, jnp.asarray(test_hr)), _tokenize(tok, jnp.asarray(test_lr))
    psnrs = _prefix_psnr(tok, codes, jnp.asarray(test_hr))
    prefix = {str(p): float(v) for p, v in zip(tok.patch_nums, psnrs)}
    k1 = lr_scales(tok, test_lr.shape[1])
    return {"tokenizer": variant, "seed": seed, "prefix_psnr": prefix,
            "overlap": token_overlap(codes[:k1], lr_codes)}  # fmt: skip


# Module-level: both tokenizers (one structure) share each compilation.
_tokenize = nnx.jit(lambda tok, x: tok.tokenize(x))


@nnx.jit
def _prefix_psnr(tok: Tokenizer, codes, hr) -> list:
    """Mean PSNR of every prefix of scales, decoded at its own resolution, against the images
    area-downsampled to it (one program)."""
    side = tok.patch_nums[-1]
    return [jnp.mean(psnr(tok.decode_prefix(codes[: k + 1], side, p),
                          resize(hr, 4 * p, 4 * p, "area")))
            for k, p in enumerate(tok.patch_nums)]  # fmt: skip


def train_sr(cfg, tok, variant, seed, hr, lr, up, grid, record, bar) -> dict:
    """CE training, then from that state: CE continued (the CE row) and, on HIT, DPO runs."""
    root = jax.random.fold_in(jax.random.key(seed), 3)
    seqs = sequences(tok, jnp.asarray(hr), jnp.asarray(lr), jnp.asarray(up))
    k1 = lr_scales(tok, lr.shape[1])
    ce_loss, dpo_loss = _sr_losses(tuple(tok.patch_nums), k1)
    t = cfg.transformer
    tf = NextScaleTransformer(tok.patch_nums, cfg.tokenizer.vocab, cfg.tokenizer.dim, t.dim,
                              t.depth, t.heads, rngs=nnx.Rngs(root))  # fmt: skip
    base = "var_sr" if variant == "standard" else "hit"

    every = max(1, (t.steps + cfg.dpo.steps) // 40)
    hist = fit(tf, ce_loss, seqs, t.steps, t.batch_size, t.lr, jax.random.fold_in(root, 1),
               every)  # fmt: skip
    ref = nnx.clone(tf)
    out = {}
    runs = [(base, None)] + ([] if variant == "standard" else
                             [(f"hit_dpo_b{b}_l{lam}", {"beta": b, "lam": lam})
                              for b, lam in grid])  # fmt: skip
    refs = {}
    if len(runs) > 1:
        refs = reference_log_probs(ref, seqs, predicted_mask(tok.patch_nums, k1))
    for name, dpo in runs:
        model = nnx.clone(ref)
        loss, data = (ce_loss, seqs) if dpo is None else (dpo_loss, seqs | refs)
        more = fit(model, loss, data, cfg.dpo.steps, t.batch_size, t.lr * 0.5,
                   jax.random.fold_in(root, 2), every, dpo)  # fmt: skip
        for row in hist + [r | {"step": r["step"] + t.steps} for r in more]:
            record("margins", {"system": name, "seed": seed, **row})
        out[name] = model
        bar.update()
    return out


# Loss functions made once per setting, so that fit's compiled step (cached by loss) serves
# every seed and both tokenizers.
@functools.cache
def _tokenizer_loss(variant: str, overlap: float):
    def loss(model, batch, key):
        return tokenizer_loss(model, batch["hr"], batch["lr"], variant, overlap=overlap)

    return loss


@functools.cache
def _sr_losses(patch_nums: tuple[int, ...], k1: int):
    mask = predicted_mask(patch_nums, k1)

    def ce_loss(m, b, k):
        return sr_loss(m, b, k, mask, None)

    def dpo_loss(m, b, k, beta, lam):  # beta, lam traced: one compilation for the whole grid
        return sr_loss(m, b, k, mask, {"beta": beta, "lam": lam, "reference_free": False})

    return ce_loss, dpo_loss
