"""``ember.nn.quantized``: torch's quantization-aware module namespace (torch.ao.nn.quantized).

ember has no quantized kernels: importing the package works, and any name from it raises
``NotImplementedError`` naming the torch API; keep the float modules of ``ember.nn``.

Example::

    >>> import ember.nn.quantized
"""


from ..._unsupported import quantization_stack_getattr

__getattr__ = quantization_stack_getattr("torch.nn.quantized")
