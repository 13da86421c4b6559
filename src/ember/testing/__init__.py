"""``ember.testing``: torch.testing's helpers for writing tests.

:func:`assert_close` compares tensors, numbers and containers of them with dtype-aware
tolerances and torch's failure reports; :func:`make_tensor` draws random test tensors;
:func:`assert_allclose` is the deprecated predecessor of :func:`assert_close`.

Example::

    >>> x = ember.testing.make_tensor(3, dtype=ember.float64, device="cpu")
    >>> ember.testing.assert_close(x.sin() ** 2 + x.cos() ** 2, ember.ones_like(x))
"""

from ._comparison import assert_allclose, assert_close
from ._creation import make_tensor
from ._filecheck import FileCheck

__all__ = ["FileCheck", "assert_allclose", "assert_close", "make_tensor"]
