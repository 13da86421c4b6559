"""``ember._dynamo.eval_frame``: ``OptimizedModule``, the type ``ember.compile(module)``
returns.

Example::

    >>> isinstance(ember.compile(ember.nn.Linear(1, 1)), ember._dynamo.eval_frame.OptimizedModule)
    True
"""

from __future__ import annotations

from .._inductor.compiled import OptimizedModule

__all__ = ["OptimizedModule"]
