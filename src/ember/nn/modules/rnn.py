"""Recurrent layers: RNN (tanh/relu), LSTM (with projections), GRU and their single-step cells.

Every layer and direction runs the same loop. The input projection of the whole sequence is
one matmul up front (``X @ W_ih^T + b_ih`` for all time steps at once), split into per-step
views; the recurrence then does one ``h @ W_hh^T`` per step plus the gate arithmetic. For LSTM
and GRU the gate arithmetic of a step is one fused op (kernel, meta rule, derivative, jvp), so a
step records two nodes instead of a dozen; the derivatives are ember ops when the backward is
itself recorded, so double backward works as for any composition.

Inputs are handled in packed layout: a padded ``(T, B, *)`` batch is reshaped to ``(T*B, *)``
with every step of batch size B, a ``PackedSequence`` is used as it is. At a step where the batch
shrinks (sequences that ended), the rows that left are the final hidden states of those
sequences; the reverse direction starts each sequence from its h0 row when it enters.

The fused ops and the loop over layers and steps (``_rnn``) live in ``_rnn_kernels.py``; this
module holds the layers and cells.
"""

from __future__ import annotations

import math
import numbers
import warnings

from ...ops.creation import empty, zeros
from .. import init
from .._functional.rnn import (
    _traced_size,
    _traced_squeeze,
    gru,
    lstm,
    rnn_relu,
    rnn_tanh,
)
from ..parameter import Parameter
from ..utils.rnn import PackedSequence, max_batch_size
from ._rnn_kernels import (  # noqa: F401  (moved to _rnn_kernels.py; importers use this path)
    _gru_cell_backward_op,
    _gru_cell_op,
    _lstm_cell_backward_op,
    _lstm_cell_op,
    _project,
    _rnn,
    _step_gru,
    _step_lstm,
    _step_relu,
    _step_tanh,
)
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


# ------------------------------------------------------------------ modules


_FUNCTIONS = {"LSTM": lstm, "GRU": gru, "RNN_TANH": rnn_tanh, "RNN_RELU": rnn_relu}


class RNNBase(Module):
    """Base class of RNN, LSTM and GRU: parameters, checks and the shared forward.

    ``mode`` is one of 'RNN_TANH', 'RNN_RELU', 'LSTM', 'GRU'. Parameters are named as in
    torch (``weight_ih_l{k}``, ``weight_hh_l{k}``, ``bias_ih_l{k}``, ``bias_hh_l{k}``,
    ``weight_hr_l{k}``, with ``_reverse`` for the backward direction) and start uniform in
    ``+-1/sqrt(hidden_size)``.

    Example::

        >>> ember.nn.RNNBase("GRU", 3, 4).weight_ih_l0.shape
        ember.Size([12, 3])
    """

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0, device=None,
                 dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=3)
        for name, value, kind in (("bias", bias, bool), ("batch_first", batch_first, bool),
                                  ("input_size", input_size, int)):
            if not isinstance(value, kind):
                raise TypeError(f"{name} should be of type {kind.__name__}, got: "
                                f"{type(value).__name__}")
            if name == "input_size" and value <= 0:
                raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: "
                            f"{type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        gates = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
        if mode not in gates:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = gates[mode] * hidden_size
        dirs = 2 if bidirectional else 1
        real_hidden = proj_size if proj_size > 0 else hidden_size
        factory = {"device": device, "dtype": dtype}
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(dirs):
                layer_input = input_size if layer == 0 else real_hidden * dirs
                shapes = [("weight_ih", (gate_size, layer_input)),
                          ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                suffix = "_reverse" if direction == 1 else ""
                names = []
                for stem, shape in shapes:
                    name = f"{stem}_l{layer}{suffix}"
                    setattr(self, name, Parameter(empty(shape, **factory)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, name, None) for name in self._flat_weights_names]

    def __getstate__(self):
        # torch's RNN keeps its weights in a ``_flat_weights`` list that an unpickled torch
        # module reads; ember derives the list, so it is written out for torch to find
        state = super().__getstate__()
        state["_flat_weights"] = self._flat_weights
        return state

    @property
    def all_weights(self):
        """The parameters of each layer and direction, as lists."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self):
        """No-op (cuDNN's flat weight buffer does not exist in ember)."""

    def reset_parameters(self):
        """Re-draw every parameter uniformly from ``+-1/sqrt(hidden_size)``."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # ---------------------------------------------------------------- checks (torch's)

    def check_input(self, input, batch_sizes):
        weight_dtype = self._flat_weights[0].dtype
        if input.dtype != weight_dtype:
            raise ValueError(f"RNN input dtype ({_name(input.dtype)}) does not match weight "
                             f"dtype ({_name(weight_dtype)}). Convert input: "
                             f"input.to({_name(weight_dtype)}), or convert model: "
                             f"model.to({_name(input.dtype)})")
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    def get_expected_hidden_size(self, input, batch_sizes):
        if batch_sizes is not None:
            batch = int(batch_sizes.numpy()[0])
        else:
            batch = input.size(0) if self.batch_first else input.size(1)
        dirs = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * dirs, batch, size)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return hx.index_select(1, permutation)

    # ---------------------------------------------------------------- forward

    def _zeros_state(self, input, batch, size):
        """The zero initial state; ``batch`` may be a traced size (``_traced_size``), which
        ``new_zeros`` records so that a trace starts from zeros of the new batch size."""
        dirs = 2 if self.bidirectional else 1
        return input.new_zeros((self.num_layers * dirs, batch, size))

    def _prepare(self, input, hx, name):
        """Unpack/unsqueeze the input; return (data, batch_sizes, perms, hx, unbatched...)."""
        if isinstance(input, PackedSequence):
            data, batch_sizes, sorted_indices, unsorted_indices = input
            return data, batch_sizes, sorted_indices, unsorted_indices, None
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                             f"{'tensor ' if name == 'RNN' else ''}instead")
        batch_dim = None if input.dim() == 3 else (0 if self.batch_first else 1)
        if batch_dim is not None:
            input = input.unsqueeze(batch_dim)
        return input, None, None, None, batch_dim

    def _run(self, input, batch_sizes, hx, cx):
        """The recurrence on a checked ``(T, B, *)``/``(B, T, *)`` input or packed data, through
        the public function (``ember.lstm``...) that a size-recording trace records whole."""
        function = _FUNCTIONS[self.mode]
        hidden = (hx, cx) if self.mode == "LSTM" else hx
        flags = (self.bias, self.num_layers, self.dropout, self.training, self.bidirectional)
        if batch_sizes is None:
            results = function(input, hidden, self._flat_weights, *flags, self.batch_first)
        else:
            results = function(input, batch_sizes, hidden, self._flat_weights, *flags)
        return results if self.mode == "LSTM" else (*results, None)

    def _finish(self, orig, out, hidden, batch_sizes, sorted_indices, unsorted_indices,
                batch_dim):
        if isinstance(orig, PackedSequence):
            return PackedSequence(out, batch_sizes, sorted_indices, unsorted_indices), hidden
        if batch_dim is not None:
            out = _traced_squeeze(out, batch_dim)  # its length follows a trace's input
        return out, hidden

    def _forward_single_state(self, input, hx, name):
        orig = input
        input, batch_sizes, sorted_indices, unsorted_indices, batch_dim = self._prepare(
            input, hx, name)
        if batch_sizes is not None:
            batch = max_batch_size(batch_sizes)
        else:
            if hx is not None:
                if batch_dim is not None:
                    if hx.dim() != 2:
                        raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but "
                                           f"got {hx.dim()}-D tensor")
                    hx = hx.unsqueeze(1)
                elif hx.dim() != 3:
                    raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                                       f"{hx.dim()}-D tensor")
            batch = _traced_size(input, 0 if self.batch_first else 1)
        if hx is None:
            hx = self._zeros_state(input, batch, self.hidden_size)
        else:
            hx = self.permute_hidden(hx, sorted_indices)
        self.check_forward_args(input, hx, batch_sizes)
        out, h, _ = self._run(input, batch_sizes, hx, None)
        h = self.permute_hidden(h, unsorted_indices)
        if batch_dim is not None:
            h = h.squeeze(1)
        return self._finish(orig, out, h, batch_sizes, sorted_indices, unsorted_indices,
                            batch_dim)


def _name(dtype):
    return f"torch.{dtype.name}"


class RNN(RNNBase):
    """Elman RNN: ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` with act tanh or relu.

    Signature as torch: ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh',
    bias=True, batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None)``.
    ``forward(input, hx=None)`` returns ``(output, h_n)``; input may be a PackedSequence.

    Example::

        >>> rnn = ember.nn.RNN(10, 20, 2)
        >>> out, h_n = rnn(ember.randn(5, 3, 10), ember.randn(2, 3, 20))
        >>> out.shape, h_n.shape
        (ember.Size([5, 3, 20]), ember.Size([2, 3, 20]))
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' "
                             "or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward_single_state(input, hx, "RNN")


class GRU(RNNBase):
    """Gated recurrent unit (gates r, z, n in that order in the weights)::

        r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)
        z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
        n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
        h' = (1 - z) * n + z * h

    ``forward(input, hx=None)`` returns ``(output, h_n)``.

    Example::

        >>> gru = ember.nn.GRU(10, 20, batch_first=True)
        >>> gru(ember.randn(3, 5, 10))[0].shape
        ember.Size([3, 5, 20])
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward_single_state(input, hx, "GRU")


class LSTM(RNNBase):
    """Long short-term memory (gates i, f, g, o in that order in the weights)::

        c' = sigmoid(f) * c + sigmoid(i) * tanh(g)
        h' = sigmoid(o) * tanh(c')          (then h' @ W_hr^T when proj_size > 0)

    ``forward(input, hx=None)`` with ``hx = (h_0, c_0)`` returns ``(output, (h_n, c_n))``.

    Example::

        >>> lstm = ember.nn.LSTM(10, 20, 2, proj_size=5)
        >>> out, (h, c) = lstm(ember.randn(5, 3, 10))
        >>> out.shape, h.shape, c.shape
        (ember.Size([5, 3, 5]), ember.Size([2, 3, 5]), ember.Size([2, 3, 20]))
    """

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):
        if batch_sizes is not None:
            batch = int(batch_sizes.numpy()[0])
        else:
            batch = input.size(0) if self.batch_first else input.size(1)
        dirs = 2 if self.bidirectional else 1
        return (self.num_layers * dirs, batch, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)

    def forward(self, input, hx=None):
        orig = input
        input, batch_sizes, sorted_indices, unsorted_indices, batch_dim = self._prepare(
            input, hx, "LSTM")
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if batch_sizes is not None:
            batch = max_batch_size(batch_sizes)
        else:
            batch = _traced_size(input, 0 if self.batch_first else 1)
        if hx is None:
            hx = (self._zeros_state(input, batch, real_hidden),
                  self._zeros_state(input, batch, self.hidden_size))
        else:
            if batch_sizes is None:
                if batch_dim is None:
                    if hx[0].dim() != 3 or hx[1].dim() != 3:
                        raise RuntimeError(f"For batched 3-D input, hx and cx should also be "
                                           f"3-D but got ({hx[0].dim()}-D, {hx[1].dim()}-D) "
                                           "tensors")
                else:
                    if hx[0].dim() != 2 or hx[1].dim() != 2:
                        raise RuntimeError(f"For unbatched 2-D input, hx and cx should also be "
                                           f"2-D but got ({hx[0].dim()}-D, {hx[1].dim()}-D) "
                                           "tensors")
                    hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
            hx = self.permute_hidden(tuple(hx), sorted_indices)
        self.check_forward_args(input, hx, batch_sizes)
        out, h, c = self._run(input, batch_sizes, hx[0], hx[1])
        hidden = self.permute_hidden((h, c), unsorted_indices)
        if batch_dim is not None:
            hidden = (hidden[0].squeeze(1), hidden[1].squeeze(1))
        return self._finish(orig, out, hidden, batch_sizes, sorted_indices, unsorted_indices,
                            batch_dim)


# ------------------------------------------------------------------ cells


class RNNCellBase(Module):
    """Base class of the single-step cells: ``weight_ih``, ``weight_hh``, ``bias_ih``,
    ``bias_hh``, uniform in ``+-1/sqrt(hidden_size)``.

    Example::

        >>> ember.nn.RNNCellBase(3, 4, True, 2).weight_hh.shape
        ember.Size([8, 4])
    """

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), **factory))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), **factory))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, **factory))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, **factory))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += f", bias={self.bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self):
        """Re-draw every parameter uniformly from ``+-1/sqrt(hidden_size)``."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _check_dims(self, input, states, name, label):
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D "
                             "instead")
        for i, s in enumerate(states):
            if s is not None and s.dim() not in (1, 2):
                what = label if len(states) == 1 else f"hx[{i}]"
                raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {s.dim()}D "
                                 "instead")

    def _step(self, step, input, states):
        """Check sizes as torch's cells do, then one step of ``step``."""
        # the sizes read once from each shape (size() calls were a tenth of a small step)
        batch, features = input.shape
        if features != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {features} "
                               f"expected {self.input_size}")
        for i, s in enumerate(states):
            if s is None:
                continue
            shape = s.shape  # (a 1-D state of a batched input: size(1) raises torch's error)
            if (shape[0] if len(shape) == 2 else s.size(0)) != batch:
                raise RuntimeError(f"Input batch size {batch} doesn't match hidden{i} "
                                   f"batch size {s.size(0)}")
            if (shape[1] if len(shape) == 2 else s.size(1)) != self.hidden_size:
                raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {s.size(1)}, "
                                   f"expected {self.hidden_size}")
        w_ih, b_hh = self.weight_ih, self.bias_hh  # (attributes: a parametrization may own them)
        _check_same_dtype(input, w_ih)
        xw = _project("GRU" if step is _step_gru else "", input, w_ih, self.bias_ih, b_hh)
        c = states[1] if len(states) > 1 else None
        return step(xw, states[0], c, (None, self.weight_hh), b_hh, None)


def _check_same_dtype(input, weight):
    if input.dtype != weight.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{_short(input.dtype)} and {_short(weight.dtype)}")


def _short(dtype):
    from ...ops._registry import _short_name

    return _short_name(dtype)


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``.

    Example::

        >>> cell = ember.nn.RNNCell(10, 20)
        >>> cell(ember.randn(3, 10), ember.randn(3, 20)).shape
        ember.Size([3, 20])
    """

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device,
                         dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        self._check_dims(input, (hx,), "RNNCell", "hidden")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
        elif not batched:
            hx = hx.unsqueeze(0)
        if self.nonlinearity == "tanh":
            step = _step_tanh
        elif self.nonlinearity == "relu":
            step = _step_relu
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        h, _ = self._step(step, input, (hx,))
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: returns ``(h', c')`` from ``input`` and ``hx = (h, c)``.

    Example::

        >>> cell = ember.nn.LSTMCell(10, 20)
        >>> h, c = cell(ember.randn(3, 10))
        >>> h.shape, c.shape
        (ember.Size([3, 20]), ember.Size([3, 20]))
    """

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device,
                         dtype=dtype)

    def forward(self, input, hx=None):
        self._check_dims(input, tuple(hx) if hx is not None else (), "LSTMCell", "hx")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            z = zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
            hx = (z, z)
        elif not batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        h, c = self._step(_step_lstm, input, tuple(hx))
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: returns ``h'`` from ``input`` and ``hx``.

    Example::

        >>> cell = ember.nn.GRUCell(10, 20)
        >>> cell(ember.randn(10)).shape
        ember.Size([20])
    """

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device,
                         dtype=dtype)

    def forward(self, input, hx=None):
        self._check_dims(input, (hx,), "GRUCell", "hidden")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
        elif not batched:
            hx = hx.unsqueeze(0)
        h, _ = self._step(_step_gru, input, (hx,))
        return h if batched else h.squeeze(0)

