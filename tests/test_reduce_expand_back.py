"""Gradients of reductions broadcast back over the reduced dims (``_expand_back``): one expand
for reduced leading dims (and whole reductions), unsqueezes first for any other dims; values,
strides of the broadcast gradient and double backward against torch."""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same

DIMS = [None, (0,), (0, 1), (1,), (0, 2), (2,), (-1,), (1, 2)]
REDUCTIONS = {
    "sum": lambda lib, x, d, k: x.sum() if d is None else x.sum(d, keepdim=k),
    "mean": lambda lib, x, d, k: x.mean() if d is None else x.mean(d, keepdim=k),
    "nansum": lambda lib, x, d, k: lib.nansum(x) if d is None else lib.nansum(x, d, keepdim=k),
    "norm": lambda lib, x, d, k: lib.linalg.vector_norm(x, dim=d, keepdim=k),
}


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dims", DIMS, ids=str)
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reduction_gradients_and_double_backward_match_torch(name, dims, keepdim):
    x = np.random.default_rng(0).standard_normal((3, 4, 5))
    ours, theirs = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    reduce = REDUCTIONS[name]
    y, expected = reduce(ember, ours, dims, keepdim), reduce(torch, theirs, dims, keepdim)
    assert_same(y, expected)
    g = np.random.default_rng(1).standard_normal(tuple(expected.shape))
    e_g, t_g = ember.tensor(g, requires_grad=True), torch.tensor(g, requires_grad=True)
    (mine,) = ember.autograd.grad(y, ours, e_g, create_graph=True)
    (reference,) = torch.autograd.grad(expected, theirs, t_g, create_graph=True)
    assert_same(mine, reference)
    second = ember.autograd.grad((mine * mine).sum(), [ours, e_g], allow_unused=True)
    expected2 = torch.autograd.grad((reference * reference).sum(), [theirs, t_g],
                                    allow_unused=True)
    for m, r in zip(second, expected2):
        if r is None:
            assert m is None or float(m.abs().sum()) == 0
        else:
            assert_same(m, r)


@pytest.mark.parametrize("name", ["sum", "mean"])
def test_a_whole_reduction_sends_back_the_gradient_torch_does(name):
    """sum: a broadcast of the output gradient (zero strides); mean: a new tensor."""
    x = np.ones((64, 10), np.float32)
    ours, theirs = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (mine,) = ember.autograd.grad(getattr(ours, name)(), ours)
    (reference,) = torch.autograd.grad(getattr(theirs, name)(), theirs)
    assert_same(mine, reference)
    assert mine.stride() == reference.stride()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dims", DIMS + [()], ids=str)
def test_float_means_match_torch_rounded_as_numpys(dims, keepdim, dtype):
    """The float mean kernel (NumPy's sum, one division) equals np.mean bit for bit and
    torch within rounding, infinities and NaN included."""
    x = (np.random.default_rng(2).standard_normal((3, 4, 5)) * 100).astype(dtype)
    x[0, 0, 0] = np.inf if dtype == np.float32 else np.nan
    y = ember.tensor(x).mean() if dims is None else ember.tensor(x).mean(dims, keepdim=keepdim)
    t = torch.tensor(x)
    expected = t.mean() if dims is None else t.mean(dims, keepdim=keepdim)
    assert_same(y, expected, rtol=1e-6, atol=1e-5)
    if dims is not None:  # (torch's empty dims reduce them all)
        axes = dims or None
        np.testing.assert_array_equal(y.numpy(), np.mean(x, axis=axes, keepdims=keepdim))
