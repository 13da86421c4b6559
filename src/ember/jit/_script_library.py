"""ember's own layers inside ``ember.jit.script(module)``: opaque calls, rebuilt by class name.

A module whose class, and the class of every module under it, is defined in ``ember.nn`` (an
LSTM, a TransformerEncoderLayer, a Sequential of ember layers...) is not compiled from its
source. The scripted graph reads it (``prim::GetAttr``) and calls it (``prim::CallMethod``),
as torch's graph calls a submodule, and the call runs the layer itself, so it behaves exactly
as in eager mode whatever Python its ``forward`` uses.

The scripted module holds a rebuilt copy of each such layer: an instance of the same class
whose plain state (sizes, flags, the activation function) is the original's and whose
parameters and buffers are the scripted module's own (shared with the original module, as for
every scripted module). A saved file stores the class by its import path inside ``ember.nn``
and that plain state; loading rebuilds the layer the same way, without running its
constructor and without the user's classes.

Example::

    >>> spec = describe(ember.nn.GRUCell(3, 4))
    >>> spec["class"], spec["state"]["hidden_size"]
    ('ember.nn.modules.rnn:GRUCell', 4)
"""

from __future__ import annotations

import importlib

from ..nn.modules.module import Module
from ._ir import decode_param, encode_param

__all__ = ["layer_class", "is_library_module", "library_roots", "describe", "rebuild",
           "encode_spec", "decode_spec", "call_method"]

_NAMESPACE = "ember.nn"
CALL_METHOD = 'prim::CallMethod[name="'


def _in_namespace(cls):
    name = cls.__module__ or ""
    return name == _NAMESPACE or name.startswith(_NAMESPACE + ".")


def _named_class(cls):
    """Whether ``cls`` is an ``ember.nn`` class found again by its import path (a class
    made at run time, as ``parametrize`` makes ``ParametrizedLinear``, is not)."""
    if not _in_namespace(cls):
        return False
    try:
        return _library_class(f"{cls.__module__}:{cls.__qualname__}") is cls
    except RuntimeError:
        return False


# what a subclass may define and still behave as its ember.nn base (a constructor that
# chooses the base's arguments)
_CONSTRUCTION = frozenset({"__init__", "__module__", "__qualname__", "__doc__", "__dict__",
                           "__weakref__", "__firstlineno__", "__static_attributes__",
                           "__annotations__"})


def layer_class(cls):
    """The ember.nn class that ``cls`` behaves as: itself, or for a subclass that only adds
    a constructor (``class Encoder(nn.LSTM): def __init__...``) its first ember.nn base;
    None when ``cls`` has code of its own.

    Example::

        >>> layer_class(ember.nn.LSTM).__name__
        'LSTM'
    """
    if _named_class(cls):
        return cls
    for base in cls.__mro__:
        if _named_class(base):
            return base
        if set(vars(base)) - _CONSTRUCTION:
            return None
    return None


def is_library_module(module):
    """Whether ``module`` and everything under it are ember's own layers (classes of
    ``ember.nn`` that their import path names, or subclasses that only add a constructor).

    Example::

        >>> is_library_module(ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.ReLU()))
        True
    """
    return all(layer_class(type(m)) is not None for m in module.modules())


def library_roots(module):
    """``{prefix: module}``: the outermost library modules of ``module`` (itself, prefix
    ``""``, when it is one).

    Example::

        >>> list(library_roots(ember.nn.LSTM(2, 3)))
        ['']
    """
    found = {}
    for prefix, sub in module.named_modules():
        inside = any(prefix == p or prefix.startswith(p + ".") if p else True for p in found)
        if not inside and is_library_module(sub):
            found[prefix] = sub
    return found


# ---------------------------------------------------------------- describing and rebuilding


_MODULE_KEYS = frozenset(vars(Module()))


def describe(module):
    """The class path, plain state and children of a library module (nested the same way).

    The state is every instance attribute that ``Module.__init__`` does not set itself
    (parameters, buffers and submodules travel separately).

    Example::

        >>> [name for name, _ in describe(ember.nn.Sequential(ember.nn.ReLU()))["children"]]
        ['0']
    """
    cls = layer_class(type(module))
    children = [[name, None if child is None else describe(child)]
                for name, child in module._modules.items()]
    state = {k: v for k, v in vars(module).items() if k not in _MODULE_KEYS}
    # hooks (``weight_norm``'s) go with the rebuilt layer in this process; a file cannot
    # hold them
    hooks = {k: v for k, v in vars(module).items()
             if k in _MODULE_KEYS and "hook" in k and isinstance(v, dict) and v}
    # slots registered as None (``InstanceNorm``'s running_mean without running stats) are
    # not among the tensors that travel, but the layer's code reads them
    empty = [[kind, name] for kind in ("_parameters", "_buffers")
             for name, t in getattr(module, kind).items() if t is None]
    return {"class": f"{cls.__module__}:{cls.__qualname__}", "state": state,
            "children": children, "empty": empty, "hooks": hooks}


def _library_class(path):
    """The ``ember.nn`` class named ``module:qualname`` (refuses anything else)."""
    module_name, _, qualname = path.partition(":")
    if not (module_name == _NAMESPACE or module_name.startswith(_NAMESPACE + ".")):
        raise RuntimeError(f"ember.jit.load: refusing the class {path!r}: only ember.nn's own "
                           "layers are rebuilt by name")
    try:
        found = importlib.import_module(module_name)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        found = None
    if not (isinstance(found, type) and issubclass(found, Module) and _in_namespace(found)):
        raise RuntimeError(f"ember.jit: there is no ember.nn layer class {path!r} (a file "
                           "from another ember version?)")
    return found


def rebuild(spec, placeholder):
    """An instance of ``spec``'s class with ``spec``'s state, taking over the parameters,
    buffers and training flag of ``placeholder`` (a plain Module at the same place); its
    tables of parameters, buffers and children are ``placeholder``'s own dicts, so a module
    that owns ``placeholder``'s tables sees the rebuilt children too.

    Example::

        >>> layer = rebuild(describe(ember.nn.Tanh()), ember.nn.Module())
        >>> type(layer).__name__, layer(ember.zeros(1))
        ('Tanh', tensor([0.]))
    """
    cls = _library_class(spec["class"])
    obj = cls.__new__(cls)
    Module.__init__(obj)
    obj.__dict__.update(spec["state"])
    for key in ("_parameters", "_buffers", "_non_persistent_buffers_set", "_modules"):
        obj.__dict__[key] = placeholder.__dict__[key]
    for kind, name in spec.get("empty", ()):
        getattr(placeholder, kind).setdefault(name, None)
    obj.__dict__["training"] = placeholder.training
    obj.__dict__.update(spec.get("hooks", {}))
    children = {}
    for name, child_spec in spec["children"]:
        old = placeholder._modules.get(name)
        if child_spec is None:
            children[name] = None
            continue
        if old is None:
            old = Module()
            old.training = placeholder.training
        children[name] = rebuild(child_spec, old)
    placeholder._modules.clear()
    placeholder._modules.update(children)
    return obj


# ---------------------------------------------------------------- data form (JSON)


def _encode_value(value, where):
    from ._script import _public_name

    if callable(value) and not isinstance(value, type):
        name = _public_name(value)
        if name is None:
            raise RuntimeError(f"ember.jit.save: {where} holds {value!r}, which is not one of "
                               "ember's public functions and cannot be saved")
        return {"ember_function": name}
    try:
        return encode_param(value)
    except TypeError:
        raise RuntimeError(f"ember.jit.save: {where} holds a {type(value).__name__} "
                           f"({value!r}), which cannot be saved") from None


def _decode_value(data, where):
    from ._script import resolve

    if isinstance(data, dict) and set(data) == {"ember_function"}:
        return resolve(data["ember_function"], where)
    return decode_param(data)


def encode_spec(spec, where="the module"):
    """The JSON-able form of :func:`describe`'s result (raises RuntimeError naming what
    cannot be saved).

    Example::

        >>> encode_spec(describe(ember.nn.Dropout(0.5)))["state"]
        {'p': 0.5, 'inplace': False}
    """
    for kind in spec.get("hooks", {}):
        raise RuntimeError(f"ember.jit.save: {where} ({spec['class']}) has {kind} (Python "
                           "code, such as weight_norm's), which cannot be saved")
    state = {k: _encode_value(v, f"{where} ({spec['class']}) attribute {k!r}")
             for k, v in spec["state"].items()}
    children = [[name, None if child is None else encode_spec(child, f"{where}.{name}")]
                for name, child in spec["children"]]
    return {"class": spec["class"], "state": state, "children": children,
            "empty": spec["empty"]}


def decode_spec(data, where="<file>"):
    """The inverse of :func:`encode_spec`.

    Example::

        >>> decode_spec(encode_spec(describe(ember.nn.ReLU())))["class"]
        'ember.nn.modules.activation:ReLU'
    """
    _library_class(data["class"])  # refuse a class outside ember.nn before anything else
    return {"class": data["class"],
            "state": {k: _decode_value(v, where) for k, v in data["state"].items()
                      if k not in _MODULE_KEYS},  # Module's own tables never come from a file
            "children": [[name, None if child is None else decode_spec(child, where)]
                         for name, child in data["children"]],
            "empty": [[kind, name] for kind, name in data.get("empty", ())
                      if kind in ("_parameters", "_buffers")]}


# ---------------------------------------------------------------- run time


def call_method(name, where="<graph>"):
    """The run-time function of a ``prim::CallMethod[name="..."]`` node: calls that public
    method of an ember module.

    Example::

        >>> call_method("forward")(ember.nn.ReLU(), ember.tensor([-1.0, 2.0]))
        tensor([0., 2.])
    """
    if name.startswith("_"):
        raise RuntimeError(f"ember.jit: refusing private method {name!r} in {where}")

    def call(receiver, *args, **kwargs):
        if not isinstance(receiver, Module):
            raise RuntimeError(f"ember.jit: method {name!r} called on a "
                               f"{type(receiver).__name__}, not a module")
        if name == "forward":  # through __call__, so that the layer's hooks run
            return receiver(*args, **kwargs)
        return getattr(receiver, name)(*args, **kwargs)
    return call
