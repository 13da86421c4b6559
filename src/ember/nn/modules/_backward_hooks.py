"""Full backward hooks for modules: identity nodes around a module's inputs and outputs.

The output identity node sees the gradients w.r.t. the module's outputs (``grad_output``) and
runs the backward pre-hooks; the input identity node sees the gradients w.r.t. the inputs
(``grad_input``) and runs the backward hooks with both.
"""

from __future__ import annotations

from ..._tensor import Tensor
from ...ops._registry import Op
from . import module as _module


def _identity_kernel(xp, *arrays, state, role):
    return tuple(arrays)


def _identity_derivative(ctx, *grads, state, role):
    if role == "output":
        return state.on_grad_output(grads)
    return state.on_grad_input(grads)


_identity = Op("backward_hook", _identity_kernel, save_inputs=False, multi_output=True,
               grad_name="BackwardHookFunctionBackward")
_identity.defderivative(_identity_derivative)
_identity.opt_out("batch", "a hook marker: vmap runs it element by element")
_identity.opt_out("onnx", "a hook marker for the backward pass: exported models run inference")


def _wrap(values, state, role):
    """Pass the tensors among ``values`` through an identity node; return the new values."""
    flat = values if isinstance(values, tuple) else (values,)
    positions = [i for i, v in enumerate(flat) if isinstance(v, Tensor) and v.requires_grad]
    if not positions:
        return values, 0
    outs = _identity(*(flat[i] for i in positions), state=state, role=role)
    new = list(flat)
    for i, out in zip(positions, outs):
        new[i] = out
    new = tuple(new)
    return (new if isinstance(values, tuple) else new[0]), len(flat)


class BackwardHook:
    """The per-call state that connects a module's output and input gradients."""

    def __init__(self, module):
        self.module = module
        self.grad_output = None
        self.n_inputs = 0

    def setup_input_hook(self, args):
        wrapped, _ = _wrap(tuple(args), self, "input")
        self.n_inputs = sum(1 for a in args if isinstance(a, Tensor) and a.requires_grad)
        return wrapped

    def setup_output_hook(self, output):
        wrapped, _ = _wrap(output, self, "output")
        return wrapped

    def on_grad_output(self, grads):
        for hook in _chain(_module._global_backward_pre_hooks, self.module._backward_pre_hooks):
            result = hook(self.module, tuple(grads))
            if result is not None:
                grads = tuple(result)
        self.grad_output = tuple(grads)
        if self.n_inputs == 0:  # no input needs grad: torch calls the hooks with None inputs
            self._run_hooks((None,))
        return tuple(grads)

    def on_grad_input(self, grads):
        return self._run_hooks(tuple(grads))

    def _run_hooks(self, grad_input):
        for hook in _chain(_module._global_backward_hooks, self.module._backward_hooks):
            result = hook(self.module, grad_input, self.grad_output)
            if result is not None:
                if len(result) != len(grad_input):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, "
                                       f"got {len(result)}, but expected {len(grad_input)}")
                grad_input = tuple(result)
        return grad_input


def _chain(global_hooks, own_hooks):
    """The global module hooks, then the module's own (torch's order)."""
    return list(global_hooks.values()) + list(own_hooks.values())
