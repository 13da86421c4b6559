"""Property tests: broadcasting and promotion of binary ops agree with torch on random inputs."""

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes

import ember
from conftest import DTYPE_PAIRS, assert_same

NUMERIC = ["uint8", "int16", "int32", "int64", "float32", "float64", "bool"]


def _make(shape, name, seed):
    rng = np.random.default_rng(seed)
    values = rng.integers(-5, 6, size=shape)
    e_dtype, t_dtype = DTYPE_PAIRS[name]
    t = torch.from_numpy(values).to(t_dtype)
    return ember.tensor(t.numpy()), t


@settings(max_examples=150, deadline=None)
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=3),
       names=st.tuples(st.sampled_from(NUMERIC), st.sampled_from(NUMERIC)),
       op=st.sampled_from(["add", "mul", "maximum", "eq", "lt"]), seed=st.integers(0, 99))
def test_binary_ops_broadcast_and_promote_like_torch(shapes, names, op, seed):
    (ea, ta), (eb, tb) = (_make(shapes.input_shapes[i], names[i], seed + i) for i in range(2))
    try:
        expected = getattr(torch, op)(ta, tb)
    except RuntimeError:
        try:
            getattr(ember, op)(ea, eb)
        except RuntimeError:
            return
        raise AssertionError("torch refused the inputs but ember accepted them") from None
    assert_same(getattr(ember, op)(ea, eb), expected)


@settings(max_examples=100, deadline=None)
@given(a=array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4),
       b=array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
def test_broadcast_shapes_agrees_with_torch_or_both_raise(a, b):
    try:
        expected = torch.broadcast_shapes(a, b)
    except RuntimeError as error:
        try:
            ember.broadcast_shapes(a, b)
        except RuntimeError as ours:
            assert str(ours) == str(error)
            return
        raise AssertionError("torch refused the shapes but ember accepted them") from None
    assert tuple(ember.broadcast_shapes(a, b)) == tuple(expected)


@settings(max_examples=100, deadline=None)
@given(shape=array_shapes(min_dims=0, max_dims=3, max_side=3), name=st.sampled_from(NUMERIC),
       scalar=st.one_of(st.integers(-3, 3), st.floats(-3, 3, allow_nan=False), st.booleans()),
       seed=st.integers(0, 99))
def test_python_scalars_are_weak_like_torch(shape, name, scalar, seed):
    e, t = _make(shape, name, seed)
    for op in ("add", "mul"):
        try:
            expected = getattr(torch, op)(t, scalar)
        except RuntimeError:
            continue
        assert_same(getattr(ember, op)(e, scalar), expected)
