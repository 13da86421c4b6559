"""ember.compile keeps eager code's whole-layer kernels and gives the same numbers: a captured
LSTM runs one op per layer and direction, causal attention one fused op, as eager code does,
with outputs and gradients equal to eager ember's and close to torch's."""

import numpy as np
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
