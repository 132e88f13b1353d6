"""The Hessian toolkit: Hessian-vector products, top eigenpairs, sharpness tracking and directional derivatives.

Every function takes ``loss``, a callable mapping a flat 1-D parameter tensor ``theta`` of shape ``(n,)`` to a
scalar, and ``theta`` itself. :func:`flatten_module` turns an ``nn.Module`` and a loss of its outputs into that
form.

Hessian-vector products come from a :class:`HessianOperator`, which picks one of two engines:

* ``"graph"``: one gradient with ``create_graph=True``, then ``autograd.grad(g, theta, v, retain_graph=True)``
  per product (a backward pass through the kept gradient graph; the forward pass and the first backward pass
  are paid once per point);
* ``"forward"``: forward-over-reverse, ``torch.func.jvp`` of ``torch.func.grad`` (nothing is kept between
  products).

``engine="auto"`` takes the graph: measured with one torch thread (``benchmarks/bench_sharpness.py``) on the
913-parameter MLP of chapter I.4, a single product with its graph costs 2.5-7x less than ``jvp(grad)`` and a
further product on the kept graph about 0.5 ms against 3.5 ms; forward-over-reverse won on none of the
benchmark's models (MLPs, teacher-student, transformer). ``"auto"`` falls back to ``"forward"`` when the loss
cannot be differentiated twice by autograd.

Eigenpairs use Lanczos (for the top one a Lanczos that tests its residual after every product, otherwise
``scipy.sparse.linalg.eigsh`` on a ``LinearOperator`` with a small Krylov basis ``ncv``), power iteration, or the
dense Hessian. :class:`SharpnessTracker` follows the top eigenvalue along a training run: warm-started from the
previous eigenvectors and certified by its residual, with Lanczos as the fallback.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch.func import functional_call, grad, jvp

from .config import check_callable, check_in, check_instance, check_int, check_positive, check_range, check_seed

METHODS = ("lanczos", "power", "dense")
ENGINES = ("auto", "graph", "forward")


def _check(loss, theta):
    if not callable(loss):
        raise ValueError("loss must be a callable mapping a flat parameter tensor to a scalar")
    if not isinstance(theta, torch.Tensor) or theta.ndim != 1 or theta.numel() == 0:
        shape = tuple(theta.shape) if isinstance(theta, torch.Tensor) else type(theta).__name__
        raise ValueError(f"theta must be a non-empty 1-D tensor, got {shape}")
    if not torch.isfinite(theta).all():
        raise ValueError("theta must hold finite numbers only (found NaN or inf)")


class HessianOperator:
    """``v -> H(theta) v`` at one point ``theta`` (shape ``(n,)``), for many products.

    ``engine``: ``"graph"`` (gradient graph kept across products), ``"forward"`` (``jvp`` of ``grad``) or
    ``"auto"`` (the graph, falling back to forward-over-reverse if double backward fails). ``products`` counts
    the products taken. The graph engine keeps the activations of one forward and backward pass alive for the
    operator's lifetime.
    """

    def __init__(self, loss: Callable, theta: torch.Tensor, engine: str = "auto"):
        _check(loss, theta)
        check_in("engine", engine, ENGINES)
        self.loss, self.theta = loss, theta.detach()
        self.n, self.dtype = theta.numel(), theta.dtype
        self.products = 0
        self.engine = engine
        self._g = self._th = self._fwd = self._grad = None
        self.loss_value = None  # the loss at ``theta`` (a 0-d tensor), a by-product of the graph engine
        if engine in ("auto", "graph"):
            try:
                self._build_graph()
                self.engine = "graph"
            except RuntimeError:
                if engine == "graph":
                    raise
                self.engine = "forward"

    def _build_graph(self):
        th = self.theta.clone().requires_grad_(True)
        with torch.enable_grad():
            value = self.loss(th)
            if not isinstance(value, torch.Tensor) or value.numel() != 1:
                raise ValueError("loss must return a scalar tensor")
            (g,) = torch.autograd.grad(value, th, create_graph=True, allow_unused=True)
        self._th, self._g = th, g
        self._grad = torch.zeros_like(self.theta) if g is None else g.detach()
        self.loss_value = value.detach()

    @property
    def gradient(self) -> torch.Tensor:
        """``grad L(theta)`` (shape ``(n,)``): a by-product of the graph engine, one extra pass otherwise."""
        if self._grad is None:
            self._grad = grad(self.loss)(self.theta).detach()
        return self._grad

    def _graph_product(self, v):
        if self._g is None or not self._g.requires_grad:  # gradient constant in theta: H = 0
            return torch.zeros_like(v)
        with torch.enable_grad():
            (hv,) = torch.autograd.grad(self._g, self._th, v, retain_graph=True, allow_unused=True)
        return torch.zeros_like(v) if hv is None else hv.detach()

    def _forward_product(self, v):
        if self._fwd is None:
            self._fwd = grad(self.loss)
        return jvp(self._fwd, (self.theta,), (v,))[1].detach()

    def __call__(self, v: torch.Tensor) -> torch.Tensor:
        """``H v`` for ``v`` of shape ``(n,)``."""
        v = v.detach().to(self.dtype)
        self.products += 1
        if self.engine == "graph":
            try:
                return self._graph_product(v)
            except RuntimeError:  # no double-backward formula for some op: go forward-over-reverse
                if self.products > 1:
                    raise
                self.engine, self._g, self._th = "forward", None, None
        return self._forward_product(v)

    def numpy_matvec(self, x) -> np.ndarray:
        """The product on NumPy vectors (float64 out), for ``scipy.sparse.linalg.LinearOperator``."""
        x = torch.from_numpy(np.ascontiguousarray(np.asarray(x, dtype=np.float64).ravel()))
        return self(x).numpy().astype(np.float64, copy=False)

    def linear_operator(self):
        from scipy.sparse.linalg import LinearOperator

        return LinearOperator((self.n, self.n), matvec=self.numpy_matvec, dtype=np.float64)


def hvp(loss: Callable, theta: torch.Tensor, v: torch.Tensor, *, engine: str = "auto") -> torch.Tensor:
    """Hessian-vector product ``H(theta) v`` (shape ``(n,)``); ``engine`` as in :class:`HessianOperator`. For
    several products at one point build the operator once."""
    _check(loss, theta)
    if not isinstance(v, torch.Tensor) or v.shape != theta.shape:
        raise ValueError(f"v must be a tensor of shape {tuple(theta.shape)}")
    if not torch.isfinite(v).all():
        raise ValueError("v must hold finite numbers only (found NaN or inf)")
    return HessianOperator(loss, theta, engine)(v)


def hessian(loss: Callable, theta: torch.Tensor) -> torch.Tensor:
    """Dense Hessian ``(n, n)`` by ``torch.func.hessian`` (for small models only)."""
    _check(loss, theta)
    return torch.func.hessian(loss)(theta.detach())


#: ``default_ncv`` = ``k + NCV_EXTRA`` (at least ``2k + 1``)
NCV_EXTRA = 7


def default_ncv(k: int, n: int) -> int:
    """Krylov basis size for ``eigsh``: ``max(2k + 1, k + NCV_EXTRA)``, at most ``n``. ARPACK builds the whole
    basis before its first convergence test, so for ``k = 1`` scipy's default (20) costs about 21 products where
    ``NCV_EXTRA`` + 1 reach the same eigenvalue to round-off on the benchmark's models."""
    check_int("k", k, minimum=1)
    check_int("n", n, minimum=1)
    return min(n, max(2 * k + 1, k + NCV_EXTRA))


def _sign_fix(vecs):
    idx = vecs.abs().argmax(dim=0)
    signs = torch.sign(vecs[idx, torch.arange(vecs.shape[1])])
    signs[signs == 0] = 1
    return vecs * signs


def _power(matvec, n, k, tol, maxiter, rng, dtype):
    """Top-``k`` eigenpairs (largest magnitude) by deflated power iteration."""
    vals, vecs = [], []
    for _ in range(k):
        v = torch.as_tensor(rng.standard_normal(n), dtype=dtype)
        v /= v.norm()
        lam = 0.0
        for _it in range(maxiter):
            w = matvec(v)
            for lv, u in zip(vals, vecs):
                w = w - lv * (u @ v) * u
            new = float(v @ w)
            nrm = w.norm()
            if nrm == 0:
                break
            v = w / nrm
            if abs(new - lam) <= tol * max(1.0, abs(new)):
                lam = new
                break
            lam = new
        vals.append(lam)
        vecs.append(v)
    order = np.argsort(vals)[::-1]
    return (torch.tensor([vals[i] for i in order], dtype=dtype),
            torch.stack([vecs[i] for i in order], dim=1))


def _lanczos(op, k, tol, maxiter, ncv, v0):
    from scipy.sparse.linalg import eigsh

    n = op.n
    ncv = default_ncv(k, n) if ncv is None else min(ncv, n)
    w, U = eigsh(op.linear_operator(), k=k, which="LA", tol=tol, maxiter=maxiter * n, ncv=ncv, v0=v0)
    order = np.argsort(w)[::-1]
    return (torch.as_tensor(w[order].copy(), dtype=op.dtype), torch.as_tensor(U[:, order].copy(), dtype=op.dtype))


#: largest Krylov basis of the k = 1 Lanczos before it hands over to ARPACK (memory: 2 x KRYLOV_MAX x n floats)
KRYLOV_MAX = 40


def _lanczos_top(op, v0, tol, max_dim=KRYLOV_MAX):
    """Top eigenpair by Lanczos with full reorthogonalisation, tested after every product: Rayleigh-Ritz on the
    Krylov basis, extended by the residual of the top Ritz pair (which spans the next Krylov direction) until
    ``||H u - lam u|| <= tol |lam|``. Unlike ARPACK, which builds its whole basis (``ncv`` products) before the
    first test, it stops at the first product that certifies the value. Returns ``(lam, u, res)`` (NumPy) or
    ``None`` when ``max_dim`` products do not suffice."""
    n = op.n
    m_max = min(n, max_dim)
    V, HV, T = np.empty((m_max, n)), np.empty((m_max, n)), np.empty((m_max, m_max))
    w = np.asarray(v0, dtype=np.float64) / np.linalg.norm(v0)
    m = 0
    while True:
        V[m] = w
        HV[m] = op(torch.from_numpy(w)).double().numpy()
        T[m, : m + 1] = T[: m + 1, m] = V[: m + 1] @ HV[m]
        m += 1
        theta, Y = np.linalg.eigh(T[:m, :m])
        y = Y[:, -1]
        u = y @ V[:m]
        r = y @ HV[:m] - theta[-1] * u
        res = float(np.linalg.norm(r))
        if res <= tol * abs(theta[-1]) or m == n:
            return float(theta[-1]), u, res
        if m >= m_max:
            return None
        w = _orthonormalize(r, V[:m])
        if w is None:  # invariant subspace: the Ritz pair is exact
            return float(theta[-1]), u, res


def top_eigenpairs(op: HessianOperator, k: int = 1, *, method: str = "lanczos", tol: float = 1e-8,
                   maxiter: int = 1000, seed: int = 0, ncv: int | None = None,
                   v0: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`hessian_top_eigenpairs` on a prepared :class:`HessianOperator` (its ``products`` then counts the
    products the solver took)."""
    if not isinstance(op, HessianOperator):
        raise ValueError("op must be a HessianOperator")
    n = op.n
    check_int("k", k, minimum=1, maximum=n)
    check_in("method", method, METHODS)
    check_positive("tol", tol)
    check_int("maxiter", maxiter, minimum=1)
    check_seed("seed", seed)
    if ncv is not None:
        check_int("ncv", ncv, minimum=k + 1)
    if v0 is not None and (not isinstance(v0, torch.Tensor) or v0.shape != (n,)):
        raise ValueError(f"v0 must be a tensor of shape ({n},)")
    if method == "dense" or (method == "lanczos" and n <= k + 1):
        evals, evecs = torch.linalg.eigh(hessian(op.loss, op.theta))
        vals, vecs = evals.flip(0)[:k], evecs.flip(1)[:, :k]
    elif method == "lanczos":
        start = (v0.detach().double().numpy() if v0 is not None
                 else np.random.default_rng(seed).standard_normal(n))
        top = _lanczos_top(op, start, tol) if k == 1 and ncv is None else None
        if top is not None:
            vals = torch.tensor([top[0]], dtype=op.dtype)
            vecs = torch.from_numpy(top[1] / np.linalg.norm(top[1])).to(op.dtype)[:, None]
        else:
            vals, vecs = _lanczos(op, k, tol, maxiter, ncv, start)
    else:
        vals, vecs = _power(op, n, k, tol, maxiter, np.random.default_rng(seed), op.dtype)
    return vals, _sign_fix(vecs)


def hessian_top_eigenpairs(
    loss: Callable,
    theta: torch.Tensor,
    k: int = 1,
    *,
    method: str = "lanczos",
    tol: float = 1e-8,
    maxiter: int = 1000,
    seed: int = 0,
    engine: str = "auto",
    ncv: int | None = None,
    v0: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-``k`` Hessian eigenvalues (descending, shape ``(k,)``) and eigenvectors (columns, shape ``(n, k)``).

    ``"lanczos"`` runs Lanczos on Hessian-vector products from ``v0`` (default a seeded Gaussian vector) until
    the residuals certify the values, ``||H u - lam u|| <= tol |lam|``: for ``k = 1`` (and no ``ncv``) a
    Lanczos with full reorthogonalisation that tests after every product (at most ``KRYLOV_MAX`` of them), otherwise
    (or if that does not converge) ``scipy.sparse.linalg.eigsh(which="LA", tol=tol, ncv=ncv)`` (``ncv`` defaults
    to :func:`default_ncv`);
    ``"power"`` deflated power iteration (finds the largest-magnitude eigenvalues, which are the top ones near a
    minimum), ``"dense"`` builds the Hessian and calls ``torch.linalg.eigh``. ``engine`` picks the product (see
    :class:`HessianOperator`). Eigenvectors have unit norm; their sign is fixed so that the largest-magnitude
    entry is positive. To follow the top eigenvalue along a training run use :class:`SharpnessTracker`.
    """
    _check(loss, theta)
    check_int("k", k, minimum=1, maximum=theta.numel())
    check_in("method", method, METHODS)
    check_in("engine", engine, ENGINES)
    check_positive("tol", tol)
    check_int("maxiter", maxiter, minimum=1)
    if method == "dense":  # no products needed
        evals, evecs = torch.linalg.eigh(hessian(loss, theta))
        return evals.flip(0)[:k], _sign_fix(evecs.flip(1)[:, :k])
    op = HessianOperator(loss, theta, engine)
    return top_eigenpairs(op, k, method=method, tol=tol, maxiter=maxiter, seed=seed, ncv=ncv, v0=v0)


def _orthonormalize(w, V):
    """``w`` (NumPy, shape ``(n,)``) made orthogonal to the orthonormal rows of ``V`` (Gram-Schmidt, repeated
    once when it cancels much) and normalised; ``None`` if nothing is left."""
    norm0 = np.linalg.norm(w)
    nrm = norm0
    for _ in range(2):
        if len(V):
            w = w - (V @ w) @ V
        prev, nrm = nrm, np.linalg.norm(w)
        if nrm > 0.5 * prev:
            break
    if nrm <= 1e-10 * norm0 or nrm == 0:
        return None
    return w / nrm


class SharpnessTracker:
    """The top Hessian eigenvalue along a training run, warm-started and certified by its residual.

    ``tracker(loss, theta)`` returns the top eigenvalue at ``theta``. After the first call it starts from the
    previous top eigenvector ``v1`` (and the previous second one ``v2`` while the second eigenvalue is within a
    factor ``watch`` of the top) and runs Rayleigh-Ritz on their span, expanding the basis by the residual of the
    top Ritz pair ``(lam, u)`` (a Lanczos/Davidson iteration, one Hessian-vector product per expansion) until
    the residual certifies the value::

        ||H u - lam u|| <= tol * |lam|

    which bounds the eigenvalue error by ``tol^2 lam^2 / gap`` (``gap`` to the next eigenvalue). While ``v2`` is
    watched, the second Ritz pair ``(lam2, u2)`` must also reach a residual ``res2 <= (1 - gap) |lam| / 2``
    (enough to place an eigenvalue near ``lam2``, and to keep ``u2`` on the second eigenvector from call to
    call). It falls back to Lanczos (``eigsh``, ``k = 2``, from a random start) at the first call, when
    ``max_iter`` expansions do not certify the value, when the second eigenvalue comes close
    (``lam - lam2 - res2 <= (1 - gap) |lam|``; the tracker then stays on Lanczos until the top two separate
    again), and every ``refresh_every`` calls (0: never). The watched second vector is what lets the tracker see
    a second eigenvalue approach and cross the first; an eigenvalue rising from further down the spectrum, or
    from below ``watch`` times the top, within one call is only seen by the fallbacks and refreshes.

    After each call: ``value``, ``vector`` (unit norm, shape ``(n,)``), ``second`` (the second Ritz value),
    ``residual`` (``||H u - lam u||``), ``method`` (``"warm"`` or ``"lanczos"``), ``products`` (Hessian-vector
    products of that call) and ``gradient`` (the loss gradient at ``theta``, a by-product); ``total_products``,
    ``calls`` and ``fallbacks`` accumulate, and ``history`` keeps one dict per call.

    ``period``: the warm start is the top eigenvector of ``period`` calls back (default 2: GD at the edge of
    stability oscillates with period 2 along the top eigenvector, so the parameters two steps back are closer than
    the last ones; on the benchmark's E10 MLP it saves 5-6 % of the products; 1 is the previous call).
    ``loss_value`` of the last call is the loss at ``theta`` (with ``gradient``, what a GD step needs; see
    ``lib.train.train``'s ``tracker``).
    """

    def __init__(self, *, tol: float = 1e-6, gap: float = 0.9, watch: float = 0.5, max_iter: int = 12,
                 refresh_every: int = 0, lanczos_tol: float | None = None, engine: str = "auto", seed: int = 0,
                 period: int = 2):
        check_range("tol", tol, 0.0, 1.0, lo_open=True, hi_open=True)
        check_int("period", period, minimum=1, maximum=8)
        check_range("gap", gap, 0.0, 1.0, lo_open=True, hi_open=True)
        check_range("watch", watch, 0.0, gap, hi_open=True)
        check_int("max_iter", max_iter, minimum=1)
        check_int("refresh_every", refresh_every, minimum=0)
        if lanczos_tol is not None:
            check_range("lanczos_tol", lanczos_tol, 0.0, 1.0, lo_open=True, hi_open=True)
        check_in("engine", engine, ENGINES)
        check_seed("seed", seed)
        self.tol, self.gap, self.watch, self.max_iter, self.refresh_every = tol, gap, watch, max_iter, refresh_every
        self.lanczos_tol = tol * 0.1 if lanczos_tol is None else lanczos_tol
        self.engine, self.seed, self.period = engine, seed, period
        self.reset()

    def reset(self):
        """Forget the warm start and the counters."""
        self.value = self.second = self.residual = float("nan")
        self.vector = self._v2 = None
        self.method, self.products = "", 0
        self._op = None
        self.total_products = self.calls = self.fallbacks = 0
        self._close = False
        self._past: list = []  # top eigenvectors of the last ``period`` calls, oldest first
        self.history: list[dict] = []

    @property
    def gradient(self) -> torch.Tensor:
        """The loss gradient at the last ``theta`` (free with the default engine): a GD loop can step with it
        instead of paying for another forward and backward pass."""
        if self._op is None:
            raise ValueError("gradient is available after the first call")
        return self._op.gradient

    @property
    def loss_value(self) -> torch.Tensor:
        """The loss at the last ``theta`` (a 0-d tensor; free with the default engine)."""
        if self._op is None:
            raise ValueError("loss_value is available after the first call")
        if self._op.loss_value is None:
            self._op.loss_value = self._op.loss(self._op.theta).detach()
        return self._op.loss_value

    def _certified(self, lam, res):
        return res <= self.tol * abs(lam)

    def _is_close(self, lam, lam2):
        return lam - lam2 <= (1.0 - self.gap) * abs(lam)

    def _warm(self, op):
        # NumPy on a preallocated basis (rows): for small models the bookkeeping costs as much as a product
        m_max = min(op.n, self.max_iter + 2)
        V, HV = np.empty((m_max, op.n)), np.empty((m_max, op.n))
        m = 0

        def add(w):
            nonlocal m
            w = _orthonormalize(w, V[:m])
            if w is None:
                return False
            V[m] = w
            HV[m] = op(torch.from_numpy(w)).double().numpy()
            m += 1
            return True

        # the second vector costs a product per call; it is watched only while the second eigenvalue is within a
        # factor ``watch`` of the top (it could reach it within a few steps)
        watching = self.second > self.watch * self.value
        # the top eigenvector of ``period`` calls back: GD at the edge of stability oscillates with period 2
        # along the top eigenvector, so the point two steps back is closer than the last one (fewer expansions)
        top = self._past[0] if len(self._past) == self.period else self.vector
        starts = [top, self._v2] if watching else [top]
        for v in starts:
            if not add(v.detach().double().numpy()):
                return None
        while True:
            T = V[:m] @ HV[:m].T
            theta, Y = np.linalg.eigh(0.5 * (T + T.T))
            if m == 1:  # one vector: expand by its residual, or (certified already) by the old second vector
                r = HV[0] - theta[0] * V[0]
                w = r if not self._certified(float(theta[0]), float(np.linalg.norm(r))) else self._v2.double().numpy()
                if not add(w):
                    return None
                continue
            U = Y[:, -2:].T @ V[:m]  # second and top Ritz vectors (rows)
            R = Y[:, -2:].T @ HV[:m] - theta[-2:, None] * U
            res2, res = np.linalg.norm(R, axis=1)
            lam2, lam = float(theta[-2]), float(theta[-1])
            certified = self._certified(lam, res)
            if not watching:
                res2 = 0.0  # the second Ritz value is a lower bound only; no refinement asked for
            # the second pair only needs to be good enough for the gap test: an eigenvalue lies within res2 of lam2
            if m >= op.n or (certified and res2 <= 0.5 * (1.0 - self.gap) * abs(lam)):
                if self._is_close(lam, lam2 + res2):
                    return None
                as_t = lambda x: torch.from_numpy(x.copy()).to(op.dtype)  # noqa: E731
                return lam, lam2, as_t(U[1]), as_t(U[0]), float(res)
            if m >= m_max or not add(R[1] if not certified else R[0]):
                return None

    def _lanczos(self, op):
        n = op.n
        k = 2 if n >= 2 else 1
        # a random start, not the previous eigenvector: the fallback must not inherit a blind spot of the warm
        # start (from a vector that is still an exact eigenvector ARPACK can miss a new top eigenvalue), and
        # ARPACK takes no fewer products from a good start (it builds its whole basis first)
        vals, vecs = top_eigenpairs(op, k, method="lanczos", tol=self.lanczos_tol, seed=self.seed + self.calls,
                                    maxiter=1000)
        u = vecs[:, 0]
        lam = float(vals[0])
        res = float((op(u) - lam * u).norm())
        lam2 = float(vals[1]) if k == 2 else float("-inf")
        v2 = vecs[:, 1] if k == 2 else u
        return lam, lam2, u, v2, res

    def __call__(self, loss: Callable, theta: torch.Tensor) -> float:
        _check(loss, theta)
        if self.vector is not None and self.vector.shape != theta.shape:
            raise ValueError(f"theta must keep its shape {tuple(self.vector.shape)} between calls (or reset())")
        op = HessianOperator(loss, theta, self.engine)
        refresh = self.refresh_every and self.calls % self.refresh_every == 0
        out = None
        if self.vector is not None and not self._close and not refresh and op.n > 2:
            out = self._warm(op)
        method = "warm"
        if out is None:
            method = "lanczos"
            out = self._lanczos(op)
            self.fallbacks += self.calls > 0
            self._close = self._is_close(out[0], out[1])
        lam, lam2, u, v2, res = out
        self.value, self.second, self.residual, self.method = lam, lam2, res, method
        self.vector, self._v2 = u / u.norm(), v2 / v2.norm()
        self._past = (self._past + [self.vector])[-self.period:]
        self.products = op.products
        self._op = op
        op._g = op._th = None  # free the graph; the gradient stays (``op.gradient``)
        self.total_products += op.products
        self.calls += 1
        self.history.append(dict(value=lam, second=lam2, residual=res, method=method, products=op.products,
                                 certified=self._certified(lam, res)))
        return lam


DERIVATIVE_ROUTES = ("auto", "reverse", "forward")


def directional_derivatives(loss: Callable, theta: torch.Tensor, u: torch.Tensor, max_order: int = 4, *,
                            route: str = "auto") -> torch.Tensor:
    """Derivatives of ``c -> loss(theta + c u)`` at ``c = 0`` of orders ``0..max_order`` (shape
    ``(max_order+1,)``), exact (no finite differences). Used for the stable-oscillation condition
    ``3 f'''^2 - f'' f''''`` of Thm 1 of Chen & Bruna (2023).

    ``route="reverse"`` (the ``"auto"`` choice) differentiates the scalar ``f(c)`` by nested
    ``torch.autograd.grad(..., create_graph=True)``: each level is a backward pass through the graph of the one
    before, all in the autograd engine; ``"forward"`` nests ``torch.func.jvp`` ``max_order`` times (each level
    traced through torch's Python decompositions). Both give the same numbers to round-off; measured on the
    913-parameter MLP of chapter I.4 at order 4 (one torch thread), reverse takes 5 ms and forward 58 ms.
    """
    _check(loss, theta)
    if not isinstance(u, torch.Tensor) or u.shape != theta.shape:
        raise ValueError(f"u must be a tensor of shape {tuple(theta.shape)}")
    if not torch.isfinite(u).all():
        raise ValueError("u must hold finite numbers only (found NaN or inf)")
    check_int("max_order", max_order, minimum=0, maximum=8)
    check_in("route", route, DERIVATIVE_ROUTES)
    theta, u = theta.detach(), u.detach().to(theta.dtype)
    if route == "forward":
        return _derivatives_forward(loss, theta, u, max_order)
    c = torch.zeros((), dtype=theta.dtype, requires_grad=True)
    out = []
    with torch.enable_grad():
        d = loss(theta + c * u)
        out.append(d.detach().reshape(()))
        for order in range(1, max_order + 1):
            if d is None or not d.requires_grad:  # f is a polynomial of lower degree: the rest vanish
                out.extend(torch.zeros((), dtype=theta.dtype) for _ in range(order, max_order + 1))
                break
            (d,) = torch.autograd.grad(d, c, create_graph=order < max_order, allow_unused=True)
            if d is None:
                d = torch.zeros((), dtype=theta.dtype)
            out.append(d.detach().reshape(()))
    return torch.stack(out)


def _derivatives_forward(loss, theta, u, max_order):
    def along(c):
        return loss(theta + c * u)

    fns = [along]
    for _ in range(max_order):
        prev = fns[-1]
        fns.append(lambda c, prev=prev: jvp(prev, (c,), (torch.ones_like(c),))[1])
    c0 = torch.zeros((), dtype=theta.dtype)
    return torch.stack([f(c0).detach() for f in fns])


def flatten_module(model: torch.nn.Module, loss_of_model: Callable) -> tuple[torch.Tensor, Callable]:
    """Flat view of a module's parameters: returns ``theta`` (shape ``(n,)``) and ``loss(theta)``.

    ``loss_of_model(call)`` receives ``call(*inputs)``, a function evaluating the model with the parameters
    ``theta`` (through ``torch.func.functional_call``), and returns a scalar.
    """
    check_instance("model", model, torch.nn.Module)
    check_callable("loss_of_model", loss_of_model)
    if not isinstance(model, torch.nn.Module):
        raise ValueError("model must be a torch.nn.Module")
    names = [n for n, _ in model.named_parameters()]
    shapes = [p.shape for _, p in model.named_parameters()]
    sizes = [p.numel() for _, p in model.named_parameters()]
    theta = torch.cat([p.detach().reshape(-1) for _, p in model.named_parameters()])

    def unflatten(flat):
        return {n: t.reshape(s) for n, t, s in zip(names, torch.split(flat, sizes), shapes)}

    def loss(flat):
        params = unflatten(flat)
        return loss_of_model(lambda *inputs: functional_call(model, params, inputs))

    return theta, loss
