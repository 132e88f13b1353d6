"""Hessian-vector-product engines, the tuned Lanczos, the sharpness tracker and the derivative routes of
``lib.curvature`` against dense float64 references."""

import pytest
import torch

from lib import curvature


def _quartic(A):
    return lambda th: 0.5 * th @ A @ th + 0.25 * (th**4).sum()


def _spd(n, seed):
    g = torch.Generator().manual_seed(seed)
    B = torch.randn(n, n, generator=g, dtype=torch.float64)
    return B @ B.T, torch.randn(n, generator=g, dtype=torch.float64)


def _mlp_problem(seed=0):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(3, 6), torch.nn.Tanh(), torch.nn.Linear(6, 1)).double()
    X = torch.randn(40, 3, generator=g, dtype=torch.float64)
    y = torch.randn(40, 1, generator=g, dtype=torch.float64)
    return curvature.flatten_module(model, lambda call: ((call(X) - y) ** 2).mean())


def _dense_top(loss, theta, k=1):
    return torch.linalg.eigvalsh(curvature.hessian(loss, theta)).flip(0)[:k]


def _rotated_quadratic(eigs, Q):
    H = Q @ torch.diag(torch.as_tensor(eigs, dtype=torch.float64)) @ Q.T
    return lambda th: 0.5 * th @ H @ th


def _orthogonal(n, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.linalg.qr(torch.randn(n, n, generator=g, dtype=torch.float64))[0]


# ------------------------------------------------------------------------------------------------ engines
@pytest.mark.parametrize("engine", ["auto", "graph", "forward"])
def test_engines_give_the_dense_hessian_product(engine):
    A, th = _spd(7, 0)
    loss = _quartic(A)
    H = curvature.hessian(loss, th)
    op = curvature.HessianOperator(loss, th, engine)
    for i in range(3):
        v = torch.randn(7, generator=torch.Generator().manual_seed(i), dtype=torch.float64)
        assert torch.allclose(op(v), H @ v, rtol=1e-12, atol=1e-12)
        assert torch.allclose(curvature.hvp(loss, th, v, engine=engine), H @ v, rtol=1e-12, atol=1e-12)
    assert op.products == 3
    assert op.engine == ("graph" if engine == "auto" else engine)


def test_graph_engine_on_a_module_and_under_no_grad():
    theta, loss = _mlp_problem()
    H = curvature.hessian(loss, theta)
    v = torch.linspace(-1, 1, theta.numel(), dtype=torch.float64)
    with torch.no_grad():  # training loops record statistics under no_grad
        hv = curvature.HessianOperator(loss, theta, "graph")(v)
    assert torch.allclose(hv, H @ v, rtol=1e-10, atol=1e-12)


def test_linear_loss_has_a_zero_hessian():
    c = torch.arange(4.0, dtype=torch.float64)
    op = curvature.HessianOperator(lambda th: c @ th, torch.ones(4, dtype=torch.float64))
    assert torch.equal(op(torch.ones(4, dtype=torch.float64)), torch.zeros(4, dtype=torch.float64))


@pytest.mark.parametrize("engine", ["graph", "forward"])
@pytest.mark.parametrize("method", ["lanczos", "power"])
@pytest.mark.parametrize("problem", ["quartic", "mlp"])
def test_every_engine_and_method_matches_the_dense_eigenvalue(engine, method, problem):
    if problem == "quartic":
        A, th = _spd(12, 3)
        loss = _quartic(A)
    else:
        th, loss = _mlp_problem(1)
    ref = _dense_top(loss, th)
    kw = dict(tol=1e-12, maxiter=20000) if method == "power" else dict(tol=1e-12)
    vals, vecs = curvature.hessian_top_eigenpairs(loss, th, k=1, method=method, engine=engine, **kw)
    assert float(vals[0]) == pytest.approx(float(ref[0]), rel=1e-9)
    H = curvature.hessian(loss, th)
    assert float((H @ vecs[:, 0] - vals[0] * vecs[:, 0]).norm()) <= 1e-5 * abs(float(vals[0]))


@pytest.mark.parametrize("ncv", [None, 5, 20])
def test_lanczos_basis_sizes_and_start_vectors_agree(ncv):
    th, loss = _mlp_problem(2)
    ref = _dense_top(loss, th, k=2)
    v0 = torch.ones_like(th)
    vals, _ = curvature.hessian_top_eigenpairs(loss, th, k=2, tol=1e-12, ncv=ncv, v0=v0)
    assert torch.allclose(vals, ref, rtol=1e-10)


def test_small_basis_takes_fewer_products():
    th, loss = _mlp_problem(3)
    counts = {}
    for ncv in (None, 20):
        op = curvature.HessianOperator(loss, th)
        curvature.top_eigenpairs(op, 1, tol=1e-8, ncv=ncv)
        counts[ncv] = op.products
    assert counts[None] < counts[20]


# ------------------------------------------------------------------------------------------------ tracker
def test_tracker_certifies_warm_values_along_a_path():
    A, th0 = _spd(10, 4)
    loss = _quartic(A)
    tracker = curvature.SharpnessTracker(tol=1e-8)
    direction = torch.linspace(-1, 1, 10, dtype=torch.float64)
    for step in range(8):
        th = th0 + 0.01 * step * direction
        lam = tracker(loss, th)
        assert lam == pytest.approx(float(_dense_top(loss, th)[0]), rel=1e-12)
        assert tracker.residual <= 1e-8 * abs(lam)
        assert torch.linalg.norm(tracker.vector) == pytest.approx(1.0)
    methods = [h["method"] for h in tracker.history]
    assert methods[0] == "lanczos" and set(methods[1:]) == {"warm"}
    assert all(h["certified"] for h in tracker.history)
    assert tracker.fallbacks == 0 and tracker.calls == 8
    assert tracker.total_products == sum(h["products"] for h in tracker.history)
    # warm calls are cheaper than the first (Lanczos) one
    assert max(h["products"] for h in tracker.history[1:]) < tracker.history[0]["products"]


@pytest.mark.parametrize("rotate", [False, True])
def test_tracker_falls_back_when_the_top_two_eigenvalues_cross(rotate):
    n = 8
    Q = _orthogonal(n, 5) if rotate else torch.eye(n, dtype=torch.float64)
    th = torch.linspace(0.1, 0.8, n, dtype=torch.float64)
    tracker = curvature.SharpnessTracker(tol=1e-9, gap=0.9)
    seconds = [1.5, 2.0, 2.95, 3.05, 3.5, 4.0, 4.2]
    for b in seconds:
        loss = _rotated_quadratic([3.0, b, 1.0, 0.5, 0.25, 0.1, -0.2, -0.4], Q)
        lam = tracker(loss, th)
        assert lam == pytest.approx(max(3.0, b), rel=1e-10)
        assert tracker.residual <= 1e-9 * abs(lam)
    methods = [h["method"] for h in tracker.history]
    # Lanczos at the start and while the gap is within 10 %, warm again once the new top has separated
    assert methods == ["lanczos", "warm", "lanczos", "lanczos", "lanczos", "warm", "warm"]
    assert tracker.fallbacks == 3
    assert tracker.history[2]["second"] == pytest.approx(2.95, rel=1e-10)


def test_tracker_falls_back_when_the_warm_start_is_poor():
    n = 30
    eigs = torch.linspace(1.0, 2.0, n, dtype=torch.float64)  # small relative gaps: slow convergence
    th = torch.ones(n, dtype=torch.float64)
    tracker = curvature.SharpnessTracker(tol=1e-10, max_iter=2)
    tracker(_rotated_quadratic(eigs, _orthogonal(n, 0)), th)
    lam = tracker(_rotated_quadratic(eigs, _orthogonal(n, 1)), th)  # eigenvectors turned: the start is useless
    assert tracker.method == "lanczos" and tracker.fallbacks == 1
    assert lam == pytest.approx(2.0, rel=1e-12)


def test_tracker_refresh_runs_lanczos_periodically():
    A, th = _spd(6, 6)
    loss = _quartic(A)
    tracker = curvature.SharpnessTracker(refresh_every=3)
    for _ in range(7):
        tracker(loss, th)
    assert [h["method"] == "lanczos" for h in tracker.history] == [True, False, False, True, False, False, True]


def test_tracker_on_tiny_problems():
    tracker = curvature.SharpnessTracker()
    for a in (1.0, 2.0):
        assert tracker(lambda th, a=a: a * (th**2).sum(), torch.ones(1, dtype=torch.float64)) == pytest.approx(2 * a)
    tracker = curvature.SharpnessTracker()
    for a in (1.0, 2.0):
        loss = lambda th, a=a: a * th[0] ** 2 + th[1] ** 2  # noqa: E731
        assert tracker(loss, torch.ones(2, dtype=torch.float64)) == pytest.approx(max(2 * a, 2.0))


# ------------------------------------------------------------------------------------------------ derivatives
@pytest.mark.parametrize("route", ["auto", "reverse", "forward"])
def test_derivative_routes_agree(route):
    th, loss = _mlp_problem(4)
    u = torch.linspace(-1, 1, th.numel(), dtype=torch.float64)
    u = u / u.norm()
    ref = curvature.directional_derivatives(loss, th, u, max_order=4, route="forward")
    got = curvature.directional_derivatives(loss, th, u, max_order=4, route=route)
    assert torch.allclose(got, ref, rtol=1e-10, atol=1e-14)
    assert float(got[2]) == pytest.approx(float(u @ curvature.hessian(loss, th) @ u), rel=1e-10)


def test_reverse_derivatives_of_low_degree_polynomials():
    u = torch.tensor([1.0, 2.0], dtype=torch.float64)
    quad = curvature.directional_derivatives(lambda th: (th**2).sum(), torch.zeros(2, dtype=torch.float64), u, 4)
    assert torch.allclose(quad, torch.tensor([0.0, 0.0, 10.0, 0.0, 0.0], dtype=torch.float64))
    const = curvature.directional_derivatives(lambda th: th.sum() * 0 + 1, torch.zeros(2, dtype=torch.float64), u)
    assert torch.allclose(const, torch.tensor([1.0, 0, 0, 0, 0], dtype=torch.float64))


# ------------------------------------------------------------------------------------------------ arguments
def test_bad_arguments_raise():
    loss = lambda th: (th**2).sum()  # noqa: E731
    th = torch.zeros(4, dtype=torch.float64)
    with pytest.raises(ValueError, match="engine"):
        curvature.HessianOperator(loss, th, engine="reverse")
    with pytest.raises(ValueError, match="engine"):
        curvature.hessian_top_eigenpairs(loss, th, engine="x")
    with pytest.raises(ValueError, match="ncv"):
        curvature.hessian_top_eigenpairs(loss, th, k=2, ncv=2)
    with pytest.raises(ValueError, match="v0"):
        curvature.hessian_top_eigenpairs(loss, th, v0=torch.ones(3))
    with pytest.raises(ValueError, match="op"):
        curvature.top_eigenpairs(loss)
    with pytest.raises(ValueError, match="route"):
        curvature.directional_derivatives(loss, th, th, route="taylor")
    for kw, name in ((dict(tol=0.0), "tol"), (dict(gap=1.0), "gap"), (dict(max_iter=0), "max_iter"),
                     (dict(refresh_every=-1), "refresh_every"), (dict(engine="x"), "engine"),
                     (dict(lanczos_tol=2.0), "lanczos_tol")):
        with pytest.raises(ValueError, match=name):
            curvature.SharpnessTracker(**kw)
    tracker = curvature.SharpnessTracker()
    tracker(loss, th)
    with pytest.raises(ValueError, match="theta"):
        tracker(loss, torch.zeros(5, dtype=torch.float64))
    with pytest.raises(ValueError, match="loss"):
        tracker("not a function", th)
