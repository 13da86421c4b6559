"""The NumPy fast path of first-order derivatives (``fast=`` of ``ops.pointwise.unary`` and the
product's) against torch and against ember's differentiable derivatives (``create_graph=True``
takes those), which must agree bit for bit."""

import numpy as np
import pytest
import torch

import ember

FAST_UNARY = ["exp", "log", "sin", "cos", "tanh", "sigmoid", "relu"]
DTYPES = [(np.float32, 1e-6), (np.float64, 1e-12)]
SHAPES = [(), (5,), (3, 4)]


def _inputs(name, shape, np_dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np_dtype)
    if name == "log":
        x = np.abs(x) + np_dtype(0.1)
    grad = rng.standard_normal(shape).astype(np_dtype)
    return x, grad


def _ember_grads(name, x, grad):
    """(first-order gradient, the same with create_graph=True) of ``name`` at ``x``."""
    plain = ember.tensor(x, requires_grad=True)
    getattr(ember, name)(plain).backward(ember.tensor(grad))
    graphed = ember.tensor(x, requires_grad=True)
    (composite,) = ember.autograd.grad(getattr(ember, name)(graphed), graphed,
                                       ember.tensor(grad), create_graph=True)
    return plain.grad.numpy(), composite.detach().numpy()


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("np_dtype,rtol", DTYPES)
@pytest.mark.parametrize("name", FAST_UNARY)
def test_unary_fast_backward_matches_torch_and_composite(name, np_dtype, rtol, shape):
    x, grad = _inputs(name, shape, np_dtype)
    fast, composite = _ember_grads(name, x, grad)
    expected = torch.tensor(x, requires_grad=True)
    getattr(torch, name)(expected).backward(torch.tensor(grad))
    assert fast.dtype == composite.dtype == np_dtype and fast.shape == shape
    np.testing.assert_array_equal(fast, composite)
    np.testing.assert_allclose(fast, expected.grad.numpy(), rtol=rtol, atol=rtol)


def test_relu_passes_the_gradient_through_nan_as_torch():
    x = np.array([np.nan, -1.0, 0.0, 2.0], dtype=np.float32)
    grad = np.array([3.0, 4.0, 5.0, 6.0], dtype=np.float32)
    fast, composite = _ember_grads("relu", x, grad)
    expected = torch.tensor(x, requires_grad=True)
    torch.relu(expected).backward(torch.tensor(grad))
    np.testing.assert_array_equal(fast, expected.grad.numpy())
    np.testing.assert_array_equal(composite, expected.grad.numpy())


@pytest.mark.parametrize("other_shape", [(), (4,), (3, 4)])
def test_mul_fast_backward_matches_torch_including_broadcast(other_shape):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(other_shape).astype(np.float32)
    ea, eb = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
    (ea * eb * 1.5).sum().backward()
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (ta * tb * 1.5).sum().backward()
    assert ea.grad.shape == ta.grad.shape and eb.grad.shape == tb.grad.shape
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy(), rtol=1e-6)


def test_mul_of_zero_dim_tensors_gives_tensor_gradients():
    x = ember.tensor(2.0, requires_grad=True)
    (x * x).backward()
    expected = torch.tensor(2.0, requires_grad=True)
    (expected * expected).backward()
    assert isinstance(x.grad._data, np.ndarray) and x.grad.shape == expected.grad.shape
    assert x.grad.item() == expected.grad.item()


@pytest.mark.parametrize("name", FAST_UNARY)
def test_double_backward_still_differentiates_the_derivative(name):
    x, _ = _inputs(name, (4,), np.float64, seed=2)

    def second_derivative(lib, values):
        t = lib.tensor(values, requires_grad=True)
        (first,) = lib.autograd.grad(getattr(lib, name)(t).sum(), t, create_graph=True)
        (second,) = lib.autograd.grad(first.sum(), t)
        return second.detach().numpy()

    np.testing.assert_allclose(second_derivative(ember, x), second_derivative(torch, x),
                               rtol=1e-12, atol=1e-12)


def test_complex_product_gradient_still_conjugates():
    a = np.array([1 + 2j, -0.5 + 1j], dtype=np.complex64)
    b = np.array([3 - 1j, 2 + 0.5j], dtype=np.complex64)
    ea, eb = ember.tensor(a, requires_grad=True), ember.tensor(b)
    (ea * eb).abs().sum().backward()
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b)
    (ta * tb).abs().sum().backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("lib", [ember, torch], ids=["ember", "torch"])
def test_a_saved_output_changed_in_place_still_fails_the_first_order_backward(lib):
    x = lib.ones(3, requires_grad=True)
    y = x.tanh()
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@pytest.mark.parametrize("lib", [ember, torch], ids=["ember", "torch"])
def test_relu_gradient_with_create_graph_stays_in_the_graph_as_torch(lib):
    """torch's threshold_backward is recorded: the first derivative requires grad and its own
    derivative is zero (a second grad does not raise)."""
    x = lib.tensor([-1.0, 2.0, float("nan"), 0.0], requires_grad=True)
    (first,) = lib.autograd.grad(lib.relu(x).sum(), x, create_graph=True)
    assert first.requires_grad
    (second,) = lib.autograd.grad(first.sum(), x)
    assert second.tolist() == [0.0, 0.0, 0.0, 0.0]
    assert first[:2].tolist() == [0.0, 1.0] and first[3].item() == 0.0
