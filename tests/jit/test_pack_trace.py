"""pack_padded_sequence -> nn.LSTM/GRU -> pad_packed_sequence traced with ember.jit.trace
replays at other lengths and batch sizes, as torch.jit.trace records one
aten::_pack_padded_sequence / aten::_pad_packed_sequence each: traced on one batch, run on
batches of other sizes and lengths, outputs equal to torch's traced module with the same
weights; sorted and unsorted lengths, batch_first, after save/load."""
import io
import warnings

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same

INPUT, HIDDEN = 4, 3
TRACED_LENGTHS = [5, 2, 4]
OTHER_LENGTHS = ([3, 1], [6, 6, 2, 5, 1], [2])


def _packing_model(fw, cls, batch_first, enforce_sorted):
    """pack -> recurrent layer -> pad, written once for framework ``fw``."""
    utils = fw.nn.utils.rnn

    class Packed(fw.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = getattr(fw.nn, cls)(INPUT, HIDDEN, batch_first=batch_first)

        def forward(self, x, lengths):
            packed = utils.pack_padded_sequence(x, lengths, batch_first=batch_first,
                                                enforce_sorted=enforce_sorted)
            output, hidden = self.rnn(packed)
            padded, out_lengths = utils.pad_packed_sequence(output, batch_first=batch_first)
            state = hidden[0] if cls == "LSTM" else hidden
            return padded, out_lengths, state

    return Packed().eval()


def _pair(cls, batch_first, enforce_sorted):
    torch.manual_seed(0)
    t_model = _packing_model(torch, cls, batch_first, enforce_sorted)
    e_model = _packing_model(ember, cls, batch_first, enforce_sorted)
    e_model.load_state_dict({k: ember.tensor(v.detach().numpy().copy())
                             for k, v in t_model.state_dict().items()})
    return e_model, t_model


def _batch(lengths, batch_first, sort):
    lengths = sorted(lengths, reverse=True) if sort else list(lengths)
    steps, batch = max(lengths), len(lengths)
    shape = (batch, steps, INPUT) if batch_first else (steps, batch, INPUT)
    array = np.random.default_rng(sum(lengths)).standard_normal(shape).astype(np.float32)
    length_array = np.array(lengths, dtype=np.int64)
    return ((ember.tensor(array), ember.tensor(length_array)),
            (torch.from_numpy(array), torch.from_numpy(length_array)))


CASES = {
    "lstm_sorted": ("LSTM", False, True),
    "lstm_unsorted_batch_first": ("LSTM", True, False),
    "gru_unsorted": ("GRU", False, False),
}


@pytest.mark.parametrize("case", CASES)
def test_packed_trace_replays_at_other_lengths_as_torch(case):
    cls, batch_first, enforce_sorted = CASES[case]
    e_model, t_model = _pair(cls, batch_first, enforce_sorted)
    example, t_example = _batch(TRACED_LENGTHS, batch_first, enforce_sorted)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a baked size would warn TracerWarning
        traced = ember.jit.trace(e_model, example)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns about its own packing's lengths
        t_traced = torch.jit.trace(t_model, t_example)
    for lengths in [TRACED_LENGTHS, *OTHER_LENGTHS]:
        inputs, t_inputs = _batch(lengths, batch_first, enforce_sorted)
        expected = tuple(t.detach() for t in t_traced(*t_inputs))
        assert_same(traced(*inputs), expected, rtol=1e-5, atol=1e-6)
        assert_same(e_model(*inputs), expected, rtol=1e-5, atol=1e-6)


def test_packed_trace_records_one_call_per_packing_function():
    e_model, _ = _pair("LSTM", False, True)
    example, _ = _batch(TRACED_LENGTHS, False, True)
    text = str(ember.jit.trace(e_model, example).graph)
    assert text.count("pack_padded_tensors") == 1
    assert text.count("pad_packed_tensors") == 1


def test_packed_trace_survives_save_and_load():
    e_model, t_model = _pair("GRU", True, False)
    example, _ = _batch(TRACED_LENGTHS, True, False)
    buffer = io.BytesIO()
    ember.jit.save(ember.jit.trace(e_model, example), buffer)
    buffer.seek(0)
    loaded = ember.jit.load(buffer)
    inputs, t_inputs = _batch(OTHER_LENGTHS[1], True, False)
    assert_same(loaded(*inputs), tuple(t.detach() for t in t_model(*t_inputs)),
                rtol=1e-5, atol=1e-6)


def test_packed_trace_gradients_follow_the_new_input():
    """The replay stays differentiable: the input's gradient equals torch's eager one."""
    e_model, t_model = _pair("LSTM", False, False)
    example, _ = _batch(TRACED_LENGTHS, False, False)
    traced = ember.jit.trace(e_model, example)
    (x, lengths), (t_x, t_lengths) = _batch(OTHER_LENGTHS[1], False, False)
    x.requires_grad_(True)
    t_x.requires_grad_(True)
    traced(x, lengths)[0].sum().backward()
    t_model(t_x, t_lengths)[0].sum().backward()
    assert_same(x.grad, t_x.grad, rtol=1e-5, atol=1e-6)
