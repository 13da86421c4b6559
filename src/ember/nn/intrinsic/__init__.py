"""``ember.nn.intrinsic``: torch's quantization-aware module namespace (torch.ao.nn.intrinsic).

ember has no quantized kernels: importing the package works, and any name from it raises
``NotImplementedError`` naming the torch API; keep the float modules of ``ember.nn``.

Example::

    >>> import ember.nn.intrinsic
"""


from ..._unsupported import quantization_stack_getattr

__getattr__ = quantization_stack_getattr("torch.nn.intrinsic")
