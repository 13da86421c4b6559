"""Options of an op's ONNX rule (``Op.defonnx``) that the exporter reads besides the mapping.

By default ``ember.onnx.export`` evaluates ahead of time (constant-folds) every op whose
inputs are all known before run time, and stores the result in the file. An op whose result
is much larger than its inputs (``expand``, ``repeat``), or that stands for a node only the
runtime can run, marks its mapping :func:`unfolded`, next to the op. Random draws are never
folded either; that follows from their kind (``kind="random"``), not from an option.

Example::

    >>> @unfolded
    ... def tile(ctx, x, repeats):
    ...     return ctx.op("Tile", x, ctx.shape_tensor(list(repeats)))
    >>> folds(tile), folds("Exp")
    (False, True)
"""

from __future__ import annotations

__all__ = ["folds", "unfolded"]


def unfolded(mapping):
    """Decorator: the exporter never constant-folds an op with this ONNX mapping; the runtime
    computes it from its (smaller) inputs.

    Example::

        @expand_op.defonnx
        @unfolded
        def _expand_onnx(ctx, x, shape, strides=None): ...
    """
    mapping.fold = False
    return mapping


def folds(mapping):
    """Whether the exporter may constant-fold an op with ONNX ``mapping`` (a function or the
    name of one ONNX operator).

    Example::

        >>> folds("Relu")
        True
    """
    return getattr(mapping, "fold", True)
