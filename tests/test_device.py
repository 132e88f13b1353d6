"""``device`` on the CPU: every function of lib that takes it gives, with ``device="cpu"``, bit for bit what it
gives without the argument (the book's default), and ``device`` is checked by one function,
:func:`lib.config.check_device`. The same small runs are compared on a GPU in tests/test_cuda.py."""

import numpy as np
import pytest
import torch
from device_cases import CASES

from lib.config import check_device
from lib.train import train, train_stacked


@pytest.mark.parametrize("name", list(CASES))
def test_cpu_device_is_bit_identical_to_the_default(name):
    default, cpu = CASES[name](None), CASES[name]("cpu")
    assert default.keys() == cpu.keys()
    for key in default:
        assert np.array_equal(np.asarray(default[key]), np.asarray(cpu[key]), equal_nan=True), (name, key)


def test_stacked_divergence_case_diverges_one_model():
    r = CASES["lib.train.train_stacked (dict of tensors)"]("cpu")
    assert r["diverged"].tolist() == [False, False, False, True]


@pytest.mark.parametrize("value", ["cpu", torch.device("cpu"), "cpu:0"])
def test_check_device_accepts_the_cpu(value):
    assert check_device("device", value) == torch.device("cpu")


@pytest.mark.parametrize("value", ["gpu", "cuda:x", "", "tpu", "meta", "cpu:1", 0, 1.0, None, True, ["cpu"]])
def test_check_device_rejects_other_values_naming_the_argument(value):
    with pytest.raises(ValueError, match="device"):
        check_device("device", value)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
@pytest.mark.parametrize("value", ["cuda", "cuda:0", torch.device("cuda", 1)])
def test_cuda_without_cuda_is_a_clear_error(value):
    with pytest.raises(ValueError, match="CUDA is not available"):
        check_device("device", value)


def test_trainers_check_device():
    w = torch.zeros(2)
    with pytest.raises(ValueError, match="device"):
        train(w, lambda p: (p ** 2).sum(), lr=0.1, steps=1, device="gpu")
    with pytest.raises(ValueError, match="device"):
        train_stacked({"w": torch.zeros(2, 3)}, lambda p: (p["w"] ** 2).sum(), lr=0.1, steps=1, device="tpu")


def test_tensors_elsewhere_than_device_are_refused_not_moved():
    # tensors are trained in place, so train cannot move them: one on another device is an error naming both
    w = torch.zeros(2, device="meta")
    with pytest.raises(ValueError, match="params are on meta but device is cpu"):
        train(w, lambda p: (p ** 2).sum(), lr=0.1, steps=1, device="cpu")
    with pytest.raises(ValueError, match="models_or_params are on meta"):
        train_stacked({"w": torch.zeros(2, 3, device="meta")}, lambda p: (p["w"] ** 2).sum(), lr=0.1, steps=1)


def test_a_module_is_moved_in_place_and_draws_stay_on_the_cpu_generator():
    model = torch.nn.Linear(2, 1)
    first = model.weight
    seen = []

    def batch_fn(step, g):
        seen.append(g.device)
        return torch.randn(4, 2, generator=g)

    train(model, lambda m, b: m(b).pow(2).mean(), lr=0.1, steps=2, optimizer="sgd", batch_fn=batch_fn, device="cpu")
    assert model.weight is first and set(seen) == {torch.device("cpu")}


@pytest.mark.parametrize("fn", [
    "lib.parts.concept_learning.diffusion:concept_diffusion_experiment",
    "lib.parts.concept_learning.diffusion:train_ensemble",
    "lib.parts.concept_learning.diffusion:train_concept_classifier",
    "lib.parts.concept_learning.linear_gd:sgd_mlp_batched",
    "lib.parts.concept_learning.deep_models:deep_linear_sgd_run",
    "lib.parts.generalisation.graph_transformers:train_gt",
    "lib.parts.generalisation.graph_transformers:train_gt_graphs",
    "lib.parts.generalisation.shallow_vits:train_vit",
    "lib.parts.generalisation.shallow_vits:sigma_map",
    "lib.parts.generalisation.shallow_vits:sparsification_runs",
    "lib.parts.generalisation.vit_images:train_vits",
    "lib.parts.generalisation.vit_images:accuracy_map",
    "lib.parts.generalisation.vit_images:spurious_runs",
    "lib.parts.generalisation.in_context_learning:train_icl",
    "lib.parts.generalisation.in_context_learning:train_icl_gpt",
    "lib.parts.generalisation.chain_of_thought:train_cot",
    "lib.parts.generalisation.cot_multilayer:train_multilayer_cot",
    "lib.parts.generalisation.group_images:train_group_mlps",
    "lib.parts.generalisation.gcn_sampling:train_sampled_gcn",
    "lib.parts.graph_networks.communities:run_sbm",
    "lib.parts.graph_networks.walk_counting:fit_counting_model",
    "lib.parts.graph_networks.walk_counting:counting_table",
    "lib.parts.memorisation.noisy_recall:train_recall",
    "lib.parts.memorisation.ioi:train_ioi",
    "lib.parts.memorisation.ioi:ioi_experiment",
    "lib.parts.memorisation.ioi:bigram_split_loss",
    "lib.parts.memorisation.language_models:train_template_lm",
    "lib.parts.memorisation.language_models:run_template_lm",
    "lib.parts.memorisation.noisy_recall:recall_experiment",
    "lib.parts.induction_heads.trained_transformers:train_induction",
    "lib.train:train",
    "lib.train:train_stacked",
])
def test_device_defaults_to_cpu(fn):
    import importlib
    import inspect

    mod, _, name = fn.partition(":")
    param = inspect.signature(getattr(importlib.import_module(mod), name)).parameters["device"]
    assert param.default == "cpu"


#: the last commit before ``device`` existed: the defaults must reproduce its results bit for bit
BASE_COMMIT = "c65aadb"
FAST_CASES = ["lib.train.train (module, SGD-momentum)", "lib.train.train (dict of tensors, Adam)",
              "lib.train.train_stacked (modules, AdamW)", "lib.train.train_stacked (dict of tensors)",
              "generalisation.graph_transformers.train_gt"]  # all cases agreed when device was added; these stay
_RUN = """
import sys, numpy as np
sys.path.insert(0, sys.argv[2])
import device_cases
out = {}
for name in sys.argv[3:]:
    for k, v in device_cases.CASES[name](None).items():
        out[name + "|" + k] = np.asarray(v)
np.savez(sys.argv[1], **out)
"""


def test_defaults_reproduce_the_code_before_device_bit_for_bit(tmp_path):
    """The same small runs, without ``device``, on this commit's lib and on the lib of BASE_COMMIT."""
    import io
    import os
    import subprocess
    import sys
    import tarfile
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    try:
        tar = subprocess.run(["git", "archive", BASE_COMMIT, "lib"], cwd=root, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("the git history with the code before device is not available")
    old = tmp_path / "old"
    with tarfile.open(fileobj=io.BytesIO(tar)) as tf:
        tf.extractall(old, filter="data")
    (tmp_path / "run.py").write_text(_RUN)
    results = {}
    for label, lib_root in (("old", old), ("new", root)):
        env = dict(os.environ, PYTHONPATH=str(lib_root))
        subprocess.run([sys.executable, str(tmp_path / "run.py"), str(tmp_path / f"{label}.npz"),
                        str(root / "tests"), *FAST_CASES], cwd=tmp_path, env=env, check=True)
        results[label] = np.load(tmp_path / f"{label}.npz")
    assert sorted(results["old"].files) == sorted(results["new"].files)
    for key in results["old"].files:
        assert np.array_equal(results["old"][key], results["new"][key], equal_nan=True), key
