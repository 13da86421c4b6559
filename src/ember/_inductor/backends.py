"""Backends: what turns a captured graph into the callable a compiled function runs.

* ``"eager"`` and ``"aot_eager"``: the captured graph as it is, run as generated
  straight-line code (``replay.py``; ``jit``'s ``run_graph`` interprets graphs with script
  blocks): each node calls its ember operator, so autograd records the backward as in eager
  code;
* ``"inductor"`` (the default): the graph after the inference passes (BatchNorm folded into
  the convolution before it, parameter-only values computed once, convolution + shift + ReLU
  in one step: ``inference.py``), dead-code elimination, common-subexpression
  elimination, constant folding and fusion of element-wise chains into one kernel per chain,
  whose derivative walks the chain backwards on arrays (``fusion.py``);
* a callable: torch's custom-backend protocol. It gets an :class:`ember.fx.GraphModule`
  whose nodes call ember's primitives (the flattened tensor arguments are its placeholders,
  parameters and captured tensors its attributes) and the example inputs, and returns a
  callable that the compiled function calls with the flattened tensors.

Example::

    >>> sorted(list_backends(exclude_tags=()))
    ['aot_eager', 'eager', 'inductor']
"""

from __future__ import annotations

from ..jit._ir import CALL, CONSTANT, COPY, GET_ATTR, OP, map_tree
from ..jit._module import _Plan, run_graph

__all__ = ["lookup_backend", "list_backends", "interpret", "optimize", "simplify"]


def interpret(graph, attrs):
    """A callable running ``graph`` on a list of tensors; ``attrs`` maps ``get_attr`` names
    to live tensors.

    Example::

        >>> from ember._inductor.capture import capture
        >>> found = capture(lambda x: x + 1, [ember.ones(1)])
        >>> interpret(found.graph, found.captured)([ember.zeros(1)])
        (tensor([1.]),)
    """
    from .replay import can_generate, generate

    if can_generate(graph):  # straight-line code (replay.py); script's blocks interpret
        return generate(graph, attrs)
    plan = _Plan(graph)
    read = attrs.__getitem__
    constants = graph.constants

    def run(tensors):
        return run_graph(plan, tensors, read, constants)
    return run


def optimize(graph):
    """The inductor passes, in place: DCE, CSE, constant folding, element-wise fusion (the
    fused chains with a derivative, ``fusion.py``).

    Example::

        >>> from ember._inductor.capture import capture
        >>> graph = capture(lambda x: (x * 2).exp().neg(), [ember.ones(3)]).graph
        >>> [n.kind for n in optimize(graph).nodes if n.kind != "get_attr"]
        ['fused']
    """
    from ..jit._passes import fuse_elementwise
    from .fusion import make_trainable

    simplify(graph)
    fuse_elementwise(graph)
    make_trainable(graph)
    return graph


def simplify(graph):
    """The passes every compiled graph gets before fusion, in place: dead-code elimination,
    common-subexpression elimination, constant folding.

    Example::

        >>> from ember._inductor.capture import capture
        >>> graph = capture(lambda x: (x.exp(), x + 1)[1], [ember.ones(3)]).graph
        >>> [n.op.name for n in simplify(graph).op_nodes()]  # the unused exp is gone
        ['add']
    """
    from ..jit._passes import (
        eliminate_common_subexpressions,
        eliminate_dead_code,
        fold_constants,
    )

    eliminate_dead_code(graph)
    eliminate_common_subexpressions(graph)
    fold_constants(graph)
    return graph


def _eager(graph, attrs, example_inputs):
    return interpret(graph, attrs)


def _inductor(graph, attrs, example_inputs):
    from ..autograd import grad_mode
    from .inference import fold_for_inference

    if grad_mode.state.enabled and _trains(graph, attrs, example_inputs):
        joint = _joint(graph, attrs, example_inputs)
        if joint is not None:
            return joint
    folded = fold_for_inference(graph, attrs, grad_mode.state.enabled)
    run = interpret(optimize(graph), attrs)
    return run if folded is None else folded.guard(run)


def _trains(graph, attrs, example_inputs):
    """Whether a call of ``graph`` would record autograd nodes: an input or a parameter it
    reads requires grad."""
    return any(t.requires_grad for t in example_inputs) or any(
        attrs[n.params["name"]].requires_grad for n in graph.nodes if n.kind == GET_ATTR)


def _joint(graph, attrs, example_inputs):
    """The joint forward-backward graph's callable (``joint.py``), falling back to the
    replay with autograd recording for calls it does not fit; None (with the reason under
    ``EMBER_LOGS=aot``) when the joint graph cannot serve ``graph``."""
    from ..jit._passes import clone_graph
    from .joint import JointUnsupported, compile_joint
    from .state import log, log_enabled

    replay = []

    def fallback(tensors):
        if not replay:
            replay.append(interpret(optimize(clone_graph(graph)), attrs))
        return replay[0](tensors)
    try:
        run = compile_joint(clone_graph(graph), attrs, example_inputs, fallback)
        if log_enabled("graph_code"):
            log.info("joint graph, generated code:\n%s\n%s", run.forward.source,
                     run.backward.source)
        return run
    except Exception as reason:  # noqa: BLE001 (anything the trace meets: eager autograd)
        if log_enabled("aot"):
            why = reason if isinstance(reason, JointUnsupported) else \
                f"tracing the backward raised {type(reason).__name__}: {reason}"
            log.info("no joint forward-backward graph (the backward runs eager autograd "
                     "nodes): %s", why)
        return None


_BACKENDS = {"eager": _eager, "aot_eager": _eager, "inductor": _inductor}


def list_backends(exclude_tags=("debug", "experimental")):
    """The names ``backend=`` accepts (torch lists ``eager``/``aot_eager`` only with the
    ``debug`` tag included).

    Example::

        >>> list_backends()
        ['inductor']
    """
    debug = ("eager", "aot_eager")
    exclude = set(exclude_tags or ())
    return sorted(name for name in _BACKENDS if not ("debug" in exclude and name in debug))


def lookup_backend(backend):
    """The function ``(graph, attrs, example_inputs) -> callable`` for ``backend`` (a name or
    a user's callable taking ``(GraphModule, example_inputs)``).

    Example::

        >>> lookup_backend("eager") is lookup_backend("aot_eager")
        True
    """
    if callable(backend):
        return _custom(backend)
    if not isinstance(backend, str) or backend not in _BACKENDS:
        from .state import InvalidBackend

        raise InvalidBackend(f"Invalid backend: {backend!r}, see "
                                   "`ember._dynamo.list_backends()` for available backends.")
    return _BACKENDS[backend]


def _custom(backend):
    def compile_with(graph, attrs, example_inputs):
        gm = to_fx(graph, attrs)
        compiled = backend(gm, list(example_inputs))
        if not callable(compiled):
            from .state import TorchDynamoException

            raise TorchDynamoException(f"compiler_fn did not return callable: {compiled!r}")

        def run(tensors):
            return compiled(*tensors)
        return run
    return compile_with


def to_fx(graph, attrs):
    """An :class:`ember.fx.GraphModule` computing ``graph``: placeholders for its inputs,
    ``get_attr`` for parameters, buffers and constants, one ``call_function`` per node.

    Example::

        >>> from ember._inductor.capture import capture
        >>> found = capture(lambda x: x.relu(), [ember.ones(2)])
        >>> to_fx(found.graph, found.captured)(ember.tensor([-1.0, 2.0]))
        (tensor([0., 2.]),)
    """
    from .. import fx
    from ..ops._registry import assign_inplace

    fx_graph = fx.Graph()
    env, root = {}, {}
    for i, v in enumerate(graph.inputs):
        env[v] = fx_graph.placeholder(f"arg{i}")
    for n in graph.nodes:
        if n.kind in (GET_ATTR, CONSTANT):
            name = n.params["name"]
            target = name if n.kind == GET_ATTR else f"constant_{name}"
            root[target] = attrs[name] if n.kind == GET_ATTR else graph.constants[name]
            env[n.outputs[0]] = fx_graph.get_attr(target)
        elif n.kind == COPY:
            env[n.outputs[0]] = fx_graph.call_function(
                assign_inplace, (env[n.inputs[0]], env[n.inputs[1]]), {"check_dtype": False},
                name="copy_")
        elif n.kind == CALL:
            args, kwargs = n.params["args"], n.params["kwargs"]

            def arg(t):
                return env[n.inputs[t["v"]]] if "v" in t else t["c"]
            env[n.outputs[0]] = fx_graph.call_function(
                n.op, tuple(arg(t) for t in args), {k: arg(t) for k, t in kwargs.items()},
                name=n.params["fn"].rsplit(".", 1)[-1].replace(":", "_"))
        else:  # OP and FUSED
            node = fx_graph.call_function(_as_function(n.op), tuple(env[v] for v in n.inputs),
                                          dict(n.params) if n.kind == OP else {},
                                          name=n.op.name)
            if n.kind == OP and n.op.multi_output:
                import operator

                for i, v in enumerate(n.outputs):
                    env[v] = fx_graph.call_function(operator.getitem, (node, i))
            else:
                env[n.outputs[0]] = node
    fx_graph.output(map_tree(graph.output, env.__getitem__))
    return fx.GraphModule(root, fx_graph)



_FUNCTIONS = {}


def _as_function(op):
    """A plain function calling the primitive ``op`` and named after it, for fx's code
    generation (an ``Op`` is a callable object without ``__name__``)."""
    function = _FUNCTIONS.get(id(op))
    if function is None or function.op is not op:
        def function(*args, **kwargs):
            return op(*args, **kwargs)
        function.__name__ = function.__qualname__ = op.name
        function.__module__ = "ember_primitives"
        function.op = op
        _FUNCTIONS[id(op)] = function
    return function
