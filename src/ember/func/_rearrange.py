"""``torch.func.rearrange``: einops' ``rearrange`` on ember tensors.

A pattern names the input's axes on the left and the output's on the right, for example
``"b c (h w) -> b h w c"``: parentheses group axes that share one dimension, ``...`` stands
for any number of axes, ``1`` or ``()`` is an axis of size one. Sizes that the input does
not fix come as keywords (``h=2``). The result is a reshape, a permutation and a reshape.
"""

from __future__ import annotations

import math
import re

__all__ = ["rearrange"]

_TOKEN = re.compile(r"\(|\)|\.\.\.|[A-Za-z_][A-Za-z0-9_]*|\d+")
_ELLIPSIS = "..."


class _Parenthesized(list):
    """A group written in parentheses: one dimension, even when it holds '...'."""


def _parse_side(text):
    """The groups of one side: a list of lists of axis names ('...' and '1' kept as names)."""
    groups, current = [], None
    for token in _TOKEN.findall(text):
        if token == "(":
            if current is not None:
                raise ValueError(f"rearrange: nested parentheses in {text!r}")
            current = _Parenthesized()
        elif token == ")":
            if current is None:
                raise ValueError(f"rearrange: unbalanced parentheses in {text!r}")
            groups.append(current)
            current = None
        elif token.isdigit() and token != "1":
            raise ValueError(f"rearrange: only 1 is allowed as a number in a pattern, "
                             f"got {token}")
        elif current is not None:
            current.append(token)
        else:
            groups.append([token])
    if current is not None:
        raise ValueError(f"rearrange: unbalanced parentheses in {text!r}")
    leftover = _TOKEN.sub("", text).replace(" ", "")
    if leftover:
        raise ValueError(f"rearrange: unexpected characters {leftover!r} in {text!r}")
    return groups


def _names(groups):
    return [name for group in groups for name in group if name != "1"]


def _lhs_sizes(groups, shape, sizes):
    """The size of every elementary axis of the left side, and the dims '...' covers."""
    known = dict(sizes)
    has_ellipsis = any(_ELLIPSIS in g for g in groups)
    fixed = len(groups) - (1 if has_ellipsis else 0)
    if (len(shape) < fixed) if has_ellipsis else (len(shape) != fixed):
        raise ValueError(f"rearrange: the pattern has {fixed} dimensions but the tensor has "
                         f"{len(shape)}")
    ellipsis_dims = ()
    dims = list(shape)
    for group in groups:
        if group == [_ELLIPSIS] and not isinstance(group, _Parenthesized):
            count = len(shape) - fixed
            ellipsis_dims, dims = tuple(dims[:count]), dims[count:]
            continue
        if _ELLIPSIS in group:
            raise ValueError("rearrange: '...' in parentheses is only allowed on the right side")
        length = dims.pop(0)
        axes = [n for n in group if n != "1"]
        unknown = [n for n in axes if n not in known]
        product = math.prod(known[n] for n in axes if n in known)
        if len(unknown) > 1:
            raise ValueError(f"rearrange: could not infer sizes for {unknown}")
        if unknown:
            if product == 0 or length % product:
                raise ValueError(f"rearrange: can't divide axis of length {length} into "
                                 f"chunks of {product}")
            known[unknown[0]] = length // product
        elif product != length:
            raise ValueError(f"rearrange: shape mismatch, {length} != {product}")
    return known, ellipsis_dims


def rearrange(tensor, pattern, **axes_lengths):
    """Reorder, regroup, add or drop size-one axes of ``tensor`` as ``pattern`` says (a list
    or tuple of tensors is stacked first, along a new first axis).

    Example::

        >>> x = ember.arange(24).reshape(2, 3, 4)
        >>> ember.func.rearrange(x, "b c (h w) -> b h w c", h=2).shape
        ember.Size([2, 2, 2, 3])
    """
    from ..ops.shape import stack

    if isinstance(tensor, (list, tuple)):
        tensor = stack(list(tensor))
    if "->" not in pattern:
        raise ValueError(f"rearrange: the pattern needs '->', got {pattern!r}")
    left_text, right_text = pattern.split("->")
    left, right = _parse_side(left_text), _parse_side(right_text)
    left_names, right_names = _names(left), _names(right)
    if sorted(left_names) != sorted(right_names) or len(set(left_names)) != len(left_names):
        raise ValueError(f"rearrange: the two sides must name the same axes once each, got "
                         f"{left_names} and {right_names}")
    sizes, ellipsis_dims = _lhs_sizes(left, tuple(tensor.shape), axes_lengths)

    def size_of(name):
        return ellipsis_dims if name == _ELLIPSIS else (sizes[name],)

    elementary = [s for name in left_names for s in size_of(name)]
    flat = tensor.reshape(elementary)
    positions, start = {}, 0
    for name in left_names:
        count = len(size_of(name))
        positions[name] = list(range(start, start + count))
        start += count
    order = [p for name in right_names for p in positions[name]]
    moved = flat.permute(order)
    out_shape = []
    for group in right:
        if group == [_ELLIPSIS] and not isinstance(group, _Parenthesized):
            out_shape.extend(ellipsis_dims)
        else:
            out_shape.append(math.prod(s for n in group if n != "1" for s in size_of(n)))
    return moved.reshape(out_shape)
