"""The operator registry: one :class:`Op` per primitive, and the dispatcher that runs it.

An operator is defined once, with everything the system needs from it:

* ``kernel(xp, *arrays, **params)`` computes the result on an array module ``xp`` (NumPy for
  ``cpu``, CuPy for ``cuda``, ``ember.webgpu``'s module for ``webgpu``), so one kernel serves
  every device; a device type may have a kernel of its own (:meth:`Op.defkernel`: oneDNN's
  convolutions on the CPU), which the op then runs there instead;
* ``meta(*arrays, **params)`` (optional) returns the result's shape and dtype without computing it,
  for the ``meta`` device. Without one, the kernel runs on zero-stride stand-ins, which costs
  nothing for views and a temporary output for everything else;
* ``derivative(ctx, *grads)`` (optional) returns the gradient for each input, written with ember
  operators so that gradients are themselves differentiable (higher-order autograd).

:func:`dispatch` checks devices, runs the right rule and records the autograd node.
"""

from __future__ import annotations

import contextlib
import functools
import warnings

import numpy as np

from .. import _dtype as dt
from .._device import META
from .._shared_memory import is_shared
from .._tensor import Tensor, _trace_state
from ..autograd import forward_ad as _forward_ad
from ..autograd import grad_mode
from ..autograd.graph import record, record_binary
from ..profiler._recorder import state as _profiling
from ._fusion import fusion_rule

__all__ = ["Op", "defop", "device_type_of", "dispatch", "wrap"]

# every Op made at import time, by name (namesakes kept apart): ember.jit looks the operator
# names of a saved graph up here
registry = {}


# What an op computes, as a tag (torch's ``native_functions.yaml`` tags, JAX's primitive
# families): rules that follow from it need not be written per op. A pointwise op's
# forward-mode rule is its derivative applied element by element, and it is batched by
# broadcasting over the batch dim.
KINDS = ("pointwise-unary", "pointwise-binary", "pointwise-ternary", "reduction", "scan",
         "view", "shape", "indexing", "linalg", "random", "creation", "nn", "other")

# The rules an op owns besides its kernel; each is given, follows from the kind, or is
# declined with a reason (:meth:`Op.opt_out`).
RULES = ("derivative", "jvp", "batch", "onnx", "fuse", "autocast")

# The device types an op may have a kernel of its own for (:meth:`Op.defkernel`); ``meta``
# computes no values and has the meta rule instead.
DEVICE_TYPES = ("cpu", "cuda", "webgpu")

# Rules a whole kind declines, and why (declared once per kind, not per op).
KIND_OPT_OUTS = {
    "fuse": {
        **dict.fromkeys(("reduction", "scan"), "not element by element: a fused chain computes "
                        "each element of one buffer from the same elements of its operands"),
        **dict.fromkeys(("view", "shape", "indexing"), "moves or selects elements instead of "
                        "computing them: nothing for a fused element-wise chain to compute"),
        **dict.fromkeys(("linalg", "nn", "other", "random", "creation"),
                        "not element-wise: only chains of element-wise ops fuse into one "
                        "buffer"),
    },
    # torch's autocast lists name the ops that change precision; every other op runs in the
    # type its inputs promote to (an op of any kind may still declare a policy)
    "autocast": dict.fromkeys(KINDS, "not in torch's autocast lists: runs in the type its "
                              "inputs promote to"),
}

# torch's autocast categories (lower_precision_fp, fp32, promote, banned) and the device
# types whose lists differ
AUTOCAST_POLICIES = ("lower", "fp32", "promote", "banned")
AUTOCAST_DEVICES = ("cpu", "cuda")


def autocast_rule(spec, where="op"):
    """The per-device autocast policy ``{device type: policy}`` declared by ``spec``: None
    (no policy), one policy for both device types, or a dict by device type.

    Example::

        >>> autocast_rule("lower")
        {'cpu': 'lower', 'cuda': 'lower'}
        >>> autocast_rule({"cuda": "fp32"})
        {'cuda': 'fp32'}
    """
    if spec is None:
        return None
    policies = dict.fromkeys(AUTOCAST_DEVICES, spec) if isinstance(spec, str) else dict(spec)
    for device_type, policy in policies.items():
        if device_type not in AUTOCAST_DEVICES or policy not in AUTOCAST_POLICIES:
            raise ValueError(f"{where}: autocast policy {device_type!r}: {policy!r} is not one "
                             f"of {AUTOCAST_POLICIES} on {AUTOCAST_DEVICES}")
    return policies


class Op:
    """A primitive operator and every rule it owns: kernel, meta rule, derivative (reverse
    mode), ``jvp`` (forward mode), ``batch`` (vmap), ``onnx`` (its ONNX form), each
    registered next to the op.

    Example::

        >>> op = Op("twice", lambda xp, a: a * 2, kind="pointwise-unary", register=False)
        >>> _ = op.defderivative(lambda ctx, grad: (grad * 2,))
        >>> op.pointwise
        True
    """

    __slots__ = ("name", "kernel", "meta", "derivative", "save_inputs", "save_output",
                 "grad_name", "view", "multi_output", "differentiable_outputs", "jvp",
                 "kind", "batch", "holomorphic", "onnx", "opt_outs", "fuse", "autocast",
                 "signature", "generic_kernel", "device_kernels")

    def __init__(self, name, kernel, *, meta=None, save_inputs=True, save_output=False,
                 view=False, multi_output=False, differentiable_outputs=None, grad_name=None,
                 register=True, kind="other", holomorphic=False, fuse=None, autocast=None,
                 onnx=None, opt_outs=None):
        if kind not in KINDS:
            raise ValueError(f"op {name}: unknown kind {kind!r}, expected one of {KINDS}")
        # how it runs as a step of a fused element-wise chain (``ops/_fusion.py``)
        self.fuse = fusion_rule(fuse, kind, name)
        # its precision inside ember.autocast, by device type (``amp/autocast_mode.py``)
        self.autocast = autocast_rule(autocast, f"op {name}")
        self.name = name
        # ``kernel`` is what runs: ``generic_kernel`` (written for any array module) until a
        # device type gets its own (:meth:`defkernel`), then a choice between them by ``xp``
        self.kernel = self.generic_kernel = kernel
        self.device_kernels = {}  # device type -> its own kernel
        self.meta = meta
        self.derivative = None
        self.jvp = None  # forward-mode rule (:meth:`defjvp`); else derived, see forward_ad
        self.batch = None  # vmap rule (:meth:`defbatch`); else derived from the kind
        self.onnx = onnx  # ONNX form (:meth:`defonnx`), read by ``ember.onnx.export``
        self.kind = kind
        # complex-differentiable, so an element-wise forward rule holds for complex inputs
        self.holomorphic = holomorphic
        self.opt_outs = {}  # rule name -> why this op declines it (:meth:`opt_out`)
        for rule, reason in (opt_outs or {}).items():
            self.opt_out(rule, reason)
        # the typed signature of its public function (``ops/_signature.py``), when declared
        self.signature = None
        self.save_inputs = save_inputs
        self.save_output = save_output
        self.view = view
        self.multi_output = multi_output
        self.differentiable_outputs = differentiable_outputs
        camel = "".join(part.capitalize() for part in name.strip("_").split("_"))
        self.grad_name = grad_name or f"{camel}Backward0"
        if register:
            registry.setdefault(name, []).append(self)

    @property
    def pointwise(self):
        """Whether the op works element by element (its kind is one of the pointwise ones)."""
        return self.kind.startswith("pointwise")

    def defkernel(self, device_type, fn=None):
        """Give ``device_type`` (one of :data:`DEVICE_TYPES`) a kernel of its own, run there
        instead of the generic one (also as a decorator). It has the generic kernel's
        signature, and may call ``op.generic_kernel`` for the cases it does not handle. Ops
        without device kernels pay nothing for the choice.

        Example::

            @convolution_op.defkernel("cpu")
            def _(xp, x, w, **geometry):
                y = onednn_forward(x, w, **geometry)   # None where oneDNN declines
                return y if y is not None else convolution_op.generic_kernel(xp, x, w, **geometry)
        """
        if device_type not in DEVICE_TYPES:
            raise ValueError(f"op {self.name}: unknown device type {device_type!r} for a kernel, "
                             f"expected one of {DEVICE_TYPES}")

        def attach(kernel):
            self.device_kernels[device_type] = kernel
            self.kernel = _kernel_by_device(self.generic_kernel, self.device_kernels)
            return kernel
        return attach if fn is None else attach(fn)

    def defderivative(self, fn):
        """Decorator: attach ``fn(ctx, *grads) -> grads per input`` as this op's derivative."""
        self.derivative = fn
        return fn

    def defjvp(self, fn):
        """Decorator: attach ``fn(primals, tangents, result, **params) -> tangent`` as this
        op's forward-mode rule (``tangents[i]`` is None for an input without one).

        Example::

            @neg_op.defjvp
            def _(p, t, y):
                return -t[0]
        """
        self.jvp = fn
        return fn

    def defbatch(self, fn):
        """Decorator: attach ``fn(xp, step, arrays, batched, batch_size)`` as this op's vmap
        rule (see ``ember/func/_batching_rules.py``)."""
        self.batch = fn
        return fn

    def defonnx(self, mapping):
        """Attach this op's ONNX form, read by ``ember.onnx.export`` (also as a decorator).

        ``mapping(ctx, *inputs, **params)`` gets the exporter's context (``ember/onnx/
        _context.py``), the ONNX names of the traced node's inputs and its parameters; it adds
        ONNX nodes with ``ctx.op(...)`` and returns the result's name (a tuple of names, or
        None for an output nothing reads, when the op has several). The common case is a
        string: the ONNX operator that computes the op on its inputs cast to the result's
        dtype, also given as ``Op(..., onnx="Exp")``.

        Example::

            exp_op.defonnx("Exp")

            @add_op.defonnx
            def _(ctx, a, b, alpha=1):
                a, b = ctx.operands(a, b)
                return ctx.op("Add", a, ctx.op("Mul", b, ctx.scalar(alpha, ctx.out_dtype())))
        """
        self.onnx = mapping
        return mapping

    def opt_out(self, rule, reason):
        """Declare that this op has no ``rule`` (one of :data:`RULES`), and why.

        Also given as ``Op(..., opt_outs={rule: reason})``.

        Example::

            >>> zeta_op.opt_out("jvp", "torch has no forward-mode formula for zeta")
        """
        if rule not in RULES:
            raise ValueError(f"unknown rule {rule!r}, expected one of {RULES}")
        self.opt_outs[rule] = reason
        return self

    def declines(self, rule):
        """Why this op has no ``rule``: its own opt-out or its kind's (None if it has one).

        Example::

            >>> sum_op.declines("fuse")
            'not element by element: ...'
        """
        return self.opt_outs.get(rule) or KIND_OPT_OUTS.get(rule, {}).get(self.kind)

    def __repr__(self):
        return f"<op {self.name}>"


def device_type_of(xp):
    """The device type whose arrays the array module ``xp`` makes.

    Example::

        >>> device_type_of(numpy)
        'cpu'
    """
    if xp is np:
        return "cpu"
    return "webgpu" if xp.__name__.startswith("ember.webgpu") else "cuda"


def _kernel_by_device(generic, device_kernels):
    """The kernel of an op with device kernels: the one for ``xp``'s device type, else the
    generic one."""
    def kernel(xp, *arrays, **params):
        return device_kernels.get(device_type_of(xp), generic)(xp, *arrays, **params)
    kernel.__name__ = getattr(generic, "__name__", "kernel")
    kernel.__doc__ = getattr(generic, "__doc__", None)
    return kernel


def first_order_backward(composite):
    """The opt-outs of a fused first-order backward kernel: it runs only when no graph of
    the gradient is recorded (a ``create_graph`` backward, forward mode and vmap go through
    the ``composite`` ops instead), and exported models run inference. Pass as
    ``Op(..., opt_outs=first_order_backward("the composite loss"))``.

    Example::

        >>> sorted(first_order_backward("the composite loss"))
        ['batch', 'derivative', 'jvp', 'onnx']
    """
    return {"derivative": f"first order only: a create_graph backward differentiates "
                          f"{composite} instead",
            "jvp": "first order only; never runs under forward-mode AD",
            "batch": "first order only; vmap traces the composite ops",
            "onnx": "a backward kernel: exported models run inference"}


def defop(name, **options):
    """Decorator turning a kernel ``fn(xp, *arrays, **params)`` into an :class:`Op`.

    Example::

        @defop("exp", save_output=True, kind="pointwise-unary")
        def exp_op(xp, a):
            return xp.exp(a)

        @exp_op.defderivative
        def _(ctx, grad):
            return (grad * ctx.output,)

        @exp_op.defjvp   # optional: a pointwise op's rule follows from its derivative
        def _(p, t, y):
            return t[0] * y
    """
    def decorate(kernel):
        return Op(name, kernel, **options)
    return decorate


def wrap(array, device, base=None):
    """A tensor around a kernel's result (NumPy returns scalars for 0-dim results)."""
    if type(array) is not np.ndarray and not hasattr(array, "__cuda_array_interface__") and \
            not hasattr(array, "storage"):  # (a webgpu array has its storage)
        array = np.asarray(array)
    return Tensor._make(array, device, base)


def _meta_standin(spec):
    shape, dtype = spec
    return np.broadcast_to(np.zeros((), dtype.np if isinstance(dtype, dt.dtype) else dtype),
                           shape)


def _device_mismatch(op, first, other):
    raise RuntimeError(
        "Expected all tensors to be on the same device, but found at least two devices, "
        f"{first} and {other}! (when checking argument for {op.name})")


def _run_meta(op, arrays, params):
    if op.meta is None:  # the generic kernel on zero-stride stand-ins (not the CPU's own)
        return op.generic_kernel(np, *arrays, **params)
    spec = op.meta(*arrays, **params)
    if op.multi_output:
        return tuple(_meta_standin(s) for s in spec)
    return _meta_standin(spec)


_grad_state = grad_mode.state
_grad_off = grad_mode._grad_off  # ``.none``: grad mode is on in every thread (one slot test)
_fw_state = _forward_ad._state
_new = object.__new__

# How a view was made, as torch's CreationMeta (``Tensor._vmeta``; 0: plainly): under no_grad,
# or as one of several views returned by one op (``unbind``, ``split``). In-place changes that
# autograd would have to follow through such a view raise (``autograd/views.py``); a plain view
# of a marked view keeps the mark.
_NO_GRAD_VIEW, _MULTI_OUTPUT_VIEW = 1, 2


class _AutocastHook:
    """ember.autocast's switch (``ember/amp``): while ``on``, ``cast(op, inputs)`` casts an
    op's inputs by the op's ``autocast`` policy before it runs, and ``call(fn, policies,
    args, kwargs)`` runs a function declared with :func:`autocast_policy`."""

    __slots__ = ("on", "cast", "call")

    def __init__(self):
        self.on, self.cast, self.call = False, None, None


autocast_state = _AutocastHook()


def autocast_policy(policy=None, *, cpu=None, cuda=None):
    """Decorator declaring the autocast policy of a composite function (one made of several
    ops, such as ``linear`` or a loss): inside ``ember.autocast`` its floating arguments are
    cast as the policy says and its own ops are not cast again. ``policy`` applies to both
    device types, ``cpu``/``cuda`` to one (see :func:`autocast_rule`). Outside autocast the
    wrapper costs one flag test.

    Example::

        @autocast_policy(cpu="fp32", cuda="fp32")
        def mse_loss(input, target, ...):
            ...
    """
    spec = policy if policy is not None else {
        device_type: p for device_type, p in (("cpu", cpu), ("cuda", cuda)) if p is not None}

    def decorate(fn):
        policies = autocast_rule(spec, fn.__qualname__)

        @functools.wraps(fn)
        def autocast_wrapper(*args, **kwargs):
            if not autocast_state.on:
                return fn(*args, **kwargs)
            return autocast_state.call(fn, policies, args, kwargs)
        autocast_wrapper.autocast = policies
        return autocast_wrapper
    return decorate


def dispatch(op, inputs, params):
    """Run ``op`` on tensors ``inputs`` and record the autograd node when grad is needed."""
    return run_op(op, *inputs, **params)


def run_op(op, *inputs, **params):
    """The body of :func:`dispatch`, which is also ``Op.__call__``: ``op(a, b, k=v)``.

    This is the hot path of every operator: keep it short.
    """
    if _profiling.recorder is not None:  # ember.profiler times the call (it runs it here again)
        result = _profiling.recorder.run_op(op, inputs, params)
        if result is not None:
            return result
    if autocast_state.on:  # inside ember.autocast
        inputs = autocast_state.cast(op, inputs)
    device = inputs[0]._device
    if len(inputs) == 1:
        arrays = (inputs[0]._data,)
    elif len(inputs) == 2:
        if inputs[1]._device is not device:
            _device_mismatch(op, device, inputs[1]._device)
        arrays = (inputs[0]._data, inputs[1]._data)
    else:
        for t in inputs:
            if t._device is not device:
                _device_mismatch(op, device, t._device)
        arrays = tuple(t._data for t in inputs)
    xp = device._xp
    if xp is not None:
        try:
            out = op.kernel(xp, *arrays, **params)
        except np.linalg.LinAlgError as error:  # free when nothing is raised
            raise _linalg_error(op, error) from error
    elif device is META:
        out = _run_meta(op, arrays, params)
    else:
        out = _run_cuda(op, device, arrays, params)

    base = None
    if op.view:
        base = inputs[0]._base
        if base is None:
            base, created = inputs[0], 0
        else:
            created = inputs[0]._vmeta  # a plain view of a marked view keeps the mark
    if op.multi_output:
        results = tuple(wrap(o, device, base) for o in out)
        if base is not None:
            created = _MULTI_OUTPUT_VIEW if _grad_state.enabled else _NO_GRAD_VIEW
            for r in results:
                r._vmeta = created
    else:
        if type(out) is not np.ndarray:
            out = _as_array(out, device)
        # Tensor._make, written out: the call would cost 100-250 ns of a 1.3 us op (measured
        # A/B in one process); tests/test_op_registry_rules.py keeps the two alike
        results = _new(Tensor)
        results._data = out
        results._device = device
        results._rg = False
        results._grad_fn = None
        results._output_nr = 0
        if base is None:
            results._vc = [0]
            results._base = None
        else:
            results._vc = base._vc
            results._base = base
            results._gfv = base._vc[0]
            results._vmeta = created if _grad_off.none or _grad_state.enabled else \
                _NO_GRAD_VIEW
    if op.derivative is not None and (_grad_off.none or _grad_state.enabled):
        for t in inputs:
            # a view requires grad when its base does (even one made under no_grad)
            if t._rg or (t._base is not None and t._base._rg):
                record(op, inputs, params, results)
                break
    if _fw_state.level is not None:
        _forward_ad.propagate(op, inputs, params, results)
    if _trace_state.tracer is not None:  # ember.jit.trace records the call
        _trace_state.tracer.record(op, inputs, params, results)
    return results


Op.__call__ = run_op


def run_binary(op, a, b):
    """:func:`run_op` for the arithmetic operators' common call (``ops/_operands.py``): ``op``
    takes no parameters, makes one output that is not a view, and ``a`` and ``b`` are on one
    device. Everything else (profiling, autocast, another device) takes :func:`run_op`.

    Example::

        >>> run_binary(add_op, ember.ones(2), ember.ones(2))
        tensor([2., 2.])
    """
    xp = a._device._xp
    if _profiling.recorder is not None or autocast_state.on or xp is None:
        return run_op(op, a, b)
    out = op.kernel(xp, a._data, b._data)
    if type(out) is not np.ndarray:
        out = _as_array(out, a._device)
    result = _new(Tensor)  # Tensor._make, written out as in run_op
    result._data = out
    result._device = a._device
    result._rg = False
    result._grad_fn = None
    result._output_nr = 0
    result._vc = [0]
    result._base = None
    if (a._rg or b._rg or (a._base is not None and a._base._rg) or (
            b._base is not None and b._base._rg)) and (_grad_off.none or _grad_state.enabled) \
            and op.derivative is not None:
        record_binary(op, a, b, {}, result)
    if _fw_state.level is not None:
        _forward_ad.propagate(op, (a, b), {}, result)
    if _trace_state.tracer is not None:  # ember.jit.trace records the call
        _trace_state.tracer.record(op, (a, b), {}, result)
    return result


def on_device(device):
    """The context in which to compute on ``device``: its GPU made current (a no-op else)."""
    if device.type == "cuda":
        return device.xp.cuda.Device(device.index)
    return contextlib.nullcontext()


def copyto(device, dst, src):
    """``dst[...] = src`` (cast unsafely, as torch's copies) on ``device``'s arrays."""
    if device._xp is np:
        np.copyto(dst, src, casting="unsafe")
        return
    with on_device(device):
        device.xp.copyto(dst, src, casting="unsafe")


def _linalg_error(op, error):
    """NumPy's (or CuPy's) LinAlgError from a kernel as torch's ``torch.linalg.LinAlgError``,
    named after the op as torch names it (``linalg_eigh`` -> ``linalg.eigh``). Kernels
    that know torch's exact wording (singular, not positive-definite) raise it themselves."""
    from .linalg._common import LinAlgError

    name = op.name.replace("linalg_", "linalg.", 1)
    return LinAlgError(f"{name}: The algorithm failed to converge: {error}.")


def _run_cuda(op, device, arrays, params):
    """Run a kernel on the tensors' GPU, whichever GPU is current (CuPy computes on the
    current device and refuses arrays of another)."""
    cp = device.xp
    try:
        with cp.cuda.Device(device.index):
            return op.kernel(cp, *arrays, **params)
    except Exception as error:  # CuPy's out-of-memory becomes torch's (the CPU path skips this)
        from ..cuda._errors import translate_out_of_memory

        if isinstance(error, np.linalg.LinAlgError):
            raise _linalg_error(op, error) from error

        translated = translate_out_of_memory(error)
        if translated is error:
            raise
        raise translated from error


def _as_array(out, device):
    """NumPy returns scalars for 0-dim results; make them arrays again."""
    if hasattr(out, "__cuda_array_interface__"):
        return out
    if device.type == "webgpu":  # a kernel's host result (NumPy scalar, list) is uploaded
        return out if hasattr(out, "storage") else device.xp.from_host(np.asarray(out))
    return np.asarray(out)


# ---------------------------------------------------------------- in-place writes and out=


def _check_castable(result_dtype, target_dtype):
    if result_dtype.category > target_dtype.category:
        raise RuntimeError(f"result type {_short_name(result_dtype)} can't be cast to the "
                           f"desired output type {_short_name(target_dtype)}")


def _short_name(d):
    names = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
             "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
             "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}
    return names[d.name]


_OVERLAP_MESSAGE = ("unsupported operation: more than one element of the written-to tensor refers "
                    "to a single memory location. Please clone() the tensor before performing "
                    "the operation.")


def check_writable(target, expanded_ok=False):
    """Refuse writes into a tensor with internal overlap, as torch does, instead of NumPy's
    read-only error.

    torch's rule (``has_internal_overlap``): a non-empty tensor overlaps itself when a dim of
    size > 1 has stride 0 (``expand``, ``as_strided`` with a zero stride); overlaps it cannot
    prove (overlapping non-zero strides: ``unfold`` windows, ``as_strided``) are written
    through, with results that depend on the order of the writes. ``expanded_ok`` is for the
    writes torch allows even on expanded tensors (``fill_``, ``zero_``, ``masked_fill_``, ...).

    Cheap: NumPy views that may overlap are read-only when created (and views of them inherit
    that); such a view is swapped here for a writable alias of the same memory when the rule
    allows the write. Other arrays (CuPy) are checked for a zero stride over a dim of size > 1.
    """
    data = target._data
    if type(data) is np.ndarray:
        if not data.flags.writeable and target._device is not META:
            target._data = writable_array(data, expanded_ok)
    elif target._device is not META:
        writable_array(data, expanded_ok)


def internal_overlap(shape, strides):
    """torch's ``has_internal_overlap`` is ``Yes``: some dim of size > 1 has stride 0 in a
    non-empty tensor."""
    return any(s == 0 and n > 1 for n, s in zip(shape, strides)) and 0 not in shape


def writable_array(data, expanded_ok=False):
    """``data`` itself, or for a read-only NumPy view a writable alias of the same memory;
    raises torch's error when the write is refused (:func:`internal_overlap`, unless
    ``expanded_ok``)."""
    if type(data) is np.ndarray:
        if data.flags.writeable:
            return data
        alias = _writable_alias(data, expanded_ok)
        if alias is not None:
            return alias
    elif expanded_ok or not internal_overlap(data.shape, data.strides):
        return data
    raise RuntimeError(_OVERLAP_MESSAGE)


def _writable_alias(data, expanded_ok):
    if not expanded_ok and internal_overlap(data.shape, data.strides):
        return None
    root = data
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root is data or not root.flags.writeable:
        return None
    offset = data.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    try:
        return np.ndarray(data.shape, data.dtype, buffer=root, offset=offset,
                          strides=data.strides)
    except (TypeError, ValueError):
        return None


def check_inplace_target(target, expanded_ok=False, others_require_grad=False):
    """Refuse in-place writes that autograd cannot follow (:func:`check_inplace_autograd`) and
    writes into tensors whose elements overlap (:func:`check_writable`)."""
    check_writable(target, expanded_ok)
    check_inplace_autograd(target, others_require_grad)


def check_inplace_autograd(target, others_require_grad=False):
    """Refuse in-place changes that autograd cannot follow, as torch does: of a leaf that
    requires grad, of a view of one, of a view made under no_grad or returned by an op with
    several view outputs (``unbind``, ``split``). ``others_require_grad``: whether another
    operand of the write requires grad."""
    if not grad_mode.state.enabled:
        return
    base = target._base
    if base is not None:
        # bring the view up to date first (its base may have changed, or come to require grad)
        target.grad_fn  # noqa: B018
        view_requires_grad = target._rg or base.requires_grad
        if target._vmeta and (view_requires_grad or others_require_grad):
            from ..autograd.views import creation_error

            raise creation_error(target, indirect=False)
        if view_requires_grad and base.grad_fn is None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
    if target._rg and target._grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")


def assign_inplace(target, result, check_dtype=True):
    """Write ``result`` into ``target``'s memory, bump its version, and take over its graph.

    In-place operators compute their result out of place, then call this. When autograd
    records, ``target`` becomes the output of ``result``'s node (a view: its base gets a
    ``CopySlices`` node, see ``autograd/views.py``); the caller makes sure the node saved a
    copy of the old value, not ``target`` itself.
    """
    if check_dtype:
        _check_castable(result.dtype, target.dtype)
    if result._data.shape != target._data.shape:
        try:
            broadcast = np.broadcast_shapes(result._data.shape, target._data.shape)
        except ValueError:
            broadcast = None
        if broadcast != target._data.shape:
            raise RuntimeError(f"output with shape {list(target._data.shape)} doesn't match the "
                               f"broadcast shape {list(broadcast or result._data.shape)}")
    if target._device is not result._device:
        raise RuntimeError(
            "Expected all tensors to be on the same device, but found at least two devices, "
            f"{target._device} and {result._device}!")
    base = target._base
    recording = grad_mode.state.enabled and (
        result._rg or target._rg or (base is not None and base.requires_grad))
    if recording and base is not None and target._vmeta:
        from ..autograd.views import creation_error

        raise creation_error(target, indirect=False)
    if target._device is not META:
        check_writable(target)
        copyto(target._device, target._data, result._data)
    target._vc[0] += 1
    if recording:
        if base is not None or not result._rg:
            from ..autograd.views import rebase_view

            rebase_view(target, result)
        else:
            old, old_nr = target._grad_fn, target._output_nr
            target._grad_fn, target._output_nr, target._rg = \
                result._grad_fn, result._output_nr, True
            if old is not None and getattr(target, "_retains_grad", False):
                from ..autograd.graph import move_retained_grad

                move_retained_grad(target, old, old_nr)
    if _fw_state.level is not None:
        _forward_ad.write_tangent(target, result)
    if _trace_state.tracer is not None:
        _trace_state.tracer.record_write(target, result)
    return target


def inplace(op_fn, target, *args, **kwargs):
    """Run the out-of-place ``op_fn(target, ...)`` and write the result back into ``target``.

    When autograd records, the op sees a copy of ``target``'s old value, so that its node's
    saved inputs are not clobbered by the write.
    """
    others = _any_requires_grad(args)
    check_inplace_target(target, others_require_grad=others)
    source = target
    if grad_mode.state.enabled and (target._rg or others):
        source = target.clone()
    try:
        result = op_fn(source, *args, **kwargs)
    except NotImplementedError:
        # torch checks that the result's type fits the target before it looks for a kernel
        # of that type: ``float.atan2_(complex)`` is the cast error, not atan2's missing kernel
        # (a comparison's result is bool, which always fits)
        operands = [v for v in (*args, *kwargs.values()) if isinstance(v, Tensor)]
        if operands and not getattr(op_fn, "bool_result", False):
            _check_castable(dt.result_type(target, *operands), target.dtype)
        raise
    return assign_inplace(target, result)


def _any_requires_grad(args):
    return any(isinstance(a, Tensor) and (a._rg or (a._base is not None and a._base._rg))
               for a in args)


def write_out(result, out, name="op"):
    """Copy ``result`` into the ``out=`` tensor (resizing an empty or mismatched one)."""
    if out is None:
        return result
    if not isinstance(out, Tensor):
        raise TypeError(f"argument 'out' must be Tensor, not {type(out).__name__}")
    if grad_mode.state.enabled and (result._rg or out._rg):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    _check_castable(result.dtype, out.dtype)
    if out._data.shape != result._data.shape:
        if out._data.size != 0:
            warnings.warn(f"An output with one or more elements was resized since it had shape "
                          f"{list(out._data.shape)}, which does not match the required output "
                          f"shape {list(result._data.shape)}. This behavior is deprecated.",
                          UserWarning, stacklevel=3)
        if out._device is META:
            out._data = np.broadcast_to(np.zeros((), out._data.dtype), result._data.shape)
        elif is_shared(out):
            from .._tensor_legacy import resize_shared_output

            resize_shared_output(out, result._data.shape)
        else:
            with on_device(out._device):
                out._data = out._device.xp.empty(result._data.shape, out._data.dtype)
    if out._device is not META:
        check_writable(out)
        copyto(out._device, out._data, result._data)
    out._vc[0] += 1
    if _trace_state.tracer is not None:
        _trace_state.tracer.record_write(out, result)
    return out
