"""Capture: run a function once on its real inputs under a recording tracer, and return the
graph of primitives it called, or the reasons it cannot be replayed safely (graph breaks).

The tracer is ``ember.jit``'s (``jit/_tracer.py``), made stricter for a compiler: where
``jit.trace`` warns and records a constant, capture records a *graph break* instead, because
a compiled function must never give a silently wrong answer:

* a tensor's value read into Python (``item()``, ``bool()``, ``int()``, ``float()``,
  ``tolist()``, ``numpy()``): the code after it may depend on the data;
* an in-place change the tracer could not record (a direct write such as ``fill_``);
* random numbers drawn outside the recorded random entry points (dropout's mask and
  ``ember.rand``-like factories are recorded as calls, so the replay draws fresh numbers);
* ``print()`` (a side effect the replay would lose), and outputs that are not tensors or
  plain Python constants.

Tensors the function reads that are neither inputs nor its module's parameters and buffers
(closure variables, globals, tensors made by factories) are read *live* at each call, through
``get_attr`` nodes named ``captured_N``: an optimiser's in-place update is then seen.

Example::

    >>> graph = capture(lambda x: x.sin() + 1, [ember.ones(2)]).graph
    >>> [n.op.name for n in graph.op_nodes()]
    ['sin', 'add']
"""

from __future__ import annotations

import builtins
import os
import sys
import traceback
import warnings

from .._tensor import Tensor
from ..autograd import grad_mode
from ..jit._ir import CALL, COPY, GET_ATTR, OP, Node
from ..jit._tracer import (
    Tracer,
    TracerWarning,
    _drop_unread_sizes,
    _name_inputs,
    _resolve_calls,
    paused,
    tracing,
)
from .state import Unsupported

__all__ = ["Capture", "capture", "user_frame", "flatten_output", "GuardFailed"]

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# what ``Tensor._traced_to_python`` reports -> the method a user called
_CONVERSIONS = {"number": "Tensor.item()", "list": "Tensor.tolist()",
                "boolean": "Tensor.__bool__()", "float": "Tensor.__float__()",
                "integer": "Tensor.__int__()"}

# public random entry points recorded whole as calls (the replay draws fresh numbers)
_RANDOM_FACTORIES = ("rand", "randn", "rand_like", "randn_like", "randint", "randint_like",
                     "randperm", "bernoulli", "normal", "multinomial")


def expect_shape(tensor, shape):
    """The guard node after an operator whose result's shape depends on the data
    (``nonzero``, ``unique``...): later nodes were traced for this shape.

    Example::

        >>> expect_shape(ember.ones(2), (2,)).shape
        ember.Size([2])
    """
    if tuple(tensor._data.shape) != shape:
        raise GuardFailed
    return tensor


class GuardFailed(Exception):
    """A guard node found a value other than the traced one: run the call eagerly.

    Example::

        >>> issubclass(GuardFailed, Exception)
        True
    """


def expect_false(tensor):
    """The guard node of ember's input checks: the check must still pass.

    Example::

        >>> expect_false(ember.tensor(False))
        tensor(False)
    """
    if bool(tensor._data):
        raise GuardFailed
    return tensor


_PLUMBING = ("_tensor.py", "overrides.py", "_traceback.py", os.path.join("_inductor",
                                                                          "capture.py"))


def _read_by_ember():
    """Whether the tensor-to-Python conversion being traced was called by ember's code."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.endswith(_PLUMBING):
            return filename.startswith(_EMBER_DIR + os.sep)
        frame = frame.f_back
    return False


def user_frame():
    """The innermost frame outside ember's own package, as a ``traceback.FrameSummary``.

    Example::

        >>> user_frame().name
        '<module>'
    """
    frame = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(_EMBER_DIR + os.sep):
            return traceback.FrameSummary(filename, frame.f_lineno, frame.f_code.co_name)
        frame = frame.f_back
    return None


def _user_positions():
    """``(code object, line)`` of each frame outside ember's package, innermost first: where
    each user function on the stack was when the capture broke."""
    positions = []
    frame = sys._getframe(2)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(_EMBER_DIR + os.sep):
            positions.append((frame.f_code, frame.f_lineno))
        frame = frame.f_back
    return positions


def _operator_names(graph):
    """The names of the operators and calls ``graph`` has recorded so far."""
    return [n.op.name if n.kind == OP else n.params.get("fn", n.kind)
            for n in graph.nodes if n.kind in (OP, CALL)]


def _where_text(frame):
    if frame is None:
        return ""
    text = f'\n  File "{frame.filename}", line {frame.lineno}, in {frame.name}'
    if frame.line:
        text += f"\n    {frame.line}"
    return text


class Capture:
    """What one capture found: the graph (or None after a break), the break reasons, the
    live tensors the graph reads by name, and the eager result of the call.

    Example::

        >>> capture(lambda x: x.item(), [ember.ones(1)]).ok
        False
    """

    def __init__(self, graph, breaks, captured, result, size_specialised, spec=None,
                 grad_enabled=None):
        self.graph = graph
        self.grad_enabled = grad_enabled  # run the whole graph in this grad mode (None: as is)
        self.spec = spec                # rebuilds the output from the graph's flat outputs
        self.breaks = breaks            # [(reason, FrameSummary or None)]
        self.before_break = []          # per break: the operators recorded before it
        self.break_frames = []          # per break: [(code object, line)] of user frames
        self.captured = captured        # {"captured_N": tensor}
        self.result = result
        self.size_specialised = size_specialised

    @property
    def ok(self):
        return not self.breaks


class CaptureTracer(Tracer):
    """``jit``'s tracer, recording graph breaks where it would warn or refuse.

    Example::

        >>> CaptureTracer({}, (), dynamic_sizes=False, fullgraph=False).breaks
        []
    """

    # the graph replays ember's ops (never exported), so layers with a whole-layer kernel
    # (an LSTM layer, fused attention) are recorded as that one op, as eager code runs them
    whole_kernels = True

    def __init__(self, attr_names, attrs, dynamic_sizes, fullgraph):
        super().__init__(attr_names, strict=False,
                         attr_arrays={id(t._data): (t._data, t) for t in attrs},
                         dynamic_sizes=dynamic_sizes)
        self.fullgraph = fullgraph
        self.breaks = []
        self.before_break = []   # per break: the operators recorded before it, by name
        self.break_frames = []   # per break: (code, line) of each user frame, innermost first
        self.captured = {}
        self.guards = []   # values of the guard nodes (kept as extra graph outputs)
        self.grad_enabled = grad_mode.state.enabled
        self.modes = {}    # id(node) -> the grad mode it was recorded under, where it differs

    def record(self, op, inputs, params, results):
        before = len(self.graph.nodes)
        super().record(op, inputs, params, results)
        self._note_mode(before)

    def record_write(self, target, result):
        before = len(self.graph.nodes)
        super().record_write(target, result)
        self._note_mode(before)

    def record_public_call(self, fn_name, function, args, kwargs):
        before = len(self.graph.nodes)
        result = super().record_public_call(fn_name, function, args, kwargs)
        self._note_mode(before)
        return result

    def _note_mode(self, before):
        """Remember the nodes recorded under a grad mode other than the call's (a ``with
        no_grad():`` block inside the function): the replay runs them in that mode."""
        enabled = grad_mode.state.enabled
        if enabled != self.grad_enabled:
            for node in self.graph.nodes[before:]:
                self.modes[id(node)] = enabled

    def graph_break(self, reason):
        """Note that the function cannot be captured; with ``fullgraph`` raise torch's error."""
        where = user_frame()
        if self.fullgraph:
            raise Unsupported(f"{reason}\n\nfrom user code:{_where_text(where)}")
        place = None if where is None else (where.filename, where.lineno)
        if any(r == reason and (w is None and place is None or w is not None and
                                (w.filename, w.lineno) == place) for r, w in self.breaks):
            return  # the same break again (a loop over parameters): noted once
        self.breaks.append((reason, where))
        self.before_break.append(_operator_names(self.graph))
        self.break_frames.append(_user_positions())

    def python_value(self, tensor, what):
        if not self._on_trace_thread():
            return
        if what == "boolean" and _read_by_ember():
            self._guard_false(tensor)
            return
        self.graph_break(f"Unsupported {_CONVERSIONS.get(what, what)} call: a tensor's "
                         "value read into Python (data-dependent Python code)")

    def _guard_false(self, tensor):
        """ember's own input checks (``if bool(bad.any()): raise ...``) are torch's kernel
        checks: the graph repeats the check at each replay (a guard node) instead of
        breaking. A check that passed while tracing and fails later runs the call eagerly,
        which raises the error as eager code does."""
        with paused():
            expected = bool(tensor._data)
        if expected:
            self.graph_break("a check inside ember failed while tracing")
            return
        value = self.graph.new_value((), "bool")
        self.graph.nodes.append(Node(CALL, expect_false, [self.value_of(tensor)], {
            "fn": "guard.expect_false", "args": [{"v": 0}], "kwargs": {}}, [value]))
        self.guards.append(value)

    def _on_trace_thread(self):
        import threading

        return threading.get_ident() == self.thread

    def _check_version(self, tensor):
        vc = tensor._vc
        known = self.versions.get(id(vc))
        if known is not None and known[0] is vc and known[1] != vc[0]:
            self.graph_break("an in-place change the tracer could not record (a direct write "
                             "such as fill_, copy_ or an indexed assignment without autograd)")
            self.versions[id(vc)] = (vc, vc[0])

    def value_of(self, tensor, check=True):
        entry = self.env.get(id(tensor))
        known = entry is not None and entry[0] is tensor
        if known or self.arrays.get(id(tensor._data)) is not None \
                or self.attr_names.get(id(tensor)) is not None \
                or id(tensor._data) in self.attr_arrays:
            return super().value_of(tensor, check)
        return self._read_captured(tensor)

    def _read_captured(self, tensor):
        """A tensor from outside the call's inputs and module: read it live, by name."""
        name = f"captured_{len(self.captured)}"
        self.captured[name] = tensor
        value = self.new_value(tensor)
        self.graph.nodes.append(Node(GET_ATTR, None, [], {"name": name}, [value]))
        return value

    def record_random(self, fn_name, function, args, kwargs):
        """Run a random factory unrecorded; record it as one call (fresh numbers per replay)."""
        from ..ops.random import default_generator

        inputs = []
        arg_templates = [self._template(a, inputs) for a in args]
        kwarg_templates = {k: self._template(v, inputs) for k, v in kwargs.items()}
        self.check_random(default_generator)
        with paused():
            result = function(*args, **kwargs)
        self.rng_known = _rng_state(default_generator)
        if not isinstance(result, Tensor):
            self.graph_break(f"{fn_name} returned a {type(result).__name__}")
            return result
        node = Node(CALL, function, inputs, {"fn": fn_name, "args": arg_templates,
                                             "kwargs": kwarg_templates},
                    [self.new_value(result)])
        self.graph.nodes.append(node)
        return result

    def record_function(self, cls, apply, args, kwargs):
        """A custom ``autograd.Function``: run ``apply`` unrecorded and record it as one call
        node, so each replay runs the user's forward and registers the user's backward, as
        eager code does. Tensors hidden in other containers (a dict) would be baked into the
        graph: the call breaks it instead."""
        name = f"{cls.__module__}.{cls.__qualname__}.apply"
        if any(_hides_tensor(a) for a in (*args, *kwargs.values())):
            self.graph_break(f"{cls.__name__}.apply(): a tensor inside an argument that is "
                             "not a tensor, tuple or list")
            return apply(*args, **kwargs)
        before = len(self.graph.nodes)
        inputs = []
        arg_templates = [self._template(a, inputs) for a in args]
        kwarg_templates = {k: self._template(v, inputs) for k, v in kwargs.items()}
        with paused():
            result = apply(*args, **kwargs)
        several = isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)
        if not (isinstance(result, Tensor) or several):
            self.graph_break(f"{cls.__name__}.apply() returned a {type(result).__name__}, "
                             "not a tensor or a tuple of tensors")
            return result
        whole = self.graph.new_value((), "tuple") if several else self.new_value(result)
        self.graph.nodes.append(Node(CALL, apply, inputs, {
            "fn": name, "args": arg_templates, "kwargs": kwarg_templates}, [whole]))
        if several:  # one getitem node per tensor of the tuple
            for i, tensor in enumerate(result):
                self.graph.nodes.append(Node(CALL, None, [whole], {
                    "fn": "operator.getitem", "args": [{"v": 0}, {"c": i}], "kwargs": {}},
                    [self.new_value(tensor)]))
        self._note_mode(before)
        return result

    def check_random(self, generator):
        """Random numbers drawn since the last recorded draw were drawn by an operation the
        replay would not repeat (an in-place fill such as ``uniform_``): break."""
        if _rng_state(generator) != self.rng_known:
            self.graph_break("random numbers drawn by an operation the compiler cannot replay "
                             "(an in-place random fill such as uniform_)")
            self.rng_known = _rng_state(generator)

    def output_tree(self, obj):
        """The output as a tree of values, with plain Python constants kept as ``("const",
        value)`` leaves; anything else breaks the graph."""
        if isinstance(obj, Tensor):
            return self.value_of(obj)
        if isinstance(obj, (tuple, list)):
            kind = "list" if isinstance(obj, list) else "tuple"
            if kind == "tuple" and type(obj) is not tuple:
                return ("namedtuple", type(obj), [self.output_tree(o) for o in obj])
            return (kind, [self.output_tree(o) for o in obj])
        if type(obj) is dict:
            return ("dict", [(k, self.output_tree(v)) for k, v in obj.items()])
        if obj is None or type(obj) in (bool, int, float, str):
            return ("const", obj)
        self.graph_break(f"the function returned a {type(obj).__name__}, which a graph cannot "
                         "produce")
        return ("const", obj)


def _install_entry_points(tracer):
    """Swap the random factories, dropout's mask, ``numpy()`` and ``print`` for recording
    versions while ``tracer`` runs; return what to put back."""
    import ember

    from ..nn._functional import dropout as dropout_module

    saved = []

    def swap(owner, name, replacement):
        saved.append((owner, name, owner.__dict__[name] if isinstance(owner, type)
                      else getattr(owner, name)))
        setattr(owner, name, replacement)

    def recorder(fn_name, original):
        def record(*args, **kwargs):
            if not (_active(tracer)):
                return original(*args, **kwargs)
            return tracer.record_random(fn_name, original, args, kwargs)
        return record

    for name in _RANDOM_FACTORIES:
        if hasattr(ember, name):
            swap(ember, name, recorder(f"ember.{name}", getattr(ember, name)))
    swap(dropout_module, "_noise", recorder("nn.functional.dropout_mask",
                                            dropout_module._noise))

    def breaking(what, original):
        def call(*args, **kwargs):
            if _active(tracer):
                tracer.graph_break(what)
            return original(*args, **kwargs)
        return call

    swap(Tensor, "numpy", breaking("Unsupported Tensor.numpy() call: a tensor's values read "
                                   "into NumPy", Tensor.__dict__["numpy"]))
    swap(Tensor, "__array__", breaking("a tensor converted to a NumPy array",
                                       Tensor.__dict__["__array__"]))
    swap(builtins, "print", breaking("print() (a side effect the compiled graph would not "
                                     "repeat)", builtins.print))
    from .. import autograd

    backward = "a backward pass inside the compiled function (gradients are written to .grad " \
               "outside the graph)"
    swap(Tensor, "backward", breaking(backward, Tensor.__dict__["backward"]))
    from ..autograd import function as function_module
    from ..autograd.function import Function

    apply = Function.__dict__["apply"].__func__
    unrecorded_apply = function_module._apply

    # swapped under Function.apply, which calls it by its module name: an apply bound
    # before the capture (a default argument, an attribute) is recorded too
    def recording_apply(cls, args, kwargs):
        if _active(tracer):
            return tracer.record_function(cls, apply.__get__(cls), args, kwargs)
        return unrecorded_apply(cls, args, kwargs)
    swap(function_module, "_apply", recording_apply)
    for method in ("register_hook", "retain_grad", "requires_grad_"):
        swap(Tensor, method, breaking(f"Tensor.{method}() inside the compiled function (the "
                                      "graph does not record autograd settings)",
                                      Tensor.__dict__[method]))
    swap(autograd, "backward", breaking(backward, autograd.backward))
    grad = Tensor.__dict__["grad"]
    gradient = "a tensor's .grad read or assigned inside the compiled function (gradients " \
               "live outside the graph: zero_grad, an optimiser step, clipping)"
    swap(Tensor, "grad", property(breaking(gradient, grad.fget), breaking(gradient, grad.fset),
                                  breaking(gradient, grad.fdel), grad.__doc__))
    swap(autograd, "grad", breaking(backward, autograd.grad))
    return saved


def _hides_tensor(obj):
    """Whether ``obj`` holds a tensor that a call node's argument template would keep as a
    constant (inside a dict or a set, possibly within tuples and lists)."""
    if isinstance(obj, (tuple, list)):
        return any(_hides_tensor(o) for o in obj)
    if isinstance(obj, dict):
        return any(isinstance(v, Tensor) or _hides_tensor(v) for v in obj.values())
    if isinstance(obj, (set, frozenset)):
        return any(isinstance(v, Tensor) for v in obj)
    return False


def _rng_state(generator):
    """The generator's state as bytes (read without recording)."""
    with paused():
        return generator.get_state()._data.tobytes()


def _active(tracer):
    from .._tensor import _trace_state

    return _trace_state.tracer is tracer and tracer._on_trace_thread()


def _uninstall(saved):
    for owner, name, original in reversed(saved):
        setattr(owner, name, original)


def capture(fn, inputs, rebuild=None, attr_names=None, attrs=(), dynamic_sizes=False,
            fullgraph=False):
    """Call ``fn`` on ``rebuild(inputs)`` (default: ``*inputs``) while recording; return a
    :class:`Capture`. ``inputs``: the call's tensors (the graph's inputs, in order);
    ``attr_names``: ``{id(tensor): dotted name}`` of the module's parameters and buffers.

    Example::

        >>> c = capture(lambda x: x * 2, [ember.ones(1)])
        >>> c.ok, c.result
        (True, tensor([2.]))
    """
    from ..ops.random import default_generator

    tracer = CaptureTracer(attr_names, attrs, dynamic_sizes, fullgraph)
    for i, t in enumerate(inputs):
        tracer.add_input(t, f"arg{i}")
    tracer.rng_known = _rng_state(default_generator)
    saved = _install_entry_points(tracer)
    try:
        with warnings.catch_warnings(record=True) as caught, tracing(tracer):
            warnings.simplefilter("always")
            result = fn(*inputs) if rebuild is None else rebuild(inputs)
            output = tracer.output_tree(result)
    finally:
        _uninstall(saved)
    size_specialised = _replay_warnings(caught)
    graph = tracer.graph
    spec = flatten_output(graph, output)
    _guard_data_dependent_shapes(tracer, graph)
    graph.output[1].extend(tracer.guards)  # keeps the guard nodes through dead-code removal
    _check_unrecorded_writes(tracer)
    tracer.check_random(default_generator)
    _check_writes_to_captured(tracer, graph)
    _check_captured_gradients(tracer, attrs)
    if tracer.breaks:
        return _broken(tracer, result, size_specialised)
    _drop_unread_sizes(graph)
    _resolve_calls(graph)
    _name_inputs(graph)
    whole = _one_recorded_mode(tracer, graph)
    if whole is None:
        _run_in_recorded_modes(tracer, graph)
    if tracer.breaks:
        return _broken(tracer, result, size_specialised)
    return Capture(graph, [], tracer.captured, result, size_specialised, spec, whole)


def _broken(tracer, result, size_specialised):
    """The :class:`Capture` of a call that broke its graph."""
    found = Capture(None, tracer.breaks, {}, result, size_specialised)
    found.before_break = tracer.before_break
    found.break_frames = tracer.break_frames
    return found


def flatten_output(graph, output):
    """Make ``graph.output`` the flat tuple of the values in the tree ``output``; return the
    spec that rebuilds the user's structure (containers, named tuples, Python constants).

    Example::

        >>> found = capture(lambda x: {"y": x * 2, "n": 3}, [ember.ones(1)])
        >>> found.spec
        ('dict', [('y', ('slot', 0)), ('n', ('const', 3))])
    """
    values = []

    def spec_of(tree):
        if not isinstance(tree, tuple):
            if tree in values:
                return ("slot", values.index(tree))
            values.append(tree)
            return ("slot", len(values) - 1)
        kind = tree[0]
        if kind == "const":
            return tree
        if kind == "namedtuple":
            return ("namedtuple", tree[1], [spec_of(t) for t in tree[2]])
        if kind == "dict":
            return ("dict", [(k, spec_of(t)) for k, t in tree[1]])
        return (kind, [spec_of(t) for t in tree[1]])
    spec = spec_of(output)
    graph.output = ("tuple", values)
    return spec


def _replay_warnings(caught):
    """Re-issue the warnings the call raised (the user's own), keep the tracer's to itself;
    return whether a traced size was used as a Python value (the graph is then specialised
    to the sizes it saw)."""
    specialised = False
    for w in caught:
        if issubclass(w.category, TracerWarning):
            specialised = True
            continue
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return specialised


def _check_unrecorded_writes(tracer):
    """A tensor the graph read and that changed afterwards without a recorded write (and was
    not read again, so ``_check_version`` did not see it) breaks the graph."""
    for vc, version in tracer.versions.values():
        if vc[0] != version:
            tracer.graph_break("an in-place change the tracer could not record (a direct "
                               "write such as fill_ or copy_)")
            return


def _check_writes_to_captured(tracer, graph):
    """An in-place write into a captured tensor (a global, or a factory's result the graph
    does not make again) would accumulate across replays: break instead."""
    producer = {v: n for n in graph.nodes for v in n.outputs}
    for n in graph.nodes:
        if n.kind != COPY:
            continue
        value, seen = n.inputs[0], set()
        while value in producer and value not in seen:
            seen.add(value)
            source = producer[value]
            if source.kind == GET_ATTR and source.params["name"].startswith("captured_"):
                tracer.graph_break("an in-place write into a tensor the function did not get "
                                   "as an argument or module attribute")
                return
            if not (source.inputs and _may_alias_first_input(source)):
                break
            value = source.inputs[0]


def _check_captured_gradients(tracer, attrs):
    """A gradient read inside the function (an optimiser step, gradient clipping) would be
    replayed from the tensor captured now, but ``.grad`` is a new tensor after each
    backward: break."""
    grads = {id(p._grad) for p in attrs if getattr(p, "_grad", None) is not None}
    grads.update(id(t._grad) for t in tracer.captured.values()
                 if getattr(t, "_grad", None) is not None)
    if any(id(t) in grads for t in tracer.captured.values()):
        tracer.graph_break("a parameter's .grad read inside the compiled function")


_RANDOM_NAMES = frozenset([f"ember.{n}" for n in _RANDOM_FACTORIES]
                          + ["nn.functional.dropout_mask"])
_FRESH_CALLS = _RANDOM_NAMES | {"ember.zeros", "ember.ones", "ember.empty", "ember.full",
                                "ember.arange", "ember.zeros_like", "ember.ones_like",
                                "ember.full_like", "ember.empty_like", "method:new_zeros",
                                "method:new_ones", "method:new_full", "method:new_empty"}


def _may_alias_first_input(node):
    """Whether ``node``'s output may share memory with its first input (a view, detach, an
    in-place write, or a call that is not known to make a new tensor)."""
    if node.kind == OP:
        return bool(node.op.view) or node.op.name == "detach"
    if node.kind == CALL:
        return node.params["fn"] not in _FRESH_CALLS
    return node.kind == COPY


class InGradMode:
    """A node's callable run in the grad mode it was traced in (``with no_grad():`` inside a
    compiled function: its operations must not record a backward when replayed).

    Example::

        >>> double = InGradMode(lambda t: t * 2, enabled=False)
        >>> double(ember.ones(1, requires_grad=True)).requires_grad
        False
    """

    def __init__(self, function, enabled):
        self.function = function
        self.enabled = enabled
        self.__name__ = getattr(function, "name", None) or getattr(function, "__name__", "fn")

    def __call__(self, *args, **kwargs):
        saved = grad_mode.state.enabled
        grad_mode.state.enabled = self.enabled
        try:
            return self.function(*args, **kwargs)
        finally:
            grad_mode.state.enabled = saved


def _one_recorded_mode(tracer, graph):
    """The grad mode every computing node was recorded in, when it is one mode other than
    the call's (a function decorated with ``@no_grad()``): the whole graph then runs in it,
    and its nodes stay primitives that the passes can fuse."""
    computing = [n for n in graph.nodes if n.kind not in (GET_ATTR, "constant")]
    modes = {tracer.modes.get(id(n)) for n in computing}
    if len(modes) == 1 and None not in modes:
        return modes.pop()
    return None


def _run_in_recorded_modes(tracer, graph):
    """Turn the nodes recorded under another grad mode into calls that set it."""
    from ..ops._registry import assign_inplace

    for n in graph.nodes:
        enabled = tracer.modes.get(id(n))
        if enabled is None:
            continue
        if n.kind == OP and not n.op.multi_output:
            args = [{"v": i} for i in range(len(n.inputs))]
            kwargs = {k: {"c": v} for k, v in n.params.items()}
            n.kind, n.op = CALL, InGradMode(n.op, enabled)
            n.params = {"fn": f"grad_mode.{n.op.__name__}", "args": args, "kwargs": kwargs}
        elif n.kind == COPY:
            n.kind, n.op = CALL, InGradMode(assign_inplace, enabled)
            n.params = {"fn": "grad_mode.copy_", "args": [{"v": 0}, {"v": 1}],
                        "kwargs": {"check_dtype": {"c": False}}}
        elif n.kind == CALL:
            n.op = InGradMode(n.op, enabled)
        elif n.kind not in (GET_ATTR,):
            tracer.graph_break("an operation with several results inside a block with "
                               "another grad mode")


_DATA_DEPENDENT = {}  # id(op) -> (op, whether its meta rule cannot tell the result's shape)


def _shape_depends_on_data(node):
    """Whether ``node``'s primitive gives a result whose shape depends on its inputs' values:
    its meta rule (shapes from shapes) refuses to say."""
    op = node.op
    known = _DATA_DEPENDENT.get(id(op))
    if known is not None and known[0] is op:
        return known[1]
    import numpy as np

    from .. import _dtype

    stand_ins = [np.broadcast_to(np.zeros((), _dtype._dtype_by_name(v.dtype).np), v.shape)
                 for v in node.inputs]
    try:
        op.meta(*stand_ins, **node.params)
        answer = False
    except NotImplementedError:
        answer = True
    except Exception:  # noqa: BLE001 - a meta rule that cannot run on stand-ins: no answer
        answer = False
    _DATA_DEPENDENT[id(op)] = (op, answer)
    return answer


def _guard_data_dependent_shapes(tracer, graph):
    """Follow each operator whose result's shape depends on the data by a guard on the
    traced shape (the later nodes, and any size read from it, assume it); a call whose
    data gives another shape runs eagerly. An in-place write before such a guard would be
    done twice then: the capture breaks instead."""
    nodes, written = [], False
    for n in graph.nodes:
        nodes.append(n)
        written = written or n.kind == COPY
        if n.kind != OP or n.op.meta is None or not _shape_depends_on_data(n):
            continue
        if written:
            tracer.graph_break(f"{n.op.name}: a result whose shape depends on the data, "
                               "after an in-place write")
            return
        for v in n.outputs:
            guard = graph.new_value((), "bool")
            nodes.append(Node(CALL, expect_shape, [v], {
                "fn": "guard.expect_shape", "args": [{"v": 0}, {"c": tuple(v.shape)}],
                "kwargs": {}}, [guard]))
            tracer.guards.append(guard)
    graph.nodes = nodes
