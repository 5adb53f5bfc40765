"""Every estimator on one batch of [R, n] trajectories, with K = 2 cross-fitting.

Cross-fitting (both directions, averaged): everything fitted on fold f (Q-hat by FQE or MRDR,
the learned potential's coefficients, the hybrid's lambda, fitted with f's in-sample C_Q) is
applied to the trajectories of the other fold e only. Then each fitted
quantity is independent of the trajectories it is applied to, and since every CV has mean zero
given the fit, the cross-fitted estimators are exactly unbiased. The in-sample hybrid (lambda
fitted on the trajectories it evaluates) is kept as an ablation: it has an O(1/n) bias.
"""

from __future__ import annotations

import numpy as np

from projects.shaped_ope import estimators as est
from projects.shaped_ope import q_models
from projects.shaped_ope.problems import Problem

ESTIMATORS = (
    "IS",
    "WIS",
    "PDIS",
    "WPDIS",
    "DR",
    "MRDR",
    "Shaped-heur",
    "Shaped-learned",
    "Hybrid",
    "Hybrid-insample",
)


def _take(batch: dict, idx: slice) -> dict:
    return {k: v[:, idx] for k, v in batch.items()}


def _q_fit(problem: Problem, batch: dict, kind: str, method: str):
    """A fitted Q-hat (FQE or MRDR) on `batch` -> a function batch -> (q_sa, v_s) [R, n, H]."""
    g, h = problem.gamma, problem.horizon
    a, r, alive, rho = batch["a"], batch["r"], batch["alive"], batch["rho"]
    if problem.tabular is not None and kind == "tabular":
        pi, mu, s = problem.pi, problem.mu, batch["s"]
        if method == "fqe":
            q = q_models.tabular_fqe(s, a, r, alive, pi, g)
        else:
            q = q_models.tabular_mrdr(s, a, r, rho, alive, pi, mu, g)
        return lambda b: q_models.tabular_values(q, pi, b["s"], b["a"], b["alive"])
    psi = problem.q_features(batch, kind)
    if problem.tabular is not None:  # linear Q on a tabular problem: state-wise policies
        pi_obs, mu_obs = problem.pi[batch["s"]], problem.mu[batch["s"]]
    else:
        pi_obs, mu_obs = batch["pi_obs"], batch["mu_obs"]
    if method == "fqe":
        theta = q_models.linear_fqe(psi, a, r, alive, pi_obs, g, sweeps=h)
    else:
        theta = q_models.linear_mrdr(psi, a, r, rho, alive, pi_obs, mu_obs, g)

    def values(b):
        pi_b = problem.pi[b["s"]] if problem.tabular is not None else b["pi_obs"]
        return q_models.linear_values(theta, problem.q_features(b, kind), b["a"], b["alive"], pi_b)

    return values


def exact_q_values(problem: Problem, batch: dict) -> tuple[np.ndarray, np.ndarray]:
    """(Q^pi_{H-t}(s_t, a_t), V^pi_{H-t}(s_t)) [R, n, H] from the exact DP (tabular only)."""
    q, pi = problem.q_exact, problem.pi  # [H, S, A]
    t = np.arange(problem.horizon)
    s, a = batch["s"][..., :-1], batch["a"]
    q_sa = q[t, s, a]
    v_s = (q[t, s] * pi[s]).sum(-1)
    return q_sa * batch["alive"], v_s * batch["alive"]


def estimate_all(problem: Problem, batch: dict, q_kind: str) -> dict[str, np.ndarray]:
    """Estimates [R] of every estimator in ESTIMATORS (plus 'DR-exact' for tabular problems)
    'max_weight' [R] (the largest w_t of each repetition; nothing is clipped) and
    'mean_final_weight' [R] (mean of w_{H-1}; its expectation is 1)."""
    g = problem.gamma
    rho, r = batch["rho"], batch["r"]
    n = rho.shape[1]
    if n % 2:
        raise ValueError(f"n = {n} must be even for 2-fold cross-fitting")
    y = est.pdis_terms(rho, r, g)  # [R, n]
    out = {
        "IS": est.is_terms(rho, r, g).mean(-1),
        "WIS": est.wis(rho, r, g),
        "PDIS": y.mean(-1),
        "WPDIS": est.wpdis(rho, r, g),
        "Shaped-heur": est.shaped_terms(rho, r, problem.heuristic(batch), g).mean(-1),
        "max_weight": est.weights(rho)[0].max(axis=(-1, -2)),
        "mean_final_weight": np.prod(rho, axis=-1).mean(-1),  # E = 1: small = heavy tails
    }
    z = est.shaping_cv_terms(rho, problem.pot_features(batch), g)  # [R, n, k]
    folds = (slice(0, n // 2), slice(n // 2, n))
    parts = {k: [] for k in ("DR", "MRDR", "Shaped-learned", "Hybrid")}
    cq_crossfit = np.zeros_like(y)
    for f, e in (folds, folds[::-1]):
        bf, be = _take(batch, f), _take(batch, e)
        fqe = _q_fit(problem, bf, q_kind, "fqe")
        mrdr = _q_fit(problem, bf, q_kind, "mrdr")
        cq_f = est.q_cv_terms(bf["rho"], *fqe(bf), g)  # in-sample on the fitting fold
        cq_e = est.q_cv_terms(be["rho"], *fqe(be), g)
        cq_crossfit[:, e] = cq_e
        parts["DR"].append((y[:, e] - cq_e).mean(-1))
        parts["MRDR"].append((y[:, e] - est.q_cv_terms(be["rho"], *mrdr(be), g)).mean(-1))
        lam_z = est.ols_slopes(y[:, f], z[:, f])
        parts["Shaped-learned"].append(est.cv_estimate(y[:, e], z[:, e], lam_z))
        # lambda is fitted with fold f's in-sample C_Q. Two nested alternatives (C_Q held out
        # inside f; Q-hat and lambda on disjoint halves of f) were tried and blew up on the
        # heavy-tailed weights at small n (README, "Alternatives tried").
        x_f = np.concatenate([z[:, f], cq_f[..., None]], -1)
        x_e = np.concatenate([z[:, e], cq_e[..., None]], -1)
        parts["Hybrid"].append(est.cv_estimate(y[:, e], x_e, est.ols_slopes(y[:, f], x_f)))
    out.update({k: np.mean(v, axis=0) for k, v in parts.items()})
    # Ablation: lambda fitted in-sample on all n (C_Q itself stays cross-fitted).
    x_all = np.concatenate([z, cq_crossfit[..., None]], -1)
    out["Hybrid-insample"] = est.cv_estimate(y, x_all, est.ols_slopes(y, x_all))
    if problem.tabular is not None:
        out["DR-exact"] = est.dr_terms(rho, r, *exact_q_values(problem, batch), g).mean(-1)
    return out
