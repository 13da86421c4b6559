"""nn.LSTM / nn.GRU / nn.RNN traced with ember.jit.trace replay at other batch sizes and
sequence lengths, as torch.jit.trace's single aten::lstm: traced at (seq 5, batch 3), run at
(7, 2) and (3, 6), outputs equal to eager ember and to torch's traced module with the same
weights; with and without an initial state zeros(layers, x.size(0), hidden); also after
save/load and optimize_for_inference. The ONNX exporter's constant-size trace still unrolls."""
import io
import warnings

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same, to_torch

TRACED, OTHERS = (5, 3), ((7, 2), (3, 6))  # (sequence length, batch)
INPUT, HIDDEN = 4, 3

# (class name, constructor keywords)
MODELS = {
    "lstm": ("LSTM", {}),
    "lstm_2_layers": ("LSTM", {"num_layers": 2}),
    "lstm_bidirectional": ("LSTM", {"bidirectional": True}),
    "lstm_batch_first": ("LSTM", {"batch_first": True}),
    "lstm_2_layers_bidirectional_batch_first": (
        "LSTM", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    "lstm_proj": ("LSTM", {"proj_size": 2}),
    "gru": ("GRU", {}),
    "gru_2_layers_bidirectional": ("GRU", {"num_layers": 2, "bidirectional": True}),
    "gru_batch_first": ("GRU", {"batch_first": True}),
    "rnn_tanh": ("RNN", {}),
    "rnn_relu_bidirectional_batch_first": (
        "RNN", {"nonlinearity": "relu", "bidirectional": True, "batch_first": True}),
}


def _pair(name):
    """The same recurrent layer in ember and torch (torch's weights copied), in eval mode."""
    cls, kwargs = MODELS[name]
    torch.manual_seed(0)
    t_model = getattr(torch.nn, cls)(INPUT, HIDDEN, **kwargs).eval()
    e_model = getattr(ember.nn, cls)(INPUT, HIDDEN, **kwargs).eval()
    e_model.load_state_dict({k: ember.tensor(v.detach().numpy().copy())
                             for k, v in t_model.state_dict().items()})
    return e_model, t_model


def _input(model, steps, batch, seed):
    shape = (batch, steps, INPUT) if model.batch_first else (steps, batch, INPUT)
    array = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return ember.tensor(array), torch.from_numpy(array.copy())


def _with_zero_state(fw, rnn):
    """The layer called with an explicit initial state ``zeros(layers, x.size(b), hidden)``
    (built in user code, so the batch size is traced), as a module of framework ``fw``."""

    class WithZeroState(fw.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = rnn

        def forward(self, x):
            layers = rnn.num_layers * (2 if rnn.bidirectional else 1)
            batch = x.size(0) if rnn.batch_first else x.size(1)
            out_size = rnn.proj_size if rnn.proj_size > 0 else rnn.hidden_size
            h0 = fw.zeros(layers, batch, out_size)
            if isinstance(rnn, fw.nn.LSTM):
                return rnn(x, (h0, fw.zeros(layers, batch, rnn.hidden_size)))
            return rnn(x, h0)
    return WithZeroState().eval()


def _traced_pair(name, with_state):
    e_model, t_model = _pair(name)
    example, t_example = _input(e_model, *TRACED, seed=0)
    e_fn = _with_zero_state(ember, e_model) if with_state else e_model
    t_fn = _with_zero_state(torch, t_model) if with_state else t_model
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a baked size would warn TracerWarning
        traced = ember.jit.trace(e_fn, example)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns about RNNs in traces
        t_traced = torch.jit.trace(t_fn, t_example)
    return e_model, e_fn, traced, t_traced


def _check_at_every_size(model, eager, replay, t_traced):
    for steps, batch in (TRACED, *OTHERS):
        x, tx = _input(model, steps, batch, seed=steps * 10 + batch)
        expected = t_traced(tx)
        result = replay(x)
        assert_same(result, tuple(expected), rtol=1e-5, atol=1e-6)
        assert_same(result, to_torch_tree(eager(x)))


def to_torch_tree(tree):
    if isinstance(tree, (tuple, list)):
        return tuple(to_torch_tree(t) for t in tree)
    return to_torch(tree)


@pytest.mark.parametrize("with_state", [False, True], ids=["no_state", "zeros_state"])
@pytest.mark.parametrize("name", list(MODELS))
def test_traced_rnn_runs_at_other_batch_sizes_and_lengths(name, with_state):
    model, eager, traced, t_traced = _traced_pair(name, with_state)
    _check_at_every_size(model, eager, traced, t_traced)


def test_trace_records_one_call_like_aten_lstm():
    _, _, traced, _ = _traced_pair("lstm_2_layers", False)
    calls = [n.params["fn"] for n in traced.graph.nodes if n.kind == "call"]
    assert calls.count("ember.lstm") == 1
    assert not any(n.kind == "op" and n.op.name == "_lstm_cell" for n in traced.graph.nodes)


@pytest.mark.parametrize("name", ["lstm_2_layers_bidirectional_batch_first", "gru"])
def test_saved_and_loaded_rnn_trace_runs_at_other_sizes(name):
    model, eager, traced, t_traced = _traced_pair(name, False)
    buffer = io.BytesIO()
    ember.jit.save(traced, buffer)
    buffer.seek(0)
    loaded = ember.jit.load(buffer)
    _check_at_every_size(model, eager, loaded, t_traced)


@pytest.mark.parametrize("name", ["lstm_bidirectional", "rnn_tanh"])
def test_optimized_rnn_trace_runs_at_other_sizes(name):
    model, eager, traced, t_traced = _traced_pair(name, True)
    optimized = ember.jit.optimize_for_inference(traced)
    _check_at_every_size(model, eager, optimized, t_traced)


def test_gradients_through_the_replayed_call_match_eager():
    model, eager, traced, _ = _traced_pair("lstm_2_layers", False)
    x, _ = _input(model, *OTHERS[1], seed=3)
    out, (h, c) = traced(x)
    (out.sum() + h.sum() + c.sum()).backward()
    replayed = {k: p.grad.clone() for k, p in model.named_parameters()}
    model.zero_grad()
    out, (h, c) = model(x)
    (out.sum() + h.sum() + c.sum()).backward()
    for k, p in model.named_parameters():
        np.testing.assert_allclose(replayed[k].numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_unbatched_input_trace_replays_other_lengths():
    e_model, t_model = _pair("gru")
    x = ember.randn(5, INPUT)
    traced = ember.jit.trace(e_model, x)
    for steps in (2, 8):
        y = ember.randn(steps, INPUT)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = t_model(torch.from_numpy(y.numpy().copy()))
        assert_same(traced(y), tuple(expected), rtol=1e-5, atol=1e-6)


def test_constant_size_trace_keeps_the_unrolled_steps():
    """The ONNX exporter traces with sizes as constants: the recurrence stays unrolled ops."""
    from ember.jit._tracer import trace_graph

    model, _ = _pair("lstm")
    names = {id(p): name for name, p in model.named_parameters()}
    graph, _ = trace_graph(model, [ember.randn(*TRACED, INPUT)], ["x"], names,
                           attrs=list(model.parameters()), dynamic_sizes=False)
    assert not any(n.kind == "call" for n in graph.nodes)
    assert sum(n.kind == "op" and n.op.name == "_lstm_cell" for n in graph.nodes) == TRACED[0]


@pytest.mark.parametrize("fn, cls", [(ember.lstm, "LSTM"), (ember.gru, "GRU"),
                                     (ember.rnn_tanh, "RNN")])
def test_functional_form_equals_torch(fn, cls):
    torch.manual_seed(1)
    t_model = getattr(torch.nn, cls)(INPUT, HIDDEN, num_layers=2, bidirectional=True)
    x = torch.randn(6, 2, INPUT)
    h0 = torch.randn(4, 2, HIDDEN)
    hx = (h0, torch.randn(4, 2, HIDDEN)) if cls == "LSTM" else h0
    t_fn = getattr(torch, fn.__name__)
    params = list(t_model._flat_weights)
    expected = t_fn(x, hx, params, True, 2, 0.0, False, True, False)
    e_hx = tuple(ember.tensor(h.numpy()) for h in hx) if cls == "LSTM" else ember.tensor(
        h0.numpy())
    result = fn(ember.tensor(x.numpy()), e_hx, [ember.tensor(p.detach().numpy()) for p in params],
                True, 2, 0.0, False, True, False)
    assert_same(result, tuple(t.detach() for t in expected), rtol=1e-5, atol=1e-6)


def test_functional_form_rejects_a_wrong_argument_count():
    with pytest.raises(TypeError, match="lstm"):
        ember.lstm(ember.randn(2, 1, 3), (ember.zeros(1, 1, 2),) * 2, [])


def test_packed_overload_traced_with_batch_sizes_as_input_follows_them():
    """ember.lstm(data, batch_sizes, ...) with the batch sizes an input of the trace: the
    replay follows other batch sizes, equal to torch's packed overload."""
    torch.manual_seed(2)
    t_model = torch.nn.LSTM(INPUT, HIDDEN)
    params = [ember.tensor(p.detach().numpy()) for p in t_model._flat_weights]

    def run(data, batch_sizes, h0, c0):
        return ember.lstm(data, batch_sizes, (h0, c0), params, True, 1, 0.0, False, False)

    def example(sizes):
        rng = np.random.default_rng(len(sizes))
        arrays = [rng.standard_normal(shape).astype(np.float32)
                  for shape in ((sum(sizes), INPUT), (1, sizes[0], HIDDEN), (1, sizes[0], HIDDEN))]
        return [ember.tensor(arrays[0]), ember.tensor(sizes), *map(ember.tensor, arrays[1:])]

    traced = ember.jit.trace(run, tuple(example([3, 3, 2, 1])))
    for sizes in ([3, 3, 2, 1], [4, 2], [2, 2, 2, 1, 1]):
        inputs = example(sizes)
        expected = torch.lstm(to_torch(inputs[0]), torch.tensor(sizes),
                              (to_torch(inputs[2]), to_torch(inputs[3])),
                              list(t_model._flat_weights), True, 1, 0.0, False, False)
        assert_same(traced(*inputs), tuple(t.detach() for t in expected), rtol=1e-5, atol=1e-6)
