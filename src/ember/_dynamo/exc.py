"""``ember._dynamo.exc``: the compiler's exception types, as torch names them.

Example::

    >>> issubclass(ember._dynamo.exc.Unsupported, RuntimeError)
    True
"""

from __future__ import annotations

from .._inductor.state import (
    BackendCompilerFailed,
    InvalidBackend,
    TorchDynamoException,
    Unsupported,
)

__all__ = ["TorchDynamoException", "Unsupported", "InvalidBackend", "BackendCompilerFailed"]
