"""On a CUDA machine: every function of lib that takes ``device`` runs small on ``"cuda"`` and agrees with its
CPU run within the case's stated tolerance (tests/device_cases.py: ``TOLERANCE``). Skipped without CUDA.

Run it with ``PYTHONPATH=$PWD .venv/bin/pytest -q tests/test_cuda.py`` (``scripts/gpu_runs.sh`` does, first)."""

import numpy as np
import pytest
import torch
from device_cases import CASES, TOLERANCE

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.parametrize("name", list(CASES))
def test_cuda_agrees_with_the_cpu(name):
    cpu, gpu = CASES[name]("cpu"), CASES[name]("cuda")
    rtol, atol = TOLERANCE[name]
    assert cpu.keys() == gpu.keys()
    for key in cpu:
        a, b = np.asarray(cpu[key]), np.asarray(gpu[key])
        assert a.shape == b.shape and a.dtype.kind == b.dtype.kind, (name, key)
        if a.dtype.kind in "biu":
            assert np.array_equal(a, b), (name, key)
        else:
            err = np.nanmax(np.abs(a - b) - rtol * np.abs(a)) if a.size else 0.0
            print(f"{name} [{key}]: largest excess over rtol*|cpu| = {err:.3g} (atol {atol:g})")
            assert np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True), (name, key, float(np.nanmax(abs(a - b))))


def test_cuda_result_arrays_come_back_on_the_cpu():
    out = CASES["generalisation.graph_transformers.train_gt"]("cuda")
    assert all(isinstance(v, np.ndarray) for v in out.values())


def test_cuda_models_train_on_the_gpu():
    from lib.train import train

    model = torch.nn.Linear(3, 1)
    seen = []
    train(model, lambda m: m(torch.ones(2, 3, device="cuda")).sum(), lr=0.1, steps=1,
          callbacks=[lambda p, s, loss: seen.append(next(p.parameters()).device.type)], device="cuda")
    assert seen == ["cuda"] and next(model.parameters()).is_cuda
