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

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError", "get_numerical_jacobian",
           "get_analytical_jacobian", "get_numerical_jacobian_wrt_specific_input"]


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
    """A flat host copy: complex128 for complex tensors, float64 otherwise."""
    from .. import _dtype as dt

    t = t.detach()
    if t.dtype is dt.bfloat16 or t.dtype is dt.float16:
        t = t.to(dt.float32)
    kind = np.complex128 if t.dtype.is_complex else np.float64
    return np.array(t._host_array(), dtype=kind).reshape(-1)  # a copy: outputs may be views


def _zeros(rows, cols, complex_):
    return np.zeros((rows, cols), np.complex128 if complex_ else np.float64)


def _central_difference(func, inputs, k, idx, delta, eps):
    """``(f(x + delta) - f(x - delta)) / 2 eps`` for each output, ``delta`` at element ``idx``
    of input ``k`` (``delta`` is ``eps`` or ``eps * 1j``)."""
    data = inputs[k]._data
    orig = data[idx].copy()
    data[idx] = orig + delta
    plus = [_to_host(o) for o in _tensor_outputs(func(*inputs)) if _differentiable(o)]
    data[idx] = orig - delta
    minus = [_to_host(o) for o in _tensor_outputs(func(*inputs)) if _differentiable(o)]
    data[idx] = orig
    return [(p - m) / (2 * eps) for p, m in zip(plus, minus)]


def _numerical_jacobian(func, inputs, wrt, outputs, eps, part=None):
    """``jac[o][k]``: (numel of input wrt[k], numel of output o), by central differences.

    For a complex input and ``part=None`` (the backward-mode check, real outputs) a row is
    ``ds/dx + 1j * ds/dy`` (x, y: the real and imaginary parts of the element), the conjugate
    Wirtinger derivative in the convention of the gradients backward computes. With ``part``
    ``"real"`` or ``"imaginary"`` (the forward-mode check) a row is the derivative along that
    part alone, complex where the output is."""
    jac = [[_zeros(inputs[k].numel(), o.numel(), inputs[k].dtype.is_complex or
                   o.dtype.is_complex) for k in wrt] for o in outputs]
    for col, k in enumerate(wrt):
        x = inputs[k]
        shape = x._data.shape
        along_imag = x.dtype.is_complex and part == "imaginary"
        wirtinger = x.dtype.is_complex and part is None
        for j in range(x.numel()):
            idx = np.unravel_index(j, shape)
            rows = _central_difference(func, inputs, k, idx, eps * 1j if along_imag else eps,
                                       eps)
            if wirtinger:
                ds_dy = _central_difference(func, inputs, k, idx, eps * 1j, eps)
                rows = [dx + 1j * dy for dx, dy in zip(rows, ds_dy)]
            for i, row in enumerate(rows):
                jac[i][col][j] = row
    return jac


def _analytical_jacobian(inputs, wrt, outputs):
    """Same layout, one backward pass per output element."""
    from .. import autograd
    from ..ops.creation import zeros_like

    wrt_tensors = [inputs[k] for k in wrt]
    jac = [[_zeros(inputs[k].numel(), o.numel(), inputs[k].dtype.is_complex) for k in wrt]
           for o in outputs]
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


def _as_ember(matrix):
    from .._tensor import tensor

    return tensor(matrix)


def _mismatch(n, a, i, col, prefix="", mode=""):
    return GradcheckError(f"{prefix}Jacobian {mode}mismatch for output {i} with respect to "
                          f"input {col},\nnumerical:{_as_ember(n)!r}\n"
                          f"analytical:{_as_ember(a)!r}\n")


def _differentiable_outputs(func, inputs):
    return tuple(o for o in _tensor_outputs(func(*inputs)) if _differentiable(o))


def _on_complex_outputs(func, part):
    """``func`` with the real (or imaginary) part taken of each complex output."""
    from ..ops import pointwise

    def wrapped(*args):
        return tuple(getattr(pointwise, part)(o) if isinstance(o, Tensor) and o.dtype.is_complex
                     else o for o in _as_tuple(func(*args)))
    return wrapped


def gradcheck(func, inputs, *, eps=1e-06, atol=1e-05, rtol=0.001, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False, masked=None):
    """Check the gradients of ``func`` at ``inputs`` against finite differences.

    Returns True, or raises :class:`GradcheckError` (returns False with
    ``raise_exception=False``) naming the output and input whose Jacobians differ.

    Complex numbers are checked as torch checks them: the real and the imaginary part of a
    complex output are two real functions checked in turn; for a complex input the numerical
    gradient is ``ds/dx + 1j * ds/dy`` (the convention of backward), and the forward-mode
    check (``check_forward_ad``) perturbs the real and the imaginary part separately.
    ``fast_mode`` runs the full (slow-mode) check.

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
        if inputs[i].dtype.name not in ("float64", "complex128"):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point or complex. This check will likely fail if all the inputs are "
                          "not of double precision floating point or complex. ", stacklevel=2)
    try:
        outputs = _differentiable_outputs(func, inputs)
        if check_backward_ad:
            complex_out = {i for i, o in enumerate(outputs) if o.dtype.is_complex}
            if complex_out:
                for part in ("imag", "real"):
                    fn = _on_complex_outputs(func, part)
                    prefix = ("While considering the "
                              f"{'imaginary' if part == 'imag' else 'real'} part of complex "
                              "outputs only, ")
                    _check_backward(fn, inputs, wrt, _differentiable_outputs(fn, inputs), eps,
                                    rtol, atol, nondet_tol, check_undefined_grad,
                                    {i: prefix for i in complex_out})
            else:
                _check_backward(func, inputs, wrt, outputs, eps, rtol, atol, nondet_tol,
                                check_undefined_grad, {})
        if check_forward_ad:
            _check_forward(func, inputs, wrt, outputs, eps, rtol, atol)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def _check_backward(func, inputs, wrt, outputs, eps, rtol, atol, nondet_tol,
                    check_undefined_grad, prefixes):
    numerical = _numerical_jacobian(func, inputs, wrt, outputs, eps)
    analytical = _analytical_jacobian(inputs, wrt, outputs)
    for i, o in enumerate(outputs):
        for col in range(len(wrt)):
            n, a = numerical[i][col], analytical[i][col]
            if not o.requires_grad:
                if np.any(n != 0):
                    raise GradcheckError("Numerical gradient for function expected to be zero")
                continue
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                raise _mismatch(n, a, i, col, prefixes.get(i, ""))
    again = _analytical_jacobian(inputs, wrt, outputs)
    for i in range(len(outputs)):
        for col in range(len(wrt)):
            if np.max(np.abs(again[i][col] - analytical[i][col]), initial=0) > nondet_tol:
                raise GradcheckError(
                    "Backward is not reentrant, i.e., running backward with same input and "
                    "grad_output multiple times gives different values, although analytical "
                    "gradient matches numerical gradient.The tolerance for nondeterminism was "
                    f"{nondet_tol}.")
    if check_undefined_grad and not _undefined_grad_ok(inputs, wrt, outputs):
        raise GradcheckError("Expected backward function to handle undefined output grads. "
                             "Please look at \"Notes about undefined output gradients\" in "
                             "\"tools/autograd/derivatives.yaml\"")


def _check_forward(func, inputs, wrt, outputs, eps, rtol, atol):
    """Forward-mode Jacobians against numerical ones; a complex input is checked along its
    imaginary part, then along its real part (as torch does)."""
    complex_in = any(inputs[k].dtype.is_complex for k in wrt)
    for part in (("imaginary", "real") if complex_in else ("real",)):
        numerical = _numerical_jacobian(func, inputs, wrt, outputs, eps, part)
        forward = _forward_jacobian(func, inputs, wrt, outputs, part)
        for i in range(len(outputs)):
            for col, k in enumerate(wrt):
                n, a = numerical[i][col], forward[i][col]
                if not np.allclose(a, n, rtol=rtol, atol=atol):
                    prefix = (f"While considering the {part} part of complex inputs only, "
                              if inputs[k].dtype.is_complex else "")
                    raise _mismatch(n, a, i, col, prefix, "computed with forward mode ")


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


def _forward_jacobian(func, inputs, wrt, outputs, part="real"):
    """The Jacobian row by row with forward-mode AD (tangent ``1j`` on a complex input's
    element for ``part="imaginary"``)."""
    from ..ops.creation import zeros_like
    from . import forward_ad

    jac = [[_zeros(inputs[k].numel(), o.numel(), o.dtype.is_complex or inputs[k].dtype
                   .is_complex) for k in wrt] for o in outputs]
    for col, k in enumerate(wrt):
        along_imag = part == "imaginary" and inputs[k].dtype.is_complex
        for j in range(inputs[k].numel()):
            with forward_ad.dual_level(), grad_mode.no_grad():
                tangent = zeros_like(inputs[k])
                tangent._data[np.unravel_index(j, tangent._data.shape)] = 1j if along_imag else 1
                duals = list(inputs)
                duals[k] = forward_ad.make_dual(inputs[k], tangent)
                outs = [o for o in _tensor_outputs(func(*duals)) if _differentiable(o)]
                for i, o in enumerate(outs):
                    t = forward_ad.unpack_dual(o).tangent
                    if t is not None:
                        jac[i][col][j] = _to_host(t)
    return jac


def _random_like(rng, o, tensor):
    """A random gradient for output ``o`` (complex with both parts random for complex ``o``)."""
    shape = tuple(o.shape)
    values = rng.standard_normal(shape)
    if o.dtype.is_complex:
        values = values + 1j * rng.standard_normal(shape)
    return tensor(values, device=o.device).to(o.dtype).requires_grad_()


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
        grad_outputs = tuple(_random_like(rng, o, tensor) for o in outputs)
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


_PRIVATE_API_WARNING = (
    "`{}` was part of PyTorch's private API and not meant to be exposed. We are deprecating it "
    "and it will be removed in a future version of PyTorch. If you have a specific use for this "
    "or feature request for this to be a stable API, please file us an issue at "
    "https://github.com/pytorch/pytorch/issues/new")


def _check_grad_out(grad_out, name):
    if grad_out != 1.0:
        raise ValueError(f"Expected grad_out to be 1.0. {name} no longer supports values of "
                         "grad_out != 1.0.")


def _as_jacobians(matrices, like):
    """NumPy jacobians as ember tensors in the dtypes of the tensors in ``like``."""
    return tuple(_as_ember(m).to(t.dtype) for m, t in zip(matrices, like))


def get_numerical_jacobian(fn, inputs, target=None, eps=1e-3, grad_out=1.0):
    """Finite-difference Jacobians of ``fn(inputs)`` (its first output) with respect to each
    input that requires grad (or to the tensors of ``target``), one ``(numel_in, numel_out)``
    matrix each. Deprecated in torch.

    Example::

        >>> x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
        >>> get_numerical_jacobian(lambda inp: inp[0] ** 2, (x,), eps=1e-6)[0]
        tensor([[2., 0.],
                [0., 4.]], dtype=torch.float64)
    """
    warnings.warn(_PRIVATE_API_WARNING.format("get_numerical_jacobian"), FutureWarning,
                  stacklevel=2)
    _check_grad_out(grad_out, "get_numerical_jacobian")
    inputs = _as_tuple(inputs)
    pool = list(inputs) if target is None else list(_as_tuple(target))
    wrt = [k for k, t in enumerate(pool) if isinstance(t, Tensor) and t.requires_grad]

    def call(*args):
        return fn(tuple(args)) if target is None else fn(inputs)

    with grad_mode.no_grad():
        first = _tensor_outputs(call(*pool))[:1]
        jac = _numerical_jacobian(call, pool, wrt, first, eps)
    return _as_jacobians(jac[0], [pool[k] for k in wrt])


def get_analytical_jacobian(inputs, output, nondet_tol=0.0, grad_out=1.0):
    """Backward-mode Jacobians of ``output`` with respect to the inputs that require grad,
    with torch's ``(jacobians, reentrant, sizes_ok, types_ok)`` result. Deprecated in torch.

    Example::

        >>> x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
        >>> get_analytical_jacobian((x,), x * 3)[0][0]
        tensor([[3., 0.],
                [0., 3.]], dtype=torch.float64)
    """
    warnings.warn(_PRIVATE_API_WARNING.format("get_analytical_jacobian"), FutureWarning,
                  stacklevel=2)
    _check_grad_out(grad_out, "get_analytical_jacobian")
    if output.is_complex():
        raise ValueError("Expected output to be non-complex. get_analytical_jacobian no longer "
                         "supports functions that return complex outputs.")
    inputs = _as_tuple(inputs)
    wrt = [k for k, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    first = _analytical_jacobian(inputs, wrt, [output])[0]
    again = _analytical_jacobian(inputs, wrt, [output])[0]
    reentrant = all(np.abs(a - b).max(initial=0.0) <= nondet_tol for a, b in zip(first, again))
    return _as_jacobians(first, [inputs[k] for k in wrt]), reentrant, True, True


def get_numerical_jacobian_wrt_specific_input(fn, input_idx, inputs, outputs, eps, input=None,
                                              is_forward_ad=False):
    """Finite-difference Jacobians of each of ``outputs`` (as computed by ``fn(*inputs)``) with
    respect to ``inputs[input_idx]``, one ``(numel_in, numel_out)`` matrix per output.

    Example::

        >>> x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
        >>> get_numerical_jacobian_wrt_specific_input(lambda a: a * 2, 0, (x,), (x * 2,), 1e-6)[0]
        tensor([[2., 0.],
                [0., 2.]], dtype=torch.float64)
    """
    inputs = list(_as_tuple(inputs))
    target = inputs[input_idx] if input is None else input
    if not target.requires_grad:
        raise AssertionError("Expected input to have requires_grad=True")
    inputs[input_idx] = target
    with grad_mode.no_grad():
        jac = _numerical_jacobian(fn, inputs, [input_idx], list(_as_tuple(outputs)), eps)
    return tuple(_as_ember(rows[0]).to(target.dtype) for rows in jac)
