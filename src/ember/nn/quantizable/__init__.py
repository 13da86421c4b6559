"""``ember.nn.quantizable``: torch's quantization-aware module namespace (torch.ao.nn.quantizable).

ember has no quantized kernels: importing the package works, and any name from it raises
``NotImplementedError`` naming the torch API; keep the float modules of ``ember.nn``.

Example::

    >>> import ember.nn.quantizable
"""


from ..._unsupported import quantization_stack_getattr

__getattr__ = quantization_stack_getattr("torch.nn.quantizable")
