"""Sizes as traced values: ``x.size(0)`` read while tracing is recorded, like torch's
``aten::size``, so that a trace runs at other batch sizes.

While :func:`ember.jit.trace` runs, the tracer swaps a short table of public entry points
(:data:`SIZE_SOURCES` and :data:`SIZE_CONSUMERS`) for recording versions, and puts them back
when the trace ends; nothing on the operator hot path changes.

* **Sources.** ``Tensor.size()``, ``.shape`` and ``.numel()`` called from user code return
  :class:`SizeInt` s: ints that remember the graph value holding them (a ``call`` node
  ``method:size``). ember's own code keeps reading plain ints, so the primitives it records
  stay as they were (except ``unsqueeze``, recorded by its dim: ``stack`` uses it).
  ``len(x)`` cannot be traced (Python makes it a plain int): it warns, as in torch.
* **Arithmetic** (``+ - * // %``, unary ``-``) on a :class:`SizeInt` is recorded as an
  ``operator.*`` call and gives another :class:`SizeInt`.
* **Consumers.** ``view``, ``reshape``, ``expand``, ``zeros(...)``, ``arange(n)``... given a
  :class:`SizeInt`, and the functions whose result shape follows their input's shape
  (``flatten``, ``zeros_like``...), are recorded whole as one ``call`` node of the public
  function, with the traced sizes as its inputs: the replay calls the function again with the
  sizes of the new input.
* **Python values.** Comparing a :class:`SizeInt`, or using it as a bool or an index, bakes
  its value into the trace: ember warns with :class:`TracerWarning` as torch does.
"""

from __future__ import annotations

import operator
import sys
import threading
import warnings

from .._tensor import Size, Tensor, _trace_state

__all__ = ["SizeInt", "install", "uninstall"]

_PYTHON_VALUE = ("Converting a tensor to a Python {what} might cause the trace to be incorrect. "
                 "We can't record the data flow of Python values, so this value will be "
                 "treated as a constant in the future. This means that the trace might not "
                 "generalize to other inputs!")


def _is_user_frame(depth):
    """Whether the code ``depth`` frames above the caller lives outside ember."""
    name = sys._getframe(depth + 1).f_globals.get("__name__", "")
    return not (name == "ember" or name.startswith("ember."))


def _active(tracer):
    """``tracer`` records now, on this thread (not paused, not another thread's call)."""
    return _trace_state.tracer is tracer and threading.get_ident() == tracer.thread


# ---------------------------------------------------------------- the traced int


class SizeInt(int):
    """An int read from a traced tensor's shape; ``value`` is the graph value that holds it.

    Example::

        >>> f = ember.jit.trace(lambda x: x.view(x.size(0), -1), ember.zeros(2, 3, 4))
        >>> f(ember.zeros(5, 3, 4)).shape
        ember.Size([5, 12])
    """

    def __new__(cls, number, value, tracer):
        self = int.__new__(cls, number)
        self.value = value
        self.tracer = tracer
        return self

    def _python_value(self, what):
        if _active(self.tracer) and _is_user_frame(2):
            warnings.warn(_PYTHON_VALUE.format(what=what), _tracer_warning(), stacklevel=3)

    def __bool__(self):
        self._python_value("boolean")
        return int(self) != 0

    def __index__(self):
        self._python_value("index")
        return int.__int__(self)

    __hash__ = int.__hash__


def _tracer_warning():
    from ._tracer import TracerWarning

    return TracerWarning


def _comparison(name):
    compare = getattr(int, f"__{name}__")

    def method(self, other):
        self._python_value("boolean")
        return compare(self, other)
    method.__name__ = f"__{name}__"
    return method


def _arithmetic(name, reflected=False):
    plain = getattr(operator, name)

    def method(self, other):
        if isinstance(other, bool) or not isinstance(other, int):
            return NotImplemented
        left, right = (other, self) if reflected else (self, other)
        result = plain(int(left), int(right))
        if not _active(self.tracer):
            return result
        return self.tracer.record_size_call(f"operator.{name}", [left, right], result)
    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(SizeInt, f"__{_name}__", _comparison(_name))
for _name in ("add", "sub", "mul", "floordiv", "mod"):
    setattr(SizeInt, f"__{_name}__", _arithmetic(_name))
    setattr(SizeInt, f"__r{_name}__", _arithmetic(_name, reflected=True))


def _negate(self):
    if not _active(self.tracer):
        return -int(self)
    return self.tracer.record_size_call("operator.neg", [self], -int(self))


SizeInt.__neg__ = _negate
SizeInt.__int__ = lambda self: int.__int__(self)  # plain int, no record (ember's own int())


# ---------------------------------------------------------------- what the tracer swaps in


def _contains_size(obj):
    if isinstance(obj, SizeInt):
        return True
    if isinstance(obj, (tuple, list)):
        return any(_contains_size(o) for o in obj)
    return False


def _has_minus_one(args):
    return any(a == -1 if isinstance(a, int) and not isinstance(a, SizeInt)
               else isinstance(a, (tuple, list)) and _has_minus_one(a) for a in args)


def _source(original, name, tracer):
    """``Tensor.size``/``numel`` returning traced ints to user code."""
    def traced(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        if not _active(tracer) or not _is_user_frame(1):
            return result
        if isinstance(result, tuple):  # size() of every dim
            return Size(tracer.record_size_call("method:size", [self, d], s)
                        for d, s in enumerate(result))
        return tracer.record_size_call(f"method:{name}", [self, *args], result)
    traced.__name__ = original.__name__
    traced.__doc__ = original.__doc__
    return traced


def _shape_source(prop, tracer):
    def shape(self):
        result = prop.fget(self)
        if not _active(tracer) or not _is_user_frame(1):
            return result
        return Size(tracer.record_size_call("method:size", [self, d], s)
                    for d, s in enumerate(result))
    return property(shape, doc=prop.__doc__)


def _consumer(original, fn_name, always, minus_one, tracer):
    """A size-taking function recorded whole when its result depends on traced sizes."""
    def traced(*args, **kwargs):
        if not _active(tracer) or kwargs.get("out") is not None:
            return original(*args, **kwargs)
        dynamic = (_contains_size(args) or _contains_size(list(kwargs.values()))
                   or (always and args and isinstance(args[0], Tensor))
                   or (minus_one and _has_minus_one(args[1:]) and _is_user_frame(1)))
        if not dynamic:
            return original(*args, **kwargs)
        return tracer.record_public_call(fn_name, original, args, kwargs)
    traced.__name__ = getattr(original, "__name__", fn_name)
    traced.__doc__ = getattr(original, "__doc__", None)
    return traced


# (owner name, attribute, call name, record always, record a -1 size)
SIZE_CONSUMERS = (
    ("Tensor", "view", "method:view", False, True),
    ("Tensor", "reshape", "method:reshape", False, True),
    ("Tensor", "expand", "method:expand", False, False),
    ("Tensor", "repeat", "method:repeat", False, False),
    ("Tensor", "flatten", "method:flatten", True, False),
    ("Tensor", "new_zeros", "method:new_zeros", False, False),
    ("Tensor", "new_ones", "method:new_ones", False, False),
    ("Tensor", "new_full", "method:new_full", False, False),
    ("Tensor", "new_empty", "method:new_empty", False, False),
    ("ember", "reshape", "ember.reshape", False, True),
    ("ember", "flatten", "ember.flatten", True, False),
    ("ember", "zeros", "ember.zeros", False, False),
    ("ember", "ones", "ember.ones", False, False),
    ("ember", "empty", "ember.empty", False, False),
    ("ember", "full", "ember.full", False, False),
    ("ember", "arange", "ember.arange", False, False),
    ("ember", "zeros_like", "ember.zeros_like", True, False),
    ("ember", "ones_like", "ember.ones_like", True, False),
    ("ember", "full_like", "ember.full_like", True, False),
    ("ember", "empty_like", "ember.empty_like", True, False),
)
SIZE_SOURCES = ("size", "numel")

_LEN = ("Using len to get tensor shape might cause the trace to be incorrect. Recommended usage "
        "would be tensor.shape[0]. Passing a tensor of different shape might lead to errors or "
        "silently give incorrect results.")


def _len_source(original, tracer):
    """``len(x)``: Python makes its result a plain int, so the size is baked in (torch warns)."""
    def traced(self):
        if _active(tracer) and _is_user_frame(1):
            warnings.warn(_LEN, _tracer_warning(), stacklevel=2)
        return original(self)
    return traced


def install(tracer):
    """Swap the sources and consumers for ``tracer``'s recording versions; return what
    :func:`uninstall` needs to put the originals back."""
    import ember

    owners = {"Tensor": Tensor, "ember": ember}
    # a temporary patch for one trace, put back by uninstall: not a definition of these
    # methods, which stay where ember.ops._methods.METHODS says
    saved = [(Tensor, "shape", Tensor.__dict__["shape"])]
    Tensor.shape = _shape_source(Tensor.__dict__["shape"], tracer)
    for name in SIZE_SOURCES:
        original = Tensor.__dict__[name]
        saved.append((Tensor, name, original))
        setattr(Tensor, name, _source(original, name, tracer))
    saved.append((Tensor, "__len__", Tensor.__dict__["__len__"]))
    Tensor.__len__ = _len_source(Tensor.__dict__["__len__"], tracer)
    for owner_name, attr, fn_name, always, minus_one in SIZE_CONSUMERS:
        owner = owners[owner_name]
        original = getattr(owner, attr)
        saved.append((owner, attr, original))
        setattr(owner, attr, _consumer(original, fn_name, always, minus_one, tracer))
    return saved


def uninstall(saved):
    """Put back what :func:`install` swapped."""
    for owner, attr, original in reversed(saved):
        setattr(owner, attr, original)

