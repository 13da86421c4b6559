"""Pieces of torch's ``_jit_internal`` that public modules re-export (annotations, dispatch).

Example::

    >>> from ember._jit_internal import BroadcastingList2
    >>> def f(kernel_size: BroadcastingList2[int]): ...
"""

from __future__ import annotations


class BroadcastingListCls:
    """``BroadcastingListN[T]``: "a T or a list of N T's" in TorchScript signatures.

    Indexing gives None, as in torch: the annotation only documents the argument.
    """

    def __getitem__(self, types):
        return None


BroadcastingList1 = BroadcastingListCls()
BroadcastingList2 = BroadcastingListCls()
BroadcastingList3 = BroadcastingListCls()
BroadcastingList4 = BroadcastingListCls()
BroadcastingList5 = BroadcastingListCls()
BroadcastingList6 = BroadcastingListCls()

# boolean_dispatch records here the two functions behind each dispatcher it builds
boolean_dispatched: dict = {}


def boolean_dispatch(arg_name, arg_index, default, if_true, if_false, module_name, func_name):
    """A function calling ``if_true`` or ``if_false`` by the value of one boolean argument.

    The flag is found by keyword ``arg_name``, else at position ``arg_index``, else ``default``
    (torch builds ``max_pool2d`` from its ``return_indices`` variants this way).

    Example::

        >>> f = boolean_dispatch("twice", 1, False, lambda x, t: 2 * x, lambda x, t=False: x,
        ...                      None, "f")
        >>> f(3, True), f(3)
        (6, 3)
    """

    def fn(*args, **kwargs):
        flag = kwargs[arg_name] if arg_name in kwargs else (
            args[arg_index] if arg_index < len(args) else default)
        return if_true(*args, **kwargs) if flag else if_false(*args, **kwargs)

    docs = [f.__doc__ for f in (if_true, if_false) if f.__doc__ is not None]
    if len(docs) == 2:
        raise RuntimeError("only one function can have a docstring")
    fn.__doc__ = docs[0] if docs else None
    for f in (if_true, if_false):
        f.__doc__ = fn.__doc__
    if module_name is not None:
        fn.__module__ = module_name
    if func_name is not None:
        fn.__name__ = func_name
    boolean_dispatched[fn] = {"if_true": if_true, "if_false": if_false, "index": arg_index,
                              "default": default, "arg_name": arg_name}
    return fn
