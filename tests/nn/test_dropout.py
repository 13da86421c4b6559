"""Dropout family against torch: statistics of the masks, scaling, eval identity, gradients,
channel-wise masks, alpha dropout's moments, argument errors, warnings and repr."""

import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from conftest import DTYPE_PAIRS, assert_same, make_pair
from ember import nn

FUNCTIONS = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
             "feature_alpha_dropout"]
MODULES = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
           "FeatureAlphaDropout"]
# an input shape each function accepts without warnings
SHAPE = {"dropout": (200, 300), "dropout1d": (40, 50, 30), "dropout2d": (20, 50, 6, 5),
         "dropout3d": (10, 40, 3, 5, 4), "alpha_dropout": (200, 300),
         "feature_alpha_dropout": (40, 50, 30)}
_ALPHA = 1.7580993408473766


def _zeroed_fraction_of_channels(y, feature):
    y = y.detach().numpy()
    if not feature:
        return float((y == 0).mean())
    channels = y.reshape(y.shape[0], y.shape[1], -1)
    dropped = (channels == 0).all(-1)
    kept = (channels != 0).all(-1)
    assert bool((dropped | kept).all()), "a channel was partly dropped"
    return float(dropped.mean())


@pytest.mark.parametrize("name", ["dropout", "dropout1d", "dropout2d", "dropout3d"])
@pytest.mark.parametrize("p", [0.2, 0.5, 0.8])
def test_dropout_fraction_and_scaling(name, p):
    ember.manual_seed(0)
    x = ember.ones(SHAPE[name], dtype=ember.float64)
    y = getattr(F, name)(x, p, training=True)
    feature = name != "dropout"
    fraction = _zeroed_fraction_of_channels(y, feature)
    count = x.numel() if not feature else SHAPE[name][0] * SHAPE[name][1]
    # within 5 standard deviations of a binomial proportion
    assert abs(fraction - p) < 5 * math.sqrt(p * (1 - p) / count)
    kept = y.numpy()[y.numpy() != 0]
    np.testing.assert_allclose(kept, 1 / (1 - p), rtol=1e-12)
    # same behaviour in torch (its mask statistics)
    t = getattr(TF, name)(torch.ones(SHAPE[name], dtype=torch.float64), p, training=True)
    kept_t = t.numpy()[t.numpy() != 0]
    np.testing.assert_allclose(kept_t[:1], kept[:1])


@pytest.mark.parametrize("name", FUNCTIONS)
def test_eval_is_identity_and_p_zero(name):
    e, t = make_pair(np.random.default_rng(0).standard_normal(SHAPE[name]))
    assert getattr(F, name)(e, 0.5, training=False) is e
    assert_same(getattr(F, name)(e, 0.5, training=False),
                getattr(TF, name)(t, 0.5, training=False))
    assert_same(getattr(F, name)(e, 0.0, training=True), getattr(TF, name)(t, 0.0, training=True))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_p_one_zeroes_everything(name):
    e, t = make_pair(np.random.default_rng(0).standard_normal(SHAPE[name]))
    assert_same(getattr(F, name)(e, 1.0, training=True), getattr(TF, name)(t, 1.0, training=True))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_gradient_is_the_mask(name):
    ember.manual_seed(1)
    x = ember.tensor(np.random.default_rng(0).standard_normal(SHAPE[name]) + 3,
                     requires_grad=True)
    y = getattr(F, name)(x, 0.3, training=True)
    y.sum().backward()
    alpha = "alpha" in name
    if alpha:
        a = 1 / math.sqrt((_ALPHA ** 2 * 0.3 + 1) * 0.7)
        kept = np.isclose(x.grad.numpy(), a)
        np.testing.assert_allclose(x.grad.numpy()[kept], a)
        assert bool(np.all(kept | (x.grad.numpy() == 0)))
        # dropped positions all take the constant a * (-alpha) + alpha * a * p
        dropped = y.detach().numpy()[~kept]
        np.testing.assert_allclose(dropped, -_ALPHA * a + _ALPHA * a * 0.3, rtol=1e-12)
    else:
        mask = (y.detach().numpy() != 0)
        np.testing.assert_allclose(x.grad.numpy(), mask / 0.7, rtol=1e-12)


@pytest.mark.parametrize("name", ["alpha_dropout", "feature_alpha_dropout"])
def test_alpha_dropout_keeps_mean_and_variance(name):
    ember.manual_seed(2)
    x = ember.randn(SHAPE[name], dtype=ember.float64)
    y = getattr(F, name)(x, 0.2, training=True)
    assert abs(float(y.mean())) < 0.05
    assert abs(float(y.std()) - 1) < 0.05
    ty = getattr(TF, name)(torch.randn(SHAPE[name], dtype=torch.float64), 0.2, training=True)
    assert abs(float(ty.mean())) < 0.05 and abs(float(ty.std()) - 1) < 0.05


def test_channel_masks_shared_over_spatial_positions():
    ember.manual_seed(3)
    y = F.dropout2d(ember.ones(4, 8, 5, 5), 0.5).numpy()
    per_channel = y.reshape(4, 8, -1)
    assert bool(np.all(per_channel.min(-1) == per_channel.max(-1)))
    # unbatched inputs (dropout1d: (C, L), dropout3d: (C, D, H, W)) drop whole channels too
    y1 = F.dropout1d(ember.ones(64, 7), 0.5).numpy()
    assert bool(np.all(y1.min(-1) == y1.max(-1)))
    y3 = F.dropout3d(ember.ones(64, 2, 2, 2), 0.5).numpy().reshape(64, -1)
    assert bool(np.all(y3.min(-1) == y3.max(-1)))


@pytest.mark.parametrize("name", ["dropout", "dropout2d", "alpha_dropout"])
def test_inplace(name):
    ember.manual_seed(4)
    x = ember.ones(SHAPE[name])
    y = getattr(F, name)(x, 0.5, training=True, inplace=True)
    assert y is x
    assert 0.4 < float((x == 0).float().mean() if "alpha" not in name else
                       (x < 0).float().mean()) < 0.6
    # in-place on a non-leaf keeps autograd working
    leaf = ember.ones(SHAPE[name], requires_grad=True)
    out = getattr(F, name)(leaf * 2, 0.5, training=True, inplace=True)
    out.sum().backward()
    assert leaf.grad is not None and tuple(leaf.grad.shape) == SHAPE[name]
    with pytest.raises(RuntimeError, match="leaf Variable"):
        getattr(F, name)(leaf, 0.5, training=True, inplace=True)


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_probability_errors(name, p):
    with pytest.raises(ValueError, match="between 0 and 1"):
        getattr(F, name)(ember.ones(2, 3, 4, 5), p)
    with pytest.raises(ValueError, match="between 0 and 1"):
        getattr(TF, name)(torch.ones(2, 3, 4, 5), p)


@pytest.mark.parametrize("name", MODULES)
def test_module_probability_errors_and_repr(name):
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError, match="between 0 and 1"):
            getattr(nn, name)(p)
        with pytest.raises(ValueError, match="between 0 and 1"):
            getattr(torch.nn, name)(p)
    for args in ((), (0.2,), (0.3, True)):
        assert repr(getattr(nn, name)(*args)) == repr(getattr(torch.nn, name)(*args))
    assert list(getattr(nn, name)().state_dict()) == []


@pytest.mark.parametrize("name,fname", list(zip(MODULES, FUNCTIONS)))
def test_module_train_and_eval(name, fname):
    ember.manual_seed(5)
    module = getattr(nn, name)(0.4)
    x = ember.ones(SHAPE[fname], dtype=ember.float64) * 2
    train_out = module(x)
    if "Alpha" in name:
        assert float((train_out != 2).float().mean()) > 0.3
    else:
        fraction = _zeroed_fraction_of_channels(train_out, name != "Dropout")
        assert 0.3 < fraction < 0.5
    module.eval()
    assert_same(module(x), torch.full(SHAPE[fname], 2.0, dtype=torch.float64))


def test_dimension_rules_and_warnings():
    with pytest.raises(RuntimeError, match="Expected 2D or 3D input"):
        F.dropout1d(ember.ones(3), 0.5)
    with pytest.raises(RuntimeError, match="Expected 2D or 3D input"):
        TF.dropout1d(torch.ones(3), 0.5)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        F.feature_alpha_dropout(ember.ones(3), 0.5, True)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        TF.feature_alpha_dropout(torch.ones(3), 0.5, True)
    for fn, shape, pattern in ((F.dropout2d, (3, 3), "Received a 2-D input"),
                               (F.dropout2d, (2, 3, 4), "channel-wise 1D dropout"),
                               (F.dropout3d, (3, 3, 3), "Received a 3-D input")):
        with pytest.warns(UserWarning, match=pattern):
            fn(ember.ones(shape), 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.dropout2d(ember.ones(2, 3, 4, 4), 0.5)
        F.dropout3d(ember.ones(3, 2, 2, 2), 0.5)


@pytest.mark.parametrize("dtype", ["bool", "int64", "complex64", "float16", "bfloat16",
                                   "float32"])
def test_dtypes_match_torch(dtype):
    e_dtype, t_dtype = DTYPE_PAIRS[dtype]
    e = ember.ones(20, 30).to(e_dtype)
    t = torch.ones(20, 30).to(t_dtype)
    for name in ("dropout", "alpha_dropout"):
        try:
            expected = getattr(TF, name)(t, 0.5, True)
        except Exception as error:
            with pytest.raises(type(error)):
                getattr(F, name)(e, 0.5, True)
            continue
        result = getattr(F, name)(e, 0.5, True)
        assert result.dtype.name == str(expected.dtype).removeprefix("torch.")
        assert tuple(result.shape) == tuple(expected.shape)


def test_meta_device_and_zero_size():
    e = ember.empty((2, 3, 4), device="meta")
    for name in ("dropout", "dropout1d", "alpha_dropout", "feature_alpha_dropout"):
        out = getattr(F, name)(e, 0.5, True)
        assert out.device.type == "meta" and tuple(out.shape) == (2, 3, 4)
    empty, t_empty = make_pair(np.zeros((0, 3)))
    assert_same(F.dropout(empty, 0.5), TF.dropout(t_empty, 0.5))


def test_seeded_masks_are_reproducible():
    ember.manual_seed(7)
    a = F.dropout(ember.ones(100), 0.5)
    ember.manual_seed(7)
    b = F.dropout(ember.ones(100), 0.5)
    assert bool((a == b).all())
