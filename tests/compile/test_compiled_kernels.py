"""ember.compile keeps eager code's whole-layer kernels and gives the same numbers: a captured
LSTM runs one op per layer and direction, causal attention one fused op, as eager code does,
with outputs and gradients equal to eager ember's and close to torch's."""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same


def _primitives(model, *inputs):
    """The names of the primitives ``ember.compile`` captured for ``model(*inputs)``."""
    names = []

    def backend(gm, example_inputs):
        names.extend(str(n.target.__name__) for n in gm.graph.nodes
                     if n.op == "call_function" and hasattr(n.target, "__name__"))
        return gm
    ember._dynamo.reset()
    ember.compile(model, backend=backend)(*inputs)
    return names


def _same_weights(e_model, t_model, seed=0):
    rng = np.random.default_rng(seed)
    state = {k: rng.standard_normal(tuple(v.shape)).astype(np.float32) * 0.3
             for k, v in e_model.state_dict().items()}
    e_model.load_state_dict({k: ember.tensor(v) for k, v in state.items()})
    t_model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in state.items()})


def _compare_training(make, x_array, calls=3):
    """Outputs and parameter gradients of the compiled model, eager ember and torch."""
    compiled_model, eager_model, t_model = make(ember.nn), make(ember.nn), make(torch.nn)
    _same_weights(compiled_model, t_model)
    eager_model.load_state_dict(compiled_model.state_dict())
    compiled = ember.compile(compiled_model)
    for call in range(calls):  # the first call captures, the others replay
        x = ember.tensor(x_array + call)
        outs = [compiled(x), eager_model(x), t_model(torch.from_numpy(x_array + call))]
        for model in (compiled_model, eager_model, t_model):
            model.zero_grad()
        for out in outs:
            (out[0] if isinstance(out, tuple) else out).square().sum().backward()
        first = [out[0] if isinstance(out, tuple) else out for out in outs]
        assert_same(first[0], torch.from_numpy(first[1].detach().numpy()), rtol=1e-5,
                    atol=1e-6)
        assert_same(first[0], first[2], rtol=1e-4, atol=1e-5)
        for p, q, r in zip(compiled_model.parameters(), eager_model.parameters(),
                           t_model.parameters()):
            assert_same(p.grad, torch.from_numpy(q.grad.numpy()), rtol=1e-5, atol=1e-5)
            assert_same(p.grad, r.grad, rtol=1e-3, atol=1e-4)


def test_a_captured_lstm_runs_one_layer_op_per_layer_with_eager_gradients():
    def make(nn):
        return nn.LSTM(4, 6, num_layers=2)
    x = np.random.default_rng(1).standard_normal((7, 3, 4)).astype(np.float32)
    names = _primitives(make(ember.nn), ember.tensor(x))
    assert names.count("_lstm_layer") == 2 and "_lstm_cell" not in names
    _compare_training(make, x)


def test_captured_causal_attention_runs_the_fused_op_with_eager_gradients():
    class Attention:
        @staticmethod
        def make(nn):
            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.qkv = nn.Linear(8, 24)

                def forward(self, x):
                    q, k, v = self.qkv(x).view(2, 5, 3, 2, 4).permute(2, 0, 3, 1, 4)
                    return nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            return Model()
    x = np.random.default_rng(2).standard_normal((2, 5, 8)).astype(np.float32)
    names = _primitives(Attention.make(ember.nn), ember.tensor(x))
    assert "_scaled_dot_product_attention_fused" in names and "softmax" not in names
    _compare_training(Attention.make, x)


def test_export_traces_still_record_the_per_step_cells():
    # ember.jit.trace feeds ONNX export, which unrolls the cells: only ember.compile's
    # capture keeps the whole-layer op
    lstm = ember.nn.LSTM(3, 4)
    x = ember.randn(5, 2, 3)
    traced = ember.jit.trace(lstm, x)
    ops = {getattr(n.op, "name", None) for n in traced.graph.nodes}
    assert "_lstm_layer" not in ops
    assert_same(traced(x)[0], torch.from_numpy(lstm(x)[0].detach().numpy()), rtol=1e-6,
                atol=1e-6)


def _chain(x, scale):
    y = x
    for i in range(8):
        y = y * scale if i % 2 else (y + 0.5).tanh()
    return y


def test_fused_chain_gradients_follow_which_inputs_require_grad():
    # the fused chain links only the inputs that require grad: a closure scalar that starts
    # requiring grad later gets its gradient, as in eager code and torch
    scale = ember.tensor(1.01)
    compiled = ember.compile(lambda x: _chain(x, scale).sum())
    t_scale = torch.tensor(1.01)
    for call in range(4):
        if call == 2:
            scale.requires_grad_()
            t_scale.requires_grad_()
        x = ember.tensor(np.linspace(-1, 1, 16, dtype=np.float32) + call, requires_grad=True)
        tx = torch.from_numpy(x.detach().numpy().copy()).requires_grad_()
        compiled(x).backward()
        _chain(tx, t_scale).sum().backward()
        assert_same(x.grad, tx.grad, rtol=1e-5, atol=1e-6)
        if call >= 2:
            assert_same(scale.grad, t_scale.grad, rtol=1e-5, atol=1e-5)
            scale.grad, t_scale.grad = None, None


def test_fused_chain_refuses_inputs_changed_in_place_and_a_second_backward():
    w = ember.ones(16)   # needs no grad, but the chain's backward reads it
    compiled = ember.compile(lambda x: ((x * w).tanh() * w).sum())
    for _ in range(2):
        compiled(ember.ones(16, requires_grad=True))  # capture, then a fused replay
    loss = compiled(ember.ones(16, requires_grad=True))
    with ember.no_grad():
        w.mul_(2)
    eager_w = ember.ones(16)
    eager_loss = ((ember.ones(16, requires_grad=True) * eager_w).tanh() * eager_w).sum()
    with ember.no_grad():
        eager_w.mul_(2)
    for value in (loss, eager_loss):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            value.backward()
    loss = compiled(ember.ones(16, requires_grad=True))
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_docstring_examples_of_the_generated_and_fused_kernels_run():
    import doctest
    import importlib

    for name in ("ember._inductor.codegen", "ember._inductor.fusion", "ember._inductor.replay",
                 "ember._inductor.inference", "ember.nn._functional._onednn_fused"):
        module = importlib.import_module(name)
        finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(
            optionflags=doctest.NORMALIZE_WHITESPACE)
        for test in finder.find(module, globs={"ember": ember, "np": np, **vars(module)}):
            runner.run(test)
        results = runner.summarize(verbose=False)
        assert results.attempted > 0 and results.failed == 0, name


def test_generated_replay_runs_multi_output_and_copy_nodes_as_the_interpreter():
    from ember._inductor.backends import _Plan, run_graph
    from ember._inductor.capture import capture
    from ember._inductor.replay import can_generate, generate

    def f(lib, x, y):
        a, b = x.split(2, dim=1)            # a multi-output primitive
        z = a * 2
        z.add_(y)                           # an in-place write into an intermediate
        w = lib.zeros(a.shape) + b          # a factory: a captured tensor
        return {"sum": z + w, "parts": [a.exp(), b.relu()]}

    x = ember.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    y = ember.ones(3, 2)
    found = capture(lambda x, y: f(ember, x, y), [x, y])
    assert can_generate(found.graph)
    assert "copy_" in {n.kind for n in found.graph.nodes}
    assert any(n.kind == "op" and n.op.multi_output for n in found.graph.nodes)
    replay = generate(found.graph, found.captured)
    x2 = np.linspace(2, -2, 12, dtype=np.float32).reshape(3, 4)
    inputs = [ember.tensor(x2), y]
    interpreted = run_graph(_Plan(found.graph), inputs, found.captured.__getitem__,
                            found.graph.constants)
    generated = replay(inputs)
    assert len(generated) == len(interpreted)
    for got, want in zip(generated, interpreted):
        assert_same(got, torch.from_numpy(want.numpy()))
    compiled = ember.compile(lambda x, y: f(ember, x, y))
    for _ in range(3):
        got = compiled(ember.tensor(x2), y)
        want = f(torch, torch.from_numpy(x2.copy()), torch.ones(3, 2))
        assert_same(got["sum"], want["sum"])
        for p, q in zip(got["parts"], want["parts"]):
            assert_same(p, q)


@pytest.mark.parametrize("dims,keepdim", [(None, False), ((1,), False), ((0, 2), True),
                                          ((-1,), True)])
def test_a_sum_of_a_fused_chain_is_absorbed_with_eager_gradients(dims, keepdim):
    from ember._inductor.backends import optimize
    from ember._inductor.capture import capture

    def f(lib, x, w):
        y = ((x * w).tanh() + 0.5).sigmoid() * x
        total = y.sum() if dims is None else y.sum(dim=dims, keepdim=keepdim)
        return total * 3

    rng = np.random.default_rng(5)
    xa, wa = (rng.standard_normal((2, 3, 4)).astype(np.float32) for _ in range(2))
    x, w = ember.tensor(xa, requires_grad=True), ember.tensor(wa, requires_grad=True)
    graph = optimize(capture(lambda x, w: f(ember, x, w), [x, w]).graph)
    fused = [n for n in graph.nodes if n.kind == "fused"]
    assert len(fused) == 1 and fused[0].op.reduction is not None
    assert not any(n.kind == "op" and n.op.name == "sum" for n in graph.nodes)
    compiled = ember.compile(lambda x, w: f(ember, x, w))
    tx, tw = (torch.from_numpy(a.copy()).requires_grad_() for a in (xa, wa))
    want = f(torch, tx, tw)
    gradient = rng.standard_normal(tuple(want.shape)).astype(np.float32)
    want.backward(torch.from_numpy(gradient))
    for _ in range(3):
        x.grad = w.grad = None
        got = compiled(x, w)
        got.backward(ember.tensor(gradient))
        assert_same(got, want.detach(), rtol=1e-5, atol=1e-6)
        assert_same(x.grad, tx.grad, rtol=1e-5, atol=1e-6)
        assert_same(w.grad, tw.grad, rtol=1e-5, atol=1e-6)
    xd, wd = (ember.tensor(a.astype(np.float64), requires_grad=True) for a in (xa, wa))
    assert ember.autograd.gradgradcheck(ember.compile(lambda x, w: f(ember, x, w)), (xd, wd))
