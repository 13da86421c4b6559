"""The ``*_copy`` forms of view ops (the view, then a contiguous copy of it) and
unsafe_split/unsafe_split_with_sizes/unsafe_chunk (split views without the multi-output guard
on in-place changes)."""

from __future__ import annotations

import builtins

from ..._tensor import Tensor
from .._methods import tensor_method
from .._operands import wrap_dim
from .._registry import write_out
from .._signature import signature
from .joins import chunk, split, split_with_sizes, unbind
from .slicing import as_strided, diagonal, select
from .views import expand, permute, squeeze, t, transpose, unsqueeze

__all__ = ["unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk"]


_COPY_FORMS = []


def _copy_form(name, view_name, view_fn, doc_example):
    """``name``: ``view_fn`` followed by a contiguous copy of its result(s), with ``out=``
    for single results."""
    def copy_fn(input, *args, out=None, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        view = view_fn(input, *args, **kwargs)
        if isinstance(view, (tuple, list)):
            return tuple(_contiguous_copy(v) for v in view)
        return write_out(_contiguous_copy(view), out, name)
    copy_fn.__name__ = copy_fn.__qualname__ = name
    copy_fn.__doc__ = f"""The result of ``{view_name}`` as a new contiguous tensor (sharing no
    memory with ``input``).

    Example::

        >>> {doc_example}
    """
    _COPY_FORMS.append(name)
    return copy_fn


def _contiguous_copy(t):
    from ..creation import clone_op

    return clone_op(t, memory_format="contiguous")


def _expand_view(input, size, *, implicit=False):
    return expand(input, size)


def _slice_view(input, dim=0, start=None, end=None, step=1):
    key = [builtins.slice(None)] * input.ndim
    key[wrap_dim(dim, input.ndim)] = builtins.slice(start, end, step)
    return input[tuple(key)]


def _view_as_real(input):
    from ..pointwise import view_as_real

    return view_as_real(input)


def _view_as_complex(input):
    from ..pointwise import view_as_complex

    return view_as_complex(input)


for _name, _view_name, _fn, _example in (
        ("view_copy", "view", lambda input, size: input.view(size),
         "ember.view_copy(ember.arange(4), (2, 2)).shape\n        ember.Size([2, 2])"),
        ("permute_copy", "permute", lambda input, dims: permute(input, dims),
         "ember.permute_copy(ember.zeros(2, 3), (1, 0)).stride()\n        (2, 1)"),
        ("expand_copy", "expand", _expand_view,
         "ember.expand_copy(ember.tensor([1, 2]), (2, 2)).stride()\n        (2, 1)"),
        ("squeeze_copy", "squeeze", lambda input, dim=None: squeeze(input, dim),
         "ember.squeeze_copy(ember.zeros(1, 2)).shape\n        ember.Size([2])"),
        ("unsqueeze_copy", "unsqueeze", unsqueeze,
         "ember.unsqueeze_copy(ember.zeros(2), 0).shape\n        ember.Size([1, 2])"),
        ("t_copy", "t", t, "ember.t_copy(ember.zeros(2, 3)).stride()\n        (2, 1)"),
        ("transpose_copy", "transpose", transpose,
         "ember.transpose_copy(ember.zeros(2, 3), 0, 1).stride()\n        (2, 1)"),
        ("diagonal_copy", "diagonal", diagonal,
         "ember.diagonal_copy(ember.eye(2))\n        tensor([1., 1.])"),
        ("select_copy", "select", select,
         "ember.select_copy(ember.arange(4).view(2, 2), 1, 0)\n        tensor([0, 2])"),
        ("slice_copy", "input[start:end:step] along dim", _slice_view,
         "ember.slice_copy(ember.arange(5), 0, 1, 4, 2)\n        tensor([1, 3])"),
        ("split_copy", "split", split,
         "ember.split_copy(ember.arange(3), 2)\n        (tensor([0, 1]), tensor([2]))"),
        ("split_with_sizes_copy", "split_with_sizes", split_with_sizes,
         "ember.split_with_sizes_copy(ember.arange(3), [1, 2])\n"
         "        (tensor([0]), tensor([1, 2]))"),
        ("unbind_copy", "unbind", unbind,
         "ember.unbind_copy(ember.arange(2))\n        (tensor(0), tensor(1))"),
        ("unfold_copy", "unfold",
         lambda input, dimension, size, step: input.unfold(dimension, size, step),
         "ember.unfold_copy(ember.arange(4), 0, 2, 2)\n        tensor([[0, 1],\n"
         "                [2, 3]])"),
        ("alias_copy", "alias", lambda input: input.view_as(input),
         "ember.alias_copy(ember.ones(2))\n        tensor([1., 1.])"),
        ("detach_copy", "detach", lambda input: input.detach(),
         "ember.detach_copy(ember.ones(1, requires_grad=True)).requires_grad\n        False"),
        ("as_strided_copy", "as_strided", as_strided,
         "ember.as_strided_copy(ember.arange(4), (2,), (2,))\n        tensor([0, 2])"),
        ("view_as_real_copy", "view_as_real", _view_as_real,
         "ember.view_as_real_copy(ember.tensor([1+2j]))\n        tensor([[1., 2.]])"),
        ("view_as_complex_copy", "view_as_complex", _view_as_complex,
         "ember.view_as_complex_copy(ember.tensor([[1., 2.]]))\n"
         "        tensor([1.+2.j])")):
    globals()[_name] = _copy_form(_name, _view_name, _fn, _example)
__all__ += _COPY_FORMS


def _unguarded(views):
    """Split views that in-place operations may change (torch's ``unsafe_*`` forms drop the
    multi-output guard; the caller promises not to write through several of them)."""
    for v in views:
        if v._base is not None:
            v._vmeta = 0
    return views


@tensor_method
@signature("unsafe_split(Tensor input, SymInt split_size, int dim=0) -> Tensor[]")
def unsafe_split(input, split_size, dim=0):
    """:func:`split` whose results may be changed in place even while autograd records.

    Example::

        >>> ember.unsafe_split(ember.arange(5), 2)
        (tensor([0, 1]), tensor([2, 3]), tensor([4]))
    """
    return _unguarded(split(input, split_size, dim))


@tensor_method
@signature("unsafe_split_with_sizes(Tensor input, SymInt[] split_sizes, int dim=0) -> Tensor[]")
def unsafe_split_with_sizes(input, split_sizes, dim=0):
    """:func:`split_with_sizes` whose results may be changed in place.

    Example::

        >>> ember.unsafe_split_with_sizes(ember.arange(5), [2, 3])
        (tensor([0, 1]), tensor([2, 3, 4]))
    """
    return _unguarded(split_with_sizes(input, split_sizes, dim))


@tensor_method
def unsafe_chunk(input, chunks, dim=0):
    """:func:`chunk` whose results may be changed in place.

    Example::

        >>> ember.unsafe_chunk(ember.arange(5), 2)
        (tensor([0, 1, 2]), tensor([3, 4]))
    """
    return _unguarded(chunk(input, chunks, dim))


del _name, _view_name, _fn, _example
