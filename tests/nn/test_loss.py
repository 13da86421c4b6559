"""Losses (functional and modules) against torch: values, gradients (float64 with double
backward, float32), every reduction and option, extreme logits, ignore_index, errors."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from conftest import assert_grads_match, assert_same, to_ember
from ember import nn

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

REDUCTIONS = ["none", "mean", "sum"]
RNG = np.random.default_rng(0)


def _e(v):
    return ember.tensor(v) if isinstance(v, np.ndarray) else v


def _t(v):
    return torch.from_numpy(v.copy()) if isinstance(v, np.ndarray) else v


NO_TARGET_GRAD = {"soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss"}


def check(name, *arrays, const=None, double_backward=True, rtol=None, atol=None, **kwargs):
    """F.name vs torch's on ``arrays`` (float ones require grad, except the target of losses
    torch does not differentiate w.r.t. it); ``const`` are keyword tensors that do not require
    grad (weights, pos_weight)."""
    const = const or {}
    fixed = {1: arrays[1]} if name in NO_TARGET_GRAD else {}
    arrays = [a for i, a in enumerate(arrays) if i not in fixed]

    def call(fn, convert, xs):
        xs = list(xs)
        for i, v in fixed.items():
            xs.insert(i, convert(v))
        return fn(*xs, **{k: convert(v) for k, v in const.items()}, **kwargs)

    assert_grads_match(lambda *xs: call(getattr(F, name), _e, xs),
                       lambda *xs: call(getattr(TF, name), _t, xs), *arrays,
                       double_backward=double_backward, rtol=rtol, atol=atol)


def rand(*shape, dtype=np.float64, seed=None):
    rng = RNG if seed is None else np.random.default_rng(seed)
    return rng.standard_normal(shape).astype(dtype)


def both(fn_name, *args, **kwargs):
    """Call F.fn_name and torch's on the same numpy arguments; return (ember, torch) results."""
    return (getattr(F, fn_name)(*[_e(a) for a in args], **{k: _e(v) for k, v in kwargs.items()}),
            getattr(TF, fn_name)(*[_t(a) for a in args], **{k: _t(v) for k, v in kwargs.items()}))


def raises_like(fn_name, *args, match=None, **kwargs):
    """ember raises the same exception type as torch for these arguments."""
    with pytest.raises(Exception) as expected:
        getattr(TF, fn_name)(*[_t(a) for a in args], **{k: _t(v) for k, v in kwargs.items()})
    with pytest.raises(expected.type, match=match):
        getattr(F, fn_name)(*[_e(a) for a in args], **{k: _e(v) for k, v in kwargs.items()})


# ---------------------------------------------------------------- regression losses


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name,kw", [("l1_loss", {}), ("mse_loss", {}),
                                     ("smooth_l1_loss", {}), ("smooth_l1_loss", {"beta": 0.5}),
                                     ("smooth_l1_loss", {"beta": 0.0}),
                                     ("huber_loss", {}), ("huber_loss", {"delta": 0.3}),
                                     ("soft_margin_loss", {})])
@pytest.mark.parametrize("shape", [(3, 4), (), (0, 3), (2, 3, 2)])
def test_pointwise_losses_float64(name, kw, reduction, shape):
    check(name, rand(*shape), rand(*shape), reduction=reduction, **kw)


@pytest.mark.parametrize("name", ["l1_loss", "mse_loss", "smooth_l1_loss", "huber_loss",
                                  "soft_margin_loss"])
def test_pointwise_losses_float32_and_transposed(name):
    x, t = rand(4, 3, dtype=np.float32), rand(3, 4, dtype=np.float32)
    check(name, x, t.T.copy(), double_backward=False)
    e = getattr(F, name)(ember.tensor(t).t(), ember.tensor(x))
    assert_same(e, getattr(TF, name)(torch.from_numpy(t).t(), torch.from_numpy(x)))


@pytest.mark.parametrize("name", ["l1_loss", "mse_loss", "smooth_l1_loss", "huber_loss"])
def test_broadcast_target_warns_like_torch(name):
    with pytest.warns(UserWarning, match="different to the input size"):
        getattr(F, name)(ember.zeros(3, 4), ember.ones(4))
    check(name, rand(3, 4), rand(4))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", ["l1_loss", "mse_loss", "huber_loss"])
def test_elementwise_weight(name, reduction):
    w = np.abs(rand(3, 4)) + 0.1
    check(name, rand(3, 4), rand(3, 4), const={"weight": w}, reduction=reduction)
    raises_like(name, rand(3, 4), rand(3, 4), weight=np.ones((4,)), match="same size")


def test_regression_errors():
    raises_like("smooth_l1_loss", rand(3), rand(3), beta=-1.0, match="negative values for beta")
    raises_like("huber_loss", rand(3), rand(3), delta=0.0, match="non-positive values for delta")
    raises_like("l1_loss", rand(3), rand(3), reduction="bogus", match="not a valid value")
    raises_like("mse_loss", np.arange(3), np.arange(3))
    raises_like("l1_loss", rand(2), rand(3))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_extreme_soft_margin_matches_closed_form(dtype):
    """Where torch's log1p(exp(-y * x)) overflows (inf loss, nan gradient: in float16 from
    -y * x > 11) ember keeps the exact value log(1 + exp(-y * x)) and its gradient
    -y * sigmoid(-y * x); where torch stays finite the two agree."""
    x = np.array([-1e4, 1e4, 0.0, 50.0, -30.0, 12.0, 0.5])
    y = np.array([1.0, -1.0, 1.0, -1.0, 1.0, 1.0, -1.0])
    e = ember.tensor(x, requires_grad=True)
    low = getattr(ember, dtype)
    loss = F.soft_margin_loss(e.to(low), ember.tensor(y).to(low), reduction="none")
    loss.sum().backward()
    margin = -y * x
    exact, slope = np.logaddexp(0.0, margin), -y / (1.0 + np.exp(-margin))
    rtol = 1e-2 if dtype == "float16" else 1e-6
    np.testing.assert_allclose(loss.detach().double().numpy(), exact, rtol=rtol, atol=1e-6)
    np.testing.assert_allclose(e.grad.numpy(), slope, rtol=rtol, atol=1e-6)
    t = torch.tensor(x).to(getattr(torch, dtype))
    expected = TF.soft_margin_loss(t, torch.tensor(y).to(t.dtype), reduction="none")
    finite = torch.isfinite(expected).numpy()
    np.testing.assert_allclose(loss.detach().double().numpy()[finite],
                               expected.double().numpy()[finite], rtol=rtol, atol=1e-6)
    check("soft_margin_loss", np.array([-30.0, 30.0, 0.5]), np.array([1.0, -1.0, 1.0]))


# ---------------------------------------------------------------- deprecated flags


@pytest.mark.parametrize("size_average,reduce", [(None, False), (False, None), (False, True),
                                                 (True, None), (True, False), (None, True)])
@pytest.mark.parametrize("name", ["l1_loss", "mse_loss", "soft_margin_loss",
                                  "binary_cross_entropy_with_logits", "kl_div",
                                  "smooth_l1_loss"])
def test_legacy_size_average_reduce(name, size_average, reduce):
    x, t = rand(2, 3), np.abs(rand(2, 3))
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        e = getattr(F, name)(ember.tensor(x), ember.tensor(t), size_average=size_average,
                             reduce=reduce)
    assert_same(e, getattr(TF, name)(torch.from_numpy(x), torch.from_numpy(t),
                                     size_average=size_average, reduce=reduce))


@pytest.mark.parametrize("size_average,reduce", [(None, False), (False, None), (True, True)])
def test_legacy_flags_class_losses(size_average, reduce):
    x, t = rand(4, 3), np.array([0, 2, 1, 2])
    for name in ("cross_entropy", "nll_loss", "multi_margin_loss"):
        e, r = both(name, x, t, size_average=size_average, reduce=reduce)
        assert_same(e, r)


# ---------------------------------------------------------------- cross entropy / nll


CE_SHAPES = [((5, 4), (5,)), ((4,), ()), ((3, 4, 2), (3, 2)), ((2, 3, 2, 3), (2, 2, 3)),
             ((2, 3, 2, 1, 2), (2, 2, 1, 2)), ((0, 4), (0,))]


def _targets(shape, classes, seed=1, ignore=None):
    t = np.random.default_rng(seed).integers(0, classes, size=shape)
    if ignore is not None and t.size:
        t.reshape(-1)[::3] = ignore
    return t


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shapes", CE_SHAPES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [-100, 1])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.15])
def test_cross_entropy_class_indices(shapes, reduction, weighted, ignore_index, label_smoothing):
    x_shape, t_shape = shapes
    classes = x_shape[0] if len(x_shape) == 1 else x_shape[1]
    t = _targets(t_shape, classes, ignore=ignore_index if ignore_index >= 0 else None)
    const = {"weight": np.abs(rand(classes, seed=2)) + 0.2} if weighted else {}
    check("cross_entropy", rand(*x_shape), t, const=const, reduction=reduction,
          ignore_index=ignore_index, label_smoothing=label_smoothing)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shapes", CE_SHAPES)
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss(shapes, reduction, weighted):
    x_shape, t_shape = shapes
    classes = x_shape[0] if len(x_shape) == 1 else x_shape[1]
    t = _targets(t_shape, classes, seed=3, ignore=-100 if len(t_shape) else None)
    const = {"weight": np.abs(rand(classes, seed=4)) + 0.2} if weighted else {}
    # nll is linear in its input: its gradient is constant (no double backward to compare)
    check("nll_loss", rand(*x_shape), t, const=const, reduction=reduction,
          double_backward=False)
    check("nll_loss", rand(*x_shape), _targets(t_shape, classes, seed=5, ignore=0),
          const=const, reduction=reduction, ignore_index=0, double_backward=False)


def test_nll_loss_byte_target_and_all_ignored():
    x = rand(3, 4)
    check("nll_loss", x, np.array([1, 3, 0], dtype=np.uint8), double_backward=False)
    for reduction in REDUCTIONS:
        e, t = both("nll_loss", x, np.full(3, -100), reduction=reduction)
        assert_same(e, t)
        e, t = both("cross_entropy", x, np.full(3, -100), reduction=reduction,
                    label_smoothing=0.2, weight=np.ones(4))
        assert_same(e, t)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [0.05, 6.0])
def test_cross_entropy_fused_path_matches_torch(reduction, dtype, scale):
    """A (N, C) CPU input with in-range class indices runs one fused op (four passes over the
    logits); its loss, gradient (first order: the fused backward kernel; second: the composite
    replayed) and grad_fn name are torch's. Logits within log(C) of each other (scale 0.05)
    share one shift, wider ones (6.0) are shifted by each row's maximum."""
    x = rand(64, 50, dtype=dtype) * scale
    t = _targets((64,), 50, seed=7)
    e_x, t_x = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    e_loss = F.cross_entropy(e_x, ember.tensor(t), reduction=reduction)
    t_loss = TF.cross_entropy(t_x, torch.tensor(t), reduction=reduction)
    assert e_loss.grad_fn.name() == type(t_loss.grad_fn).__name__ == "NllLossBackward0"
    assert_same(e_loss, t_loss)
    seed = rand(*t_loss.shape, dtype=dtype, seed=8)
    (e_loss * ember.tensor(seed)).sum().backward()
    (t_loss * torch.tensor(seed)).sum().backward()
    assert_same(e_x.grad, t_x.grad)
    check("cross_entropy", x[:6, :5], t[:6] % 5, reduction=reduction)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_float32_and_noncontiguous(dtype):
    x = rand(4, 6, dtype=dtype)
    t = np.array([0, 3, 1, 2])
    check("cross_entropy", x, t, double_backward=False, label_smoothing=0.1,
          const={"weight": np.linspace(0.5, 1.5, 6).astype(dtype)})
    e = F.cross_entropy(ember.tensor(x).t(), ember.tensor(np.array([1, 0, 3, 2, 2, 1])))
    r = TF.cross_entropy(torch.from_numpy(x).t(), torch.tensor([1, 0, 3, 2, 2, 1]))
    assert_same(e, r)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(4, 5), (5,), (2, 3, 4)])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.3])
def test_cross_entropy_class_probabilities(shape, reduction, weighted, label_smoothing):
    classes = shape[0] if len(shape) == 1 else shape[1]
    cdim = 0 if len(shape) == 1 else 1
    probs = np.random.default_rng(7).random(shape)
    probs /= probs.sum(axis=cdim, keepdims=True)
    const = {"weight": np.abs(rand(classes, seed=8)) + 0.2} if weighted else {}
    check("cross_entropy", rand(*shape), probs, const=const, reduction=reduction,
          label_smoothing=label_smoothing)


@pytest.mark.parametrize("name", ["cross_entropy", "binary_cross_entropy_with_logits",
                                  "multilabel_soft_margin_loss"])
def test_extreme_logits_are_finite_and_match(name):
    x = np.array([[1e4, -1e4, 0.0], [-1e4, 1e4, 5.0]])
    if name == "cross_entropy":
        targets = [np.array([1, 0]), np.array([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5]])]
    else:
        targets = [np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]])]
    for t in targets:
        for reduction in REDUCTIONS:
            check(name, x, t, reduction=reduction, double_backward=False)
        e = ember.tensor(x, requires_grad=True)
        loss = getattr(F, name)(e, ember.tensor(t))
        loss.backward()
        assert np.isfinite(float(loss)) and np.isfinite(e.grad.numpy()).all()


def test_cross_entropy_low_precision():
    x = rand(4, 5, dtype=np.float32)
    t = np.array([0, 4, 2, 1])
    for e_dtype, t_dtype in ((ember.float16, torch.float16), (ember.bfloat16, torch.bfloat16)):
        e = F.cross_entropy(ember.tensor(x).to(e_dtype), ember.tensor(t))
        r = TF.cross_entropy(torch.from_numpy(x).to(t_dtype), torch.from_numpy(t))
        assert_same(e, r, rtol=2e-2, atol=2e-2)


def test_cross_entropy_and_nll_errors():
    x = rand(3, 5)
    for name in ("cross_entropy", "nll_loss"):
        raises_like(name, x, np.array([1, 2, 7]), match="Target 7 is out of bounds")
        raises_like(name, x, np.array([1, -1, 0]), match="out of bounds")
        raises_like(name, x, np.array([1, 2]), match="batch_size")
        raises_like(name, x, np.array([1, 2, 0], dtype=np.int32), match="Long or Byte")
        raises_like(name, x, np.array([1, 2, 0]), weight=np.ones(4), match="all 5 classes")
        raises_like(name, rand(2, 3, 4), np.zeros((2, 3), dtype=np.int64), match="target size")
        raises_like(name, rand(2, 3, 4, 5), np.zeros((2, 3, 4), dtype=np.int64),
                    match="size mismatch")
        raises_like(name, x, np.array([1, 2, 0]), reduction="bogus", match="not a valid")
        raises_like(name, x, np.zeros((3, 2), dtype=np.int64), match="multi-target")
    raises_like("nll_loss", rand(), np.array(2), match="Expected 1 or more dimensions")
    raises_like("nll_loss", x, np.array([1, 2, 0]), weight=np.ones(5, dtype=np.float32),
                match="expected scalar type")
    raises_like("cross_entropy", x, np.array([1, 2, 0]), label_smoothing=1.5,
                match="label_smoothing must be between")
    raises_like("cross_entropy", x, np.random.default_rng(0).random((3, 5)), ignore_index=1,
                match="ignore_index is not supported")
    raises_like("cross_entropy", rand(), np.array(2), match="Expected floating point type")


# ---------------------------------------------------------------- binary cross entropy


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weight_shape", [None, (3, 4), (4,), (1, 4)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_binary_cross_entropy(reduction, weight_shape, dtype):
    rng = np.random.default_rng(9)
    x = rng.uniform(0.05, 0.95, (3, 4)).astype(dtype)
    t = rng.random((3, 4)).astype(dtype)
    const = {} if weight_shape is None else {"weight": rng.random(weight_shape).astype(dtype)}
    check("binary_cross_entropy", x, t, const=const, reduction=reduction,
          double_backward=dtype == np.float64)


def test_binary_cross_entropy_clamps_at_0_and_1():
    x = np.array([0.0, 1.0, 0.0, 1.0, 1e-50, 0.5])
    t = np.array([0.0, 1.0, 1.0, 0.0, 1.0, 0.5])
    for reduction in REDUCTIONS:
        check("binary_cross_entropy", x, t, reduction=reduction, double_backward=False)


def test_binary_cross_entropy_errors_and_meta():
    raises_like("binary_cross_entropy", np.array([1.5]), np.array([1.0]),
                match="input should be between 0 and 1")
    raises_like("binary_cross_entropy", np.array([np.nan]), np.array([1.0]),
                match="input should be between 0 and 1")
    raises_like("binary_cross_entropy", np.array([0.5]), np.array([2.0]),
                match="target should be between 0 and 1")
    raises_like("binary_cross_entropy", np.array([0.5]), np.array([1.0, 0.0]),
                match="different to the input size")
    raises_like("binary_cross_entropy", np.array([0.5], dtype=np.float32), np.array([1.0]),
                match="Found dtype Double but expected Float")
    m = F.binary_cross_entropy(ember.empty(2, 3, device="meta"), ember.empty(2, 3,
                                                                             device="meta"),
                               reduction="none")
    assert m.device.type == "meta" and tuple(m.shape) == (2, 3) and m.dtype is ember.float32


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("pos_weight", [None, (4,), (3, 4)])
def test_binary_cross_entropy_with_logits(reduction, weighted, pos_weight):
    rng = np.random.default_rng(10)
    const = {}
    if weighted:
        const["weight"] = rng.random((4,))
    if pos_weight is not None:
        const["pos_weight"] = rng.random(pos_weight) * 3
    check("binary_cross_entropy_with_logits", rand(3, 4) * 3, rng.random((3, 4)), const=const,
          reduction=reduction)
    check("binary_cross_entropy_with_logits", rand(3, 4, dtype=np.float32),
          rng.random((3, 4)).astype(np.float32),
          const={k: v.astype(np.float32) for k, v in const.items()}, reduction=reduction,
          double_backward=False)


def test_binary_cross_entropy_with_logits_errors():
    raises_like("binary_cross_entropy_with_logits", rand(2), rand(3), match="must be the same")
    raises_like("binary_cross_entropy_with_logits", rand(2), rand(2), reduction="avg",
                match="not a valid value")


# ---------------------------------------------------------------- KL, Poisson, Gaussian


@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
@pytest.mark.parametrize("shape", [(3, 4), (4,), ()])
def test_kl_div(reduction, log_target, shape):
    logp = rand(*shape)
    if log_target:
        target = rand(*shape, seed=11)
    else:
        target = np.abs(rand(*shape, seed=11))
        if target.size > 1:
            target.reshape(-1)[0] = 0.0  # xlogy(0, 0) = 0
    check("kl_div", logp, target, reduction=reduction, log_target=log_target)


def test_kl_div_mean_warns_like_torch():
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(ember.zeros(2), ember.ones(2))
    raises_like("kl_div", rand(2), rand(2), reduction="avg", match="not a valid value")


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input", [True, False])
@pytest.mark.parametrize("full", [False, True])
def test_poisson_nll_loss(reduction, log_input, full):
    rng = np.random.default_rng(12)
    x = rand(3, 4) if log_input else rng.uniform(0.1, 3, (3, 4))
    target = rng.uniform(0.2, 4, (3, 4))
    target[0, 0] = 1.0
    check("poisson_nll_loss", x, target, reduction=reduction, log_input=log_input, full=full)
    e, t = both("poisson_nll_loss", x, np.array(rng.integers(0, 4, (3, 4)), dtype=np.float64),
                reduction=reduction, log_input=log_input, full=full, eps=1e-3)
    assert_same(e, t)
    raises_like("poisson_nll_loss", x, target, reduction="x", match="not a valid value")


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("var_shape", [(4, 3), (4,), (4, 1), (1, 3), "float"])
@pytest.mark.parametrize("full", [False, True])
def test_gaussian_nll_loss(reduction, var_shape, full):
    rng = np.random.default_rng(13)
    x, t = rand(4, 3), rand(4, 3, seed=14)
    if var_shape == "float":
        e, r = both("gaussian_nll_loss", x, t, 0.7, reduction=reduction, full=full)
        assert_same(e, r)
        return
    var = rng.uniform(0.1, 2, var_shape)
    var.reshape(-1)[0] = 1e-9  # below eps: clamped, gradient still flows
    check("gaussian_nll_loss", x, t, var, reduction=reduction, full=full)


def test_gaussian_nll_loss_errors():
    raises_like("gaussian_nll_loss", rand(3, 5), rand(3, 5), -np.ones((3, 5)),
                match="negative entry")
    raises_like("gaussian_nll_loss", rand(3, 5), rand(3, 5), np.ones((3, 4)),
                match="incorrect size")
    raises_like("gaussian_nll_loss", rand(3, 5), rand(3, 5), -1.0, match="negative entry")
    raises_like("gaussian_nll_loss", rand(3, 5), rand(3, 5), np.ones((3, 5)), reduction="x",
                match="is not valid")


# ---------------------------------------------------------------- margin losses


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_multilabel_soft_margin_loss(reduction, weighted):
    rng = np.random.default_rng(15)
    const = {"weight": rng.random(5)} if weighted else {}
    check("multilabel_soft_margin_loss", rand(3, 5), (rng.random((3, 5)) > 0.5) * 1.0,
          const=const, reduction=reduction)
    check("multilabel_soft_margin_loss", rand(5), (rng.random(5) > 0.5) * 1.0, const=const,
          reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss(reduction):
    x = rand(4, 5)
    target = np.array([[3, 0, -1, 1, 1], [0, 1, 2, 3, 4], [-1, 2, 2, 2, 2], [4, 4, 1, -1, 3]])
    # torch has no double backward for multilabel_margin_loss
    check("multilabel_margin_loss", x, target, reduction=reduction, double_backward=False)
    check("multilabel_margin_loss", rand(5), np.array([2, 4, -1, 0, 0]), reduction=reduction,
          double_backward=False)
    check("multilabel_margin_loss", rand(4, 5, dtype=np.float32), target, reduction=reduction,
          double_backward=False)


def test_multilabel_margin_loss_errors():
    x = rand(3, 5)
    raises_like("multilabel_margin_loss", x, np.array([[1, 2, 9, -1, 0]] * 3),
                match="out of range")
    raises_like("multilabel_margin_loss", x, np.array([[1, -2, 0, 0, 0]] * 3),
                match="out of range")
    raises_like("multilabel_margin_loss", x, np.array([[1, -1, 0, 0, 0]] * 2),
                match="inconsistent target size")
    raises_like("multilabel_margin_loss", x, np.array([[1, -1, 0, 0, 0]] * 3, dtype=np.int32),
                match="Long")
    raises_like("multilabel_margin_loss", rand(2, 3, 4), np.zeros((2, 3, 4), dtype=np.int64),
                match="non-empty vector or matrix")


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("margin", [1.0, 0.3])
@pytest.mark.parametrize("weighted", [False, True])
def test_multi_margin_loss(reduction, p, margin, weighted):
    const = {"weight": np.abs(rand(5, seed=16)) + 0.1} if weighted else {}
    # torch has no double backward for multi_margin_loss
    kw = dict(const=const, p=p, margin=margin, reduction=reduction, double_backward=False)
    check("multi_margin_loss", rand(4, 5) * 0.5, np.array([0, 4, 2, 2]), **kw)
    check("multi_margin_loss", rand(5) * 0.5, np.array(3), **kw)
    check("multi_margin_loss", rand(5) * 0.5, np.array([1]), **kw)


def test_multi_margin_loss_errors():
    x = rand(3, 5)
    raises_like("multi_margin_loss", x, np.array([1, 2, 7]), match="target out of range")
    raises_like("multi_margin_loss", x, np.array([1, 2, 0]), p=3, match="only p == 1 and p == 2")
    raises_like("multi_margin_loss", x, np.array([1, 2]), match="Expected target size")
    raises_like("multi_margin_loss", x, np.array([1, 2, 0]), weight=np.ones(4),
                match="inconsistent weight size")
    raises_like("multi_margin_loss", x, np.array([1, 2, 0]), weight=np.ones((5, 1)),
                match="one-dimensional")
    raises_like("multi_margin_loss", x, np.array([1, 2, 0], dtype=np.int32), match="Long")
    raises_like("multi_margin_loss", rand(2, 3, 4), np.array([1, 1]), match="non-empty")


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [1.0, 0.2])
def test_hinge_embedding_loss(reduction, margin):
    target = np.where(np.random.default_rng(17).random((3, 4)) > 0.5, 1.0, -1.0)
    target[0, 0] = 0.5  # neither +1 nor -1: both terms, as torch
    check("hinge_embedding_loss", rand(3, 4), target, margin=margin, reduction=reduction)
    check("hinge_embedding_loss", rand(4), np.array([1, -1, 1, -1]), margin=margin,
          reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.3, -0.5])
def test_cosine_embedding_loss(reduction, margin):
    check("cosine_embedding_loss", rand(4, 3), rand(4, 3), np.array([1, -1, 1, -1]),
          margin=margin, reduction=reduction)
    check("cosine_embedding_loss", rand(3), rand(3), np.array(-1), margin=margin,
          reduction=reduction)
    check("cosine_embedding_loss", rand(3, dtype=np.float32), rand(3, dtype=np.float32),
          np.array(1), margin=margin, reduction=reduction, double_backward=False)


def test_cosine_embedding_loss_errors():
    raises_like("cosine_embedding_loss", rand(3, 5), rand(3, 5), np.ones((3, 1)),
                match="multi-target")
    raises_like("cosine_embedding_loss", rand(3, 5), rand(3, 5), np.ones(()),
                match="0D target tensor expects 1D input tensors")
    raises_like("cosine_embedding_loss", rand(5), rand(5), np.ones(3),
                match="1D target tensor expects 2D input tensors")


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.5])
def test_margin_ranking_loss(reduction, margin):
    check("margin_ranking_loss", rand(6), rand(6), np.sign(rand(6)), margin=margin,
          reduction=reduction)
    check("margin_ranking_loss", rand(2, 3), rand(2, 3), np.sign(rand(2, 3)), margin=margin,
          reduction=reduction)
    raises_like("margin_ranking_loss", rand(3, 5), rand(3, 5), np.ones(3),
                match="should have same dimension")


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [1.0, 2.0, 3.0])
@pytest.mark.parametrize("swap", [False, True])
def test_triplet_margin_loss(reduction, p, swap):
    a, pos, neg = rand(5, 4), rand(5, 4), rand(5, 4)
    check("triplet_margin_loss", a, pos, neg, p=p, swap=swap, margin=1.5, reduction=reduction)
    check("triplet_margin_loss", a[0], pos[0], neg[0], p=p, swap=swap, reduction=reduction,
          eps=1e-3)


def test_triplet_margin_loss_errors():
    raises_like("triplet_margin_loss", rand(3, 5), rand(3, 5), rand(5), match="same number")
    raises_like("triplet_margin_loss", rand(3, 5), rand(3, 5), rand(3, 5), margin=0.0,
                match="margin must be greater than 0")


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("custom", [False, True])
def test_triplet_margin_with_distance_loss(reduction, swap, custom):
    kw = {}
    if custom:
        def distance(x, y):
            return 1.0 - (x * y).sum(-1) / ((x * x).sum(-1) * (y * y).sum(-1)).sqrt()
        kw["distance_function"] = distance
    check("triplet_margin_with_distance_loss", rand(5, 4), rand(5, 4), rand(5, 4), swap=swap,
          reduction=reduction, margin=0.7, **kw)


def test_triplet_margin_with_distance_loss_errors():
    name = "triplet_margin_with_distance_loss"
    raises_like(name, rand(3, 5), rand(3, 5), rand(5), match="same number")
    raises_like(name, rand(3, 5), rand(3, 5), rand(3, 5), margin=-1.0, match="greater than 0")
    raises_like(name, rand(3, 5), rand(3, 5), rand(3, 5), reduction="x", match="not a valid")


# ---------------------------------------------------------------- CTC


def _ctc_case(steps=12, batch=3, classes=5, lengths=(12, 9, 7), target_lengths=(4, 2, 3),
              seed=18, dtype=np.float64):
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((steps, batch, classes))
    log_probs = (logits - np.log(np.exp(logits).sum(-1, keepdims=True))).astype(dtype)
    targets = rng.integers(1, classes, (batch, max(target_lengths)))
    targets[0, 1] = targets[0, 2]  # a repeated label (needs a blank between)
    return log_probs, targets, list(lengths), list(target_lengths)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("layout", ["padded", "concatenated", "tensor_lengths", "int32"])
def test_ctc_loss(reduction, zero_infinity, layout):
    lp, targets, lengths, target_lengths = _ctc_case()
    if layout == "concatenated":
        targets = np.concatenate([row[:n] for row, n in zip(targets, target_lengths)])
    if layout == "int32":
        targets = targets.astype(np.int32)

    def run(lib, fn):
        def loss(log_probs, tg):
            il, tl = lengths, target_lengths
            if layout == "tensor_lengths":
                il, tl = lib.tensor(il), lib.tensor(tl)
            return fn(log_probs, tg, il, tl, blank=0, reduction=reduction,
                      zero_infinity=zero_infinity)
        return loss
    assert_grads_match(run(ember, F.ctc_loss), run(torch, TF.ctc_loss), lp, targets)


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_impossible_alignments_and_empty(zero_infinity):
    # sample 1: target longer than input (inf); sample 2: empty input and target (0)
    lp, targets, _, _ = _ctc_case(steps=6, lengths=(6, 1, 0), target_lengths=(3, 2, 0))
    for reduction in REDUCTIONS:
        def loss(fn, lib):
            return lambda x, t: fn(x, t, [6, 1, 0], [3, 2, 0], reduction=reduction,
                                   zero_infinity=zero_infinity)
        assert_grads_match(loss(F.ctc_loss, ember), loss(TF.ctc_loss, torch), lp, targets)


def test_ctc_loss_through_log_softmax_float32_blank_and_unbatched():
    rng = np.random.default_rng(19)
    logits = rng.standard_normal((10, 2, 6)).astype(np.float32)
    targets = np.array([[1, 2, 3], [4, 4, 0]])

    def make(fn, sm):
        return lambda x, t: fn(sm(x, 2), t, [10, 8], [3, 2], blank=5)
    assert_grads_match(make(F.ctc_loss, F.log_softmax), make(TF.ctc_loss, TF.log_softmax),
                       logits, targets, rtol=1e-4, atol=1e-5)
    lp = (logits[:, 0] - np.log(np.exp(logits[:, 0]).sum(-1, keepdims=True))).astype(np.float64)
    for reduction in REDUCTIONS:
        assert_grads_match(
            lambda x, t: F.ctc_loss(x, t, ember.tensor(10), ember.tensor(3), reduction=reduction),
            lambda x, t: TF.ctc_loss(x, t, torch.tensor(10), torch.tensor(3),
                                     reduction=reduction),
            lp, np.array([1, 2, 2]))


def test_ctc_loss_long_sequence_stable():
    lp, targets, lengths, target_lengths = _ctc_case(steps=200, batch=4, classes=8,
                                                     lengths=(200, 150, 180, 120),
                                                     target_lengths=(40, 30, 1, 25), seed=20)
    assert_grads_match(lambda x, t: F.ctc_loss(x, t, lengths, target_lengths, reduction="sum"),
                       lambda x, t: TF.ctc_loss(x, t, lengths, target_lengths, reduction="sum"),
                       lp, targets)


def test_ctc_loss_errors():
    lp, targets, lengths, target_lengths = _ctc_case()
    cases = [dict(input_lengths=[13, 9, 7], match="at most 12"),
             dict(input_lengths=[12, -1, 7], match="at least 0"),
             dict(target_lengths=[5, 2, 3], match="size at least 5"),
             dict(target_lengths=[-1, 2, 3], match="at least 0"),
             dict(input_lengths=[12, 9], match="input_lengths must be of size batch_size"),
             dict(target_lengths=[4, 2], match="target_lengths must be of size batch_size"),
             dict(blank=5, match="blank must be in label range"),
             dict(blank=-1, match="blank must be in label range"),
             dict(reduction="x", match="not a valid value")]
    for case in cases:
        match = case.pop("match")
        kwargs = {"input_lengths": lengths, "target_lengths": target_lengths, **case}
        raises_like("ctc_loss", lp, targets, match=match, **kwargs)
    raises_like("ctc_loss", lp.astype(np.int32), targets, lengths, target_lengths,
                match="not implemented")


# ---------------------------------------------------------------- meta device


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_meta_device_shapes_and_dtypes(reduction):
    def meta(*shape, dtype=ember.float32):
        return ember.empty(*shape, device="meta", dtype=dtype)
    x, t = meta(3, 4), meta(3, 4)
    idx = ember.empty(3, dtype=ember.int64, device="meta")
    cases = [(F.l1_loss, (x, t)), (F.mse_loss, (x, t)), (F.smooth_l1_loss, (x, t)),
             (F.huber_loss, (x, t)), (F.soft_margin_loss, (x, t)),
             (F.binary_cross_entropy_with_logits, (x, t)), (F.cross_entropy, (x, idx)),
             (F.nll_loss, (x, idx)), (F.cross_entropy, (x, t)),
             (F.multilabel_soft_margin_loss, (x, t)), (F.hinge_embedding_loss, (x, t)),
             (F.poisson_nll_loss, (x, t)), (F.multi_margin_loss, (x, idx)),
             (F.cosine_embedding_loss, (x, t, meta(3))), (F.margin_ranking_loss, (x, t, t)),
             (F.triplet_margin_loss, (x, t, t))]
    for fn, args in cases:
        e = fn(*args, reduction=reduction)
        r = fn.__name__
        t_args = [torch.empty(tuple(a.shape), dtype=torch.int64 if a.dtype is ember.int64
                              else torch.float32) for a in args]
        if "cross_entropy" in r or "nll" in r or "multi_margin" in r:
            t_args[1] = t_args[1].zero_() if t_args[1].dtype == torch.int64 else \
                t_args[1].uniform_()
        expected = getattr(TF, r)(*t_args, reduction=reduction)
        assert e.device.type == "meta", r
        assert tuple(e.shape) == tuple(expected.shape), r
        assert e.dtype.name == str(expected.dtype).removeprefix("torch."), r
    lp = meta(6, 2, 4)
    loss = F.ctc_loss(lp, ember.empty(2, 3, dtype=ember.int64, device="meta"), [6, 5], [3, 2],
                      reduction=reduction)
    assert loss.device.type == "meta" and tuple(loss.shape) == ((2,) if reduction == "none"
                                                                else ())


# ---------------------------------------------------------------- modules


MODULES = [
    ("L1Loss", {}, "l1"), ("MSELoss", {"reduction": "sum"}, "l1"),
    ("SmoothL1Loss", {"beta": 0.5}, "l1"), ("HuberLoss", {"delta": 0.5}, "l1"),
    ("SoftMarginLoss", {}, "sign"), ("BCELoss", {}, "prob"),
    ("BCEWithLogitsLoss", {"pos_weight": "w4"}, "prob_target"),
    ("KLDivLoss", {"reduction": "batchmean", "log_target": True}, "l1"),
    ("PoissonNLLLoss", {"full": True}, "positive"), ("GaussianNLLLoss", {"full": True}, "var"),
    ("CrossEntropyLoss", {"weight": "w4", "ignore_index": 1, "label_smoothing": 0.1}, "index"),
    ("NLLLoss", {"weight": "w4", "reduction": "none"}, "index"),
    ("MultiLabelSoftMarginLoss", {"weight": "w4"}, "prob_target"),
    ("MultiLabelMarginLoss", {}, "multilabel"),
    ("MultiMarginLoss", {"p": 2, "margin": 0.5, "weight": "w4"}, "index"),
    ("HingeEmbeddingLoss", {"margin": 0.5}, "sign"),
    ("CosineEmbeddingLoss", {"margin": 0.2}, "pair"),
    ("MarginRankingLoss", {"margin": 0.1}, "rank"),
    ("TripletMarginLoss", {"margin": 0.5, "p": 1.0, "swap": True}, "triplet"),
    ("TripletMarginWithDistanceLoss", {"margin": 0.5, "swap": True}, "triplet"),
    ("CTCLoss", {"blank": 0, "zero_infinity": True}, "ctc"),
]


def _inputs(kind):
    rng = np.random.default_rng(21)
    x = rng.standard_normal((3, 4))
    if kind == "l1":
        return [x, rng.standard_normal((3, 4))]
    if kind == "sign":
        return [x, np.sign(rng.standard_normal((3, 4)))]
    if kind == "prob":
        return [rng.uniform(0.1, 0.9, (3, 4)), rng.random((3, 4))]
    if kind == "prob_target":
        return [x, rng.random((3, 4))]
    if kind == "positive":
        return [x, rng.uniform(0, 3, (3, 4))]
    if kind == "var":
        return [x, rng.standard_normal((3, 4)), rng.uniform(0.5, 2, (3, 4))]
    if kind == "index":
        return [x, np.array([0, 1, 3])]
    if kind == "multilabel":
        return [x, np.array([[0, 1, -1, 2], [3, -1, 0, 0], [1, 2, 3, 0]])]
    if kind == "pair":
        return [x, rng.standard_normal((3, 4)), np.array([1, -1, 1])]
    if kind == "rank":
        return [x[0], x[1], np.array([1.0, -1.0, 1.0, -1.0])]
    if kind == "triplet":
        return [x, rng.standard_normal((3, 4)), rng.standard_normal((3, 4))]
    lp, targets, lengths, target_lengths = _ctc_case()
    return [lp, targets, lengths, target_lengths]


def _build(lib, name, kwargs):
    resolved = {k: (lib.tensor([0.5, 1.0, 2.0, 1.5], dtype=lib.float64) if v == "w4" else v)
                for k, v in kwargs.items()}
    return getattr(lib.nn, name)(**resolved)


@pytest.mark.parametrize("name,kwargs,kind", MODULES)
def test_modules_match_torch(name, kwargs, kind):
    e_mod, t_mod = _build(ember, name, kwargs), _build(torch, name, kwargs)
    assert list(e_mod.state_dict()) == list(t_mod.state_dict())
    for (_, a), (_, b) in zip(e_mod.state_dict().items(), t_mod.state_dict().items()):
        assert_same(a, b)
    assert repr(e_mod) == repr(t_mod)
    args = _inputs(kind)
    grads = [isinstance(a, np.ndarray) and a.dtype.kind == "f"
             and not (i == 1 and name == "SoftMarginLoss") for i, a in enumerate(args)]
    e_args = [ember.tensor(a, requires_grad=g) if isinstance(a, np.ndarray) else a
              for a, g in zip(args, grads)]
    t_args = [torch.tensor(a, requires_grad=g) if isinstance(a, np.ndarray) else a
              for a, g in zip(args, grads)]
    e_out, t_out = e_mod(*e_args), t_mod(*t_args)
    assert_same(e_out, t_out)
    e_out.sum().backward()
    t_out.sum().backward()
    for e, t in zip(e_args, t_args):
        if isinstance(t, torch.Tensor) and t.requires_grad and t.grad is not None:
            assert_same(e.grad, t.grad)


@pytest.mark.parametrize("name", ["L1Loss", "MSELoss", "CrossEntropyLoss", "NLLLoss", "BCELoss",
                                  "BCEWithLogitsLoss", "KLDivLoss", "SmoothL1Loss",
                                  "SoftMarginLoss", "MultiLabelSoftMarginLoss",
                                  "MultiLabelMarginLoss", "MultiMarginLoss",
                                  "HingeEmbeddingLoss", "CosineEmbeddingLoss",
                                  "MarginRankingLoss", "TripletMarginLoss", "PoissonNLLLoss"])
@pytest.mark.parametrize("size_average,reduce", [(False, None), (None, False), (True, True)])
def test_module_legacy_flags(name, size_average, reduce):
    with pytest.warns(UserWarning, match="size_average and reduce"):
        e = getattr(nn, name)(size_average=size_average, reduce=reduce)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = getattr(torch.nn, name)(size_average=size_average, reduce=reduce)
    assert e.reduction == t.reduction
    assert repr(e) == repr(t)


def test_module_argument_errors_and_defaults():
    for lib in (nn, torch.nn):
        with pytest.raises(ValueError, match="only p == 1 and p == 2"):
            lib.MultiMarginLoss(p=3)
        with pytest.raises(TypeError, match="delta must be a float or int"):
            lib.HuberLoss(delta="1")
        with pytest.raises(ValueError, match="expected margin to be greater than 0"):
            lib.TripletMarginLoss(margin=0)
        with pytest.raises(ValueError, match="expected margin to be greater than 0"):
            lib.TripletMarginWithDistanceLoss(margin=-1)
    with pytest.raises(ValueError, match="expected weight to be None or 1D"):
        nn.MultiMarginLoss(weight=ember.ones(2, 2))
    with pytest.warns(FutureWarning, match="NLLLoss2d"):
        legacy = nn.NLLLoss2d(ignore_index=3)
    assert isinstance(legacy, nn.NLLLoss) and legacy.ignore_index == 3
    for name in ("CrossEntropyLoss", "NLLLoss", "CTCLoss", "PoissonNLLLoss", "GaussianNLLLoss",
                 "KLDivLoss", "HuberLoss", "SmoothL1Loss", "MultiMarginLoss"):
        e, t = getattr(nn, name)(), getattr(torch.nn, name)()
        for attr in ("reduction", "ignore_index", "label_smoothing", "blank", "zero_infinity",
                     "log_input", "full", "eps", "log_target", "delta", "beta", "p", "margin"):
            assert getattr(e, attr, None) == getattr(t, attr, None), (name, attr)


def test_module_weight_buffer_moves_with_module():
    e = nn.CrossEntropyLoss(weight=ember.tensor([1.0, 2.0, 3.0]))
    e = e.to(ember.float64)
    assert e.weight.dtype is ember.float64
    x = to_ember(torch.randn(4, 3, dtype=torch.float64))
    t = ember.tensor([0, 2, 1, 1])
    assert_same(e(x, t), TF.cross_entropy(torch.from_numpy(x.numpy()), torch.tensor(
        [0, 2, 1, 1]), weight=torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)))
