"""torch._foreach_*: every form of every foreach operator against torch's own."""

import numpy as np
import pytest
import torch

import ember

SHAPES = [(3,), (2, 4), ()]
UNARY = ["abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
         "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal",
         "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc"]
BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "clamp_min", "clamp_max"]


def _pair(seed=0, low=0.2, high=0.9, dtype=np.float32):
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(low, high, s).astype(dtype) for s in SHAPES]
    return ([ember.tensor(a) for a in arrays], [torch.tensor(a) for a in arrays])


def _check(ours, theirs):
    assert type(ours) is type(theirs) or (ours is None and theirs is None)
    if ours is None:
        return
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)


def test_every_torch_foreach_name_exists():
    missing = [n for n in dir(torch) if n.startswith("_foreach_") and not hasattr(ember, n)]
    assert missing == []


@pytest.mark.parametrize("op", UNARY)
def test_unary(op):
    ours, theirs = _pair()
    _check(getattr(ember, f"_foreach_{op}")(ours), getattr(torch, f"_foreach_{op}")(theirs))
    assert getattr(ember, f"_foreach_{op}_")(ours) is None
    getattr(torch, f"_foreach_{op}_")(theirs)
    _check(tuple(ours), tuple(theirs))


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("form", ["scalar", "scalar_list", "tensor_list"])
def test_binary(op, form):
    ours, theirs = _pair(1)
    other_ours, other_theirs = _pair(2)
    other = {"scalar": (0.5, 0.5), "scalar_list": ([0.5, 2.0, 3.0],) * 2,
             "tensor_list": (other_ours, other_theirs)}[form]
    _check(getattr(ember, f"_foreach_{op}")(ours, other[0]),
           getattr(torch, f"_foreach_{op}")(theirs, other[1]))
    getattr(ember, f"_foreach_{op}_")(ours, other[0])
    getattr(torch, f"_foreach_{op}_")(theirs, other[1])
    _check(tuple(ours), tuple(theirs))


@pytest.mark.parametrize("op", ["mul", "div", "add"])
def test_binary_single_tensor_and_alpha(op):
    ours, theirs = _pair(3)
    _check(getattr(ember, f"_foreach_{op}")(ours, ember.tensor(2.0)),
           getattr(torch, f"_foreach_{op}")(theirs, torch.tensor(2.0)))
    if op == "add":
        others = _pair(4)
        _check(ember._foreach_add(ours, others[0], alpha=-3),
               torch._foreach_add(theirs, others[1], alpha=-3))


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("form", ["default", "scalar", "scalar_list", "tensor"])
def test_pointwise_ternary(op, form):
    (a, ta), (b, tb), (c, tc) = _pair(5), _pair(6), _pair(7)
    value = {"default": None, "scalar": (-0.5, -0.5), "scalar_list": ([1.0, 2.0, 3.0],) * 2,
             "tensor": (ember.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 3.0]))}[form]
    extra_ours, extra_theirs = ((), ()) if value is None else ((value[0],), (value[1],))
    _check(getattr(ember, f"_foreach_{op}")(a, b, c, *extra_ours),
           getattr(torch, f"_foreach_{op}")(ta, tb, tc, *extra_theirs))
    getattr(ember, f"_foreach_{op}_")(a, b, c, *extra_ours)
    getattr(torch, f"_foreach_{op}_")(ta, tb, tc, *extra_theirs)
    _check(tuple(a), tuple(ta))


@pytest.mark.parametrize("weight", ["scalar", "scalar_list", "tensor_list"])
def test_lerp(weight):
    (a, ta), (b, tb), (w, tw) = _pair(8), _pair(9), _pair(10)
    ours, theirs = {"scalar": (0.3, 0.3), "scalar_list": ([0.1, 0.5, 0.9],) * 2,
                    "tensor_list": (w, tw)}[weight]
    _check(ember._foreach_lerp(a, b, ours), torch._foreach_lerp(ta, tb, theirs))
    ember._foreach_lerp_(a, b, ours)
    torch._foreach_lerp_(ta, tb, theirs)
    _check(tuple(a), tuple(ta))


def test_reductions_and_others():
    ours, theirs = _pair(11, low=-2.0, high=2.0)
    for ord_ in (2, 1, 3, float("inf")):
        _check(ember._foreach_norm(ours, ord_), torch._foreach_norm(theirs, ord_))
        _check(ember._foreach_powsum(ours, ord_), torch._foreach_powsum(theirs, ord_))
    _check(ember._foreach_max(ours), torch._foreach_max(theirs))
    _check(ember._foreach_pow(2.0, ours), torch._foreach_pow(2.0, theirs))
    _check(ember._foreach_clone(ours), torch._foreach_clone(theirs))
    mats = [ember.ones(2, 3), ember.ones(1, 2)]
    tmats = [torch.ones(2, 3), torch.ones(1, 2)]
    rights = [ember.ones(3, 2), ember.ones(2, 5)]
    trights = [torch.ones(3, 2), torch.ones(2, 5)]
    _check(ember._foreach_mm(mats, rights), torch._foreach_mm(tmats, trights))
    copied = ember._foreach_copy_(ours, ember._foreach_neg(ours))
    assert isinstance(copied, list) and copied[0] is ours[0]
    torch._foreach_copy_(theirs, torch._foreach_neg(theirs))
    _check(tuple(ours), tuple(theirs))
    assert ember._foreach_zero_(ours) is None
    assert all(float(t.abs().sum()) == 0 for t in ours)


def test_gradients_flow_through_out_of_place_forms():
    x = [ember.ones(2, requires_grad=True)]
    tx = [torch.ones(2, requires_grad=True)]
    ember._foreach_mul(ember._foreach_exp(x), 3.0)[0].sum().backward()
    torch._foreach_mul(torch._foreach_exp(tx), 3.0)[0].sum().backward()
    np.testing.assert_allclose(x[0].grad.numpy(), tx[0].grad.numpy(), rtol=1e-6)


def _outcome(call):
    try:
        call()
    except Exception as error:  # noqa: BLE001 - comparing the type with torch's
        return type(error), str(error)
    return None


@pytest.mark.parametrize("case", [
    lambda m, a, b: m._foreach_add(a, [b[0]]),
    lambda m, a, b: m._foreach_add([], 1),
    lambda m, a, b: m._foreach_add(a, [1.0]),
    lambda m, a, b: m._foreach_add(a, 1, alpha=2),
    lambda m, a, b: m._foreach_add(a[0], 1),
    lambda m, a, b: m._foreach_div_([m.ones(2, dtype=m.int64)], 2),
    lambda m, a, b: m._foreach_mul_([m.ones(2, requires_grad=True)], 2.0),
    lambda m, a, b: m._foreach_max([m.ones(0)]),
])
def test_errors_match_torch(case):
    ours, theirs = _pair(12)
    mine = _outcome(lambda: case(ember, ours, ours))
    reference = _outcome(lambda: case(torch, theirs, theirs))
    assert (mine is None) == (reference is None)
    if reference is not None:
        assert mine[0] is reference[0], (mine, reference)
        if reference[0] is RuntimeError:
            assert mine[1] == reference[1]


def test_bool_subtraction_refused_as_torch():
    with pytest.raises(RuntimeError, match="Subtraction"):
        torch._foreach_sub([torch.tensor([True])], True)
    with pytest.raises(RuntimeError, match="Subtraction"):
        ember._foreach_sub([ember.tensor([True])], True)
