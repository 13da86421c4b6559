"""repr/str of tensors against torch's: every case prints the same data with both libraries.

The only intended difference is the namespace in dtype names (``ember.float64`` for
``torch.float64``), so each check compares ``repr(ember_t)`` with
``repr(torch_t).replace("torch.", "ember.")``.
"""

import numpy as np
import pytest
import torch

import ember
from conftest import DTYPE_PAIRS
from ember._printing import get_printoptions

FLOATS = ["float16", "bfloat16", "float32", "float64"]
COMPLEX = ["complex64", "complex128"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]
ALL = ["bool"] + INTS + FLOATS + COMPLEX


@pytest.fixture(autouse=True)
def _restore_print_options():
    """Every test starts from the defaults and leaves them (and the default dtype) as it found."""
    saved = get_printoptions()
    torch.set_printoptions(profile="default")
    ember.set_printoptions(profile="default")
    yield
    torch.set_printoptions(profile="default")
    ember.set_printoptions(**saved)
    torch.set_default_dtype(torch.float32)
    ember.set_default_dtype(ember.float32)


def pair(array, name, requires_grad=False):
    """The same values as an ember and a torch tensor of dtype ``name``."""
    array = np.asarray(array)
    if name == "bfloat16":
        values = np.asarray(array, dtype=np.float32)
        e = ember.tensor(values).to(ember.bfloat16)
        t = torch.from_numpy(values.copy()).to(torch.bfloat16)
    else:
        with np.errstate(all="ignore"):
            values = np.asarray(array.astype(DTYPE_PAIRS[name][0].np))
        e = ember.tensor(values)
        t = torch.from_numpy(values.copy())
    if requires_grad:
        e.requires_grad_()
        t.requires_grad_()
    return e, t


def expected(t):
    return repr(t).replace("torch.", "ember.")


def check(array, name, requires_grad=False):
    e, t = pair(array, name, requires_grad)
    want = expected(t)
    assert repr(e) == want
    assert str(e) == str(t).replace("torch.", "ember.")


def make_complex(real, imag):
    """A complex array with exactly these parts (``real + 1j * imag`` turns inf into nan)."""
    out = np.empty(np.shape(real), dtype=np.complex128)
    out.real, out.imag = real, imag
    return out


def random_values(rng, shape, name, scale=1.0):
    if name == "bool":
        return rng.random(shape) < 0.5
    if name == "uint8":
        return rng.integers(0, 256, shape)
    if name in INTS:
        info = np.iinfo(name)
        return rng.integers(max(info.min, -10**6), min(info.max, 10**6), shape, dtype=np.int64)
    values = rng.standard_normal(shape) * scale
    if name in COMPLEX:
        values = values + 1j * rng.standard_normal(shape) * scale
    return values


# ---------------------------------------------------------------- every dtype, every rank

SHAPES = [(), (1,), (5,), (3, 4), (2, 3, 4), (2, 1, 3, 2), (0,), (0, 3), (2, 0, 3)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", ALL)
def test_dtypes_and_ranks(name, shape):
    rng = np.random.default_rng(len(shape) * 100 + ALL.index(name))
    check(random_values(rng, shape, name), name)


# ---------------------------------------------------------------- magnitudes and notation

SCALES = [1e-12, 1e-5, 1e-4, 2e-4, 1e-2, 1.0, 99.0, 1e3, 1e5, 1e8, 2e8, 1e12, 1e30]


@pytest.mark.parametrize("scale", SCALES, ids=str)
@pytest.mark.parametrize("name", FLOATS + COMPLEX)
def test_float_magnitudes(name, scale):
    rng = np.random.default_rng(int(np.log10(scale) + 20))
    check(random_values(rng, (7,), name, scale), name)
    check(random_values(rng, (2, 3), name, scale) * rng.choice([1, 1e-3, 1e3], (2, 3)), name)
    check(np.round(random_values(rng, (6,), name, scale)), name)  # int mode
    check(random_values(rng, (), name, scale), name)


@pytest.mark.parametrize("values", [
    [1.0, 2.0], [1.0, 1000.0], [1.0, 1001.0], [1.0, 2.0e8], [1e8, 1.0], [1.5, 1500.0],
    [1.5, 1.0e-4], [1.5, 9.9e-5], [0.0001, 0.1], [123456789.0], [-1.0, -2.5], [0.5],
    [0.125, 2.5, 1.0], [2.5, 3.5, -0.5], [1e-300, 1.0], [3.0, -7.0, 250.0],
    [1.0, 1000.5], [12345.678, 0.001],
], ids=str)
@pytest.mark.parametrize("name", ["float32", "float64", "complex128"])
def test_notation_boundaries(name, values):
    check(values, name)
    check(values[0], name)


SPECIAL = [
    [np.nan], [np.inf], [-np.inf], [np.nan, np.inf, -np.inf], [0.0, -0.0], [0.0, -0.0, 1.5],
    [np.nan, 1.0], [np.inf, -1.25, 100.0], [np.nan, 1e-8, 3.0], [-np.inf, 2.0, 3.0, 1e10],
    [0.0, 0.0, 0.0], [np.nan, 0.0, -0.0], [[np.nan, 1.0], [np.inf, -123.456]],
]


@pytest.mark.parametrize("values", SPECIAL, ids=str)
@pytest.mark.parametrize("name", FLOATS + COMPLEX)
def test_nan_inf_zero(name, values):
    check(values, name)
    if name in COMPLEX:
        values = np.asarray(values, dtype=np.float64)
        check(make_complex(values[::-1], values), name)
        check(make_complex(np.full_like(values, 1.5), -values), name)


@pytest.mark.parametrize("values", [
    [-5, 3, 100], [-1000000, 7], [0], [-1], [127, -128, 0], [2**62, -2**62],
    [[1, -22], [333, -4444]], [9223372036854775807, -9223372036854775808],
], ids=str)
@pytest.mark.parametrize("name", INTS)
def test_integers_with_negatives(name, values):
    info = np.iinfo(name)
    clipped = np.minimum(np.maximum(np.array(values, dtype=object), info.min), info.max)
    check(clipped.astype(name), name)


def test_int64_extremes_and_bools():
    check(np.array([np.iinfo(np.int64).max, np.iinfo(np.int64).min, 0]), "int64")
    check(np.array([True, False, True]), "bool")
    check(np.array([True, True]), "bool")
    check(np.array(False), "bool")
    check(np.array([[True], [False]]), "bool")


# ---------------------------------------------------------------- layout: wrapping, nesting

@pytest.mark.parametrize("shape", [(37,), (20, 15), (3, 2, 25), (2, 2, 2, 17), (1, 1, 1, 30)],
                         ids=str)
@pytest.mark.parametrize("name", ["int64", "float32", "float64", "complex64", "bool"])
def test_line_wrapping(name, shape):
    rng = np.random.default_rng(len(shape))
    check(random_values(rng, shape, name, 100.0), name)


@pytest.mark.parametrize("shape", [(1000,), (1001,), (2000,), (50, 50), (3, 400), (400, 3),
                                   (11, 11, 11), (4, 5, 6, 10), (2, 2, 2, 2000), (1001, 1)],
                         ids=str)
@pytest.mark.parametrize("name", ["int32", "float32", "float64", "complex128", "bool",
                                  "bfloat16"])
def test_summarisation(name, shape):
    rng = np.random.default_rng(sum(shape))
    check(random_values(rng, shape, name, 10.0), name)


def test_summary_decides_the_format():
    # The formatter sees only the printed edges: the huge middle value does not switch on
    # scientific notation and does not widen the columns.
    values = np.ones(3000)
    values[1500] = 1e20
    check(values, "float32")
    check(np.arange(2000.0).reshape(20, 100), "float32")
    check(np.arange(20000.0).reshape(2, 10, 1000), "float64")


def test_non_contiguous_inputs():
    rng = np.random.default_rng(3)
    base = rng.standard_normal((6, 8))
    for view in (base.T, base[::2, 1::3], base[:, ::-1].copy()[::2], base.T[2:5]):
        e = ember.from_numpy(view)
        t = torch.from_numpy(np.ascontiguousarray(view))
        assert repr(e) == expected(t)
    e = ember.from_numpy(np.arange(5000.0).reshape(50, 100).T)
    assert repr(e) == expected(torch.arange(5000.0, dtype=torch.float64).reshape(50, 100).T)


# ---------------------------------------------------------------- suffixes

@pytest.mark.parametrize("name", FLOATS + COMPLEX)
@pytest.mark.parametrize("shape", [(), (3,), (2, 13), (0,), (0, 2)], ids=str)
def test_requires_grad(name, shape):
    rng = np.random.default_rng(0)
    check(random_values(rng, shape, name, 3.0), name, requires_grad=True)


@pytest.mark.parametrize("fn", [
    lambda x: x * 2, lambda x: x.exp(), lambda x: x.sum(), lambda x: x + 1,
    lambda x: -x, lambda x: x / 3,
], ids=["mul", "exp", "sum", "add", "neg", "div"])
@pytest.mark.parametrize("shape", [(), (4,), (3, 7), (2, 2, 9)], ids=str)
@pytest.mark.parametrize("name", ["float32", "float64"])
def test_grad_fn(name, shape, fn):
    rng = np.random.default_rng(1)
    e, t = pair(random_values(rng, shape, name), name, requires_grad=True)
    assert repr(fn(e)) == expected(fn(t))


def test_suffix_wraps_past_linewidth():
    # Lines whose last row nearly fills the width push dtype/grad suffixes to a new line.
    for n in range(1, 12):
        for name in ("float64", "int32", "float16"):
            values = np.arange(n) * 1.25 if name != "int32" else np.arange(n) * 1000
            check(values, name)
            if name != "int32":
                check(values, name, requires_grad=True)
    ember.set_printoptions(linewidth=30)
    torch.set_printoptions(linewidth=30)
    check(np.arange(4.0), "float64", requires_grad=True)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("shape", [(), (2, 3), (0,), (5,), (1, 0, 2)], ids=str)
def test_meta_tensors(name, shape):
    e = ember.empty(shape, dtype=DTYPE_PAIRS[name][0], device="meta")
    t = torch.empty(shape, dtype=DTYPE_PAIRS[name][1], device="meta")
    assert repr(e) == expected(t)
    if name in FLOATS + COMPLEX:
        assert repr(e.requires_grad_()) == expected(t.requires_grad_())


def test_device_suffix(device):
    e, t = pair(np.array([1.5, -2.0]), "float32" if device == "webgpu" else "float64")
    e = e.to(device)
    want = expected(t)
    if device != "cpu":
        want = want[:-1] + f", device='{e.device}')" if "dtype" not in want else \
            want.replace("], dtype", f"], device='{e.device}', dtype")
    assert repr(e) == want


@pytest.mark.parametrize("name", ["float32", "float64", "complex64", "complex128"])
def test_default_dtype_float64(name):
    ember.set_default_dtype(ember.float64)
    torch.set_default_dtype(torch.float64)
    rng = np.random.default_rng(5)
    for shape in ((), (3,), (0,), (0, 2)):
        check(random_values(rng, shape, name), name)
    e = ember.empty(2, 2, dtype=DTYPE_PAIRS[name][0], device="meta")
    assert repr(e) == expected(torch.empty(2, 2, dtype=DTYPE_PAIRS[name][1], device="meta"))


# ---------------------------------------------------------------- set_printoptions

OPTIONS = [
    {"precision": 0}, {"precision": 2}, {"precision": 8}, {"threshold": 5},
    {"threshold": 0}, {"edgeitems": 1, "threshold": 10}, {"edgeitems": 5, "threshold": 20},
    {"linewidth": 20}, {"linewidth": 120}, {"linewidth": 5}, {"profile": "short"},
    {"profile": "full"}, {"profile": "default"}, {"sci_mode": True}, {"sci_mode": False},
    {"profile": "short", "precision": 6}, {"profile": "full", "edgeitems": 1},
    {"sci_mode": True, "precision": 1}, {"sci_mode": False, "linewidth": 40},
    {"edgeitems": 0}, {"edgeitems": 0, "threshold": 3},
]


@pytest.mark.parametrize("options", OPTIONS, ids=str)
@pytest.mark.parametrize("name", ["int64", "float32", "float64", "complex64"])
def test_print_options(name, options):
    ember.set_printoptions(**options)
    torch.set_printoptions(**options)
    rng = np.random.default_rng(7)
    for shape in ((), (8,), (4, 9), (2, 3, 12), (1200,)):
        for scale in (1.0, 1e-6, 1e9):
            check(random_values(rng, shape, name, scale), name)
    check(np.array([0.5, 1.5, 2.5, 3.5, -0.5]), name)  # half-to-even rounding at precision 0


def test_printoptions_state_follows_torch():
    from torch._tensor_str import PRINT_OPTS as TORCH_OPTS

    calls = [
        {"sci_mode": True}, {"precision": 2}, {"profile": "short"}, {"threshold": 7},
        {"profile": "full", "linewidth": 99}, {"profile": "no-such-profile"},
        {"profile": "default", "sci_mode": False}, {"edgeitems": 1},
    ]
    for options in calls:
        ember.set_printoptions(**options)
        torch.set_printoptions(**options)
        state = get_printoptions()
        for key, value in state.items():
            assert value == getattr(TORCH_OPTS, key), (options, key)


def test_precision_applies_to_scalars_and_complex():
    ember.set_printoptions(precision=1)
    torch.set_printoptions(precision=1)
    check(np.array(3.14159), "float64")
    check(np.array(3.14159 - 2.71828j), "complex128")
    check(np.array([1e-7 + 1j, 2 - 3e9j]), "complex64")


def test_set_printoptions_is_public_and_documented():
    assert ember.set_printoptions.__doc__.strip()
    assert "Example::" in ember.set_printoptions.__doc__


def test_initial_options_are_torchs_defaults():
    from ember._printing import _PrintOptions

    fresh_torch = type(torch._tensor_str.PRINT_OPTS)()
    fresh = _PrintOptions()
    for key in get_printoptions():
        assert getattr(fresh, key) == getattr(fresh_torch, key), key
