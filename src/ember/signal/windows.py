"""ember.signal.windows, as torch.signal.windows: window functions (symmetric by default;
``sym=False`` gives the periodic form). Defined in ``ember/ops/signal.py``.

Example::

    >>> ember.signal.windows.bartlett(5)
    tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
"""

from ..ops.signal import (
    bartlett,
    blackman,
    cosine,
    exponential,
    gaussian,
    general_cosine,
    general_hamming,
    hamming,
    hann,
    kaiser,
    nuttall,
)

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]
