"""Creation ops against torch: factories, ranges, eye/tri indices, complex/polar, asarray,
fill_/zero_/copy_ (with autograd), out=, requires_grad and the meta device."""

import warnings

import numpy as np
import pytest
import torch

import ember
from conftest import DTYPE_PAIRS, assert_grads_match, assert_same, refused_on, to_ember

ALL = list(DTYPE_PAIRS)
FLOATS = ["float16", "bfloat16", "float32", "float64"]


def _pair(name):
    return DTYPE_PAIRS[name]


def _raises_like(ember_fn, torch_fn, match=None):
    """ember raises the same exception type as torch (and the key words, when given)."""
    with pytest.raises(Exception) as expected:
        torch_fn()
    with pytest.raises(expected.type, match=match):
        ember_fn()


# ---------------------------------------------------------------- zeros / ones / full / empty


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("size", [(), (0,), (3,), (2, 3), (1, 0, 2)])
def test_zeros_ones_full_dtypes_and_shapes(name, size, device):
    ed, td = _pair(name)
    if refused_on(device, ed):
        return
    assert_same(ember.zeros(size, dtype=ed, device=device), torch.zeros(size, dtype=td))
    assert_same(ember.ones(size, dtype=ed, device=device), torch.ones(size, dtype=td))
    assert_same(ember.full(size, 1, dtype=ed, device=device), torch.full(size, 1, dtype=td))
    e = ember.empty(size, dtype=ed, device=device)
    assert tuple(e.shape) == size and e.device.type == device


@pytest.mark.parametrize("value", [True, 3, -2.5, 1 + 2j, np.float64(1.5), np.int32(4)])
def test_full_infers_dtype_from_value(value):
    assert_same(ember.full((2, 2), value), torch.full((2, 2), value))


def test_full_with_tensor_value_and_errors():
    assert_same(ember.full((2,), ember.tensor(3.5)), torch.full((2,), torch.tensor(3.5)))
    _raises_like(lambda: ember.full((2,), 300, dtype=ember.uint8),
                 lambda: torch.full((2,), 300, dtype=torch.uint8), "cannot be converted")
    _raises_like(lambda: ember.zeros(2, -1), lambda: torch.zeros(2, -1), "negative dimension")
    _raises_like(lambda: ember.zeros(2, 1.5), lambda: torch.zeros(2, 1.5))


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty"])
def test_factory_out_takes_out_dtype_and_resizes(fn):
    e_out, t_out = ember.empty(5, dtype=ember.int64), torch.empty(5, dtype=torch.int64)
    e = getattr(ember, fn)(2, 3, out=e_out)
    t = getattr(torch, fn)(2, 3, out=t_out)
    assert e is e_out
    assert e.shape == (2, 3) and e.dtype is ember.int64 and t.dtype == torch.int64
    if fn != "empty":
        assert_same(e, t)


def test_full_out_and_eye_out():
    e_out, t_out = ember.empty(1, dtype=ember.int64), torch.empty(1, dtype=torch.int64)
    assert_same(ember.full((2,), 2.5, out=e_out), torch.full((2,), 2.5, out=t_out))
    assert_same(e_out, t_out)
    e_out, t_out = ember.empty(1), torch.empty(1)
    assert_same(ember.eye(3, out=e_out), torch.eye(3, out=t_out))


def test_requires_grad_and_meta():
    x = ember.zeros(2, 3, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    _raises_like(lambda: ember.zeros(2, dtype=ember.int64, requires_grad=True),
                 lambda: torch.zeros(2, dtype=torch.int64, requires_grad=True), "floating")
    for fn in ("zeros", "ones", "empty"):
        m = getattr(ember, fn)(2, 3, device="meta", dtype=ember.float64)
        assert m.device.type == "meta" and m.shape == (2, 3) and m.dtype is ember.float64
    m = ember.full((4,), 7, device="meta")
    assert m.is_meta and m.dtype is ember.int64
    assert ember.arange(5, device="meta").shape == (5,)
    assert ember.linspace(0, 1, 7, device="meta").shape == (7,)
    assert ember.eye(2, 3, device="meta").shape == (2, 3)
    assert ember.tril_indices(3, 3, device="meta").shape == (2, 6)


@pytest.mark.parametrize("name", ["int32", "float64", "bool", "complex64"])
def test_like_factories(name):
    ed, td = _pair(name)
    e, t = ember.zeros(2, 3, dtype=ed).t(), torch.zeros(2, 3, dtype=td).t()
    assert_same(ember.zeros_like(e), torch.zeros_like(t))
    assert_same(ember.ones_like(e), torch.ones_like(t))
    assert_same(ember.full_like(e, 1), torch.full_like(t, 1))
    assert_same(ember.ones_like(e, dtype=ember.float32), torch.ones_like(t, dtype=torch.float32))
    assert ember.empty_like(e).shape == (3, 2)


@pytest.mark.parametrize("name", ["int32", "float64", "bool"])
def test_new_factories(name):
    ed, td = _pair(name)
    e, t = ember.zeros(1, dtype=ed), torch.zeros(1, dtype=td)
    assert_same(e.new_zeros(2, 3), t.new_zeros(2, 3))
    assert_same(e.new_ones((2,)), t.new_ones((2,)))
    assert_same(e.new_full((2,), 1), t.new_full((2,), 1))
    assert_same(e.new_ones(2, dtype=ember.float64), t.new_ones(2, dtype=torch.float64))
    assert e.new_empty(4).dtype is ed
    assert e.new_empty_strided((2, 2), (1, 2)).stride() == \
        t.new_empty_strided((2, 2), (1, 2)).stride()
    assert_same(e.new_tensor([1, 0]), t.new_tensor([1, 0]))
    assert ember.zeros(1).new_zeros(2, requires_grad=True).requires_grad


def test_empty_strided():
    e = ember.empty_strided((2, 3), (1, 2))
    t = torch.empty_strided((2, 3), (1, 2))
    assert e.stride() == t.stride() and e.shape == t.shape
    assert ember.empty_strided((2, 0), (1, 1)).shape == (2, 0)


@pytest.mark.parametrize("value,dtype", [(3, None), (True, None), (2.5, ember.int64),
                                          (1.5, ember.float64), (1 + 2j, ember.complex64)])
def test_scalar_tensor(value, dtype):
    td = None if dtype is None else DTYPE_PAIRS[dtype.name][1]
    assert_same(ember.scalar_tensor(value, dtype=dtype), torch.scalar_tensor(value, dtype=td))


def test_scalar_tensor_complex_into_float_raises():
    _raises_like(lambda: ember.scalar_tensor(1 + 2j), lambda: torch.scalar_tensor(1 + 2j),
                 "cannot be converted")


# ---------------------------------------------------------------- arange / linspace / logspace


ARANGE_CASES = [
    ((5,), {}), ((1, 7), {}), ((0, 1, 0.3), {}), ((1, 2.5, 0.1), {}), ((10, 0, -3), {}),
    ((0, 1, 0.1), {"dtype": torch.float64}), ((0, 5, 1.5), {"dtype": torch.int64}),
    ((0.5, 5, 1), {"dtype": torch.int64}), ((-1.5, 5.2, 0.7), {"dtype": torch.int32}),
    ((0.9, 5.9, 1.9), {"dtype": torch.int64}), ((-0.9, -5.9, -1.9), {"dtype": torch.int64}),
    ((-0.9, -5.9, -1.9), {"dtype": torch.int32}), ((0.9, 5.9, 1.9), {"dtype": torch.uint8}),
    ((5, 0.5, -1), {"dtype": torch.int64}), ((0, 1, 0.1), {"dtype": torch.bfloat16}),
    ((10, 0, -3), {"dtype": torch.float16}), ((5, 5), {}), ((0.5, 0.5), {}),
    ((0, 5, 0.5), {"dtype": torch.int16}), ((-3.2, 7.9, 0.37), {}),
    ((1e6, 1e6 + 10, 0.5), {"dtype": torch.float64}), ((0, 10, 3), {"dtype": torch.float32}),
]


def _to_ember_kwargs(kwargs):
    out = dict(kwargs)
    if "dtype" in out:
        out["dtype"] = getattr(ember, str(out["dtype"]).removeprefix("torch."))
    return out


@pytest.mark.parametrize("args,kwargs", ARANGE_CASES)
def test_arange_matches_torch(args, kwargs, device):
    expected = torch.arange(*args, **kwargs)
    if refused_on(device, _pair(str(expected.dtype).removeprefix("torch."))[0],
                  lambda: ember.arange(*args, **_to_ember_kwargs(kwargs), device=device)):
        return
    exact = not expected.dtype.is_floating_point  # floats: torch's SIMD sums differ in last ulp
    assert_same(ember.arange(*args, **_to_ember_kwargs(kwargs), device=device), expected,
                rtol=0 if exact else None, atol=0 if exact else None)


@pytest.mark.parametrize("args,kwargs", [((0, 5, 0), {}), ((0, 5, 0.0), {}), ((1, 0, 1), {}),
                                         ((0, 10, -1), {}), ((0, float("inf")), {}),
                                         ((0, 5, 0.4), {"dtype": torch.int64}),
                                         ((3,), {"dtype": torch.bool}),
                                         ((3,), {"dtype": torch.complex64})])
def test_arange_errors(args, kwargs):
    _raises_like(lambda: ember.arange(*args, **_to_ember_kwargs(kwargs)),
                 lambda: torch.arange(*args, **kwargs))


def test_arange_tensor_bounds_out_and_requires_grad():
    assert_same(ember.arange(ember.tensor(3)), torch.arange(torch.tensor(3)))
    e_out, t_out = ember.empty(0, dtype=ember.float64), torch.empty(0, dtype=torch.float64)
    assert_same(ember.arange(4, out=e_out), torch.arange(4, out=t_out))
    assert ember.arange(3.0, requires_grad=True).requires_grad


SPACE_CASES = [
    ((0, 1, 5), {}), ((0, 1, 1), {}), ((0, 1, 0), {}), ((-2.5, 7.25, 13), {}),
    ((0, 1, 7), {"dtype": torch.float16}), ((0, 1, 9), {"dtype": torch.bfloat16}),
    ((-3, 10, 7), {"dtype": torch.int64}), ((10, -3, 7), {"dtype": torch.int8}),
    ((0, 10, 5), {"dtype": torch.int64}), ((1, 1e7, 11), {"dtype": torch.float64}),
    ((0, 1, 5), {"dtype": torch.complex64}), ((0, 1j, 3), {}), ((5, -5, 101), {}),
]


@pytest.mark.parametrize("args,kwargs", SPACE_CASES)
def test_linspace_matches_torch(args, kwargs, device):
    expected_dtype = torch.linspace(*args, **kwargs).dtype
    if refused_on(device, _pair(str(expected_dtype).removeprefix("torch."))[0],
                  lambda: ember.linspace(*args, **_to_ember_kwargs(kwargs), device=device)):
        return
    assert_same(ember.linspace(*args, **_to_ember_kwargs(kwargs), device=device),
                torch.linspace(*args, **kwargs))


@pytest.mark.parametrize("args,kwargs", [((0, 2, 3), {"base": 2}), ((0, 2, 3), {}),
                                         ((-2, 3, 6), {"dtype": torch.int32}),
                                         ((0, 1, 7), {"base": -2.0}),
                                         ((0, 3, 4), {"dtype": torch.int64}),
                                         ((-1, 1, 9), {"dtype": torch.float64}),
                                         ((0, 1, 0), {})])
def test_logspace_matches_torch(args, kwargs):
    assert_same(ember.logspace(*args, **_to_ember_kwargs(kwargs)),
                torch.logspace(*args, **kwargs))


def test_linspace_tensor_bounds_and_errors():
    assert_same(ember.linspace(ember.tensor(0.), ember.tensor(1.), 3),
                torch.linspace(torch.tensor(0.), torch.tensor(1.), 3))
    _raises_like(lambda: ember.linspace(0, 1, -1), lambda: torch.linspace(0, 1, -1),
                 "non-negative")
    _raises_like(lambda: ember.linspace(ember.tensor([0.]), 1, 3),
                 lambda: torch.linspace(torch.tensor([0.]), 1, 3), "0-dimensional")
    _raises_like(lambda: ember.linspace(0, 1, 3.5), lambda: torch.linspace(0, 1, 3.5))
    _raises_like(lambda: ember.linspace(0, 1, 3, dtype=ember.bool),
                 lambda: torch.linspace(0, 1, 3, dtype=torch.bool))
    e_out, t_out = ember.empty(1), torch.empty(1)
    assert_same(ember.linspace(0, 1, 4, out=e_out), torch.linspace(0, 1, 4, out=t_out))


INT_SPACE_BOUNDS = [(-3.5, 11.7), (-3, 11), (0, 14), (3, -9.9), (0.5, -0.5), (-2.5, 300),
                    (-40000, 40000), (-3.5, 1e10)]


@pytest.mark.parametrize("start,end", INT_SPACE_BOUNDS)
@pytest.mark.parametrize("steps", [0, 1, 2, 7, 50])
@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int64"])
@pytest.mark.parametrize("fn,base", [("linspace", None), ("logspace", 10.0),
                                     ("logspace", 2.0), ("logspace", -1.5)])
def test_integer_linspace_logspace_match_torch(start, end, steps, name, fn, base):
    """Integer dtypes: the ends are truncated (and range-checked) before spacing, and each
    value is truncated after torch's exact rounding, so every element must be equal."""
    ed, td = _pair(name)
    extra = () if base is None else (base,)

    def run(module, dtype):
        return getattr(module, fn)(start, end, steps, *extra, dtype=dtype)
    try:
        expected = run(torch, td)
    except RuntimeError:
        _raises_like(lambda: run(ember, ed), lambda: run(torch, td), "without overflow")
        return
    assert_same(run(ember, ed), expected, rtol=0, atol=0)


FILL_VALUES = [-1, -129, -255, -256, 255, 300, -0.5, -1.5, 255.9, 1e10, float("nan"), True]


@pytest.mark.parametrize("value", FILL_VALUES)
@pytest.mark.parametrize("name", ["uint8", "int8", "int64"])
def test_integer_fill_values_wrap_or_raise_like_torch(value, name):
    """torch lets an integer wrap into an unsigned dtype down to -max (-1 fills uint8 with
    255) and refuses any other value out of range, floats included (-0.5 into uint8)."""
    ed, td = _pair(name)
    cases = [
        (lambda: ember.full((2,), value, dtype=ed), lambda: torch.full((2,), value, dtype=td)),
        (lambda: ember.full_like(ember.zeros(2, dtype=ed), value),
         lambda: torch.full_like(torch.zeros(2, dtype=td), value)),
        (lambda: ember.scalar_tensor(value, dtype=ed),
         lambda: torch.scalar_tensor(value, dtype=td)),
        (lambda: ember.zeros(2, dtype=ed).fill_(value),
         lambda: torch.zeros(2, dtype=td).fill_(value)),
        (lambda: ember.zeros(1, dtype=ed).new_full((2,), value),
         lambda: torch.zeros(1, dtype=td).new_full((2,), value)),
    ]
    for ember_fn, torch_fn in cases:
        try:
            expected = torch_fn()
        except RuntimeError:
            _raises_like(ember_fn, torch_fn, "without overflow")
            continue
        assert_same(ember_fn(), expected, rtol=0, atol=0)


@pytest.mark.parametrize("data", [300, -1, -1.5, 255.9, 3 + 0j, [[1, 2], [300, -1]],
                                  [-255], [-256], [1.5, -0.5], [float("inf")], [True, 2],
                                  [np.int64(300)], np.array([300]), np.array([-1.5])])
@pytest.mark.parametrize("name", ["uint8", "int8", "int32"])
def test_tensor_from_numbers_out_of_range_like_torch(data, name):
    """Python numbers must fit an integer dtype (integers may wrap into an unsigned one down
    to -max); NumPy arrays are cast as they are."""
    ed, td = _pair(name)
    try:
        expected = torch.tensor(data, dtype=td)
    except (RuntimeError, TypeError):
        _raises_like(lambda: ember.tensor(data, dtype=ed), lambda: torch.tensor(data, dtype=td))
        return
    assert_same(ember.tensor(data, dtype=ed), expected, rtol=0, atol=0)


# ---------------------------------------------------------------- eye / tri indices


@pytest.mark.parametrize("n,m", [(3, None), (3, 2), (2, 5), (0, 3), (1, None), (0, None)])
@pytest.mark.parametrize("name", ["float32", "int64", "bool", "complex128"])
def test_eye(n, m, name, device):
    ed, td = _pair(name)
    if refused_on(device, ed):
        return
    e = ember.eye(n, m, dtype=ed, device=device) if m is not None else \
        ember.eye(n, dtype=ed, device=device)
    t = torch.eye(n, m, dtype=td) if m is not None else torch.eye(n, dtype=td)
    assert_same(e, t)


def test_eye_errors():
    _raises_like(lambda: ember.eye(-1), lambda: torch.eye(-1), "n must be greater or equal")
    _raises_like(lambda: ember.eye(2, -1), lambda: torch.eye(2, -1), "m must be greater or equal")


@pytest.mark.parametrize("row,col,offset", [(3, 3, 0), (3, 4, 1), (3, 4, -1), (4, 3, -2),
                                            (0, 3, 0), (3, 0, 0), (5, 5, 10), (5, 5, -10),
                                            (1, 1, 0)])
@pytest.mark.parametrize("fn", ["tril_indices", "triu_indices"])
def test_tri_indices(row, col, offset, fn, device):
    assert_same(getattr(ember, fn)(row, col, offset, device=device),
                getattr(torch, fn)(row, col, offset))
    assert_same(getattr(ember, fn)(row, col, offset, dtype=ember.int32),
                getattr(torch, fn)(row, col, offset, dtype=torch.int32))


@pytest.mark.parametrize("fn", ["tril_indices", "triu_indices"])
def test_tri_indices_errors(fn):
    _raises_like(lambda: getattr(ember, fn)(-1, 3), lambda: getattr(torch, fn)(-1, 3), "row")
    _raises_like(lambda: getattr(ember, fn)(3, -1), lambda: getattr(torch, fn)(3, -1), "col")
    _raises_like(lambda: getattr(ember, fn)(3, 3, dtype=ember.float32),
                 lambda: getattr(torch, fn)(3, 3, dtype=torch.float32))


# ---------------------------------------------------------------- complex / polar


@pytest.mark.parametrize("name", ["float32", "float64"])
@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 1), (3,)), ((), (4,)), ((0,), (1,))])
def test_complex_and_polar_values(name, shapes):
    rng = np.random.default_rng(0)
    ed, td = _pair(name)
    a = rng.standard_normal(shapes[0]).astype(np.dtype(name))
    b = rng.standard_normal(shapes[1]).astype(np.dtype(name))
    ea, eb, ta, tb = ember.tensor(a), ember.tensor(b), torch.tensor(a), torch.tensor(b)
    assert_same(ember.complex(ea, eb), torch.complex(ta, tb))
    assert_same(ember.polar(ea.abs(), eb), torch.polar(ta.abs(), tb))


def test_complex_and_polar_noncontiguous_and_out():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 3))
    ea, eb, ta, tb = ember.tensor(a), ember.tensor(b), torch.tensor(a), torch.tensor(b)
    assert_same(ember.complex(ea, eb.t()), torch.complex(ta, tb.t()))
    e_out, t_out = ember.empty(0, dtype=ember.complex128), torch.empty(0, dtype=torch.complex128)
    ember.polar(ea, eb.t(), out=e_out)
    torch.polar(ta, tb.t(), out=t_out)
    assert_same(e_out, t_out)


def test_complex_and_polar_gradients():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3,))
    assert_grads_match(ember.complex, torch.complex, a, b, double_backward=True)
    assert_grads_match(lambda r, t: ember.polar(r.abs() + 0.5, t),
                       lambda r, t: torch.polar(r.abs() + 0.5, t), a, b, double_backward=True)


def test_complex_and_polar_errors():
    f32, f64 = ember.ones(2), ember.ones(2, dtype=ember.float64)
    t32, t64 = torch.ones(2), torch.ones(2, dtype=torch.float64)
    _raises_like(lambda: ember.complex(f32, f64), lambda: torch.complex(t32, t64),
                 "Expected object of scalar type Float")
    _raises_like(lambda: ember.complex(f32.long(), f32.long()),
                 lambda: torch.complex(t32.long(), t32.long()), "Half, Float or Double")
    _raises_like(lambda: ember.polar(f64, f32), lambda: torch.polar(t64, t32), "scalar type")
    _raises_like(lambda: ember.complex(ember.ones(2), ember.ones(3)),
                 lambda: torch.complex(torch.ones(2), torch.ones(3)), "must match")
    assert ember.complex(ember.ones(2, device="meta"), ember.ones(1, device="meta")).dtype \
        is ember.complex64


# ---------------------------------------------------------------- asarray


def test_asarray_shares_or_copies_like_torch():
    t = ember.ones(3)
    assert ember.asarray(t) is t
    c = ember.asarray(t, copy=True)
    c.fill_(5.0)
    assert t.tolist() == [1.0, 1.0, 1.0]
    a = np.array([1.0, 2.0])
    e = ember.asarray(a)
    a[0] = 7.0
    assert e.dtype is ember.float64 and e.tolist() == [7.0, 2.0]
    assert ember.asarray(a, copy=True).data_ptr() != a.__array_interface__["data"][0]
    assert_same(ember.asarray([1, 2], dtype=ember.float32),
                torch.asarray([1, 2], dtype=torch.float32))
    assert_same(ember.asarray(3.5), torch.asarray(3.5))
    assert_same(ember.asarray([[True], [False]]), torch.asarray([[True], [False]]))
    assert_same(ember.asarray(t, dtype=ember.float64), torch.asarray(torch.ones(3),
                                                                      dtype=torch.float64))
    r = ember.asarray([1.0, 2.0], requires_grad=True)
    assert r.requires_grad and r.is_leaf


def test_asarray_errors():
    _raises_like(lambda: ember.asarray(ember.ones(3), dtype=ember.float64, copy=False),
                 lambda: torch.asarray(torch.ones(3), dtype=torch.float64, copy=False),
                 "can't alias")
    _raises_like(lambda: ember.asarray([1, 2], copy=False),
                 lambda: torch.asarray([1, 2], copy=False))


# ---------------------------------------------------------------- fill_ / zero_ / copy_


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("value", [0, 1, 2.7, -3, True])
def test_fill_(name, value, device):
    ed, td = _pair(name)
    if refused_on(device, ed):
        return
    if name in ("uint8",) and value == -3:
        value = 3
    e, t = ember.zeros(2, 3, dtype=ed, device=device), torch.zeros(2, 3, dtype=td)
    assert e.fill_(value) is e
    t.fill_(value)
    assert_same(e, t)
    assert_same(e.zero_(), t.zero_())


def test_fill_view_tensor_value_and_errors():
    e, t = ember.zeros(3, 4), torch.zeros(3, 4)
    e.t().fill_(ember.tensor(2.0))
    t.t().fill_(torch.tensor(2.0))
    assert_same(e, t)
    assert_same(ember.fill(ember.zeros(2), 3.0), torch.fill(torch.zeros(2), 3.0))
    _raises_like(lambda: ember.ones(2).fill_(ember.ones(2)),
                 lambda: torch.ones(2).fill_(torch.ones(2)), "0-dimension")
    _raises_like(lambda: ember.ones(2).fill_(1 + 2j), lambda: torch.ones(2).fill_(1 + 2j))
    _raises_like(lambda: ember.ones(2, dtype=ember.uint8).fill_(300),
                 lambda: torch.ones(2, dtype=torch.uint8).fill_(300))
    leaf = ember.ones(2, requires_grad=True)
    _raises_like(lambda: leaf.fill_(1.0), lambda: torch.ones(2, requires_grad=True).fill_(1.0),
                 "leaf Variable")


def test_fill_bumps_version_and_meta():
    x = ember.zeros(3)
    v = x._version
    x.fill_(1.0)
    assert x._version == v + 1
    m = ember.zeros(3, device="meta")
    assert m.fill_(2.0) is m and m.zero_() is m


def test_fill_autograd():
    x = ember.ones(3, requires_grad=True)
    tx = torch.ones(3, requires_grad=True)
    y, ty = x * 2, tx * 2
    y.fill_(5.0)
    ty.fill_(5.0)
    (y * x).sum().backward()
    (ty * tx).sum().backward()
    assert_same(x.grad, tx.grad)
    value, tvalue = ember.tensor(2.0, requires_grad=True), torch.tensor(2.0, requires_grad=True)
    z, tz = ember.zeros(4), torch.zeros(4)
    z.fill_(value)
    tz.fill_(tvalue)
    (z * ember.arange(4.0)).sum().backward()
    (tz * torch.arange(4.0)).sum().backward()
    assert_same(value.grad, tvalue.grad)


@pytest.mark.parametrize("src_name", ["float64", "int32", "bool", "complex64", "float16"])
@pytest.mark.parametrize("dst_name", ["float32", "int64", "uint8", "bool", "complex128"])
def test_copy_casts_like_torch(src_name, dst_name):
    rng = np.random.default_rng(3)
    data = rng.uniform(0, 5, (2, 3)) * 1.0
    src = to_ember(torch.tensor(data).to(DTYPE_PAIRS[src_name][1]))
    tsrc = torch.tensor(data).to(DTYPE_PAIRS[src_name][1])
    e, t = ember.zeros(2, 3, dtype=_pair(dst_name)[0]), torch.zeros(2, 3, dtype=_pair(dst_name)[1])
    discards = src_name.startswith("complex") and not dst_name.startswith("complex")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert e.copy_(src) is e
    assert any("discards the imaginary part" in str(w.message) for w in caught) == discards
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t.copy_(tsrc)
    assert_same(e, t)


@pytest.mark.parametrize("dst_shape,src_shape", [((2, 3), (3,)), ((2, 3), (2, 1)), ((2, 3), ()),
                                                 ((0, 3), (3,)), ((4,), (4,))])
def test_copy_broadcasts(dst_shape, src_shape, device):
    rng = np.random.default_rng(4)
    data = rng.standard_normal(src_shape).astype(np.float32)
    e, t = ember.zeros(dst_shape, device=device), torch.zeros(dst_shape)
    e.copy_(ember.tensor(data))  # from the CPU, onto ``device``
    t.copy_(torch.tensor(data))
    assert_same(e, t)


def test_copy_noncontiguous_and_overlap():
    base = np.arange(12.0).reshape(3, 4)
    e, t = ember.tensor(base), torch.tensor(base)
    e.t().copy_(ember.tensor(base.T.copy() * 2))
    t.t().copy_(torch.tensor(base.T.copy() * 2))
    assert_same(e, t)
    e2, t2 = ember.tensor(np.arange(9.0).reshape(3, 3)), torch.tensor(np.arange(9.0).reshape(3, 3))
    _raises_like(lambda: e2.copy_(e2.t()), lambda: t2.copy_(t2.t()), "single memory location")
    e3, t3 = ember.arange(6.0), torch.arange(6.0)
    assert_same(e3.copy_(e3), t3.copy_(t3))


def test_copy_errors_and_devices():
    _raises_like(lambda: ember.ones(2, 3).copy_(ember.ones(4)),
                 lambda: torch.ones(2, 3).copy_(torch.ones(4)), "must match")
    _raises_like(lambda: ember.ones(2).copy_(ember.ones(2, 2)),
                 lambda: torch.ones(2).copy_(torch.ones(2, 2)), "broadcast shape")
    with pytest.raises(TypeError):
        ember.ones(2).copy_(3)
    with pytest.raises(NotImplementedError, match="meta"):
        ember.ones(2).copy_(ember.ones(2, device="meta"))
    m = ember.zeros(2, device="meta")
    assert m.copy_(ember.ones(2)) is m


def test_copy_autograd_flows_to_source_not_target():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((3,)), rng.standard_normal((2, 3))

    def run(lib, x, y):
        z = y * 3
        z.copy_(x * 2)
        return z * y

    assert_grads_match(lambda x, y: run(ember, x, y), lambda x, y: run(torch, x, y), a, b,
                       double_backward=True)
    buf, tbuf = ember.zeros(3), torch.zeros(3)
    p, tp = ember.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    buf.copy_(p)
    tbuf.copy_(tp)
    assert buf.requires_grad and buf.grad_fn is not None
    (buf * 4).sum().backward()
    (tbuf * 4).sum().backward()
    assert_same(p.grad, tp.grad)


def test_copy_into_int_from_float_requiring_grad():
    x, tx = ember.tensor([1.7, -2.7], requires_grad=True), torch.tensor([1.7, -2.7],
                                                                         requires_grad=True)
    e, t = ember.ones(2, dtype=ember.int64), torch.ones(2, dtype=torch.int64)
    with ember.no_grad():
        e.copy_(x)
    with torch.no_grad():
        t.copy_(tx)
    assert_same(e, t)


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty"])
def test_factories_need_a_size(fn):
    _raises_like(lambda: getattr(ember, fn)(), lambda: getattr(torch, fn)(), "size")
    _raises_like(lambda: getattr(ember.zeros(1), f"new_{fn}")(),
                 lambda: getattr(torch.zeros(1), f"new_{fn}")(), "size")
    assert tuple(ember.Tensor().shape) == tuple(torch.Tensor().shape)
