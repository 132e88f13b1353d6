"""Tests of the colour x size data, the conditional U-Net, the CNN read-out and the VP diffusion utilities."""

import numpy as np
import pytest
import torch

from lib.models.cnn import CNNConfig, ConceptCNN, concept_probs
from lib.models.unet import CondUNet, UNetConfig, timestep_embedding
from lib.parts.concept_learning import diffusion
from lib.parts.concept_learning.diffusion import (
    Ensemble,
    VPSchedule,
    ddim_sample,
    diffusion_loss,
    log_checkpoints,
    q_sample,
    train_ensemble,
)
from lib.parts.concept_learning.shapes import (
    CLASSES,
    HELD_OUT,
    TRAIN_CLASSES,
    circles_color_size,
    class_colors,
    class_conditioning,
    render_discs,
)

torch.set_num_threads(1)


def tiny_unet(seed=0):
    torch.manual_seed(seed)
    return CondUNet(UNetConfig(channels=(8, 16), emb_dim=16, groups=4))


# ---------------------------------------------------------------- data
def test_shapes_and_ranges():
    x, c, lab = circles_color_size(5, 0.5, image_size=8, seed=0)
    assert x.shape == (15, 3, 8, 8) and c.shape == (15, 4) and lab.shape == (15, 2)
    assert set(map(tuple, lab.tolist())) == set(TRAIN_CLASSES)
    assert x.min() > -0.02 and x.max() < 1.02
    assert HELD_OUT not in TRAIN_CLASSES and set(CLASSES) == set(TRAIN_CLASSES) | {HELD_OUT}


def test_color_signal_is_the_channel_gap():
    for delta in (0.0, 0.3, 0.9):
        red, blue = class_colors(delta)
        np.testing.assert_allclose(np.abs(red - blue), [delta, 0, delta], atol=1e-12)
    cond = class_conditioning(0.4, [HELD_OUT])
    np.testing.assert_allclose(cond[0], [0.3, 0.3, 0.3, 0.7], atol=1e-6)


def test_same_seed_same_images_and_disc_area():
    a = circles_color_size(3, 0.5, seed=7)[0]
    b = circles_color_size(3, 0.5, seed=7)[0]
    np.testing.assert_array_equal(a, b)
    # a big disc covers more pixels than a small one (the size signal)
    img = render_discs(np.zeros((2, 2)), np.array([0.7, 0.3]), np.zeros((2, 3)), np.ones((2, 3)), 8)
    dark = (img < 0.5).all(axis=1).sum(axis=(1, 2))
    assert dark[0] > 2 * dark[1] > 0


@pytest.mark.parametrize("kw", [dict(n_per_class=0), dict(delta=1.5), dict(variant="hard"),
                                dict(image_size=2), dict(classes=[(2, 0)])])
def test_data_bad_arguments(kw):
    args = dict(n_per_class=2, delta=0.5)
    args.update(kw)
    with pytest.raises(ValueError):
        circles_color_size(**args)


# ---------------------------------------------------------------- schedule
def test_schedule_identities():
    sch = VPSchedule(-5.0, 10.0)
    t = torch.linspace(0, 1, 11, dtype=torch.float64)
    a, s = sch.alpha_sigma(t)
    torch.testing.assert_close(a**2 + s**2, torch.ones_like(t))
    torch.testing.assert_close(a**2 / s**2, sch.snr(t))
    torch.testing.assert_close(torch.log(s**2 / a**2), sch.gamma(t))
    assert torch.all(torch.diff(sch.snr(t)) < 0)  # SNR decreases with time
    with pytest.raises(ValueError):
        VPSchedule(1.0, -1.0)


def test_q_sample_and_oracle_loss():
    sch = VPSchedule()
    x = torch.rand(4, 3, 8, 8) * 2 - 1
    eps = torch.randn_like(x)
    t = torch.rand(4)
    z = q_sample(sch, x, t, eps)
    a, s = sch.alpha_sigma(t)
    torch.testing.assert_close(z, a[:, None, None, None] * x + s[:, None, None, None] * eps)
    # an oracle that returns the true noise has zero loss
    assert diffusion_loss(lambda zz, tt, cc: eps, sch, x, torch.zeros(4, 4), t, eps) == 0
    with pytest.raises(ValueError):
        q_sample(sch, x, torch.rand(3), eps)


def test_ddim_deterministic_and_oracle_recovers_data():
    sch = VPSchedule()
    net = tiny_unet().eval()
    noise = torch.randn(3, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    cond = torch.rand(3, 4)
    a = ddim_sample(net, sch, noise, cond, steps=4)
    b = ddim_sample(net, sch, noise, cond, steps=4)
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert a.shape == noise.shape and a.abs().max() <= 1
    # with the exact eps of a single data point x0, DDIM returns x0 (from any starting noise)
    x0 = torch.rand(1, 3, 8, 8) * 1.6 - 0.8
    z1 = torch.randn(1, 3, 8, 8)

    def oracle(z, t, c):
        al, si = sch.alpha_sigma(t[0])
        return (z - al * x0) / si

    torch.testing.assert_close(ddim_sample(oracle, sch, z1, torch.zeros(1, 4), steps=5), x0, atol=1e-4, rtol=0)
    with pytest.raises(ValueError):
        ddim_sample(net, sch, noise, cond, steps=0)


# ---------------------------------------------------------------- models
def test_unet_and_cnn_shapes():
    net = tiny_unet()
    out = net(torch.randn(2, 3, 8, 8), torch.rand(2), torch.rand(2, 4))
    assert out.shape == (2, 3, 8, 8)
    assert timestep_embedding(torch.rand(5), 16).shape == (5, 16)
    clf = ConceptCNN(CNNConfig(channels=(8,)))
    assert clf(torch.rand(4, 3, 8, 8)).shape == (4, 2, 2)
    p = concept_probs(clf, torch.rand(4, 3, 8, 8))
    assert p.shape == (4, 2) and ((p >= 0) & (p <= 1)).all()
    with pytest.raises(ValueError):
        UNetConfig(channels=(10, 16), groups=4)
    with pytest.raises(ValueError):
        CNNConfig(heads=0)


def test_ensemble_matches_individual_models():
    models = [tiny_unet(0), tiny_unet(1)]
    ens = Ensemble(models)
    z, t, c = torch.randn(2, 3, 3, 8, 8), torch.rand(2, 3), torch.rand(2, 3, 4)
    out = ens.eps(z, t, c)
    for k, m in enumerate(models):
        torch.testing.assert_close(out[k], m(z[k], t[k], c[k]), atol=1e-5, rtol=1e-4)


def test_train_ensemble_runs_and_checks_arguments():
    x = torch.rand(2, 16, 3, 8, 8) * 2 - 1
    c = torch.rand(2, 16, 4)
    h = train_ensemble([tiny_unet(0), tiny_unet(1)], x, c, steps=3, batch_size=4, checkpoints=[0, 3],
                       prompt=torch.rand(2, 4), noise=torch.randn(5, 3, 8, 8), sample_steps=2, keep_images=2,
                       readout=lambda im: im.mean(dim=(2, 3))[:, :2])
    assert h["loss"].shape == (3, 2) and list(h["checkpoint"]) == [0, 3]
    assert h["concepts"].shape == (2, 2, 5, 2) and h["images"].shape == (2, 2, 2, 3, 8, 8)
    assert not h["diverged"].any()
    with pytest.raises(ValueError):
        train_ensemble([tiny_unet(0)], x, c, steps=3)  # images has K = 2 but one model
    with pytest.raises(ValueError):
        train_ensemble([tiny_unet(0), tiny_unet(1)], x, c, steps=3, checkpoints=[5])
    assert log_checkpoints(10, 100, 5)[0] == 0 and log_checkpoints(10, 100, 5)[-1] == 100


def test_paper_scale_configuration_is_runnable():
    """The GPU configuration names only arguments of the experiment and builds a 32x32, three-level U-Net."""
    import inspect

    from lib.parts.concept_learning.diffusion import concept_diffusion_experiment
    from lib.parts.concept_learning.settings import CPU_FIG6_FULL, CPU_FIG6_QUICK, PAPER_SCALE_FIG6

    params = inspect.signature(concept_diffusion_experiment).parameters
    for cfg in (CPU_FIG6_QUICK, CPU_FIG6_FULL, PAPER_SCALE_FIG6):
        assert set(cfg) <= set(params)
    net = CondUNet(UNetConfig(channels=PAPER_SCALE_FIG6["channels"]))
    s = PAPER_SCALE_FIG6["image_size"]
    assert net(torch.randn(1, 3, s, s), torch.rand(1), torch.rand(1, 4)).shape == (1, 3, s, s)


def test_experiment_runs_in_float32_whatever_the_default_dtype(float64_default):
    _, acc = diffusion.train_concept_classifier(steps=2, n=4, deltas=[0.5])
    assert acc.shape == (2,)
    r = diffusion.concept_diffusion_experiment(deltas=(0.5,), seeds=(0,), n_per_class=8, steps=3, batch_size=4,
                                               n_checkpoints=2, first_checkpoint=1, samples=2, sample_steps=2,
                                               classifier_steps=2, channels=(8, 8))
    assert r["concepts"].shape[:2] == (1, 1) and np.isfinite(r["concepts"]).all() and not r["diverged"].any()


def test_concept_mse_and_learned_step():
    assert diffusion.concept_mse(np.array([[1.0, 1.0], [0.0, 1.0]])).tolist() == [0.0, 1.0]
    steps = np.array([10, 20, 40, 80, 160])
    assert diffusion.learned_step(np.array([0.1, 0.2, 0.9, 0.95, 0.97]), steps, 0.8) == 40
    assert diffusion.learned_step(np.array([0.1, 0.9, 0.1, 0.2, 0.1]), steps, 0.8) == np.inf  # one-checkpoint spike


def test_runs_split_by_colour_signal_merge_into_one_result():
    tiny = dict(seeds=(0, 1), n_per_class=8, steps=3, batch_size=4, n_checkpoints=2, first_checkpoint=1,
                samples=2, sample_steps=2, classifier_steps=2, channels=(8, 8))
    a = diffusion.concept_diffusion_experiment(deltas=(0.2,), **tiny)
    b = diffusion.concept_diffusion_experiment(deltas=(0.7,), **tiny)
    m = diffusion.merge_diffusion_runs([a, b])
    assert m["deltas"].tolist() == [0.2, 0.7]
    assert m["concepts"].shape[:2] == (2, 2) and m["loss"].shape[1:] == (2, 2) and m["diverged"].shape == (2, 2)
    np.testing.assert_array_equal(m["concepts"][1], b["concepts"][0])
    np.testing.assert_array_equal(m["loss"][:, 0], a["loss"][:, 0])
    with pytest.raises(ValueError, match="disjoint"):
        diffusion.merge_diffusion_runs([a, a])
    with pytest.raises(ValueError, match="parts"):
        diffusion.merge_diffusion_runs([])
    c = diffusion.concept_diffusion_experiment(deltas=(0.5,), **dict(tiny, seeds=(0,)))
    with pytest.raises(ValueError, match="seeds"):
        diffusion.merge_diffusion_runs([a, c])


def test_release_freed_memory_is_safe_to_call():
    assert diffusion.release_freed_memory() in (True, False)
    with pytest.raises(ValueError, match="trim_every"):
        diffusion.train_ensemble([CondUNet(UNetConfig(channels=(8, 8)))], torch.zeros(1, 4, 3, 8, 8),
                                 torch.zeros(1, 4, 4), steps=1, trim_every=-1)


def test_authors_code_options():
    """Zero-initialised blocks with a residual output start as eps_hat = z_t; the [0, 1] data range and fresh
    sampling noise change only what they say (fresh noise leaves the training unchanged)."""
    torch.manual_seed(0)
    net = CondUNet(UNetConfig(channels=(8, 16), emb_dim=16, groups=4, zero_init=True, residual_out=True))
    z = torch.randn(2, 3, 8, 8)
    torch.testing.assert_close(net(z, torch.rand(2), torch.rand(2, 4)), z)
    plain = tiny_unet(0)
    torch.manual_seed(0)
    zero = CondUNet(UNetConfig(channels=(8, 16), emb_dim=16, groups=4, zero_init=True))
    torch.testing.assert_close(plain.conv_in.weight, zero.conv_in.weight)  # the same random draws elsewhere
    with pytest.raises(ValueError, match="zero_init"):
        UNetConfig(zero_init=1)
    tiny = dict(deltas=(0.7,), seeds=(0,), n_per_class=8, steps=3, batch_size=4, n_checkpoints=2,
                first_checkpoint=1, samples=2, sample_steps=2, classifier_steps=2, channels=(8, 8))
    base = diffusion.concept_diffusion_experiment(**tiny)
    fresh = diffusion.concept_diffusion_experiment(**tiny, fresh_noise=True)
    np.testing.assert_array_equal(fresh["loss"], base["loss"])
    assert not np.array_equal(fresh["concepts"], base["concepts"])
    unit = diffusion.concept_diffusion_experiment(**tiny, data_range="unit")
    assert not np.array_equal(unit["loss"], base["loss"])
    with pytest.raises(ValueError, match="data_range"):
        diffusion.concept_diffusion_experiment(**tiny, data_range="centred")
    with pytest.raises(ValueError, match="fresh_noise"):
        diffusion.concept_diffusion_experiment(**tiny, fresh_noise=1)


def test_dropout_learned_schedule_and_clip_options():
    """Dropout 0 builds exactly the plain U-Net; dropout acts in training only; the learned schedule starts as the
    fixed one, its VDM bound at initialisation is dominated by the reconstruction term, and training drifts
    gamma(0) down as in Park et al.'s code; a seeded dropout run repeats exactly."""
    from lib.models.unet import ScheduledUNet

    torch.manual_seed(0)
    plain = CondUNet(UNetConfig(channels=(8, 16), emb_dim=16, groups=4))
    torch.manual_seed(0)
    drop = CondUNet(UNetConfig(channels=(8, 16), emb_dim=16, groups=4, dropout=0.5))
    z, t, c = torch.randn(2, 3, 8, 8), torch.rand(2), torch.rand(2, 4)
    drop.eval()
    torch.testing.assert_close(drop(z, t, c), plain(z, t, c))
    drop.train()
    assert not torch.allclose(drop(z, t, c), plain(z, t, c))
    sched = ScheduledUNet(plain)
    torch.testing.assert_close(sched(z, t, c), plain(z, t, c))
    torch.testing.assert_close(sched.gamma(torch.tensor([0.0, 1.0])), torch.tensor([-5.0, 10.0]))
    x = torch.rand(4, 3, 8, 8) * 2 - 1
    eps0 = torch.randn_like(x)
    with torch.no_grad():
        bound = diffusion._vdm_loss(sched, x, torch.rand(4, 4), torch.rand(4), torch.randn_like(x), eps0)
    recon = ((np.exp(-5.0) * eps0 ** 2 / 2e-6 + np.log(1e-3) + 0.5 * np.log(2 * np.pi)).mean() / np.log(2.0))
    assert 0.99 * float(recon) < float(bound) < float(recon) + 20  # the other two terms are a few bits
    tiny = dict(deltas=(0.7,), seeds=(0,), n_per_class=8, steps=4, batch_size=4, n_checkpoints=2,
                first_checkpoint=1, samples=2, sample_steps=2, classifier_steps=2, channels=(8, 8))
    learned = diffusion.concept_diffusion_experiment(**tiny, learned_schedule=True, clip_norm=0.01)
    assert learned["gamma_ends"].shape == (1, 1, 2) and learned["gamma_ends"][0, 0, 0] < -5.0
    assert np.all(learned["loss"] > 1000)  # bits per dimension, the reconstruction term
    one = diffusion.concept_diffusion_experiment(**tiny, dropout=0.1)
    two = diffusion.concept_diffusion_experiment(**tiny, dropout=0.1)
    base = diffusion.concept_diffusion_experiment(**tiny)
    np.testing.assert_array_equal(one["loss"], two["loss"])
    assert not np.array_equal(one["loss"], base["loss"])
    with pytest.raises(ValueError, match="objective"):
        diffusion.train_ensemble([plain], torch.zeros(1, 4, 3, 8, 8), torch.zeros(1, 4, 4), steps=1,
                                 objective="vdm")
    with pytest.raises(ValueError, match="dropout"):
        UNetConfig(dropout=1.0)


def test_fig6_verdicts_on_a_synthetic_run():
    """Colour first at the strong signal, size first at the weak one, with a clear bend: the rules say so."""
    from lib.parts.concept_learning.diffusion_variants import fig6_verdicts, verdict_line

    steps = np.array([0, 10, 20, 40, 80, 160, 320, 640, 1280, 2560])
    fast, slow = 1 - np.exp(-steps / 30.0), 1 - np.exp(-steps / 300.0)
    strong = np.stack([fast, slow], -1)  # (P, 2): colour first
    weak = np.stack([slow, fast], -1)  # size first
    rng = np.random.default_rng(0)
    concepts = np.stack([np.stack([p[:, None, :] + 0.01 * rng.standard_normal((len(steps), 8, 2))
                                   for _ in range(3)]) for p in (weak, strong)])  # (D=2, R=3, P, n=8, 2)
    run = dict(deltas=np.array([0.2, 0.7]), checkpoint=steps, concepts=concepts)
    rules = dict(level=0.5, bend=0.1, bend_se=2.0, decay=10.0, bump=0.1, bump_se=2.0)
    v = fig6_verdicts(run, **rules)
    assert v["order_status"] == "reproduced" and v["order_seeds"] == 3
    assert v["bend_status"] == "reproduced" and v["final_status"] == "reproduced"
    assert "reversal in 3/3 seeds" in verdict_line(v)
    assert v["law_status"] == "inconclusive"  # nine intervals: two speeds per segment cannot give a slope
    with pytest.raises(ValueError, match="first_step"):
        fig6_verdicts(run, **rules, first_step=1000)
    with pytest.raises(ValueError, match="bend"):
        fig6_verdicts(run, **dict(rules, bend=0.0))


def test_decay_laws_tell_an_exponential_from_a_power_law():
    """Concept paths approaching their end exponentially are called exponential; approaching it as a power of the
    step, a power law; too few checkpoints leave the law undecided."""
    from lib.parts.concept_learning.diffusion_variants import decay_law_status, decay_laws, verdicts_survive

    steps = np.unique(np.round(np.geomspace(1, 3000, 40)))
    rng = np.random.default_rng(1)
    noise = lambda: np.exp(1e-3 * rng.standard_normal(steps.size))  # noqa: E731

    def paths(profile):  # (R=5, P, 2): both read-outs follow the profile, each seed with its own small noise
        return np.stack([np.stack([profile * noise(), profile * noise()], -1) for _ in range(5)])

    exponential = paths(1 - np.exp(-steps / 300.0))
    power = paths(1 - (steps + 10.0) ** -0.5)
    ratio, laws = decay_laws(np.stack([exponential, power]), steps)
    assert ratio.shape == (2,)
    assert laws[0]["state"] == "reproduced", laws[0]
    assert laws[1]["state"] == "not reproduced", laws[1]
    assert decay_law_status(laws) == "partly reproduced"
    _, few = decay_laws(np.stack([exponential[:, :8]]), steps[:8])
    assert few[0]["state"] == "inconclusive" and "at least 3" in few[0]["reason"]
    with pytest.raises(ValueError, match="per_seed_paths"):
        decay_laws(np.stack([exponential]), steps[:-1])
    with pytest.raises(ValueError, match="laws"):
        decay_law_status([])
    base = dict(order_status="reproduced", bend_status="reproduced", decays=(True,), law_status="inconclusive")
    assert verdicts_survive(dict(base, bend_status="not reproduced"), base) == dict(
        order_status=True, bend_status=False, decays=True, law_status=True)
    with pytest.raises(ValueError, match="base"):
        verdicts_survive(base, {})
