"""hypot's derivative reads the saved result: no overflow for large inputs (torch's numbers)."""

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("dtype, value", [("float32", 3e20), ("float64", 3e200),
                                          ("float32", 3.0), ("float64", -1e-3)])
def test_gradient_of_large_and_small_inputs_matches_torch(dtype, value):
    grads = []
    for lib in (ember, torch):
        a = lib.tensor([value, 2.0], dtype=getattr(lib, dtype), requires_grad=True)
        b = lib.tensor([value * 4 / 3, -1.0], dtype=getattr(lib, dtype), requires_grad=True)
        lib.hypot(a, b).sum().backward()
        grads.append((a.grad.numpy(), b.grad.numpy()))
    for ours, theirs in zip(grads[0], grads[1]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_second_order_gradients_by_finite_differences():
    a = ember.tensor([0.7, -1.3, 2.0], dtype=ember.float64, requires_grad=True)
    b = ember.tensor([1.1, 0.4, -0.5], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(ember.hypot, (a, b))
    assert ember.autograd.gradgradcheck(ember.hypot, (a, b))


def test_in_place_form_keeps_the_gradient():
    x = ember.tensor([3.0, 6.0], requires_grad=True)
    y = x * 1.0
    y.hypot_(ember.tensor([4.0, 8.0]))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.6, 0.6], rtol=1e-6)
