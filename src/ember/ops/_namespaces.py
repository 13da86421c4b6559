"""``ember.ops.<namespace>.<op>.<overload>``: torch's operator namespaces (``torch.ops``).

torch registers every operator under a namespace (``aten::add``) with named overloads, one
per signature (``aten::add.Tensor``, ``aten::add.Scalar``, ``aten::add.out``). ember keeps
one Python callable per operator that dispatches on its arguments, so here every overload of
an operator is that one callable:

* :class:`OpNamespace` is ``ember.ops.<name>``; an unknown operator raises torch's
  ``AttributeError``. ``ember.ops.aten`` (:class:`AtenNamespace`) finds an operator by its
  name among ember's own: ATen's own operators in :mod:`ember.ops.aten_forms`, torch's
  private ones in :mod:`ember.ops.internal`, then
  ember's top-level functions (torch's ``torch.<name>`` functions are ATen's operators under
  the same names and signatures; ``linalg_inv``, ``fft_rfft``, ``special_ndtr`` are
  ``ember.linalg.inv``..., as torch's namespaces name them), then Tensor methods (``add_``,
  ``copy_``...), called with the first argument as ``self``, then the functional form of an
  in-place method (``cauchy`` is ``cauchy_`` applied to a copy). Other namespaces hold the
  custom operators that :mod:`ember.library` defines, one operator per overload
  (``"mylib::foo.twice"`` is ``ember.ops.mylib.foo.twice``); their packets know exactly
  those overloads.
* :class:`OpOverloadPacket` is ``ember.ops.aten.add``: call it, or pick an overload.
* :class:`OpOverload` is ``ember.ops.aten.add.Tensor``; ``.default`` always exists. An
  overload name is accepted when it is made of the words torch's overload names are made of
  (``Tensor``, ``Scalar``, ``out``, ``dim``, ``int``, ``List``...): ``add.foo`` raises
  ``AttributeError`` as in torch, ``add.dim`` does not (torch has no such overload).
* ``overloads()`` cannot read torch's schemas, so it lists what ember can tell from the
  callable's signature: a ``_foreach_`` operator with an operand has torch's ``'Scalar'``,
  ``'List'`` and ``'ScalarList'`` (and no ``'default'``, as in torch); any other has
  ``'default'``, and ``'out'`` when it takes ``out=``. The list is often shorter than
  torch's (``add``'s ``'Tensor'``/``'Scalar'``, whether ``other`` may be a number, is not
  in a signature), and for the few operators whose ``out=`` overload torch names otherwise
  (``where``'s ``'self_out'``) its ``'out'`` is not torch's name.

Example::

    >>> import ember
    >>> ember.ops.aten.add.Tensor(ember.ones(2), ember.ones(2))
    tensor([2., 2.])
    >>> 'Scalar' in ember.ops.aten._foreach_maximum_.overloads()
    True
"""

from __future__ import annotations

import ctypes
import importlib
import inspect
import os
import types

# The words torch's overload names are made of (``Scalar_out``, ``dim_IntList``...).
_OVERLOAD_WORDS = frozenset((
    "default out Tensor Scalar int float complex scalar input grad str bool dim ScalarList "
    "dtype list List x tensor n generator t value vec size self mode source output other "
    "data dims correction reduce values a IntList any bins padding to offset tensors scale "
    "indices array stable alpha beta src two three from Sequence p device decimals start "
    "TensorList memory format mask step Self OutScalar sections all no stats intlist "
    "Dimname dimname names index using ints layout sizes left right Other "
    "ScalarOpt sparse storage Storage max min unary deprecated OutTensor ScalarOther "
    "ScalarSelf ScalarAndTensor Device lengths offsets"
).split())


def _is_overload_name(name):
    return bool(name) and all(word in _OVERLOAD_WORDS for word in name.split("_"))


def _dispatching_torch_function(target, function, args, kwargs):
    """Call ``function``, letting a ``__torch_function__`` argument (an fx Proxy, a tensor
    subclass) or an active mode see ``target`` (the overload or packet) as the function."""
    from ..overrides import handle_torch_function, has_torch_function

    arguments = args + tuple(kwargs.values())
    if has_torch_function(arguments):
        return handle_torch_function(target, arguments, *args, **kwargs)
    return function(*args, **kwargs)


class OpOverload:
    """One overload of an operator, such as ``ember.ops.aten.add.Tensor``.

    Example::

        >>> overload = ember.ops.aten.mul.Tensor
        >>> str(overload), overload.name()
        ('aten.mul.Tensor', 'aten::mul.Tensor')
        >>> overload(ember.tensor([2.]), 3)
        tensor([6.])
    """

    _ember_op_packet = True

    def __init__(self, packet, overload_name, op=None):
        self.overloadpacket = packet
        self._overloadname = overload_name
        self._op = packet._op if op is None else op
        suffix = "" if overload_name == "default" else f".{overload_name}"
        self.__name__ = f"{packet.__name__}.{overload_name}"
        self.__qualname__ = f"{packet._namespace}::{packet.__name__}{suffix}"
        self.__module__ = packet.__module__
        self.__doc__ = getattr(self._op, "__doc__", None)

    @property
    def op(self):
        """ember's callable behind this overload."""
        return self._op

    @property
    def namespace(self):
        """The namespace's name (``'aten'``)."""
        return self.overloadpacket._namespace

    def name(self):
        """torch's qualified name: ``'aten::add.Tensor'``, ``'aten::add'`` for default."""
        return self.__qualname__

    def __call__(self, /, *args, **kwargs):
        return _dispatching_torch_function(self, self._op, args, kwargs)

    def __deepcopy__(self, memo=None):
        return self

    def __str__(self):
        return f"{self.namespace}.{self.__name__}"

    def __repr__(self):
        return (f"<OpOverload(op='{self.namespace}.{self.overloadpacket.__name__}', "
                f"overload='{self._overloadname}')>")

    def __reduce__(self):
        packet = self.overloadpacket
        return _lookup, (packet._namespace, packet.__name__, self._overloadname)


class OpOverloadPacket:
    """An operator with all its overloads, such as ``ember.ops.aten.add``.

    Calling the packet calls the operator; an attribute picks an overload (cached, so that
    ``ember.ops.aten.add.Tensor is ember.ops.aten.add.Tensor``).

    Example::

        >>> packet = ember.ops.aten.sum
        >>> packet(ember.ones(2, 3)), packet.dim_IntList(ember.ones(2, 3), [1])
        (tensor(6.), tensor([3., 3.]))
        >>> packet.default.overloadpacket is packet
        True
    """

    _ember_op_packet = True

    def __init__(self, namespace, name, op):
        self._namespace = namespace
        self._qualified_op_name = f"{namespace}::{name}"
        self.__name__ = self.__qualname__ = name
        self.__module__ = f"ember.ops.{namespace}"
        self.__doc__ = getattr(op, "__doc__", None)
        self._op = op
        self._dir = []
        # overload name -> its own operator, for operators defined per overload
        # (ember.library); None: ember's one callable serves every overload name
        self._overload_ops = None

    def _add_overload(self, overload_name, op):
        """Give the overload ``overload_name`` its own operator (``'default'`` also becomes
        what calling the packet runs)."""
        if self._overload_ops is None:
            self._overload_ops = {}
        self._overload_ops[overload_name] = op
        self.__dict__.pop(overload_name, None)
        if overload_name == "default" or len(self._overload_ops) == 1:
            self._op = op

    @property
    def op(self):
        """ember's callable behind this operator."""
        return self._op

    def __getattr__(self, key):
        if key.startswith("__"):
            try:
                return getattr(self._op, key)
            except AttributeError:
                raise AttributeError(
                    f"'{self}' can't have an overload name beginning with '__' and the "
                    f"underlying op {self._op} has no attribute {key} either.") from None
        explicit = self.__dict__.get("_overload_ops")
        if explicit is not None and key not in explicit or \
                explicit is None and not _is_overload_name(key):
            raise AttributeError(f"The underlying op of '{self}' has no overload name '{key}'")
        overload = OpOverload(self, key, None if explicit is None else explicit[key])
        setattr(self, key, overload)
        self._dir.append(key)
        return overload

    def __call__(self, /, *args, **kwargs):
        return _dispatching_torch_function(self, self._op, args, kwargs)

    def __iter__(self):
        return iter(self._dir)

    def __hash__(self):
        return hash(self._op)

    def __deepcopy__(self, memo=None):
        return self

    def __str__(self):
        return f"{self._namespace}.{self.__name__}"

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self}')>"

    def __reduce__(self):
        return _lookup, (self._namespace, self.__name__)

    def overloads(self):
        """The overload names ember's callable serves (see the module's rule).

        Example::

            >>> ember.ops.aten.mul.overloads()
            ['default', 'out']
        """
        if self._overload_ops is not None:
            return list(self._overload_ops)
        return _derived_overloads(self.__name__, self._op)

    def op_overloads(self):
        """The :class:`OpOverload` of every name in :meth:`overloads`."""
        return [getattr(self, name) for name in self.overloads()]


def _derived_overloads(name, op):
    try:
        parameters = list(inspect.signature(op).parameters)
    except (TypeError, ValueError):
        return ["default"]
    if name.startswith("_foreach_") and parameters[1:2] == ["other"]:
        return ["Scalar", "List", "ScalarList"]
    return ["default", "out"] if "out" in parameters else ["default"]


def _lookup(namespace_name, op_name, overload_name=None):
    """The packet (or overload) a pickle names: operators pickle by name, as torch's do."""
    packet = getattr(getattr(_ops_package(), namespace_name), op_name)
    return packet if overload_name is None else getattr(packet, overload_name)


def _ops_package():
    return importlib.import_module("ember.ops")


class OpNamespace(types.ModuleType):
    """``ember.ops.<name>``: the operators of one namespace, bound on first use.

    Example::

        >>> ember.ops.aten.relu(ember.tensor([-1., 2.]))
        tensor([0., 2.])
        >>> ember.ops.aten.not_an_op
        Traceback (most recent call last):
        ...
        AttributeError: '_OpNamespace' 'aten' object has no attribute 'not_an_op'
    """

    __file__ = "ember.ops"

    def __init__(self, name):
        super().__init__(f"ember.ops.{name}")
        self.name = name
        self._dir = []
        # what ember.fx patches while tracing; aten's packets record through
        # __torch_function__ instead (their overload attributes must stay reachable)
        self._ember_op_namespace = name != "aten"

    def __iter__(self):
        return iter(self._dir)

    def __getattr__(self, op_name):
        if op_name.startswith("__"):
            raise AttributeError(f"Invalid attribute '{op_name}' for '_OpNamespace' '{self.name}'")
        op = self._find(op_name)
        if op is None:
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute "
                                 f"'{op_name}'")
        return self._bind(op_name, op)

    def _find(self, op_name):
        """The callable of ``op_name`` in this namespace, or None (custom namespaces get theirs
        bound by :mod:`ember.library`)."""
        return None

    def _bind(self, op_name, op):
        packet = op if isinstance(op, OpOverloadPacket) else \
            OpOverloadPacket(self.name, op_name, op)
        setattr(self, op_name, packet)
        self._dir.append(op_name)
        return packet

    def _register(self, op_name, overload_name, op):
        """Add ``op`` as the overload ``overload_name`` of ``op_name`` (how ember.library
        publishes ``"namespace::name.overload"``)."""
        packet = self.__dict__.get(op_name)
        if not isinstance(packet, OpOverloadPacket):
            packet = self._bind(op_name, OpOverloadPacket(self.name, op_name, op))
        packet._add_overload(overload_name, op)
        return packet


class AtenNamespace(OpNamespace):
    """``ember.ops.aten``: ATen's operators, found among ember's by name (see the module)."""

    def __init__(self):
        super().__init__("aten")

    def _find(self, op_name):
        import ember

        from . import aten_forms, internal
        if op_name in aten_forms.ATEN_ONLY:
            return getattr(aten_forms, op_name)
        if op_name in internal.__all__:
            return getattr(internal, op_name)
        function = getattr(ember, op_name, None)
        # while ember.fx traces, ember's functions are stand-ins: bind the original
        function = getattr(function, "__fx_original__", function)
        if _is_operator_function(function):
            return function
        prefix, _, rest = op_name.partition("_")
        if prefix in _SUBMODULE_PREFIXES and rest:  # linalg_inv is ember.linalg.inv
            function = getattr(importlib.import_module(f"ember.{prefix}"), rest, None)
            if callable(function) and not isinstance(function, type):
                return function
        if _is_tensor_method(op_name):
            return _method_caller(op_name)
        if _is_tensor_method(op_name + "_"):  # cauchy: a copy given cauchy_
            return _functional_form(op_name + "_")
        return None


# torch's namespaces whose functions ATen names with a prefix (``linalg_inv``)
_SUBMODULE_PREFIXES = ("linalg", "fft", "special")


def _is_tensor_method(name):
    import ember

    method = inspect.getattr_static(ember.Tensor, name, None)
    return isinstance(method, (types.FunctionType, types.BuiltinFunctionType))


def _functional_form(inplace_name):
    """ATen's functional form of an in-place method: the method applied to a copy."""
    def call(self, /, *args, **kwargs):
        return getattr(self.clone(), inplace_name)(*args, **kwargs)
    call.__name__ = call.__qualname__ = inplace_name[:-1]
    return call


def _is_operator_function(value):
    """Whether ``value`` is one of ember's operators (not a class, a module, a setting or
    save/load): operators live in ``ember`` itself or in ``ember.ops``."""
    if not callable(value) or isinstance(value, (type, types.ModuleType)):
        return False
    module = getattr(value, "__module__", None) or ""
    return module == "ember" or module.startswith("ember.ops.")


def _method_caller(name):
    def call(self, /, *args, **kwargs):
        return getattr(self, name)(*args, **kwargs)
    call.__name__ = call.__qualname__ = name
    return call


class HigherOrderNamespace(types.ModuleType):
    """``ember.ops.higher_order``: torch's higher-order operators (operators taking
    functions). ember runs them eagerly as its top-level functions of the same name
    (``cond`` is ``ember.cond``); any other name raises torch's ``AttributeError``.

    Example::

        >>> ember.ops.higher_order.cond(ember.tensor(True), lambda x: x + 1, lambda x: x - 1,
        ...                             (ember.zeros(1),))
        tensor([1.])
    """

    __file__ = "ember.ops"
    _EAGER = ("cond",)  # torch's higher-order operators that ember has as functions

    def __init__(self):
        super().__init__("ember.ops.higher_order")
        self._dir = []

    def __iter__(self):
        return iter(self._dir)

    def __getattr__(self, name):
        if name not in self._EAGER:
            raise AttributeError(f"'_HigherOrderNamespace' 'ember.ops.higher_order' object has "
                                 f"no attribute '{name}'")
        import ember
        operator = getattr(ember, name)
        setattr(self, name, operator)
        self._dir.append(name)
        return operator


# ---------------------------------------------------------------- libraries

loaded_libraries = set()


def load_library(path):
    """Load the shared library at ``path`` into the process (its static initialisers run) and
    add it to ``loaded_libraries``; ``OSError`` when it cannot be loaded.

    Example::

        >>> ember.ops.load_library("/no/such/lib.so")
        Traceback (most recent call last):
        ...
        OSError: Could not load this library: /no/such/lib.so
    """
    path = os.path.realpath(path) if os.path.exists(path) else path
    try:
        ctypes.CDLL(path, mode=getattr(ctypes, "RTLD_GLOBAL", 0))
    except OSError as error:
        raise OSError(f"Could not load this library: {path}") from error
    loaded_libraries.add(path)


def import_module(module):
    """Import the Python module named ``module`` for its operator registrations
    (``ember.library`` definitions).

    Example::

        >>> ember.ops.import_module("math")
    """
    importlib.import_module(module)


# ---------------------------------------------------------------- ember.ops.__getattr__

_STANDING = {"aten": AtenNamespace, "higher_order": HigherOrderNamespace}


def namespace(name):
    """``ember.ops.<name>``: made on first use and cached on the ``ember.ops`` package
    (torch makes any name a namespace; its operators are looked up when used)."""
    package = _ops_package()
    made = _STANDING.get(name, OpNamespace)
    value = made() if name in _STANDING else made(name)
    setattr(package, name, value)
    return value
