"""Tensor's shape methods: the family functions themselves, the in-place view methods
(``x.t_()``...) and the ``T``/``mT``/``H``/``mH`` properties."""

from __future__ import annotations

from .._methods import tensor_method
from .._registry import check_inplace_autograd
from . import _geometry, copies, joins, padding, rearrange, slicing, views
from .joins import split
from .rearrange import _repeat
from .slicing import _unfold, as_strided, narrow_copy
from .views import _H, _T, _mH, _mT, _view, squeeze, swapaxes, t, transpose, unsqueeze

_FAMILIES = (_geometry, views, slicing, joins, rearrange, padding, copies)


def _public(name):
    """The public function ``name`` of the shape family that defines it."""
    return next(vars(family)[name] for family in _FAMILIES if name in vars(family))


# ================================================================ Tensor methods


for _name in ("reshape", "view_as", "reshape_as", "flatten", "unflatten", "ravel", "squeeze",
              "unsqueeze", "transpose", "swapaxes", "swapdims", "t", "permute", "movedim",
              "moveaxis", "adjoint", "expand", "expand_as", "broadcast_to", "narrow", "select",
              "unbind", "split", "split_with_sizes", "chunk", "tensor_split", "hsplit", "vsplit",
              "dsplit", "diagonal", "as_strided", "flip", "fliplr", "flipud", "roll", "rot90",
              "repeat_interleave", "tile", "tril", "triu"):
    tensor_method(_public(_name), _name)
tensor_method(narrow_copy, "narrow_copy")


def _split_method(self, split_size, dim=0):
    """``ember.split(self, split_size, dim)``: the method names its argument ``split_size``
    (a size or a list of sizes), as torch's.

    Example::

        >>> [p.tolist() for p in ember.arange(4).split(split_size=3)]
        [[0, 1, 2], [3]]
    """
    return split(self, split_size, dim)


tensor_method(_split_method, "split")


def _tile_method(self, *dims, **kwargs):
    """``ember.tile(self, dims)``; the method also takes the sizes as separate ints, as torch's.

    Example::

        >>> ember.ones(1, 2).tile(2, 1).shape
        ember.Size([2, 2])
    """
    return _public("tile")(self, *((dims,) if len(dims) > 1 else dims), **kwargs)


tensor_method(_tile_method, "tile")


def _inplace_view(view_fn):
    """``x.t_()``-style methods: ``x`` itself takes the geometry of ``view_fn(x, ...)`` (same
    memory, new shape/strides, version bumped); autograd records the view's node on ``x``."""
    def method(self, *args, **kwargs):
        check_inplace_autograd(self)
        view = view_fn(self, *args, **kwargs)
        self._data = view._data
        node = view.grad_fn  # read while the view is current (the bump below would age it)
        self._vc[0] += 1
        if node is not None:
            self.grad_fn, self._output_nr = node, view._output_nr
        fw = getattr(view, "_fw_grad", None)
        if fw is not None:
            self._fw_grad = fw
        return self
    method.__name__ = view_fn.__name__ + "_"
    method.__doc__ = (f"In-place version of :meth:`Tensor.{view_fn.__name__}`: this tensor's "
                      f"shape and strides change, its memory stays.\n\n    Example::\n\n"
                      f"        >>> x = ember.zeros(2, 3); x.t_().shape\n"
                      f"        ember.Size([3, 2])\n")
    return method


tensor_method(_inplace_view(squeeze), "squeeze_")
tensor_method(_inplace_view(unsqueeze), "unsqueeze_")
tensor_method(_inplace_view(transpose), "transpose_")
tensor_method(_inplace_view(transpose), "swapdims_")
tensor_method(_inplace_view(swapaxes), "swapaxes_")
tensor_method(_inplace_view(t), "t_")
tensor_method(_inplace_view(as_strided), "as_strided_")
tensor_method(_view, "view")
tensor_method(_unfold, "unfold")
tensor_method(_repeat, "repeat")
tensor_method(property(_T), "T")
tensor_method(property(_mT), "mT")
tensor_method(property(_H), "H")
tensor_method(property(_mH), "mH")
del _name
