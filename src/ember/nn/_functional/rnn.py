"""The whole recurrence of nn.RNN / nn.LSTM / nn.GRU as one function (torch's ``torch.lstm``,
``torch.gru``, ``torch.rnn_tanh``, ``torch.rnn_relu``).

Each function takes the input, the initial state, the flat list of weights and the layer
flags, and runs every layer and direction (the kernels live in ``nn/modules/rnn.py``). Two
overloads, as in torch: ``(input, hx, params, has_biases, num_layers, dropout, train,
bidirectional, batch_first)`` for a padded ``(T, B, *)`` (or ``(B, T, *)``) input, and
``(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)``
for the two halves of a ``PackedSequence``.

Why a function rather than the unrolled steps alone: while :func:`ember.jit.trace` records
sizes (``jit/_sizes.py``), a call is recorded as one ``call`` node of the public function, as
torch records one ``aten::lstm``; replaying the trace runs the whole recurrence again, so the
trace follows the new input's batch size and sequence length. A tracer that keeps sizes
constant (the ONNX exporter's) records the unrolled steps as before.
"""

from __future__ import annotations

import threading

from ..._tensor import Tensor, _trace_state
from ...ops._signature import signature

__all__ = ["lstm", "gru", "rnn_tanh", "rnn_relu"]


def lstm(input, *args):
    """The LSTM recurrence; returns ``(output, h_n, c_n)``. ``hx`` is the pair ``(h_0, c_0)``.

    Example::

        >>> m = ember.nn.LSTM(4, 3)
        >>> x, state = ember.randn(5, 2, 4), (ember.zeros(1, 2, 3), ember.zeros(1, 2, 3))
        >>> out, h, c = ember.lstm(x, state, m._flat_weights, True, 1, 0.0, False, False,
        ...                        False)
        >>> out.shape, h.shape, c.shape
        (ember.Size([5, 2, 3]), ember.Size([1, 2, 3]), ember.Size([1, 2, 3]))
    """
    return _recurrence("LSTM", lstm, input, args)


def gru(input, *args):
    """The GRU recurrence; returns ``(output, h_n)``.

    Example::

        >>> m = ember.nn.GRU(4, 3, batch_first=True)
        >>> out, h = ember.gru(ember.randn(2, 5, 4), ember.zeros(1, 2, 3), m._flat_weights,
        ...                    True, 1, 0.0, False, False, True)
        >>> out.shape
        ember.Size([2, 5, 3])
    """
    return _recurrence("GRU", gru, input, args)


def rnn_tanh(input, *args):
    """The Elman recurrence with tanh; returns ``(output, h_n)``.

    Example::

        >>> m = ember.nn.RNN(4, 3)
        >>> ember.rnn_tanh(ember.randn(5, 2, 4), ember.zeros(1, 2, 3), m._flat_weights, True,
        ...                1, 0.0, False, False, False)[0].shape
        ember.Size([5, 2, 3])
    """
    return _recurrence("RNN_TANH", rnn_tanh, input, args)


def rnn_relu(input, *args):
    """The Elman recurrence with relu; returns ``(output, h_n)``.

    Example::

        >>> m = ember.nn.RNN(4, 3, nonlinearity="relu")
        >>> ember.rnn_relu(ember.randn(5, 2, 4), ember.zeros(1, 2, 3), m._flat_weights, True,
        ...                1, 0.0, False, False, False)[1].shape
        ember.Size([1, 2, 3])
    """
    return _recurrence("RNN_RELU", rnn_relu, input, args)


_NAMES = {"LSTM": "lstm", "GRU": "gru", "RNN_TANH": "rnn_tanh", "RNN_RELU": "rnn_relu"}


def _recurrence(mode, function, input, args):
    """Record ``function`` whole under a size-recording trace, else run it."""
    name = _NAMES[mode]
    if len(args) != 8:
        raise TypeError(f"{name}() takes 9 arguments (input, hx, params, has_biases, "
                        f"num_layers, dropout, train, bidirectional, batch_first) or (data, "
                        f"batch_sizes, hx, params, ...), got {len(args) + 1}")
    tracer = _dynamic_tracer()
    if tracer is not None:
        return tracer.record_public_call(f"ember.{name}", function, (input, *args), {})
    packed = isinstance(args[0], Tensor) and (mode == "LSTM" or isinstance(args[1], Tensor))
    _form_checks(name, packed)(input, *args)
    if packed:
        batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional = args
        _check_stack(mode, hx, params, has_biases, num_layers, bidirectional)
        return _run_packed(mode, input, batch_sizes, hx, params, has_biases, num_layers,
                           dropout, train, bidirectional)
    hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first = args
    _check_stack(mode, hx, params, has_biases, num_layers, bidirectional)
    return _run_padded(mode, input, hx, params, has_biases, num_layers, dropout, train,
                       bidirectional, batch_first)


_FORM_CHECKS = {}


def _form_checks(name, packed):
    """The typed check of one of ``name``'s two forms (torch's ``aten::lstm.input`` and
    ``aten::lstm.data`` schemas), made once: a refused argument raises torch's "invalid
    combination of arguments" TypeError before any kernel sees it.

    Example::

        >>> check = _form_checks("gru", False)
        >>> check(ember.zeros(5, 2, 4), ember.zeros(1, 2, 3), [], True, 1, 0.0, False, False,
        ...       False) is None
        True
    """
    key = (name, packed)
    if key not in _FORM_CHECKS:
        hx = "Tensor[] hx" if name == "lstm" else "Tensor hx"
        flags = ("Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, "
                 "bool bidirectional")
        if packed:
            schema = f"{name}(Tensor data, Tensor batch_sizes, {hx}, {flags})"
            _FORM_CHECKS[key] = signature(schema, overloaded="all")(_packed_form)
        else:
            schema = f"{name}(Tensor input, {hx}, {flags}, bool batch_first)"
            _FORM_CHECKS[key] = signature(schema, overloaded="all")(_padded_form)
    return _FORM_CHECKS[key]


def _padded_form(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                 batch_first):
    """The arguments of the padded form: checked by its signature, nothing more to do."""


def _packed_form(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
                 bidirectional):
    """The arguments of the packed form: checked by its signature, nothing more to do."""


def _check_stack(mode, hx, params, has_biases, num_layers, bidirectional):
    """torch's checks of the stacked layers, in its order: one initial state per layer and
    direction, the weights of every layer. torch's LSTM only needs enough of each (its state's
    last dim read first, for a projection); the others need exactly as many."""
    directions, plain = (2 if bidirectional else 1), (4 if has_biases else 2)
    needed = num_layers * directions
    if mode == "LSTM":
        hx[0].size(2), hx[1].size(2)  # (IndexError for a state that is not 3-D, as torch)
        if hx[0].size(0) < needed:
            raise IndexError(f"select(): index {hx[0].size(0)} out of range for tensor of size "
                             f"{list(hx[0].shape)} at dimension 0")
        if len(params) < needed * plain:
            raise RuntimeError(f"Expected more weights in stacked_rnn: {needed} layers and "
                               f"directions need {needed * plain}, got {len(params)}")
        return
    if (hx.size(0) if hx.ndim else 1) != needed:
        raise RuntimeError("Expected more hidden states in stacked_rnn")
    if len(params) != needed * plain:
        raise RuntimeError("Expected more weights in stacked_rnn")


def _run_padded(mode, input, hx, params, has_biases, num_layers, dropout, train,
                bidirectional, batch_first):
    """A ``(T, B, *)`` input (``(B, T, *)`` with ``batch_first``) as T steps of batch B."""
    if input.size(1 if batch_first else 0) == 0:
        raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
    x = input.transpose(0, 1) if batch_first else input
    steps, batch = x.shape[0], x.shape[1]
    data = x.reshape(steps * batch, x.shape[2])
    out, *state = _run_packed(mode, data, [batch] * steps, hx, params, has_biases,
                              num_layers, dropout, train, bidirectional)
    out = out.reshape(steps, batch, out.shape[-1])
    return (out.transpose(0, 1) if batch_first else out, *state)


def _run_packed(mode, data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
                bidirectional):
    """Packed ``data`` (N, *) whose step t holds ``batch_sizes[t]`` rows."""
    from ..modules._rnn_kernels import _rnn  # the fused ops, which the cells use too

    sizes = [int(s) for s in (batch_sizes.tolist() if isinstance(batch_sizes, Tensor)
                              else batch_sizes)]
    h0, c0 = (hx[0], hx[1]) if mode == "LSTM" else (hx, None)
    params = list(params)
    directions = 2 if bidirectional else 1
    plain = 4 if has_biases else 2  # weights per layer and direction without a projection
    has_proj = len(params) // (num_layers * directions) == plain + 1
    out, h, c = _rnn(mode, data, sizes, h0, c0, params, has_biases, has_proj, num_layers,
                     dropout, train, bidirectional)
    return (out, h, c) if mode == "LSTM" else (out, h)


# ---------------------------------------------------------------- tracing


def _dynamic_tracer():
    """The active tracer of this thread when it records sizes as graph values, else None."""
    tracer = _trace_state.tracer
    if tracer is None or not getattr(tracer, "dynamic_sizes", False):
        return None
    return tracer if tracer.thread == threading.get_ident() else None


def _traced_size(tensor, dim):
    """``tensor.size(dim)``; under a size-recording trace, an int the trace follows (so that
    a zero initial state built from it takes the new input's batch size on replay).

    Example::

        >>> _traced_size(ember.zeros(5, 3), 1)
        3
    """
    size = tensor.size(dim)
    tracer = _dynamic_tracer()
    if tracer is None:
        return size
    return tracer.record_size_call("method:size", [tensor, dim], size)


def _traced_squeeze(tensor, dim):
    """``tensor.squeeze(dim)``; under a size-recording trace, recorded by its dim (the
    ``squeeze`` primitive carries the traced shape), so an unbatched trace follows the length.

    Example::

        >>> _traced_squeeze(ember.zeros(5, 1, 3), 1).shape
        ember.Size([5, 3])
    """
    tracer = _dynamic_tracer()
    if tracer is None:
        return tensor.squeeze(dim)
    return tracer.record_public_call("method:squeeze", Tensor.squeeze, (tensor, dim), {})
