"""Operations applied alike to a MaskedTensor's data and to its mask: views and reshapes,
indexing, joining and splitting. The results are new MaskedTensors (copies, as in torch).

Example::

    >>> mt = masked_tensor(ember.tensor([[1., 2.], [3., 4.]]),
    ...                    ember.tensor([[True, False], [True, True]]))
    >>> mt.t()
    MaskedTensor(
      [
        [  1.0000,   3.0000],
        [      --,   4.0000]
      ]
    )
"""

from __future__ import annotations

from ._autograd import gated
from .core import _wrap, is_masked_tensor

__all__ = []

PASSTHROUGH_NAMES = ("select transpose swapaxes swapdims split chunk t narrow expand expand_as "
                     "view view_as reshape reshape_as flatten unflatten cat concat concatenate "
                     "unsqueeze unfold stack __getitem__ mT").split()


def _mask(value):
    return value._masked_mask if is_masked_tensor(value) else value


def _replace(value, part):
    """``value`` with every MaskedTensor in it (lists and tuples searched) replaced by
    ``part`` of it (its data through :func:`gated`, or :func:`_mask`)."""
    if is_masked_tensor(value):
        return part(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_replace(item, part) for item in value)
    return value


def _replace_values(kwargs, part):
    return {key: _replace(value, part) for key, value in kwargs.items()}


def _wrap_results(data, mask):
    if isinstance(data, (list, tuple)):
        return tuple(_wrap_results(d, m) for d, m in zip(data, mask))
    return _wrap(data.clone(), mask.clone())


def apply_pass_through(func, args, kwargs):
    """``func`` applied to the data and to the mask of the MaskedTensors among ``args``.

    Example::

        >>> mt = masked_tensor(ember.tensor([1., 2.]), ember.tensor([True, False]))
        >>> apply_pass_through(ember.Tensor.unsqueeze, (mt, 0), {}).shape
        ember.Size([1, 2])
    """
    data = func(*_replace(args, gated), **_replace_values(kwargs, gated))
    mask = func(*_replace(args, _mask), **_replace_values(kwargs, _mask))
    return _wrap_results(data, mask)
