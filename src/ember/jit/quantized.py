"""``ember.jit.quantized``: torch's removed quantized-RNN helpers; each raises torch's own
``RuntimeError`` pointing at ``torch.ao.nn.quantized.dynamic``.

Example::

    >>> from ember.jit.quantized import QuantizedLinear
"""

__all__ = ["QuantizedLinear", "QuantizedLinearFP16", "QuantizedRNNCellBase", "QuantizedRNNCell",
           "QuantizedLSTMCell", "QuantizedGRUCell", "QuantizedRNNBase", "QuantizedLSTM",
           "QuantizedGRU", "quantize_rnn_cell_modules", "quantize_linear_modules",
           "quantize_rnn_modules"]


def _removed(name, replacement, reported=None):
    """A class whose construction raises torch's message (which names ``reported``, the base
    class raising it in torch, and ``replacement``)."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"torch.jit.{reported or name} is no longer supported. Please use "
                           f"{replacement} instead.")

    return type(name, (), {"__init__": __init__,
                           "__doc__": f"Removed from torch: use {replacement}."})


def _removed_function(name, replacement):
    def function(*args, **kwargs):
        raise RuntimeError(f"{name} function is no longer supported. Please use "
                           f"{replacement} instead.")

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"Removed from torch: use {replacement}."
    return function


_DYNAMIC = "the torch.ao.nn.quantized.dynamic"
QuantizedLinear = _removed("QuantizedLinear", "torch.ao.nn.quantized.dynamic.Linear")
QuantizedLinearFP16 = _removed("QuantizedLinearFP16", f"{_DYNAMIC}.Linear")
QuantizedRNNCellBase = _removed("QuantizedRNNCellBase", f"{_DYNAMIC}.RNNCell")
QuantizedRNNCell = _removed("QuantizedRNNCell", f"{_DYNAMIC}.RNNCell")
QuantizedLSTMCell = _removed("QuantizedLSTMCell", f"{_DYNAMIC}.RNNCell", "QuantizedRNNCellBase")
QuantizedGRUCell = _removed("QuantizedGRUCell", f"{_DYNAMIC}.RNNCell", "QuantizedRNNCellBase")
QuantizedRNNBase = _removed("QuantizedRNNBase", _DYNAMIC)
QuantizedLSTM = _removed("QuantizedLSTM", f"{_DYNAMIC}.LSTM")
QuantizedGRU = _removed("QuantizedGRU", f"{_DYNAMIC}.GRU")
quantize_rnn_cell_modules = _removed_function(
    "quantize_rnn_cell_modules", "torch.ao.quantization.quantize_dynamic API")
quantize_linear_modules = _removed_function(
    "quantize_linear_modules", "torch.ao.quantization.quantize_dynamic API")
quantize_rnn_modules = _removed_function(
    "quantize_rnn_modules", "torch.ao.quantization.quantize_dynamic API")
