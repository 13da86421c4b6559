"""Sizes read from traced tensors follow the input, as torch.jit.trace's aten::size: traces of
code using x.size(0)/x.shape[0]/numel in view, reshape, expand, zeros, arange, new_zeros,
flatten and an LSTM's initial state run at the traced batch size and at others, equal to eager
ember and to torch's traced module; also after save/load and optimize_for_inference. A
size-dependent Python branch warns TracerWarning and stays baked in, as in torch."""
import io
import warnings

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same, to_torch

TRACED_BATCH, OTHER_BATCHES = 4, (2, 7)


def _inputs(shape, seed=1):
    array = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return ember.tensor(array), torch.from_numpy(array.copy())


def _same_weights(e_model, t_model):
    e_model.load_state_dict({k: ember.tensor(v.detach().numpy().copy())
                             for k, v in t_model.state_dict().items()})
    return e_model, t_model


def _quiet(trace, fn, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return trace(fn, args)


def _size_programs(fw):
    """Functions that size their tensors from ``x`` (one definition for both frameworks)."""
    return {
        "view_size0": lambda x: x.view(x.size(0), -1) * 2,
        "reshape_shape0": lambda x: x.reshape(x.shape[0], -1).sin(),
        "reshape_numel": lambda x: x.reshape(x.numel() // x.size(-1), x.size(-1)) + 1,
        "expand": lambda x: x[:1].expand(x.size(0), -1, -1, -1) - x,
        "zeros_batch": lambda x: fw.zeros(x.size(0), 3) + x.flatten(1)[:, :3],
        "flatten": lambda x: fw.flatten(x, 1).cos(),
        "arange": lambda x: fw.arange(x.shape[0]).view(-1, 1) * x.flatten(1),
        "new_zeros_arith": lambda x: x.new_zeros(x.size(0) * 2 // 2, x.size(1) + 1) + 1,
        "shape_tuple": lambda x: x.view(x.shape[:2] + (-1,)) * 3,
    }


@pytest.mark.parametrize("name", list(_size_programs(ember)))
def test_size_dependent_function_runs_at_other_batch_sizes(name):
    e_fn, t_fn = _size_programs(ember)[name], _size_programs(torch)[name]
    example, t_example = _inputs((TRACED_BATCH, 2, 3, 2))
    traced = ember.jit.trace(e_fn, example)
    t_traced = _quiet(torch.jit.trace, t_fn, t_example)
    for batch in (TRACED_BATCH, *OTHER_BATCHES):
        x, tx = _inputs((batch, 2, 3, 2), seed=batch)
        result = traced(x)
        assert_same(result, to_torch(e_fn(x)))
        assert_same(result, t_traced(tx), rtol=1e-5, atol=1e-6)


def test_the_graph_reads_the_size_like_torch():
    e_fn, t_fn = (_size_programs(fw)["view_size0"] for fw in (ember, torch))
    x, tx = _inputs((TRACED_BATCH, 3))
    graph = ember.jit.trace(e_fn, x).graph
    assert "aten::size" in str(_quiet(torch.jit.trace, t_fn, tx).graph)
    assert [n.params["fn"] for n in graph.nodes if n.kind == "call"] == [
        "method:size", "method:view"]


def _cnn(nn):
    return nn.Sequential(nn.Conv2d(2, 3, 3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 4 * 4, 5))


def _lstm_with_state(nn, fw):
    class Tagger(nn.Module):
        """An LSTM cell run over time from the state zeros(batch, hidden) sized from x."""

        def __init__(self):
            super().__init__()
            self.cell = nn.LSTMCell(3, 5)

        def forward(self, x):
            h = fw.zeros(x.size(0), 5)
            c = fw.zeros(x.shape[0], 5)
            outputs = []
            for step in range(x.shape[1]):  # the number of steps is fixed by the trace
                h, c = self.cell(x[:, step], (h, c))
                outputs.append(h)
            return fw.stack(outputs, 1).reshape(x.size(0), -1), c
    return Tagger()


@pytest.mark.parametrize("make,shape", [
    (lambda fw: _cnn(fw.nn), (2, 6, 6)),
    (lambda fw: _lstm_with_state(fw.nn, fw), (3, 3)),
], ids=["cnn_flatten", "lstm_state"])
def test_module_trace_runs_at_other_batch_sizes(make, shape):
    e_model, t_model = _same_weights(make(ember), make(torch))
    example, t_example = _inputs((TRACED_BATCH, *shape))
    traced = ember.jit.trace(e_model, example)
    t_traced = _quiet(torch.jit.trace, t_model, t_example)
    for batch in (TRACED_BATCH, *OTHER_BATCHES):
        x, tx = _inputs((batch, *shape), seed=batch)
        result, expected = traced(x), t_traced(tx)
        for mine, eager, theirs in zip(_flat(result), _flat(e_model(x)), _flat(expected)):
            assert_same(mine, to_torch(eager), rtol=1e-5, atol=1e-6)
            assert_same(mine, theirs, rtol=1e-4, atol=1e-5)


def _flat(out):
    return list(out) if isinstance(out, tuple) else [out]


def test_saved_and_loaded_trace_runs_at_other_batch_sizes():
    e_model, t_model = _same_weights(_cnn(ember.nn), _cnn(torch.nn))
    traced = ember.jit.trace(e_model, _inputs((TRACED_BATCH, 2, 6, 6))[0])
    buffer = io.BytesIO()
    ember.jit.save(traced, buffer)
    buffer.seek(0)
    loaded = ember.jit.load(buffer)
    for batch in OTHER_BATCHES:
        x, tx = _inputs((batch, 2, 6, 6), seed=batch)
        assert_same(loaded(x), t_model(tx).detach(), rtol=1e-4, atol=1e-5)


def test_optimized_trace_runs_at_other_batch_sizes():
    e_model, t_model = _same_weights(_cnn(ember.nn), _cnn(torch.nn))
    e_model.eval()
    t_model.eval()
    traced = ember.jit.trace(e_model, _inputs((TRACED_BATCH, 2, 6, 6))[0])
    optimized = ember.jit.optimize_for_inference(traced)
    assert not any(n.kind == "get_attr" for n in optimized.graph.nodes)  # weights frozen
    for batch in (TRACED_BATCH, *OTHER_BATCHES):
        x, tx = _inputs((batch, 2, 6, 6), seed=batch)
        with torch.no_grad():
            expected = t_model(tx)
        assert_same(optimized(x), expected, rtol=1e-4, atol=1e-5)


def _branchy(x):
    if x.size(0) > 3:  # a Python branch on a size: baked into the trace
        return x * 2
    return x - 1


def test_size_dependent_branch_warns_and_is_baked_in_as_torch():
    x, tx = _inputs((TRACED_BATCH, 3))
    with pytest.warns(torch.jit.TracerWarning, match="Python boolean"):
        t_traced = torch.jit.trace(_branchy, tx, check_trace=False)
    with pytest.warns(ember.jit.TracerWarning, match="Python boolean"):
        traced = ember.jit.trace(_branchy, x, check_trace=False)
    small, t_small = _inputs((2, 3), seed=2)
    assert_same(traced(small), t_traced(t_small))  # both replay x * 2, as traced
    assert_same(traced(small), to_torch(small * 2))


def test_len_warns_as_torch():
    x, tx = _inputs((TRACED_BATCH, 3))
    with pytest.warns(torch.jit.TracerWarning, match="Using len to get tensor shape"):
        torch.jit.trace(lambda t: t * len(t), tx)
    with pytest.warns(ember.jit.TracerWarning, match="Using len to get tensor shape"):
        ember.jit.trace(lambda t: t * len(t), x)


def test_sizes_read_outside_a_trace_are_plain_ints():
    ember.jit.trace(_size_programs(ember)["view_size0"], _inputs((2, 3))[0])
    x = ember.zeros(5, 2)
    assert type(x.size(0)) is int and type(x.shape[1]) is int and type(len(x)) is int
    assert type(x.numel()) is int
