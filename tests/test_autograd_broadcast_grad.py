"""Gradients that reach an input broadcast to a larger shape are summed back to its shape
(autograd/graph.py ``_fit_to_input``), as torch's: compared with torch's own gradients."""

import numpy as np
import pytest
import torch

import ember

SHAPES = [
    ((4, 3), (3,)),          # a bias: leading dim summed away
    ((4, 3), (1, 3)),        # a kept size-1 dim
    ((2, 4, 3), (4, 1)),     # a leading dim and a size-1 dim
    ((2, 1, 3), (5, 1)),     # both sides broadcast
    ((4, 3), ()),            # a 0-dim tensor
    ((2, 3), (2, 3)),        # nothing to sum
]


@pytest.mark.parametrize("shape_a, shape_b", SHAPES)
@pytest.mark.parametrize("op", ["add", "mul", "sub"])
def test_broadcast_gradient_matches_torch(shape_a, shape_b, op):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(a, requires_grad=True)
        y = lib.tensor(b, requires_grad=True)
        out = getattr(lib, op)(x, y)
        (out * lib.tensor(np.arange(out.numel(), dtype=np.float64).reshape(out.shape))).sum() \
            .backward()
        grads.append((x.grad.numpy(), y.grad.detach().numpy()))
    for mine, theirs in zip(*grads):
        assert mine.shape == theirs.shape
        np.testing.assert_allclose(mine, theirs, rtol=1e-12)


def test_broadcast_gradient_of_lower_dtype_input_matches_torch():
    """A float32 input broadcast against float64: summed, then cast back to float32."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 3)), rng.standard_normal(3).astype(np.float32)
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(a, requires_grad=True)
        y = lib.tensor(b, requires_grad=True)
        (x * y).sum().backward()
        grads.append(y.grad)
    assert str(grads[0].dtype) == str(grads[1].dtype).replace("torch", "ember")
    np.testing.assert_allclose(grads[0].numpy(), grads[1].numpy(), rtol=1e-6)


def test_unused_output_gradient_is_zeros_as_torch():
    """An LSTM cell's c' unused: its gradient is zeros made by the engine (``_zeros``)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3))
    mine = ember.nn.LSTMCell(3, 4).double()
    theirs = torch.nn.LSTMCell(3, 4).double()
    with torch.no_grad():
        for p, q in zip(theirs.parameters(), mine.parameters()):
            p.copy_(torch.from_numpy(q.detach().numpy()))
    grads = []
    for lib, cell in ((ember, mine), (torch, theirs)):
        inp = lib.tensor(x, requires_grad=True)
        h, c = cell(inp)
        h.sum().backward()
        grads.append([inp.grad.numpy()] + [p.grad.numpy() for p in cell.parameters()])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
