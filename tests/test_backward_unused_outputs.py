"""Backward through operators with several outputs when some outputs receive no gradient.

The engine (``Node._apply`` in ``autograd/graph.py``) gives zeros to a differentiable output
that no gradient reached and None to an output the op declares not differentiable (indices,
a fused cell's workspace), whose gradient no derivative reads. Each case compares the input
gradients with torch's, first and second order.
"""

import numpy as np
import pytest
import torch

import ember


def _sort_values(fw, x):
    return fw.sort(x, dim=1)[0]


def _topk_values(fw, x):
    return x.topk(2, dim=1).values


def _max_values(fw, x):
    return x.max(dim=0)[0]


def _pool_values(fw, x):
    out, _ = fw.nn.functional.max_pool2d(x.reshape(1, 1, 4, 4), 2, return_indices=True)
    return out


def _lstm_cell_h(fw, x):
    fw.manual_seed(0)
    cell = fw.nn.LSTMCell(4, 3).double()
    with fw.no_grad():  # the same weights in both frameworks
        for i, p in enumerate(cell.parameters()):
            p.copy_(fw.linspace(-0.5, 0.5, p.numel(), dtype=fw.float64).reshape(p.shape) + i)
    h, c = cell(x, (x[:, :3] * 0.5, x[:, 1:] * 0.25))
    return h  # c, a differentiable output, gets no gradient


def _lstm_cell_c(fw, x):
    cell = fw.nn.LSTMCell(4, 3).double()
    with fw.no_grad():
        for i, p in enumerate(cell.parameters()):
            p.copy_(fw.linspace(-0.5, 0.5, p.numel(), dtype=fw.float64).reshape(p.shape) - i)
    h, c = cell(x, (x[:, :3] * 0.5, x[:, 1:] * 0.25))
    return c


def _gru_cell(fw, x):
    cell = fw.nn.GRUCell(4, 3).double()
    with fw.no_grad():
        for i, p in enumerate(cell.parameters()):
            p.copy_(fw.linspace(-1.0, 1.0, p.numel(), dtype=fw.float64).reshape(p.shape) * i)
    return cell(x, x[:, :3])


CASES = [_sort_values, _topk_values, _max_values, _pool_values, _lstm_cell_h, _lstm_cell_c,
         _gru_cell]


@pytest.mark.parametrize("compute", CASES, ids=[c.__name__.strip("_") for c in CASES])
def test_gradients_match_torch_when_some_outputs_are_unused(compute):
    data = np.random.default_rng(3).standard_normal((4, 4))
    results = {}
    for fw in (ember, torch):
        x = fw.tensor(data, dtype=fw.float64, requires_grad=True)
        out = compute(fw, x)
        weights = fw.tensor(np.arange(out.numel(), dtype=np.float64).reshape(out.shape))
        (g,) = fw.autograd.grad((out * weights).sum(), x, create_graph=True)
        gg = None
        if g.requires_grad:  # (a selection's gradient does not depend on x: no second order)
            (gg,) = fw.autograd.grad((g * g).sum(), x, allow_unused=True)
        # (a piecewise-linear op's second derivative is zero: torch may return zeros where
        # the gradient does not depend on x, so an unused input counts as zeros)
        results[fw.__name__] = (g.detach().numpy(),
                                np.zeros_like(data) if gg is None else gg.numpy())
    np.testing.assert_allclose(results["ember"][0], results["torch"][0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(results["ember"][1], results["torch"][1], rtol=1e-9, atol=1e-12)
