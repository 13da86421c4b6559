"""The state of one export: the ONNX nodes made so far, and the helpers that op mappings use.

An operator's ONNX mapping (its ``onnx`` rule, :meth:`ember.ops._registry.Op.defonnx`, written
next to the op) gets the :class:`ExportContext` and the ONNX names of its node's inputs, and
adds ONNX nodes with :meth:`ExportContext.op`; it needs no import of ``onnx`` or of this
package, since everything it uses is a method of the context. Sizes come as ints, or as
:class:`~ember.onnx._dims.Dim` where they follow a dynamic axis; :meth:`shape_tensor` and
:meth:`reshape` turn them into the int64 tensors ONNX's Reshape, Expand, Split and Slice read,
computing dynamic sizes at run time from the inputs' shapes.
"""

from __future__ import annotations

import numpy as np

from ._dims import Dim, monomial
from .errors import SymbolicValueError, UnsupportedOperatorError

__all__ = ["ExportContext", "onnx_type"]

_ONNX_TYPES = {"float32": "FLOAT", "float64": "DOUBLE", "float16": "FLOAT16",
               "bfloat16": "BFLOAT16", "int64": "INT64", "int32": "INT32", "int16": "INT16",
               "int8": "INT8", "uint8": "UINT8", "bool": "BOOL"}

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


def onnx_type(onnx, dtype_name):
    """ONNX's element type code for an ember dtype name (``"float32"`` -> FLOAT)."""
    try:
        return getattr(onnx.TensorProto, _ONNX_TYPES[dtype_name])
    except KeyError:
        raise TypeError(f"ONNX export does not support tensors of dtype ember.{dtype_name}") \
            from None


class ExportContext:
    """Nodes, initializers and fresh names of the ONNX graph being built, plus what the
    mappings need to know about the traced graph (shapes, dtypes, dynamic axes)."""

    def __init__(self, onnx, opset, axis_sizes):
        self.onnx = onnx
        self.custom_domains = {}       # domain of a custom operator -> its opset version
        self.opset = opset
        self.axis_sizes = axis_sizes   # dynamic axis name -> its size in the example
        self.axis_sources = {}         # dynamic axis name -> (input name, axis)
        self.nodes = []
        self.initializers = []
        self.node = None               # the traced node being mapped
        self.value_dims = {}           # traced Value -> tuple of int | Dim
        self._count = 0
        self._constants = {}
        self._shape_slices = {}

    # ------------------------------------------------------------ naming and nodes

    def fresh(self, hint):
        self._count += 1
        return f"/{hint}_{self._count}"

    def op(self, op_type, *inputs, outputs=1, **attrs):
        """Add an ONNX node; return its output name (a list when ``outputs`` > 1).

        Inputs may be None for an optional input left out (trailing Nones are dropped).

        Example::

            y = ctx.op("Relu", x)
        """
        inputs = list(inputs)
        while inputs and inputs[-1] is None:
            inputs.pop()
        names = [self.fresh(op_type) for _ in range(outputs)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(self.onnx.helper.make_node(
            op_type, ["" if i is None else i for i in inputs], names,
            name=f"{op_type}{names[0]}", **attrs))
        return names[0] if outputs == 1 else names

    def const(self, array):
        """A Constant node holding ``array`` (shared by equal small constants).

        Example::

            axes = ctx.const(np.array([0], np.int64))
        """
        array = np.asarray(array)
        key = (array.dtype.str, array.shape, array.tobytes())
        if key not in self._constants:
            tensor = self.onnx.numpy_helper.from_array(array)
            name = self.fresh("Constant")
            self.nodes.append(self.onnx.helper.make_node(
                "Constant", [], [name], name=f"Constant{name}", value=tensor))
            self._constants[key] = name
        return self._constants[key]

    def int64s(self, values):
        """A 1-D int64 constant."""
        return self.const(np.array(list(values), dtype=np.int64))

    def scalar(self, value, dtype_name):
        """A 0-dim constant of the ember dtype ``dtype_name``."""
        from .. import _dtype as dt

        return self.const(np.array(value, dtype=getattr(dt, dtype_name).np))

    def cast(self, name, from_dtype, to_dtype):
        """``name`` converted to ``to_dtype`` (ember dtype names); no node when equal."""
        if from_dtype == to_dtype:
            return name
        return self.op("Cast", name, to=onnx_type(self.onnx, to_dtype))

    # ------------------------------------------------------------ the node being mapped

    def in_dims(self, i):
        """Sizes of the current node's ``i``-th input (ints and Dims)."""
        return self.value_dims[self.node.inputs[i]]

    def out_dims(self, i=0):
        return self.value_dims[self.node.outputs[i]]

    def in_dtype(self, i):
        return self.node.inputs[i].dtype

    def out_dtype(self, i=0):
        return self.node.outputs[i].dtype

    def fail(self, message):
        """Raise :class:`SymbolicValueError` about the current node's first output."""
        value = self.node.outputs[0] if self.node.outputs else None
        raise SymbolicValueError(f"{message} (ember::{self.node.target})", value)

    def require_opset(self, version):
        """Raise torch's :class:`UnsupportedOperatorError` below opset ``version`` (the
        first one with the ONNX operator the mapping writes)."""
        if self.opset < version:
            raise UnsupportedOperatorError(f"ember::{self.node.op.name}", self.opset, version)

    # ------------------------------------------------------------ operands, axes, sizes

    INT64_MAX, INT64_MIN = INT64_MAX, INT64_MIN  # Slice's "to the end" bounds

    def operands(self, *names, dtype=None):
        """The inputs ``names`` (the node's first ones, in order) cast to ``dtype``, by
        default the result's: ONNX's arithmetic wants operands of one type where ember
        promotes (an int tensor plus a float scalar).

        Example::

            a, b = ctx.operands(a, b)
        """
        dtype = dtype or self.out_dtype()
        return [self.cast(n, self.in_dtype(i), dtype) for i, n in enumerate(names)]

    def promoted_dtype(self):
        """The dtype the first two inputs promote to (what a comparison compares in)."""
        from .. import _dtype as dt

        return dt.promote_types(getattr(dt, self.in_dtype(0)), getattr(dt, self.in_dtype(1))).name

    def out_is_float(self):
        """Whether the result's dtype is a floating-point one."""
        from .. import _dtype as dt

        return getattr(dt, self.out_dtype()).is_floating_point

    def axis(self, dim):
        """``dim`` of the first input as a non-negative axis (0 for a 0-dim input)."""
        return dim % max(len(self.in_dims(0)), 1)

    def axes(self, dims):
        """``dims`` of the first input (an int, a sequence, or None for all) as a list of
        non-negative axes."""
        ndim = len(self.in_dims(0))
        if dims is None:
            return list(range(ndim))
        return [d % ndim if ndim else 0 for d in (dims if isinstance(dims, (tuple, list))
                                                  else (dims,))]

    @staticmethod
    def is_dynamic(size):
        """Whether a traced size follows a dynamic axis (a :class:`Dim`, not an int)."""
        return isinstance(size, Dim)

    @staticmethod
    def static(size):
        """A traced size as the int it was in the example inputs."""
        return size.value if isinstance(size, Dim) else size

    # ------------------------------------------------------------ opset-dependent forms

    def axes_op(self, op_type, x, axes, since, **attrs):
        """An op that reads ``axes`` as an attribute before opset ``since`` and as an input
        from then on (Squeeze/Unsqueeze: 13, the Reduce ops: 13 or 18)."""
        if self.opset >= since:
            return self.op(op_type, x, self.int64s(axes) if axes is not None else None,
                           **attrs)
        return self.op(op_type, x, axes=list(axes) if axes is not None else None, **attrs)

    def reduce(self, op_type, x, axes, keepdims):
        """A Reduce op over ``axes`` (None: all)."""
        since = 13 if op_type == "ReduceSum" else 18
        return self.axes_op(op_type, x, axes, since, keepdims=int(keepdims))

    def squeeze(self, x, axes):
        return self.axes_op("Squeeze", x, axes, 13)

    def unsqueeze(self, x, axes):
        return self.axes_op("Unsqueeze", x, axes, 13)

    # ------------------------------------------------------------ sizes

    def _shape_slice(self, name, axis):
        key = (name, axis)
        if key not in self._shape_slices:
            if self.opset >= 15:
                self._shape_slices[key] = self.op("Shape", name, start=axis, end=axis + 1)
            else:
                self._shape_slices[key] = self.op("Gather", self.op("Shape", name),
                                                  self.int64s([axis]))
        return self._shape_slices[key]

    def dim_tensor(self, dim, source=None):
        """A 1-element int64 tensor holding the size ``dim`` at run time.

        ``source`` is ``(onnx name, sizes)`` of a tensor whose shape may hold ``dim``;
        otherwise the size is computed from the dynamic axes of the graph's inputs.
        """
        if not isinstance(dim, Dim):
            return self.int64s([dim])
        if source is not None and dim in source[1]:
            return self._shape_slice(source[0], list(source[1]).index(dim))
        fit = monomial(dim, self.axis_sizes)
        if fit is None or any(name not in self.axis_sources for name in fit[1]):
            self.fail(f"a size of {dim.value} in the traced graph changes with the dynamic "
                      "axes in a way the exporter cannot compute at run time")
        coefficient, powers = fit
        result = None
        for name, power in powers.items():
            size = self._shape_slice(*self.axis_sources[name])
            for _ in range(power):
                result = size if result is None else self.op("Mul", result, size)
        if result is None:
            return self.int64s([int(coefficient)])
        if coefficient.numerator != 1:
            result = self.op("Mul", result, self.int64s([coefficient.numerator]))
        if coefficient.denominator != 1:
            result = self.op("Div", result, self.int64s([coefficient.denominator]))
        return result

    def shape_tensor(self, dims, source=None):
        """A 1-D int64 tensor of the sizes ``dims`` (ints, Dims, or ints standing for
        themselves such as Reshape's 0 and -1): a constant when none is a Dim."""
        if not any(isinstance(d, Dim) for d in dims):
            return self.int64s(dims)
        pieces, run = [], []
        for d in dims:
            if isinstance(d, Dim):
                if run:
                    pieces.append(self.int64s(run))
                    run = []
                pieces.append(self.dim_tensor(d, source))
            else:
                run.append(d)
        if run:
            pieces.append(self.int64s(run))
        return self.op("Concat", *pieces, axis=0)

    def reshape(self, x, in_dims, out_dims):
        """``x`` (sizes ``in_dims``) reshaped to ``out_dims``, as Squeeze/Unsqueeze when only
        sizes 1 come or go, else as Reshape: a size that follows a dynamic axis is copied
        from the input (0) when it stays at its index, the last unknown one is inferred (-1),
        and others are computed at run time."""
        in_dims, out_dims = tuple(in_dims), tuple(out_dims)
        if in_dims == out_dims:
            return x
        inserted = _ones_inserted(in_dims, out_dims)
        if inserted is not None:
            return self.unsqueeze(x, inserted)
        removed = _ones_inserted(out_dims, in_dims)
        if removed is not None:
            return self.squeeze(x, removed)
        has_zero = 0 in out_dims
        target, pending = [], []
        for i, d in enumerate(out_dims):
            if isinstance(d, Dim) and not has_zero and i < len(in_dims) and in_dims[i] == d:
                target.append(0)
            else:
                if isinstance(d, Dim):
                    pending.append(i)
                target.append(d)
        if pending:
            target[pending[-1]] = -1
        shape = self.shape_tensor(target, (x, in_dims))
        allow = 1 if has_zero and self.opset >= 14 else None
        return self.op("Reshape", x, shape, allowzero=allow)

    def basic_index(self, x, items):
        """``x[items]`` for a basic index of the first input: ints, slices with a positive
        step and None, one per axis (Ellipsis already expanded), as Slice, Squeeze and
        Unsqueeze.

        Example::

            y = ctx.basic_index(x, [slice(1, None), 0, None])  # x[1:, 0, None]
        """
        starts, ends, axes, steps = [], [], [], []
        dropped, inserted = [], []
        axis = position = 0
        for k in items:
            if k is None:
                inserted.append(position)
                position += 1
                continue
            if isinstance(k, slice):
                step = 1 if k.step is None else k.step
                if isinstance(step, Dim) or step < 1:
                    self.fail("slices need a constant positive step")
                if not (k.start in (None, 0) and k.stop is None and step == 1):
                    starts.append(0 if k.start is None else k.start)
                    ends.append(INT64_MAX if k.stop is None else k.stop)
                    axes.append(axis)
                    steps.append(step)
                position += 1
            else:
                if isinstance(k, Dim):
                    self.fail("an index that follows a dynamic axis cannot be exported")
                starts.append(k)
                ends.append(INT64_MAX if k == -1 else k + 1)
                axes.append(axis)
                steps.append(1)
                dropped.append(axis)
            axis += 1
        if axes:
            x = self.op("Slice", x, self.shape_tensor(starts), self.shape_tensor(ends),
                        self.int64s(axes), self.int64s(steps))
        if dropped:
            x = self.squeeze(x, dropped)
        if inserted:
            x = self.unsqueeze(x, inserted)
        return x if (axes or dropped or inserted) else self.op("Identity", x)


def _ones_inserted(short, long):
    """The positions in ``long`` of sizes 1 whose removal leaves ``short``, or None.

    Example: ``_ones_inserted((4,), (4, 1, 1))`` is ``[1, 2]``.
    """
    if len(long) <= len(short):
        return None
    positions, j = [], 0
    for i, d in enumerate(long):
        if j < len(short) and short[j] == d:
            j += 1
        elif d == 1:
            positions.append(i)
        else:
            return None
    return positions if j == len(short) else None
