"""``ember._ops``: where torch keeps its operator classes (``torch._ops``), for code that
checks ``isinstance(target, torch._ops.OpOverload)`` (fx passes, decomposition tables). The
classes live in :mod:`ember.ops._namespaces`; ``ops`` is the ``ember.ops`` package.

Example::

    >>> import ember
    >>> isinstance(ember.ops.aten.add.Tensor, ember._ops.OpOverload)
    True
"""

from . import ops
from .ops._namespaces import AtenNamespace as _AtenNamespace  # noqa: F401
from .ops._namespaces import HigherOrderNamespace as _HigherOrderNamespace  # noqa: F401
from .ops._namespaces import OpNamespace as _OpNamespace  # noqa: F401
from .ops._namespaces import OpOverload, OpOverloadPacket

__all__ = ["OpOverload", "OpOverloadPacket", "ops"]
