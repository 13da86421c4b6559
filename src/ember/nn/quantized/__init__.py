"""``ember.nn.quantized``: torch's quantization-aware module namespace (torch.ao.nn.quantized).

ember has no quantized kernels: importing the package works, and any name from it raises
``NotImplementedError`` naming the torch API; keep the float modules of ``ember.nn``.

Example::

    >>> import ember.nn.quantized
"""


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotImplementedError(
        f"torch.nn.quantized.{name} is part of torch's quantization stack (torch.ao), "
        "which ember "
        "does not implement; use the float modules of ember.nn instead")
