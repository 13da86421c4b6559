"""Smoke tests of the core path: ops, broadcasting, promotion and autograd against torch."""

import numpy as np
import torch

import ember
from conftest import assert_grads_match, assert_same, make_pair


def test_add_mul_broadcast_matches_torch():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 1)), rng.standard_normal((4,))
    (ea, ta), (eb, tb) = make_pair(a), make_pair(b)
    assert_same(ea * eb + ea, ta * tb + ta)


def test_int_plus_float_scalar_gives_default_float():
    e, t = make_pair(np.array([1, 2, 3]))
    assert_same(e + 2.5, t + 2.5)
    assert_same(e / 2, t / 2)


def test_gradients_and_double_backward_match_torch():
    rng = np.random.default_rng(1)
    assert_grads_match(lambda x, y: (x * y).exp() / (y + 3),
                       lambda x, y: (x * y).exp() / (y + 3),
                       rng.standard_normal((2, 3)), rng.standard_normal((3,)),
                       double_backward=True)


def test_mixed_devices_error_message():
    x = ember.zeros(2)
    y = ember.zeros(2, device="meta")
    try:
        x + y
    except RuntimeError as error:
        assert "Expected all tensors to be on the same device" in str(error)
    else:
        raise AssertionError("mixing devices must raise")


def test_broadcast_error_is_torchs():
    e1, e2 = ember.zeros(3), ember.zeros(4)
    t1, t2 = torch.zeros(3), torch.zeros(4)
    try:
        t1 + t2
    except RuntimeError as error:
        expected = str(error)
    try:
        e1 + e2
    except RuntimeError as error:
        assert str(error) == expected
