"""ember.testing against torch.testing: the same inputs give the same outcome and message."""

import re
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
from ember.testing import assert_allclose, assert_close, make_tensor

NAN, INF = float("nan"), float("inf")


def _outcome(call):
    """(exception type name, message) of ``call()``, or ("ok", "") when it passes."""
    try:
        call()
    except Exception as error:  # noqa: BLE001  (any exception is part of the outcome)
        return type(error).__name__, str(error)
    return "ok", ""


def _as_torch_message(message):
    """ember's message in torch's spelling: ember.float32 -> torch.float32, class names."""
    message = message.replace("ember._tensor.Tensor", "torch.Tensor")
    return message.replace("ember.", "torch.")


def _same_outcome(make_inputs, **kwargs):
    """Run assert_close on inputs built by ``make_inputs(lib)`` in both libraries."""
    ours = _outcome(lambda: assert_close(*make_inputs(ember), **kwargs))
    theirs = _outcome(lambda: torch.testing.assert_close(*make_inputs(torch), **kwargs))
    assert (ours[0], _as_torch_message(ours[1])) == theirs


def _param(lib, values):
    return lib.nn.Parameter(lib.tensor(values))


CASES = {
    "equal": lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0])),
    "within-tolerance": lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.000001])),
    "float32-mismatch": lambda L: (L.tensor([1.0, 2.0, 3.0]), L.tensor([1.0, 2.5, 3.0])),
    "float64-mismatch": lambda L: (L.tensor([1.0, 2.0], dtype=L.float64),
                                   L.tensor([1.0 + 1e-6, 2.0], dtype=L.float64)),
    "float16-mismatch": lambda L: (L.tensor([1.0, 2.0], dtype=L.float16),
                                   L.tensor([1.0, 2.01], dtype=L.float16)),
    "bfloat16-close": lambda L: (L.tensor([1.0, 2.0], dtype=L.bfloat16),
                                 L.tensor([1.0, 2.0078125], dtype=L.bfloat16)),
    "int-mismatch": lambda L: (L.tensor([1, 2, 3]), L.tensor([1, 5, 3])),
    "int8-wrap": lambda L: (L.tensor([-128, 0], dtype=L.int8), L.tensor([127, 0], dtype=L.int8)),
    "bool-tensors": lambda L: (L.tensor([True, False]), L.tensor([True, True])),
    "2d-index": lambda L: (L.arange(12.0).reshape(3, 4),
                           L.arange(12.0).reshape(3, 4).index_put((L.tensor([1]),
                                                                   L.tensor([2])),
                                                                  L.tensor([-7.0]))),
    "zero-expected": lambda L: (L.tensor([0.5, 0.0]), L.tensor([0.0, 0.0])),
    "complex": lambda L: (L.tensor([1 + 1j, 2 + 0j]), L.tensor([1 + 1j, 2 + 1j])),
    "scalar-tensor-nan": lambda L: (L.tensor(1.0), L.tensor(NAN)),
    "nan-vs-nan": lambda L: (L.tensor([NAN, 1.0]), L.tensor([NAN, 1.0])),
    "inf-equal": lambda L: (L.tensor([INF, -INF]), L.tensor([INF, -INF])),
    "inf-vs-minus-inf": lambda L: (L.tensor([INF, 1.0]), L.tensor([-INF, 1.0])),
    "shape": lambda L: (L.ones(2, 3), L.ones(3, 2)),
    "dtype": lambda L: (L.ones(2), L.ones(2, dtype=L.float64)),
    "empty": lambda L: (L.ones(0, 3), L.ones(0, 3)),
    "numpy-arrays": lambda L: (np.array([1.0, 2.0]), np.array([1.0, 2.5])),
    "numpy-vs-tensor": lambda L: (np.array([1.0]), L.tensor([1.0])),
    "number-vs-tensor": lambda L: (1.0, L.tensor(1.0)),
    "float-numbers": lambda L: (1.0, 1.1),
    "float-numbers-close": lambda L: (1.0, 1.0 + 1e-9),
    "int-numbers": lambda L: (1, 2),
    "complex-numbers": lambda L: (1 + 2j, 1 + 3j),
    "float-vs-int": lambda L: (1.0, 1),
    "numpy-scalars": lambda L: (np.float32(1.0), np.float32(1.5)),
    "booleans": lambda L: (True, False),
    "numpy-bool": lambda L: (np.bool_(True), True),
    "none-none": lambda L: (None, None),
    "none-vs-tensor": lambda L: (None, L.tensor(1.0)),
    "strings": lambda L: ("a", "a"),
    "sequence-length": lambda L: ([L.tensor(1.0)], [L.tensor(1.0), L.tensor(2.0)]),
    "tuple-vs-list": lambda L: ((L.tensor([1.0]), 2.0), [L.tensor([1.0]), 2.0]),
    "nested-mismatch": lambda L: ({"a": [L.tensor([1.0]), {"b": 2.0}]},
                                  {"a": [L.tensor([1.0]), {"b": 2.5}]}),
    "mapping-keys": lambda L: ({"a": 1.0, "c": 2.0}, {"a": 1.0, "b": 2.0}),
    "ordered-vs-dict": lambda L: (OrderedDict(x=L.tensor(1.0), y=2.0), {"y": 2.0,
                                                                         "x": L.tensor(1.0)}),
    "type-error-wins": lambda L: ([L.tensor([1.0]), "a"], [L.tensor([2.0]), "b"]),
    "requires-grad": lambda L: (L.tensor([1.0, 2.0], requires_grad=True) * 2,
                                L.tensor([2.0, 4.5])),
    "parameter-vs-tensor": lambda L: (_param(L, [1.0, 2.0]), L.tensor([1.0, 2.0])),
    "meta-shape-only": lambda L: (L.empty(2, device="meta"), L.empty(2, device="meta")),
    "meta-vs-cpu": lambda L: (L.empty(2, device="meta"), L.zeros(2)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_assert_close_matches_torch(name):
    _same_outcome(CASES[name])


@pytest.mark.parametrize("kwargs", [
    {"rtol": 0.0, "atol": 0.0},
    {"rtol": 0.3, "atol": 0.0},
    {"rtol": 0.1, "atol": 0.1},
    {"rtol": 1e-3},
    {"atol": 1e-3},
    {"equal_nan": True},
    {"msg": "custom message"},
    {"msg": lambda m: f"Header\n\n{m}\n\nFooter"},
    {"check_dtype": False},
], ids=lambda kw: "-".join(f"{k}={v if not callable(v) else 'fn'}" for k, v in kw.items()))
@pytest.mark.parametrize("name", ["float32-mismatch", "nested-mismatch", "nan-vs-nan", "dtype",
                                  "float-numbers", "float-vs-int", "type-error-wins",
                                  "mapping-keys"])
def test_assert_close_options_match_torch(name, kwargs):
    _same_outcome(CASES[name], **kwargs)


def test_check_dtype_false_promotes_before_comparing():
    _same_outcome(lambda L: (L.tensor([1, 2]), L.tensor([1.0, 2.5])), check_dtype=False)
    _same_outcome(lambda L: (L.tensor([1, 2]), L.tensor([1.0, 2.0])), check_dtype=False)


def test_allow_subclasses_false_refuses_parameter_vs_tensor():
    _same_outcome(CASES["parameter-vs-tensor"], allow_subclasses=False)


def test_check_stride():
    make = lambda L: (L.zeros(3, 2).t(), L.zeros(2, 3))  # noqa: E731
    _same_outcome(make)
    _same_outcome(make, check_stride=True)


def test_check_device_false_compares_on_one_device():
    _same_outcome(lambda L: (L.ones(2), L.ones(2)), check_device=False)


def test_assert_close_docstring_example_message():
    expected_report = ("Tensor-likes are not close!\n\nMismatched elements: 2 / 3 (66.7%)\n"
                       "Greatest absolute difference: 2.0 at index (1,) (up to 1e-05 allowed)\n"
                       "Greatest relative difference: 1.0 at index (1,) (up to 1.3e-06 allowed)")
    with pytest.raises(AssertionError, match=f"^{re.escape(expected_report)}$"):
        assert_close(ember.tensor([1.0, 4.0, 5.0]), ember.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(AssertionError, match=f"^{re.escape(expected_report)}$"):
        torch.testing.assert_close(torch.tensor([1.0, 4.0, 5.0]), torch.tensor([1.0, 2.0, 3.0]))


# ---------------------------------------------------------------- assert_allclose


@pytest.mark.parametrize("make", [
    lambda L: (L.tensor([1.0, 2.0]), [1.0, 2.00005]),
    lambda L: (L.tensor([1.0, 2.0]), [1.0, 2.01]),
    lambda L: (L.tensor([NAN, 2.0]), L.tensor([NAN, 2.0])),
    lambda L: (L.tensor([1, 2]), L.tensor([1.0, 2.0])),
    lambda L: ([1.0, 2.0], [1.0, 2.0]),
])
def test_assert_allclose_matches_torch_and_warns(make):
    with warnings.catch_warnings(record=True) as ours_warned:
        warnings.simplefilter("always")
        ours = _outcome(lambda: assert_allclose(*make(ember)))
    with warnings.catch_warnings(record=True) as theirs_warned:
        warnings.simplefilter("always")
        theirs = _outcome(lambda: torch.testing.assert_allclose(*make(torch)))
    assert (ours[0], _as_torch_message(ours[1])) == theirs
    assert [w.category for w in ours_warned] == [w.category for w in theirs_warned] \
        == [FutureWarning]
    assert _as_torch_message(str(ours_warned[0].message)) == str(theirs_warned[0].message)


# ---------------------------------------------------------------- make_tensor

DEFAULT_RANGES = [("bool", 0, 1), ("uint8", 0, 9), ("int8", -9, 9), ("int16", -9, 9),
                  ("int32", -9, 9), ("int64", -9, 9), ("float16", -9, 9),
                  ("bfloat16", -9, 9), ("float32", -9, 9), ("float64", -9, 9)]


@pytest.mark.parametrize("name,low,high", DEFAULT_RANGES)
def test_make_tensor_default_ranges_match_torch(name, low, high):
    ours = make_tensor(4000, dtype=getattr(ember, name), device="cpu")
    theirs = torch.testing.make_tensor(4000, dtype=getattr(torch, name), device="cpu")
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    values, expected = ours.double().numpy(), theirs.double().numpy()
    # Both stay in the documented range; with 4000 draws both reach (close to) its ends.
    for v in (values, expected):
        assert low <= v.min() and v.max() <= high
        assert v.min() < low + 0.5 and v.max() > high - 0.5


@pytest.mark.parametrize("name", ["complex64", "complex128"])
def test_make_tensor_complex_parts_in_range(name):
    ours = make_tensor(500, dtype=getattr(ember, name), device="cpu", low=-2, high=3)
    theirs = torch.testing.make_tensor(500, dtype=getattr(torch, name), device="cpu", low=-2,
                                       high=3)
    for part in (ours.real, ours.imag, theirs.real, theirs.imag):
        assert -2 <= float(part.min()) and float(part.max()) < 3


def test_make_tensor_shape_forms_and_flags():
    for shape in [(2, 3), ((2, 3),), ([2, 3],), (ember.Size([2, 3]),)]:
        assert make_tensor(*shape, dtype=ember.float32, device="cpu").shape == (2, 3)
    assert make_tensor(dtype=ember.float32, device="cpu").shape == ()
    t = make_tensor(3, 4, dtype=ember.float32, device="cpu", noncontiguous=True)
    r = torch.testing.make_tensor(3, 4, dtype=torch.float32, device="cpu", noncontiguous=True)
    assert t.shape == r.shape and t.stride() == r.stride() and not t.is_contiguous()
    one = make_tensor(1, dtype=ember.float32, device="cpu", noncontiguous=True)
    assert one.is_contiguous() and one.shape == (1,)
    g = make_tensor(2, dtype=ember.float64, device="cpu", requires_grad=True)
    assert g.requires_grad and g.is_leaf
    b = make_tensor(2000, dtype=ember.bool, device="cpu", exclude_zero=True)
    assert bool(b.all())
    i = make_tensor(2000, dtype=ember.int8, device="cpu", low=0, high=2, exclude_zero=True)
    assert set(i.tolist()) == {1}
    f = make_tensor(50, dtype=ember.float32, device="cpu", low=-0.5, high=0.5,
                    exclude_zero=True)
    assert bool((f != 0).all())


def test_make_tensor_integer_bounds_round_up_and_clamp():
    ours = make_tensor(3000, dtype=ember.uint8, device="cpu", low=0.5, high=3.2)
    theirs = torch.testing.make_tensor(3000, dtype=torch.uint8, device="cpu", low=0.5, high=3.2)
    assert set(ours.tolist()) == set(theirs.tolist()) == {1, 2, 3}
    big = make_tensor(100, dtype=ember.int8, device="cpu", low=-1000, high=1000)
    assert -128 <= int(big.min()) and int(big.max()) <= 127
    wide = make_tensor(100, dtype=ember.float32, device="cpu", low=-1e39, high=1e39)
    assert bool(wide.isfinite().all())


@pytest.mark.parametrize("kwargs", [
    {"dtype": "float32", "low": 2, "high": 1},
    {"dtype": "int64", "low": 2, "high": 2},
    {"dtype": "float32", "low": NAN},
    {"dtype": "int64", "requires_grad": True},
    {"dtype": "bool", "requires_grad": True},
    {"dtype": "uint8", "low": -20, "high": -10},
    {"dtype": "float32", "noncontiguous": True, "memory_format": "channels_last"},
])
def test_make_tensor_errors_match_torch(kwargs):
    kwargs = dict(kwargs)
    name = kwargs.pop("dtype")

    def run(lib, make):
        options = dict(kwargs)
        if "memory_format" in options:
            options["memory_format"] = getattr(lib, options["memory_format"])
        return _outcome(lambda: make(2, 2, dtype=getattr(lib, name), device="cpu", **options))

    ours = run(ember, make_tensor)
    theirs = run(torch, torch.testing.make_tensor)
    assert ours[0] == theirs[0] != "ok"
    assert _as_torch_message(ours[1]) == theirs[1]


def test_make_tensor_low_equal_high_warns_for_floats():
    with pytest.warns(FutureWarning, match="low==high"):
        t = make_tensor(3, dtype=ember.float32, device="cpu", low=1.0, high=1.0)
    assert t.tolist() == [1.0, 1.0, 1.0]


def test_testing_is_an_attribute_of_ember_after_import():
    import subprocess
    import sys

    code = "import ember; print(ember.testing.assert_close is not None)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "True"
