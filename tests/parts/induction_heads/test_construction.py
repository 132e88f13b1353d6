"""Tests of chapter II.1 (building induction heads by hand) and of the layers it uses: lib.models.transformer,
lib.data.tokens, lib.plots.attention_heatmap."""

import numpy as np
import pytest
import torch

from lib.data import tokens
from lib.models.transformer import Transformer, TransformerConfig, alibi_bias, softmax_attention
from lib.parts.induction_heads import construction

DT = torch.float64


# ------------------------------------------------------------------------------------------------ transformer
def test_transformer_shapes_and_attention_maps():
    cfg = TransformerConfig(vocab_size=11, d_model=16, n_layers=2, n_heads=(2, 4), max_len=20, ffn=True,
                            layer_norm=True, learned_pos=True, rpe_learnable=True)
    m = Transformer(cfg)
    y = m(torch.randint(0, 11, (3, 20)))
    assert y.shape == (3, 20, 11)
    A1, A2 = m.attention_maps
    assert A1.shape == (3, 2, 20, 20) and A2.shape == (3, 4, 20, 20)
    assert torch.allclose(A1.sum(-1), torch.ones(3, 2, 20))
    assert torch.all(torch.triu(A1[0, 0], diagonal=1) == 0)  # causal
    y.sum().backward()
    assert m.blocks[0].attn.slopes.grad is not None
    assert all(torch.isfinite(p.grad).all() for p in m.parameters() if p.grad is not None)


def test_strict_causality_first_row_zero_and_no_nan_grad():
    cfg = TransformerConfig(d_in=3, d_model=6, n_layers=2, n_heads=2, causal="strict")
    m = Transformer(cfg).to(DT)
    x = torch.randn(2, 7, 3, dtype=DT)
    m(x).sum().backward()
    A = m.attention_maps[0]
    assert torch.all(A[:, :, 0] == 0)
    assert torch.allclose(A[:, :, 1:].sum(-1), torch.ones(2, 2, 6, dtype=DT))
    assert torch.all(torch.diagonal(A, dim1=-2, dim2=-1) == 0)
    assert all(torch.isfinite(p.grad).all() for p in m.parameters())


def test_alibi_bias_matches_eq3():
    slopes = torch.tensor([0.5, 2.0])
    bias, allowed = alibi_bias(5, slopes, "strict")
    # query i=4 (0-indexed), key j=1: z = 3, bias -p (z - 1)
    assert bias[1, 4, 1] == pytest.approx(-2.0 * 2)
    assert not allowed[2, 2] and allowed[2, 1]
    bias_s, allowed_s = alibi_bias(5, slopes, "standard")
    assert allowed_s[2, 2] and bias_s[0, 4, 1] == pytest.approx(-0.5 * 3)


def test_softmax_attention_rows_sum_to_one_property():
    g = torch.Generator().manual_seed(0)
    for _ in range(5):
        q, k, v = (torch.randn(2, 3, 6, 4, generator=g, dtype=DT) for _ in range(3))
        allowed = torch.tril(torch.ones(6, 6, dtype=torch.bool))
        out, A = softmax_attention(q, k, v, allowed=allowed)
        assert torch.allclose(A.sum(-1), torch.ones(2, 3, 6, dtype=DT))
        assert torch.allclose(out, A @ v)


def test_transformer_bad_arguments():
    with pytest.raises(ValueError, match="rpe"):
        TransformerConfig(rpe="rope")
    with pytest.raises(ValueError, match="d_model"):
        TransformerConfig(d_model=10, n_heads=3)
    with pytest.raises(ValueError, match="causal"):
        TransformerConfig(causal="anti")
    m = Transformer(TransformerConfig(d_in=2, d_model=4, n_heads=1))
    with pytest.raises(ValueError, match="x must"):
        m(torch.zeros(2, 3, 5))
    with pytest.raises(ValueError, match="W_Q"):
        m.set_head(0, 0, W_Q=torch.zeros(3, 3))
    with pytest.raises(ValueError, match="head"):
        m.set_head(0, 1, slope=1.0)


# ------------------------------------------------------------------------------------------------- sequences
def test_sequence_generators_shapes_and_determinism():
    a, S, mask = tokens.repeat_prefix_tokens(4, 10, 7, 4, 4, rng=3)
    b, _, _ = tokens.repeat_prefix_tokens(4, 10, 7, 4, 4, rng=3)
    assert torch.equal(a, b) and torch.equal(a[:, :4], a[:, 4:8]) and mask.shape == (4, 10) and (S == 4).all()
    t, tg, o = tokens.in_context_bigram_tokens(5, 30, 9, n_triggers=2, rng=1)
    follows = t[:, 1:][t[:, :-1] < 2]
    trig = t[:, :-1][t[:, :-1] < 2]
    rows = torch.nonzero(t[:, :-1] < 2)[:, 0]
    assert torch.equal(follows, o[rows, trig])
    known = tg >= 0
    assert torch.all(tg[known] == o[torch.nonzero(known)[:, 0], t[known]])
    m, P = tokens.markov_tokens(3, 12, 4, rng=0)
    assert m.shape == (3, 12) and torch.allclose(P.sum(-1), torch.ones(3, 4, dtype=DT))
    assert tokens.gaussian_sequences(2, 5, 3, rng=0).shape == (2, 5, 3)
    u = tokens.uniform_sequences(50, 5, 2, low=0.0, high=1.0, rng=0)
    assert float(u.min()) >= 0 and float(u.max()) <= 1


def test_sequence_bad_arguments():
    with pytest.raises(ValueError, match="V"):
        tokens.random_tokens(2, 3, 0)
    with pytest.raises(ValueError, match="high"):
        tokens.uniform_sequences(2, 3, 1, low=1.0, high=0.0)
    with pytest.raises(ValueError, match="rng"):
        tokens.gaussian_sequences(2, 3, rng="seed")
    with pytest.raises(ValueError, match="seg_max"):
        tokens.repeat_prefix_tokens(2, 6, 3, 2, 5)


# ------------------------------------------------------------------------------------------------ Thm 4.1
def test_vanilla_ih_error_below_bound_and_exponential():
    W = torch.from_numpy(np.random.default_rng(0).standard_normal((3, 3)))
    X = tokens.uniform_sequences(16, 30, 3, rng=1, dtype=DT)
    target = construction.ih2_target(X, W)
    models = [construction.build_vanilla_ih(W, p) for p in (6.0, 8.0)]
    errs = [construction.sup_error(construction.run_last(m, X), target) for m in models]
    assert errs[0] <= construction.thm41_bound(W, 6.0) and errs[1] <= construction.thm41_bound(W, 8.0)
    assert errs[1] / errs[0] == pytest.approx(np.exp(-2.0), rel=0.05)


def test_ih2_target_limits():
    # W = 0: uniform average of x_2..x_{L-1}
    X = tokens.uniform_sequences(4, 9, 2, rng=2, dtype=DT)
    assert torch.allclose(construction.ih2_target(X, torch.zeros(2, 2, dtype=DT)), X[:, 1:-1].mean(1))
    # IH_n with n = 2 equals IH_2
    W = torch.eye(2, dtype=DT)
    assert torch.allclose(construction.ihn_target(X, W, 2), construction.ih2_target(X, W))


def test_in_context_bigram_mixture_identity():
    V, L, beta = 5, 40, 3.0
    toks = tokens.random_tokens(30, L, V, rng=4)
    P, Q, k = construction.in_context_bigram(toks, V)
    ih = construction.ih2_target(tokens.one_hot(toks, V, dtype=DT), beta * torch.eye(V, dtype=DT))
    kf = k.to(DT)
    eps = (L - 2 - kf) / (kf * np.exp(beta) + L - 2 - kf)
    assert torch.allclose(ih, (1 - eps)[:, None] * P + eps[:, None] * Q, atol=1e-12)


# ------------------------------------------------------------------------------------------------ Thm 4.3
def test_delay_kernel_fit_and_single_head():
    fit = construction.fit_delay_kernel(2, [1.0, 2.0, 3.0, 4.0, 5.0])
    assert fit["l1"] < 1e-3 and fit["kernel"].shape == (400,)
    assert construction.single_head_delay_error(2, 3.0) == 1.0
    u = np.exp(-2.0)
    assert construction.single_head_delay_error(1, 2.0) == pytest.approx(u / (1 - u))
    # exact identity: exp_kernel is linear in alphas
    b = np.array([1.0, 2.5])
    assert np.allclose(construction.exp_kernel(b, [1.0, 0.0], 5) + construction.exp_kernel(b, [0.0, 1.0], 5),
                       construction.exp_kernel(b, [1.0, 1.0], 5))


def test_ihn_transformer_lemma_d1_chain():
    d, n = 1, 3
    W = torch.tensor([[1.0, 0.5], [-0.3, 0.8]], dtype=DT)
    X = tokens.uniform_sequences(8, 20, d, rng=5, dtype=DT)
    b = np.arange(1.0, 6.0)
    f1, f2 = construction.fit_delay_kernel(1, b), construction.fit_delay_kernel(2, b)
    m = construction.build_ihn(W, n, [b, b], [f1["alphas"], f2["alphas"]], d)
    err = construction.sup_error(construction.run_last(m, X, n), construction.ihn_target(X, W, n))
    eps = construction.layer1_copy_error(m, X, n)
    assert err <= 2 * float(W.abs().sum()) * eps + 1e-12
    assert err < 1e-3


# ------------------------------------------------------------------------------------------------ Thm 4.4
def test_pod_reconstructs_and_is_orthonormal():
    P = construction.pod(lambda u, v: np.exp(-((u - v) ** 2)), n_nodes=60)
    G = P.phi.T @ (P.weights[:, None] * P.phi)
    assert np.allclose(G[:5, :5], np.eye(5), atol=1e-10)
    u = np.array([-0.3, 0.2, 0.9])
    v = np.array([0.1, -0.7])
    exact = np.exp(-((u[:, None] - v[None, :]) ** 2))
    assert np.allclose(P.truncation(u, v, 12), exact, atol=1e-8)


def test_bilinear_fit_of_bilinear_and_square():
    Pd = construction.pod(lambda u, v: 2 * u * v, n_nodes=40)
    assert construction.best_bilinear_fit(Pd)["r2"] == pytest.approx(1.0)
    Ps = construction.pod(lambda u, v: (u * v) ** 2, n_nodes=40)
    assert abs(construction.best_bilinear_fit(Ps)["r2"]) < 1e-10


def test_gih2_transformer_square_similarity():
    f = construction.SIMILARITIES["square"]
    P = construction.pod(lambda u, v: f(u, v, 3.0), n_nodes=80)
    X = tokens.uniform_sequences(16, 20, 1, rng=6, dtype=DT)
    tgt = construction.gih_target(X, lambda u, v: f(u[..., 0], v[..., 0], 3.0))
    unif = construction.gih_target(X, lambda u, v: 0 * u[..., 0] * v[..., 0])
    m = construction.build_gih2(P, 1, 128)
    assert construction.rms_error(construction.run_last(m, X), tgt) < 0.05 * construction.rms_error(unif, tgt)


def test_gih2_width_sweep_error_falls_with_width_and_keeps_the_best_rank():
    f = construction.SIMILARITIES["abs"]
    P = construction.pod(lambda u, v: f(u, v, 3.0), n_nodes=80)
    out = construction.gih2_width_sweep(P, lambda u, v: f(u, v, 3.0), [12], [16, 256], [1, 2, 4], B=16)
    assert out["error"].shape == out["best_K"].shape == (1, 2)
    assert out["error"][0, 1] < out["error"][0, 0]
    assert set(out["best_K"].ravel()) <= {1, 2, 4}
    with pytest.raises(ValueError, match="Ms"):
        construction.gih2_width_sweep(P, lambda u, v: u * v, [12], [1], [1])
    with pytest.raises(ValueError, match="Ls"):
        construction.gih2_width_sweep(P, lambda u, v: u * v, [], [16], [1])


def test_relu_features_fit_converges():
    e1 = construction.relu_features_fit(np.sin, 8, rng=0)["max_err"]
    e2 = construction.relu_features_fit(np.sin, 64, rng=0)["max_err"]
    assert e2 < e1 and e2 < 1e-2


def test_approximation_bad_arguments():
    W = torch.eye(2, dtype=DT)
    with pytest.raises(ValueError, match="p"):
        construction.thm41_bound(W, -1.0)
    with pytest.raises(ValueError, match="W"):
        construction.build_vanilla_ih(torch.zeros(2, 3), 1.0)
    with pytest.raises(ValueError, match="betas"):
        construction.fit_delay_kernel(2, [1.0, -1.0])
    with pytest.raises(ValueError, match="delay"):
        construction.fit_delay_kernel(0, [1.0])
    with pytest.raises(ValueError, match="n"):
        construction.ihn_target(torch.zeros(1, 5, 1), torch.zeros(1, 1), 1)
    with pytest.raises(ValueError, match="X"):
        construction.ih2_target(torch.zeros(5, 2), W)
    with pytest.raises(ValueError, match="high"):
        construction.pod(lambda u, v: u * v, low=1.0, high=0.0)
    with pytest.raises(ValueError, match="K"):
        construction.build_gih2(construction.pod(lambda u, v: u * v, n_nodes=10), 0, 4)


def test_attention_heatmap_runs():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lib.plots import attention_heatmap

    fig, ax = plt.subplots()
    attention_heatmap(ax, torch.eye(4))
    with pytest.raises(ValueError, match="A must"):
        attention_heatmap(ax, np.zeros(3))
    plt.close(fig)
