"""Times the official T-JEPA pretraining step (PyTorch), for benchmark.py's same-run comparison.

    PYTHONPATH=DIR python projects/var_jepa/benchmark_official.py [--configs small] [--steps 30]

DIR is a local checkout of the official code (jose-melo/t-jepa), on the module path so that its
`src` package imports; nothing of it is shipped here (`benchmark.py --official DIR` sets the path
for its subprocesses). This script imports its modules (`src.encoder.Encoder`,
`src.predictors.Predictors`, `src.mask.MaskCollator`, `src.utils.optim_utils.init_optim`) and
builds them as its `run.py` does with the settings of `scripts/launch_tjepa.sh` (CONFIGS in
benchmark.py: same features, widths, depths, dropout, batch, mask shares). The timed step is
the body of the official `Trainer.train` loop (`src/train.py`) without its logging: target
forward under no_grad, context encoder, predictor, MSE, backward (with the encoder's
gradient-clamping hooks), AdamW step, zero_grad,
EMA over all parameter pairs, LR and weight-decay schedulers. The official `MaskCollator` call
(mask sizes and per-row index sets, the DataLoader's collate_fn with data_loader_nprocs=0) is
timed apart as `collate_s`: a user's step pays both; `step_s` alone is the stronger baseline.

Needs torch, scikit-learn, scipy and tabulate (`pip install -e .[bench]`). Prints one JSON line
per config in the format of `benchmark.py --json` ("impl": "official").
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from argparse import Namespace

import numpy as np

from shared.cpu_share import CpuShare

# scripts/launch_tjepa.sh, and src/configs.py defaults for what the script does not set
_SCRIPT = dict(
    exp_lr=0.0003658682841082736,
    exp_start_lr=0.0,
    exp_final_lr=0.0,
    exp_warmup=10,
    exp_weight_decay=0.0,
    exp_final_weight_decay=0.0,
    exp_train_total_epochs=300,
    exp_ipe_scale=1.0,
    exp_gradient_clipping=1.0,
    init_type="trunc_normal",
    mask_min_ctx_share=0.13628349247854785,
    mask_max_ctx_share=0.36819012681604135,
    mask_min_trgt_share=0.1556321308543076,
    mask_max_trgt_share=0.6222278244105446,
    mask_num_preds=4,
    mask_num_encs=1,
    mask_allow_overlap=False,
    model_dim_hidden=64,
    model_dim_feedforward=64,
    model_num_heads=2,
    model_dropout_prob=0.0018542257314766695,
    model_layer_norm_eps=1e-5,
    model_act_func="relu",
    model_feature_type_embedding=False,
    model_feature_index_embedding=False,
    model_ema_start=0.996,
    model_ema_end=1.0,
    n_cls_tokens=1,
    pred_embed_dim=16,
    pred_num_heads=4,
    pred_p_dropout=0.0019307456645321797,
    pred_layer_norm_eps=1e-5,
    pred_activation="relu",
    pred_dim_feedforward=256,
)
# name: (features, encoder layers, predictor layers, batch); must agree with benchmark.CONFIGS
CONFIGS = {"small": (14, 4, 4, 256), "jannis": (54, 16, 16, 512)}


def build(name: str, seed: int):
    """The official modules, optimizer, schedulers and mask collator for config `name`."""
    import copy

    import torch
    from src.encoder import Encoder
    from src.mask import MaskCollator
    from src.predictors import Predictors
    from src.utils.optim_utils import init_optim
    from src.utils.train_utils import init_weights

    d, enc_layers, pred_layers, batch = CONFIGS[name]
    args = Namespace(**_SCRIPT, model_num_layers=enc_layers, pred_num_layers=pred_layers)
    torch.manual_seed(seed)
    np.random.seed(seed)
    encoder = Encoder(
        idx_num_features=list(range(d)),
        cardinalities=[],
        hidden_dim=args.model_dim_hidden,
        num_layers=args.model_num_layers,
        num_heads=args.model_num_heads,
        p_dropout=args.model_dropout_prob,
        layer_norm_eps=args.model_layer_norm_eps,
        gradient_clipping=args.exp_gradient_clipping,
        feature_type_embedding=args.model_feature_type_embedding,
        feature_index_embedding=args.model_feature_index_embedding,
        dim_feedforward=args.model_dim_feedforward,
        device=torch.device("cpu"),
        args=args,
    )
    predictors = Predictors(
        pred_type="transformer",
        hidden_dim=args.model_dim_hidden,
        pred_embed_dim=args.pred_embed_dim,
        num_features=d,
        num_layers=args.pred_num_layers,
        num_heads=args.pred_num_heads,
        p_dropout=args.pred_p_dropout,
        layer_norm_eps=args.pred_layer_norm_eps,
        activation=args.pred_activation,
        device=torch.device("cpu"),
        cardinalities=[],
        pred_dim_feedforward=args.pred_dim_feedforward,
    )
    for m in encoder.modules():
        init_weights(m, init_type=args.init_type)
    target = copy.deepcopy(encoder)
    rows = 4 * batch
    ipe = math.ceil(rows / batch)
    optimizer, scheduler, wd_scheduler = init_optim(
        encoder,
        predictors,
        ipe,
        args.exp_start_lr,
        args.exp_lr,
        args.exp_warmup,
        args.exp_train_total_epochs,
        args.exp_weight_decay,
        args.exp_final_weight_decay,
        args.exp_final_lr,
        args.exp_ipe_scale,
        True,
        True,
    )
    total = int(ipe * args.exp_train_total_epochs * args.exp_ipe_scale)
    momentum = (
        args.model_ema_start + i * (args.model_ema_end - args.model_ema_start) / total
        for i in range(total + 1)
    )
    collator = MaskCollator(
        args.mask_allow_overlap,
        args.mask_min_ctx_share,
        args.mask_max_ctx_share,
        args.mask_min_trgt_share,
        args.mask_max_trgt_share,
        args.mask_num_preds,
        args.mask_num_encs,
        d,
        [],
    )
    data = torch.from_numpy(np.random.default_rng(seed).standard_normal((rows, d), np.float32))
    parts = (encoder, target, predictors, optimizer, scheduler, wd_scheduler, momentum)
    return parts, collator, data, batch


def measure(name: str, steps: int, warmup: int, seed: int = 0) -> dict:
    import contextlib

    import torch

    with contextlib.redirect_stdout(sys.stderr):  # the official modules print their settings
        parts, collator, data, batch = build(name, seed)
    from src.utils.train_utils import apply_masks_from_idx

    encoder, target, predictors, optimizer, scheduler, wd_scheduler, momentum = parts
    loss_fn = torch.nn.MSELoss()
    gen = np.random.default_rng(seed)
    cpu = CpuShare()
    recs = []
    for i in range(warmup + steps):
        rows = data[gen.permutation(len(data))[:batch]]
        cpu.start()
        t0 = time.perf_counter()
        x, masks_enc, masks_pred = collator([(r,) for r in rows])
        t1 = time.perf_counter()
        # the loop body of src/train.py (Trainer.train), logging left out
        with torch.no_grad():
            h = apply_masks_from_idx(target(x), masks_pred)
        z = predictors(encoder(x, masks_enc), masks_enc, masks_pred)
        loss = loss_fn(z, h)
        loss.backward()
        optimizer.step()
        assert not np.isnan(loss.item()), "loss is NaN"
        optimizer.zero_grad()
        with torch.no_grad():
            m = next(momentum)
            for p_q, p_k in zip(encoder.parameters(), target.parameters()):
                p_k.data.mul_(m).add_((1.0 - m) * p_q.detach().data)
        scheduler.step()
        wd_scheduler.step()
        t2 = time.perf_counter()
        share = cpu.stop()
        if i >= warmup:
            recs.append(
                {
                    "step_s": t2 - t1,
                    "collate_s": t1 - t0,
                    "other_cpu": share,
                    "n_ctx": int(masks_enc[0].shape[1]),
                    "n_trgt": int(masks_pred[0].shape[1]),
                    "loss": float(loss.item()),
                }
            )
    return {
        "impl": "official",
        "config": name,
        "batch": batch,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "steps": recs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3, help="untimed first steps")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for name in args.configs:
        res = measure(name, args.steps, args.warmup, args.seed)
        print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
