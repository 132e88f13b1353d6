"""Beyond low dimension (Chen & Bruna 2023, App. B.3): the 16-neuron teacher-student and ReLU MLPs.

* The 16-neuron teacher-student (Eq. 18-22, Fig 8): teacher ``y = sum_i ReLU(e_i^T x)`` on the sphere
  S^15, student ``f(x) = sum_i v_i ReLU(w_i^T x)``, loss ``L = 1/m sum_j (f(x_j) - y_j)^2``. The minima
  ``{w_i = k_i e_i, v_i = 1/k_i}`` differ in sharpness; large-lr GD drives every ratio ``||w_i||/v_i`` to the
  flattest one. The flat parameter is ``theta = (vec(W), v)`` with the rows of ``W`` (16, 16) the ``w_i``.
* MLPs (Figs 9-11): the line-search minimum (Def 5) and the 1-D stable-oscillation condition
  ``3 f'''^2 - f'' f''''`` of Thm 1 along the gradient line, plus gradient / top-eigenvector alignment.

The paper counts full-batch GD in epochs (one epoch = one GD step); the arguments are ``steps`` and
``decay_steps``, as everywhere in ``lib``, and the step size (the paper's ``eta``) is ``lr``. The old names
(``epochs``, ``decay_epochs``, ``eta``) still work, deprecated, for one release.
"""

from __future__ import annotations

import numpy as np
import torch
from threadpoolctl import threadpool_limits
from torch.func import grad, vmap

from lib import curvature
from lib.config import (
    check_array,
    check_callable,
    check_finite,
    check_in,
    check_int,
    check_positive,
    check_range,
    check_seed,
    check_shape,
    renamed_arguments,
)
from lib.data.sphere import sample_sphere
from lib.parts.edge_of_stability.one_dimensional import stable_oscillation_condition


def teacher_student_data(m: int, d: int = 16, seed: int = 0):
    """Eq. (18): ``m`` points uniform on S^{d-1} and labels ``y = sum_i ReLU(x_i)``; tensors (m, d) and (m,).
    """
    X = torch.as_tensor(sample_sphere(m, d, seed))
    return X, torch.relu(X).sum(dim=1)


def ts_init(d: int = 16, seed: int = 0, *, k_step: float = 0.0625, noise: float = 0.01):
    """Eq. (22): ``w_i = k_i (e_i + noise * eps_i)``, ``eps_i ~ N(0, I)``, ``k_i = 1 + k_step (i - 1)``, and
    ``v_i = 1 / k_i`` (near the sharp minimum ``w_i = k_i e_i``).

    Returns ``(theta, k)``: shapes (d*d + d,), (d,).
    """
    check_int("d", d, minimum=1)
    check_positive("k_step", k_step, allow_zero=True)
    check_positive("noise", noise, allow_zero=True)
    check_seed("seed", seed)
    g = torch.Generator().manual_seed(int(seed))
    k = 1.0 + k_step * torch.arange(d, dtype=torch.float64)
    eps = torch.randn(d, d, generator=g, dtype=torch.float64)
    W = k[:, None] * (torch.eye(d, dtype=torch.float64) + noise * eps)
    return torch.cat([W.reshape(-1), 1.0 / k]), k


def ts_unpack(theta: torch.Tensor, d: int = 16):
    """Split ``theta`` (d*d + d,) into ``W`` (d, d) (rows w_i) and ``v`` (d,)."""
    check_array("theta", theta)
    check_int("d", d, minimum=1)
    check_shape("theta", theta, (d * d + d,))
    return theta[: d * d].reshape(d, d), theta[d * d:]


def ts_loss(X: torch.Tensor, y: torch.Tensor):
    """Eq. (20) as a function of the flat ``theta``: ``1/m sum_j (sum_i v_i ReLU(w_i^T x_j) - y_j)^2``."""
    check_array("X", X)
    check_array("y", y)
    m, d = X.shape
    check_shape("y", y, (m,))

    def loss(theta):
        W, v = theta[: d * d].reshape(d, d), theta[d * d:]
        return ((torch.relu(X @ W.T) @ v - y) ** 2).mean()

    return loss


def ts_ratios(theta: torch.Tensor, d: int = 16) -> np.ndarray:
    """The ratios ``||w_i|| / v_i`` (shape (d,)), equal to ``k_i^2`` on the minimum set (Eq. 21)."""
    check_array("theta", theta)
    check_int("d", d, minimum=1)
    W, v = ts_unpack(torch.as_tensor(theta), d)
    return (W.norm(dim=1) / v).detach().numpy()


def equal_k_sharpness(X: torch.Tensor, k_values) -> np.ndarray:
    """Fig 8 (e, f): top Hessian eigenvalue at the minimum ``w_i = k e_i, v_i = 1/k`` (all i) for each k.

    At a zero-loss minimum the Hessian of Eq. (20) is the Gauss-Newton matrix ``(2/m) J^T J``, with
    ``J = [P / k, k Q]``, ``P[j, (i, l)] = 1[x_ji > 0] x_jl`` and ``Q[j, i] = ReLU(x_ji)`` independent of k.
    X: (m, d); returns shape (len(k_values),).
    """
    check_array("X", X)
    check_array("k_values", k_values)
    k_values = np.asarray(k_values, float)
    if k_values.ndim != 1 or np.any(k_values <= 0):
        raise ValueError("k_values must be a 1-D array of positive numbers")
    X = torch.as_tensor(X, dtype=torch.float64)
    m, d = X.shape
    P = ((X > 0).to(X.dtype)[:, :, None] * X[:, None, :]).reshape(m, d * d)
    Q = torch.relu(X)
    PP, PQ, QQ = (P.T @ P).numpy(), (P.T @ Q).numpy(), (Q.T @ Q).numpy()
    out = []
    with threadpool_limits(limits=1, user_api="blas"):  # small eigenproblems: threads only add contention
        for k in k_values:
            G = np.block([[PP / k**2, PQ], [PQ.T, k**2 * QQ]]) * (2.0 / m)
            out.append(np.linalg.eigvalsh(G)[-1])
    return np.array(out)


@renamed_arguments(epochs="steps", decay_epochs="decay_steps")
def run_teacher_student(X, y, theta0, *, lr: float, steps: int, decay_to: float | None = None,
                        decay_steps: int = 0, sharp_every: int = 1) -> dict:
    """Full-batch GD on Eq. (20) from ``theta0`` (``lib.train.train``), optionally followed by ``decay_steps``
    steps at ``decay_to``. Records loss and ratios every step, the sharpness every ``sharp_every`` steps (a
    :class:`lib.curvature.SharpnessTracker`: warm-started from the previous eigenvector, certified by its
    residual to a relative ``1e-6``, Lanczos where it cannot certify).

    Returns:
        dict of NumPy arrays: ``step``, ``loss`` and ``lr`` (T,) at every step, ``ratios`` (T, d),
        ``sharp_step`` and ``sharpness`` (the steps where the sharpness was measured, and its values), the final
        ``theta`` and ``diverged`` (:func:`lib.train.train`'s flag).
    """
    check_array("X", X)
    check_array("theta0", theta0)
    from lib.train import piecewise, train

    check_positive("lr", lr)
    check_int("steps", steps, minimum=1)
    check_int("decay_steps", decay_steps, minimum=0)
    check_int("sharp_every", sharp_every, minimum=1)
    d = X.shape[1]
    loss = ts_loss(X, y)
    schedule = None
    total = steps
    if decay_to is not None:
        check_positive("decay_to", decay_to)
    if decay_to is not None and decay_steps:
        schedule = piecewise([steps], [1.0, decay_to / lr])
        total = steps + decay_steps

    tracker = curvature.SharpnessTracker(tol=1e-6)

    def record(theta, step):
        out = {"ratios": ts_ratios(theta.detach(), d)}
        if step % sharp_every == 0 or step == total:
            out["sharpness"] = float(tracker(loss, theta.detach()))
        else:
            out["sharpness"] = float("nan")
        return out

    theta = theta0.detach().clone()
    res = train(theta, loss, lr=lr, steps=total, schedule=schedule, record=record, progress=False)
    h = res.history
    sharp = np.asarray(h["sharpness"], float)
    keep = np.isfinite(sharp)
    return dict(step=h["step"], loss=h["loss"], lr=h["lr"], ratios=np.stack(h["ratios"]),
                sharp_step=h["step"][keep], sharpness=sharp[keep], theta=res.params.detach().clone(),
                diverged=res.diverged)


@renamed_arguments(eta="lr")
def line_search_minimum(loss, theta: torch.Tensor, g: torch.Tensor, lr: float, n_grid: int = 51):
    """Def 5: ``c* = argmin_{c in [0, 1]} loss(theta - c eta g)`` (grid of ``n_grid`` points, vectorised with
    ``vmap``, then refined by a parabola through the best grid point and its neighbours) and
    ``theta_tilde = theta - c* eta g``. theta, g: shape (n,). Returns ``(c_star, theta_tilde)``."""
    check_callable("loss", loss)
    check_array("theta", theta)
    check_array("g", g)
    check_positive("lr", lr)
    check_int("n_grid", n_grid, minimum=3)
    check_shape("g", g, tuple(theta.shape))
    cs = torch.linspace(0.0, 1.0, n_grid, dtype=theta.dtype)
    vals = vmap(lambda c: loss(theta - c * lr * g))(cs)
    i = int(torch.argmin(vals))
    c = float(cs[i])
    if 0 < i < n_grid - 1:
        y0, y1, y2 = (float(vals[i - 1]), float(vals[i]), float(vals[i + 1]))
        den = y0 - 2 * y1 + y2
        if den > 0:
            h = float(cs[1] - cs[0])
            c = c + 0.5 * h * (y0 - y2) / den
    return c, theta - c * lr * g


@renamed_arguments(eta="lr")
def cross_section(loss, theta: torch.Tensor, lr: float, *, eig_method: str = "lanczos",
                  min_sharpness: float = 0.0, tracker: curvature.SharpnessTracker | None = None) -> dict:
    """Statistics of one GD iterate ``theta`` (n,) used in Figs 9-11.

    The line search and the derivatives are skipped (NaN) when the sharpness is below ``min_sharpness``. Along a
    training run pass a ``tracker`` (:class:`lib.curvature.SharpnessTracker`): the top eigenpair is then
    warm-started from the previous call and certified by its residual instead of computed from scratch with
    ``eig_method``.

    Returns:
        dict with ``sharpness`` (top Hessian eigenvalue, lib.curvature), ``cos`` (the absolute cosine between the
        gradient and v1), ``gnorm`` (the gradient's norm), ``c_star`` (Def 5), and the derivatives ``f2``,
        ``f3``, ``f4`` at ``c = 0`` of ``c -> loss(theta_tilde + c g/||g||)`` through the line-search minimum
        along the unit gradient (nested forward-mode AD), with ``cond = 3 f3^2 - f2 f4``.
    """
    check_callable("loss", loss)
    check_array("theta", theta)
    check_finite("min_sharpness", min_sharpness)
    check_in("eig_method", eig_method, ("lanczos", "power", "dense"))
    theta = theta.detach()
    g = grad(loss)(theta)
    if tracker is not None:
        lam, v1 = [tracker(loss, theta)], tracker.vector
    else:
        lam, vec = curvature.hessian_top_eigenpairs(loss, theta, k=1, method=eig_method, tol=1e-6)
        v1 = vec[:, 0]
    cos = float((g @ v1).abs() / (g.norm() * v1.norm() + 1e-300))
    out = dict(sharpness=float(lam[0]), cos=cos, gnorm=float(g.norm()), c_star=float("nan"), f2=float("nan"),
               f3=float("nan"), f4=float("nan"), cond=float("nan"))
    if float(lam[0]) < min_sharpness:
        return out
    c_star, theta_t = line_search_minimum(loss, theta, g, lr)
    u = g / (g.norm() + 1e-300)
    der = curvature.directional_derivatives(loss, theta_t, u, max_order=4).numpy()
    out.update(c_star=c_star, f2=float(der[2]), f3=float(der[3]), f4=float(der[4]),
               cond=float(stable_oscillation_condition(der[2], der[3], der[4])))
    return out


@renamed_arguments(epochs="steps")
def run_mlp_eos(X, y, *, depth: int, lr: float, steps: int, seed: int = 0, width: int = 16,
                stats_every: int = 1, keep_params_every: int = 0, cond_frac: float = 0.9) -> dict:
    """Figs 9-11 on one (depth, lr, seed): full-batch GD (``lib.train.train``) on the MSE of a ``ReLUMLP``
    with scalar output, recording :func:`cross_section` every ``stats_every`` epochs (the line search and the
    derivatives only where the sharpness is at least ``cond_frac * 2 / lr``, and at every kept epoch).

    X: (n, p), y: (n,).

    Returns:
        dict of NumPy arrays: ``step``, ``loss`` and, at the recorded epochs, the :func:`cross_section` keys
        ``sharpness``, ``cos``, ``c_star``, ``f2``, ``f3``, ``f4``, ``cond``; plus ``eos_threshold = 2 / lr``,
        ``diverged``, the run's ``depth``, ``lr`` and ``seed``, and with ``keep_params_every`` the flat
        parameters ``params`` (T', n) every that many epochs (for the cross-section widget) and the ``loss_fn``
        (a closure of the flat parameters).
    """
    check_array("X", X)
    check_array("y", y)
    check_range("cond_frac", cond_frac, 0, 1)
    check_seed("seed", seed)
    from lib.models.mlp import ReLUMLP
    from lib.train import train

    check_int("depth", depth, minimum=2)
    check_positive("lr", lr)
    check_int("steps", steps, minimum=1)
    check_int("stats_every", stats_every, minimum=1)
    check_int("keep_params_every", keep_params_every, minimum=0)
    X = torch.as_tensor(X, dtype=torch.float64)
    y = torch.as_tensor(y, dtype=torch.float64)
    torch.manual_seed(int(seed))
    model = ReLUMLP(X.shape[1], width, depth)
    theta0, loss = curvature.flatten_module(model, lambda call: ((call(X) - y) ** 2).mean())
    keys = ("sharpness", "cos", "c_star", "f2", "f3", "f4", "cond")
    kept = []
    tracker = curvature.SharpnessTracker(tol=1e-6)

    def record(theta, step):
        if keep_params_every and step % keep_params_every == 0:
            kept.append(theta.detach().clone())
        keep = bool(keep_params_every) and step % keep_params_every == 0
        if step % stats_every and not keep:
            return {k: float("nan") for k in keys}
        s = cross_section(loss, theta.detach(), lr, min_sharpness=0.0 if keep else cond_frac * 2.0 / lr,
                          tracker=tracker)
        return {k: s[k] for k in keys}

    theta = theta0.detach().clone()
    res = train(theta, loss, lr=lr, steps=steps, record=record, progress=False)
    h = {k: np.asarray(v) for k, v in res.history.items()}
    out = dict(step=h["step"], loss=h["loss"], eos_threshold=2.0 / lr, diverged=res.diverged, depth=depth,
               lr=lr,
               seed=seed)
    for k in keys:
        out[k] = h[k]
    if keep_params_every:
        out["params"] = torch.stack(kept).numpy()
        out["loss_fn"] = loss
    return out


@renamed_arguments(epochs="steps", decay_epochs="decay_steps")
def teacher_student_experiment(*, m: int, lr: float, steps: int, decay_to: float | None = None,
                               decay_steps: int = 0, sharp_every: int = 1, data_seed: int = 0,
                               init_seed: int = 0) -> dict:
    """Fig 8 run from scratch (data on S^15 with ``data_seed``, Eq. 22 init with ``init_seed``); see
    :func:`run_teacher_student`.

    Returns:
        the dict of :func:`run_teacher_student`, with ``theta`` (the final parameters) as a NumPy array.
    """
    check_seed("data_seed", data_seed)
    check_seed("init_seed", init_seed)
    torch.set_num_threads(1)
    X, y = teacher_student_data(m, 16, data_seed)
    theta0, _ = ts_init(16, init_seed)
    out = run_teacher_student(X, y, theta0, lr=lr, steps=steps, decay_to=decay_to,
                              decay_steps=decay_steps,
                              sharp_every=sharp_every)
    out["theta"] = out["theta"].numpy()
    return out


@renamed_arguments(epochs="steps")
def mlp_eos_experiment(*, depth: int, lr: float, steps: int, seed: int = 0, stats_every: int = 1,
                       keep_params_every: int = 0, std_min: float = 3.0, cond_frac: float = 0.9) -> dict:
    """Figs 9-11 run on the digits 0-vs-1 stand-in (``lib.data.digits.digits_binary(std_min=std_min)``); see
    :func:`run_mlp_eos`. Returns its dict without the loss closure (picklable)."""
    from lib.data.digits import digits_binary

    torch.set_num_threads(1)
    X, y, _ = digits_binary(std_min=std_min)
    out = run_mlp_eos(X, y, depth=depth, lr=lr, steps=steps, seed=seed, stats_every=stats_every,
                      keep_params_every=keep_params_every, cond_frac=cond_frac)
    out.pop("loss_fn", None)
    return out


def eos_mask(sharpness, lr: float, frac: float = 1.0) -> np.ndarray:
    """Epochs "at the edge of stability": recorded sharpness at least ``frac * 2 / lr`` (NaN = not recorded).
    """
    check_positive("lr", lr)
    check_positive("frac", frac)
    s = check_array("sharpness", sharpness, finite="some")  # NaN: a diverged run, never at the EoS
    return np.isfinite(s) & (s >= frac * 2.0 / lr)
