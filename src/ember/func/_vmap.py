"""``vmap``: map a function over a batch dimension, as ``torch.func.vmap``.

Two paths give the same results. The batched one (``_batching.py``) runs ``func`` once, on
element 0, recording the primitives it calls, and replays them once on the whole batch through
batching rules: one kernel call per primitive for all elements. Whatever it cannot be sure to
replay rightly (an op without a rule, an in-place write, a random draw, a ``.item()``/``bool()``
value that differs across the batch, results that must keep an autograd graph) sends the call
to the per-element loop, which goes on from element 1: each input with an integer in_dim is
sliced with ``select``, inputs with in_dim ``None`` (and keyword arguments) are passed whole,
and every output is stacked along its out_dim. Slices and ``stack`` are ordinary
differentiable ops, so the loop composes with ``grad``, ``jvp``, ``jacrev`` and itself in any
order, and any Python inside ``func`` works (even ``.item()`` and data-dependent control flow,
which torch's batching refuses). ``last_call`` says which path the latest call took.

Randomness follows torch's three modes through ``ember.ops.random.draw_hook``: ``"error"``
refuses random ops inside ``func``, ``"different"`` draws afresh for each element, and
``"same"`` replays the generator's state so that every element sees the first element's draw.

Example::

    >>> x = ember.arange(6.).reshape(2, 3)
    >>> ember.vmap(lambda row: row.dot(row))(x)
    tensor([ 5., 50.])
"""

from __future__ import annotations

import functools
import threading

from .._tensor import Tensor, _trace_state
from .._traceback import hide_internal_frames
from ..autograd import grad_mode
from ..ops import random as _random
from . import _batching, _pytree
from ._util import carries_derivatives, has_tangent

__all__ = ["vmap"]

_RANDOMNESS_MODES = ("error", "different", "same")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """A function that maps ``func`` over dimension ``in_dims`` of its inputs and stacks the
    results along ``out_dims``, as ``torch.vmap``.

    ``in_dims``: an int or None for every positional input, or a tuple with one entry per
    input; an entry may itself be a nested tuple/list/dict matching the input's structure. None
    passes that input unmapped (required for non-tensor inputs). ``out_dims``: the same for the
    outputs (None: the output is not batched). ``randomness``: ``"error"``, ``"different"`` or
    ``"same"``. ``chunk_size``: accepted as torch's; results do not depend on it (the batched
    path runs the whole batch at once, the loop one element at a time).

    Example::

        >>> x, y = ember.ones(4, 3), ember.arange(3.)
        >>> ember.vmap(ember.dot, in_dims=(0, None))(x, y)
        tensor([3., 3., 3., 3.])
        >>> ember.vmap(lambda a: a * 2, in_dims=1, out_dims=1)(ember.ones(2, 3)).shape
        ember.Size([2, 3])
    """
    if randomness not in _RANDOMNESS_MODES:
        raise RuntimeError("Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        try:  # free until an error: then ember's frames leave its traceback (_traceback.py)
            return _vmap_call(func, in_dims, out_dims, randomness, args, kwargs)
        except Exception as error:
            hide_internal_frames(error)
            raise
    return wrapped


def _name(func):
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return repr(func)


# ---------------------------------------------------------------- inputs


def _check_out_dims(out_dims, func):
    leaves, _ = _pytree.flatten(out_dims)
    if any(not (d is None or isinstance(d, int)) for d in leaves):
        raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be "
                         "an int, None or a python collection of ints representing where in "
                         "the outputs the vmapped dimension should appear.")


def _flat_in_dims(in_dims, args, func):
    """``(batch_size, in_dims per leaf, leaves, spec)``, with torch's checks and messages."""
    where = f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>)"
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"{where}: expected `in_dims` to be int or a (potentially nested) tuple "
                         f"matching the structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to "
                         "add inputs, or you are trying to vmap over a function with no "
                         "inputs. The latter is unsupported.")
    leaves, spec = _pytree.flatten(args)
    dims = _pytree.broadcast_prefix(in_dims, spec)
    if dims is None:
        raise ValueError(f"{where}: in_dims is not compatible with the structure of `inputs`. "
                         f"in_dims has structure {_pytree.flatten(in_dims)[1]} but inputs has "
                         f"structure {spec}.")
    for i, (leaf, dim) in enumerate(zip(leaves, dims)):
        if dim is None:
            continue
        if not isinstance(dim, int):
            raise ValueError(f"{where}: Got in_dim={dim} for an input but in_dim must be either "
                             "an integer dimension or None.")
        if not isinstance(leaf, Tensor):
            raise ValueError(f"{where}: Got in_dim={dim} for an input but the input is of type "
                             f"{type(leaf)}. We cannot vmap over non-Tensor arguments, please "
                             "use None as the respective in_dim")
        if not -leaf.ndim <= dim < leaf.ndim:
            raise ValueError(f"{where}: Got in_dim={dim} for some input, but that input is a "
                             f"Tensor of dimensionality {leaf.ndim} so expected in_dim to "
                             f"satisfy -{leaf.ndim} <= in_dim < {leaf.ndim}.")
        dims[i] = dim % leaf.ndim
    return _batch_size(leaves, dims), dims, leaves, spec


def _batch_size(leaves, dims):
    sizes = [leaf.shape[d] for leaf, d in zip(leaves, dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return sizes[0]


def _element(leaves, dims, index):
    """The leaves of batch element ``index`` (mapped inputs sliced, the rest as given)."""
    return [leaf if d is None else leaf.select(d, index) for leaf, d in zip(leaves, dims)]


def _stand_in(leaves, dims):
    """Zero-filled inputs shaped like one batch element: what an empty batch runs ``func`` on,
    to learn its outputs' structure and shapes."""
    out = []
    for leaf, d in zip(leaves, dims):
        if d is None:
            out.append(leaf)
        else:
            shape = leaf.shape[:d] + leaf.shape[d + 1:]
            out.append(leaf.new_zeros(shape))
    return out


# ---------------------------------------------------------------- randomness


class _Frame:
    """One running vmap's randomness mode, consulted before every random draw."""

    def __init__(self, randomness):
        self.randomness = randomness
        self.first_states = {}     # generator -> its state when element 0 first drew
        self.restored = set()      # generators already rewound for the current element
        self.index = 0
        self.drew = False          # whether a random op drew (the batched path then loops)

    def start_element(self, index):
        self.index = index
        self.restored = set()

    def before_draw(self, generator):
        self.drew = True
        if self.randomness != "same":
            return
        if self.index == 0 or generator not in self.first_states:
            self.first_states.setdefault(generator, generator.get_state())
        elif generator not in self.restored:
            generator.set_state(self.first_states[generator])
        self.restored.add(generator)


_local = threading.local()


def _frames():
    stack = getattr(_local, "frames", None)
    if stack is None:
        stack = _local.frames = []
    return stack


def _on_draw(generator):
    frames = _frames()
    if any(f.randomness == "error" for f in frames):
        raise RuntimeError("vmap: called random operation while in randomness error mode. "
                           "Please either use the 'same' or 'different' randomness flags on "
                           "vmap or perform the randomness operation out of vmap")
    for frame in frames:          # outermost first: an outer "same" rewinds before inner ones
        frame.before_draw(generator)


# ---------------------------------------------------------------- the loop


def _vmap_call(func, in_dims, out_dims, randomness, args, kwargs):
    _check_out_dims(out_dims, func)
    batch_size, dims, leaves, spec = _flat_in_dims(in_dims, args, func)
    frame = _Frame(randomness)
    _random.draw_hook = _on_draw        # installed once; a no-op outside vmap
    frames = _frames()
    frames.append(frame)
    try:
        if batch_size == 0:
            output = func(*_pytree.unflatten(_stand_in(leaves, dims), spec), **kwargs)
            return _empty_batch(output, out_dims, func)
        frame.start_element(0)
        first, batched = _first_element(func, leaves, dims, spec, kwargs, batch_size,
                                        out_dims, frame)
        if batched is not None:
            return batched
        per_element = [first]
        for index in range(1, batch_size):
            frame.start_element(index)
            element = _pytree.unflatten(_element(leaves, dims, index), spec)
            per_element.append(func(*element, **kwargs))
    finally:
        frames.remove(frame)
    return _stack_outputs(per_element, out_dims, func)


# ---------------------------------------------------------------- the batched path


class _PathReport:
    """Which path the last vmap call on this thread took, and why (for tests and debugging):
    ``path`` is ``"batched"`` or ``"loop"``; ``reason`` says why it looped."""

    def __init__(self):
        self.enabled = True     # False: always loop (tests compare both paths)
        self.path, self.reason = None, None


last_call = _PathReport()


def _first_element(func, leaves, dims, spec, kwargs, batch_size, out_dims, frame):
    """Run ``func`` on element 0, recorded when the batched path may apply; return element 0's
    output and the whole batch's outputs when the recording could be replayed batched (else
    None: the caller loops over the other elements)."""
    element_leaves = _element(leaves, dims, 0)
    element = _pytree.unflatten(element_leaves, spec)
    reason = _batching_refused(leaves, dims)
    if reason is not None:
        last_call.path, last_call.reason = "loop", reason
        return func(*element, **kwargs), None
    recorder = _batching.Recorder()
    for dim, piece in zip(dims, element_leaves):
        if dim is not None:
            recorder.add_input(piece)
    with _batching.recording(recorder):
        first = func(*element, **kwargs)
    recorder.check_unrecorded_writes()
    if recorder.failure is None and frame.drew:
        recorder.fail("a random draw")
    if recorder.failure is None:
        try:
            return first, _replayed(recorder, first, leaves, dims, batch_size, out_dims, func)
        except _batching.Unbatchable as why:
            recorder.fail(str(why))
    last_call.path, last_call.reason = "loop", recorder.failure
    return first, None


def _batching_refused(leaves, dims):
    """Why the batched path cannot even be tried, or None."""
    if not last_call.enabled:
        return "the batched path is switched off"
    if _trace_state.tracer is not None:
        return "inside another recording (an outer vmap or ember.jit.trace)"
    mapped = [leaf for leaf, d in zip(leaves, dims) if d is not None]
    if mapped[0].device.type == "meta":
        return "meta tensors"
    if carries_derivatives(leaves) and (grad_mode.is_grad_enabled()
                                        or any(has_tangent(t) for t in mapped)):
        return "inputs carry derivatives (an enclosing grad or jvp)"
    return None


def _replayed(recorder, first, leaves, dims, batch_size, out_dims, func):
    """The batch's outputs from one replay of the recording, with element 0's output
    structure; raises Unbatchable when they cannot be had that way."""
    out_leaves, out_spec = _pytree.flatten(first)
    if carries_derivatives(out_leaves):
        raise _batching.Unbatchable("results that keep an autograd graph or tangents")
    out_dims_flat = _flat_out_dims(first, out_dims, out_spec, func)
    for leaf, dim in zip(out_leaves, out_dims_flat):
        if dim is not None and not isinstance(leaf, Tensor):
            raise _not_tensor_error(func, leaf)
    inputs = [leaf._data if d == 0 else leaf.movedim(d, 0)._data
              for leaf, d in zip(leaves, dims) if d is not None]
    device = next(leaf for leaf, d in zip(leaves, dims) if d is not None)._device
    lookup = _batching.replay(recorder, inputs, batch_size, device)
    input_roots = {_root(a) for a in inputs} | {_root(a) for a in recorder.constants.values()}
    results = []
    for leaf, dim in zip(out_leaves, out_dims_flat):
        found = lookup(leaf) if isinstance(leaf, Tensor) else None
        if dim is None:
            if found is not None and found[1]:
                # batched with out_dim None: the loop tells whether the values differ
                raise _batching.Unbatchable("a batched output with out_dim None")
            results.append(leaf)
        elif found is None or not found[1]:    # the same for every element: repeated
            results.append(_repeated(leaf, batch_size, dim))
        else:
            array = found[0]
            if _root(array) in input_roots:   # func returned (a view of) an input: a copy
                array = array.copy()
            results.append(Tensor._make(array, device).movedim(0, dim))
    last_call.path, last_call.reason = "batched", None
    return _pytree.unflatten(results, out_spec)


def _root(array):
    """The id of the array that owns ``array``'s memory."""
    while getattr(array, "base", None) is not None:
        array = array.base
    return id(array)


def _repeated(tensor, batch_size, dim):
    from ..ops.shape import stack

    return stack([tensor] * batch_size, dim)


def _flat_out_dims(output, out_dims, out_spec, func):
    def incompatible():
        return ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims "
                          "is not compatible with the structure of `outputs`. out_dims has "
                          f"structure {_pytree.flatten(out_dims)[1]} but outputs has "
                          f"structure {out_spec}.")
    if isinstance(output, Tensor):
        # torch accepts an int, None or a one-element tuple for a single tensor output
        if out_dims is None or isinstance(out_dims, int):
            return [out_dims]
        if isinstance(out_dims, tuple) and len(out_dims) == 1:
            return list(out_dims)
        raise incompatible()
    dims = _pytree.broadcast_prefix(out_dims, out_spec)
    if dims is None:
        raise incompatible()
    return dims


def _not_tensor_error(func, value):
    name = _name(func)
    return ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                      f"{type(value)}. Did you mean to set out_dims= to None for output?")


def _stack_outputs(per_element, out_dims, func):
    from ..ops.shape import stack

    flat = [_pytree.flatten(out) for out in per_element]
    out_spec = flat[0][1]
    if any(s != out_spec for _, s in flat):
        raise RuntimeError(f"vmap({_name(func)}, ...): `{_name(func)}` returned outputs of "
                           "different structures for different batch elements")
    dims = _flat_out_dims(per_element[0], out_dims, out_spec, func)
    results = []
    for k, dim in enumerate(dims):
        values = [leaves[k] for leaves, _ in flat]
        if dim is None:
            results.append(_unbatched(values, func))
            continue
        for v in values:
            if not isinstance(v, Tensor):
                raise _not_tensor_error(func, v)
        results.append(stack(values, dim))
    return _pytree.unflatten(results, out_spec)


def _unbatched(values, func):
    """The one value of an output with out_dim None; it must not vary across the batch."""
    first = values[0]
    if isinstance(first, Tensor) and not all(_same_tensor(first, v) for v in values[1:]):
        # torch tells batched from unbatched by how a value was computed; ember, which runs
        # func per element, can only see that the values differ
        raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` can not return a "
                         "BatchedTensor when out_dim is None")
    return first


def _same_tensor(a, b):
    if a is b:
        return True
    if not isinstance(b, Tensor) or a.shape != b.shape or a.dtype != b.dtype:
        return False
    with _no_grad():
        same = (a == b)
        if a.dtype.is_floating_point or a.dtype.is_complex:
            same = same | (a.isnan() & b.isnan())
        return bool(same.all())


def _no_grad():
    from ..autograd.grad_mode import no_grad
    return no_grad()


def _empty_batch(output, out_dims, func):
    """Outputs of a batch of size 0: each tensor output with a 0-sized dimension at out_dim."""
    leaves, out_spec = _pytree.flatten(output)
    dims = _flat_out_dims(output, out_dims, out_spec, func)
    results = []
    for leaf, dim in zip(leaves, dims):
        if dim is None:
            results.append(leaf)
            continue
        if not isinstance(leaf, Tensor):
            raise _not_tensor_error(func, leaf)
        results.append(leaf.unsqueeze(dim).narrow(dim, 0, 0))
    return _pytree.unflatten(results, out_spec)
