"""Forward-mode transforms, as ``torch.func``: ``jvp``, ``jacfwd``, ``hessian``, ``linearize``.

``jvp`` pushes tangents through ``func`` with ``ember.autograd.forward_ad``: the primals become
dual tensors, and each op's forward rule computes its output's tangent. ember's forward AD has
one level, so a ``jvp`` that runs while another is active (``jacfwd(jacfwd(f))``, ``jvp`` of a
``jvp``) computes its product by reverse mode instead: with ``u = J^T v`` from one backward pass
(``create_graph``), ``J t`` is the gradient of ``<u, t>`` with respect to ``v``. Both give the
same numbers; the outer level's tangents flow through either.

``jacfwd`` is ``vmap`` of ``jvp`` over the standard basis, ``hessian`` is ``jacfwd(jacrev)``
(forward over reverse) and ``linearize`` returns ``func``'s value with a function computing its
``jvp`` at the given point.

Example::

    >>> x = ember.tensor([1., 2.])
    >>> ember.func.jvp(lambda x: x ** 2, (x,), (ember.ones(2),))
    (tensor([1., 4.]), tensor([2., 4.]))
"""

from __future__ import annotations

from .._tensor import Tensor
from .._traceback import entry_point
from ..autograd import forward_ad, grad_mode
from ..autograd import grad as _autograd_grad
from . import _pytree
from ._util import carries_derivatives, detach_tensors, differentiable
from ._vmap import vmap

__all__ = ["jvp", "jacfwd", "hessian", "linearize"]

_JVP = "jvp(f, primals, tangents)"


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J @ tangents)``: the value of ``func`` and its Jacobian at
    ``primals`` applied to ``tangents`` (forward mode), as ``torch.func.jvp``.

    ``primals``: a tuple of the positional arguments (tensors or nested tuples/lists/dicts of
    tensors); ``tangents``: the same structure. ``strict``: raise when an output does not
    depend on the inputs (otherwise its tangent is zeros). ``has_aux``: ``func`` returns
    ``(output, aux)``, and the result is ``(output, jvp_out, aux)``.

    Example::

        >>> ember.func.jvp(ember.sin, (ember.tensor(0.),), (ember.tensor(3.),))
        (tensor(0.), tensor(3.))
    """
    return _jvp(func, primals, tangents, None, strict, has_aux)


def _jvp(func, primals, tangents, argnums, strict, has_aux):
    """jvp with respect to ``primals[argnums]`` only (all of them when ``argnums`` is None);
    the others are passed to ``func`` as they are."""
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")
    diff = primals if argnums is None else _pick(primals, argnums)
    flat_primals, primals_spec = _pytree.flatten(diff)
    flat_tangents, tangents_spec = _pytree.flatten(tangents)
    if primals_spec != tangents_spec:
        raise RuntimeError(f"{_JVP}: Expected primals and tangents to have the same python "
                           "structure. For example, if primals is a tuple of 3 tensors, "
                           "tangents also must be. Got primals with structure "
                           f"{primals_spec} and tangents with structure {tangents_spec}")
    _check_tensor_list(flat_primals, "primals")
    _check_tensor_list(flat_tangents, "tangents")
    if forward_ad._state.level is not None:
        return _jvp_by_reverse_mode(func, primals, argnums, flat_primals, primals_spec,
                                    flat_tangents, strict, has_aux)
    keep_graph = (grad_mode.is_grad_enabled()
                  and carries_derivatives((primals, tangents)))
    with forward_ad.dual_level():
        duals = [forward_ad.make_dual(p, t) for p, t in zip(flat_primals, flat_tangents)]
        args = _replace(primals, argnums, _pytree.unflatten(duals, primals_spec))
        output, aux = _split_aux(func(*args), has_aux)
        flat_out, out_spec = _flat_outputs(output)
        pairs = [_unpack(o, strict) for o in flat_out]
    primal_out = _pytree.unflatten([p for p, _ in pairs], out_spec)
    tangent_out = _pytree.unflatten([t for _, t in pairs], out_spec)
    if not keep_graph:
        primal_out, tangent_out = detach_tensors((primal_out, tangent_out))
    return (primal_out, tangent_out, aux) if has_aux else (primal_out, tangent_out)


def _pick(args, argnums):
    return args[argnums] if isinstance(argnums, int) else tuple(args[n] for n in argnums)


def _replace(args, argnums, diff):
    if argnums is None:
        return diff
    args = list(args)
    if isinstance(argnums, int):
        args[argnums] = diff
    else:
        for n, value in zip(argnums, diff):
            args[n] = value
    return tuple(args)


def _check_tensor_list(leaves, what):
    if not leaves:
        raise RuntimeError(f"{_JVP}: Expected {what} to contain at least one Tensor.")
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"{_JVP}: Expected {what} to only contain Tensors, got "
                               f"{type(leaf)}")


def _split_aux(result, has_aux):
    if not has_aux:
        return result, None
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError(f"{_JVP}: output of function f should be a tuple: (output, aux) if "
                           "has_aux is True")
    return result


def _flat_outputs(output):
    flat, spec = _pytree.flatten(output)
    if not flat or (len(flat) == 1 and flat[0] is None):
        raise RuntimeError(f"{_JVP}: Expected f to be a function that has non-empty output "
                           f"(got output = {flat})")
    for o in flat:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{_JVP}: expected f(*primals) to return only tensors, got "
                               f"unsupported type {type(o)}")
    return flat, spec


def _independent_output_error():
    return RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is "
                        "independent of the inputs. This is not allowed with strict=True.")


def _unpack(dual, strict):
    primal, tangent = forward_ad.unpack_dual(dual)
    if tangent is None:
        if strict:
            raise _independent_output_error()
        tangent = primal.new_zeros(primal.shape)
    return primal, tangent


def _jvp_by_reverse_mode(func, primals, argnums, flat_primals, primals_spec, flat_tangents,
                         strict, has_aux):
    """The jvp of a transform nested inside an active forward-AD level (real tensors):
    ``J t = d<J^T v, t>/dv``, with both backward passes recorded so that the enclosing
    level's tangents (and any enclosing reverse mode) see through them."""
    with grad_mode.enable_grad():
        inputs = [differentiable(p) for p in flat_primals]
        args = _replace(primals, argnums, _pytree.unflatten(inputs, primals_spec))
        output, aux = _split_aux(func(*args), has_aux)
        flat_out, out_spec = _flat_outputs(output)
        tangents_out = _reverse_mode_products(flat_out, inputs, flat_tangents)
    for k, tangent in enumerate(tangents_out):
        if tangent is None:
            if strict:
                raise _independent_output_error()
            tangents_out[k] = flat_out[k].new_zeros(flat_out[k].shape)
    primal_out = _pytree.unflatten(flat_out, out_spec)
    tangent_out = _pytree.unflatten(tangents_out, out_spec)
    return (primal_out, tangent_out, aux) if has_aux else (primal_out, tangent_out)


def _reverse_mode_products(outputs, inputs, tangents):
    """``J t`` for each output (None where it does not depend on the inputs)."""
    tracked = [k for k, o in enumerate(outputs) if o.requires_grad]
    products = [None] * len(outputs)
    if not tracked:
        return products
    # any values serve (the backward pass is linear in them), but not zeros: some derivatives
    # skip the terms of an all-zero gradient
    probes = [outputs[k].new_ones(outputs[k].shape).requires_grad_() for k in tracked]
    grads = _autograd_grad([outputs[k] for k in tracked], inputs, probes, create_graph=True,
                           allow_unused=True)
    terms = [(g * t).sum() for g, t in zip(grads, tangents) if g is not None]
    if not terms:
        return products
    pairing = terms[0]
    for term in terms[1:]:
        pairing = pairing + term
    if not pairing.requires_grad:
        return products
    for k, product in zip(tracked, _autograd_grad(pairing, probes, create_graph=True,
                                                  allow_unused=True)):
        products[k] = product
    return products


# ---------------------------------------------------------------- jacfwd, hessian


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """A function computing the Jacobian of ``func`` with respect to the positional
    argument(s) ``argnums`` by forward mode (one ``jvp`` per input element, mapped with
    ``vmap``), as ``torch.func.jacfwd``. Each block has shape ``output.shape + input.shape``.

    ``randomness`` is passed to ``vmap``.

    Example::

        >>> ember.func.jacfwd(lambda x: x ** 2)(ember.tensor([1., 2.]))
        tensor([[2., 0.],
                [0., 4.]])
    """
    from . import _argnums_tuple

    @entry_point
    def wrapper(*args):
        _refuse_complex(args, "inputs")
        nums = _argnums_tuple(argnums, len(args), "jacfwd")
        diff_nums = nums[0] if isinstance(argnums, int) else nums
        flat_primals, primals_spec = _pytree.flatten(_pick(args, diff_nums))
        _check_tensor_list(flat_primals, "primals")
        numels = [p.numel() for p in flat_primals]

        def push_forward(*basis):
            out = _jvp(func, args, _pytree.unflatten(basis, primals_spec), diff_nums,
                       False, has_aux)
            _refuse_complex(out[0], "outputs")
            return (out[1], out[2]) if has_aux else out[1]

        results = vmap(push_forward, randomness=randomness)(*_standard_basis(flat_primals,
                                                                            numels))
        aux = None
        if has_aux:
            results, batched_aux = results
            leaves, aux_spec = _pytree.flatten(batched_aux)
            aux = _pytree.unflatten([leaf[0] for leaf in leaves], aux_spec)
        jac_leaves, out_spec = _pytree.flatten(results)
        blocks = [_pytree.unflatten(_split_columns(jac, flat_primals, numels), primals_spec)
                  for jac in jac_leaves]
        jacobian = _pytree.unflatten(blocks, out_spec)
        return (jacobian, aux) if has_aux else jacobian
    return wrapper


def _refuse_complex(tree, what):
    """jacfwd is for real functions only, as in torch."""
    for idx, leaf in enumerate(_pytree.flatten(tree)[0]):
        if isinstance(leaf, Tensor) and leaf.dtype.is_complex:
            raise RuntimeError(f"jacfwd: Expected all {what} to be real but received complex "
                               f"tensor at flattened input idx: {idx}")


def _standard_basis(primals, numels):
    """For each primal, a tensor of shape ``(total, *primal.shape)``: row ``i`` is the i-th
    unit vector of all primals' elements taken together, cut to this primal's part."""
    total = sum(numels)
    basis, start = [], 0
    for p, n in zip(primals, numels):
        block = p.new_zeros((total, n))
        if n:
            block[start:start + n] = _eye(n, p)
        basis.append(block.reshape((total,) + tuple(p.shape)))
        start += n
    return basis


def _eye(n, like):
    from ..ops.creation import eye
    return eye(n, dtype=like.dtype, device=like.device)


def _split_columns(jac, primals, numels):
    """``jac`` (basis index first) as one block per primal, ``output.shape + primal.shape``."""
    moved = jac.movedim(0, -1)
    blocks = []
    for piece, p in zip(moved.split(numels, dim=-1), primals):
        blocks.append(piece.reshape(tuple(moved.shape[:-1]) + tuple(p.shape)))
    return blocks


def hessian(func, argnums=0):
    """A function computing the Hessian of scalar-valued ``func`` with respect to the
    argument(s) ``argnums``: ``jacfwd(jacrev(func))`` (forward over reverse), as
    ``torch.func.hessian``.

    Example::

        >>> ember.func.hessian(lambda x: (x ** 3).sum())(ember.tensor([1., 2.]))
        tensor([[ 6.,  0.],
                [ 0., 12.]])
    """
    from . import jacrev
    return jacfwd(jacrev(func, argnums), argnums)


# ---------------------------------------------------------------- linearize


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is the Jacobian of ``func`` at
    ``primals`` applied to ``tangents``, as ``torch.func.linearize``. (torch traces the jvp once;
    ember computes ``jvp`` again at each call.)

    Example::

        >>> out, jvp_fn = ember.func.linearize(ember.sin, ember.zeros(2))
        >>> jvp_fn(ember.ones(2))
        tensor([1., 1.])
    """
    output = func(*primals)
    flat_primals, primals_spec = _pytree.flatten(primals)

    def jvp_fn(*tangents):
        flat_tangents, tangents_spec = _pytree.flatten(tangents)
        if tangents_spec != primals_spec:
            raise RuntimeError(f"Expected the tangents {tangents_spec} to have the same argspec "
                               f"as the primals {primals_spec}")
        for idx, (t, p) in enumerate(zip(flat_tangents, flat_primals)):
            for what in ("shape", "device", "dtype"):
                if getattr(t, what) != getattr(p, what):
                    raise RuntimeError(f"tangent:{idx} with {what} {getattr(t, what)} in "
                                       f"flattened pytree doesn't match the {what} "
                                       f"{getattr(p, what)} of the corresponding primal.")
        return _jvp(func, primals, tangents, None, False, False)[1]
    return output, jvp_fn
