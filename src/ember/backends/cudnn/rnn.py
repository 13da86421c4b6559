"""``ember.backends.cudnn.rnn``: torch's helpers for cuDNN's RNN kernels.

ember's recurrent layers run their own cell loop (NumPy or CuPy), never cuDNN's RNN, so
these exist for code that names them: the mode table, and the dropout-state wrapper that
torch keeps out of pickles.

Example::

    >>> ember.backends.cudnn.rnn.fp32_precision
    'tf32'
"""

from __future__ import annotations

import sys

from ...cuda._errors import NO_GPU_MESSAGE, CudaBindingMissingError
from .. import ContextProp, PropModule, _precision_prop  # noqa: F401  (torch's names)

__all__ = ["get_cudnn_mode", "Unserializable", "init_dropout_state", "CudnnRNNModule"]

# cudnnRNNMode_t's values, by torch's mode names
_MODES = {"RNN_RELU": 0, "RNN_TANH": 1, "LSTM": 2, "GRU": 3}


def get_cudnn_mode(mode):
    """cuDNN's number for the RNN ``mode`` (``'RNN_RELU'``, ``'RNN_TANH'``, ``'LSTM'``,
    ``'GRU'``); it asks cuDNN, so without a GPU it raises (AttributeError, as torch's CPU
    build).

    Example::

        >>> get_cudnn_mode("GRU")          # doctest: +SKIP
        3
    """
    from . import is_available

    if not is_available():
        raise CudaBindingMissingError(f"torch.backends.cudnn.rnn.get_cudnn_mode: "
                                      f"{NO_GPU_MESSAGE}")
    if mode not in _MODES:
        raise Exception(f"Unknown mode: {mode}")  # noqa: TRY002  (torch's exception type)
    return _MODES[mode]


class Unserializable:
    """Holds an object that pickling drops (it unpickles as None).

    Example::

        >>> import pickle
        >>> pickle.loads(pickle.dumps(Unserializable(object()))).get() is None
        True
    """

    def __init__(self, inner):
        self.inner = inner

    def get(self):
        """The held object."""
        return self.inner

    def __getstate__(self):
        return "<unserializable>"

    def __setstate__(self, state):
        self.inner = None


def init_dropout_state(dropout, train, dropout_seed, dropout_state):
    """cuDNN's dropout state for an RNN: needs cuDNN, so it raises without a GPU."""
    raise CudaBindingMissingError(f"torch.backends.cudnn.rnn.init_dropout_state: "
                                  f"{NO_GPU_MESSAGE}")


class CudnnRNNModule(PropModule):
    """``ember.backends.cudnn.rnn``: its ``fp32_precision`` (torch's cuDNN RNN switch)."""

    fp32_precision = _precision_prop("cuda", "rnn")


sys.modules[__name__] = CudnnRNNModule(sys.modules[__name__], __name__)
