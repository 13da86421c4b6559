"""layer_norm as one op (``native_layer_norm``: on the CPU one oneDNN kernel computes the
statistics and normalises) against torch: values, first- and second-order gradients on the
oneDNN and NumPy paths, torch's node name, and the two-op form that jit traces record."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from conftest import assert_same


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, normalized", [((16, 8, 32), (32,)), ((5, 4, 6), (4, 6)),
                                               ((7, 3), (3,))], ids=str)
def test_values_and_gradients_match_torch(onednn_backend, shape, normalized, dtype):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(shape) * 2 + 1, 1 + 0.3 * rng.standard_normal(normalized),
              0.3 * rng.standard_normal(normalized)]
    arrays = [a.astype(dtype) for a in arrays]
    ours = [ember.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y = F.layer_norm(ours[0], normalized, ours[1], ours[2])
    expected = TF.layer_norm(theirs[0], normalized, theirs[1], theirs[2])
    assert y.grad_fn.name() == expected.grad_fn.name() == "NativeLayerNormBackward0"
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else {}
    assert_same(y, expected, **tol)
    g = rng.standard_normal(shape).astype(dtype)
    mine = ember.autograd.grad(y, ours, ember.tensor(g), create_graph=True)
    reference = torch.autograd.grad(expected, theirs, torch.tensor(g), create_graph=True)
    assert_same(list(mine), list(reference), **tol)
    v = [rng.standard_normal(a.shape).astype(dtype) for a in arrays]
    second = ember.autograd.grad(sum((m * ember.tensor(w)).sum() for m, w in zip(mine, v)),
                                 ours, allow_unused=True)
    expected2 = torch.autograd.grad(sum((r * torch.tensor(w)).sum() for r, w in zip(reference, v)),
                                    theirs, allow_unused=True)
    for m, r in zip(second, expected2):
        if r is None:
            assert m is None or float(m.abs().sum()) == 0
        else:
            assert_same(m, r, **({"rtol": 1e-3, "atol": 1e-4} if dtype == np.float32 else {}))


def test_module_gradients_and_gradcheck():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4, 5))
    layer = ember.nn.LayerNorm(5).double()
    assert ember.autograd.gradcheck(lambda x: layer(x), [ember.tensor(x, requires_grad=True)])
    assert ember.autograd.gradgradcheck(lambda x: layer(x), [ember.tensor(x, requires_grad=True)])


def test_jit_traces_record_the_two_op_form_and_replay_as_torch():
    rng = np.random.default_rng(2)
    layer = ember.nn.LayerNorm(6)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    traced = ember.jit.trace(layer, ember.tensor(x))
    names = [n.op.name for n in traced.graph.op_nodes()]
    assert "native_layer_norm" not in names and "_layer_norm" in names
    other = rng.standard_normal((9, 6)).astype(np.float32)
    assert_same(traced(ember.tensor(other)), TF.layer_norm(torch.tensor(other), (6,)),
                rtol=1e-5, atol=1e-5)
