"""The derivative of ``x ** e`` for a number exponent (computed from the exponent's value on
the host) against torch: first and second order, zeros and negative bases, float32/float64."""

import numpy as np
import pytest
import torch

import ember

EXPONENTS = [2, 2.0, 3, 0.5, 1, 0, -1.5, -2, 1e-3, float("nan")]


def _grads(lib, base, exponent, dtype):
    x = lib.tensor(base, dtype=getattr(lib, dtype), requires_grad=True)
    y = (x ** exponent) * lib.linspace(0.5, 2.0, len(base), dtype=getattr(lib, dtype))
    (first,) = lib.autograd.grad(y.sum(), x, create_graph=True)
    if not first.requires_grad:  # torch: x ** 0 has a constant gradient
        return first.numpy(), None
    (second,) = lib.autograd.grad(first.sum(), x, allow_unused=True)
    return first.detach().numpy(), None if second is None else second.numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("exponent", EXPONENTS)
def test_number_exponent_grads_match_torch(exponent, dtype):
    base = [-2.0, -0.5, 0.0, 0.3, 1.0, 2.5]
    ours, theirs = _grads(ember, base, exponent, dtype), _grads(torch, base, exponent, dtype)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6, equal_nan=True)
    if theirs[1] is None:
        assert ours[1] is None or not np.any(ours[1])
    else:
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6, equal_nan=True)


def test_square_grad_is_bitwise_the_general_formula():
    rng = np.random.default_rng(0)
    base = rng.standard_normal(1000).astype(np.float32)
    grad = rng.standard_normal(1000).astype(np.float32)
    x = ember.tensor(base, requires_grad=True)
    (x ** 2).backward(ember.tensor(grad))
    t = torch.tensor(base, requires_grad=True)
    (t ** 2).backward(torch.tensor(grad))
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_tensor_exponent_that_requires_grad_keeps_both_grads():
    for lib in (ember, torch):
        x = lib.tensor([0.5, 2.0], requires_grad=True)
        e = lib.tensor(2.0, requires_grad=True)
        (x ** e).sum().backward()
        if lib is ember:
            ours = x.grad.numpy(), e.grad.numpy()
        else:
            theirs = x.grad.numpy(), e.grad.numpy()
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(mine, reference, rtol=1e-6)
