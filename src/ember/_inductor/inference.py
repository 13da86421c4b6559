"""Inference passes of the ``inductor`` backend: what a graph that never needs a backward
through its parameters can compute once, at compile time.

A value computed from parameters, buffers and constants alone (a *parameter-only* value) is
the same at every call while those tensors are unchanged. When the graph runs without grad
(or none of those tensors requires grad) three rewrites pay off:

* **BatchNorm folding.** Eval-mode BatchNorm reaches the graph as ``y * scale + shift`` with a
  per-channel parameter-only ``scale`` and ``shift``. A per-channel scale of a convolution's
  output is a scale of the convolution's weight (``conv(x, w) * s == conv(x, w * s)`` channel
  by channel), and of a matrix product's columns likewise (``x @ m * s == x @ (m * s)``);
  a scale of ``y + b`` is ``y * s + b * s``, and two per-channel shifts add up. After these
  rewrites a Conv-BN pair is one convolution with a shift.
* **Parameter-only constant folding.** Each parameter-only value that a call-dependent node
  reads is computed once and read by name (a ``get_attr`` of the compiled graph). The fold
  remembers the version counter and storage of every tensor it read: a call that finds one
  changed (an optimiser step, ``load_state_dict``, ``p.data = ...``) computes the folded
  values again before it runs. (Replacing a parameter object changes the module guard:
  that recompiles.)
* **Convolution, shift and ReLU in one step.** A convolution followed by a per-channel shift
  and/or ReLU writes both into its own fresh output buffer, in place, instead of making one
  new tensor per step.

Example::

    >>> from ember._inductor.capture import capture
    >>> net = ember.nn.Sequential(ember.nn.Conv2d(1, 2, 1), ember.nn.BatchNorm2d(2)).eval()
    >>> with ember.no_grad():
    ...     found = capture(net, [ember.ones(1, 1, 2, 2)])
    >>> graph = found.graph
    >>> folded = fold_for_inference(graph, found.captured, grad_enabled=False)
    >>> [n.params["fn"] for n in graph.nodes if n.kind == "call"]
    ['inductor.conv_bias_relu']
"""

from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from ..autograd import grad_mode
from ..jit._ir import CALL, CONSTANT, COPY, FUSED, GET_ATTR, OP, Node
from ..jit._passes import eliminate_dead_code
from ..jit._tracer import paused
from ..ops._registry import registry, wrap
from .capture import GuardFailed

__all__ = ["fold_for_inference", "FoldedParameters", "ConvBiasReLU", "parameter_only"]

_FLOATS = ("float16", "bfloat16", "float32", "float64")
_OWN = "inductor."  # the prefix of the calls these passes make


def _op(name):
    return registry[name][0]


# ---------------------------------------------------------------- which values fold


def _written_roots(graph):
    """Values an in-place write reaches (its target and what the target is a view of)."""
    producer = {v: n for n in graph.nodes for v in n.outputs}
    written = set()
    for n in graph.nodes:
        if n.kind != COPY:
            continue
        value = n.inputs[0]
        while value is not None and value not in written:
            written.add(value)
            source = producer.get(value)
            value = source.inputs[0] if source is not None and source.inputs else None
    return written


def _foldable_node(n):
    if n.kind == OP:
        return bool(n.inputs) and n.op.kind != "random"
    if n.kind == FUSED:
        return True
    return n.kind == CALL and n.params["fn"].startswith(_OWN)


def parameter_only(graph, attrs, grad_enabled):
    """The values of ``graph`` computed from parameters, buffers and constants alone, and
    that the fold may compute once: none is written in place, and with grad on none depends
    on a tensor that requires grad.

    Example::

        >>> from ember._inductor.capture import capture
        >>> w = ember.ones(2)
        >>> found = capture(lambda x: x * (w + 1), [ember.ones(2)])
        >>> len(parameter_only(found.graph, found.captured, grad_enabled=False))
        3
    """
    written = _written_roots(graph)
    known = set()
    for n in graph.nodes:
        if any(v in written for v in n.outputs):
            continue
        if n.kind == CONSTANT:
            known.update(n.outputs)
        elif n.kind == GET_ATTR:
            t = attrs.get(n.params["name"])
            if t is not None and not (grad_enabled and t.requires_grad):
                known.update(n.outputs)
        elif _foldable_node(n) and all(v in known for v in n.inputs):
            known.update(n.outputs)
    return known


# ---------------------------------------------------------------- BatchNorm folding


def _padded(shape, ndim):
    return (1,) * (ndim - len(shape)) + tuple(shape)


def _fits(small, out):
    """Whether ``small`` broadcasts against ``out`` without enlarging it."""
    if small.shape is None or out.shape is None or len(small.shape) > len(out.shape):
        return False
    return all(s == 1 or s == o for s, o in zip(_padded(small.shape, len(out.shape)),
                                                 out.shape))


def _per_channel(small, out):
    """Whether ``small`` varies, against ``out``, only along dim 1 (the channels of a
    convolution's output, the columns of a matrix product's)."""
    if not _fits(small, out) or small.dtype != out.dtype or len(out.shape) < 2:
        return False
    return all(s == 1 for i, s in enumerate(_padded(small.shape, len(out.shape))) if i != 1)


def _scale_out_channels(w, s):
    """``w`` (Cout, ...) with each output channel multiplied by its entry of ``s``."""
    return w * s.reshape((-1,) + (1,) * (w.dim() - 1))


class _Rewriter:
    """The algebraic rewrites that move a per-channel scale into a convolution's weight or
    a matrix product's right operand (see the module docstring)."""

    def __init__(self, graph, known):
        self.graph = graph
        self.known = known

    def run(self):
        changed = True
        while changed:
            self._index()
            changed = any(self._rewrite(n) for n in list(self.graph.nodes))
        return self.graph

    def _index(self):
        self.producer = {v: n for n in self.graph.nodes for v in n.outputs}
        self.uses = self.graph.use_counts()

    def _split(self, n):
        """``(data, parameter)`` operands of a binary node with one parameter-only operand."""
        if len(n.inputs) != 2 or n.params:
            return None
        a, b = n.inputs
        if (a in self.known) == (b in self.known):
            return None
        return (a, b) if b in self.known else (b, a)

    def _single_producer(self, v, name):
        source = self.producer.get(v)
        if source is None or source.kind != OP or source.op.name != name or \
                self.uses.get(v) != 1:
            return None
        return source

    def _rewrite(self, n):
        if n.kind != OP or n.op.name not in ("mul", "add") or \
                n.outputs[0].dtype not in _FLOATS:
            return False
        split = self._split(n)
        if split is None:
            return False
        y, s = split
        out = n.outputs[0]
        if n.op.name == "add":
            return self._merge_shifts(n, y, s, out)
        return self._scale_into_weight(n, y, s, out) or self._scale_through_shift(n, y, s, out)

    def _new(self, kind, op, inputs, params, like_shape, dtype):
        value = self.graph.new_value(like_shape, dtype)
        self.known.add(value)
        return Node(kind, op, inputs, params, [value]), value

    def _replace(self, old, new_nodes, removed=()):
        """Put ``new_nodes`` where ``old`` was and drop ``removed``."""
        drop = {id(m) for m in removed}
        nodes = []
        for m in self.graph.nodes:
            if m is old:
                nodes.extend(new_nodes)
            elif id(m) not in drop:
                nodes.append(m)
        self.graph.nodes = nodes

    def _scale_into_weight(self, n, y, s, out):
        """``conv(x, w) * s -> conv(x, w * s)``; ``mm(x, m) * s -> mm(x, m * s)``."""
        if y.shape != out.shape or not _per_channel(s, out):
            return False
        conv = self._single_producer(y, "convolution")
        if conv is not None and conv.inputs[1] in self.known and len(conv.inputs) == 2:
            w = conv.inputs[1]
            scale, value = self._new(CALL, _scale_out_channels, [w, s], {
                "fn": "inductor.scale_out_channels", "args": [{"v": 0}, {"v": 1}],
                "kwargs": {}}, w.shape, w.dtype)
        else:
            conv = self._single_producer(y, "mm")
            if conv is None or conv.inputs[1] not in self.known:
                return False
            w = conv.inputs[1]
            scale, value = self._new(OP, _op("mul"), [w, s], {}, w.shape, w.dtype)
        # the scale may be computed after the convolution: both move to the product's place
        conv.inputs = [conv.inputs[0], value]
        conv.outputs = [out]
        self._replace(n, [scale, conv], removed=[conv])
        return True

    def _scale_through_shift(self, n, y, s, out):
        """``(y + b) * s -> y * s + b * s`` for a parameter-only ``b``."""
        shift = self._single_producer(y, "add")
        if shift is None or not _fits(s, out):
            return False
        split = self._split(shift)
        if split is None:
            return False
        z, b = split
        if z.shape != out.shape:
            return False
        shape = tuple(np.broadcast_shapes(tuple(b.shape), tuple(s.shape)))
        scaled = self.graph.new_value(out.shape, out.dtype)
        mul_b, b_scaled = self._new(OP, _op("mul"), [b, s], {}, shape, out.dtype)
        new = [Node(OP, _op("mul"), [z, s], {}, [scaled]), mul_b,
               Node(OP, _op("add"), [scaled, b_scaled], {}, [out])]
        self._replace(n, new, removed=[shift])
        return True

    def _merge_shifts(self, n, y, b2, out):
        """``(y + b1) + b2 -> y + (b1 + b2)`` for parameter-only ``b1`` and ``b2``."""
        inner = self._single_producer(y, "add")
        if inner is None or not _fits(b2, out):
            return False
        split = self._split(inner)
        if split is None or split[0].shape != out.shape:
            return False
        z, b1 = split
        shape = tuple(np.broadcast_shapes(tuple(b1.shape), tuple(b2.shape)))
        add_b, both = self._new(OP, _op("add"), [b1, b2], {}, shape, out.dtype)
        self._replace(n, [add_b, Node(OP, _op("add"), [z, both], {}, [out])],
                      removed=[inner])
        return True


# ---------------------------------------------------------------- folding parameters


def _run_node(n, env):
    """Evaluate one node of the fold on the tensors of ``env``."""
    args = [env[v] for v in n.inputs]
    if n.kind == CALL:
        templates = n.params
        result = n.op(*[args[t["v"]] if "v" in t else t["c"] for t in templates["args"]],
                      **{k: args[t["v"]] if "v" in t else t["c"]
                         for k, t in templates["kwargs"].items()})
    else:
        result = n.op(*args, **(n.params if n.kind == OP else {}))
    results = result if n.kind == OP and n.op.multi_output else (result,)
    for v, t in zip(n.outputs, results):
        env[v] = t


class FoldedParameters:
    """The parameter-only part of a graph, computed once: the nodes to compute, the tensors
    they read, and the attribute names that hold their results. :meth:`refresh` computes
    them again when one of the tensors read changed in place since.

    Example::

        >>> from ember._inductor.capture import capture
        >>> w = ember.ones(2)
        >>> found = capture(lambda x: x * (w + 1), [ember.ones(2)])
        >>> folded = fold_for_inference(found.graph, found.captured, grad_enabled=False)
        >>> with ember.no_grad():
        ...     _ = w.mul_(3)
        >>> folded.refresh()
        >>> found.captured[folded.results[0][1]]
        tensor([4., 4.])
    """

    def __init__(self, graph, attrs, program, leaves, results, grad_enabled):
        self.graph = graph
        self.attrs = attrs
        self.program = program    # the nodes to evaluate, in graph order
        self.leaves = leaves      # [(value, "attr" | "constant", name)]
        self.results = results    # [(value, constant name)]
        self.grad_enabled = grad_enabled
        self.state = ()

    def _leaf_tensors(self):
        return [self.attrs[name] if kind == "attr" else self.graph.constants[name]
                for _, kind, name in self.leaves]

    def compute(self):
        """Evaluate the program and store its results under their attribute names."""
        tensors = self._leaf_tensors()
        env = {v: t for (v, _, _), t in zip(self.leaves, tensors)}
        with paused(), grad_mode.no_grad():
            for n in self.program:
                _run_node(n, env)
        for v, name in self.results:
            self.attrs[name] = env[v]
        self.state = tuple((t, t._vc[0], t._data) for t in tensors)

    def refresh(self):
        """Compute again if a tensor read changed (version counter or storage); with grad on,
        a tensor that now requires grad makes the call run eagerly (``GuardFailed``)."""
        for t, version, data in self.state:
            if t._vc[0] != version or t._data is not data:
                self.compute()
                break
        if self.grad_enabled and grad_mode.state.enabled and \
                any(t.requires_grad for t, _, _ in self.state):
            raise GuardFailed

    def guard(self, run):
        """``run`` preceded by :meth:`refresh`."""
        def run_folded(tensors):
            self.refresh()
            return run(tensors)
        return run_folded


def _fold_parameters(graph, attrs, known, grad_enabled):
    producer = {v: n for n in graph.nodes for v in n.outputs}
    """Replace each parameter-only value read by a node that is not parameter-only with a
    graph constant computed now; return the :class:`FoldedParameters` (None: nothing)."""
    def folds(n):
        return bool(n.outputs) and all(v in known for v in n.outputs)
    boundary = []
    for n in graph.nodes:
        if folds(n):
            continue
        for v in n.inputs:
            if v in known and v not in boundary and \
                    producer[v].kind not in (GET_ATTR, CONSTANT):
                boundary.append(v)
    if not boundary:
        return None
    needed, stack = set(), list(boundary)
    while stack:
        v = stack.pop()
        if v in needed:
            continue
        needed.add(v)
        stack.extend(producer[v].inputs)
    program, leaves = [], []
    for n in graph.nodes:
        if not any(v in needed for v in n.outputs):
            continue
        if n.kind in (GET_ATTR, CONSTANT):
            leaves.append((n.outputs[0], "attr" if n.kind == GET_ATTR else "constant",
                           n.params["name"]))
        else:
            program.append(n)
    # the results are read as attributes (by name), not constants: a refresh may give two
    # results that were equal at compile time different values, so none may be merged
    results, rename = [], {}
    for v in boundary:
        name = _fresh_name(attrs)
        attrs[name] = None
        results.append((v, name))
        read = graph.new_value(v.shape, v.dtype)
        rename[v] = (read, Node(GET_ATTR, None, [], {"name": name}, [read]))
    nodes = [rename[v][1] for v in boundary]
    for n in graph.nodes:
        if not folds(n):
            n.inputs = [rename[v][0] if v in rename else v for v in n.inputs]
        nodes.append(n)
    graph.nodes = nodes
    folded = FoldedParameters(graph, attrs, program, leaves, results, grad_enabled)
    folded.compute()
    return folded


def _fresh_name(attrs):
    k = len(attrs)
    while f"inductor_folded{k}" in attrs:
        k += 1
    return f"inductor_folded{k}"


# ---------------------------------------------------------------- convolution + shift + relu


class ConvBiasReLU:
    """A convolution whose fresh output gets, in place, a per-channel shift, then another
    tensor of its shape added (a residual connection), then a ReLU; each step optional.
    When autograd must record (grad on and an input that requires grad), or on a device
    other than the CPU, it runs the operators one by one.

    Example::

        >>> step = ConvBiasReLU(ember.nn._functional.conv.convolution_op, relu=True)
        >>> x, w = ember.ones(1, 1, 1, 1), -ember.ones(1, 1, 1, 1)
        >>> step(x, w, None, None, stride=(1, 1), padding=((0, 0), (0, 0)),
        ...      dilation=(1, 1), groups=1)
        tensor([[[[0.]]]])
    """

    __name__ = "conv_bias_relu"

    def __init__(self, conv, relu):
        self.conv = conv
        self.relu = relu
        # set by _keep_blocked: every reader is a step like this one, so oneDNN's result may
        # stay in oneDNN's layout (a ``Blocked``, never seen outside these steps)
        self.blocked_out = False

    def __call__(self, x, w, bias, residual, **conv_params):
        if not (grad_mode.state.enabled and any(isinstance(t, Tensor) and t.requires_grad
                                                for t in (x, w, bias, residual))):
            y = _onednn_step(x, w, bias, residual, self.relu, self.blocked_out, conv_params)
            if y is not None:
                return y
        x, residual = _plain(x, w), _plain(residual, w)
        y = self.conv(x, w, **conv_params)
        data = y._data
        others = [t for t in (bias, residual) if t is not None]
        if (grad_mode.state.enabled and any(t.requires_grad for t in [x, w] + others)) or \
                not isinstance(data, np.ndarray) or \
                any(t._data.dtype != data.dtype for t in others):
            for t in others:
                y = _op("add")(y, t)
            return _op("_relu")(y) if self.relu else y
        for t in others:
            np.add(data, t._data, out=data)
        if self.relu:
            np.maximum(data, 0, out=data)
        return y


def _onednn_step(x, w, bias, residual, relu, blocked_out, conv_params):
    """The whole step as one oneDNN primitive with post-ops (``_onednn_fused.py``) for
    float32 CPU tensors; None where that does not apply. The weight's reordered copy is kept
    while its version counter stays the same (folded weights change only when recomputed).
    ``x`` and ``residual`` may be earlier steps' ``Blocked`` results; with ``blocked_out``
    the result is one too."""
    from ..nn._functional._onednn_fused import Blocked, conv_bias_sum_relu

    tensors = [t for t in (x, w, bias, residual) if t is not None and not isinstance(t, Blocked)]
    if any(not isinstance(t._data, np.ndarray) or t._data.dtype != np.float32 for t in tensors):
        return None
    channels = w._data.shape[0]
    shift = None
    if bias is not None:
        shift = bias._data.reshape(-1)
        if shift.size not in (1, channels):
            return None
        shift = np.broadcast_to(shift, (channels,))
    out = conv_bias_sum_relu(_array(x), w._data, shift, _array(residual), relu,
                             weight_key=(id(w._vc), w._vc[0]), blocked_out=blocked_out,
                             **conv_params)
    if out is None or not isinstance(out, np.ndarray):
        return out
    return wrap(out, w._device)


def _array(value):
    """A tensor's array; a ``Blocked`` result and None as they are."""
    return value._data if isinstance(value, Tensor) else value


def _plain(value, like):
    """``value`` as a tensor on ``like``'s device (a ``Blocked`` result reordered back)."""
    if value is None or isinstance(value, Tensor):
        return value
    return wrap(value.plain(), like._device)


def _keep_blocked(graph):
    """Let each convolution step whose result only other convolution steps read (as their
    input or residual, never as a graph output) keep that result in oneDNN's layout: the
    reorder out of it and the next step's reorder back into it are skipped. Returns how many.

    Example::

        >>> from ember.jit._ir import Graph
        >>> _keep_blocked(Graph())
        0
    """
    steps = {id(n) for n in graph.nodes if n.kind == CALL and isinstance(n.op, ConvBiasReLU)}
    readers = {}
    for n in graph.nodes:
        for position, v in enumerate(n.inputs):
            readers.setdefault(v, []).append((n, position))
    outputs = set(graph.output_values())
    kept = 0
    for n in graph.nodes:
        if id(n) not in steps or n.outputs[0] in outputs:
            continue
        uses = readers.get(n.outputs[0], ())
        if uses and all(id(m) in steps and position in _layout_free_inputs(m)
                        for m, position in uses):
            n.op.blocked_out = True
            kept += 1
    return kept


def _layout_free_inputs(step):
    """The input positions of a convolution step that may be ``Blocked``: the convolution's
    input and the residual (not the weight or the shift)."""
    residual = step.params["args"][3]
    return {0} if "v" not in residual else {0, residual["v"]}


def _fuse_conv_steps(graph, known):
    """``relu(conv(x, w) + b + r)`` with each of the shift ``b`` (parameter-only, per
    channel), the residual ``r`` (of the output's shape) and the ReLU optional becomes one
    :class:`ConvBiasReLU` call."""
    uses = graph.use_counts()
    consumer = {v: n for n in graph.nodes for v in n.inputs}
    removed, fused, made = set(), {}, 0
    for conv in list(graph.nodes):
        if conv.kind != OP or conv.op.name != "convolution" or len(conv.inputs) != 2 or \
                id(conv) in removed:
            continue
        out, last = conv.outputs[0], conv

        def next_step():
            step = consumer.get(out) if uses.get(out) == 1 else None
            return None if step is None or id(step) in removed or step.kind != OP or \
                step.params else step

        def addend(step, wanted):
            if step is None or step.op.name != "add" or len(step.inputs) != 2 or \
                    sum(v is out for v in step.inputs) != 1 or \
                    step.outputs[0].shape != out.shape:
                return None
            other = step.inputs[1] if step.inputs[0] is out else step.inputs[0]
            shift = other in known and _per_channel(other, out)
            same = other.shape == out.shape and other.dtype == out.dtype
            return other if (shift if wanted == "shift" else same) else None
        found = {}
        for wanted in ("shift", "residual"):
            step = next_step()
            other = addend(step, wanted)
            if other is not None:
                found[wanted], last, out = other, step, step.outputs[0]
                removed.add(id(step))
        step = next_step()
        relu = step is not None and step.op.name in ("_relu", "relu")
        if relu:
            removed.add(id(step))
            last = step
        if not found and not relu:
            continue
        # at the place of the last step: the shift and the residual may be computed after
        # the convolution
        inputs, args = list(conv.inputs), [{"v": 0}, {"v": 1}]
        for wanted in ("shift", "residual"):
            if wanted in found:
                args.append({"v": len(inputs)})
                inputs.append(found[wanted])
            else:
                args.append({"c": None})
        params = {"fn": "inductor.conv_bias_relu", "args": args,
                  "kwargs": {k: {"c": v} for k, v in conv.params.items()}}
        fused[id(last)] = Node(CALL, ConvBiasReLU(conv.op, relu), inputs, params,
                               last.outputs)
        removed.add(id(conv))
        made += 1
    graph.nodes = [fused.get(id(n), n) for n in graph.nodes
                   if id(n) not in removed or id(n) in fused]
    return made


# ---------------------------------------------------------------- the pass


def fold_for_inference(graph, attrs, grad_enabled):
    """The inference passes on ``graph`` in place (module docstring); ``attrs`` maps its
    ``get_attr`` names to the live tensors. Returns the :class:`FoldedParameters` the
    compiled callable must refresh before each call, or None when nothing was folded.
    A graph that writes into its parameters or buffers (BatchNorm in training mode updates
    its running statistics) keeps those reads unfolded.

    Example::

        >>> from ember._inductor.capture import capture
        >>> w = ember.ones(2)
        >>> found = capture(lambda x: x * (w + 1), [ember.ones(2)])
        >>> fold_for_inference(found.graph, found.captured, grad_enabled=False) is None
        False
    """
    known = parameter_only(graph, attrs, grad_enabled)
    if not known:
        return None
    _Rewriter(graph, known).run()
    eliminate_dead_code(graph)
    known = parameter_only(graph, attrs, grad_enabled)
    folded = _fold_parameters(graph, attrs, known, grad_enabled)
    eliminate_dead_code(graph)
    if not grad_enabled:
        _fuse_conv_steps(graph, known | {n.outputs[0] for n in graph.nodes
                                         if n.kind in (GET_ATTR, CONSTANT)})
        _keep_blocked(graph)
    return folded
