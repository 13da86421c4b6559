"""Activations (modules and nn.functional) against torch: values, dtypes, gradients, double
backward, in-place forms, errors, repr and the meta device."""

import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from conftest import DTYPE_PAIRS, assert_grads_match, assert_same, make_pair
from ember import nn

# name -> (callable on (functional module, x)); the same call in both frameworks
POINTWISE = {
    "relu": lambda f, x: f.relu(x),
    "relu6": lambda f, x: f.relu6(x),
    "leaky_relu": lambda f, x: f.leaky_relu(x),
    "leaky_relu_0.2": lambda f, x: f.leaky_relu(x, 0.2),
    "elu": lambda f, x: f.elu(x),
    "elu_alpha": lambda f, x: f.elu(x, alpha=0.7),
    "selu": lambda f, x: f.selu(x),
    "celu": lambda f, x: f.celu(x),
    "celu_alpha": lambda f, x: f.celu(x, alpha=2.5),
    "gelu": lambda f, x: f.gelu(x),
    "gelu_tanh": lambda f, x: f.gelu(x, approximate="tanh"),
    "silu": lambda f, x: f.silu(x),
    "mish": lambda f, x: f.mish(x),
    "sigmoid": lambda f, x: f.sigmoid(x),
    "tanh": lambda f, x: f.tanh(x),
    "hardtanh": lambda f, x: f.hardtanh(x),
    "hardtanh_args": lambda f, x: f.hardtanh(x, -0.5, 1.5),
    "hardsigmoid": lambda f, x: f.hardsigmoid(x),
    "hardswish": lambda f, x: f.hardswish(x),
    "hardshrink": lambda f, x: f.hardshrink(x),
    "hardshrink_1": lambda f, x: f.hardshrink(x, 1.0),
    "softshrink": lambda f, x: f.softshrink(x),
    "softshrink_1": lambda f, x: f.softshrink(x, 1.0),
    "tanhshrink": lambda f, x: f.tanhshrink(x),
    "softplus": lambda f, x: f.softplus(x),
    "softplus_beta": lambda f, x: f.softplus(x, beta=2.0, threshold=3.0),
    "softsign": lambda f, x: f.softsign(x),
    "logsigmoid": lambda f, x: f.logsigmoid(x),
    "threshold": lambda f, x: f.threshold(x, 0.3, -2.0),
    "rrelu_eval": lambda f, x: f.rrelu(x, 0.1, 0.3),
    "softmax0": lambda f, x: f.softmax(x, 0),
    "softmax-1": lambda f, x: f.softmax(x, -1),
    "softmin": lambda f, x: f.softmin(x, -1),
    "log_softmax0": lambda f, x: f.log_softmax(x, 0),
    "log_softmax-1": lambda f, x: f.log_softmax(x, -1),
    "glu": lambda f, x: f.glu(x, 0),
}

SHAPES = [(4, 6), (), (0, 6), (2, 3, 4)]

# second derivative zero almost everywhere: torch's double backward yields a zero graph where
# ember's first derivative simply does not depend on the input; compare first order only
PIECEWISE_LINEAR = {"relu", "relu6", "leaky_relu", "leaky_relu_0.2", "hardtanh",
                    "hardtanh_args", "hardsigmoid", "hardshrink", "hardshrink_1", "softshrink",
                    "softshrink_1", "threshold", "rrelu_eval"}


def _input(shape, seed=0, dtype=np.float64, scale=3.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


# glu halves dim 0, so it needs an even dim 0 (its errors are tested separately)
CASES = [(name, shape) for name in sorted(POINTWISE) for shape in SHAPES
         if name != "glu" or (shape and shape[0] % 2 == 0)]


@pytest.mark.parametrize("name,shape", CASES, ids=str)
def test_values_and_gradients_float64(name, shape):
    fn = POINTWISE[name]
    assert_grads_match(lambda x: fn(F, x), lambda x: fn(TF, x), _input(shape),
                       double_backward=name not in PIECEWISE_LINEAR)


@pytest.mark.parametrize("name", sorted(POINTWISE))
def test_non_contiguous_input(name):
    fn = POINTWISE[name]
    e, t = make_pair(_input((6, 4), seed=1))
    assert_same(fn(F, e.t()), fn(TF, t.t()))


@pytest.mark.parametrize("name", sorted(POINTWISE))
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_low_precision_dtypes(name, dtype):
    fn = POINTWISE[name]
    e_dtype, t_dtype = DTYPE_PAIRS[dtype]
    array = _input((4, 6), seed=2)
    e = ember.tensor(array).to(e_dtype)
    t = torch.from_numpy(array).to(t_dtype)
    tol = {"float32": (1.3e-6, 1e-5), "float16": (1e-2, 1e-2), "bfloat16": (2e-2, 2e-2)}[dtype]
    assert_same(fn(F, e), fn(TF, t), rtol=tol[0], atol=tol[1])


@pytest.mark.parametrize("name", sorted(POINTWISE))
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int64", "complex64"])
def test_other_dtypes_match_torch_or_raise_the_same(name, dtype):
    fn = POINTWISE[name]
    e_dtype, t_dtype = DTYPE_PAIRS[dtype]
    array = np.array([[1, 0, 1, 1], [0, 1, 1, 0]])
    t = torch.from_numpy(array).to(t_dtype)
    e = ember.tensor(array).to(e_dtype)
    try:
        expected = fn(TF, t)
    except Exception as error:  # torch refuses this dtype: ember must refuse it the same way
        with pytest.raises(type(error)):
            fn(F, e)
        return
    assert_same(fn(F, e), expected)


def test_special_values():
    values = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 50.0, -50.0, 3.0,
                       -3.0, 0.5, -0.5, 1.0, -1.0, 6.0, 20.0, 21.0])
    e, t = make_pair(values)
    for name, fn in POINTWISE.items():
        if name.startswith(("softmax", "softmin", "log_softmax", "glu")):
            continue
        assert_same(fn(F, e), fn(TF, t))


@pytest.mark.parametrize("name", ["relu", "relu6", "leaky_relu", "elu", "selu", "celu",
                                  "hardtanh", "hardsigmoid", "hardswish", "hardshrink",
                                  "softshrink", "threshold", "rrelu_eval", "softplus"])
def test_gradients_at_kinks_follow_torch(name):
    fn = POINTWISE[name]
    points = np.array([0.0, -3.0, 3.0, -1.0, 1.0, 6.0, 0.5, -0.5, 0.3, 20.0])
    assert_grads_match(lambda x: fn(F, x), lambda x: fn(TF, x), points)


def test_softmax_numerically_stable():
    logits = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4], [1e4, 1e4 - 1, 1e4]])
    for dtype in (np.float32, np.float64):
        e, t = make_pair(logits.astype(dtype))
        for dim in (0, 1):
            assert_same(F.log_softmax(e, dim), TF.log_softmax(t, dim))
            assert_same(F.softmax(e, dim), TF.softmax(t, dim))
            assert bool(F.log_softmax(e, dim).isfinite().all())


def test_softmax_with_infinities_and_large_values():
    e, t = make_pair(np.array([[-np.inf, 0.0, 1.0], [-np.inf, -np.inf, -np.inf],
                               [np.inf, 0.0, 1.0]]))
    assert_same(F.softmax(e, 1), TF.softmax(t, 1))
    assert_same(F.log_softmax(e, 1), TF.log_softmax(t, 1))
    assert_grads_match(lambda x: F.log_softmax(x, 1), lambda x: TF.log_softmax(x, 1),
                       np.array([[1e3, -1e3, 0.0], [5.0, 5.0, 5.0]]))


@pytest.mark.parametrize("fn_name", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("src,dst", [("int64", "float32"), ("float32", "float64"),
                                     ("float64", "float32"), ("float16", "float32")])
def test_softmax_dtype_argument(fn_name, src, dst):
    array = np.arange(12).reshape(3, 4) % 5
    e = ember.tensor(array).to(DTYPE_PAIRS[src][0])
    t = torch.from_numpy(array).to(DTYPE_PAIRS[src][1])
    result = getattr(F, fn_name)(e, 1, dtype=DTYPE_PAIRS[dst][0])
    assert_same(result, getattr(TF, fn_name)(t, 1, dtype=DTYPE_PAIRS[dst][1]))


def test_softmax_dtype_gradient_flows_to_input_dtype():
    e, t = make_pair(_input((3, 4)).astype(np.float32), requires_grad=True)
    F.log_softmax(e, 1, dtype=ember.float64).sum().backward()
    TF.log_softmax(t, 1, dtype=torch.float64).sum().backward()
    assert_same(e.grad, t.grad)


@pytest.mark.parametrize("ndim", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("fn_name", ["softmax", "log_softmax", "softmin"])
def test_implicit_dim_warns_and_picks_torchs_dim(fn_name, ndim):
    array = _input((2, 3, 4, 5)[:ndim])
    e, t = make_pair(array)
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        result = getattr(F, fn_name)(e)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = getattr(TF, fn_name)(t)
    assert_same(result, expected)


def test_softmax_modules_implicit_dim():
    array = _input((2, 3, 4))
    e, t = make_pair(array)
    for name in ("Softmax", "Softmin", "LogSoftmax"):
        with pytest.warns(UserWarning, match="Implicit dimension"):
            result = getattr(nn, name)()(e)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = getattr(torch.nn, name)()(t)
        assert_same(result, expected)
        assert_same(getattr(nn, name)(dim=1)(e), getattr(torch.nn, name)(dim=1)(t))


def test_softmax_errors():
    e, t = make_pair(_input((2, 3)))
    for lib, x in ((F, e), (TF, t)):
        with pytest.raises(IndexError):
            lib.softmax(x, 2)
        with pytest.raises(IndexError):
            lib.log_softmax(x, -3)


def test_tensor_softmax_methods():
    e, t = make_pair(_input((2, 3)))
    assert_same(e.softmax(1), t.softmax(1))
    assert_same(e.log_softmax(0), t.log_softmax(0))
    assert_same(e.softmax(-1, dtype=ember.float32), t.softmax(-1, dtype=torch.float32))
    assert_same(e.hardshrink(0.3), t.hardshrink(0.3))


def test_grad_fn_names():
    x = ember.randn(3, requires_grad=True)
    assert F.softmax(x, 0).grad_fn.name() == "SoftmaxBackward0"
    assert F.log_softmax(x, 0).grad_fn.name() == "LogSoftmaxBackward0"
    assert F.leaky_relu(x).grad_fn.name() == "LeakyReluBackward0"
    assert F.gelu(x).grad_fn.name() == "GeluBackward0"
    assert F.logsigmoid(x).grad_fn.name() == "LogSigmoidBackward0"


# ---------------------------------------------------------------- in-place forms

INPLACE = {
    "relu": (lambda f, x: f.relu(x, inplace=True), lambda f, x: f.relu_(x)),
    "relu6": (lambda f, x: f.relu6(x, inplace=True), None),
    "leaky_relu": (lambda f, x: f.leaky_relu(x, 0.2, inplace=True),
                   lambda f, x: f.leaky_relu_(x, 0.2)),
    "elu": (lambda f, x: f.elu(x, 0.5, inplace=True), lambda f, x: f.elu_(x, 0.5)),
    "selu": (lambda f, x: f.selu(x, inplace=True), lambda f, x: f.selu_(x)),
    "celu": (lambda f, x: f.celu(x, 2.0, inplace=True), lambda f, x: f.celu_(x, 2.0)),
    "hardtanh": (lambda f, x: f.hardtanh(x, -0.5, 0.5, inplace=True),
                 lambda f, x: f.hardtanh_(x, -0.5, 0.5)),
    "threshold": (lambda f, x: f.threshold(x, 0.1, 7.0, inplace=True),
                  lambda f, x: f.threshold_(x, 0.1, 7.0)),
    "rrelu": (lambda f, x: f.rrelu(x, 0.1, 0.3, inplace=True),
              lambda f, x: f.rrelu_(x, 0.1, 0.3)),
    "silu": (lambda f, x: f.silu(x, inplace=True), None),
    "mish": (lambda f, x: f.mish(x, inplace=True), None),
    "hardsigmoid": (lambda f, x: f.hardsigmoid(x, inplace=True), None),
    "hardswish": (lambda f, x: f.hardswish(x, inplace=True), None),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_forms(name):
    for fn in INPLACE[name]:
        if fn is None:
            continue
        e, t = make_pair(_input((3, 4)))
        result = fn(F, e)
        expected = fn(TF, t)
        assert result is e
        assert_same(e, t)
        assert_same(result, expected)
        # through autograd: in-place on a non-leaf, gradient to the leaf
        e_leaf, t_leaf = make_pair(_input((3, 4), seed=3), requires_grad=True)
        e_out = fn(F, e_leaf * 1.5)
        t_out = fn(TF, t_leaf * 1.5)
        e_out.sum().backward()
        t_out.sum().backward()
        assert_same(e_leaf.grad, t_leaf.grad)


def test_inplace_on_leaf_requiring_grad_raises():
    e = ember.randn(3, requires_grad=True)
    t = torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        F.relu(e, inplace=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        TF.relu(t, inplace=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        F.elu_(e)


# ---------------------------------------------------------------- prelu / rrelu / glu


@pytest.mark.parametrize("shape,count", [((4, 3), 3), ((2, 3, 5), 3), ((2, 3, 4, 4), 3),
                                         ((2, 3, 4, 4), 1), ((5,), 1), ((), 1), ((0, 3), 3)])
def test_prelu(shape, count):
    weight = np.linspace(0.1, 0.9, count)
    assert_grads_match(F.prelu, TF.prelu, _input(shape), weight, double_backward=True)


def test_prelu_errors_match_torch():
    cases = [((2, 3), (2,)), ((2, 3), (3, 1)), ((), (3,)), ((4,), (3,))]
    for shape, wshape in cases:
        with pytest.raises(RuntimeError) as torch_error:
            TF.prelu(torch.randn(shape), torch.rand(wshape))
        with pytest.raises(RuntimeError) as ember_error:
            F.prelu(ember.randn(shape), ember.rand(wshape))
        assert str(ember_error.value) == str(torch_error.value)


def test_rrelu_training_slopes():
    ember.manual_seed(0)
    x = ember.full((200, 100), -1.0, dtype=ember.float64, requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slopes = -y.detach().numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3
    assert abs(slopes.mean() - 0.2) < 0.005
    assert abs(slopes.std() - 0.2 / math.sqrt(12)) < 0.005
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), slopes)
    positive = ember.ones(10)
    assert_same(F.rrelu(positive, training=True), torch.ones(10))


def test_rrelu_module_train_and_eval():
    m = nn.RReLU(0.1, 0.3)
    x = ember.full((50, 40), -2.0)
    train_out = m(x)
    assert float(train_out.std()) > 0
    m.eval()
    assert_same(m(x), torch.nn.RReLU(0.1, 0.3).eval()(torch.full((50, 40), -2.0)))
    with pytest.raises(RuntimeError, match="Lower bound"):
        F.rrelu(x, 0.5, 0.1)
    with pytest.raises(RuntimeError, match="Lower bound"):
        TF.rrelu(torch.zeros(2), 0.5, 0.1)


@pytest.mark.parametrize("dim", [0, 1, -1, 2])
def test_glu_dims(dim):
    fn = lambda f, x: f.glu(x, dim)  # noqa: E731
    assert_grads_match(lambda x: fn(F, x), lambda x: fn(TF, x), _input((4, 2, 6)),
                       double_backward=True)


def test_glu_errors():
    for lib, make in ((F, ember.randn), (TF, torch.randn)):
        with pytest.raises(RuntimeError, match="Halving dimension must be even"):
            lib.glu(make(3, 3))
        with pytest.raises(RuntimeError, match="scalars"):
            lib.glu(make(()))
        with pytest.raises(IndexError):
            lib.glu(make(2, 2), 3)


def test_argument_errors_match_torch():
    cases = [
        lambda f, x: f.gelu(x, approximate="fast"),
        lambda f, x: f.softshrink(x, -1.0),
        lambda f, x: f.celu(x, 0.0),
        lambda f, x: f.relu(1.0),
        lambda f, x: f.hardtanh(x.to(torch.uint8) if isinstance(x, torch.Tensor)
                                else x.to(ember.uint8)),
    ]
    e, t = make_pair(_input((3,)).astype(np.float32))
    for case in cases:
        with pytest.raises(Exception) as torch_error:
            case(TF, t)
        with pytest.raises(type(torch_error.value)):
            case(F, e)


def test_gumbel_softmax():
    ember.manual_seed(0)
    logits = ember.tensor(np.log([[0.1, 0.2, 0.7]] * 4000), requires_grad=True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    assert tuple(soft.shape) == (4000, 3)
    np.testing.assert_allclose(soft.detach().sum(-1).numpy(), 1.0, rtol=1e-12)
    hard = F.gumbel_softmax(logits, tau=1.0, hard=True)
    counts = hard.detach().numpy().mean(0)
    np.testing.assert_allclose(counts, [0.1, 0.2, 0.7], atol=0.03)
    assert set(np.unique(hard.detach().numpy())) <= {0.0, 1.0}
    hard.sum().backward()
    assert logits.grad is not None


# ---------------------------------------------------------------- modules

MODULES = [
    ("ReLU", (), {}), ("ReLU", (), {"inplace": True}), ("ReLU6", (), {}),
    ("ReLU6", (True,), {}), ("LeakyReLU", (), {}), ("LeakyReLU", (0.2, True), {}),
    ("RReLU", (), {}), ("RReLU", (0.1, 0.2), {"inplace": True}), ("ELU", (), {}),
    ("ELU", (0.5, True), {}), ("SELU", (), {}), ("SELU", (True,), {}), ("CELU", (), {}),
    ("CELU", (2.0,), {}), ("GELU", (), {}), ("GELU", ("tanh",), {}), ("SiLU", (), {}),
    ("SiLU", (True,), {}), ("Mish", (), {}), ("Mish", (True,), {}), ("Sigmoid", (), {}),
    ("Tanh", (), {}), ("Hardtanh", (), {}), ("Hardtanh", (-2.0, 3.0, True), {}),
    ("Hardsigmoid", (), {}), ("Hardsigmoid", (True,), {}), ("Hardswish", (), {}),
    ("Hardswish", (True,), {}), ("Hardshrink", (), {}), ("Hardshrink", (0.3,), {}),
    ("Softshrink", (), {}), ("Softshrink", (1,), {}), ("Tanhshrink", (), {}),
    ("Softplus", (), {}), ("Softplus", (2, 10), {}), ("Softsign", (), {}),
    ("LogSigmoid", (), {}), ("Softmax", (1,), {}), ("Softmin", (), {"dim": 0}),
    ("LogSoftmax", (-1,), {}), ("Softmax2d", (), {}), ("GLU", (), {}), ("GLU", (1,), {}),
    ("Threshold", (0.1, 20.0), {}), ("Threshold", (0.1, 20.0, True), {}),
    ("PReLU", (), {}), ("PReLU", (4,), {"init": 0.1}),
]


@pytest.mark.parametrize("name,args,kwargs", MODULES, ids=lambda v: str(v))
def test_module_forward_backward_repr(name, args, kwargs):
    e_mod = getattr(nn, name)(*args, **kwargs)
    t_mod = getattr(torch.nn, name)(*args, **kwargs)
    assert repr(e_mod) == repr(t_mod)
    assert list(e_mod.state_dict()) == list(t_mod.state_dict())
    for (_, a), (_, b) in zip(e_mod.state_dict().items(), t_mod.state_dict().items()):
        assert_same(a, b)
    if name == "RReLU":
        e_mod.eval(), t_mod.eval()
    for dtype in (np.float64, np.float32):
        e_mod.to(ember.float64 if dtype == np.float64 else ember.float32)
        t_mod.to(torch.float64 if dtype == np.float64 else torch.float32)
        array = _input((2, 4, 3, 2), seed=5, dtype=dtype)
        e_x, t_x = make_pair(array, requires_grad=True)
        e_in, t_in = e_x * 1, t_x * 1  # non-leaf so in-place modules may write
        e_out, t_out = e_mod(e_in), t_mod(t_in)
        assert_same(e_out, t_out)
        cot = np.random.default_rng(1).standard_normal(e_out.shape).astype(dtype)
        e_out.backward(ember.tensor(cot))
        t_out.backward(torch.from_numpy(cot))
        assert_same(e_x.grad, t_x.grad)
        for (_, ep), (_, tp) in zip(e_mod.named_parameters(), t_mod.named_parameters()):
            assert_same(ep.grad, tp.grad)
            ep.grad, tp.grad = None, None


def test_module_train_and_eval_mode_same_for_deterministic_activations():
    x = ember.randn(3, 4)
    for name in ("ReLU", "GELU", "Softplus", "PReLU"):
        m = getattr(nn, name)()
        train_out = m(x)
        m.eval()
        assert bool((m(x) == train_out).all())


def test_prelu_parameters_and_dtype():
    m = nn.PReLU(3, init=0.5, dtype=ember.float64)
    assert m.weight.dtype is ember.float64 and tuple(m.weight.shape) == (3,)
    assert bool((m.weight == 0.5).all()) and m.weight.requires_grad
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    with ember.no_grad():
        m.weight.fill_(2.0)
    m.reset_parameters()
    assert bool((m.weight == 0.5).all())


def test_hardtanh_module_arguments():
    with pytest.raises(AssertionError):
        nn.Hardtanh(1.0, 1.0)
    with pytest.raises(AssertionError):
        torch.nn.Hardtanh(1.0, 1.0)
    with pytest.warns(FutureWarning):
        m = nn.Hardtanh(min_value=-2.0)
    assert m.min_val == -2.0
    assert nn.ReLU6().min_val == 0.0 and nn.ReLU6().max_val == 6.0


def test_softmax2d():
    for shape in ((3, 4, 5), (2, 3, 4, 5)):
        assert_grads_match(nn.Softmax2d(), torch.nn.Softmax2d(), _input(shape))
    with pytest.raises(ValueError, match="3D or 4D"):
        nn.Softmax2d()(ember.randn(2, 3))
    with pytest.raises(ValueError, match="3D or 4D"):
        torch.nn.Softmax2d()(torch.randn(2, 3))


def test_sequential_repr_with_activations():
    def build(mod):
        return mod.Sequential(mod.Linear(3, 4), mod.ReLU(inplace=True), mod.Dropout(0.1),
                              mod.GELU(approximate="tanh"), mod.Softmax(dim=-1))
    assert repr(build(nn)) == repr(build(torch.nn))


# ---------------------------------------------------------------- meta device


@pytest.mark.parametrize("name", sorted(POINTWISE))
def test_meta_device(name):
    fn = POINTWISE[name]
    for dtype in ("float32", "float16", "float64"):
        e = ember.empty((4, 6), device="meta", dtype=DTYPE_PAIRS[dtype][0])
        t = torch.empty((4, 6), device="meta", dtype=DTYPE_PAIRS[dtype][1])
        result, expected = fn(F, e), fn(TF, t)
        assert result.device.type == "meta"
        assert tuple(result.shape) == tuple(expected.shape)
        assert result.dtype.name == str(expected.dtype).removeprefix("torch.")


def test_meta_prelu_and_modules():
    e = ember.empty((2, 3, 4), device="meta")
    m = nn.PReLU(3, device="meta")
    assert m.weight.device.type == "meta"
    out = m(e)
    assert out.device.type == "meta" and tuple(out.shape) == (2, 3, 4)
    assert tuple(F.log_softmax(e, 1, dtype=ember.float64).shape) == (2, 3, 4)
    assert F.log_softmax(e, 1, dtype=ember.float64).dtype is ember.float64



@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_float32_large_input_values_and_grads(approximate):
    # more elements than one block of the blockwise float32 kernels, tails included
    x = np.concatenate([_input((70000,), seed=5, dtype=np.float32),
                        np.linspace(-12, 12, 4000, dtype=np.float32)]).reshape(-1, 8)
    assert_grads_match(lambda t: F.gelu(t, approximate=approximate),
                       lambda t: TF.gelu(t, approximate=approximate), x, rtol=1.3e-6,
                       atol=1e-5)


@pytest.mark.parametrize("onednn", [True, False])
def test_gelu_float32_on_onednn_and_numpy_against_torch(onednn):
    # with libdnnl, float32 erf GELU and its backward are one oneDNN kernel each, bit for bit
    # torch's; without it (or with mkldnn disabled) the NumPy kernels, within float32 rounding
    from ember.nn._functional import _onednn
    if onednn and not _onednn.available():
        pytest.skip("libdnnl is not installed")
    x = np.concatenate([_input((70000,), seed=6, dtype=np.float32) * 3,
                        np.linspace(-12, 12, 4000, dtype=np.float32)]).reshape(-1, 20)
    grad = _input(x.shape, seed=7, dtype=np.float32)
    with ember.backends.mkldnn.flags(enabled=onednn):
        e = ember.tensor(x, requires_grad=True)
        y = F.gelu(e)
        (g,) = ember.autograd.grad(y, e, ember.tensor(grad), create_graph=True)
        (gg,) = ember.autograd.grad(g.sum(), e)
        y_t = F.gelu(e.t())   # a non-contiguous input
    t = torch.tensor(x, requires_grad=True)
    ty = TF.gelu(t)
    (tg,) = torch.autograd.grad(ty, t, torch.tensor(grad), create_graph=True)
    (tgg,) = torch.autograd.grad(tg.sum(), t)
    tolerance = {"rtol": 0, "atol": 0} if onednn else {"rtol": 1.3e-6, "atol": 1e-5}
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), **tolerance)
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), **tolerance)
    np.testing.assert_allclose(gg.numpy(), tgg.numpy(), rtol=1e-5, atol=1e-5)
    # torch's strided loop rounds differently from its contiguous one: close, not identical
    np.testing.assert_allclose(y_t.detach().numpy(), TF.gelu(t.t()).detach().numpy(),
                               rtol=1.3e-6, atol=1e-5)


def test_gelu_backward_is_its_own_node_with_torch_name():
    x = ember.tensor([-1.0, 0.5, 2.0], requires_grad=True)
    (g,) = ember.autograd.grad(F.gelu(x).sum(), x, create_graph=True)
    assert g.grad_fn.name() == "GeluBackwardBackward0"
    t = torch.tensor([-1.0, 0.5, 2.0], requires_grad=True)
    (tg,) = torch.autograd.grad(TF.gelu(t).sum(), t, create_graph=True)
    assert g.grad_fn.name() == tg.grad_fn.name()
    assert_same(g, tg)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape", [(700, 300), (3, 40000), (5, 7, 2000)])
def test_softmax_by_row_blocks_matches_torch(name, shape):
    # the CPU kernels walk the rows in cache-sized blocks (several blocks for these shapes);
    # inf and -inf entries keep torch's results
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    x.reshape(-1, shape[-1])[1, 3] = np.inf
    x.reshape(-1, shape[-1])[2, :] = -np.inf
    ours = getattr(F, name)(ember.tensor(x), dim=-1)
    theirs = getattr(TF, name)(torch.tensor(x), dim=-1)
    # atol: float32 rounding of x - max - logsumexp, terms of magnitude ~20
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("spread", [0.05, 0.3, 3.0])
def test_softmax_shared_shift_matches_torch(name, spread):
    # blocks whose values all lie within log(cols) of the block's largest subtract that one
    # value (0.05, 0.3), wider ones each row's maximum (3.0): both keep torch's values to
    # float32 rounding (atol for the wide rows' log-probabilities near 0)
    rng = np.random.default_rng(12)
    x = (rng.standard_normal((600, 256)) * spread).astype(np.float32)
    x[:300] += 5.0   # the first block sits higher than the others
    ours = getattr(F, name)(ember.tensor(x), dim=-1)
    theirs = getattr(TF, name)(torch.tensor(x), dim=-1)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("shape", [(700, 300), (4, 6, 500)])
def test_log_softmax_first_order_backward_matches_torch(shape):
    # first order: the fused blocked backward kernel; create_graph: the composite formula
    rng = np.random.default_rng(12)
    x = rng.standard_normal(shape).astype(np.float64)
    assert_grads_match(lambda t: F.log_softmax(t, dim=-1),
                       lambda t: TF.log_softmax(t, dim=-1), x, double_backward=True)
    x32, g = x.astype(np.float32), rng.standard_normal(shape).astype(np.float32)
    mine, theirs = ember.tensor(x32, requires_grad=True), torch.tensor(x32, requires_grad=True)
    F.log_softmax(mine, dim=-1).backward(ember.tensor(g))
    TF.log_softmax(theirs, dim=-1).backward(torch.tensor(g))
    np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-5, atol=1e-5)
