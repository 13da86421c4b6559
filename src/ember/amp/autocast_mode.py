"""Automatic mixed precision: :class:`autocast` and the policies it follows.

Inside ``ember.autocast(device_type)``, operators on tensors of that device type run in the
precision torch's autocast op reference gives them:

* "lower precision" ops (``mm``, ``matmul``, ``linear``, ``conv*``, ``addmm``, ``baddbmm``,
  ...) cast their floating inputs (float16, bfloat16, float32; never float64) to the autocast
  dtype (CPU: bfloat16 by default, CUDA: float16);
* "float32" ops (the losses, ``prod``, ``cdist``, ``trace``, the linear-algebra
  decompositions; on CUDA also ``exp``, ``log``, ``pow``, ``sum``, ``softmax``, ``layer_norm``,
  ...) cast them to float32;
* every other op runs as usual, in the widest type of its inputs (type promotion).

Each policy is declared where its op or function is defined, by device type where torch's
CPU and CUDA lists differ (torch's lists are the facts). A primitive operator (one
:class:`~ember.ops._registry.Op`) declares ``Op(..., autocast={"cuda": "fp32"})`` and is cast
in the dispatcher: ``run_op`` tests one flag and, while an autocast region is active, hands
its inputs to :func:`_cast_op_inputs`. A composite public function (``linear`` is a product
plus a bias, the losses are several ops) is decorated with ``@autocast_policy(...)``
(``ops/_registry.py``): inside a region the wrapper casts the arguments as torch does for the
whole function and runs it with the dispatcher cast off, so that its inner ops are not cast
again.

The casts are ordinary differentiable ops, so gradients flow back to the parameters in
their own dtype. Leaf tensors that require grad (parameters) are cast once per outermost
autocast region and the cast is reused (``cache_enabled``), as torch does.

Deviation: the autocast state is process-wide, not per thread as in torch.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from ..ops._registry import autocast_state as _hook

__all__ = ["autocast", "autocast_decorator", "custom_fwd", "custom_bwd",
           "is_autocast_available"]


class _DeviceState:
    __slots__ = ("enabled", "dtype")

    def __init__(self, dtype):
        self.enabled = False
        self.dtype = dtype


_STATES = {"cpu": _DeviceState(dt.bfloat16), "cuda": _DeviceState(dt.float16)}
_SUPPORTED = {"cpu": (dt.bfloat16, dt.float16), "cuda": (dt.float16, dt.bfloat16)}
_KNOWN_DEVICES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                  "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                  "privateuseone")

_ELIGIBLE = {np.dtype(np.float16), np.dtype(np.float32)}  # and bfloat16, tested by name
_cache = {}          # id(leaf) -> (leaf, version, cast): casts of parameters, per region
_cache_enabled = [True]
_nesting = [0]


def _refresh():
    _hook.on = any(s.enabled for s in _STATES.values())


def _cast_tensor(t, target):
    """``t`` in ``target`` (an ember dtype) when it is an eligible floating tensor."""
    data = t._data
    eligible = data.dtype in _ELIGIBLE or dt.is_bfloat16_array_dtype(data.dtype)
    if not eligible or data.dtype == target.np:
        return t
    if _cache_enabled[0] and t._rg and t._grad_fn is None:
        hit = _cache.get(id(t))
        if hit is not None and hit[0] is t and hit[1] == t._vc[0] and hit[2].dtype is target:
            return hit[2]
        out = t.to(target)
        _cache[id(t)] = (t, t._vc[0], out)
        return out
    return t.to(target)


def _cast_value(value, device_type, target):
    if isinstance(value, Tensor):
        if value._device.type == device_type:
            return _cast_tensor(value, target)
        return value
    if isinstance(value, (list, tuple)) and value and any(isinstance(v, Tensor) for v in value):
        return type(value)(_cast_value(v, device_type, target) for v in value)
    return value


def _target_dtype(policy, state):
    """The dtype a policy casts floating inputs to (None: the inputs' own types)."""
    if policy == "lower":
        return state.dtype
    if policy == "fp32":
        return dt.float32
    return None  # "promote": ember's ops promote their inputs anyway


def _cast_op_inputs(op, inputs):
    """The dispatcher's hook (``run_op``): ``inputs`` cast by ``op.autocast``, if it has a
    policy on the inputs' device type while that device's autocast is on."""
    policies = op.autocast
    if policies is None:
        return inputs
    device_type = inputs[0]._device.type
    state = _STATES.get(device_type)
    if state is None or not state.enabled:
        return inputs
    target = _target_dtype(policies.get(device_type), state)
    if target is None:
        return inputs
    return tuple(_cast_tensor(t, target) for t in inputs)


def _first_device_type(args, kwargs):
    for v in args:
        if isinstance(v, Tensor):
            return v._device.type
        if isinstance(v, (list, tuple)):
            for w in v:
                if isinstance(w, Tensor):
                    return w._device.type
    for v in kwargs.values():
        if isinstance(v, Tensor):
            return v._device.type
    return None


# torch bans one function from autocast regions (its CUDA "banned" list)
_BANNED = ("torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to "
           "autocast.\nMany models use a sigmoid layer right before the binary cross entropy "
           "layer.\nIn this case, combine the two layers using "
           "torch.nn.functional.binary_cross_entropy_with_logits\nor torch.nn.BCEWithLogitsLoss."
           "  binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to autocast.")


def _call_with_policy(fn, policies, args, kwargs):
    """Run the composite function ``fn`` (declared with ``@autocast_policy``, see
    ``ops/_registry.py``) inside an autocast region: its floating arguments cast by its
    policy on their device type, its own ops not cast again."""
    device_type = _first_device_type(args, kwargs)
    state = _STATES.get(device_type)
    policy = policies.get(device_type)
    if policy is None or not state.enabled:
        return fn(*args, **kwargs)
    if policy == "banned":
        raise RuntimeError(_BANNED)
    target = _target_dtype(policy, state)
    if target is not None:
        args = tuple(_cast_value(a, device_type, target) for a in args)
        kwargs = {k: _cast_value(v, device_type, target) for k, v in kwargs.items()}
    _hook.on = False  # the function's own ops are not cast again
    try:
        return fn(*args, **kwargs)
    finally:
        _refresh()


def install():
    """Connect the dispatcher's autocast hooks (``ops/_registry.py``) to this module: the
    policies themselves are declared next to each op (``Op(..., autocast=...)``) and
    composite function (``@autocast_policy``). Called once at import."""
    _hook.cast = _cast_op_inputs
    _hook.call = _call_with_policy


# ---------------------------------------------------------------- the public API


def _check_device_type(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    kind = device_type.split(":")[0]
    if kind not in _KNOWN_DEVICES:
        raise RuntimeError(f"Expected one of {', '.join(_KNOWN_DEVICES)} device type at start "
                           f"of device string: {device_type}")
    return kind


def is_autocast_available(device_type):
    """Whether autocast can run on ``device_type`` (``'cpu'`` always; ``'cuda'`` here too:
    it disables itself with a warning when no GPU is present).

    Example::

        >>> ember.amp.is_autocast_available("cpu")
        True
    """
    return _check_device_type(device_type) in _STATES


class autocast:
    """Run the ops in this region in mixed precision, as ``torch.autocast``.

    ``device_type`` is ``'cpu'`` (default dtype bfloat16) or ``'cuda'`` (float16). Ops in
    torch's lower-precision list (matmul, linear, conv, ...) run in ``dtype``; ops in its
    float32 list (losses, ...) run in float32; other ops in the widest input type. Works as a
    context manager and as a decorator; regions nest, and ``enabled=False`` turns autocast off
    inside an enclosing region. Backward should run outside the region.

    Example::

        >>> with ember.autocast("cpu"):
        ...     y = ember.mm(ember.ones(2, 3), ember.ones(3, 4))
        >>> y.dtype
        ember.bfloat16
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        self.device = _check_device_type(device_type)
        if self.device not in _STATES:
            raise RuntimeError(f"User specified an unsupported autocast device_type "
                               f"'{device_type}'")
        state = _STATES[self.device]
        self.fast_dtype = state.dtype if dtype is None else dt.to_dtype(dtype)
        self._cache_enabled = _cache_enabled[0] if cache_enabled is None else cache_enabled
        if not isinstance(enabled, bool):
            enabled = bool(enabled)
        if self.device == "cuda":
            from .. import cuda

            if enabled and not cuda.is_available():
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                              "autocast.", UserWarning, stacklevel=2)
                enabled = False
        if enabled and self.fast_dtype not in _SUPPORTED[self.device]:
            if self.device == "cpu":
                warnings.warn("In CPU autocast, but the target dtype is not supported. "
                              "Disabling autocast.\nCPU Autocast only supports dtypes of "
                              "torch.bfloat16, torch.float16 currently.", UserWarning,
                              stacklevel=2)
            else:
                warnings.warn("In CUDA autocast, but the target dtype is not supported. "
                              "Disabling autocast.\nCUDA Autocast only supports dtypes of "
                              "torch.float16 and torch.bfloat16 currently.", UserWarning,
                              stacklevel=2)
            enabled = False
        self._enabled = enabled

    def __enter__(self):
        state = _STATES[self.device]
        self._previous = (state.enabled, state.dtype, _cache_enabled[0])
        state.enabled, state.dtype = self._enabled, self.fast_dtype
        _cache_enabled[0] = self._cache_enabled
        _nesting[0] += 1
        _refresh()
        return self

    def __exit__(self, exc_type, exc, tb):
        _nesting[0] -= 1
        if _nesting[0] == 0:
            _cache.clear()
        state = _STATES[self.device]
        state.enabled, state.dtype, _cache_enabled[0] = self._previous
        _refresh()
        return False

    def __call__(self, func):
        return autocast_decorator(self, func)


def autocast_decorator(autocast_instance, func):
    """``func`` run inside ``autocast_instance`` (what ``@autocast(...)`` does to a function).

    Example::

        >>> f = autocast_decorator(autocast("cpu"), lambda x: x @ x)
        >>> f(ember.ones(2, 2)).dtype
        ember.bfloat16
    """
    @functools.wraps(func)
    def decorate_autocast(*args, **kwargs):
        with autocast_instance:
            return func(*args, **kwargs)

    return decorate_autocast


def _state_of(device_type):
    kind = _check_device_type(device_type)
    if kind not in _STATES:
        raise RuntimeError(f"unsupported autocast device_type '{device_type}'")
    return _STATES[kind]


def is_autocast_enabled(device_type=None):
    """Whether autocast is on for ``device_type`` (without one: CUDA, as torch).

    Example::

        >>> with ember.autocast("cpu"):
        ...     ember.is_autocast_enabled("cpu")
        True
    """
    return _state_of("cuda" if device_type is None else device_type).enabled


def set_autocast_enabled(device_type, enabled):
    """Turn autocast on or off for ``device_type`` (what :class:`autocast` does on entry).

    Example::

        >>> ember.set_autocast_enabled("cpu", False)
    """
    _state_of(device_type).enabled = bool(enabled)
    _refresh()


def get_autocast_dtype(device_type):
    """The dtype lower-precision ops run in on ``device_type`` (CPU: bfloat16, CUDA: float16,
    unless an :class:`autocast` region sets another).

    Example::

        >>> ember.get_autocast_dtype("cpu")
        ember.bfloat16
    """
    return _state_of(device_type).dtype


def set_autocast_dtype(device_type, dtype):
    """Set the dtype of lower-precision ops on ``device_type``.

    Example::

        >>> ember.set_autocast_dtype("cpu", ember.bfloat16)
    """
    _state_of(device_type).dtype = dt.to_dtype(dtype)


def is_autocast_cache_enabled():
    """Whether casts of parameters are reused within an autocast region.

    Example::

        >>> ember.is_autocast_cache_enabled()
        True
    """
    return _cache_enabled[0]


def set_autocast_cache_enabled(enabled):
    """Turn the reuse of parameter casts on or off.

    Example::

        >>> ember.set_autocast_cache_enabled(True)
    """
    _cache_enabled[0] = bool(enabled)


def clear_autocast_cache():
    """Forget the casts of parameters made so far in this region.

    Example::

        >>> ember.clear_autocast_cache()
    """
    _cache.clear()


# ---------------------------------------------------------------- custom autograd Functions


def _cast(value, device_type, dtype):
    if isinstance(value, Tensor):
        is_eligible = (value.is_floating_point() and value._device.type == device_type
                       and value.dtype is not dt.float64)
        return value.to(dtype) if is_eligible else value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, dict):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorator for the ``forward`` of a custom :class:`ember.autograd.Function` under
    autocast: with ``cast_inputs`` (a dtype), floating inputs are cast to it and forward runs
    with autocast off; without, forward runs under the surrounding autocast state, which
    :func:`custom_bwd` restores for backward.

    Example::

        >>> class MyMM(ember.autograd.Function):
        ...     @staticmethod
        ...     @ember.amp.custom_fwd(device_type="cpu")
        ...     def forward(ctx, a, b):
        ...         return a.mm(b)
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_context = is_autocast_enabled(device_type)
        ctx._fwd_used_autocast = False
        if autocast_context:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs),
                           **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorator for the ``backward`` of a custom Function: runs it under the autocast state
    its forward saw (see :func:`custom_fwd`).

    Example::

        >>> class MyMM(ember.autograd.Function):
        ...     @staticmethod
        ...     @ember.amp.custom_bwd(device_type="cpu")
        ...     def backward(ctx, grad):
        ...         return grad, grad
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast,
                      dtype=ctx._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
