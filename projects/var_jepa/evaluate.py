"""Downstream evaluation as in T-JEPA: heads on frozen flattened embeddings, raw-feature
baselines, and representation diagnostics (collapse statistics, latent uncertainty)."""

from __future__ import annotations

import numpy as np

from shared.data.tabular import Splits
from shared.metrics import accuracy, effective_rank, macro_f1, per_dimension_variance, rmse
from shared.train.supervised import HeadConfig, fit_head, one_hot_features


def task_metrics(splits: Splits, predict, x_test: np.ndarray) -> dict[str, float]:
    """acc and macro-F1 for classification; RMSE in the target's original units for regression."""
    test = splits.test
    out = predict(x_test)
    if test.task == "regression":
        return {"rmse": rmse(test.y * splits.y_std, out * splits.y_std)}
    pred = out.argmax(1)
    return {"acc": accuracy(test.y, pred), "f1": macro_f1(test.y, pred)}


def heads_on_features(
    splits: Splits,
    feats: dict[str, np.ndarray],
    heads: dict[str, HeadConfig],
    seed: int,
    prefix: str,
) -> dict[str, float]:
    """Fits each head on feats['train'], selected on feats['val']; scores it on feats['test']."""
    regression = splits.train.task == "regression"
    num_out = 1 if regression else splits.train.num_classes
    metrics = {}
    for name, head in heads.items():
        predict = fit_head(
            feats["train"],
            splits.train.y,
            feats["val"],
            splits.val.y,
            num_outputs=num_out,
            regression=regression,
            cfg=head,
            seed=seed,
        )
        for k, v in task_metrics(splits, predict, feats["test"]).items():
            metrics[f"{prefix}_{name}/{k}"] = v
            # the same number under the method's own prefix, beside its collapse statistics,
            # so that one table row can show a method's probes and diagnostics (ablation)
            metrics[f"{prefix}/{name}_{k}"] = v
    return metrics


def raw_features(splits: Splits) -> dict[str, np.ndarray]:
    cards = splits.train.cat_cardinalities
    return {
        s: one_hot_features(getattr(splits, s).x_num, getattr(splits, s).x_cat, cards)
        for s in ("train", "val", "test")
    }


def gbdt(splits: Splits, seed: int) -> dict[str, float]:
    """scikit-learn HistGradientBoosting on raw features (categoricals handled natively)."""
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    tr, te = splits.train, splits.test
    x = lambda d: np.concatenate([d.x_num, d.x_cat.astype(np.float32)], axis=1)
    cat_mask = [False] * tr.x_num.shape[1] + [True] * tr.x_cat.shape[1]
    cls = (
        HistGradientBoostingRegressor if tr.task == "regression" else HistGradientBoostingClassifier
    )
    model = cls(categorical_features=cat_mask if any(cat_mask) else None, random_state=seed)
    model.fit(x(tr), tr.y)
    pred = model.predict(x(te))
    if tr.task == "regression":
        return {"raw_gbdt/rmse": rmse(te.y * splits.y_std, pred * splits.y_std)}
    return {"raw_gbdt/acc": accuracy(te.y, pred), "raw_gbdt/f1": macro_f1(te.y, pred)}


def collapse_stats(emb: np.ndarray, prefix: str) -> dict[str, float]:
    """Mean per-dimension variance and effective rank of embeddings [N, F]."""
    return {
        f"{prefix}/dim_var": float(per_dimension_variance(emb).mean()),
        f"{prefix}/eff_rank": effective_rank(emb),
    }


def uncertainty_stats(
    sigma: np.ndarray, noise_features: tuple[int, ...], prefix: str
) -> tuple[dict[str, float], np.ndarray]:
    """sigma: [N, D, H] posterior std -> mean sigma per feature [D], and the mean over the
    noise-injected features against the others (when the data declares noise features)."""
    per_feature = sigma.mean(axis=(0, 2))
    out = {f"{prefix}/mean_sigma": float(per_feature.mean())}
    if noise_features:
        noisy = np.zeros(len(per_feature), bool)
        noisy[list(noise_features)] = True
        out[f"{prefix}/sigma_noise"] = float(per_feature[noisy].mean())
        out[f"{prefix}/sigma_clean"] = float(per_feature[~noisy].mean())
        out[f"{prefix}/sigma_ratio"] = out[f"{prefix}/sigma_noise"] / out[f"{prefix}/sigma_clean"]
    return out, per_feature
