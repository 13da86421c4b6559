"""A leaf keeps one AccumulateGrad node for its lifetime (``autograd/graph.py``,
``grad_accumulator``) instead of a new one per graph. The node refers to the leaf weakly and
every graph node with an edge to the leaf holds the leaf, so:

* a dropped leaf is freed at once, by reference counting (no cycle left for the collector),
  as torch frees it;
* a graph still alive keeps a leaf the caller dropped, and backward runs its hooks and
  accumulates into it, as torch's graph does.

Each case runs in ember and in torch, with the garbage collector off.
"""

import contextlib
import gc
import weakref

import numpy as np
import pytest
import torch

import ember


@contextlib.contextmanager
def collector_off():
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _doubler(fw):
    """A custom Function that saves nothing (only its graph node can hold its input)."""
    class Double(fw.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2
    return Double.apply


def _view_leaf(fw):
    """A leaf that is a view: a slice of a tensor that needs no grad, then requires grad."""
    base = fw.tensor([5.0, 1.0, 2.0, 3.0])
    return base[1:].requires_grad_()


# (name, how to make the leaf, what to compute from it: fw, leaf, other -> tensor)
CASES = [
    ("binary, leaf first", None, lambda fw, x, c: x + c),
    ("binary, leaf second", None, lambda fw, x, c: c * x),
    ("binary, both leaves", None, lambda fw, x, c: x * x),
    ("unary, input saved", None, lambda fw, x, c: x.sin()),
    ("unary, nothing saved", None, lambda fw, x, c: -x),
    ("several inputs", None, lambda fw, x, c: fw.cat([c, x, c])),
    ("several inputs, saved", None, lambda fw, x, c: fw.addcmul(c, x, c)),
    ("custom Function", None, lambda fw, x, c: _doubler(fw)(x)),
    ("a leaf that is a view", _view_leaf, lambda fw, x, c: x * c),
]


def _leaf(fw, make_leaf):
    if make_leaf is not None:
        return make_leaf(fw)
    return fw.tensor([1.0, 2.0, 3.0], requires_grad=True)


@pytest.mark.parametrize("name, make_leaf, compute", CASES, ids=[c[0] for c in CASES])
def test_a_dropped_leaf_is_freed_without_the_collector(name, make_leaf, compute):
    freed = {}
    for fw in (ember, torch):
        with collector_off():
            x = _leaf(fw, make_leaf)
            c = fw.tensor([0.5, 0.25, 2.0])
            for _ in range(3):  # several graphs over the same leaf, each dropped in turn
                compute(fw, x, c).sum().backward()
            alive = weakref.ref(x)
            del x
            freed[fw.__name__] = alive() is None
    assert freed == {"ember": True, "torch": True}


@pytest.mark.parametrize("name, make_leaf, compute", CASES, ids=[c[0] for c in CASES])
def test_a_live_graph_keeps_a_dropped_leaf(name, make_leaf, compute):
    grads, hooked = {}, []
    for fw in (ember, torch):
        with collector_off():
            x = _leaf(fw, make_leaf)
            c = fw.tensor([0.5, 0.25, 2.0])
            x.register_hook(lambda g, fw=fw: hooked.append(fw.__name__) or g * 10)
            loss = compute(fw, x, c).sum()
            alive = weakref.ref(x)
            del x
            assert alive() is not None  # the graph holds it
            loss.backward()
            grads[fw.__name__] = alive().grad.numpy().copy()
            del loss
            assert alive() is None  # and lets it go with the graph
    assert hooked == ["ember", "torch"]
    np.testing.assert_allclose(grads["ember"], grads["torch"], rtol=1e-6)


def test_the_node_reaches_its_leaf_as_torchs_does():
    nodes = {}
    for fw in (ember, torch):
        x = fw.tensor([1.0, 2.0], requires_grad=True)
        first = (x * 2).grad_fn.next_functions[0][0]
        second = (x + 1).grad_fn.next_functions[0][0]
        nodes[fw.__name__] = (first is second, first.variable is x, first.name())
    assert nodes["ember"] == nodes["torch"]


def test_a_loop_with_a_fresh_leaf_each_step_keeps_nothing():
    # a parameter used every step and an input that requires grad made anew each step (as in
    # adversarial training): every step's input is freed when the step ends
    results = {}
    for fw in (ember, torch):
        gen = np.random.default_rng(0)
        w = fw.tensor(gen.standard_normal((3, 3)), requires_grad=True)
        inputs = []
        with collector_off():
            for _ in range(5):
                x = fw.tensor(gen.standard_normal((2, 3)), requires_grad=True)
                ((x @ w).tanh() + x).sum().backward()
                inputs.append(weakref.ref(x))
            del x
        results[fw.__name__] = ([ref() is None for ref in inputs], w.grad.numpy())
    assert results["ember"][0] == results["torch"][0] == [True] * 5
    np.testing.assert_allclose(results["ember"][1], results["torch"][1], rtol=1e-6)


def test_second_order_through_a_cached_leaf_matches_torch():
    grads = {}
    for fw in (ember, torch):
        x = fw.tensor([0.5, -1.0, 2.0], dtype=fw.float64, requires_grad=True)
        for _ in range(2):  # the leaf's node is reused by the second pass
            (g,) = fw.autograd.grad((x ** 3 + x * x).sum(), x, create_graph=True)
            (g * g).sum().backward()
        grads[fw.__name__] = x.grad.numpy()
    np.testing.assert_allclose(grads["ember"], grads["torch"], rtol=1e-12)


def test_a_plus_b_with_grad_matches_torch():
    out = {}
    for fw in (ember, torch):
        a = fw.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = fw.tensor([4.0, 5.0, 6.0])
        for _ in range(3):
            y = a + b
        y.backward(fw.tensor([1.0, 10.0, 100.0]))
        out[fw.__name__] = (y.detach().numpy(), a.grad.numpy(), y.grad_fn.name())
    np.testing.assert_array_equal(out["ember"][0], out["torch"][0])
    np.testing.assert_array_equal(out["ember"][1], out["torch"][1])
    assert out["ember"][2] == out["torch"][2]
