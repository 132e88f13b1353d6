"""The models on which the sharpness benchmark compares ``lib.curvature`` with the Cohen-style reference.

Each builder returns a :class:`Problem`: an ``nn.Module`` (float64) whose parameters sit at a trained point, the
data as one batch (``one_batch``, what the reference uses at equal tolerance) and split into batches of at most
1,000 samples (``batches``, Cohen et al.'s ``compute_hvp``), a summed per-sample loss ``loss_sum(output,
target)``, and the flat view ``(theta, loss)`` of ``lib.curvature.flatten_module`` for the library side (one
full batch, mean loss).

The four models the benchmark was first written for (``BUILDERS``):

* ``e10_mlp``: the depth-3 width-16 ReLU MLP of chapter I.4 on the digits 0/1 stand-in (913 parameters, 360
  images), after 60 GD epochs at lr 0.4 (at the edge of stability).
* ``teacher_student``: the 16-neuron teacher-student of Fig 8 (272 parameters, 10,000 points on S^15), after 30
  GD epochs at lr 2.6.
* ``mlp_100k``: a 128-256-256-1 ReLU MLP (99,073 parameters) on 1,000 Gaussian samples, after 50 GD steps.
* ``transformer``: ``lib.models.transformer`` with 2 layers, d = 32, 1 head, ALiBi (9,216 parameters), 256
  sequences of 23 tokens, next-token cross-entropy, after 100 Adam steps.

Held-out problems (``HELD_OUT``), added after ``lib``'s routines were tuned on the four above, with other widths,
data sizes, activations and losses, so that a routine fitted to those cannot pass unnoticed:

* ``tanh_teacher_student``: a 32-neuron tanh student of an 8-neuron tanh teacher on 10,000 Gaussian points in
  R^20 (672 parameters), after 40 GD steps at lr 0.5;
* ``tanh_mlp_5k``: a 20-64-64-1 tanh MLP (5,569 parameters) on 1,000 Gaussian points with a random-teacher
  target, after 100 GD steps at lr 0.05;
* ``gelu_wide``: one hidden layer of 512 GELU units (17,409 parameters) on 2,000 points in R^32, after 50 GD steps
  at lr 0.02;
* ``softplus_classifier``: a 10-48-48-5 softplus MLP (3,125 parameters), cross-entropy on 3,000 points of a
  five-class Gaussian mixture, after 100 GD steps at lr 0.5.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lib import curvature  # noqa: E402
from lib.train import train  # noqa: E402


@dataclass
class Problem:
    name: str
    model: torch.nn.Module
    batches: list  # [(inputs, targets)], at most 1,000 samples each
    one_batch: list  # [(inputs, targets)]: the whole data set
    n: int  # number of samples
    loss_sum: object  # loss_sum(output, target) -> summed loss over the batch
    theta: torch.Tensor
    loss: object  # flat loss of lib.curvature.flatten_module (mean over all samples)


def _mse_sum(out, y):
    return ((out - y) ** 2).sum()


def _set_flat(model, theta):
    with torch.no_grad():
        torch.nn.utils.vector_to_parameters(theta.detach().clone(), model.parameters())


def _make(name, model, X, y, loss_sum, fit):
    n = X.shape[0]
    theta, loss = curvature.flatten_module(model, lambda call: loss_sum(call(X), y) / n)
    theta = fit(theta.clone(), loss).detach()
    _set_flat(model, theta)
    batches = [(X[i:i + 1000], y[i:i + 1000]) for i in range(0, n, 1000)]
    return Problem(name, model, batches, [(X, y)], n, loss_sum, theta, loss)


def _gd(lr, steps):
    def fit(theta, loss):
        train(theta, loss, lr=lr, steps=steps, progress=False)
        return theta

    return fit


def e10_mlp(epochs: int = 60):
    from lib.data.digits import digits_binary
    from lib.models.mlp import ReLUMLP

    X, y, _ = digits_binary()
    X, y = torch.as_tensor(X), torch.as_tensor(y)
    torch.manual_seed(0)
    return _make("E10 MLP", ReLUMLP(X.shape[1], 16, 3), X, y, _mse_sum, _gd(0.4, epochs))


class _TeacherStudent(torch.nn.Module):
    def __init__(self, theta, d=16):
        super().__init__()
        self.d = d
        self.W = torch.nn.Parameter(theta[: d * d].reshape(d, d).clone())
        self.v = torch.nn.Parameter(theta[d * d:].clone())

    def forward(self, X):
        return torch.relu(X @ self.W.T) @ self.v


def teacher_student(epochs: int = 30):
    from lib.parts.edge_of_stability.beyond_low_dimension import teacher_student_data, ts_init

    X, y = teacher_student_data(10000, 16, 0)
    theta0, _ = ts_init(16, 0)
    return _make("teacher-student", _TeacherStudent(theta0), X, y, _mse_sum, _gd(2.6, epochs))


def mlp_100k(steps: int = 50):
    from lib.models.mlp import ReLUMLP

    g = torch.Generator().manual_seed(0)
    X = torch.randn(1000, 128, generator=g, dtype=torch.float64)
    y = torch.randn(1000, generator=g, dtype=torch.float64)
    torch.manual_seed(0)
    return _make("MLP 99k", ReLUMLP(128, 256, 3), X, y, _mse_sum, _gd(0.05, steps))


class _NextToken(torch.nn.Module):
    """Token ids (B, T) -> logits of the next token at every position but the last, flattened to (B*(T-1), V)."""

    def __init__(self, net, vocab):
        super().__init__()
        self.net, self.vocab = net, vocab

    def forward(self, tokens):
        return self.net(tokens)[:, :-1].reshape(-1, self.vocab)


def _ce_sum(logits, tokens):
    return torch.nn.functional.cross_entropy(logits, tokens[:, 1:].reshape(-1), reduction="sum")


def transformer(steps: int = 100):
    from lib.models.transformer import Transformer, TransformerConfig

    vocab, T, B = 16, 23, 256
    g = torch.Generator().manual_seed(0)
    half = torch.randint(0, vocab, (B, (T + 1) // 2), generator=g)
    tokens = torch.cat([half, half[:, : T - half.shape[1]]], dim=1)  # repeated halves: an induction task
    torch.manual_seed(0)
    cfg = TransformerConfig(vocab_size=vocab, d_model=32, n_layers=2, n_heads=1, max_len=T, record_attention=False)
    model = _NextToken(Transformer(cfg).double(), vocab)

    def fit(theta, loss):
        train(theta, loss, lr=1e-2, steps=steps, optimizer="adam", progress=False)
        return theta

    # per-sequence loss normalised by the number of sequences, as the reference sums over sequences
    return _make("transformer", model, tokens, tokens, _ce_sum, fit)


BUILDERS = {"e10": e10_mlp, "teacher_student": teacher_student, "mlp_100k": mlp_100k, "transformer": transformer}


def _teacher_target(X, width, activation, seed):
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(width, X.shape[1], generator=g, dtype=X.dtype) / X.shape[1] ** 0.5
    return activation(X @ W.T) @ torch.randn(width, generator=g, dtype=X.dtype) / width ** 0.5


def _sequential(*layers):
    return torch.nn.Sequential(*layers).double()


def _squeezed(model):
    return lambda out, y: _mse_sum(out.squeeze(-1), y)


def tanh_teacher_student(steps: int = 40):
    g = torch.Generator().manual_seed(1)
    X = torch.randn(10000, 20, generator=g, dtype=torch.float64)
    y = _teacher_target(X, 8, torch.tanh, 2)
    torch.manual_seed(1)
    model = _sequential(torch.nn.Linear(20, 32, bias=False), torch.nn.Tanh(), torch.nn.Linear(32, 1, bias=False))
    return _make("tanh teacher-student", model, X, y, _squeezed(model), _gd(0.5, steps))


def tanh_mlp_5k(steps: int = 100):
    g = torch.Generator().manual_seed(3)
    X = torch.randn(1000, 20, generator=g, dtype=torch.float64)
    y = _teacher_target(X, 16, torch.tanh, 4)
    torch.manual_seed(3)
    model = _sequential(torch.nn.Linear(20, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64), torch.nn.Tanh(),
                        torch.nn.Linear(64, 1))
    return _make("tanh MLP 5.6k", model, X, y, _squeezed(model), _gd(0.05, steps))


def gelu_wide(steps: int = 50):
    g = torch.Generator().manual_seed(5)
    X = torch.randn(2000, 32, generator=g, dtype=torch.float64)
    y = _teacher_target(X, 4, torch.relu, 6)
    torch.manual_seed(5)
    model = _sequential(torch.nn.Linear(32, 512), torch.nn.GELU(), torch.nn.Linear(512, 1))
    return _make("GELU wide 17k", model, X, y, _squeezed(model), _gd(0.02, steps))


def softplus_classifier(steps: int = 100):
    g = torch.Generator().manual_seed(7)
    means = 1.5 * torch.randn(5, 10, generator=g, dtype=torch.float64)
    labels = torch.arange(3000) % 5
    X = means[labels] + torch.randn(3000, 10, generator=g, dtype=torch.float64)
    torch.manual_seed(7)
    model = _sequential(torch.nn.Linear(10, 48), torch.nn.Softplus(), torch.nn.Linear(48, 48), torch.nn.Softplus(),
                        torch.nn.Linear(48, 5))
    ce_sum = lambda logits, y: torch.nn.functional.cross_entropy(logits, y, reduction="sum")  # noqa: E731
    return _make("softplus classifier", model, X, labels, ce_sum, _gd(0.5, steps))


HELD_OUT = {"tanh_teacher_student": tanh_teacher_student, "tanh_mlp_5k": tanh_mlp_5k, "gelu_wide": gelu_wide,
            "softplus_classifier": softplus_classifier}
ALL = {**BUILDERS, **HELD_OUT}
