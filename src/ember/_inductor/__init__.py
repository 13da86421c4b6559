"""ember's compiler: ``ember.compile`` (torch.compile) captures a function or module into a
graph of ember primitives on its first call and replays it under guards.

* ``capture.py``: the recording run (``jit``'s tracer made strict: graph breaks instead of
  warnings, random draws recorded as calls, captured tensors read live);
* ``guards.py``: the key a call must match to reuse a graph;
* ``compiled.py``: the cache of graphs per function, recompiles, dynamic sizes, the cache
  limit, ``compile`` itself, ``OptimizedModule`` and ``Module.compile``;
* ``backends.py``: ``eager``/``aot_eager`` (interpret the graph), ``inductor`` (passes and
  element-wise fusion), custom backends (given an ``ember.fx.GraphModule``);
* ``state.py``: ``config``, ``counters``, the exception types, ``EMBER_LOGS``.

``ember._dynamo`` and ``ember.compiler`` expose these under torch's names.

Example::

    >>> ember.compile(lambda x: x + 1)(ember.ones(1))
    tensor([2.])
"""

from __future__ import annotations

from .compiled import compile

__all__ = ["compile"]
