"""``ember.backends.quantized``: the quantized engine (ember has no quantized kernels, so the
only engine is ``"none"``).

Example::

    >>> ember.backends.quantized.engine
    'none'
"""

engine = "none"
supported_engines = ["none"]
