"""Tracing: run a function once and record every primitive it calls into a :class:`Graph`.

Every primitive goes through ``ops._registry.run_op``, which hands its call to the active
tracer (``Tensor._trace_state.tracer``, one attribute test when nothing is traced). In-place
writes that go through ``assign_inplace``/``write_out`` are recorded as ``copy_`` nodes. A
tensor the tracer has not seen (made by a factory such as ``ember.zeros``, or captured from
the enclosing scope) becomes a constant, as in torch; a module's parameters and buffers become
``get_attr`` nodes by name.

In-place changes that skip the recorded paths (a fast path writing the array directly) would
make the graph wrong silently: the tracer notices them through the version counters every
in-place change bumps, and refuses the trace with a message naming the op.
"""

from __future__ import annotations

import contextlib
import threading
import warnings

from .._tensor import Tensor, _trace_state
from ..ops._registry import Op
from ..ops._vmap_rules import batching
from ._ir import CALL, CONSTANT, COPY, GET_ATTR, OP, Graph, Node

__all__ = ["TracerWarning", "Tracer", "tracing", "is_tracing", "paused", "trace_graph"]


# ``Tensor.detach()`` and ``.data`` wrap the same array without an operator call; the tracer
# records them as this op (the same array, no derivative: the result is cut from autograd)
detach_op = Op("detach", lambda xp, a: a, meta=lambda a: (a.shape, a.dtype), save_inputs=False)
detach_op.defonnx("Identity")


detach_op.defbatch(batching.pointwise)
detach_op.opt_out("derivative", "its output is cut from the graph")


class TracerWarning(Warning):
    """A traced program may not generalise to other inputs (torch's TracerWarning)."""


_PYTHON_VALUE = ("Converting a tensor to a Python {what} might cause the trace to be incorrect. "
                 "We can't record the data flow of Python values, so this value will be "
                 "treated as a constant in the future. This means that the trace might not "
                 "generalize to other inputs!")


_STRICT_DICT = ("Encountering a dict at the output of the tracer might cause the trace to be "
                "incorrect, this is only valid if the container structure does not change based "
                "on the module's inputs. Consider using a constant container instead (e.g. for "
                "`list`, use a `tuple` instead. for `dict`, use a `NamedTuple` instead). If you "
                "absolutely need this and know the side effects, pass strict=False to trace() "
                "to allow this behavior.")


_RANDOM = ("The traced function drew random numbers (dropout in training mode, rand, ...): "
           "ember.jit records them as constants, so the traced function replays the same "
           "values on every call. Call .eval() on the module before tracing, or draw the "
           "random tensors outside and pass them as inputs.")


def is_tracing():
    """Whether ``ember.jit.trace`` is recording the current call."""
    return _trace_state.tracer is not None


class Tracer:
    """The recorder ``run_op`` calls while tracing."""

    def __init__(self, attr_names=None, strict=True, attr_arrays=None, dynamic_sizes=True):
        self.dynamic_sizes = dynamic_sizes  # record x.size(0) as graph values (``_sizes.py``)
        self.thread = threading.get_ident()  # ops other threads run meanwhile are not traced
        self.strict = strict
        self.attr_arrays = attr_arrays or {}  # id(array) -> (array, param/buffer)
        self.graph = Graph()
        self.env = {}          # id(tensor) -> (tensor, value); the tensor is kept alive
        self.versions = {}     # id(version counter list) -> (list, version last recorded)
        self.attr_names = attr_names or {}   # id(param or buffer) -> dotted name
        self.arrays = {}       # id(array) -> (array, value): finds detach()/.data aliases

    # ------------------------------------------------------------ values

    def _meta(self, t):
        return tuple(t._data.shape), t.dtype.name

    def bind(self, tensor, value):
        self.env[id(tensor)] = (tensor, value)
        self.arrays[id(tensor._data)] = (tensor._data, value)
        vc = tensor._vc
        self.versions[id(vc)] = (vc, vc[0])

    def new_value(self, tensor, name=None):
        shape, dtype = self._meta(tensor)
        value = self.graph.new_value(shape, dtype, name)
        self.bind(tensor, value)
        return value

    def add_input(self, tensor, name):
        if id(tensor) in self.env:  # the same tensor passed twice: its first position reads it
            shape, dtype = self._meta(tensor)
            value = self.graph.new_value(shape, dtype, name)
        else:
            value = self.new_value(tensor, name)
        self.graph.inputs.append(value)
        return value

    def value_of(self, tensor, check=True):
        entry = self.env.get(id(tensor))
        if entry is not None and entry[0] is tensor:
            if check:
                self._check_version(tensor)
            return entry[1]
        alias = self.arrays.get(id(tensor._data))
        if alias is None:
            owner = self.attr_arrays.get(id(tensor._data))
            if owner is not None and owner[0] is tensor._data and owner[1] is not tensor:
                alias = (owner[0], self.value_of(owner[1]))  # detach() of a parameter
        if alias is not None and alias[0] is tensor._data:  # detach() or .data of a value
            node = Node(OP, detach_op, [alias[1]], {}, [])
            value = self.new_value(tensor)
            node.outputs.append(value)
            self.graph.nodes.append(node)
            return value
        name = self.attr_names.get(id(tensor))
        if name is not None:
            node = Node(GET_ATTR, None, [], {"name": name}, [])
        else:
            if tensor.requires_grad:
                raise RuntimeError("Cannot insert a Tensor that requires grad as a constant. "
                                   "Consider making it a parameter or input, or detaching the "
                                   f"gradient\nTensor:\n{tensor}")
            name = f"c{len(self.graph.constants)}"
            with paused():
                self.graph.constants[name] = tensor.detach().clone()
            node = Node(CONSTANT, None, [], {"name": name}, [])
        value = self.new_value(tensor)
        node.outputs.append(value)
        self.graph.nodes.append(node)
        return value

    def _check_version(self, tensor):
        vc = tensor._vc
        known = self.versions.get(id(vc))
        if known is not None and known[0] is vc and known[1] != vc[0]:
            raise RuntimeError(
                "ember.jit.trace: a traced tensor was changed in place by an operation the "
                "tracer could not record (an in-place view op like t_() or unsqueeze_(), or "
                "a write into the tensor's memory outside ember's operators); the graph "
                "would not reproduce it. Write the function out of place.")

    # ------------------------------------------------------------ hooks from run_op

    def record(self, op, inputs, params, results):
        if threading.get_ident() != self.thread:
            return
        if self.dynamic_sizes and op.name == "unsqueeze":
            return self._record_unsqueeze(inputs[0], results)
        ins = [self.value_of(t) for t in inputs]
        outs = results if op.multi_output else (results,)
        node = Node(OP, op, ins, dict(params), [self.new_value(t) for t in outs])
        self.graph.nodes.append(node)

    def _record_unsqueeze(self, source, result):
        """``unsqueeze`` as ``source.unsqueeze(dim)``: the primitive carries the traced shape,
        the method only the dim (``stack`` and ``x[:, None]`` then follow the batch size)."""
        before, after = source._data.shape, result._data.shape
        dim = next(i for i in range(len(after)) if after[:i] + after[i + 1:] == before)
        value = self.value_of(source)
        node = Node(CALL, None, [value], {"fn": "method:unsqueeze",
                                          "args": [{"v": 0}, {"c": dim}], "kwargs": {}},
                    [self.new_value(result)])
        self.graph.nodes.append(node)

    def record_write(self, target, result):
        if threading.get_ident() != self.thread:
            return
        old, new = self.value_of(target, check=False), self.value_of(result)
        self._clone_read_target(old, new)
        node = Node(COPY, None, [old, new], {}, [self.new_value(target)])
        self.graph.nodes.append(node)

    def _clone_read_target(self, old, new):
        """When the op that computed a write read the target itself (traced without grad, so
        ``inplace`` made no copy), let it read a clone, as ``inplace`` does under grad: the
        replayed graph then keeps what autograd saved intact when its inputs require grad."""
        from ..ops._registry import registry

        nodes = self.graph.nodes
        for i in range(len(nodes) - 1, -1, -1):
            producer = nodes[i]
            if new in producer.outputs:
                if producer.kind == OP and old in producer.inputs:
                    copy = self.graph.new_value(old.shape, old.dtype)
                    producer.inputs = [copy if v is old else v for v in producer.inputs]
                    nodes.insert(i, Node(OP, registry["clone"][0], [old], {}, [copy]))
                return

    # ------------------------------------------------------------ traced sizes (_sizes.py)

    def record_size_call(self, fn_name, args, result):
        """Record ``fn_name(*args)`` computing the int ``result`` from traced sizes; return it
        as a :class:`~ember.jit._sizes.SizeInt`."""
        from ._sizes import SizeInt

        inputs = []
        templates = [self._template(a, inputs) for a in args]
        out = self.graph.new_value((), "int")
        self.graph.nodes.append(Node(CALL, None, inputs, {"fn": fn_name, "args": templates,
                                                          "kwargs": {}}, [out]))
        return SizeInt(result, out, self)

    def record_public_call(self, fn_name, function, args, kwargs):
        """Run ``function(*args, **kwargs)`` unrecorded and record it as one ``call`` node whose
        traced sizes and tensors are inputs (the replay calls it with the new sizes)."""
        inputs = []
        arg_templates = [self._template(a, inputs) for a in args]
        kwarg_templates = {k: self._template(v, inputs) for k, v in kwargs.items()}
        with paused():
            result = function(*args, **kwargs)
        several = isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)
        if not (isinstance(result, Tensor) or several):
            raise RuntimeError(f"ember.jit.trace: {fn_name} returned a "
                               f"{type(result).__name__}, not a Tensor")
        whole = self.graph.new_value((), "tuple") if several else self.new_value(result)
        self.graph.nodes.append(Node(CALL, None, inputs, {"fn": fn_name, "args": arg_templates,
                                                          "kwargs": kwarg_templates}, [whole]))
        if several:  # a tuple of tensors (ember.lstm...): one getitem node per tensor
            for i, tensor in enumerate(result):
                self.graph.nodes.append(Node(CALL, None, [whole], {
                    "fn": "operator.getitem", "args": [{"v": 0}, {"c": i}], "kwargs": {}},
                    [self.new_value(tensor)]))
        return result

    def _template(self, arg, inputs):
        """A ``call`` node's argument: ``{"v": input index}`` for a graph value (a tensor, a
        traced size, a tuple or list holding either), else ``{"c": constant}``."""
        from ._sizes import SizeInt, _contains_size

        if isinstance(arg, Tensor):
            value = self.value_of(arg)
        elif isinstance(arg, SizeInt):
            value = arg.value
        elif isinstance(arg, (tuple, list)) and (_contains_size(arg) or _holds_tensor(arg)):
            items = []
            templates = [self._template(a, items) for a in arg]
            value = self.graph.new_value((), "tuple" if _holds_tensor(arg) else "int")
            fn_name = "jit.list" if isinstance(arg, list) else "jit.tuple"
            self.graph.nodes.append(Node(CALL, None, items, {"fn": fn_name, "args": templates,
                                                             "kwargs": {}}, [value]))
        else:
            return {"c": int(arg) if isinstance(arg, SizeInt) else arg}
        inputs.append(value)
        return {"v": len(inputs) - 1}

    def python_value(self, tensor, what):
        if threading.get_ident() != self.thread:
            return
        warnings.warn(_PYTHON_VALUE.format(what=what), TracerWarning, stacklevel=4)

    # ------------------------------------------------------------ outputs

    def output_tree(self, obj):
        if isinstance(obj, Tensor):
            return self.value_of(obj)
        if isinstance(obj, tuple):
            return ("tuple", [self.output_tree(o) for o in obj])
        if isinstance(obj, list):
            return ("list", [self.output_tree(o) for o in obj])
        if isinstance(obj, dict):
            if self.strict:
                raise RuntimeError(_STRICT_DICT)
            return ("dict", [(k, self.output_tree(v)) for k, v in obj.items()])
        raise RuntimeError("Only tensors, lists, tuples of tensors, or dictionary of tensors can "
                           f"be output from traced functions (got {type(obj).__name__})")


def _holds_tensor(items):
    """Whether the tuple or list ``items`` holds a tensor (the weights of ``ember.lstm``...)."""
    return any(isinstance(i, Tensor) or isinstance(i, (tuple, list)) and _holds_tensor(i)
               for i in items)


@contextlib.contextmanager
def tracing(tracer):
    """Make ``tracer`` the active tracer for the block."""
    from . import _sizes

    if _trace_state.tracer is not None:
        raise RuntimeError("ember.jit.trace cannot be nested")
    swapped = _sizes.install(tracer) if getattr(tracer, "dynamic_sizes", False) else []
    _trace_state.tracer = tracer
    try:
        yield tracer
    finally:
        _trace_state.tracer = None
        _sizes.uninstall(swapped)


@contextlib.contextmanager
def paused():
    """Run ember ops without recording them (the tracer's own work)."""
    saved = _trace_state.tracer
    _trace_state.tracer = None
    try:
        yield
    finally:
        _trace_state.tracer = saved


def trace_graph(fn, inputs, input_names, attr_names=None, strict=True, attrs=(),
                dynamic_sizes=True):
    """Run ``fn(*inputs)`` once under a tracer; return ``(graph, eager result)``.
    ``attrs``: the module's parameters and buffers (``detach()`` of one is recorded);
    ``dynamic_sizes``: record sizes read from tensors as graph values (else as constants)."""
    tracer = Tracer(attr_names, strict, {id(t._data): (t._data, t) for t in attrs},
                    dynamic_sizes)
    for i, (t, name) in enumerate(zip(inputs, input_names)):
        if not isinstance(t, Tensor):
            raise TypeError(f"Type '{type(t).__name__}' cannot be traced. Only Tensors can be "
                            f"passed as inputs to ember.jit.trace (input {i})")
        tracer.add_input(t, name)
    from ..ops.random import default_generator

    rng_before = default_generator.get_state()
    with tracing(tracer):
        result = fn(*inputs)
        tracer.graph.output = tracer.output_tree(result)
    if not (default_generator.get_state() == rng_before).all():
        warnings.warn(_RANDOM, TracerWarning, stacklevel=3)
    _drop_unread_sizes(tracer.graph)
    _resolve_calls(tracer.graph)
    _name_inputs(tracer.graph)
    return tracer.graph, result


def _drop_unread_sizes(graph):
    """Remove the size reads and size arithmetic nothing uses (``x.shape`` reads every dim)."""
    read = set(graph.output_values())
    kept = []
    for n in reversed(graph.nodes):
        if n.kind == CALL and n.outputs[0].dtype == "int" and n.outputs[0] not in read:
            continue
        read.update(n.inputs)
        kept.append(n)
    graph.nodes = kept[::-1]


def _resolve_calls(graph):
    """Point the ``call`` nodes at their functions (after the trace, which swaps some)."""
    from ._script import resolve

    for n in graph.nodes:
        if n.kind == CALL and n.op is None:
            n.op = resolve(n.params["fn"])


def _name_inputs(graph):
    seen = set()
    for v in graph.inputs:
        base = v.name or "input"
        name, k = base, 1
        while name in seen:
            name, k = f"{base}.{k}", k + 1
        seen.add(name)
        v.name = name
