"""Guards: what a compiled graph assumed about its call, reduced to a key that the next call
must match to reuse it.

A key holds the structure of the arguments (containers, plain Python values by value, other
objects by identity), each tensor's shape, dtype, device, ``requires_grad``, type and strides
(view operators replay the strides they were traced with, as torch's TENSOR_MATCH guards
them; the storage offset is not guarded: a view starts where its input starts), which
arguments are the same tensor, global grad mode and autocast, and, for a module, each
submodule's training flag, plain attributes, the identity of its parameters, buffers and
children and its tensors' layouts (as the tensors a plain function reads from its globals or
closure). With *dynamic* dimensions the shapes in the key have ``None`` where a size may vary
(sizes 0 and 1 stay specialised, as in torch), and the strides become their
:func:`stride_pattern` (the order of the dims in memory and which are packed, expanded or
strided), which torch's symbolic strides express as formulas of the sizes.

Example::

    >>> key, tensors = call_key((ember.ones(2, 3),), {}, ())
    >>> len(tensors)
    1
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from functools import lru_cache
from itertools import chain
from operator import attrgetter

from .. import _dtype
from .._tensor import Tensor
from ..autograd import grad_mode
from ..nn.modules import module as _module_file
from ..nn.modules.module import Module
from ..ops._registry import autocast_state

__all__ = ["call_key", "module_state", "referenced_objects", "mask_shapes",
           "stride_pattern", "describe_difference", "GuardedModules", "FastGuard"]

_PLAIN = (type(None), bool, int, float, str, complex, bytes)


def _spec(obj, tensors):
    if isinstance(obj, Tensor):
        tensors.append(obj)
        return "T"
    kind = type(obj)
    if kind in _PLAIN:
        return (kind, obj)
    if kind in (tuple, list):
        return (kind, tuple([_spec(o, tensors) for o in obj]))
    if kind is dict:
        return (dict, tuple([(k, _spec(v, tensors)) for k, v in obj.items()]))
    if isinstance(obj, Module):  # a module argument: its state is guarded as a compiled one's
        return ("module", id(obj), module_state(tuple(obj.modules())))
    try:
        hash(obj)
    except TypeError:
        return ("id", id(obj))
    if isinstance(obj, tuple):  # a named tuple, torch.Size
        return (kind, tuple(_spec(o, tensors) for o in obj))
    return ("obj", kind, obj) if _hashable_by_value(obj) else ("id", id(obj))


def _hashable_by_value(obj):
    """dtypes, devices, enums...: immutable objects compared by value."""
    from .._device import device

    return isinstance(obj, (_dtype.dtype, device)) or type(obj).__module__ == "enum"


def tensor_meta(t):
    """What a tensor argument's graph depends on (``call_key`` builds the same inline).

    Example::

        >>> tensor_meta(ember.ones(2))[0]
        (2,)
    """
    data = t._data
    return (tuple(data.shape), data.dtype, t._device, t.requires_grad, type(t),
            data.strides if data.size else _empty_strides(t))


def _empty_strides(t):
    """An empty tensor's strides in bytes as torch counts them (NumPy gives fresh empty arrays
    zero strides where torch gives contiguous ones: they would recompile where torch does
    not)."""
    return tuple([s * t._data.dtype.itemsize for s in t.stride()])


def module_state(modules):
    """Each module's training flag, plain attributes, the identity of what it holds (its
    parameters, buffers, children and other tensor attributes), the layout of its tensors
    (shape, strides, dtype, device: ``p.data = ...`` changes them in place) and its hooks.

    Example::

        >>> len(module_state(tuple(ember.nn.Linear(1, 1).modules())))
        1
    """
    return tuple([_one_module(m) for m in modules])


class GuardedModules(tuple):
    """The modules a compiled function guards, remembering their :func:`module_state` between
    calls. The state is read again only when something it covers may have moved: an
    attribute assigned or deleted on any module (``Module.__setattr__`` counts them), a dict
    of parameters, buffers, children or forward hooks that changed size, a different
    object in one of them (compared by identity, so a direct
    ``module._parameters[name] = p`` is seen too), or a tensor holding another array
    (``p.data = ...``, ``set_``, an in-place transpose). A hit costs one pass over those
    dicts and tensors instead of reading every attribute of every module.

    Example::

        >>> net = ember.nn.Linear(2, 2)
        >>> modules = GuardedModules(net.modules())
        >>> first = modules.state()
        >>> modules.state() is first
        True
        >>> net.train(False)
        Linear(in_features=2, out_features=2, bias=True)
        >>> modules.state() == first
        False
    """

    _HOLDERS = ("_parameters", "_buffers", "_modules", "_forward_hooks", "_forward_pre_hooks")

    def __new__(cls, modules):
        self = super().__new__(cls, modules)
        self._count = None     # Module.__setattr__'s count when the state was read
        self._holders = ()     # every such dict of every module (their sizes are compared)
        self._filled = ()      # the non-empty ones (their values are compared by identity)
        self._views = ()       # their values() views
        self._held = ()        # those values then (kept alive, so that their ids stay unique)
        self._tensors = ()     # the modules' tensors, and their arrays then (by identity)
        self._arrays = ()
        self._seen = None      # their _snapshot() then
        self._state = None
        return self

    def state(self):
        """The modules' state as a :class:`StateToken`, reread only when it may differ."""
        if self._count == _module_file._setattr_count and self._snapshot() == self._seen:
            return self._state
        return self._read()

    def _snapshot(self):
        """The dicts' sizes, then the ids of their values and of the tensors' arrays, in one
        list (one ``==``): the objects are kept alive, so an equal id is the same object,
        and equal sizes put the ids at the same places."""
        return [*map(len, self._holders), *map(id, chain(*self._views, map(_ARRAY, self._tensors)))]

    def _read(self):
        self._count = _module_file._setattr_count
        holders = [getattr(m, "__dict__", {}).get(name) for m in self for name in self._HOLDERS]
        if all(type(d) in _DICTS for d in holders):
            self._holders = tuple(holders)
            self._filled = tuple(d for d in holders if d)
            self._views = tuple(d.values() for d in self._filled)  # live: read per call
            self._held = tuple(chain.from_iterable(map(dict.values, self._filled)))
            self._tensors = tuple(t for m in self for t in m.__dict__.values()
                                  if isinstance(t, Tensor)) + \
                tuple(t for t in self._held if isinstance(t, Tensor))
            self._arrays = tuple(map(_ARRAY, self._tensors))
            self._seen = self._snapshot()
        else:  # a module keeping them in other mappings (nn.cpp's): read in full each call
            self._count = None
        self._state = StateToken.of(module_state(self))
        return self._state


class StateToken:
    """A module state tuple with its hash computed once, one token per distinct state (so
    that a guard key holding it hashes and compares in constant time).

    Example::

        >>> StateToken.of((1, 2)) is StateToken.of((1, 2))
        True
    """

    __slots__ = ("state", "_hash", "__weakref__")
    _TOKENS = weakref.WeakValueDictionary()

    def __init__(self, state):
        self.state = state
        self._hash = hash(state)

    @classmethod
    def of(cls, state):
        token = cls._TOKENS.get(state)
        if token is None:
            token = cls._TOKENS[state] = cls(state)
        return token

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        return self is other or (type(other) is StateToken and self._hash == other._hash
                                 and self.state == other.state)


_DICTS = (dict, OrderedDict)
_ARRAY = attrgetter("_data")


def _one_module(m):
    attributes = m.__dict__
    names = tuple(attributes)
    layout = _LAYOUTS.get(m)
    if layout is None or layout[0] != names:
        layout = _LAYOUTS[m] = _layout(attributes, names)
    read = attributes.__getitem__
    plain = tuple(map(read, layout[1]))
    tensors = tuple(map(read, layout[2]))
    types = (tuple(map(type, plain)), tuple(map(type, tensors)))
    if types != layout[3]:  # an attribute changed kind: read the layout again
        layout = _LAYOUTS[m] = _layout(attributes, names)
        plain = tuple(map(read, layout[1]))
        tensors = tuple(map(read, layout[2]))
        types = layout[3]
    # the types come before the values: tuples compare item by item, so a value is never
    # compared with one of another kind (a tensor's == is elementwise)
    parameters, buffers = attributes["_parameters"], attributes["_buffers"]
    return (names, types, plain, tuple(map(id, tensors)),
            tuple(map(id, parameters.values())), tuple(map(id, buffers.values())),
            tuple(map(_tensor_layout, chain(tensors, parameters.values(), buffers.values()))),
            tuple(map(id, attributes["_modules"].values())),
            tuple(map(id, attributes.get("_forward_hooks", _EMPTY).values())),
            tuple(map(id, attributes.get("_forward_pre_hooks", _EMPTY).values())))


def _tensor_layout(t):
    """What a graph that reads ``t`` by name assumed about it besides its identity."""
    if not isinstance(t, Tensor):  # a buffer or parameter registered as None
        return None
    data = t._data
    return data.shape, data.strides, data.dtype, t._device


def _layout(attributes, names):
    """Which of a module's attributes the guard reads by value (plain Python values) and
    which by identity (tensors), and their types, for this set of attribute names."""
    plain = tuple(n for n in names if type(attributes[n]) in _PLAIN)
    tensors = tuple(n for n in names if isinstance(attributes[n], Tensor))
    types = (tuple(type(attributes[n]) for n in plain),
             tuple(type(attributes[n]) for n in tensors))
    return names, plain, tensors, types


_EMPTY = {}
_LAYOUTS = weakref.WeakKeyDictionary()  # module -> its _layout, while names and types hold


def referenced_objects(fn):
    """The tensors and modules a plain function reads from its globals and closure (the
    names its code uses): a compiled function guards on their identity, and on the
    modules' state.

    Example::

        >>> w = ember.ones(1)
        >>> len(referenced_objects(lambda x: x * w)[0])
        1
    """
    code = getattr(fn, "__code__", None)
    if code is None:
        return (), GuardedModules(fn.modules()) if isinstance(fn, Module) else ()
    found = []
    scope = getattr(fn, "__globals__", {})
    found += [(scope, name) for name in code.co_names
              if isinstance(scope.get(name), (Tensor, Module))]
    cells = getattr(fn, "__closure__", None) or ()
    for cell in cells:
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if isinstance(value, (Tensor, Module)):
            found.append((cell, None))
    modules = []
    bound_to = getattr(fn, "__self__", None)  # a module's bound method
    if isinstance(bound_to, Module):
        modules.extend(bound_to.modules())
    for owner, name in found:
        value = owner.cell_contents if name is None else owner[name]
        if isinstance(value, Module):
            modules.extend(value.modules())
    return tuple(found), GuardedModules(modules)


def referenced_state(found, modules):
    """The guard part of :func:`referenced_objects`: identities, then module state.

    Example::

        >>> referenced_state((), ())
        ((), None)
    """
    values = [owner.cell_contents if name is None else owner.get(name) for owner, name in found]
    ids = tuple([(id(v), _tensor_layout(v)) for v in values])
    return ids, _state_of(modules) if modules else None


def _state_of(modules):
    return modules.state() if type(modules) is GuardedModules else module_state(modules)


def call_key(args, kwargs, modules, referenced=None):
    """``(key, tensors)`` of a call: ``key = (context, metas)``, ``context`` everything but
    the tensors' metadata; ``referenced``: :func:`referenced_objects` of a plain function.

    Example::

        >>> key, tensors = call_key((ember.ones(2), 3), {}, ())
        >>> key[1][0][0], len(tensors)
        ((2,), 1)
    """
    if not kwargs and type(args) is tuple and all([isinstance(a, Tensor) for a in args]):
        tensors = list(args)
        spec = (tuple, ("T",) * len(args))
    else:
        tensors = []
        spec = _spec((args, kwargs), tensors) if kwargs else _spec(args, tensors)
    if len(set(map(id, tensors))) == len(tensors):  # no tensor passed twice
        aliasing = tuple(range(len(tensors)))
    else:
        first = {}
        aliasing = tuple([first.setdefault(id(t), i) for i, t in enumerate(tensors)])
    context = (spec, aliasing, grad_mode.state.enabled, autocast_state.on,
               _state_of(modules) if modules else None,
               referenced_state(*referenced) if referenced else None,
               _dtype.get_default_dtype())
    # the array's strides in bytes: with the dtype in the key they pin torch's element strides
    metas = tuple([(tuple(t._data.shape), t._data.dtype, t._device, t.requires_grad,
                    type(t), t._data.strides if t._data.size else _empty_strides(t))
                   for t in tensors])
    return (context, metas), tensors


class FastGuard:
    """The guard of one cached variant whose arguments are tensors only (no keywords, no
    tensor passed twice, no empty one), checked without building :func:`call_key`'s key:
    the modes and each tensor's metadata compared with the key's, the module state by its
    token's identity. It accepts exactly the calls whose key equals the variant's (a
    refusal sends the call to the full lookup); it exists because a tiny graph's call is
    dominated by that lookup (building the key, hashing it: a device hashes in Python).

    Example::

        >>> x = ember.ones(2)
        >>> key, _ = call_key((x,), {}, ())
        >>> guard = FastGuard.of(key, "entry", (), None)
        >>> guard.matches((ember.zeros(2),)), guard.matches((ember.zeros(3),))
        (True, False)
    """

    __slots__ = ("entry", "count", "modes", "metas", "modules", "state", "referenced",
                 "referenced_state")

    @classmethod
    def of(cls, key, entry, modules, referenced):
        """The fast guard of ``entry`` cached under ``key`` (built by :func:`call_key` with
        ``modules`` and ``referenced``), or None when the key is not of the simple kind."""
        (spec, aliasing, grad, autocast, state, referenced_key, default), metas = key
        count = len(metas)
        if spec != (tuple, ("T",) * count) or aliasing != tuple(range(count)) or \
                any(0 in meta[0] for meta in metas) or \
                (modules and type(modules) is not GuardedModules):
            return None
        guard = cls()
        guard.entry, guard.count, guard.metas = entry, count, metas
        guard.modes = (grad, autocast, default)
        guard.modules, guard.state = modules or None, state
        # a plain function reading no tensor or module by name: nothing to read per call
        guard.referenced = referenced if referenced_key != ((), None) else None
        guard.referenced_state = referenced_key
        return guard

    def matches(self, args):
        """Whether the call ``f(*args)`` (no keywords) has this variant's key."""
        if len(args) != self.count or self.modes != (grad_mode.state.enabled,
                                                     autocast_state.on, _dtype._default_dtype):
            return False
        for t, meta in zip(args, self.metas):
            kind = type(t)
            if kind is not meta[4]:
                return False
            data = t._data  # a shape without a 0 (the key's) makes the strides the array's
            if (data.shape, data.dtype, t._device, t.requires_grad, kind, data.strides) != meta:
                return False
        if self.count > 1 and len(set(map(id, args))) != self.count:
            return False
        if self.modules is not None and self.modules.state() is not self.state:
            return False
        return self.referenced is None or \
            referenced_state(*self.referenced) == self.referenced_state


def mask_shapes(metas, dynamic):
    """``metas`` with the dynamic dims (``dynamic[i]``: the dims of tensor ``i``) as ``None``,
    except sizes 0 and 1, which stay specialised, and such a tensor's strides as their
    :func:`stride_pattern`; None when a dynamic dim is 0 or 1.

    Example::

        >>> import numpy as np
        >>> meta = ((4, 3), np.dtype("float32"), "cpu", False, ember.Tensor, (12, 4))
        >>> mask_shapes((meta,), [{0}])[0][0]
        (None, 3)
    """
    masked = []
    for meta, dims in zip(metas, dynamic):
        if not dims:
            masked.append(meta)
            continue
        shape = list(meta[0])
        for d in dims:
            if d >= len(shape) or shape[d] < 2:
                return None
            shape[d] = None
        pattern = stride_pattern(meta[0], meta[5], meta[1].itemsize)
        masked.append((tuple(shape),) + meta[1:5] + (pattern,))
    return tuple(masked)


@lru_cache(maxsize=4096)  # a dynamic graph's lookup asks again on each call
def stride_pattern(shape, strides, itemsize):
    """What strides (in bytes) say about a layout apart from the sizes: the dims from the
    innermost out, each marked ``0`` (expanded), ``"packed"`` (its stride is the extent of
    the dims inside it: no gap) or its stride itself (a gap, as a slice with a step makes).
    Two layouts of one shape with the same pattern have the same strides.

    Example::

        >>> stride_pattern((2, 3), (24, 8), 8), stride_pattern((3, 2), (8, 24), 8)
        (((1, 'packed'), (0, 'packed')), ((0, 'packed'), (1, 'packed')))
    """
    order = sorted(range(len(shape)), key=lambda d: (strides[d], -d))
    pattern, extent = [], itemsize
    for d in order:
        stride = strides[d]
        if stride == 0:
            pattern.append((d, 0))
            continue
        pattern.append((d, "packed" if stride == extent else stride))
        extent = stride * max(shape[d], 1)
    return tuple(pattern)


def describe_difference(old, new):
    """A short reason why key ``new`` missed the cached key ``old`` (for the recompiles log).

    Example::

        >>> a, _ = call_key((ember.ones(2),), {}, ())
        >>> b, _ = call_key((ember.ones(3),), {}, ())
        >>> describe_difference(a, b)
        'tensor argument 0: size mismatch, expected (2,), actual (3,)'
    """
    (old_context, old_metas), (new_context, new_metas) = old, new
    names = ("arguments", "argument aliasing", "grad mode", "autocast", "module state",
             "globals or closure of the function", "default dtype")
    for name, a, b in zip(names, old_context, new_context):
        if a != b:
            if name == "grad mode":
                return f"global grad mode changed ({a} -> {b})"
            if name == "module state":
                return "a module's training flag, attributes or parameters changed"
            return f"{name} changed"
    for i, (a, b) in enumerate(zip(old_metas, new_metas)):
        for what, x, y in zip(("size", "dtype", "device", "requires_grad", "type"), a, b):
            if x != y:
                return f"tensor argument {i}: {what} mismatch, expected {x}, actual {y}"
        if a[5:] != b[5:]:
            return f"tensor argument {i}: " + _stride_difference(a, b)
    return "number of tensor arguments changed"


def _stride_difference(old, new):
    """Torch's words for the first stride that differs, counted in elements."""
    item = old[1].itemsize
    index = next(i for i, (x, y) in enumerate(zip(old[5], new[5])) if x != y)
    return (f"stride mismatch at index {index}. expected {old[5][index] // item}, "
            f"actual {new[5][index] // item}")


_CONTAINERS = (list, dict, set)
_MODULE_OWN = None  # the attribute names every Module has (its own dicts of parameters...)


def containers_snapshot(fn, args, kwargs, modules):
    """The plain lists, dicts and sets a call can reach by name (its modules' attributes,
    modules among its arguments, the globals its code names), each as its identity, length
    and the identity of its items. A capture that changes one breaks: the replay would not
    repeat the change (an activation appended to a list, a global log).

    Example::

        >>> log = []
        >>> record = lambda x: log.append(x)
        >>> before = containers_snapshot(record, (), {}, ())
        >>> record(1)
        >>> containers_snapshot(record, (), {}, ()) == before
        False
    """
    global _MODULE_OWN
    if _MODULE_OWN is None:
        _MODULE_OWN = frozenset(Module().__dict__)
    every = list(modules)
    every += [m for a in (*args, *kwargs.values()) if isinstance(a, Module) for m in a.modules()]
    found = []
    for m in every:
        found += [v for k, v in m.__dict__.items() if type(v) in _CONTAINERS
                  and k not in _MODULE_OWN]
    target = fn.forward if isinstance(fn, Module) else fn
    code = getattr(getattr(target, "__func__", target), "__code__", None)
    scope = getattr(getattr(target, "__func__", target), "__globals__", {})
    if code is not None:
        found += [scope[n] for n in code.co_names if type(scope.get(n)) in _CONTAINERS]
    return tuple(_content(c) for c in found)


def _content(container):
    if type(container) is dict:
        return (id(container), len(container), tuple(map(id, container)),
                tuple(map(id, container.values())))
    return (id(container), len(container), tuple(map(id, container)))
