"""``ember.jit.supported_ops``: torch generates its TorchScript builtin-operator docs here;
ember's scripting runs Python, so every ember operator is supported.

Example::

    >>> import ember.jit.supported_ops
"""
