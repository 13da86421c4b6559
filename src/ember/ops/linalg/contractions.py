"""Contractions and structured matrices: ``einsum``, ``kron``, ``cross`` and ``linalg.cross``,
``trace``, ``diag``, ``diag_embed``, ``linalg.diagonal``, ``linalg.vecdot``, ``linalg.multi_dot``
and the Vandermonde matrices (``vander``, ``linalg.vander``).

Example::

    >>> ember.einsum("ii->", ember.eye(3))
    tensor(3.)
"""

from __future__ import annotations

import collections

import numpy as np

from ... import _dtype as dt
from .._methods import tensor_method
from .._operands import wrap_dim
from .._registry import autocast_policy, defop, write_out
from .._signature import signature
from .._vmap_rules import batching
from ._common import _LOW, _check_tensor, _short
from .products import _chain, _check_same_scalar, _not_implemented

# ================================================================ einsum


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


@defop("einsum", meta=lambda *arrays, equation, shape: (shape, arrays[0].dtype), kind="linalg",
       autocast="lower")
def einsum_op(xp, *arrays, equation, shape):
    if arrays[0].dtype in _LOW:
        result = xp.einsum(equation, *(a.astype(np.float32) for a in arrays),
                           optimize=len(arrays) > 1)
        return xp.asarray(result).astype(arrays[0].dtype)
    return xp.asarray(xp.einsum(equation, *arrays, optimize=len(arrays) > 1))


@einsum_op.defonnx
def _einsum_onnx(ctx, *operands, equation, shape=None):
    return ctx.op("Einsum", *operands, equation=equation.replace(" ", ""))


einsum_op.defbatch(batching.einsum)


@einsum_op.defderivative
def _einsum_derivative(ctx, grad, *, equation, shape):
    inputs = ctx.inputs
    lhs, out = equation.split("->")
    subs = lhs.split(",")
    sizes = {}
    for s, t in zip(subs, inputs):
        sizes.update(zip(s, t._data.shape))
    grads = []
    for i, need in enumerate(ctx.needs_input_grad):
        if not need:
            grads.append(None)
            continue
        others = [t.conj() for j, t in enumerate(inputs) if j != i]
        other_subs = [s for j, s in enumerate(subs) if j != i]
        eq = ",".join([out] + other_subs) + "->" + subs[i]
        grads.append(einsum_op(grad, *others, equation=eq,
                               shape=tuple(sizes[c] for c in subs[i])))
    return tuple(grads)


def _parse_einsum(equation, operands):
    """Split ``equation`` into per-operand subscripts (ellipses expanded) and the output."""
    equation = equation.replace(" ", "")
    if "->" in equation:
        lhs, out = equation.split("->")
    else:
        lhs, out = equation, None
    subs = lhs.split(",")
    if len(subs) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation" if len(operands) > len(subs) else
                           "einsum(): fewer operands were provided than specified in the "
                           "equation")
    used = set(c for c in equation if c.isalpha())
    spare = iter(c for c in _LETTERS if c not in used)
    ell_rank = 0
    for s, t in zip(subs, operands):
        for c in s.replace("...", ""):
            if not c.isalpha():
                raise RuntimeError(f"einsum(): invalid subscript given at index "
                                   f"{equation.index(c)} in the equation string, subscripts "
                                   "must be in [a-zA-Z]")
        n_explicit = len(s.replace("...", ""))
        if "..." in s:
            ell_rank = max(ell_rank, t._data.ndim - n_explicit)
        elif n_explicit != t._data.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                               f"({n_explicit}) does not match the number of dimensions "
                               f"({t._data.ndim}) for operand {operands.index(t)} and no "
                               "ellipsis was given")
    ell = "".join(next(spare) for _ in range(ell_rank))
    expanded = []
    for s, t in zip(subs, operands):
        if "..." in s:
            k = t._data.ndim - len(s.replace("...", ""))
            s = s.replace("...", ell[ell_rank - k:] if k else "")
        expanded.append(s)
    if out is None:
        counts = collections.Counter("".join(expanded))
        named = sorted(c for c in counts if counts[c] == 1 and c not in ell)
        out = ell + "".join(named)
    else:
        out = out.replace("...", ell)
    return expanded, out


def einsum(*args):
    """Sum of products over the indices of an Einstein-summation ``equation``.

    Accepts ``einsum("ij,jk->ik", a, b)`` and the operands as one list. Ellipses broadcast.

    Example::

        >>> ember.einsum("ij,jk->ik", ember.ones(2, 3), ember.ones(3, 4)).shape
        ember.Size([2, 4])
    """
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one "
                         "operand, or at least one operand and its subscripts list")
    equation, operands = args[0], args[1:]
    if not isinstance(equation, str):
        return _einsum_sublist(args)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    operands = list(operands)
    subs, out = _parse_einsum(equation, operands)
    dtype = operands[0]._data.dtype
    for t in operands[1:]:
        if t._data.dtype != dtype:
            raise RuntimeError(f"expected scalar type {_short(operands[0])} but found "
                               f"{_short(t)}")
    # Check sizes: a subscript's sizes must agree or be 1 (broadcast).
    sizes = {}
    for i, (s, t) in enumerate(zip(subs, operands)):
        for c, n in zip(s, t._data.shape):
            seen = sizes.get(c)
            if seen is None or seen == 1:
                sizes[c] = n
            elif n != seen and n != 1:
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {i} which "
                                   f"does not broadcast with previously seen size {seen}")
    for c in out:
        if c not in sizes:
            raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation "
                               "for any input operand")
    # Normalise: no repeated subscript within an operand, no broadcast size-1 dims, and every
    # subscript in the output or in two operands, so the derivative is again such an einsum.
    counts = collections.Counter()
    for i, (s, t) in enumerate(zip(subs, operands)):
        s, t = _einsum_diagonals(s, t)
        keep = [j for j, c in enumerate(s) if not (t._data.shape[j] == 1 and sizes[c] != 1)]
        if len(keep) != len(s):
            drop = [j for j in range(len(s)) if j not in keep]
            for j in reversed(drop):
                t = t.squeeze(j)
            s = "".join(s[j] for j in keep)
        subs[i], operands[i] = s, t
        counts.update(set(s))
    for i, (s, t) in enumerate(zip(subs, operands)):
        lonely = [j for j, c in enumerate(s) if counts[c] == 1 and c not in out]
        if lonely:
            t = t.sum(tuple(lonely))
            s = "".join(c for j, c in enumerate(s) if j not in lonely)
        subs[i], operands[i] = s, t
    present = set("".join(subs))
    missing = [c for c in out if c not in present]  # broadcast size-1 output dims
    core_out = "".join(c for c in out if c in present)
    shape = tuple(sizes[c] for c in core_out)
    if len(operands) == 1 and subs[0] == core_out:
        result = operands[0]
    else:
        result = einsum_op(*operands, equation=",".join(subs) + "->" + core_out, shape=shape)
    if missing:
        for j, c in enumerate(out):
            if c in missing:
                result = result.unsqueeze(j)
    return result


def _einsum_diagonals(s, t):
    """Take diagonals for subscripts repeated within one operand (``'ii'``)."""
    while len(set(s)) != len(s):
        for j, c in enumerate(s):
            k = s.find(c, j + 1)
            if k != -1:
                t = t.diagonal(0, j, k)
                s = s[:j] + s[j + 1:k] + s[k + 1:] + c
                break
    return s, t


def _einsum_sublist(args):
    """``einsum(a, [0, 1], b, [1, 2], [0, 2])``: the sublist form."""
    args = list(args)
    out = None
    if len(args) % 2 == 1:
        out = args.pop()
    operands, subs = args[0::2], args[1::2]

    def letters(sub):
        return "".join("..." if x is Ellipsis else _LETTERS[x] for x in sub)

    equation = ",".join(letters(s) for s in subs)
    if out is not None:
        equation += "->" + letters(out)
    return einsum(equation, *operands)


# ================================================================ kron, cross


@tensor_method
@signature("kron(Tensor input, Tensor other, *, Tensor? out=None) -> Tensor")
def kron(input, other, *, out=None):
    """The Kronecker product (dims aligned at the right, the shorter operand padded with 1s).

    Example::

        >>> ember.kron(ember.eye(2), ember.ones(2, 2)).shape
        ember.Size([4, 4])
    """
    na, nb = input._data.ndim, other._data.ndim
    n = max(na, nb)
    a = input.reshape((1,) * (n - na) + tuple(input._data.shape))
    b = other.reshape((1,) * (n - nb) + tuple(other._data.shape))
    sa, sb = a._data.shape, b._data.shape
    a_shape, b_shape = [], []
    for x, y in zip(sa, sb):
        a_shape += [x, 1]
        b_shape += [1, y]
    result = (a.reshape(a_shape) * b.reshape(b_shape)).reshape(
        [x * y for x, y in zip(sa, sb)])
    return write_out(result, out, "kron")


@defop("cross", meta=lambda a, b, *, dim: (np.broadcast_shapes(a.shape, b.shape), a.dtype),
       grad_name="LinalgCrossBackward0", kind="linalg")
def cross_op(xp, a, b, *, dim):
    a, b = xp.broadcast_arrays(a, b)
    a0, a1, a2 = (xp.take(a, i, axis=dim) for i in range(3))
    b0, b1, b2 = (xp.take(b, i, axis=dim) for i in range(3))
    return xp.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=dim)


cross_op.opt_out("onnx", "not mapped yet (composable from Gather, Mul and Sub)")


cross_op.defbatch(batching.broadcast_along_dim)


@cross_op.defderivative
def _cross_derivative(ctx, grad, *, dim):
    a, b = ctx.inputs
    need_a, need_b = ctx.needs_input_grad
    return (cross_op(b.conj(), grad, dim=dim) if need_a else None,
            cross_op(grad, a.conj(), dim=dim) if need_b else None)


def _cross_impl(input, other, dim, name):
    from .._operands import broadcast_shapes

    if input._data.ndim != other._data.ndim:
        raise RuntimeError(f"{name}: inputs must have the same number of dimensions.")
    shape = broadcast_shapes(input._data.shape, other._data.shape)
    d = wrap_dim(dim, len(shape))
    if input._data.shape[d] != 3 or other._data.shape[d] != 3:
        raise RuntimeError(f"{name}: inputs dimension {dim} must have length 3. Got "
                           f"{input._data.shape[d]} and {other._data.shape[d]}")
    if input.dtype is dt.bool:  # (before the dtypes are compared, as torch)
        raise dt.no_kernel_for("cross", dt.bool)
    _check_same_scalar(input, other)
    return cross_op(input, other, dim=d)


@tensor_method
@signature("cross(Tensor input, Tensor other, int? dim=None, *, Tensor? out=None) -> Tensor")
def cross(input, other, dim=None, *, out=None):
    """The 3-D cross product along ``dim`` (the first dim of size 3 when omitted).

    Example::

        >>> ember.cross(ember.tensor([1., 0., 0.]), ember.tensor([0., 1., 0.]), dim=0)
        tensor([0., 0., 1.])
    """
    if dim is None:
        from .._operands import broadcast_shapes

        shape = broadcast_shapes(input._data.shape, other._data.shape)
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return write_out(_cross_impl(input, other, dim, "linalg.cross"), out, "cross")


@signature("linalg_cross(Tensor input, Tensor other, *, int dim=-1, Tensor? out=None) -> Tensor")
def linalg_cross(input, other, *, dim=-1, out=None):
    """The 3-D cross product along ``dim`` (default -1), inputs broadcast.

    Example::

        >>> ember.linalg.cross(ember.tensor([1., 0., 0.]), ember.tensor([0., 1., 0.]))
        tensor([0., 0., 1.])
    """
    return write_out(_cross_impl(input, other, dim, "linalg.cross"), out, "linalg.cross")


# ================================================================ trace, diag, diag_embed


@tensor_method
@signature("trace(Tensor input) -> Tensor")
@autocast_policy(cpu="fp32")
def trace(input):
    """The sum of the main diagonal of a 2-D tensor (integers sum as int64).

    Example::

        >>> ember.trace(ember.eye(3))
        tensor(3.)
    """
    if input._data.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim "
                           f"{input._data.ndim}")
    _not_implemented(input, "trace")
    return input.diagonal().sum()


def _diag_embed_shape(shape, offset, dim1, dim2):
    n = shape[-1] + abs(offset)
    out = list(shape[:-1])
    lo, hi = sorted((dim1, dim2))
    out.insert(lo, n)
    out.insert(hi, n)
    return tuple(out)


@defop("diag_embed", meta=lambda a, *, offset, dim1, dim2: (
    _diag_embed_shape(a.shape, offset, dim1, dim2), a.dtype), save_inputs=False, kind="linalg")
def diag_embed_op(xp, a, *, offset, dim1, dim2):
    shape = _diag_embed_shape(a.shape, offset, dim1, dim2)
    out = xp.zeros(shape, a.dtype)
    # Put the diagonal dims last to write into them through a strided diagonal view.
    rest = [d for d in range(len(shape)) if d not in (dim1, dim2)]
    view = out.transpose(rest + [dim1, dim2])
    n = a.shape[-1]
    rows = xp.arange(n) + max(-offset, 0)
    cols = xp.arange(n) + max(offset, 0)
    view[..., rows, cols] = a
    return out


diag_embed_op.opt_out("onnx", "not mapped yet (composable from ONNX's EyeLike and Mul)")


diag_embed_op.defbatch(batching.diag_embed)


@diag_embed_op.defderivative
def _diag_embed_derivative(ctx, grad, *, offset, dim1, dim2):
    return (grad.diagonal(offset, dim1, dim2),)


@tensor_method
@signature("diag_embed(Tensor input, int offset=0, int dim1=-2, int dim2=-1) -> Tensor")
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Batches of matrices whose ``offset`` diagonal (in dims ``dim1``, ``dim2``) holds the
    last dim of ``input``.

    Example::

        >>> ember.diag_embed(ember.tensor([1, 2]))
        tensor([[1, 0],
                [0, 2]])
    """
    ndim = input._data.ndim + 1
    d1, d2 = wrap_dim(dim1, ndim), wrap_dim(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return diag_embed_op(input, offset=int(offset), dim1=d1, dim2=d2)


@tensor_method
@signature("diag(Tensor input, int diagonal=0, *, Tensor? out=None) -> Tensor")
def diag(input, diagonal=0, *, out=None):
    """A square matrix with a 1-D ``input`` on its ``diagonal``, or the ``diagonal`` of a 2-D
    ``input`` as a new 1-D tensor.

    Example::

        >>> ember.diag(ember.tensor([1, 2]))
        tensor([[1, 0],
                [0, 2]])
    """
    if input._data.ndim == 1:
        result = diag_embed(input, diagonal, 0, 1)
    elif input._data.ndim == 2:
        result = input.diagonal(diagonal).clone()
    else:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input._data.ndim}D")
    return write_out(result, out, "diag")


# ================================================================ vecdot, multi_dot


@signature("linalg_vecdot(Tensor x, Tensor y, *, int dim=-1, Tensor? out=None) -> Tensor")
@autocast_policy("lower")
def linalg_vecdot(x, y, *, dim=-1, out=None):
    """``sum(conj(x) * y, dim)``, broadcast.

    Example::

        >>> ember.linalg.vecdot(ember.tensor([1., 2.]), ember.tensor([3., 4.]))
        tensor(11.)
    """
    if x._data.dtype != y._data.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found "
                           f"x of type {_short(x)} and y of type {_short(y)} instead")
    a = x.conj() if x.dtype.is_complex else x
    return write_out((a * y).sum(dim), out, "linalg.vecdot")


@autocast_policy("lower")
def linalg_multi_dot(tensors, *, out=None):
    """The product of a chain of matrices in the cheapest order; the first and last may be
    1-D.

    Example::

        >>> ember.linalg.multi_dot([ember.ones(3), ember.ones(3, 4), ember.ones(4)])
        tensor(12.)
    """
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first_1d = tensors[0]._data.ndim == 1
    last_1d = tensors[-1]._data.ndim == 1
    mats = list(tensors)
    if first_1d:
        mats[0] = mats[0].unsqueeze(0)
    if last_1d:
        mats[-1] = mats[-1].unsqueeze(-1)
    for i, m in enumerate(mats):
        if m._data.ndim != 2:
            where_ = "first" if i == 0 else "last" if i == len(mats) - 1 else None
            if where_:
                raise RuntimeError(f"multi_dot(): the {where_} tensor must be 1D or 2D but got "
                                   f"{tensors[i]._data.ndim}D")
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got "
                               f"{tensors[i]._data.ndim}D")
        if m._data.dtype != mats[0]._data.dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor "
                               f"0 is {mats[0].dtype} and tensor {i} "
                               f"{m.dtype}".replace("ember.", "torch."))
    for i in range(len(mats) - 1):
        if mats[i]._data.shape[1] != mats[i + 1]._data.shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{list(mats[i]._data.shape)} and "
                               f"{list(mats[i + 1]._data.shape)} cannot be multiplied")
    result = _chain(mats)
    if first_1d:
        result = result.squeeze(0)
    if last_1d:
        result = result.squeeze(-1)
    return write_out(result, out, "linalg.multi_dot")


@signature("linalg_diagonal(Tensor A, *, int offset=0, int dim1=-2, int dim2=-1) -> Tensor")
def diagonal_(A, *, offset=0, dim1=-2, dim2=-1):
    """``torch.linalg.diagonal``: the diagonal of the last two dims by default (a view).

    Example::

        >>> ember.linalg.diagonal(ember.eye(2))
        tensor([1., 1.])
    """
    return A.diagonal(offset, dim1, dim2)


# ================================================================ Vandermonde matrices


def _powers(x, count):
    """``x ** 0, ..., x ** (count - 1)`` along a new last dim, as running products (ints and
    bools become int64, as torch's cumprod)."""
    from ..creation import ones_like
    from ..reduce import cumprod
    from ..shape import cat

    column = x.unsqueeze(-1)
    factors = cat([ones_like(column), column.expand(x._data.shape + (count - 1,))], -1)
    return cumprod(factors, -1)


@signature("linalg_vander(Tensor x, *, SymInt? N=None) -> Tensor")
def linalg_vander(x, *, N=None):
    """The Vandermonde matrix of the last dim of ``x``: ``x ** 0, ..., x ** (N - 1)`` along a
    new last dim (``N`` defaults to ``x.shape[-1]``, and must be greater than 1).

    Example::

        >>> ember.linalg.vander(ember.tensor([1, 2, 3]))
        tensor([[1, 1, 1],
                [1, 2, 4],
                [1, 3, 9]])
    """
    _check_tensor(x, "linalg.vander", "x")
    if x._data.ndim < 1:
        if N is None:
            raise RuntimeError("N must be greater than 1.")
        x = x.reshape(1)  # a 0-dim x is one point, as in torch
    if x.dtype in (dt.bool, dt.float16, dt.bfloat16):
        raise RuntimeError(f"linalg.vander supports floating point, complex, and integer "
                           f"tensors, but got {_short(x)}")
    count = x._data.shape[-1] if N is None else int(N)
    if count <= 1:
        raise RuntimeError("N must be greater than 1.")
    return _powers(x, count)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-D ``x``: columns ``x ** (N - 1), ..., x ** 0`` (the
    other way round with ``increasing``).

    Example::

        >>> ember.vander(ember.tensor([1, 2, 3]))
        tensor([[1, 1, 1],
                [4, 2, 1],
                [9, 3, 1]])
    """
    _check_tensor(x, "vander", "x")
    if x._data.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    count = x._data.shape[0] if N is None else int(N)
    if count < 0:
        raise RuntimeError("N must be non-negative.")
    if count == 0:
        from ..creation import empty

        dtype = dt.int64 if x.dtype.category <= dt._INT else x.dtype
        return empty((x._data.shape[0], 0), dtype=dtype, device=x._device)
    result = _powers(x, count)
    return result if increasing else result.flip(-1)
