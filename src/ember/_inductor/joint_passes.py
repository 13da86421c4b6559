"""Graph passes of the joint forward-backward graph (``joint.py``) and the kernels they
introduce: ``add(mm(a, b), bias)`` as one GEMM taking the bias as its C operand
(``mm_bias``), and a bias gradient's column sums as a product with a row of ones
(``column_sums``).

Example::

    >>> from ember._inductor.capture import capture
    >>> w, b = ember.ones(3, 2), ember.ones(2)
    >>> graph = capture(lambda x: x @ w + b, [ember.ones(4, 3)]).graph
    >>> fuse_bias_products(graph)
    1
"""

from __future__ import annotations

import numpy as np

from ..jit._ir import OP
from ..jit._ir import Node as GraphNode
from ..ops._registry import Op

__all__ = ["fuse_bias_products", "sum_columns_by_product", "mm_bias_op", "column_sums_op"]


def _product_with_bias(xp, a, b, bias):
    """``a @ b + bias`` for float32 matrices and a bias row: the bias is the GEMM's C
    operand (one pass over the result, as torch's ``addmm``), else the two kernels."""
    if xp is np:
        from ..ops.linalg._onednn_gemm import sgemm

        out = sgemm(a, b, bias=bias)
        if out is not None:
            return out
    return _ADD.kernel(xp, _MM.kernel(xp, a, b), bias)


def _ops_named(name):
    from ..ops._registry import registry

    return registry[name][0]


_MM, _ADD, _MATMUL = _ops_named("mm"), _ops_named("add"), _ops_named("matmul")


def _product_into(xp, a, b, bias, out):
    """``a @ b`` (``+ bias`` when given) written into ``out`` (a dead temporary's array of
    the result's shape and dtype, or None: a new array)."""
    if out is None:
        return _MM.kernel(xp, a, b) if bias is None else _product_with_bias(xp, a, b, bias)
    if xp is np and a.dtype == np.float32:
        from ..ops.linalg._onednn_gemm import sgemm

        found = sgemm(a, b, out=out, bias=bias)
        if found is not None:
            return found
    xp.matmul(a, b, out=out)
    if bias is not None:
        xp.add(out, bias, out=out)
    return out
# ``mm`` then ``add`` of a bias row, as one operator of the generated code
mm_bias_op = Op("mm_bias", _product_with_bias, register=False, kind="linalg")


def fuse_bias_products(graph):
    """Replace ``add(mm(a, b), bias)`` by one ``mm_bias`` node where the product is read by
    that ``add`` alone, maybe through ``view`` nodes keeping its rows (a linear layer on
    3-D input), and ``bias`` is a float32 row of the result's width; return how many.

    Example::

        >>> from ember._inductor.capture import capture
        >>> w, b = ember.ones(3, 2), ember.ones(2)
        >>> graph = capture(lambda x: x @ w + b, [ember.ones(4, 3)]).graph
        >>> fuse_bias_products(graph), [n.op.name for n in graph.op_nodes()]
        (1, ['mm_bias'])
    """
    uses = graph.use_counts()
    producers = {n.outputs[0]: n for n in graph.nodes if n.kind == OP and len(n.outputs) == 1}
    replaced, dropped = {}, set()
    for n in graph.nodes:
        if n.kind != OP or n.op is not _ADD or n.params not in ({}, {"alpha": 1}):
            continue
        product, bias = n.inputs
        views, node = [], producers.get(product)
        while node is not None and node.op.name == "view" and uses.get(node.outputs[0]) == 1:
            views.append(node)
            node = producers.get(node.inputs[0])
        if node is None or node.op is not _MM or uses.get(node.outputs[0]) != 1 or \
                not _bias_row(bias, node.outputs[0], product):
            continue
        rows = graph.new_value(node.outputs[0].shape, node.outputs[0].dtype)
        steps = [GraphNode(OP, mm_bias_op, [*node.inputs, bias], {}, [rows])]
        for view in reversed(views):  # the same views, of the product with its bias
            steps.append(GraphNode(OP, view.op, [steps[-1].outputs[0]], dict(view.params),
                                   list(view.outputs)))
        steps[-1].outputs = list(n.outputs)
        replaced[id(n)] = steps
        dropped.update(id(m) for m in [node, *views])
    graph.nodes = [m for n in graph.nodes if id(n) not in dropped
                   for m in replaced.get(id(n), [n])]
    return len(replaced)


def _column_sums(xp, a, *, dims, keepdim, dtype):
    """``a`` summed over every dim but the last (a bias gradient), as the product of a row
    of ones with ``a`` seen as a matrix: BLAS sums columns faster than NumPy's reduction
    (the eager linear backward does the same)."""
    flags = getattr(a, "flags", None)
    if flags is not None and flags.c_contiguous and a.size:
        rows = a.reshape(-1, a.shape[-1])
        sums = xp.matmul(xp.ones(rows.shape[0], a.dtype), rows)
        return sums.reshape((1,) * len(dims) + sums.shape) if keepdim else sums
    return _SUM.kernel(xp, a, dims=dims, keepdim=keepdim, dtype=dtype)


_SUM = _ops_named("sum")
column_sums_op = Op("column_sums", _column_sums, register=False, kind="reduction")


def sum_columns_by_product(graph):
    """Give each float32 ``sum`` over every dim but the last (a bias gradient) the kernel
    :func:`_column_sums`; return how many.

    Example::

        >>> from ember._inductor.capture import capture
        >>> graph = capture(lambda g: g.sum((0, 1)), [ember.ones(2, 3, 4)]).graph
        >>> sum_columns_by_product(graph), [n.op.name for n in graph.op_nodes()]
        (1, ['column_sums'])
    """
    count = 0
    for n in graph.nodes:
        if n.kind != OP or n.op is not _SUM or n.params.get("dtype") is not None:
            continue
        shape = n.inputs[0].shape
        if n.inputs[0].dtype == "float32" and shape is not None and len(shape) >= 2 and \
                tuple(n.params.get("dims") or ()) == tuple(range(len(shape) - 1)):
            n.op = column_sums_op
            count += 1
    return count


def _bias_row(bias, rows, product):
    """Whether ``bias`` is a float32 row added to each row of the matrix ``rows`` (seen as
    ``product``, a view of it with the same last dim)."""
    shape = rows.shape
    return bias.dtype == rows.dtype == "float32" and shape is not None and \
        len(shape) == 2 and tuple(bias.shape or ()) == (shape[1],) and \
        tuple(product.shape or ())[-1:] == (shape[1],)
