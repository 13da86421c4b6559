"""User-defined differentiable operations: :class:`Function` with ``forward`` and ``backward``.

A subclass defines ``forward(ctx, *args)`` (or ``forward(*args)`` plus
``setup_context(ctx, inputs, output)``) and ``backward(ctx, *grad_outputs)``; ``apply`` runs the
forward without recording and records one node, of type ``<ClassName>Backward``, whose
``_apply`` calls the user's backward. That node is the ``ctx`` the methods receive, so what
``forward`` stores on ``ctx`` is visible as attributes of ``output.grad_fn``, as in torch.

Example::

    >>> class Square(ember.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         (x,) = ctx.saved_tensors
    ...         return 2 * x * grad
    >>> x = ember.tensor([3.], requires_grad=True)
    >>> Square.apply(x).backward(); x.grad
    tensor([6.])
"""

from __future__ import annotations

import functools
import inspect
import warnings

from .._tensor import Tensor
from .._traceback import hide_internal_frames as _hide_internal_frames
from . import grad_mode
from .graph import (
    _BACKWARD_TWICE,
    AccumulateGrad,
    Node,
    _hook_state,
    _raise_modified,
    edge_of,
)

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable",
           "InplaceFunction", "NestedIOFunction"]


class FunctionCtx:
    """What ``ctx`` offers in ``forward``/``setup_context`` (mixed into the backward node)."""

    def save_for_backward(self, *tensors):
        """Save tensors (or None) for ``backward``; read them back with ``saved_tensors``."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{tensors.index(t)} is of type {type(t).__name__}")
        self._to_save = tensors

    def save_for_forward(self, *tensors):
        """Save tensors for ``jvp`` (kept as they are)."""
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors):
        """Declare inputs that ``forward`` modified in place (and returns)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        """Declare outputs that get no gradient (such as indices)."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value):
        """Whether ``backward`` receives zeros (True, the default) or None for missing grads."""
        self._materialize = bool(value)


class BackwardCFunction(FunctionCtx, Node):
    """The node a :class:`Function` records; also the ``ctx`` its methods receive."""

    _forward_cls = None

    def __init__(self):
        Node.__init__(self)
        self._to_save = None
        self._dirty = ()
        self._non_differentiable = ()
        self._materialize = True
        self._saved_out_ids = ()
        self._arg_is_tensor = ()

    def name(self):
        return f"{self._forward_cls.__name__}Backward"

    @property
    def saved_tensors(self):
        """The tensors given to ``save_for_backward``, checked against in-place changes (in
        ``jvp``: those given to ``save_for_forward``)."""
        if self.__dict__.get("_in_jvp"):
            return tuple(self.saved_for_forward)
        if self._saved is None:
            raise RuntimeError(_BACKWARD_TWICE)
        result = []
        for i, item in enumerate(self._saved):
            if item is None:
                result.append(None)
                continue
            if self._unpack is not None:
                t = self._unpack(item)
                vc = self._saved_vcs[i]
            else:
                t = item
                vc = t._vc
            version = self._saved_versions[i]
            output_nr = self._saved_out_ids[i]
            if vc[0] != version and t._vc is vc:
                _raise_modified(t, version, vc[0],
                                (output_nr, self) if output_nr is not None else None)
            if output_nr is not None and grad_mode.state.enabled:
                # A saved output stays connected to this node (for double backward).
                connected = Tensor._make(t._data, t._device, t)
                connected.grad_fn, connected._output_nr, connected._rg = self, output_nr, True
                t = connected
            result.append(t)
        return tuple(result)

    saved_variables = saved_tensors

    def _apply(self, grads):
        grads = list(grads)
        if self._materialize:
            from .. import _dtype as dt
            from ..ops.creation import zeros

            for i, (g, meta) in enumerate(zip(grads, self._out_meta)):
                if g is None and meta is not None:
                    grads[i] = zeros(meta[0], dtype=dt.from_numpy_dtype(meta[1]), device=meta[2])
        result = self._forward_cls.backward(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        n_args = len(self._arg_is_tensor)
        if len(result) > n_args and all(g is None for g in result[n_args:]):
            result = result[:n_args]
        if len(result) != n_args:
            raise RuntimeError(f"function {self.name()} returned an incorrect number of "
                               f"gradients (expected {n_args}, got {len(result)})")
        out = []
        for i, (g, is_tensor) in enumerate(zip(result, self._arg_is_tensor)):
            if not is_tensor:
                if g is not None:
                    raise RuntimeError(f"function {self.name()} returned a gradient different "
                                       f"than None at position {i + 1}, but the corresponding "
                                       "forward input was not a Variable")
                continue
            out.append(g)
        return [self._validate(i, g) for i, g in enumerate(out)]

    def _validate(self, index, grad):
        if grad is None:
            return None
        if not isinstance(grad, Tensor):
            raise TypeError(f"expected Tensor or None as gradient, but got "
                            f"{type(grad).__name__}")
        shape, np_dtype, device = self._input_meta[index]
        if grad._data.shape != shape:
            try:
                grad = grad.sum_to_size(shape)
            except RuntimeError:
                raise RuntimeError(
                    f"Function {self.name()} returned an invalid gradient at index {index} - "
                    f"got {list(grad.shape)} but expected shape compatible with "
                    f"{list(shape)}") from None
        if grad._device != device:
            raise RuntimeError(f"Function {self.name()} returned an invalid gradient at index "
                               f"{index} - expected device {device} but got {grad._device}")
        if grad._data.dtype != np_dtype:
            from .. import _dtype as dt

            grad = grad.to(dt.from_numpy_dtype(np_dtype))
        return grad

    def _release(self):
        self._saved = None
        self._released = True


class _FunctionMeta(type):
    """Gives every Function subclass its own node class, ``<Name>Backward``."""

    def __init__(cls, name, bases, attrs):
        backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


class Function(FunctionCtx, metaclass=_FunctionMeta):
    """Base class for custom autograd operations (see the module docstring).

    Example::

        >>> class Exp(ember.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         y = x.exp()
        ...         ctx.save_for_backward(y)
        ...         return y
        ...     @staticmethod
        ...     def backward(ctx, grad):
        ...         (y,) = ctx.saved_tensors
        ...         return grad * y
    """

    generate_vmap_rule = False

    def __init__(self, *args, **kwargs):

        warnings.warn(f"{type(self)} should not be instantiated. Methods on autograd functions "
                      "are all static, so you should invoke them on the class itself. "
                      "Instantiating an autograd function will raise an error in a future "
                      "version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is "
                           "deprecated. Please use new-style autograd function with static "
                           "forward method. (Example: https://pytorch.org/docs/stable/autograd."
                           "html#torch.autograd.Function)")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """Compute the outputs (override)."""
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Fill ``ctx`` from the inputs and output when ``forward`` takes no ``ctx`` (override)."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """Gradients w.r.t. each ``forward`` argument, from gradients w.r.t. each output."""
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """Forward-mode derivative (override to use with ``forward_ad``)."""
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` on ``args`` and record the node that will call ``backward``."""
        try:  # free until an error: then ember's frames leave its traceback (_traceback.py)
            return _apply(cls, args, kwargs)
        except Exception as error:
            _hide_internal_frames(error)
            raise


def _bind(cls, custom_setup, args, kwargs):
    """Bind ``apply``'s arguments to ``forward``'s signature (defaults filled in), as torch
    does, so that ``needs_input_grad`` and ``backward``'s results count every parameter."""
    sig = cls.__dict__.get("_forward_signature")
    if sig is None:
        try:
            sig = inspect.signature(cls.forward)
        except (TypeError, ValueError):
            return args, kwargs
        cls._forward_signature = sig
    try:
        bound = sig.bind(*args, **kwargs) if custom_setup else sig.bind(None, *args, **kwargs)
    except TypeError:
        return args, kwargs
    bound.apply_defaults()
    positional = bound.args if custom_setup else bound.args[1:]
    return tuple(positional), bound.kwargs


def _apply(cls, args, kwargs):
    ctx = cls._backward_cls()
    custom_setup = cls.setup_context is not Function.setup_context
    args, kwargs = _bind(cls, custom_setup, args, kwargs)
    is_tensor = tuple(isinstance(a, Tensor) for a in args)
    tensor_args = tuple(a for a in args if isinstance(a, Tensor))
    ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._rg for a in args)
    ctx._arg_is_tensor = is_tensor
    recording = grad_mode.state.enabled and any(t._rg for t in tensor_args)
    with grad_mode.no_grad():
        if custom_setup:
            outputs = cls.forward(*args, **kwargs)
        else:
            outputs = cls.forward(ctx, *args, **kwargs)
    if custom_setup:
        cls.setup_context(ctx, args, outputs)
    single = not isinstance(outputs, tuple)
    outs = (outputs,) if single else outputs
    dirty = {id(t) for t in ctx._dirty}
    non_diff = {id(t) for t in ctx._non_differentiable}
    input_ids = {id(t) for t in tensor_args}
    if not recording:
        final = tuple(_plain_output(o, dirty, input_ids) for o in outs)
        ctx._to_save = None
        _forward_ad(cls, ctx, args, final)
        return final[0] if single else final

    ctx.next_functions = tuple(edge_of(t) for t in tensor_args)
    # the leaves among the inputs, which their AccumulateGrad nodes hold only weakly
    ctx._pins = tuple(t for t, (fn, _) in zip(tensor_args, ctx.next_functions)
                      if type(fn) is AccumulateGrad)
    ctx.needs_input_grad_tensors = tuple(t._rg for t in tensor_args)
    ctx._input_meta = tuple((t._data.shape, t._data.dtype, t._device) for t in tensor_args)
    final, out_meta = [], []
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            final.append(o)
            out_meta.append(None)
            continue
        if id(o) in dirty:
            _check_dirty(o)
            o._vc[0] += 1  # torch counts the declared in-place change once more
            result = o
        elif id(o) in input_ids:
            result = Tensor._make(o._data, o._device, o._base if o._base is not None else o)
        else:
            result = o
        out_meta.append((o._data.shape, o._data.dtype, o._device))
        differentiable = id(o) not in non_diff and (o.dtype.is_floating_point
                                                   or o.dtype.is_complex)
        if differentiable:
            if id(o) in dirty and o._base is not None:
                _rebase_dirty_view(ctx, o, i)
            else:
                result.grad_fn, result._output_nr, result._rg = ctx, i, True
        else:
            if id(o) in dirty:
                result.grad_fn, result._rg = None, False
        final.append(result)
    ctx._out_meta = tuple(out_meta)
    _save(ctx, outs)
    _forward_ad(cls, ctx, args, final)
    return final[0] if single else tuple(final)


def _plain_output(o, dirty, input_ids):
    if isinstance(o, Tensor) and id(o) in dirty:
        o._vc[0] += 1
        return o
    if isinstance(o, Tensor) and id(o) in input_ids and id(o) not in dirty:
        return Tensor._make(o._data, o._device, o._base if o._base is not None else o)
    return o


def _check_dirty(t):
    if t._rg and t.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad has been used in an in-place "
                           "operation.")


def _rebase_dirty_view(ctx, view, index):
    """A dirty input that is a view: the write goes through it into its base (CopySlices)."""
    from .views import rebase_view

    carrier = Tensor._make(view._data, view._device)
    carrier.grad_fn, carrier._output_nr, carrier._rg = ctx, index, True
    rebase_view(view, carrier)


def _save(ctx, outs):
    to_save = ctx._to_save or ()
    ctx._to_save = None
    out_index = {id(o): i for i, o in enumerate(outs) if isinstance(o, Tensor)}
    saved, versions, out_ids = [], [], []
    for t in to_save:
        if t is None:
            saved.append(None)
            versions.append(None)
            out_ids.append(None)
            continue
        nr = out_index.get(id(t))
        # An output is kept without its grad_fn (no reference cycle node -> output -> node).
        saved.append(Tensor._make(t._data, t._device, t) if nr is not None else t)
        versions.append(t._vc[0])
        out_ids.append(nr)
    ctx._saved_versions = tuple(versions)
    ctx._saved_out_ids = tuple(out_ids)
    if _hook_state.stack and saved:
        pack, unpack = _hook_state.stack[-1]
        ctx._saved_vcs = tuple(None if t is None else t._vc for t in saved)
        stack, _hook_state.stack = _hook_state.stack, []
        try:
            saved = [None if t is None else pack(t) for t in saved]
        finally:
            _hook_state.stack = stack
        ctx._unpack = unpack
    ctx._saved = tuple(saved)


def _forward_ad(cls, ctx, args, outputs):
    """Propagate tangents through a Function with its ``jvp`` (inside a dual level)."""
    from . import forward_ad

    if forward_ad._state.level is None:
        return
    tangents = [forward_ad._tangent(a) if isinstance(a, Tensor) else None for a in args]
    if all(t is None for t in tangents):
        return
    ctx._in_jvp = True
    try:
        with grad_mode.no_grad():
            result = cls.jvp(ctx, *tangents)
    finally:
        ctx._in_jvp = False
    if not isinstance(result, tuple):
        result = (result,)
    for o, t in zip(outputs, result):
        if isinstance(o, Tensor) and t is not None:
            forward_ad._set_tangent(o, t)


class InplaceFunction(Function):
    """A Function with an ``inplace`` flag (kept for compatibility)."""

    def __init__(self, inplace=False):
        self.inplace = inplace


class NestedIOFunction(Function):
    """Legacy base class (not supported beyond being importable)."""


class _DelayedErrorNode(Node):
    """Raises when a ``@once_differentiable`` backward is differentiated again."""

    __slots__ = ("message",)

    def name(self):
        return "DelayedError"

    def _apply(self, grads):
        raise RuntimeError(self.message)

    def _release(self):
        pass


def once_differentiable(fn):
    """Decorator for ``backward``: run it without recording; differentiating its result again
    raises.

    Example::

        >>> class F(ember.autograd.Function):
        ...     @staticmethod
        ...     @once_differentiable
        ...     def backward(ctx, grad):
        ...         return ember.tensor(scipy.special.erf(grad.numpy()))
    """

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with grad_mode.no_grad():
            outputs = fn(ctx, *args)
        if not grad_mode.state.enabled:
            return outputs
        requiring = [a for a in args if isinstance(a, Tensor) and a._rg]
        if not requiring:
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        node = _DelayedErrorNode()
        node.message = "trying to differentiate twice a function that was marked with " \
                       "@once_differentiable"
        # As in torch, the node hangs off the (graph-less) outputs: reaching it raises.
        wrapped = []
        for i, o in enumerate(outs):
            if isinstance(o, Tensor) and (o.dtype.is_floating_point or o.dtype.is_complex):
                o = Tensor._make(o._data, o._device)
                o.grad_fn, o._output_nr, o._rg = node, i, True
            wrapped.append(o)
        node._out_meta = tuple((o._data.shape, o._data.dtype, o._device)
                               if isinstance(o, Tensor) else None for o in wrapped)
        return wrapped[0] if single else tuple(wrapped)
    return wrapper


FunctionMeta = _FunctionMeta  # torch's public name for the metaclass of Function
