"""``ember.nn.modules.linear_cross_entropy``: torch's module path (it holds no public names).

torch keeps the autograd function of its chunked loss here; the public pieces are
:class:`~ember.nn.LinearCrossEntropyLoss` and :func:`~ember.nn.functional.linear_cross_entropy`.

Example::

    >>> import ember.nn.modules.linear_cross_entropy
"""

__all__: list[str] = []
