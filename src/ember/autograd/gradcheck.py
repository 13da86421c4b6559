"""Check analytical gradients against finite differences (``gradcheck``, ``gradgradcheck``).

The numerical Jacobian comes from central differences ``(f(x + eps) - f(x - eps)) / 2 eps``
on each input element in turn (in float64 inputs, as torch recommends); the analytical one from
one backward pass per output element. Both are laid out as torch's slow mode lays them out:
one ``(input numel, output numel)`` matrix per (output, input) pair.

Example::

    >>> x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    >>> ember.autograd.gradcheck(lambda t: (t * t).sin(), (x,))
    True
"""

from __future__ import annotations

import warnings

import numpy as np

from .._tensor import Tensor
from . import grad_mode

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by :func:`gradcheck` and :func:`gradgradcheck` when a check fails."""


def _as_tuple(x):
    if isinstance(x, Tensor):
        return (x,)
    if isinstance(x, (tuple, list)):
        return tuple(x)
    return (x,)


def _tensor_outputs(out):
    return tuple(o for o in _as_tuple(out) if isinstance(o, Tensor))


def _differentiable(t):
    return t.dtype.is_floating_point or t.dtype.is_complex


def _to_host(t):
    from .. import _dtype as dt

    t = t.detach()
    if t.dtype is dt.bfloat16 or t.dtype is dt.float16:
        t = t.to(dt.float32)
    return np.asarray(t._host_array(), dtype=np.float64).reshape(-1)


def _numerical_jacobian(func, inputs, wrt, outputs, eps):
    """``jac[o][k]``: (numel of input wrt[k], numel of output o), by central differences."""
    jac = [[np.zeros((inputs[k].numel(), o.numel())) for k in wrt] for o in outputs]
    for col, k in enumerate(wrt):
        x = inputs[k]
        data = x._data
        for j in range(x.numel()):
            idx = np.unravel_index(j, data.shape)
            orig = data[idx].copy()
            data[idx] = orig + eps
            plus = [_to_host(o) for o in _tensor_outputs(func(*inputs))]
            data[idx] = orig - eps
            minus = [_to_host(o) for o in _tensor_outputs(func(*inputs))]
            data[idx] = orig
            for i, (p, m) in enumerate(zip(plus, minus)):
                jac[i][col][j] = (p - m) / (2 * eps)
    return jac


def _analytical_jacobian(inputs, wrt, outputs):
    """Same layout, one backward pass per output element."""
    from .. import autograd
    from ..ops.creation import zeros_like

    wrt_tensors = [inputs[k] for k in wrt]
    jac = [[np.zeros((inputs[k].numel(), o.numel())) for k in wrt] for o in outputs]
    for i, o in enumerate(outputs):
        if not o.requires_grad:
            continue
        for m in range(o.numel()):
            grad_out = zeros_like(o)
            grad_out._data[np.unravel_index(m, o._data.shape)] = 1
            grads = autograd.grad(o, wrt_tensors, grad_out, retain_graph=True, allow_unused=True)
            for col, g in enumerate(grads):
                if g is not None:
                    jac[i][col][:, m] = _to_host(g)
    return jac


def _fail(message, raise_exception):
    if raise_exception:
        raise GradcheckError(message)
    return False


def _as_ember(matrix):
    from .._tensor import tensor

    return tensor(matrix)


def gradcheck(func, inputs, *, eps=1e-06, atol=1e-05, rtol=0.001, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False, masked=None):
    """Check the gradients of ``func`` at ``inputs`` against finite differences.

    Returns True, or raises :class:`GradcheckError` (returns False with
    ``raise_exception=False``) naming the output and input whose Jacobians differ.

    Example::

        >>> x = ember.tensor([1., 2.], dtype=ember.float64, requires_grad=True)
        >>> ember.autograd.gradcheck(ember.exp, (x,))
        True
    """
    inputs = _as_tuple(inputs)
    wrt = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of them have requires_grad=True.")
    for i in wrt:
        t = inputs[i]
        if t.dtype.is_complex:
            raise NotImplementedError("gradcheck of complex inputs is not supported yet")
        if t.dtype.name != "float64":
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point or complex. This check will likely fail if all the inputs are "
                          "not of double precision floating point or complex. ", stacklevel=2)
    outputs = tuple(o for o in _tensor_outputs(func(*inputs)) if _differentiable(o))
    if check_backward_ad:
        numerical = _numerical_jacobian(func, inputs, wrt, outputs, eps)
        analytical = _analytical_jacobian(inputs, wrt, outputs)
        for i, o in enumerate(outputs):
            for col, k in enumerate(wrt):
                n, a = numerical[i][col], analytical[i][col]
                if not o.requires_grad:
                    if np.any(n != 0):
                        return _fail("Numerical gradient for function expected to be zero",
                                     raise_exception)
                    continue
                if not np.allclose(a, n, rtol=rtol, atol=atol):
                    return _fail(f"Jacobian mismatch for output {i} with respect to input {k},\n"
                                 f"numerical:{_as_ember(n)!r}\nanalytical:{_as_ember(a)!r}\n",
                                 raise_exception)
        again = _analytical_jacobian(inputs, wrt, outputs)
        for i in range(len(outputs)):
            for col in range(len(wrt)):
                if np.max(np.abs(again[i][col] - analytical[i][col]), initial=0) > nondet_tol:
                    return _fail("Backward is not reentrant, i.e., running backward with same "
                                 "input and grad_output multiple times gives different values, "
                                 "although analytical gradient matches numerical gradient.The "
                                 f"tolerance for nondeterminism was {nondet_tol}.",
                                 raise_exception)
        if check_undefined_grad and not _undefined_grad_ok(inputs, wrt, outputs):
            return _fail("Expected backward function to handle undefined output grads. Please "
                         "look at \"Notes about undefined output gradients\" in "
                         "\"tools/autograd/derivatives.yaml\"", raise_exception)
    else:
        numerical = None
    if check_forward_ad:
        if numerical is None:
            numerical = _numerical_jacobian(func, inputs, wrt, outputs, eps)
        forward = _forward_jacobian(func, inputs, wrt, outputs)
        for i in range(len(outputs)):
            for col, k in enumerate(wrt):
                n, a = numerical[i][col], forward[i][col]
                if not np.allclose(a, n, rtol=rtol, atol=atol):
                    return _fail(f"Jacobian computed with forward mode mismatch for output {i} "
                                 f"with respect to input {k},\nnumerical:{_as_ember(n)!r}\n"
                                 f"analytical:{_as_ember(a)!r}\n", raise_exception)
    return True


def _undefined_grad_ok(inputs, wrt, outputs):
    """Backward with all-zero output gradients (torch: undefined ones) gives zero or None."""
    from .. import autograd
    from ..ops.creation import zeros_like

    diff = [o for o in outputs if o.requires_grad]
    if not diff:
        return True
    grads = autograd.grad(diff, [inputs[k] for k in wrt], [zeros_like(o) for o in diff],
                          retain_graph=True, allow_unused=True)
    return all(g is None or not np.any(_to_host(g)) for g in grads)


def _forward_jacobian(func, inputs, wrt, outputs):
    """The Jacobian column by column with forward-mode AD."""
    from ..ops.creation import zeros_like
    from . import forward_ad

    jac = [[np.zeros((inputs[k].numel(), o.numel())) for k in wrt] for o in outputs]
    for col, k in enumerate(wrt):
        for j in range(inputs[k].numel()):
            with forward_ad.dual_level(), grad_mode.no_grad():
                tangent = zeros_like(inputs[k])
                tangent._data[np.unravel_index(j, tangent._data.shape)] = 1
                duals = list(inputs)
                duals[k] = forward_ad.make_dual(inputs[k], tangent)
                outs = [o for o in _tensor_outputs(func(*duals)) if _differentiable(o)]
                for i, o in enumerate(outs):
                    t = forward_ad.unpack_dual(o).tangent
                    if t is not None:
                        jac[i][col][j] = _to_host(t)
    return jac


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-06, atol=1e-05, rtol=0.001,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """Check second derivatives: :func:`gradcheck` of the gradient of ``func``.

    The gradient is taken along ``grad_outputs`` (random, seeded, when not given), which are
    checked as inputs too.

    Example::

        >>> x = ember.tensor([1., 2.], dtype=ember.float64, requires_grad=True)
        >>> ember.autograd.gradgradcheck(lambda t: t ** 3, (x,))
        True
    """
    from .. import autograd
    from .._tensor import tensor

    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        outputs = [o for o in _tensor_outputs(func(*inputs)) if _differentiable(o)
                   and o.requires_grad]
        grad_outputs = tuple(
            tensor(rng.standard_normal(tuple(o.shape)), device=o.device).to(o.dtype)
            .requires_grad_() for o in outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_inputs = len(inputs)

    def new_func(*args):
        inp, gos = args[:n_inputs], args[n_inputs:]
        outs = [o for o in _tensor_outputs(func(*inp)) if _differentiable(o) and o.requires_grad]
        diff_inputs = [t for t in inp if isinstance(t, Tensor) and t.requires_grad]
        grads = autograd.grad(outs, diff_inputs, list(gos), create_graph=True,
                              allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(new_func, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_forward_ad=check_fwd_over_rev and False)
