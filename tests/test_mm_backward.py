"""The first-order backward of a product of two real matrices (one ``mm_backward`` kernel:
g @ b^T and a^T @ g) against torch: every subset of inputs requiring grad, float32 (oneDNN's
GEMM and NumPy) and float64, transposed and sliced operands, a broadcast output gradient,
and the composite derivative that double backward, forward mode and vmap still take."""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same

pytestmark = pytest.mark.usefixtures("one_ember_thread")


def _operands(dtype, layout):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((96, 160)).astype(dtype)
    b = rng.standard_normal((160, 128)).astype(dtype)
    if layout == "transposed":
        a, b = np.ascontiguousarray(a.T).T, np.ascontiguousarray(b.T).T
    elif layout == "sliced":
        a = np.repeat(a, 2, axis=1)[:, ::2]
        b = np.concatenate([b, b], axis=0)[::2]
    return a, b


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["plain", "transposed", "sliced"])
@pytest.mark.parametrize("wanted", [(True, True), (True, False), (False, True)],
                         ids=["both", "left", "right"])
def test_first_order_gradients_match_torch(onednn_backend, dtype, layout, wanted):
    a, b = _operands(dtype, layout)
    ours = [ember.from_numpy(a).requires_grad_(wanted[0]),
            ember.from_numpy(b).requires_grad_(wanted[1])]
    theirs = [torch.from_numpy(a).requires_grad_(wanted[0]),
              torch.from_numpy(b).requires_grad_(wanted[1])]
    y, expected = ours[0] @ ours[1], theirs[0] @ theirs[1]
    assert y.grad_fn.name() == expected.grad_fn.name() == "MmBackward0"
    g = np.random.default_rng(1).standard_normal(tuple(expected.shape)).astype(dtype)
    y.backward(ember.tensor(g))
    expected.backward(torch.tensor(g))
    tol = dict(rtol=1e-4, atol=1e-3) if dtype == np.float32 else {}
    for mine, reference, want in zip(ours, theirs, wanted):
        if want:
            assert_same(mine.grad, reference.grad, **tol)
            assert mine.grad._base is None  # a fresh matrix that .grad takes without a copy
        else:
            assert mine.grad is None


def test_a_broadcast_output_gradient_matches_torch():
    """``(a @ b).sum()`` sends a zero-stride gradient, which NumPy multiplies itself."""
    a, b = _operands(np.float32, "plain")
    ours = [ember.tensor(t, requires_grad=True) for t in (a, b)]
    theirs = [torch.tensor(t, requires_grad=True) for t in (a, b)]
    (ours[0] @ ours[1]).sum().backward()
    (theirs[0] @ theirs[1]).sum().backward()
    for mine, reference in zip(ours, theirs):
        assert_same(mine.grad, reference.grad, rtol=1e-4, atol=1e-3)


def test_double_backward_takes_the_composite_and_matches_torch():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((3, 5))
    ours = [ember.tensor(t, requires_grad=True) for t in (a, b)]
    theirs = [torch.tensor(t, requires_grad=True) for t in (a, b)]
    mine = ember.autograd.grad((ours[0] @ ours[1]).tanh().sum(), ours, create_graph=True)
    reference = torch.autograd.grad((theirs[0] @ theirs[1]).tanh().sum(), theirs,
                                    create_graph=True)
    assert_same(list(mine), list(reference))
    second = ember.autograd.grad(sum(m.pow(2).sum() for m in mine), ours)
    expected = torch.autograd.grad(sum(r.pow(2).sum() for r in reference), theirs)
    assert_same(list(second), list(expected))
    assert ember.autograd.gradgradcheck(lambda x, y: x @ y, ours)


def test_other_dtypes_and_ranks_keep_the_composite_derivative():
    """Complex and half-precision products and vectors use the composite derivative."""
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(np.complex64)
    b = (rng.standard_normal((4, 2)) + 1j * rng.standard_normal((4, 2))).astype(np.complex64)
    ours = [ember.tensor(t, requires_grad=True) for t in (a, b)]
    theirs = [torch.tensor(t, requires_grad=True) for t in (a, b)]
    (ours[0] @ ours[1]).abs().sum().backward()
    (theirs[0] @ theirs[1]).abs().sum().backward()
    for mine, reference in zip(ours, theirs):
        assert_same(mine.grad, reference.grad, rtol=1e-5, atol=1e-5)
