"""Tape-based reverse-mode automatic differentiation (``ember.autograd``).

Example::

    >>> x = ember.tensor([1., 2., 3.], requires_grad=True)
    >>> (gx,) = ember.autograd.grad((x ** 2).sum(), x)
    >>> gx
    tensor([2., 4., 6.])
"""

from __future__ import annotations

import numpy as np

from .._traceback import hide_internal_frames as _hide_internal_frames
from . import forward_ad, functional, graph
from ._engine_flags import (
    enforce_grad_layout_policy,
    is_multithreading_enabled,
    is_view_replay_enabled,
    set_multithreading_enabled,
)
from .anomaly_mode import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .function import Function, FunctionCtx, InplaceFunction, NestedIOFunction, once_differentiable
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .variable import Variable

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_grad_enabled", "is_inference_mode_enabled", "detect_anomaly",
           "set_detect_anomaly", "is_anomaly_enabled", "graph", "Function", "FunctionCtx",
           "InplaceFunction", "NestedIOFunction", "once_differentiable", "gradcheck",
           "gradgradcheck", "GradcheckError", "functional", "forward_ad", "Variable",
           "is_multithreading_enabled", "set_multithreading_enabled", "is_view_replay_enabled",
           "enforce_grad_layout_policy"]


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, graph._tensor_type()):
        return (x,)
    return tuple(x)


def _make_grads(outputs, grad_outputs):
    grads = []
    for i, out in enumerate(outputs):
        g = grad_outputs[i] if grad_outputs is not None else None
        if g is None:
            if not out.requires_grad:  # the engine names it ("element i of tensors ...")
                grads.append(None)
                continue
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not (out.dtype.is_floating_point or out.dtype.is_complex):
                raise RuntimeError(f"grad can be implicitly created only for real scalar "
                                   f"outputs but got {out.dtype}")
            g = _ones_of(out)
        elif g.shape != out.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} "
                               f"and output[{i}] has a shape of {out.shape}.")
        grads.append(g)
    return grads


def _ones_of(out):
    """``ones_like(out)``, the implicit gradient of a scalar output: a plain CPU tensor's made
    by NumPy directly (10 -> 1.5 us hot, 1 thread: ``ones_like`` parses its arguments through
    the public wrapper), others' through ``ones_like``.

    Example::

        >>> _ones_of(ember.tensor(2.5))
        tensor(1.)
    """
    data = out._data
    tensor = graph._late.Tensor
    if type(data) is np.ndarray and type(out) is tensor:  # (a subclass: its ones_like)
        return tensor._make(np.ones(data.shape, data.dtype), out._device)
    return graph._late.ones_like(out)


def _stand_ins(inputs):
    """The tensors autograd differentiates for ``inputs`` (a sparse tensor's values for the
    sparse tensor), and for each a map of their gradient back to the input's (None: same).

    Example::

        >>> _stand_ins((ember.ones(2),))[1]
        [None]
    """
    tensor_type = graph._tensor_type()
    tensors, back = [], []
    for t in inputs:
        stand_in = None if type(t) is tensor_type else getattr(t, "_autograd_stand_in", None)
        if stand_in is None:
            tensors.append(t)
            back.append(None)
        else:
            values, to_input = stand_in()
            tensors.append(values)
            back.append(to_input)
    return tuple(tensors), back


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the graph's leaves.

    Example::

        >>> x = ember.ones(3, requires_grad=True)
        >>> ember.autograd.backward((x * 3).sum())
        >>> x.grad
        tensor([3., 3., 3.])
    """
    try:  # free until an error: then ember's frames leave its traceback
        outputs = _as_tuple(tensors)
        grad_tensors = _as_tuple(grad_tensors)
        inputs = _as_tuple(inputs)
        if inputs is not None and len(inputs) == 0:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        grads = _make_grads(outputs, grad_tensors)
        if inputs is not None:
            inputs = _stand_ins(inputs)[0]
        graph.run_backward(outputs, grads, retain_graph, create_graph, inputs=inputs,
                           accumulate=True)
    except Exception as error:
        _hide_internal_frames(error)
        raise


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs``, returned (``.grad`` untouched).

    Example::

        >>> x = ember.tensor(3., requires_grad=True)
        >>> (g,) = ember.autograd.grad(x ** 3, x, create_graph=True)
        >>> ember.autograd.grad(g, x)[0]      # second derivative: 6x
        tensor(18.)
    """
    try:  # free until an error: then ember's frames leave its traceback
        if is_grads_batched:
            raise NotImplementedError("is_grads_batched=True is not supported yet")
        outputs = _as_tuple(outputs)
        inputs = _as_tuple(inputs)
        if allow_unused is None:
            allow_unused = materialize_grads
        if materialize_grads and not allow_unused:
            raise ValueError("Expected allow_unused to be True or not passed when "
                             "materialize_grads=True, but got: allow_unused=False.")
        grads = _make_grads(outputs, _as_tuple(grad_outputs))
        # torch's engine checks the outputs before the inputs
        for index, out in enumerate(outputs):
            if not out.requires_grad:
                raise RuntimeError(graph._NO_GRAD_FN.format(index))
        for t in inputs:
            if not t.requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
        stand_ins, to_inputs = _stand_ins(inputs)
        result = graph.run_backward(outputs, grads, retain_graph, create_graph,
                                    inputs=stand_ins, accumulate=False)
        final = []
        for index, (t, g, to_input) in enumerate(zip(inputs, result, to_inputs)):
            if g is not None and to_input is not None:
                g = to_input(g)
            if g is None:
                if materialize_grads:
                    from ..ops.creation import zeros_like

                    g = zeros_like(t)
                elif not allow_unused:
                    raise RuntimeError(f"The differentiated Tensor at index {index} appears to "
                                       "not have been used in the graph. Set allow_unused=True "
                                       "if this is the desired behavior.")
            final.append(g)
        return tuple(final)
    except Exception as error:
        _hide_internal_frames(error)
        raise
