"""Recurrent layers, cells and nn.utils.rnn against torch on the same weights and inputs."""

import itertools
import warnings

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same, to_ember, to_torch, torch_dtype
from ember import nn
from ember.nn.modules import rnn as rnn_impl
from ember.nn.utils import rnn as urnn

# torch warns that oneDNN lacks LSTM projections (its fallback is used): not ember's concern
pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections")

T_DTYPE = {ember.float64: torch.float64, ember.float32: torch.float32}


def _pair(cls, *args, dtype=ember.float64, **kwargs):
    """The same layer in ember and torch with ember's weights copied into torch."""
    e = getattr(nn, cls)(*args, dtype=dtype, **kwargs)
    t = getattr(torch.nn, cls)(*args, dtype=T_DTYPE[dtype], **kwargs)
    with torch.no_grad():
        for (ne, pe), (nt, pt) in zip(e.named_parameters(), t.named_parameters(), strict=True):
            assert ne == nt
            pt.copy_(to_torch(pe))
    return e, t


def _leaf(array):
    """One array as an ember and a torch leaf requiring grad."""
    e = ember.tensor(array).requires_grad_()
    t = torch.from_numpy(np.array(array, copy=True)).requires_grad_()
    return e, t


def _flat(outputs):
    """The tensors of an RNN result ``(out, h)`` / ``(out, (h, c))`` / PackedSequence output."""
    out, hidden = outputs
    if isinstance(out, (urnn.PackedSequence, torch.nn.utils.rnn.PackedSequence)):
        out = out.data
    hidden = list(hidden) if isinstance(hidden, tuple) else [hidden]
    return [out] + hidden


def _compare(e_outs, t_outs, e_wrt, t_wrt, rng, rtol=None, atol=None):
    """Outputs equal, then gradients of a random projection of them w.r.t. every leaf."""
    assert len(e_outs) == len(t_outs)
    for a, b in zip(e_outs, t_outs):
        assert_same(a, b, rtol=rtol, atol=atol)
    cot = [rng.standard_normal(tuple(t.shape)) for t in t_outs]
    t_loss = sum((t * torch.from_numpy(c).to(t.dtype)).sum() for t, c in zip(t_outs, cot))
    e_loss = sum((e * ember.tensor(c).to(e.dtype)).sum() for e, c in zip(e_outs, cot))
    t_grads = torch.autograd.grad(t_loss, t_wrt, allow_unused=True, retain_graph=True)
    e_grads = ember.autograd.grad(e_loss, e_wrt, allow_unused=True, retain_graph=True)
    for eg, tg in zip(e_grads, t_grads, strict=True):
        if tg is None:
            assert eg is None or float(eg.abs().sum()) == 0
        else:
            assert_same(eg, tg, rtol=rtol, atol=atol)


def _states(cls, layers, dirs, batch, hidden, proj, rng, unbatched=False):
    """Initial states as numpy arrays: [h0] or [h0, c0]."""
    lead = (layers * dirs,) if unbatched else (layers * dirs, batch)
    h = rng.standard_normal(lead + (proj or hidden,))
    if cls == "LSTM":
        return [h, rng.standard_normal(lead + (hidden,))]
    return [h]


def _hx(cls, states):
    return (states[0], states[1]) if cls == "LSTM" else states[0]


MODES = [("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("GRU", {}), ("LSTM", {}),
         ("LSTM", {"proj_size": 2})]
MODE_IDS = ["rnn_tanh", "rnn_relu", "gru", "lstm", "lstm_proj"]


# ------------------------------------------------------------------ structure


@pytest.mark.parametrize("cls,kw", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("layers,bidirectional,bias", [(1, False, True), (2, True, True),
                                                       (3, False, False), (2, True, False)])
def test_parameters_state_dict_and_repr_match_torch(cls, kw, layers, bidirectional, bias):
    e, t = _pair(cls, 3, 5, num_layers=layers, bidirectional=bidirectional, bias=bias, **kw)
    assert [(n, tuple(p.shape)) for n, p in e.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in t.named_parameters()]
    assert [(k, tuple(v.shape)) for k, v in e.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in t.state_dict().items()]
    assert repr(e) == repr(t)
    assert e._flat_weights_names == t._flat_weights_names
    assert [[tuple(p.shape) for p in w] for w in e.all_weights] == \
        [[tuple(p.shape) for p in w] for w in t.all_weights]
    assert e.flatten_parameters() is None


@pytest.mark.parametrize("kwargs", [dict(batch_first=True), dict(dropout=0.25, num_layers=2),
                                    dict(bias=False, bidirectional=True, num_layers=2),
                                    dict(proj_size=3, batch_first=True, dropout=0.5,
                                         num_layers=3)])
def test_repr_of_every_option(kwargs):
    for cls in ("RNN", "GRU", "LSTM"):
        if "proj_size" in kwargs and cls != "LSTM":
            continue
        assert repr(getattr(nn, cls)(4, 6, **kwargs)) == \
            repr(getattr(torch.nn, cls)(4, 6, **kwargs))
    assert repr(nn.RNN(4, 6, 2, "relu", False)) == repr(torch.nn.RNN(4, 6, 2, "relu", False))


@pytest.mark.parametrize("cls,kw", [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}),
                                    ("RNNCell", {"bias": False}), ("LSTMCell", {}),
                                    ("GRUCell", {"bias": False})])
def test_cell_parameters_and_repr_match_torch(cls, kw):
    e, t = _pair(cls, 3, 5, **kw)
    assert [(n, tuple(p.shape)) for n, p in e.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in t.named_parameters()]
    assert list(e.state_dict()) == list(t.state_dict())
    assert repr(e) == repr(t)
    assert (e.bias_ih is None) == (t.bias_ih is None)


@pytest.mark.parametrize("cls", ["RNN", "GRU", "LSTM", "RNNCell", "LSTMCell", "GRUCell"])
def test_initialisation_is_uniform_in_inverse_sqrt_hidden(cls):
    hidden = 64
    module = getattr(nn, cls)(48, hidden)
    bound = 1 / np.sqrt(hidden)
    values = np.concatenate([p.detach().numpy().ravel() for p in module.parameters()])
    assert values.size > 5_000
    assert np.abs(values).max() <= bound
    assert np.abs(values).max() > 0.98 * bound
    assert abs(values.mean()) < 0.05 * bound
    assert abs(values.std() - bound / np.sqrt(3)) < 0.03 * bound
    # each parameter is drawn separately: no two equal
    arrays = [p.detach().numpy() for p in module.parameters()]
    assert all(not np.array_equal(a[:1], b[:1]) for a, b in itertools.combinations(arrays, 2))


def test_factory_kwargs_and_reset_parameters():
    e = nn.LSTM(3, 4, dtype=ember.float64)
    assert all(p.dtype is ember.float64 for p in e.parameters())
    before = e.weight_ih_l0.detach().clone()
    e.reset_parameters()
    assert not bool((before == e.weight_ih_l0.detach()).all())
    m = nn.GRU(3, 4, device="meta")
    assert all(p.device.type == "meta" for p in m.parameters())


# ------------------------------------------------------------------ full layers vs torch


@pytest.mark.parametrize("cls,kw", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("given_state", [False, True])
def test_layer_outputs_and_gradients_float64(cls, kw, layers, bidirectional, batch_first,
                                             given_state):
    rng = np.random.default_rng(layers * 8 + bidirectional * 4 + batch_first * 2 + given_state)
    steps, batch, inp, hidden = 4, 3, 3, 4
    e, t = _pair(cls, inp, hidden, num_layers=layers, bidirectional=bidirectional,
                 batch_first=batch_first, **kw)
    shape = (batch, steps, inp) if batch_first else (steps, batch, inp)
    xe, xt = _leaf(rng.standard_normal(shape))
    e_wrt, t_wrt = [xe] + list(e.parameters()), [xt] + list(t.parameters())
    if given_state:
        states = [_leaf(s) for s in _states(cls, layers, 1 + bidirectional, batch, hidden,
                                            kw.get("proj_size"), rng)]
        e_wrt += [s for s, _ in states]
        t_wrt += [s for _, s in states]
        e_res = e(xe, _hx(cls, [s for s, _ in states]))
        t_res = t(xt, _hx(cls, [s for _, s in states]))
    else:
        e_res, t_res = e(xe), t(xt)
    _compare(_flat(e_res), _flat(t_res), e_wrt, t_wrt, rng)


@pytest.mark.parametrize("cls,kw", MODES, ids=MODE_IDS)
def test_layer_float32_and_non_contiguous_input(cls, kw):
    rng = np.random.default_rng(1)
    e, t = _pair(cls, 5, 6, num_layers=2, bidirectional=True, dtype=ember.float32, **kw)
    x = rng.standard_normal((3, 7, 5)).astype(np.float32)
    xe, xt = _leaf(x)
    # (7, 3, 5) seen through a transpose: not contiguous
    _compare(_flat(e(xe.transpose(0, 1))), _flat(t(xt.transpose(0, 1))),
             [xe] + list(e.parameters()), [xt] + list(t.parameters()), rng,
             rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("cls,kw", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("given_state", [False, True])
def test_unbatched_input(cls, kw, batch_first, given_state):
    rng = np.random.default_rng(2)
    e, t = _pair(cls, 3, 4, num_layers=2, bidirectional=True, batch_first=batch_first, **kw)
    xe, xt = _leaf(rng.standard_normal((5, 3)))
    e_wrt, t_wrt = [xe] + list(e.parameters()), [xt] + list(t.parameters())
    if given_state:
        states = [_leaf(s) for s in _states(cls, 2, 2, None, 4, kw.get("proj_size"), rng,
                                            unbatched=True)]
        e_wrt += [s for s, _ in states]
        t_wrt += [s for _, s in states]
        e_res = e(xe, _hx(cls, [s for s, _ in states]))
        t_res = t(xt, _hx(cls, [s for _, s in states]))
    else:
        e_res, t_res = e(xe), t(xt)
    _compare(_flat(e_res), _flat(t_res), e_wrt, t_wrt, rng)


@pytest.mark.parametrize("cls,kw", MODES, ids=MODE_IDS)
def test_zero_batch(cls, kw):
    e, t = _pair(cls, 3, 4, **kw)
    for a, b in zip(_flat(e(ember.zeros(5, 0, 3, dtype=ember.float64))),
                    _flat(t(torch.zeros(5, 0, 3, dtype=torch.float64)))):
        assert_same(a, b)


@pytest.mark.parametrize("cls,kw", [("RNN", {}), ("GRU", {}), ("LSTM", {"proj_size": 2})],
                         ids=["rnn", "gru", "lstm_proj"])
def test_double_backward_matches_torch(cls, kw):
    rng = np.random.default_rng(3)
    e, t = _pair(cls, 2, 3, num_layers=2, bidirectional=True, **kw)
    xe, xt = _leaf(rng.standard_normal((3, 2, 2)))
    e_out, t_out = e(xe)[0], t(xt)[0]
    cot = rng.standard_normal(tuple(t_out.shape))
    (ge,) = ember.autograd.grad((e_out * ember.tensor(cot)).sum(), [xe], create_graph=True)
    (gt,) = torch.autograd.grad((t_out * torch.from_numpy(cot)).sum(), [xt], create_graph=True)
    assert_same(ge, gt)
    v = rng.standard_normal(tuple(gt.shape))
    e_gg = ember.autograd.grad((ge * ember.tensor(v)).sum(), [xe] + list(e.parameters()))
    t_gg = torch.autograd.grad((gt * torch.from_numpy(v)).sum(), [xt] + list(t.parameters()))
    for a, b in zip(e_gg, t_gg, strict=True):
        assert_same(a, b)


# ------------------------------------------------------------------ packed sequences


@pytest.mark.parametrize("cls,kw", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("enforce_sorted,lengths", [(True, [5, 3, 3, 1]),
                                                    (False, [2, 5, 1, 4])])
@pytest.mark.parametrize("given_state", [False, True])
def test_packed_input_of_unequal_lengths(cls, kw, bidirectional, enforce_sorted, lengths,
                                         given_state):
    rng = np.random.default_rng(4)
    e, t = _pair(cls, 3, 4, num_layers=2, bidirectional=bidirectional, **kw)
    xe, xt = _leaf(rng.standard_normal((5, 4, 3)))
    pe = urnn.pack_padded_sequence(xe, lengths, enforce_sorted=enforce_sorted)
    pt = torch.nn.utils.rnn.pack_padded_sequence(xt, lengths, enforce_sorted=enforce_sorted)
    e_wrt, t_wrt = [xe] + list(e.parameters()), [xt] + list(t.parameters())
    if given_state:
        states = [_leaf(s) for s in _states(cls, 2, 1 + bidirectional, 4, 4,
                                            kw.get("proj_size"), rng)]
        e_wrt += [s for s, _ in states]
        t_wrt += [s for _, s in states]
        e_res = e(pe, _hx(cls, [s for s, _ in states]))
        t_res = t(pt, _hx(cls, [s for _, s in states]))
    else:
        e_res, t_res = e(pe), t(pt)
    assert isinstance(e_res[0], urnn.PackedSequence)
    assert_same(e_res[0].batch_sizes, t_res[0].batch_sizes)
    assert_same(e_res[0].sorted_indices, t_res[0].sorted_indices)
    assert_same(e_res[0].unsorted_indices, t_res[0].unsorted_indices)
    _compare(_flat(e_res), _flat(t_res), e_wrt, t_wrt, rng)
    padded_e, len_e = urnn.pad_packed_sequence(e_res[0], batch_first=True)
    padded_t, len_t = torch.nn.utils.rnn.pad_packed_sequence(t_res[0], batch_first=True)
    assert_same(padded_e, padded_t)
    assert_same(len_e, len_t)


def test_packed_input_with_dropout_one_matches_torch():
    rng = np.random.default_rng(5)
    e, t = _pair("GRU", 3, 4, num_layers=2, dropout=1.0)
    x = rng.standard_normal((4, 2, 3))
    pe = urnn.pack_padded_sequence(ember.tensor(x), [4, 2])
    pt = torch.nn.utils.rnn.pack_padded_sequence(torch.from_numpy(x), [4, 2])
    for a, b in zip(_flat(e(pe)), _flat(t(pt))):
        assert_same(a, b)


# ------------------------------------------------------------------ dropout between layers


@pytest.mark.parametrize("cls", ["RNN", "GRU", "LSTM"])
def test_dropout_train_and_eval(cls):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 3, 3))
    # p = 1 drops every output of layer 0 in training: deterministic, compare with torch
    e, t = _pair(cls, 3, 4, num_layers=2, dropout=1.0, bidirectional=True)
    for a, b in zip(_flat(e(ember.tensor(x))), _flat(t(torch.from_numpy(x)))):
        assert_same(a, b)
    # evaluation mode: no dropout
    e, t = _pair(cls, 3, 4, num_layers=2, dropout=0.5)
    e.eval()
    t.eval()
    for a, b in zip(_flat(e(ember.tensor(x))), _flat(t(torch.from_numpy(x)))):
        assert_same(a, b)
    # training mode with p = 0.5: random, differs from eval and between calls; the last
    # layer's input is affected but a single-layer model is not
    e.train()
    ember.manual_seed(0)
    first = e(ember.tensor(x))[0]
    second = e(ember.tensor(x))[0]
    e.eval()
    plain = e(ember.tensor(x))[0]
    assert not bool((first == plain).all()) and not bool((first == second).all())
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        single = getattr(nn, cls)(3, 4, dropout=0.5, dtype=ember.float64)
    a = single(ember.tensor(x))[0]
    b = single(ember.tensor(x))[0]
    assert bool((a == b).all())


def test_dropout_mask_statistics():
    # layer 1 of an RNN with identity-like recurrences sees (input * mask / (1 - p))
    ember.manual_seed(1)
    e = nn.RNN(1, 200, num_layers=2, dropout=0.3, nonlinearity="relu", bias=False,
               dtype=ember.float64)
    with ember.no_grad():
        e.weight_ih_l0.fill_(1.0)
        e.weight_hh_l0.zero_()
        e.weight_hh_l1.zero_()
        e.weight_ih_l1.copy_(ember.eye(200, dtype=ember.float64))
    out = e(ember.ones(50, 1, 1, dtype=ember.float64))[0].detach().numpy()
    values = np.unique(np.round(out, 12))
    np.testing.assert_allclose(values, [0.0, 1 / 0.7])
    assert abs((out == 0).mean() - 0.3) < 0.02


# ------------------------------------------------------------------ cells


CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("RNNCell", {"bias": False}),
         ("LSTMCell", {}), ("LSTMCell", {"bias": False}), ("GRUCell", {}),
         ("GRUCell", {"bias": False})]
CELL_IDS = ["rnn_tanh", "rnn_relu", "rnn_nobias", "lstm", "lstm_nobias", "gru", "gru_nobias"]


@pytest.mark.parametrize("cls,kw", CELLS, ids=CELL_IDS)
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("given_state", [False, True])
def test_cells_match_torch(cls, kw, batched, given_state):
    rng = np.random.default_rng(7)
    e, t = _pair(cls, 3, 4, **kw)
    lead = (5,) if batched else ()
    xe, xt = _leaf(rng.standard_normal(lead + (3,)))
    e_wrt, t_wrt = [xe] + list(e.parameters()), [xt] + list(t.parameters())
    if given_state:
        n = 2 if cls == "LSTMCell" else 1
        states = [_leaf(rng.standard_normal(lead + (4,))) for _ in range(n)]
        e_wrt += [s for s, _ in states]
        t_wrt += [s for _, s in states]
        e_h = tuple(s for s, _ in states) if n == 2 else states[0][0]
        t_h = tuple(s for _, s in states) if n == 2 else states[0][1]
        e_res, t_res = e(xe, e_h), t(xt, t_h)
    else:
        e_res, t_res = e(xe), t(xt)
    e_outs = list(e_res) if isinstance(e_res, tuple) else [e_res]
    t_outs = list(t_res) if isinstance(t_res, tuple) else [t_res]
    _compare(e_outs, t_outs, e_wrt, t_wrt, rng)


@pytest.mark.parametrize("cls", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_double_backward_and_float32(cls):
    rng = np.random.default_rng(8)
    e, t = _pair(cls, 3, 4)
    xe, xt = _leaf(rng.standard_normal((2, 3)))
    e_out = e(xe)
    t_out = t(xt)
    e_out = e_out[0] + 2 * e_out[1] if cls == "LSTMCell" else e_out
    t_out = t_out[0] + 2 * t_out[1] if cls == "LSTMCell" else t_out
    (ge,) = ember.autograd.grad(e_out.sum(), [xe], create_graph=True)
    (gt,) = torch.autograd.grad(t_out.sum(), [xt], create_graph=True)
    e_gg = ember.autograd.grad((ge * ge).sum(), [xe] + list(e.parameters()))
    t_gg = torch.autograd.grad((gt * gt).sum(), [xt] + list(t.parameters()))
    for a, b in zip(e_gg, t_gg, strict=True):
        assert_same(a, b)
    e32, t32 = _pair(cls, 3, 4, dtype=ember.float32)
    x = rng.standard_normal((6, 3)).astype(np.float32)
    a, b = e32(ember.tensor(x)), t32(torch.from_numpy(x))
    assert_same(a, b, rtol=1e-5, atol=1e-6)


def test_cell_loop_equals_layer():
    rng = np.random.default_rng(9)
    layer = nn.LSTM(3, 4, dtype=ember.float64)
    cell = nn.LSTMCell(3, 4, dtype=ember.float64)
    cell.load_state_dict({k[:-3]: v for k, v in layer.state_dict().items()})
    x = ember.tensor(rng.standard_normal((6, 2, 3)))
    h = c = ember.zeros(2, 4, dtype=ember.float64)
    outs = []
    for step in x:
        h, c = cell(step, (h, c))
        outs.append(h)
    out, (h_n, c_n) = layer(x)
    np.testing.assert_allclose(ember.stack(outs).detach().numpy(), out.detach().numpy(),
                               rtol=1e-12)
    np.testing.assert_allclose(c_n[0].detach().numpy(), c.detach().numpy(), rtol=1e-12)


# ------------------------------------------------------------------ errors


def _same_error(e_call, t_call):
    with pytest.raises(Exception) as t_err:
        t_call()
    with pytest.raises(Exception) as e_err:
        e_call()
    assert type(e_err.value) is type(t_err.value), (e_err.value, t_err.value)
    return str(e_err.value), str(t_err.value)


ERROR_CASES = [
    ("LSTM", (3, 4), lambda lib: (lib.randn(5, 2, 4),), None),
    ("LSTM", (3, 4), lambda lib: (lib.randn(5, 2, 3, 1),), None),
    ("LSTM", (3, 4), lambda lib: (lib.randn(5, 2, 3), (lib.randn(1, 3, 4),
                                                       lib.randn(1, 2, 4))), None),
    ("LSTM", (3, 4), lambda lib: (lib.randn(5, 2, 3), (lib.randn(1, 2, 4),
                                                       lib.randn(1, 2, 5))), None),
    ("LSTM", (3, 4), lambda lib: (lib.randn(5, 2, 3), (lib.randn(2, 4),
                                                       lib.randn(1, 2, 4))), None),
    ("LSTM", (3, 4), lambda lib: (lib.randn(5, 3), (lib.randn(1, 2, 4),
                                                    lib.randn(1, 2, 4))), None),
    ("LSTM", (3, 4), lambda lib: (lib.randn(5, 2, 3, dtype=lib.float64),), None),
    ("GRU", (3, 4), lambda lib: (lib.randn(5, 2, 3), lib.randn(2, 4)), None),
    ("GRU", (3, 4), lambda lib: (lib.randn(5, 3), lib.randn(1, 2, 4)), None),
    ("GRU", (3, 4), lambda lib: (lib.randn(5, 2, 3), lib.randn(1, 3, 4)), None),
    ("GRU", (3, 4), lambda lib: (lib.randn(0, 2, 3),), None),
    ("RNN", (3, 4), lambda lib: (lib.randn(5),), None),
    ("RNN", (3, 4, 2), lambda lib: (lib.randn(5, 2, 3), lib.randn(1, 2, 4)), None),
    ("LSTMCell", (4, 5), lambda lib: (lib.randn(3, 3),), None),
    ("LSTMCell", (4, 5), lambda lib: (lib.randn(3, 4), (lib.randn(2, 5), lib.randn(3, 5))),
     None),
    ("LSTMCell", (4, 5), lambda lib: (lib.randn(3, 4), (lib.randn(3, 6), lib.randn(3, 5))),
     None),
    ("LSTMCell", (4, 5), lambda lib: (lib.randn(3, 4), (lib.randn(3, 5), lib.randn(3, 6))),
     None),
    ("LSTMCell", (4, 5), lambda lib: (lib.randn(3, 4, 1),), None),
    ("GRUCell", (4, 5), lambda lib: (lib.randn(3, 4), lib.randn(3, 4)), None),
    ("GRUCell", (4, 5), lambda lib: (lib.randn(3, 4), lib.randn(2, 3, 5)), None),
    ("GRUCell", (4, 5), lambda lib: (lib.randn(4), lib.randn(3, 5)), None),
    ("RNNCell", (4, 5), lambda lib: (lib.randn(3, 4, dtype=lib.float64),), None),
]


@pytest.mark.parametrize("case", range(len(ERROR_CASES)))
def test_forward_errors_match_torch(case):
    cls, args, inputs, _ = ERROR_CASES[case]
    e_mod, t_mod = getattr(nn, cls)(*args), getattr(torch.nn, cls)(*args)
    e_msg, t_msg = _same_error(lambda: e_mod(*inputs(ember)), lambda: t_mod(*inputs(torch)))
    assert e_msg == t_msg


def test_unknown_cell_nonlinearity_raises_at_forward():
    e, t = nn.RNNCell(4, 5, nonlinearity="x"), torch.nn.RNNCell(4, 5, nonlinearity="x")
    e_msg, t_msg = _same_error(lambda: e(ember.randn(4)), lambda: t(torch.randn(4)))
    assert e_msg == t_msg


@pytest.mark.parametrize("cls,args,kwargs", [
    ("GRU", (3, 4), {"proj_size": 2}), ("RNN", (3, 4), {"proj_size": 2}),
    ("LSTM", (3, 4), {"proj_size": 4}), ("LSTM", (3, 4), {"proj_size": -1}),
    ("LSTM", (3, 4), {"dropout": 2}), ("LSTM", (3, 4), {"dropout": True}),
    ("RNN", (3, 4, 2, "sigmoid"), {}), ("LSTM", (3, 0), {}), ("LSTM", (3, 4.0), {}),
    ("LSTM", (0, 4), {}), ("LSTM", (3.0, 4), {}), ("LSTM", (3, 4, 0), {}),
    ("GRU", (3, 4), {"bias": 1}), ("GRU", (3, 4), {"batch_first": None}),
    ("RNN", (3, 4), {"nonlinearity": "gelu"}),
])
def test_constructor_errors_match_torch(cls, args, kwargs):
    e_msg, t_msg = _same_error(lambda: getattr(nn, cls)(*args, **kwargs),
                               lambda: getattr(torch.nn, cls)(*args, **kwargs))
    assert e_msg == t_msg


# ------------------------------------------------------------------ meta device


@pytest.mark.parametrize("cls,kw", MODES, ids=MODE_IDS)
def test_meta_device_shapes(cls, kw):
    e = getattr(nn, cls)(3, 4, num_layers=2, bidirectional=True, device="meta", **kw)
    t = getattr(torch.nn, cls)(3, 4, num_layers=2, bidirectional=True, device="meta", **kw)
    e_res = _flat(e(ember.empty(5, 2, 3, device="meta")))
    t_res = _flat(t(torch.empty(5, 2, 3, device="meta")))
    for a, b in zip(e_res, t_res, strict=True):
        assert a.device.type == "meta"
        assert tuple(a.shape) == tuple(b.shape) and a.dtype.name == str(b.dtype)[6:]


# ------------------------------------------------------------------ nn.utils.rnn


def _seqs(rng, lengths, rest=(2,)):
    arrays = [rng.standard_normal((n,) + rest) for n in lengths]
    return [_leaf(a) for a in arrays]


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted,lengths", [(True, [4, 4, 2, 1]), (False, [1, 4, 2, 3]),
                                                    (False, [3, 3, 3, 3]), (True, [2])])
@pytest.mark.parametrize("as_tensor", [False, True])
def test_pack_padded_and_pad_packed(batch_first, enforce_sorted, lengths, as_tensor):
    rng = np.random.default_rng(10)
    batch, steps = len(lengths), 5
    shape = (batch, steps, 2) if batch_first else (steps, batch, 2)
    xe, xt = _leaf(rng.standard_normal(shape))
    le = ember.tensor(lengths) if as_tensor else lengths
    lt = torch.tensor(lengths) if as_tensor else lengths
    pe = urnn.pack_padded_sequence(xe, le, batch_first=batch_first, enforce_sorted=enforce_sorted)
    pt = torch.nn.utils.rnn.pack_padded_sequence(xt, lt, batch_first=batch_first,
                                                 enforce_sorted=enforce_sorted)
    assert isinstance(pe, urnn.PackedSequence) and isinstance(pe, tuple)
    for a, b in zip(pe, pt, strict=True):
        if b is None:
            assert a is None
        else:
            assert_same(a, b)
    for kwargs in ({}, {"batch_first": not batch_first, "padding_value": -2.5},
                   {"batch_first": batch_first, "total_length": 7}):
        ye, le_out = urnn.pad_packed_sequence(pe, **kwargs)
        yt, lt_out = torch.nn.utils.rnn.pad_packed_sequence(pt, **kwargs)
        assert_same(le_out, lt_out)
        _compare([ye], [yt], [xe], [xt], rng)


def test_pack_and_pad_integer_data():
    x = np.arange(12).reshape(4, 3)
    pe = urnn.pack_padded_sequence(ember.tensor(x), [4, 2, 1])
    pt = torch.nn.utils.rnn.pack_padded_sequence(torch.from_numpy(x), [4, 2, 1])
    assert_same(pe.data, pt.data)
    assert_same(urnn.pad_packed_sequence(pe, padding_value=7),
                torch.nn.utils.rnn.pad_packed_sequence(pt, padding_value=7))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
@pytest.mark.parametrize("rest", [(), (2,), (2, 3)])
def test_pad_sequence(batch_first, padding_side, rest):
    rng = np.random.default_rng(11)
    seqs = _seqs(rng, [2, 4, 1, 4], rest)
    for value in (0.0, -1.5):
        ye = urnn.pad_sequence([e for e, _ in seqs], batch_first, value, padding_side)
        yt = torch.nn.utils.rnn.pad_sequence([t for _, t in seqs], batch_first, value,
                                             padding_side)
        _compare([ye], [yt], [e for e, _ in seqs], [t for _, t in seqs], rng)


def test_pad_sequence_dtypes_inputs_and_errors():
    ints = [np.array([1, 2, 3]), np.array([4])]
    assert_same(urnn.pad_sequence([ember.tensor(a) for a in ints], padding_value=2.5),
                torch.nn.utils.rnn.pad_sequence([torch.from_numpy(a) for a in ints],
                                                padding_value=2.5))
    mixed_e = [ember.ones(2, 2), ember.ones(1, 2, dtype=ember.float64)]
    mixed_t = [torch.ones(2, 2), torch.ones(1, 2, dtype=torch.float64)]
    assert_same(urnn.pad_sequence(mixed_e), torch.nn.utils.rnn.pad_sequence(mixed_t))
    # trailing dims broadcast to the first sequence's
    assert_same(urnn.pad_sequence([ember.ones(2, 3), ember.zeros(1, 1)]),
                torch.nn.utils.rnn.pad_sequence([torch.ones(2, 3), torch.zeros(1, 1)]))
    # a 2-D tensor is an iterable of rows
    x = np.arange(6.0).reshape(2, 3)
    assert_same(urnn.pad_sequence(ember.tensor(x)),
                torch.nn.utils.rnn.pad_sequence(torch.from_numpy(x)))
    assert_same(urnn.pad_sequence(iter([ember.ones(2)])),
                torch.nn.utils.rnn.pad_sequence(iter([torch.ones(2)])))
    for e_args, t_args in (
            (([],), ([],)), ((5,), (5,)),
            (([ember.ones(3, 2), ember.ones(2, 3)],), ([torch.ones(3, 2), torch.ones(2, 3)],)),
            (([ember.ones(3)], False, 0.0, "middle"), ([torch.ones(3)], False, 0.0, "middle"))):
        e_msg, t_msg = _same_error(lambda a=e_args: urnn.pad_sequence(*a),
                                   lambda a=t_args: torch.nn.utils.rnn.pad_sequence(*a))
        assert e_msg == t_msg


@pytest.mark.parametrize("batch_first", [False, True])
def test_unpad_sequence(batch_first):
    rng = np.random.default_rng(12)
    seqs = _seqs(rng, [3, 1, 4])
    lengths = [3, 1, 4]
    pe = urnn.pad_sequence([e for e, _ in seqs], batch_first)
    pt = torch.nn.utils.rnn.pad_sequence([t for _, t in seqs], batch_first)
    ue = urnn.unpad_sequence(pe, ember.tensor(lengths), batch_first)
    ut = torch.nn.utils.rnn.unpad_sequence(pt, torch.tensor(lengths), batch_first)
    _compare(ue, ut, [e for e, _ in seqs], [t for _, t in seqs], rng)


@pytest.mark.parametrize("enforce_sorted,lengths", [(True, [4, 2, 2]), (False, [1, 3, 2, 3])])
def test_pack_and_unpack_sequence(enforce_sorted, lengths):
    rng = np.random.default_rng(13)
    seqs = _seqs(rng, lengths)
    pe = urnn.pack_sequence([e for e, _ in seqs], enforce_sorted)
    pt = torch.nn.utils.rnn.pack_sequence([t for _, t in seqs], enforce_sorted)
    assert_same(pe.batch_sizes, pt.batch_sizes)
    _compare([pe.data], [pt.data], [e for e, _ in seqs], [t for _, t in seqs], rng)
    ue = urnn.unpack_sequence(pe)
    ut = torch.nn.utils.rnn.unpack_sequence(pt)
    _compare(ue, ut, [e for e, _ in seqs], [t for _, t in seqs], rng)


def test_packing_errors_match_torch():
    x = np.random.default_rng(14).standard_normal((4, 3, 2))
    cases = [([4, 2, 3], True, x), ([4, 3], True, x), ([4, 3, 0], True, x),
             ([4, 3, -1], False, x), ([[4, 3, 1]], True, x), ([0, 0, 0], True, x[:0])]
    for lengths, sort, data in cases:
        le = ember.tensor(lengths) if isinstance(lengths[0], list) else lengths
        lt = torch.tensor(lengths) if isinstance(lengths[0], list) else lengths
        e_msg, t_msg = _same_error(
            lambda: urnn.pack_padded_sequence(ember.tensor(data), le, enforce_sorted=sort),
            lambda: torch.nn.utils.rnn.pack_padded_sequence(torch.from_numpy(data), lt,
                                                            enforce_sorted=sort))
        assert e_msg == t_msg
    pe = urnn.pack_padded_sequence(ember.tensor(x), [4, 3, 1])
    pt = torch.nn.utils.rnn.pack_padded_sequence(torch.from_numpy(x), [4, 3, 1])
    e_msg, t_msg = _same_error(lambda: urnn.pad_packed_sequence(pe, total_length=3),
                               lambda: torch.nn.utils.rnn.pad_packed_sequence(pt, total_length=3))
    assert e_msg == t_msg
    with pytest.raises(ValueError, match="batch_sizes should always be on CPU"):
        urnn.PackedSequence(ember.ones(3), ember.ones(2, device="meta"))
    with pytest.raises(RuntimeError, match="exceeds"):  # torch reads out of bounds here
        urnn.pack_padded_sequence(ember.tensor(x), [5, 3, 1])
    e_msg, t_msg = _same_error(lambda: urnn.pack_sequence([]),
                               lambda: torch.nn.utils.rnn.pack_sequence([]))
    assert e_msg == t_msg


def test_packed_sequence_methods():
    pe = urnn.pack_sequence([ember.ones(3, 2), ember.ones(1, 2)], enforce_sorted=False)
    pt = torch.nn.utils.rnn.pack_sequence([torch.ones(3, 2), torch.ones(1, 2)],
                                          enforce_sorted=False)
    assert pe._fields == pt._fields
    assert pe.to(ember.float32) is pe
    for name in ("double", "half", "long", "int", "short", "char", "byte", "float"):
        moved_e, moved_t = getattr(pe, name)(), getattr(pt, name)()
        assert_same(moved_e.data, moved_t.data)
        assert moved_e.batch_sizes is pe.batch_sizes
        assert_same(moved_e.sorted_indices, moved_t.sorted_indices)
    d = pe.to(dtype=ember.float64)
    assert d.data.dtype is ember.float64 and isinstance(d, urnn.PackedSequence)
    assert pe.cpu().data.device.type == "cpu" and not pe.is_cuda and not pe.is_pinned()
    by_pair = urnn.PackedSequence((pe.data, pe.batch_sizes))
    assert by_pair.sorted_indices is None and by_pair.batch_sizes is pe.batch_sizes
    assert_same(urnn.invert_permutation(ember.tensor([2, 0, 3, 1])),
                torch.nn.utils.rnn.invert_permutation(torch.tensor([2, 0, 3, 1])))
    assert urnn.invert_permutation(None) is None
    data, sizes, sorted_idx, unsorted_idx = pe
    assert data is pe.data and sizes is pe.batch_sizes
    assert ember.nn.utils.rnn is urnn


def test_rnn_on_packed_sequence_from_pack_sequence_round_trip():
    rng = np.random.default_rng(15)
    seqs = [rng.standard_normal((n, 3)) for n in (2, 5, 3)]
    e, t = _pair("LSTM", 3, 4, batch_first=True)
    pe = urnn.pack_sequence([to_ember(torch.from_numpy(s)) for s in seqs], enforce_sorted=False)
    pt = torch.nn.utils.rnn.pack_sequence([torch.from_numpy(s) for s in seqs],
                                          enforce_sorted=False)
    out_e, (h_e, _) = e(pe)
    out_t, (h_t, _) = t(pt)
    ue = urnn.unpack_sequence(out_e)
    ut = torch.nn.utils.rnn.unpack_sequence(out_t)
    for a, b in zip(ue, ut, strict=True):
        assert_same(a, b)
    # the final hidden state of each sequence is its last output
    for i, seq in enumerate(ue):
        assert_same(h_e[0, i], to_torch(seq[-1]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e.flatten_parameters()


# ------------------------------------------------------------------ fused cell ops
#
# The pointwise part of an LSTM/GRU step is one op (forward: a kernel; backward: a fused kernel,
# or ember ops when the backward is itself recorded). Checked here directly against torch's
# composition of the same formulas, on extreme gate values too (saturated sigmoid/tanh).


def _torch_lstm_cell(xw, hw, c):
    i, f, g, o = (xw + hw).chunk(4, 1)
    c_new = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c_new.tanh(), c_new


def _torch_gru_cell(xw, hw, h, b=None):
    if b is not None:
        hw = hw + b
    x_r, x_z, x_n = xw.chunk(3, 1)
    h_r, h_z, h_n = hw.chunk(3, 1)
    r, z = (x_r + h_r).sigmoid(), (x_z + h_z).sigmoid()
    n = (x_n + r * h_n).tanh()
    return (1 - z) * n + z * h


def _ember_lstm_cell(xw, hw, c):
    return list(rnn_impl._lstm_cell_op(xw, hw, c)[:2])


def _ember_gru_cell(xw, hw, h, b=None):
    args = (xw, hw, h) if b is None else (xw, hw, h, b)
    return [rnn_impl._gru_cell_op(*args)[0]]


def _cell_arrays(kind, batch, hidden, rng, bias=True, extreme=False):
    gates = 4 if kind == "lstm" else 3
    scale = 12.0 if extreme else 1.0
    arrays = [scale * rng.standard_normal((batch, gates * hidden)),
              scale * rng.standard_normal((batch, gates * hidden)),
              rng.standard_normal((batch, hidden))]
    if kind == "gru" and bias:
        arrays.append(rng.standard_normal(3 * hidden))
    return arrays


def _as_leaves(arrays, dtype, transposed=False):
    """ember and torch leaves; ``transposed`` makes the 2-D ones non-contiguous views."""
    e_leaves, t_leaves, e_in, t_in = [], [], [], []
    for a in arrays:
        a = a.astype(dtype)
        if transposed and a.ndim == 2:
            e, t = _leaf(np.ascontiguousarray(a.T))
            e_leaves.append(e)
            t_leaves.append(t)
            e_in.append(e.t())
            t_in.append(t.t())
        else:
            e, t = _leaf(a)
            e_leaves.append(e)
            t_leaves.append(t)
            e_in.append(e)
            t_in.append(t)
    return e_leaves, t_leaves, e_in, t_in


FUSED = [("lstm", True), ("gru", True), ("gru", False)]
FUSED_IDS = ["lstm", "gru", "gru_nobias"]


@pytest.mark.parametrize("kind,bias", FUSED, ids=FUSED_IDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("batch,hidden", [(3, 4), (1, 1), (0, 3), (6, 5)])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("extreme", [False, True])
def test_fused_cell_op_values_and_gradients(kind, bias, dtype, batch, hidden, transposed,
                                            extreme):
    rng = np.random.default_rng(batch * 10 + hidden)
    arrays = _cell_arrays(kind, batch, hidden, rng, bias, extreme)
    e_leaves, t_leaves, e_in, t_in = _as_leaves(arrays, dtype, transposed)
    e_fn, t_fn = ((_ember_lstm_cell, _torch_lstm_cell) if kind == "lstm"
                  else (_ember_gru_cell, lambda *a: [_torch_gru_cell(*a)]))
    e_outs, t_outs = e_fn(*e_in), list(t_fn(*t_in))
    tol = {} if dtype == np.float64 else {"rtol": 1e-5, "atol": 2e-6}
    _compare(e_outs, t_outs, e_leaves, t_leaves, rng, **tol)
    assert e_outs[0].grad_fn.name() == ("LstmCellBackward0" if kind == "lstm"
                                        else "GruCellBackward0")


@pytest.mark.parametrize("which", [0, 1])
def test_fused_lstm_cell_gradient_of_one_output(which):
    # the other output's gradient is missing (zeros): h only, or c only
    rng = np.random.default_rng(11)
    e_leaves, t_leaves, e_in, t_in = _as_leaves(_cell_arrays("lstm", 4, 3, rng), np.float64)
    e_out = _ember_lstm_cell(*e_in)[which]
    t_out = _torch_lstm_cell(*t_in)[which]
    _compare([e_out], [t_out], e_leaves, t_leaves, rng)


@pytest.mark.parametrize("kind,bias", FUSED, ids=FUSED_IDS)
def test_fused_cell_op_double_backward(kind, bias):
    rng = np.random.default_rng(12)
    e_leaves, t_leaves, e_in, t_in = _as_leaves(_cell_arrays(kind, 3, 4, rng, bias),
                                                np.float64)
    e_fn, t_fn = ((_ember_lstm_cell, _torch_lstm_cell) if kind == "lstm"
                  else (_ember_gru_cell, lambda *a: [_torch_gru_cell(*a)]))
    e_outs, t_outs = e_fn(*e_in), list(t_fn(*t_in))
    cots = [rng.standard_normal(tuple(t.shape)) for t in t_outs]
    # the cotangents require grad too: the gradient is differentiable in them as well
    e_cots = [ember.tensor(c).requires_grad_() for c in cots]
    t_cots = [torch.from_numpy(c.copy()).requires_grad_() for c in cots]
    e_g = ember.autograd.grad(sum((o * c).sum() for o, c in zip(e_outs, e_cots)), e_leaves,
                              create_graph=True)
    t_g = torch.autograd.grad(sum((o * c).sum() for o, c in zip(t_outs, t_cots)), t_leaves,
                              create_graph=True)
    for a, b in zip(e_g, t_g, strict=True):
        assert_same(a, b)
    vs = [rng.standard_normal(tuple(g.shape)) for g in t_g]
    e_gg = ember.autograd.grad(sum((g * ember.tensor(v)).sum() for g, v in zip(e_g, vs)),
                               e_leaves + e_cots)
    t_gg = torch.autograd.grad(sum((g * torch.from_numpy(v)).sum() for g, v in zip(t_g, vs)),
                               t_leaves + t_cots)
    for a, b in zip(e_gg, t_gg, strict=True):
        assert_same(a, b)


@pytest.mark.parametrize("kind,bias", FUSED, ids=FUSED_IDS)
@pytest.mark.parametrize("dtype", [ember.float32, ember.float16, ember.bfloat16])
def test_fused_cell_ops_on_meta(kind, bias, dtype):
    batch, hidden = 3, 5
    gates = 4 if kind == "lstm" else 3
    xw = ember.empty(batch, gates * hidden, device="meta", dtype=dtype)
    hw = ember.empty(batch, gates * hidden, device="meta", dtype=dtype)
    state = ember.empty(batch, hidden, device="meta", dtype=dtype)
    t_xw = torch.empty(batch, gates * hidden, device="meta", dtype=torch_dtype(dtype))
    t_state = torch.empty(batch, hidden, device="meta", dtype=torch_dtype(dtype))
    if kind == "lstm":
        outs = rnn_impl._lstm_cell_op(xw, hw, state)[:2]
        expected = _torch_lstm_cell(t_xw, t_xw, t_state)
        grads = rnn_impl._lstm_cell_backward_op(state, state, state, rnn_impl._lstm_cell_op(
            xw, hw, state)[2])
        expected_grads = (t_xw, t_state)
    else:
        extra = (ember.empty(gates * hidden, device="meta", dtype=dtype),) if bias else ()
        ws = rnn_impl._gru_cell_op(xw, hw, state, *extra)[1]
        outs = rnn_impl._gru_cell_op(xw, hw, state, *extra)[:1]
        expected = (_torch_gru_cell(t_xw, t_xw, t_state),)
        grads = rnn_impl._gru_cell_backward_op(state, state, ws)
        expected_grads = (t_xw, t_xw, t_state)
    for a, b in zip(tuple(outs) + tuple(grads), tuple(expected) + tuple(expected_grads),
                    strict=True):
        assert a.device.type == "meta"
        assert tuple(a.shape) == tuple(b.shape) and a.dtype.name == str(b.dtype)[6:]


@pytest.mark.parametrize("cls,kw", [("LSTM", {}), ("GRU", {}), ("GRU", {"bias": False}),
                                    ("LSTM", {"bias": False})],
                         ids=["lstm", "gru", "gru_nobias", "lstm_nobias"])
def test_layer_double_backward_without_projection(cls, kw):
    rng = np.random.default_rng(13)
    e, t = _pair(cls, 2, 3, num_layers=2, bidirectional=True, **kw)
    xe, xt = _leaf(rng.standard_normal((3, 2, 2)))
    e_out, (e_h, *_) = _flat(e(xe))[0], _flat(e(xe))[1:]
    t_out, (t_h, *_) = _flat(t(xt))[0], _flat(t(xt))[1:]
    cot = rng.standard_normal(tuple(t_out.shape))
    cot_h = rng.standard_normal(tuple(t_h.shape))
    (ge,) = ember.autograd.grad((e_out * ember.tensor(cot)).sum()
                                + (e_h * ember.tensor(cot_h)).sum(), [xe], create_graph=True)
    (gt,) = torch.autograd.grad((t_out * torch.from_numpy(cot)).sum()
                                + (t_h * torch.from_numpy(cot_h)).sum(), [xt], create_graph=True)
    assert_same(ge, gt)
    v = rng.standard_normal(tuple(gt.shape))
    e_gg = ember.autograd.grad((ge * ember.tensor(v)).sum(), [xe] + list(e.parameters()))
    t_gg = torch.autograd.grad((gt * torch.from_numpy(v)).sum(), [xt] + list(t.parameters()))
    for a, b in zip(e_gg, t_gg, strict=True):
        assert_same(a, b)


@pytest.mark.parametrize("cls,kw", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("frozen", ["weights", "input"])
def test_layer_gradients_with_frozen_parts(cls, kw, frozen):
    # only part of the inputs require grad: the fused ops skip the others' gradients
    rng = np.random.default_rng(14)
    e, t = _pair(cls, 3, 4, num_layers=2, **kw)
    x = rng.standard_normal((5, 2, 3))
    if frozen == "weights":
        e.requires_grad_(False)
        t.requires_grad_(False)
        xe, xt = _leaf(x)
        e_wrt, t_wrt = [xe], [xt]
    else:
        xe, xt = ember.tensor(x), torch.from_numpy(x)
        e_wrt, t_wrt = list(e.parameters()), list(t.parameters())
    _compare(_flat(e(xe)), _flat(t(xt)), e_wrt, t_wrt, rng)


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16])
def test_low_precision_layers_and_cells(cls, dtype):
    # computed in float32 inside the fused ops and rounded once, as torch's CPU kernels do
    rng = np.random.default_rng(15)
    e, t = _pair(cls, 3, 4, dtype=ember.float32)
    e.to(dtype)
    t.to(torch_dtype(dtype))
    shape = (2, 3) if cls.endswith("Cell") else (5, 2, 3)
    x = rng.standard_normal(shape).astype(np.float32)
    xe = ember.tensor(x).to(dtype).requires_grad_()
    xt = torch.from_numpy(x).to(torch_dtype(dtype)).requires_grad_()
    e_res, t_res = e(xe), t(xt)
    e_outs = _flat(e_res) if not cls.endswith("Cell") else \
        (list(e_res) if isinstance(e_res, tuple) else [e_res])
    t_outs = _flat(t_res) if not cls.endswith("Cell") else \
        (list(t_res) if isinstance(t_res, tuple) else [t_res])
    tol = {"rtol": 2e-2, "atol": 2e-2} if dtype is ember.bfloat16 else \
        {"rtol": 2e-3, "atol": 2e-3}
    for a, b in zip(e_outs, t_outs, strict=True):
        assert_same(a, b, **tol)
    e_outs[0].float().sum().backward()
    t_outs[0].float().sum().backward()
    assert_same(xe.grad, xt.grad, **tol)
    assert_same(e.weight_hh_l0.grad if not cls.endswith("Cell") else e.weight_hh.grad,
                t.weight_hh_l0.grad if not cls.endswith("Cell") else t.weight_hh.grad,
                rtol=tol["rtol"] * 3, atol=tol["atol"] * 3)


def test_lstm_cell_with_cell_state_of_wider_dtype_promotes_as_torch():
    # a float64 c with float32 weights: torch promotes c' (and h') to float64
    rng = np.random.default_rng(16)
    e, t = _pair("LSTMCell", 3, 4, dtype=ember.float32)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    h = rng.standard_normal((2, 4)).astype(np.float32)
    c = rng.standard_normal((2, 4))
    e_res = e(ember.tensor(x), (ember.tensor(h), ember.tensor(c)))
    t_res = t(torch.from_numpy(x), (torch.from_numpy(h), torch.from_numpy(c)))
    for a, b in zip(e_res, t_res, strict=True):
        assert_same(a, b, rtol=1e-5, atol=1e-6)


def _graph_names(tensor):
    """The names of every node reachable from ``tensor.grad_fn``."""
    seen, stack, names = set(), [tensor.grad_fn], []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.append(node.name())
        stack.extend(n for n, _ in node.next_functions)
    return names


@pytest.mark.parametrize("cls,fused,count", [("LSTM", "MkldnnRnnLayerBackward0", 1),
                                             ("GRU", "GruCellBackward0", 3)])
def test_layer_records_one_fused_node_per_step(cls, fused, count):
    # GRU: one recurrent product and one fused node per step, not the dozen ops of the
    # composition; LSTM: one node for the whole layer, as torch's CPU LSTM records
    out = getattr(nn, cls)(3, 4)(ember.randn(3, 2, 3))[0]
    names = _graph_names(out)
    assert names.count(fused) == count
    assert "SigmoidBackward0" not in names and "TanhBackward0" not in names
    if cls == "LSTM":
        reference = torch.nn.LSTM(3, 4)(torch.randn(3, 2, 3))[0]
        assert reference.grad_fn.name() == fused


@pytest.mark.parametrize("cls,kw", [c for c in CELLS if c[1].get("nonlinearity") != "relu"],
                         ids=[i for i in CELL_IDS if i != "rnn_relu"])
def test_cells_forward_mode_ad_matches_torch_jvp(cls, kw):
    # (relu has no forward-mode rule in ember's pointwise ops yet, so the relu cell is left out)
    import ember.autograd.forward_ad as fwAD

    rng = np.random.default_rng(17)
    e, t = _pair(cls, 3, 4, **kw)
    n = 2 if cls == "LSTMCell" else 1
    primals = [rng.standard_normal((2, 3))] + [rng.standard_normal((2, 4)) for _ in range(n)]
    tangents = [rng.standard_normal(p.shape) for p in primals]

    def t_fn(x, *state):
        res = t(x, tuple(state) if n == 2 else state[0])
        return res if isinstance(res, tuple) else (res,)

    _, t_tangents = torch.autograd.functional.jvp(
        t_fn, tuple(torch.from_numpy(p) for p in primals),
        tuple(torch.from_numpy(v) for v in tangents))
    with fwAD.dual_level():
        duals = [fwAD.make_dual(ember.tensor(p), ember.tensor(v))
                 for p, v in zip(primals, tangents)]
        res = e(duals[0], tuple(duals[1:]) if n == 2 else duals[1])
        res = res if isinstance(res, tuple) else (res,)
        e_tangents = [fwAD.unpack_dual(r).tangent for r in res]
    for a, b in zip(e_tangents, t_tangents, strict=True):
        assert_same(a, b)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_lstm_whole_layer_op_matches_torch_on_a_long_sequence(bidirectional):
    # the whole-layer op (one node per layer; one GEMM for W_hh's gradient) over 35 steps,
    # with states and weights requiring grad, and its create_graph path (a replay of the steps)
    rng = np.random.default_rng(23)
    e, t = _pair("LSTM", 5, 6, num_layers=2, bidirectional=bidirectional)
    xe, xt = _leaf(rng.standard_normal((35, 3, 5)))
    states = [_leaf(s) for s in _states("LSTM", 2, 1 + bidirectional, 3, 6, None, rng)]
    e_res = e(xe, _hx("LSTM", [s for s, _ in states]))
    t_res = t(xt, _hx("LSTM", [s for _, s in states]))
    _compare(_flat(e_res), _flat(t_res), [xe] + [s for s, _ in states] + list(e.parameters()),
             [xt] + [s for _, s in states] + list(t.parameters()), rng)
    h0e, h0t = states[0]
    cot = rng.standard_normal((35, 3, 6 * (1 + bidirectional)))
    (ge,) = ember.autograd.grad((e(xe, _hx("LSTM", [s for s, _ in states]))[0]
                                 * ember.tensor(cot)).sum(), [h0e], create_graph=True)
    (gt,) = torch.autograd.grad((t(xt, _hx("LSTM", [s for _, s in states]))[0]
                                 * torch.from_numpy(cot)).sum(), [h0t], create_graph=True)
    np.testing.assert_allclose(ge.detach().numpy(), gt.detach().numpy(), rtol=1e-6, atol=1e-9)
    (gge,) = ember.autograd.grad(ge.square().sum(), [xe])
    (ggt,) = torch.autograd.grad(gt.square().sum(), [xt])
    np.testing.assert_allclose(gge.numpy(), ggt.numpy(), rtol=1e-6, atol=1e-9)
