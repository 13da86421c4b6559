"""``ember.fx.immutable_collections``: the read-only list and dict that hold a node's arguments.

A :class:`~ember.fx.Node` stores the lists and dicts inside its ``args``/``kwargs`` as
:class:`immutable_list`/:class:`immutable_dict`, so that editing them in place (which would
bypass the bookkeeping of who uses which node) fails loudly; assign new arguments instead.
Both are hashable and pickle as themselves.
"""

from __future__ import annotations

__all__ = ["immutable_list", "immutable_dict"]

_HOW_TO_EDIT = """If you are attempting to modify the kwargs or args of a torch.fx.Node object,
instead create a new copy of it and assign the copy to the node:

    new_args = ...  # copy and mutate args
    node.args = new_args"""


def _refuse_mutation(self, *args, **kwargs):
    raise TypeError(f"{type(self).__name__!r} object does not support mutation. {_HOW_TO_EDIT}")


class immutable_list(list):
    """A :class:`list` that refuses every in-place change (``TypeError``) and can be hashed.

    >>> items = immutable_list([1, 2])
    >>> items + [3]
    [1, 2, 3]
    >>> items.append(3)
    Traceback (most recent call last):
    TypeError: 'immutable_list' object does not support mutation. ...
    """

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse_mutation
    append = extend = insert = pop = remove = clear = reverse = sort = _refuse_mutation

    def __hash__(self):
        return hash(tuple(self))

    def __reduce__(self):
        return (type(self), (tuple(self),))


class immutable_dict(dict):
    """A :class:`dict` that refuses every in-place change (``TypeError``) and can be hashed.

    >>> options = immutable_dict(dim=0)
    >>> options["dim"]
    0
    >>> options["dim"] = 1
    Traceback (most recent call last):
    TypeError: 'immutable_dict' object does not support mutation. ...
    """

    __setitem__ = __delitem__ = __ior__ = _refuse_mutation
    clear = pop = popitem = setdefault = update = _refuse_mutation

    def __hash__(self):
        return hash(frozenset(self.items()))

    def __reduce__(self):
        return (type(self), (tuple(self.items()),))
