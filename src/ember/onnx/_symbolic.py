"""The table from ember's primitive operators to their ONNX forms.

Each mapping is a function ``fn(ctx, *inputs, **params)``: ``inputs`` are the ONNX names of
the traced node's inputs, ``params`` the keyword parameters the primitive was traced with
(sizes that follow a dynamic axis as :class:`~ember.onnx._dims.Dim`). It adds nodes through
``ctx`` (an :class:`~ember.onnx._context.ExportContext`) and returns the ONNX name of the
result, or a tuple with one name (or None, for an output nothing may read) per output.

The mappings live in ``_ops_pointwise.py``, ``_ops_shape.py`` and ``_ops_nn.py``, one family
each; :func:`lookup` imports them on first use.
"""

from __future__ import annotations

__all__ = ["symbolic", "lookup", "MAPPINGS"]

# ember operator name -> (mapping, the first opset it supports)
MAPPINGS = {}


def symbolic(*names, since=13):
    """Decorator: register ``fn`` as the ONNX mapping of the ember primitives ``names``.

    Example::

        @symbolic("exp")
        def _exp(ctx, x):
            return ctx.op("Exp", x)
    """
    from ..ops._registry import registry

    def register(fn):
        for name in names:
            MAPPINGS[name] = (fn, since)
            for op in registry[name]:  # transitional: the mappings move next to their ops
                if op.onnx is None:
                    op.defonnx(fn)
        return fn
    return register


def lookup(name):
    """``(mapping, first supported opset)`` for ember operator ``name``, or None."""
    if not _loaded:
        _load()
    return MAPPINGS.get(name)


_loaded = []


def _load():
    from . import _ops_nn, _ops_pointwise, _ops_shape  # noqa: F401  (they fill MAPPINGS)

    _loaded.append(True)
