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


def test_grads_never_alias_each_other_or_the_callers_tensors():
    a = ember.ones(3, requires_grad=True)
    b = ember.ones(3, requires_grad=True)
    (a + b).sum().backward()  # add hands the same gradient to both leaves
    a.grad.add_(1)
    assert b.grad.tolist() == [1.0, 1.0, 1.0]
    leaf = ember.ones(2, requires_grad=True)
    given = ember.tensor([5.0, 6.0])
    leaf.backward(given)
    given.add_(1)
    assert leaf.grad.tolist() == [5.0, 6.0]
    kept = []
    w = ember.ones(2, requires_grad=True)
    w.register_hook(lambda g: kept.append(g))
    (w * 3).sum().backward()
    w.grad.zero_()
    assert kept[0].tolist() == [3.0, 3.0]


def test_direct_inplace_update_matches_general_path():
    x = ember.arange(6.0).view(2, 3)
    y = x.clone()
    with ember.no_grad():
        x.sub_(ember.ones(3) * 0.5)
        x.mul_(2).add_(1).div_(4)
    expected = ((y - 0.5) * 2 + 1) / 4
    assert x.tolist() == expected.tolist()
    assert x._version == 4
    ints = ember.arange(3)
    ints.add_(2)  # not floating: takes the general path
    assert ints.tolist() == [2, 3, 4]
