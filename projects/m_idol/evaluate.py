"""Frozen-feature evaluation of a pretrained teacher (spec sec. 5).

Features: the teacher encoder's output z [n, D] on the whole (uncropped) evaluation images,
L2-normalized before every metric. One fixed 80/20 split, stratified by (modality, fine class),
serves every probe and every variant of a seed.
- probe/modality: logistic regression on all rows, 5 classes;
- probe/<modality>: logistic regression on that modality's rows, its fine classes;
- knn: k = 20 cosine kNN on the joint (modality, fine class) label (5 x 4 = 20 classes);
- silhouette: by modality, cosine metric, every evaluation row;
- erank: effective rank of each modality's centred feature matrix, mean over modalities;
- routing (MoE variants): normalized mutual information between the teacher's expert choice and
  the modality, and the teacher's entropies on these images (collapse check).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from projects.m_idol import losses
from projects.m_idol.generator import MODALITIES
from projects.m_idol.model import Network
from projects.m_idol.train import FAST_COMPILE
from shared.metrics.probes import knn_accuracy, l2_normalize, linear_probe_accuracy
from shared.metrics.representation import effective_rank

KNN_K = 20


def split(modality: np.ndarray, fine: np.ndarray, seed: int, test_fraction: float = 0.2):
    """(train, test) row indices: in every (modality, fine) group a seeded test_fraction."""
    rng = np.random.default_rng([seed, 80_20])
    group = modality.astype(np.int64) * 1000 + fine
    test = []
    for g in np.unique(group):
        rows = rng.permutation(np.flatnonzero(group == g))
        test.append(rows[: int(round(test_fraction * len(rows)))])
    test = np.sort(np.concatenate(test))
    return np.setdiff1d(np.arange(len(group)), test), test


@functools.partial(jax.jit, compiler_options=FAST_COMPILE)  # compiling is most of its cost
def _outputs(net: Network, x: jax.Array, centres: jax.Array, teacher_temp: float):
    z = net.features(x)
    probs = jax.nn.softmax(net.route(z), -1)
    expert = jnp.argmax(probs, -1)
    t = losses.teacher_probs(net.experts(z[None], expert)[0], centres[expert], teacher_temp)
    return z, expert, t


def teacher_outputs(net: Network, x: np.ndarray, centres: np.ndarray, teacher_temp: float,
                    batch: int = 500):  # fmt: skip
    """x [n, s, s, C] -> (z [n, D], expert [n], teacher probabilities [n, K]), in batches."""
    outs = [_outputs(net, jnp.asarray(x[i : i + batch]), jnp.asarray(centres), teacher_temp)
            for i in range(0, len(x), batch)]  # fmt: skip
    return tuple(np.concatenate([np.asarray(o[j]) for o in outs]) for j in range(3))


def representation_metrics(
    z: np.ndarray,
    modality: np.ndarray,
    fine: np.ndarray,
    train: np.ndarray,
    test: np.ndarray,
    cs: tuple[float, ...] = (0.1, 1.0, 10.0, 100.0),
) -> dict[str, float]:
    """The table's and the figure's metrics of features z [n, D]; cs: the probes' C grid."""
    from sklearn.metrics import silhouette_score

    zn = l2_normalize(z)
    out = {"probe_modality": linear_probe_accuracy(zn[train], modality[train], zn[test],
                                                   modality[test], cs)}  # fmt: skip
    for m, name in enumerate(MODALITIES):
        tr, te = train[modality[train] == m], test[modality[test] == m]
        out[f"probe_{name}"] = linear_probe_accuracy(zn[tr], fine[tr], zn[te], fine[te], cs)
    joint = modality.astype(np.int64) * (fine.max() + 1) + fine
    out["knn"] = knn_accuracy(zn[train], joint[train], zn[test], joint[test], KNN_K)
    out["probe_fine_mean"] = float(np.mean([out[f"probe_{n}"] for n in MODALITIES]))
    out["silhouette"] = float(silhouette_score(zn, modality, metric="cosine"))
    eranks = [effective_rank(zn[modality == m]) for m in range(len(MODALITIES))]
    out["erank"] = float(np.mean(eranks))
    out.update({f"erank_{n}": float(e) for n, e in zip(MODALITIES, eranks)})
    return out


def routing_metrics(expert: np.ndarray, t_probs: np.ndarray, modality: np.ndarray,
                    num_experts: int) -> dict[str, float]:  # fmt: skip
    """Expert/modality agreement and the teacher's entropies (per image and of the mean)."""
    from sklearn.metrics import normalized_mutual_info_score

    out = {
        "teacher_entropy": float(_entropy64(t_probs).mean()),
        "teacher_marginal_entropy": float(_entropy64(t_probs.mean(0))),
    }
    if num_experts > 1:
        out["route_nmi"] = float(normalized_mutual_info_score(modality, expert))
        usage = np.bincount(expert, minlength=num_experts) / len(expert)
        out["experts_used"] = float(np.sum(usage > 0.01))
    return out


def _entropy64(p: np.ndarray) -> np.ndarray:
    """Entropy (nats) along the last axis, float64."""
    p = np.asarray(p, np.float64)
    return -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0), axis=-1)


def pca_2d(z: np.ndarray) -> np.ndarray:
    """The L2-normalized features' first two principal-component scores [n, 2]."""
    zn = l2_normalize(z)
    zc = zn - zn.mean(0)
    _, _, vt = np.linalg.svd(zc, full_matrices=False)
    return (zc @ vt[:2].T).astype(np.float32)
