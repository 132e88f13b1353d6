import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("BOOK_MODE", "quick")


import pytest  # noqa: E402
import scipy.linalg  # noqa: E402, F401  (loads SciPy's OpenBLAS before the limit below)
import torch  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

# `make unit` runs two pytest processes side by side on two cores: one thread each for torch, BLAS and OpenMP (a
# second thread only spins against the other process; the chapters do the same, lib.chapter.setup)
torch.set_num_threads(1)
_THREAD_LIMITS = threadpool_limits(limits=1)


@pytest.fixture
def float64_default():
    """torch's default dtype is float64 inside the test and restored after it, so no test changes it for others."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


@pytest.fixture(autouse=True)
def _default_dtype_is_restored():
    before = torch.get_default_dtype()
    yield
    assert torch.get_default_dtype() == before, "a test changed torch's default dtype and did not restore it"


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch thread for a module of tiny sparse products (much faster on a busy machine), restored after."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
