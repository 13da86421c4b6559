"""The joint graph's backward frees each saved value after its last use, as eager autograd
frees each node's saved tensors: the peak memory of a compiled backward is eager's."""

import tracemalloc

import pytest

import ember

N = 1 << 16  # float32 elements per array: 256 KiB


def _chain(compiled, layers=6):
    weights = [ember.full((N,), 1.0 + i / 100, requires_grad=True) for i in range(layers)]

    def loss_of(x):
        for w in weights:
            x = (x * w).tanh()
        return x.sum()
    return (ember.compile(loss_of) if compiled else loss_of), weights


def _backward_memory(compiled, retain_graph=None):
    """(arrays alive when the backward starts, its peak, after it), in arrays of N floats."""
    loss_of, weights = _chain(compiled)
    x = ember.ones(N)
    loss_of(x).backward()  # compiles; the second call is the one measured
    for w in weights:
        w.grad = None
    tracemalloc.start()
    try:
        loss = loss_of(x)
        start = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        loss.backward(retain_graph=retain_graph)
        end, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return tuple(round(m / (4 * N), 1) for m in (start, peak, end))


def test_compiled_backward_peak_is_eagers(monkeypatch):
    # NumPy's calls: one step at a time, as eager (a C loop computes a region's results at
    # once: they are all alive before its operands go, see _inductor/c_loops.py)
    monkeypatch.setenv("EMBER_C_LOOPS", "0")
    eager = _backward_memory(compiled=False)
    compiled = _backward_memory(compiled=True)
    assert compiled[0] == pytest.approx(eager[0], abs=0.5)  # the same values saved
    assert compiled[1] <= eager[1] + 0.5                     # no higher peak
    assert compiled[2] == pytest.approx(eager[2], abs=0.5)  # the gradients remain


def test_retain_graph_keeps_the_saved_values():
    # with retain_graph the saved values stay for a second backward: the gradient doubles
    loss_of, weights = _chain(compiled=True)
    x = ember.ones(N)
    loss_of(x).backward()
    for w in weights:
        w.grad = None
    loss = loss_of(x)
    loss.backward(retain_graph=True)
    first = [w.grad.clone() for w in weights]
    loss.backward()
    for w, g in zip(weights, first):
        assert ember.allclose(w.grad, 2 * g)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_gradients_match_eager_after_freeing():
    eager_loss, eager_weights = _chain(compiled=False)
    compiled_loss, compiled_weights = _chain(compiled=True)
    x = ember.linspace(-1, 1, N)
    for _ in range(2):
        for w in eager_weights + compiled_weights:
            w.grad = None
        eager_loss(x).backward()
        compiled_loss(x).backward()
        for a, b in zip(eager_weights, compiled_weights):
            assert ember.allclose(a.grad, b.grad, rtol=1e-5, atol=1e-6)


def test_a_node_called_directly_keeps_its_saved_values():
    # outside a backward pass (a node's own __call__) nothing is released
    loss_of, weights = _chain(compiled=True, layers=2)
    x = ember.ones(N)
    loss_of(x)
    out = loss_of(x)
    node = out.grad_fn
    while node.name() != "CompiledFunctionBackward":
        node = node.next_functions[0][0]
    grad = ember.ones(())
    first = node(grad)
    second = node(grad)
    assert all(ember.equal(a, b) for a, b in zip(first, second))
