"""Which tensor memory is shared with code outside ember, and so cannot be grown by ``resize_``.

torch gives a tensor made by ``from_numpy``, ``frombuffer``, ``from_dlpack`` or a sharing
``as_tensor``/``asarray`` a storage that is not resizable, and makes a storage non-resizable
once ``.numpy()`` has handed its memory to NumPy: ``resize_`` to more elements than the
storage holds then raises "Trying to resize storage that is not resizable", while shrinking
and regrowing within the storage stay allowed.

ember's storage is the array at the root of a tensor's ``.base`` chain
(``Tensor._storage_root``), so the mark is kept per root array: every tensor on that memory
(views, ``detach()``, ``set_`` onto its storage) sees it, and the mark goes when the array does.

Example::

    >>> import numpy as np
    >>> t = ember.from_numpy(np.zeros(4, dtype=np.float32))
    >>> is_shared(t)
    True
    >>> t.resize_(2).shape, is_shared(ember.zeros(2))
    (ember.Size([2]), False)
"""

from __future__ import annotations

import weakref

# id(root array) -> the root array, held weakly: an entry leaves with its array, so a later
# array given the same id is never taken for a shared one.
_SHARED_ROOTS = weakref.WeakValueDictionary()


def mark_shared(tensor):
    """Record that ``tensor``'s memory is shared outside ember; returns ``tensor``.

    Example::

        >>> t = mark_shared(ember.zeros(3))
        >>> is_shared(t[1:])
        True
    """
    root = tensor._storage_root()
    try:
        _SHARED_ROOTS[id(root)] = root
    except TypeError:
        pass  # an array type without weak references (none of NumPy's): it stays growable
    return tensor


def is_shared(tensor):
    """Whether ``tensor``'s memory was marked by :func:`mark_shared`.

    Example::

        >>> is_shared(ember.ones(2))
        False
    """
    root = tensor._storage_root()
    return _SHARED_ROOTS.get(id(root)) is root
