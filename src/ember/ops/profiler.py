"""``ember.ops.profiler``: the profiler's range operators, as ``torch.ops.profiler`` has them.

``_record_function_enter(name)`` opens a :class:`~ember.profiler.record_function` range and
returns its handle; ``_record_function_exit(handle)`` closes it. They are what a graph calls
to keep a profiler range (a traced ``with record_function(...)`` block), so they are ordinary
callables usable as ``call_function`` targets, and dead-code elimination keeps them.

>>> import ember
>>> with ember.profiler.profile() as prof:
...     handle = ember.ops.profiler._record_function_enter("block")
...     _ = ember.ones(2) + 1
...     ember.ops.profiler._record_function_exit(handle)
>>> [event.name for event in prof.events()]
['block', 'aten::add']
"""

from __future__ import annotations


class _ProfilerOp:
    """One operator of the ``profiler`` namespace (torch's ``OpOverloadPacket`` shape:
    ``str()`` is ``'profiler.<name>'``, ``.default`` is the operator itself)."""

    _ember_op_packet = True

    def __init__(self, function):
        self._function = function
        self.__name__ = self.__qualname__ = function.__name__
        self.__module__ = __name__
        self.__doc__ = function.__doc__
        self.default = self

    def __call__(self, *args, **kwargs):
        from ..overrides import handle_torch_function, has_torch_function
        arguments = args + tuple(kwargs.values())
        if has_torch_function(arguments):  # a Proxy or other tensor-like: let it record
            return handle_torch_function(self, arguments, *args, **kwargs)
        return self._function(*args, **kwargs)

    def __str__(self):
        return f"profiler.{self.__name__}"

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self}')>"

    def __reduce__(self):
        return (_lookup, (self.__name__,))

    def overloads(self):
        """The overload names (``['default']``)."""
        return ["default"]


def _lookup(name):
    """The operator called ``name`` (how pickles refer to one)."""
    return globals()[name]


def _enter(name, args=None):
    from ..profiler._recorder import record_function
    if not isinstance(name, str):
        raise RuntimeError(f"profiler::_record_function_enter() Expected a value of type 'str' "
                           f"for argument 'name' but instead found type "
                           f"'{type(name).__name__}'.")
    handle = record_function(name, args)
    handle.__enter__()
    return handle


def _record_function_enter(name, args=None):
    """Open a profiler range named ``name``; returns the handle to close it with."""
    return _enter(name, args)


def _record_function_enter_new(name, args=None):
    """Open a profiler range named ``name``; returns the handle to close it with."""
    return _enter(name, args)


def _record_function_exit(handle):
    """Close the profiler range opened as ``handle``."""
    from ..profiler._recorder import record_function
    if not isinstance(handle, record_function):
        raise RuntimeError(f"profiler::_record_function_exit() expected the handle returned by "
                           f"_record_function_enter, got {type(handle).__name__}")
    handle.__exit__(None, None, None)


_record_function_enter = _ProfilerOp(_record_function_enter)
_record_function_enter_new = _ProfilerOp(_record_function_enter_new)
_record_function_exit = _ProfilerOp(_record_function_exit)
_record_function_exit._RecordFunction = _record_function_exit
