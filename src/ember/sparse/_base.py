"""What every sparse layout shares: the :class:`ember.Tensor` subclass that sparse COO and
compressed tensors are, as torch's sparse tensors are ``torch.Tensor`` instances.

A sparse tensor has no strided memory, so none of a dense tensor's fields (``_data``, the
autograd slots): reading or writing one raises :class:`DenseFieldOfSparse`. Every public
function and inherited ``Tensor`` method reaches a sparse argument through
``__torch_function__`` (the dense fast path tests ``type(arg) is Tensor``, which a sparse
tensor fails, so dense calls pay nothing for this); there the call runs, and if it reaches
for a dense field, it is refused with torch's error for the layout and the operator
("Could not run 'aten::exp' with arguments from the 'SparseCPU' backend"). The methods the
layouts define themselves (``coalesce``, ``to_dense``, ``add``, ``mm``...) override the dense
ones and never reach that path.

A subclass stores its ``values`` tensor in ``_vals``, its size in ``_size``, sets
``_owns_values`` when ``_vals`` is its own autograd leaf, and defines ``to``, ``_refusal``,
``_rebuild_args`` and ``_copy_for_deepcopy``.
"""

from __future__ import annotations

import math

from .. import _dtype as dt
from .._tensor import _TYPE_NAMES, Tensor, _legacy_type_dtype

_NOT_IMPLEMENTED = ("Could not run 'aten::{name}' with arguments from the '{backend}' backend. "
                    "This could be because the operator doesn't exist for this backend, or was "
                    "omitted during the selective/custom build process (if using custom build).")


class DenseFieldOfSparse(NotImplementedError):
    """A dense tensor's field (``_data``, ``_rg``, ``_grad_fn``...) read or written on a sparse
    tensor: the operator reaching for it has no sparse kernel. ``__torch_function__`` turns
    it into torch's error naming the operator.

    Example::

        >>> try:
        ...     ember.zeros(2).to_sparse()._data
        ... except NotImplementedError as error:
        ...     print(type(error).__name__)
        DenseFieldOfSparse
    """

    def __init__(self, sparse, field):
        super().__init__(f"a sparse tensor has no '{field}' (layout {sparse.layout!r} stores "
                         f"indices and values, not strided memory): this operation has no "
                         f"sparse kernel; convert with .to_dense() first")
        self.sparse = sparse


def _dense_field(name):
    """A property that refuses the dense field ``name`` on a sparse tensor, both ways."""
    def refuse(self, *value):
        raise DenseFieldOfSparse(self, name)

    return property(refuse, refuse, refuse)


# ``ember.<function>(sparse, ...)`` that torch answers with a sparse tensor of the same layout
_LIKE_FUNCTIONS = {"zeros_like": "new_zeros", "empty_like": "new_empty",
                   "ones_like": "new_ones"}


def op_of(func):
    """The registered op behind a public function or method (None for an in-place form or
    a function that is no op): the one it carries, else the one of its name.

    Example::

        >>> op_of(ember.Tensor.neg)
        <op neg>
    """
    op = getattr(func, "op", None)
    if op is None:
        from ..ops._registry import registry

        op = (registry.get(aten_name(func)) or [None])[0]
    return op


def _maps_values(func, args, kwargs):
    """Whether ``func`` applies to a sparse tensor's values alone, as torch's sparse kernels
    of element-wise functions do: an element-wise function of one tensor (``sin``, ``abs``,
    ``relu``, ``sqrt``...) that maps zero to zero, so unspecified elements stay zero."""
    op = op_of(func)
    if op is None or op.kind != "pointwise-unary" or "out" in kwargs:
        return False
    sparse = args[0] if args else None
    if not isinstance(sparse, SparseTensorBase) or op.name in sparse._no_values_kernel:
        return False
    if any(isinstance(a, Tensor) for a in (*args[1:], *kwargs.values())):
        return False
    from .. import zeros

    try:
        at_zero = func(zeros((), dtype=sparse.dtype, device=sparse.device), *args[1:],
                       **kwargs)
    except Exception:  # noqa: BLE001 (bad arguments: the dense path gives torch's error)
        return False
    return not bool(at_zero)  # NaN counts as non-zero


def _in_place_form(func, args, kwargs):
    """``sparse.sin_()`` and the other in-place forms of element-wise functions that map
    the values: a call that maps them and keeps the result in place (None for any other
    function). A COO tensor must be coalesced, as torch requires."""
    name = _top_level_name(func, args)
    if not name or not name.endswith("_") or name.startswith("_"):
        return None
    out_of_place = getattr(Tensor, name[:-1], None)
    if out_of_place is None or not _maps_values(out_of_place, args, kwargs):
        return None
    sparse = args[0]

    def run():
        if sparse.is_sparse and not sparse.is_coalesced():
            raise RuntimeError(f"{name} requires coalesced input")
        mapped = out_of_place(sparse._values_to_map(), *args[1:], **kwargs)
        return sparse._in_place(sparse._with_values(mapped))

    return run


def _top_level_name(func, args):
    """``name`` when ``func`` is ``ember.<name>`` or ``Tensor.<name>`` (an operator such as
    ``+=`` reaches it as ``Tensor.add_``) called with a sparse first argument."""
    from ..overrides import _names

    if not args or not isinstance(args[0], SparseTensorBase):
        return None
    qualified = _names.get(func, "")
    if qualified.count(".") != 1 and not qualified.startswith("torch.Tensor."):
        return None  # torch.<name> and torch.Tensor.<name> (+=...) only, not torch.nn...
    return qualified.split(".")[-1]


def _own_method(func, args):
    """The first argument's own method for the top-level function ``func``: one of that
    name defined by its sparse class, not inherited from ``Tensor`` (None if none)."""
    name = _top_level_name(func, args)
    if name is None:
        return None
    for klass in type(args[0]).__mro__:
        if klass is Tensor:
            return None
        if name in vars(klass):
            return getattr(args[0], name)
    return None


def _dense_with_sparse(func, args, kwargs):
    """``add``/``sub``/``mul`` (function or method) of a dense tensor and a sparse one, and
    the dense tensor's ``add_``/``sub_``: torch's dense sum (``dense + alpha * sparse``) or
    sparse product (the dense elements at the sparse pattern). None for any other call."""
    if len(args) != 2 or not is_strided(args[0]) or not isinstance(args[1], SparseTensorBase) \
            or not set(kwargs) <= {"alpha"} or not args[1].is_sparse:
        return None
    from ..overrides import _names

    name = _names.get(func, "").split(".")[-1]
    dense, sparse = args
    sign = -1 if name.startswith("sub") else 1
    alpha = kwargs.get("alpha", 1)
    if name in ("add", "sub"):
        return lambda *_, **__: sparse.__radd__(dense) if sign * alpha == 1 else \
            dense + sparse * (sign * alpha)
    if name in ("add_", "sub_"):
        return lambda *_, **__: dense.copy_(dense + sparse * (sign * alpha))
    if name == "mul" and not kwargs:
        return lambda *_, **__: sparse.mul(dense)
    if name in ("div", "true_divide"):
        from ._coo import division_by_tensor

        raise division_by_tensor(sparse)
    return None


def _list_form(func, args):
    """``ember.<name>(tensors, ...)`` of a list whose first tensor is sparse: its class's
    static ``_list_<name>`` (``ember.cat``, ``ember.stack`` of COO tensors), bound to the list
    (None where the class has none)."""
    from ..overrides import _names

    tensors = args[0] if args else None
    if not isinstance(tensors, (list, tuple)) or not tensors or \
            not isinstance(tensors[0], SparseTensorBase):
        return None
    qualified = _names.get(func, "")
    if qualified.count(".") != 1:
        return None
    joiner = getattr(type(tensors[0]), "_list_" + qualified.split(".")[1], None)
    return None if joiner is None else (lambda *rest, **kwargs: joiner(tensors, *rest, **kwargs))


def _functional_form(func, args, kwargs):
    """``ember.nn.functional.<name>`` with a sparse argument: the sparse class's static
    ``_functional_<name>`` (``F.linear`` with a sparse weight or input), called with the
    whole call (None where the class has none)."""
    from ..overrides import _names

    qualified = _names.get(func, "")
    if not qualified.startswith("torch.nn.functional."):
        return None
    sparse = next((a for a in (*args, *kwargs.values()) if isinstance(a, SparseTensorBase)),
                  None)
    form = getattr(type(sparse), "_functional_" + qualified.split(".")[-1], None)
    return None if form is None else (lambda *_, **__: form(*args, **kwargs))


def _function_form(func, args):
    """``ember.<name>`` bound to a dense ``self`` when ``func`` is ``Tensor.<name>`` (not in
    place): the sparse-aware function behind a method, as torch's methods and functions share
    one kernel (None otherwise)."""
    import ember

    from ..overrides import _names

    qualified = _names.get(func, "")
    if not qualified.startswith("torch.Tensor.") or not args or \
            isinstance(args[0], SparseTensorBase):
        return None
    name = qualified[len("torch.Tensor."):]
    function = getattr(ember, name, None)
    if name.endswith("_") or function is None or not callable(function):
        return None
    return lambda *rest, **kwargs: function(args[0], *rest, **kwargs)


def _like_factory(func, args):
    """``zeros_like(sparse)`` and friends as the sparse tensor's ``new_*`` factory (they
    never reach for a dense field, so they are answered before running)."""
    name = _top_level_name(func, args)
    if name not in _LIKE_FUNCTIONS:
        return None
    return _like(args[0], getattr(args[0], _LIKE_FUNCTIONS[name]))


def _like(sparse, factory):
    """``zeros_like(sparse, ...)`` and friends as ``sparse.new_zeros(sparse.shape, ...)``."""
    def like(*, dtype=None, layout=None, device=None, requires_grad=False, **_):
        return factory(sparse.shape, dtype=dtype, device=device, requires_grad=requires_grad)

    return like


def aten_name(func):
    """The operator's name in torch's errors: ``exp`` for ``ember.exp`` and
    ``Tensor.exp``, ``T`` for the property ``Tensor.T``, ``pow`` for ``Tensor.__pow__``.

    Example::

        >>> aten_name(ember.Tensor.exp_)
        'exp_'
    """
    from ..overrides import _names

    parts = [p for p in (_names.get(func) or getattr(func, "__name__", "op")).split(".")
             if p != "__get__"]
    name = parts[-1]
    if name.startswith("__") and name.endswith("__"):
        name = name[2:-2]
    return name


def not_implemented(op_name, backend):
    """torch's NotImplementedError for ``op_name`` without a kernel for ``backend``
    (``SparseCPU``, ``SparseCsrCPU``...).

    Example::

        >>> str(not_implemented("exp", "SparseCPU"))[:40]
        "Could not run 'aten::exp' with arguments"
    """
    return NotImplementedError(_NOT_IMPLEMENTED.format(name=op_name, backend=backend))


class SparseTensorBase(Tensor):
    """The members that sparse COO and compressed tensors share."""

    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)  # not Tensor.__new__: no dense memory to allocate

    # ------------------------------------------------------------ dispatch

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """Run ``func`` on sparse arguments. A function that reaches for a dense field runs
        as the first argument's own method of its name where its layout defines one
        (``ember.clone``, ``ember.add``, ``ember.transpose``...), a dense tensor's method as
        the function of its name (``dense.mm(sparse)`` as ``ember.mm``), else is refused
        with torch's error for the layout."""
        from ..overrides import DisableTorchFunctionSubclass

        kwargs = kwargs or {}
        with DisableTorchFunctionSubclass():
            like = _like_factory(func, args)
            if like is not None:
                return like(**kwargs)
            if _maps_values(func, args, kwargs):
                return args[0]._with_values(func(args[0]._values_to_map(), *args[1:],
                                                 **kwargs))
            in_place = _in_place_form(func, args, kwargs)
            if in_place is not None:
                return in_place()
            try:
                return func(*args, **kwargs)
            except DenseFieldOfSparse as error:
                refusal = error.sparse._refusal(aten_name(func), op_of(func))
            fallback = (_own_method(func, args) or _dense_with_sparse(func, args, kwargs)
                        or _function_form(func, args) or _list_form(func, args)
                        or _functional_form(func, args, kwargs))
            if fallback is None:
                raise refusal
            try:
                return fallback(*args[1:], **kwargs)
            except DenseFieldOfSparse:
                raise refusal from None

    @property
    def _device(self):
        return self._vals._device

    # ------------------------------------------------------------ metadata

    @property
    def shape(self):
        return self._size

    def size(self, dim=None):
        """The size, or the size of one dim.

        Example::

            >>> ember.zeros(2, 3).to_sparse().size(1)
            3
        """
        if dim is None:
            return self._size
        return self._size[wrap_dim(dim, len(self._size))]

    def dim(self):
        """The number of dims (sparse plus dense).

        Example::

            >>> ember.zeros(2, 3).to_sparse().dim()
            2
        """
        return len(self._size)

    @property
    def ndim(self):
        return len(self._size)

    def numel(self):
        """The number of elements of the dense equivalent.

        Example::

            >>> ember.zeros(2, 3).to_sparse().numel()
            6
        """
        return math.prod(self._size)

    def __len__(self):
        if not self._size:
            raise TypeError("len() of a 0-d tensor")
        return self._size[0]

    @property
    def dtype(self):
        return self._vals.dtype

    @property
    def device(self):
        return self._vals.device

    @property
    def is_cuda(self):
        return self._vals.is_cuda

    @property
    def is_cpu(self):
        return self._vals.is_cpu

    @property
    def is_meta(self):
        return self._vals.is_meta

    def element_size(self):
        """The size of one value in bytes.

        Example::

            >>> ember.zeros(2).to_sparse().element_size()
            4
        """
        return self._vals.element_size()

    @property
    def itemsize(self):
        return self._vals.element_size()

    def type(self, dtype=None, non_blocking=False):
        """The type name (``'torch.sparse.FloatTensor'``), or a copy cast to ``dtype``.

        Example::

            >>> ember.zeros(2).to_sparse().type()
            'torch.sparse.FloatTensor'
        """
        if dtype is not None:
            return self.to(_legacy_type_dtype(dtype))
        return _TYPE_NAMES[self.dtype.name].replace("torch.", "torch.sparse.")

    # ------------------------------------------------------------ autograd

    @property
    def requires_grad(self):
        return self._vals.requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def detach_(self):
        """Cut this tensor's values from the autograd graph in place.

        Example::

            >>> v = ember.ones(1, requires_grad=True)
            >>> ember.sparse_coo_tensor([[0]], v * 2, (2,)).detach_().requires_grad
            False
        """
        self._vals = self._vals.detach()
        self._owns_values = False
        return self

    def _in_place(self, result):
        """Make this tensor hold ``result``'s elements: the end of torch's in-place ops on
        sparse tensors, which replace indices and values."""
        from ..autograd.grad_mode import is_grad_enabled

        if self.requires_grad and self.is_leaf and is_grad_enabled():
            raise RuntimeError("a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        self._take(result)
        return self

    @property
    def data(self):
        """The same indices and values outside autograd (``detach()``)."""
        return self.detach()

    @property
    def grad_fn(self):
        return None if self._owns_values else self._vals.grad_fn

    @property
    def is_leaf(self):
        return self._owns_values or not self._vals.requires_grad

    # ------------------------------------------------------------ casts

    def double(self):
        return self.to(dt.float64)

    def float(self):
        return self.to(dt.float32)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to(device if device is not None else "cuda")

    # ------------------------------------------------------------ factories

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False, layout=None,
                  pin_memory=False):
        """An all-zero tensor of this layout (no specified element), as torch's.

        Example::

            >>> ember.zeros(2).to_sparse().new_zeros(3, 4)._nnz()
            0
        """
        size = size[0] if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
        empty = self._empty_of(tuple(int(n) for n in size), dtype or self.dtype,
                               device or self.device)
        return empty.requires_grad_() if requires_grad else empty

    new_empty = new_zeros

    def new_ones(self, *size, **kwargs):
        raise self._refusal("fill_.Scalar")  # torch fills a new sparse tensor: no kernel

    def new_full(self, size, fill_value, **kwargs):
        raise self._refusal("fill_.Scalar")

    # ------------------------------------------------------------ no strided memory

    def is_contiguous(self, memory_format=None):
        raise RuntimeError(f"Sparse {self._kind_name()} tensors do not have is_contiguous")

    def stride(self, dim=None):
        raise RuntimeError(f"Sparse {self._kind_name()} tensors do not have strides")

    def storage_offset(self):
        return 0

    def is_pinned(self, device=None):
        return False

    def untyped_storage(self):
        raise NotImplementedError(f"Cannot access storage of {self._impl_name}")

    storage = share_memory_ = untyped_storage

    def data_ptr(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    tolist = data_ptr

    def _kind_name(self):
        return self.layout.name[len("sparse_"):].upper()

    # ------------------------------------------------------------ functional forms

    @staticmethod
    def _functional_linear(input, weight, bias=None):
        """``F.linear`` with a sparse weight or a sparse 2-D input: ``input @ weight.t()``
        through the sparse products (a dense result), plus ``bias``.

        Example::

            >>> w = ember.tensor([[0., 2.], [3., 0.]]).to_sparse()
            >>> ember.nn.functional.linear(ember.ones(1, 2), w)
            tensor([[2., 3.]])
        """
        from .. import mm

        if isinstance(input, SparseTensorBase):
            result = mm(input, weight.t())
        else:
            rows = input.reshape(-1, input.shape[-1])
            result = mm(rows, weight.t()).reshape(*input.shape[:-1], weight.shape[0])
        return result if bias is None else result + bias

    # ------------------------------------------------------------ Python protocol

    def item(self):
        """The value of a one-element tensor.

        Example::

            >>> ember.tensor([5.]).to_sparse().item()
            5.0
        """
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to "
                               f"Scalar")
        return self.to_dense().item()

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __format__(self, spec):
        return object.__format__(repr(self), spec)

    def __reduce_ex__(self, protocol):
        from .._serialization_unpickler import _rebuild_sparse_tensor

        return _rebuild_sparse_tensor, (self.layout, self._rebuild_args())

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            copy = self._copy_for_deepcopy()
            copy.__class__ = type(self)  # a sparse parameter's copy is one too
            memo[id(self)] = copy
        return memo[id(self)]

    def _module_apply(self, fn):
        """``Module._apply(fn)`` (``.double()``, ``.to(device)``...) on this sparse parameter:
        it holds ``fn(self)``'s indices and values from now on, a leaf as before, its
        gradient converted by ``fn`` too."""
        from ..autograd.grad_mode import no_grad

        requires_grad = self.requires_grad
        with no_grad():
            new = fn(self)
            grad = fn(self.grad) if requires_grad and self.grad is not None else None
        self._take(new)
        if requires_grad:  # a fresh leaf on the new values (``fn`` may return ``self``)
            self._vals, self._owns_values = self._vals.detach(), False
            self.requires_grad_()
            if grad is not None:
                self._vals.grad = self._values_gradient(grad)
        return self

    def _as_parameter(self, requires_grad):
        """``nn.Parameter(self, requires_grad)``: the same indices and values, detached, as
        an instance of both this layout's class and ``Parameter`` (as torch's sparse
        parameters are), so that modules register it."""
        parameter = self.detach()
        parameter.__class__ = _parameter_class(type(self))
        return parameter.requires_grad_() if requires_grad else parameter


# A sparse tensor has none of a dense tensor's fields (``_device`` is its values' device).
for _field in Tensor.__slots__:
    if _field not in ("_device", "__dict__", "__weakref__"):
        setattr(SparseTensorBase, _field, _dense_field(_field))


_PARAMETER_CLASSES = {}  # sparse class -> its nn.Parameter subclass (made on first use)


def _parameter_class(sparse_class):
    """The class of ``nn.Parameter``s of layout class ``sparse_class``: a subclass of both,
    made on first use (``ember.nn`` imports after ``ember.sparse``).

    Example::

        >>> _parameter_class(ember.sparse.SparseCOOTensor).__name__
        'SparseCOOTensorParameter'
    """
    sparse_class = getattr(sparse_class, "_layout_class", sparse_class)  # (a parameter's)
    klass = _PARAMETER_CLASSES.get(sparse_class)
    if klass is None:
        from ..nn.parameter import Parameter

        def __init__(self, data=None, requires_grad=True):
            pass  # made by Parameter.__new__ (through _as_parameter), which returns it whole

        def __repr__(self):
            return "Parameter containing:\n" + sparse_class.__repr__(self)

        klass = type(sparse_class.__name__ + "Parameter", (sparse_class, Parameter),
                     {"__slots__": (), "__init__": __init__, "__repr__": __repr__,
                      "__module__": __name__, "_layout_class": sparse_class})
        _PARAMETER_CLASSES[sparse_class] = klass
    return klass


def is_strided(value):
    """Whether ``value`` is a dense (strided) tensor, not a sparse one.

    Example::

        >>> is_strided(ember.ones(2)), is_strided(ember.ones(2).to_sparse())
        (True, False)
    """
    return isinstance(value, Tensor) and not isinstance(value, SparseTensorBase)


def wrap_dim(dim, ndim):
    """``dim`` counted from the front, with torch's IndexError when out of range."""
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(ndim, 1)}, {max(ndim, 1) - 1}], but got {dim})")
    return dim % max(ndim, 1)
