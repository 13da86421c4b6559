"""``ember.func``: functional transforms, as ``torch.func``.

``functional_call`` runs a module with some parameters/buffers swapped for given tensors;
``grad``, ``grad_and_value``, ``vjp`` and ``jacrev`` are thin layers over ``ember.autograd``
(reverse mode; arguments may be tensors or dicts/lists/tuples of tensors); ``jvp``,
``jacfwd``, ``hessian`` and ``linearize`` use forward mode (``ember.autograd.forward_ad``,
see ``_forward.py``); ``vmap`` maps a function over a batch dimension (``_vmap.py``: one call
per element, stacked). All of them compose: ``vmap(grad(f))`` gives per-sample gradients,
``jacfwd(jacrev(f))`` Hessians.

Transforms detach their results unless an argument requires grad (or carries a tangent of an
enclosing ``jvp``); torch also keeps the graph to tensors that ``func`` closes over.

Example::

    >>> model = ember.nn.Linear(3, 1)
    >>> params = {k: v.detach() for k, v in model.named_parameters()}
    >>> def loss(p, x):
    ...     return ember.func.functional_call(model, p, (x,)).sum()
    >>> sorted(ember.func.grad(loss)(params, ember.ones(2, 3)))
    ['bias', 'weight']
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from .._tensor import Tensor
from .._traceback import entry_point as _entry_point
from ..autograd import functional as _functional
from ..autograd import grad as _autograd_grad
from ..autograd import grad_mode
from ..ops.creation import zeros_like
from . import _pytree
from ._util import differentiable, has_tangent

__all__ = ["functional_call", "grad", "grad_and_value", "vjp", "jacrev", "jvp", "jacfwd",
           "hessian", "linearize", "vmap", "stack_module_state", "replace_all_batch_norm_modules_",
           "functionalize", "debug_unwrap", "rearrange"]

_MISSING = object()


# ---------------------------------------------------------------- functional_call


def _untie(module, given):
    """Give every name tied to a given name (same tensor) the given value, as torch."""
    named = dict(module.named_parameters(remove_duplicate=False))
    named.update(module.named_buffers(remove_duplicate=False))
    by_tensor = {}
    for name, t in named.items():
        by_tensor.setdefault(id(t), set()).add(name)
    tied = {n: names for names in by_tensor.values() if len(names) > 1 for n in names}
    given_tied = {n for n in given if n in tied}
    for name in given_tied:
        names = tied[name]
        if len(names & given_tied) > 1 and len({id(given[n]) for n in names & given_tied}) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, "
                             f"which are tied. Consider using tie_weights=False")
    untied = dict(given)
    for name in given_tied:
        for other in tied[name]:
            untied[other] = given[name]
    return untied


def _swap(module, name, value):
    """Put ``value`` at dotted ``name`` (``_MISSING`` deletes); return what was there."""
    prefix, _, attr = name.rpartition(".")
    owner = module.get_submodule(prefix)
    if value is not _MISSING and value is not None and not isinstance(value, Tensor):
        raise TypeError(f"{value} is not an instance of torch.Tensor")
    for store in (owner._parameters, owner._buffers):
        if attr in store:
            old = store[attr]
            if value is _MISSING:
                del store[attr]
            else:
                store[attr] = value
            return old
    old = getattr(owner, attr, _MISSING)
    if old is not _MISSING and old is not None and not isinstance(old, Tensor):
        raise TypeError(f"attribute `{attr}`: {old} is not an instance of torch.Tensor")
    if value is _MISSING:
        if old is not _MISSING:
            delattr(owner, attr)
    else:
        setattr(owner, attr, value)
    return old


@contextlib.contextmanager
def _reparametrize(module, tensors, tie_weights, strict):
    if tie_weights:
        tensors = _untie(module, tensors)
    if strict:
        valid = {n for n, _ in module.named_parameters(remove_duplicate=False)}
        valid |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing, unexpected = sorted(valid - set(tensors)), sorted(set(tensors) - valid)
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t"
                               + "\n\t".join(msgs))
    originals = {}
    try:
        for name, value in tensors.items():
            originals[name] = _swap(module, name, value)
        yield
    finally:
        for name, old in originals.items():
            _swap(module, name, old)


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """Call ``module(*args, **kwargs)`` with its parameters/buffers replaced by the tensors in
    ``parameter_and_buffer_dicts`` (a dict, or a sequence of dicts with distinct keys, keyed by
    dotted names); the module's own tensors are restored afterwards. Gradients flow to the given
    tensors.

    ``tie_weights``: names tied in the module (one tensor under two names) take the value given
    for either. ``strict``: the keys must be exactly the module's parameters and buffers.

    Example::

        >>> m = ember.nn.Linear(2, 1)
        >>> w = ember.ones(1, 2, requires_grad=True)
        >>> ember.func.functional_call(m, {"weight": w, "bias": ember.zeros(1)},
        ...                            (ember.ones(1, 2),))
        tensor([[2.]], grad_fn=<AddBackward0>)
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        tensors = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be "
                             "dictionaries")
        counts = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             "functional call is ambiguous")
        tensors = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                         f"dicts, but got {type(parameter_and_buffer_dicts)}")
    kwargs = {} if kwargs is None else kwargs
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize(module, tensors, tie_weights, strict):
        return module(*args, **kwargs)


# ---------------------------------------------------------------- pytrees of tensors


def _flatten(tree):
    if isinstance(tree, Tensor):
        return [tree], lambda leaves: leaves[0]
    if isinstance(tree, dict):
        keys = list(tree)
        parts = [_flatten(tree[k]) for k in keys]
        sizes = [len(p[0]) for p in parts]

        def build_dict(leaves):
            out, i = {}, 0
            for k, (_, rebuild), n in zip(keys, parts, sizes):
                out[k] = rebuild(leaves[i:i + n])
                i += n
            return type(tree)(out) if type(tree) is not dict else out
        return [x for p in parts for x in p[0]], build_dict
    if isinstance(tree, (list, tuple)):
        parts = [_flatten(x) for x in tree]
        sizes = [len(p[0]) for p in parts]

        def build_seq(leaves):
            out, i = [], 0
            for (_, rebuild), n in zip(parts, sizes):
                out.append(rebuild(leaves[i:i + n]))
                i += n
            return type(tree)(out) if not hasattr(tree, "_fields") else type(tree)(*out)
        return [x for p in parts for x in p[0]], build_seq
    raise ValueError(f"Expected tensors, or dicts/lists/tuples of tensors, got "
                     f"{type(tree).__name__}")


def _prepare(leaves):
    """Fresh differentiable stand-ins for ``leaves`` (views when they already need grad or
    carry a tangent, so nested transforms see through them)."""
    return [differentiable(t) for t in leaves]


def _keeps_graph(args):
    """Whether a transform's results must stay attached to ``args``: an argument carries the
    tangent of an enclosing jvp, or requires grad while grad mode is on."""
    leaves = [t for t in _pytree.flatten(args)[0] if isinstance(t, Tensor)]
    if any(has_tangent(t) for t in leaves):
        return True
    return grad_mode.is_grad_enabled() and any(t.requires_grad for t in leaves)


def _argnums_tuple(argnums, nargs, name):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise RuntimeError(f"{name}: argnums must be non-empty")
    for n in nums:
        if not isinstance(n, int):
            raise RuntimeError(f"{name}: argnums must be int or Tuple[int, ...], got: "
                               f"{type(n)}")
        if not -nargs <= n < nargs:
            raise RuntimeError(f"Got argnums={n}, but only {nargs} positional inputs")
    return tuple(n % nargs for n in nums)


def _split_aux(result, has_aux, name):
    if not has_aux:
        return result, None
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError(f"{name}(f, ...)(*args): output of function f should be a tuple: "
                           "(output, aux) if has_aux is True")
    return result


def grad_and_value(func, argnums=0, has_aux=False):
    """Like :func:`grad`, returning ``(gradient, value)`` (``((gradient, (value, aux))`` with
    ``has_aux``).

    Example::

        >>> g, v = ember.func.grad_and_value(lambda x: (x ** 2).sum())(ember.tensor([1., 2.]))
        >>> g, v
        (tensor([2., 4.]), tensor(5.))
    """
    @_entry_point
    def wrapper(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "grad_and_value")
        create_graph = _keeps_graph(args)
        args = list(args)
        rebuilds = {}
        inputs = []
        for n in nums:
            leaves, rebuild = _flatten(args[n])
            fresh = _prepare(leaves)
            rebuilds[n] = (len(inputs), len(fresh), rebuild)
            inputs.extend(fresh)
            args[n] = rebuild(fresh)
        with grad_mode.enable_grad():
            result = func(*args, **kwargs)
            output, aux = _split_aux(result, has_aux, "grad_and_value")
            if not isinstance(output, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(output)}")
            if output.ndim != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {output.ndim} dims. Maybe "
                                   "you wanted to use the vjp or jacrev APIs instead?")
            if output.requires_grad:
                grads = _autograd_grad(output, inputs, create_graph=create_graph,
                                       allow_unused=True)
            else:
                grads = [None] * len(inputs)
        grads = [zeros_like(t) if g is None else g for g, t in zip(grads, inputs)]
        if not create_graph:
            grads = [g.detach() for g in grads]
            output = output.detach()
        per_arg = []
        for n in nums:
            start, count, rebuild = rebuilds[n]
            per_arg.append(rebuild(grads[start:start + count]))
        gradient = per_arg[0] if isinstance(argnums, int) else tuple(per_arg)
        if has_aux:
            return gradient, (output, aux)
        return gradient, output
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function computing the gradient of scalar-valued ``func`` with respect to the
    positional argument(s) ``argnums`` (each a tensor or a dict/list/tuple of tensors).

    Composable: ``grad(grad(f))`` gives second derivatives.

    Example::

        >>> ember.func.grad(lambda x: x.sin().sum())(ember.tensor([0.]))
        tensor([1.])
        >>> ember.func.grad(ember.func.grad(lambda x: x ** 3))(ember.tensor(2.))
        tensor(12.)
    """
    @_entry_point
    def wrapper(*args, **kwargs):
        gradient, value = grad_and_value(func, argnums, has_aux)(*args, **kwargs)
        if has_aux:
            return gradient, value[1]
        return gradient
    return wrapper


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` returns one gradient per primal.

    Example::

        >>> out, fn = ember.func.vjp(lambda x: x * 2, ember.ones(3))
        >>> fn(ember.ones(3))
        (tensor([2., 2., 2.]),)
    """
    create_graph = _keeps_graph(primals)
    flats = [_flatten(p) for p in primals]
    fresh = [_prepare(leaves) for leaves, _ in flats]
    args = [rebuild(f) for (_, rebuild), f in zip(flats, fresh)]
    with grad_mode.enable_grad():
        result = func(*args)
    output, aux = _split_aux(result, has_aux, "vjp")
    out_leaves, _ = _flatten(output)
    inputs = [t for f in fresh for t in f]

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=create_graph):
        cot_leaves, _ = _flatten(cotangents)
        if len(cot_leaves) != len(out_leaves):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as "
                               f"pytree structure of outputs to the function ({len(out_leaves)} "
                               f"tensors), got {len(cot_leaves)}")
        for c, o in zip(cot_leaves, out_leaves):
            if c.shape != o.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of "
                                   f"{c.shape} and output[0] has a shape of {o.shape}.")
        pairs = [(o, c) for o, c in zip(out_leaves, cot_leaves) if o.requires_grad]
        if pairs:
            grads = _autograd_grad([o for o, _ in pairs], inputs, [c for _, c in pairs],
                                   retain_graph=retain_graph, create_graph=create_graph,
                                   allow_unused=True)
        else:
            grads = [None] * len(inputs)
        grads = [zeros_like(t) if g is None else g for g, t in zip(grads, inputs)]
        if not create_graph:
            grads = [g.detach() for g in grads]
        result, i = [], 0
        for (_, rebuild), f in zip(flats, fresh):
            result.append(rebuild(grads[i:i + len(f)]))
            i += len(f)
        return tuple(result)

    if not create_graph:
        output = _flatten(output)[1]([t.detach() for t in out_leaves])
    if has_aux:
        return output, vjp_fn, aux
    return output, vjp_fn


def jacrev(func, argnums=0, *, has_aux=False):
    """A function computing the Jacobian of tensor-valued ``func`` with respect to the tensor
    argument(s) ``argnums`` (shape ``output.shape + input.shape``), by reverse mode.

    Example::

        >>> ember.func.jacrev(lambda x: x ** 2)(ember.tensor([1., 2.]))
        tensor([[2., 0.],
                [0., 4.]])
    """
    @_entry_point
    def wrapper(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "jacrev")
        create_graph = _keeps_graph(args)
        aux_box, out_box = [], []

        def partial(*diff):
            full = list(args)
            for n, d in zip(nums, diff):
                full[n] = d
            result = func(*full, **kwargs)
            output, aux = _split_aux(result, has_aux, "jacrev")
            aux_box[:] = [aux]
            out_box[:] = [isinstance(output, Tensor)]
            return output

        inputs = tuple(args[n] for n in nums)
        for t in inputs:
            if not isinstance(t, Tensor):
                raise ValueError("jacrev: ember's jacrev takes tensor arguments only, got "
                                 f"{type(t).__name__}")
        if create_graph:   # jacobian keeps the tangents of inputs that require grad
            inputs = tuple(differentiable(t) for t in inputs)
        with grad_mode.enable_grad():
            jac = _functional.jacobian(partial, inputs, create_graph=create_graph)
        if isinstance(argnums, int):
            jac = jac[0] if out_box[0] else tuple(j[0] for j in jac)
        if has_aux:
            return jac, aux_box[0]
        return jac
    return wrapper


from ._forward import hessian, jacfwd, jvp, linearize  # noqa: E402  (they use jacrev)
from ._modules import (  # noqa: E402
    debug_unwrap,
    functionalize,
    replace_all_batch_norm_modules_,
    stack_module_state,
)
from ._rearrange import rearrange  # noqa: E402
from ._vmap import vmap  # noqa: E402
