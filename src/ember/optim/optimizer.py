"""The :class:`Optimizer` base class: parameter groups, per-parameter state, state dicts, hooks.

Optimisers update parameters in place, on the arrays behind the tensors (NumPy or CuPy), with
vectorised in-place array operations: no autograd graph is built and no Python loop runs over
elements. Each update bumps the parameter's version counter, as an in-place tensor op would.

The state dict has torch's layout (``{'state': {id: {...}}, 'param_groups': [{..., 'params':
[ids]}]}``, step counters as float32 0-dim tensors), so ``torch.load`` reads what ``ember.save``
writes of it and the other way round.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from copy import deepcopy

import numpy as np

from .. import _dtype as dt
from .._array_address import data_address
from .._device import META
from .._tensor import Tensor, tensor
from .._traceback import hide_internal_frames as _hide_internal_frames
from ..autograd.grad_mode import enable_grad
from ..nn.modules.module import RemovableHandle
from ..ops.creation import zeros_like
from ..sparse._base import SparseTensorBase

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """Singleton marking a default that every parameter group must set."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()

# The implementation flags most optimisers' groups carry, with the values __setstate__ gives a
# group from an older checkpoint that lacks them (in torch's order).
_FLAGS_ON_LOAD = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}

_global_step_pre_hooks: OrderedDict = OrderedDict()
_global_step_post_hooks: OrderedDict = OrderedDict()


def register_optimizer_step_pre_hook(hook):
    """Register ``hook(optimizer, args, kwargs)`` to run before every optimiser's ``step``.

    It may return ``(new_args, new_kwargs)``. Returns a handle with ``remove()``.
    """
    handle = RemovableHandle(_global_step_pre_hooks)
    _global_step_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook):
    """Register ``hook(optimizer, args, kwargs)`` to run after every optimiser's ``step``."""
    handle = RemovableHandle(_global_step_post_hooks)
    _global_step_post_hooks[handle.id] = hook
    return handle


def _typename(obj):
    if isinstance(obj, Tensor):
        return "ember." + type(obj).__name__
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in ("builtins", None) else f"{module}.{name}"


def _hooked_step(step):
    """Wrap a subclass's ``step``: step pre-hooks, the step itself, then post-hooks."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        try:  # free until an error: then ember's frames leave its traceback (_traceback.py)
            for hook in itertools.chain(_global_step_pre_hooks.values(),
                                        self._optimizer_step_pre_hooks.values()):
                result = hook(self, args, kwargs)
                if result is not None:
                    if isinstance(result, tuple) and len(result) == 2:
                        args, kwargs = result
                    else:
                        raise RuntimeError(f"{step} must return None or a tuple of (new_args, "
                                           f"new_kwargs), but got {result}.")
            out = step(self, *args, **kwargs)
            for hook in itertools.chain(self._optimizer_step_post_hooks.values(),
                                        _global_step_post_hooks.values()):
                hook(self, args, kwargs)
            return out
        except Exception as error:
            _hide_internal_frames(error)
            raise

    wrapper._ember_hooked = True
    return wrapper


def _param_layout(param, state):
    """A sharded (DTensor) parameter's state tensors shown as DTensors of its layout, as in
    torch (ember keeps them as plain local tensors while stepping)."""
    if getattr(param, "_spec", None) is None or not isinstance(state, dict):
        return state
    from ..distributed.tensor._api import state_in_param_layout

    return state_in_param_layout(param, state)


class Optimizer:
    """Base class of all optimisers.

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts (parameter
    groups, each with a ``'params'`` entry and options that override ``defaults``).

    Example::

        >>> w = ember.nn.Parameter(ember.ones(3))
        >>> opt = ember.optim.SGD([w], lr=0.1)
        >>> (w * w).sum().backward(); opt.step(); opt.zero_grad()
        >>> w
        Parameter containing:
        tensor([0.8000, 0.8000, 0.8000], requires_grad=True)
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_ember_hooked", False):
            cls.step = _hooked_step(step)

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    # ------------------------------------------------------------ pickling and printing

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    # Group options added after older checkpoints were written, and the state entries that are
    # step counters: ``__setstate__`` fills the first in and turns the second into tensors.
    _group_defaults_on_load: dict = {}
    _step_keys: tuple = ()

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self.defaults.setdefault("differentiable", False)
        for group in self.param_groups:
            for key, value in self._group_defaults_on_load.items():
                group.setdefault(key, value)
        if self._step_keys:
            self._steps_as_tensors(*self._step_keys)

    def __repr__(self):
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # ------------------------------------------------------------ parameter groups

    def add_param_group(self, param_group):
        """Add a group of parameters (a dict with ``'params'`` and options) to optimise.

        Options the group does not set take the optimiser's defaults.

        Example::

            >>> opt.add_param_group({'params': [head.weight], 'lr': 1e-2})
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)
        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            param_group["param_names"] = names
        for param in tensors:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(param))
            if not self.defaults.get("differentiable", None) and not (
                    param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        if len(tensors) != len({id(p) for p in tensors}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        seen = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if any(id(p) in seen for p in tensors):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ------------------------------------------------------------ gradients and steps

    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all optimised tensors (to None by default, else to zeros).

        Example::

            >>> opt.zero_grad()
            >>> w.grad is None
            True
        """
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                if isinstance(grad, SparseTensorBase):  # torch empties it: nnz 0
                    p._grad = _empty_sparse_like(grad)
                    continue
                if grad.grad_fn is not None:
                    grad.detach_()
                else:
                    grad.requires_grad_(False)
                if grad._device is not META:
                    grad._data[...] = 0
                grad._vc[0] += 1

    def step(self, closure=None):
        """Perform one optimisation step (``closure`` re-evaluates the model, returns the loss)."""
        raise NotImplementedError

    def _eval_closure(self, closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # ------------------------------------------------------------ the shared step loop

    def _step_each_parameter(self, closure):
        """The body of most optimisers' ``step``: ``closure`` evaluated, then
        ``self._update(p, state, param, grad, group)`` for each parameter with a gradient.

        ``param`` and ``grad`` are the arrays to update (real views of complex ones, the
        gradient negated under ``maximize``); ``state`` was filled by :meth:`_init_state` on
        first use and its counters advanced by :meth:`_count_step`. Parameters on the meta
        device get their state and counters but no update: they hold no values.

        Example::

            >>> def step(self, closure=None):
            ...     return self._step_each_parameter(closure)
        """
        loss = self._eval_closure(closure)
        state_for_step, update = self._state_for_step, self._update
        for group in self.param_groups:
            maximize = group["maximize"]
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if isinstance(grad, SparseTensorBase):  # before any state is made, as torch
                    grad = self._dense_gradient(p, group)
                    if isinstance(p, SparseTensorBase):
                        raise _sparse_parameter_refusal(self, p)
                state = state_for_step(p, group)
                arrays = _prepare(p, maximize, grad)
                if arrays is not None:
                    update(p, state, *arrays, group)
        return loss

    # torch's message for a sparse gradient, where the optimiser takes none
    _sparse_refusal = "{name} does not support sparse gradients"

    def _dense_gradient(self, p, group):
        """``p.grad``, a sparse gradient (``Embedding(sparse=True)``), as the dense one the
        update uses; torch's RuntimeError for optimisers that take no sparse gradients.

        SGD and Adagrad take them: their update of a row the sparse gradient does not hold
        is the dense update with a zero gradient row, so the dense form gives torch's values.
        """
        raise RuntimeError(self._sparse_refusal.format(name=type(self).__name__))

    def _update(self, p, state, param, grad, group):
        """Update one parameter's array ``param`` in place from ``grad`` (each optimiser's rule)."""
        raise NotImplementedError

    def _state_for_step(self, p, group):
        """``p``'s state, initialised if new, with its step counters advanced."""
        state = self.state[p]
        if len(state) == 0:
            self._init_state(p, state, group)
        self._count_step(p, state, group)
        return state

    def _init_state(self, p, state, group):
        """Fill a parameter's empty ``state`` before its first step (each optimiser's own)."""

    def _count_step(self, p, state, group):
        """Advance the step counter (``state['step']``) before the update."""
        state["step"]._data += 1

    # ------------------------------------------------------------ hooks

    def _register(self, hooks, hook, prepend=False):
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook):
        """Register ``hook(optimizer, args, kwargs)`` to run before this optimiser's ``step``."""
        return self._register(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """Register ``hook(optimizer, args, kwargs)`` to run after this optimiser's ``step``."""
        return self._register(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """Register ``hook(optimizer)`` to run before ``state_dict``."""
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """Register ``hook(optimizer, state_dict)`` to run after ``state_dict``."""
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """Register ``hook(optimizer, state_dict)`` to run before ``load_state_dict``."""
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """Register ``hook(optimizer)`` to run after ``load_state_dict``."""
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ------------------------------------------------------------ state dicts

    def state_dict(self):
        """The optimiser's state: ``{'state': {param id: {...}}, 'param_groups': [...]}``.

        Parameters are replaced by integer ids (their position over all groups), as in torch.

        Example::

            >>> sorted(ember.optim.SGD([w], lr=0.1).state_dict())
            ['param_groups', 'state']
        """
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        mapping = {}
        start = 0
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            groups.append(packed)
        packed_state = {(mapping[id(k)] if isinstance(k, Tensor) else k): _param_layout(k, v)
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _cast_state_value(param, value, param_id, saved_groups, key):
        fused = capturable = False
        for group in saved_groups:
            if param_id in group["params"]:
                fused = group.get("fused", False)
                capturable = group.get("capturable", False)
                break
        if key == "step":
            if capturable or fused:
                return value.to(dtype=dt.float32, device=param.device)
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)

    def load_state_dict(self, state_dict):
        """Load a state dict from :meth:`state_dict` (ember's or torch's, via ``ember.load``).

        State tensors are cast to their parameter's dtype and device (the ``step`` counters
        keep theirs).

        Example::

            >>> opt.load_state_dict(ember.load('opt.pt'))
        """
        state_dict = state_dict.copy()
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = dict(zip(itertools.chain.from_iterable(g["params"] for g in saved_groups),
                          itertools.chain.from_iterable(g["params"] for g in groups)))
        original_groups = state_dict["param_groups"]

        def cast(param, value, param_id, key=None):
            if isinstance(value, Tensor):
                return Optimizer._cast_state_value(param, value, param_id, original_groups, key)
            if isinstance(value, dict):
                return {k: cast(param, v, param_id, k) for k, v in value.items()}
            if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
                return type(value)(cast(param, v, param_id) for v in value)
            return value

        state = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                param = id_map[key]
                state[param] = cast(param, value, key)
            else:
                state[key] = value
        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            new_groups.append(saved)
        self.__setstate__({"state": state, "param_groups": new_groups})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)

    def _steps_as_tensors(self, *keys):
        """After loading an old state dict, make float step counters float32 tensors again."""
        for group in self.param_groups:
            for p in group["params"]:
                p_state = self.state.get(p, None)
                if not p_state:
                    continue
                for key in keys:
                    if key in p_state and not isinstance(p_state[key], Tensor):
                        p_state[key] = _scalar(float(p_state[key]))


# ---------------------------------------------------------------- helpers for the updates


def _scalar(value):
    """A float32 0-dim CPU tensor: torch's type for ``state['step']`` and similar counters."""
    return tensor(value, dtype=dt.float32)


def _value(x):
    """A Python number from a number or a one-element tensor (a tensor ``lr``, say)."""
    return x.item() if isinstance(x, Tensor) else x


def _real(array):
    """``array`` itself, or for a complex array a real view of shape (..., 2) on its memory."""
    if array.dtype.kind != "c":
        return array
    real = np.float32 if array.dtype == np.complex64 else np.float64
    return array[..., None].view(real)


def _sparse_parameter_refusal(optimizer, p):
    """The error for a sparse parameter (``nn.Parameter(sparse)``), which torch's SGD and
    Adagrad update and ember's optimisers, working on dense arrays, do not."""
    return NotImplementedError(
        f"{type(optimizer).__name__}.step: ember's optimizers update dense parameters only, "
        f"not a sparse parameter (layout {p.layout}); keep the parameter dense or update its "
        f"values yourself")


def _empty_sparse_like(sparse):
    """A sparse COO tensor of ``sparse``'s size, dtype and device with no elements."""
    from ..sparse._coo import SparseCOOTensor

    values = sparse._vals.detach()
    indices = sparse._idx.new_zeros((sparse.sparse_dim(), 0))
    return SparseCOOTensor(indices, values.new_zeros((0,) + tuple(values.shape[1:])),
                           sparse.shape, is_coalesced=True)


def _prepare(p, maximize, grad=None):
    """The parameter's array (real view for complex) and its gradient, ``p.grad`` or the
    dense ``grad`` given for a sparse one (negated to maximise).

    Returns ``None`` for parameters on the meta device, which hold no values to update.
    """
    if p._device is META:
        return None
    grad = (p.grad if grad is None else grad)._data
    if maximize:
        grad = -grad
    return _real(p._data), _real(grad)


def _number(t):
    """A state scalar's value (``state['step']``) as a Python number: ``t.item()`` without the
    checks a user's call needs, which would cost more than a small parameter's update.

    Example::

        >>> _number(_scalar(3.0))
        3.0
    """
    return t._data.item()


def _data(t):
    """A state tensor's array, as a real view for complex tensors."""
    return _real(t._data)


_AXPY = None   # dtype -> BLAS axpy (scipy.linalg.blas), loaded on first use


def _add_scaled_(y, x, alpha):
    """``y += alpha * x`` on arrays, in place, as torch's ``y.add_(x, alpha=alpha)``: one fused
    multiply-add per element. Contiguous float32/float64 NumPy arrays of one shape go to BLAS
    ``axpy`` (one pass, no temporary; bitwise torch's result, where NumPy's product-then-sum
    rounds twice: a 2M-element SGD update 1.1 ms -> 0.55 ms); other arrays take NumPy's way.

    Example::

        >>> y = np.ones(3, np.float32); _add_scaled_(y, np.ones(3, np.float32), -0.5)
        array([0.5, 0.5, 0.5], dtype=float32)
    """
    global _AXPY
    if type(y) is np.ndarray and type(x) is np.ndarray and x.dtype == y.dtype \
            and x.shape == y.shape and y.dtype.kind == "f" and y.flags.c_contiguous \
            and x.flags.c_contiguous and y.flags.writeable and y.size:
        if _AXPY is None:
            _AXPY = _load_axpy()
        axpy = _AXPY.get(y.dtype)
        if axpy is not None:
            flat = y.reshape(-1)
            if axpy(x.reshape(-1), flat, a=alpha) is flat:  # updated in place
                return y
    y += alpha * x
    return y


def _load_axpy():
    """BLAS ``axpy`` by dtype: the OpenBLAS NumPy has loaded already (its ``cblas_?axpy``
    through ctypes), else SciPy's, whose ``scipy.linalg`` import made the first optimiser
    step ~0.3 s slower. SciPy ships its own OpenBLAS, loaded only then: it is held at one
    thread (``ember._threads``: its idle threads would spin beside the working pool)."""
    loaded = _loaded_openblas_axpy()
    if loaded is not None:
        return loaded
    from scipy.linalg import blas

    from .. import _threads

    _threads.apply_thread_limits()
    return {np.dtype(np.float32): blas.saxpy, np.dtype(np.float64): blas.daxpy}


# the names an OpenBLAS build gives cblas_saxpy: (prefix, suffix, its integer type); NumPy's
# wheels bundle scipy-openblas64 (``scipy_cblas_saxpy64_``, 64-bit sizes), SciPy's the 32-bit
_OPENBLAS_NAMES = (("scipy_", "64_", ctypes.c_int64), ("", "64_", ctypes.c_int64),
                   ("scipy_", "", ctypes.c_int), ("", "", ctypes.c_int))


def _loaded_openblas_axpy():
    """``{dtype: axpy(x, y, a)}`` from an OpenBLAS already loaded in this process (found by
    threadpoolctl), or None."""
    try:
        from threadpoolctl import threadpool_info

        paths = [pool["filepath"] for pool in threadpool_info()
                 if pool.get("internal_api") == "openblas"]
    except Exception:  # threadpoolctl missing or unable to inspect
        return None
    for path in paths:
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix, index in _OPENBLAS_NAMES:
            single = getattr(library, f"{prefix}cblas_saxpy{suffix}", None)
            double = getattr(library, f"{prefix}cblas_daxpy{suffix}", None)
            if single is not None and double is not None:
                return {np.dtype(np.float32): _cblas_axpy(single, ctypes.c_float, index),
                        np.dtype(np.float64): _cblas_axpy(double, ctypes.c_double, index)}
    return None


def _cblas_axpy(function, scalar, index):
    """``axpy(x, y, a)``: ``y += a * x`` for contiguous 1-D arrays through the C function
    ``cblas_?axpy(n, a, x, 1, y, 1)``; returns ``y``, or None for a length its integers can't
    hold (then the caller takes NumPy's way)."""
    function.argtypes = [index, scalar, ctypes.c_void_p, index, ctypes.c_void_p, index]
    function.restype = None
    limit = 2 ** (8 * ctypes.sizeof(index) - 1)

    def axpy(x, y, a):
        if y.size >= limit:
            return None
        function(y.size, a, data_address(x), 1, data_address(y), 1)
        return y
    return axpy


def _bump(*tensors):
    """Advance the version counters of tensors whose arrays were updated in place."""
    for t in tensors:
        t._vc[0] += 1


def _zero_state(p, state, *keys):
    """Set each of ``keys`` in ``state`` to a zero tensor shaped like ``p`` (moment buffers).

    Example::

        >>> _zero_state(p, state, "exp_avg", "exp_avg_sq")
    """
    for key in keys:
        state[key] = zeros_like(p)


def _weight_decay(param, grad, weight_decay, lr=None, decoupled=False):
    """The gradient with weight decay applied, torch's two ways.

    Coupled (L2) decay returns ``grad + weight_decay * param``; decoupled decay (AdamW) shrinks
    ``param`` in place by ``1 - lr * weight_decay`` and returns ``grad`` unchanged.

    Example::

        >>> grad = _weight_decay(param, grad, 1e-2)            # SGD, Adam
        >>> grad = _weight_decay(param, grad, 1e-2, lr, True)  # AdamW
    """
    if weight_decay == 0:
        return grad
    if decoupled:
        param *= 1 - lr * weight_decay
        return grad
    if grad.dtype != param.dtype or grad.shape != param.shape:
        return grad + weight_decay * param
    return _add_scaled_(grad.copy(), param, weight_decay)  # torch's grad.add(param, alpha=wd)


def _check_lr(lr):
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _check_non_negative(**values):
    """Raise torch's ``ValueError('Invalid <name> value: ...')`` for a negative option.

    Example::

        >>> _check_non_negative(epsilon=eps, weight_decay=weight_decay)
    """
    for name, value in values.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {name} value: {value}")


def _check_fused(fused, foreach, differentiable):
    """torch's checks of ``fused=True`` against the other implementation flags."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

