"""``ember.onnx.export``: trace a model, map its primitives to ONNX, write a ModelProto.

The steps, one function each:

1. :func:`_traces` runs ``ember.jit.trace`` on the example inputs, and once more for each
   dynamic axis name with that axis twice as long (see ``_dims.py``);
2. :func:`_merge` lines the traces up node by node: sizes that differ become ``Dim``\\ s,
   anything else that differs means the graph depends on a dynamic size, which is refused;
3. :func:`_fold` evaluates, once, the nodes that read only weights and constants (weight
   transposes, BatchNorm's scale and shift);
4. :class:`_Emitter` maps the remaining nodes, each through its operator's ``onnx`` rule
   (``Op.defonnx``, written next to the op), and assembles the ONNX graph, with the weights
   as initializers.
"""

from __future__ import annotations

import contextlib
import enum
import os
import warnings

import numpy as np

from ..autograd import grad_mode
from ..jit._ir import CONSTANT, COPY, GET_ATTR, OP
from ..ops._onnx_rules import folds
from ._context import ExportContext, onnx_type
from ._dims import Dim, TraceMismatch, merge
from .errors import OnnxExporterError, SymbolicValueError, UnsupportedOperatorError

__all__ = ["TrainingMode", "OperatorExportTypes", "export", "export_model_proto",
           "is_in_onnx_export"]

MIN_OPSET, MAX_OPSET = 13, 20


class TrainingMode(enum.IntEnum):
    """The mode a model is exported in (torch.onnx.TrainingMode).

    Example::

        >>> ember.onnx.TrainingMode.EVAL
        <TrainingMode.EVAL: 0>
    """

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    """How operators without an ONNX form are exported (torch.onnx.OperatorExportTypes).

    ember maps every operator it exports to standard ONNX: ``ONNX`` and ``ONNX_ATEN_FALLBACK``
    (which only differs for operators with no ONNX form, which ember refuses) are accepted;
    the ATen-only forms raise NotImplementedError.

    Example::

        >>> ember.onnx.OperatorExportTypes.ONNX
        <OperatorExportTypes.ONNX: 0>
    """

    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


def _check_operator_export_type(kind):
    if OperatorExportTypes(kind) not in (OperatorExportTypes.ONNX,
                                         OperatorExportTypes.ONNX_ATEN_FALLBACK):
        raise NotImplementedError(
            f"torch.onnx.export(operator_export_type={OperatorExportTypes(kind).name}) writes "
            "ATen operators into the graph, which ember does not; export standard ONNX "
            "(OperatorExportTypes.ONNX)")


_exporting = []


def is_in_onnx_export():
    """Whether an ONNX export is running (a model may branch on it, as in torch).

    Example::

        >>> ember.onnx.is_in_onnx_export()
        False
    """
    return bool(_exporting)


def _require_onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError("ember.onnx.export needs the onnx package: pip install onnx "
                          "(or pip install ember[onnx])") from None
    return onnx


def export(model, args=(), f=None, *, kwargs=None, input_names=None, output_names=None,
           dynamic_axes=None, opset_version=17, export_params=True, do_constant_folding=True,
           keep_initializers_as_inputs=False, verbose=False, training=TrainingMode.EVAL,
           dynamo=False, operator_export_type=OperatorExportTypes.ONNX, dynamic_shapes=None,
           external_data=True, optimize=True):
    """Export ``model`` to the ONNX file ``f`` (a path or a binary file-like object).

    ``model`` (an ``ember.nn.Module``, a traced ``ember.jit.ScriptModule`` or a function)
    is traced with ``ember.jit.trace`` on ``args`` (a tensor or a tuple of tensors); each
    primitive it runs becomes one or a few ONNX operators, and its parameters and buffers
    become initializers named as in its ``state_dict``. The arguments are those of torch's
    TorchScript-based exporter (``dynamo=False``):

    * ``input_names`` / ``output_names``: names of the graph's inputs and outputs;
    * ``dynamic_axes``: ``{name: [axis, ...]}`` or ``{name: {axis: "symbol"}}`` for inputs
      and outputs whose sizes may change (a batch axis); see ``docs/onnx.md`` for the limits;
    * ``opset_version``: 13 to 20 (default 17);
    * ``export_params=False`` makes the parameters graph inputs instead of initializers;
    * ``do_constant_folding`` computes parts that depend only on weights ahead of time;
    * ``keep_initializers_as_inputs`` lists the initializers among the graph's inputs too;
    * ``training``: :class:`TrainingMode` (EVAL, the default, exports the model in eval
      mode and restores its mode afterwards);
    * ``operator_export_type``: :class:`OperatorExportTypes` (``ONNX``, the default, or
      ``ONNX_ATEN_FALLBACK``);
    * ``dynamo=True``: return an :class:`~ember.onnx.ONNXProgram` (and write ``f`` only if
      given, with the weights in ``<f>.data`` unless ``external_data=False``), as torch's
      newer exporter does; ember still exports by tracing, without folding weights (the
      parameters stay initializers named as in the state_dict). ``dynamic_shapes`` (per input,
      ``{axis: name or Dim}``) then names the dynamic axes; ``optimize`` is accepted (the
      trace is already folded). An :class:`~ember.onnx.ExportableModule` given without
      ``args`` is exported with its own example inputs and names.

    An operator without an ONNX mapping raises
    :class:`~ember.onnx.errors.UnsupportedOperatorError` naming it.

    Example::

        >>> net = ember.nn.Sequential(ember.nn.Linear(4, 2), ember.nn.ReLU())
        >>> ember.onnx.export(net, (ember.randn(3, 4),), "net.onnx", input_names=["x"],
        ...                   dynamic_axes={"x": {0: "batch"}})  # doctest: +SKIP
    """
    _check_operator_export_type(operator_export_type)
    from ._exportable import ExportableModule, _exportable_arguments

    options = {"input_names": input_names, "output_names": output_names,
               "dynamic_shapes": dynamic_shapes}
    if isinstance(model, ExportableModule) and not args:
        args, kwargs, options = _exportable_arguments(model, args, kwargs, options)
    if f is None and not dynamo:
        raise ValueError("ember.onnx.export needs f: a file path or a binary file-like object")
    if options["dynamic_shapes"] is not None and dynamic_axes is None:
        names = _input_names(_owner_of_forward(model), _as_inputs(args),
                             options["input_names"])
        dynamic_axes = _axes_from_dynamic_shapes(options["dynamic_shapes"], names)
    proto = export_model_proto(
        model, args, kwargs=kwargs, input_names=options["input_names"],
        output_names=options["output_names"], dynamic_axes=dynamic_axes,
        opset_version=opset_version, export_params=export_params,
        # a program keeps every parameter as an initializer named as in the state_dict
        # (for apply_weights), so it folds nothing into them
        do_constant_folding=do_constant_folding and not dynamo,
        keep_initializers_as_inputs=keep_initializers_as_inputs, training=training)
    if verbose:
        print(_graph_text(proto))
    if dynamo:
        from ._program import ONNXProgram

        program = ONNXProgram(proto)
        if isinstance(f, (str, os.PathLike)):
            program.save(f, keep_initializers_as_inputs=keep_initializers_as_inputs,
                         external_data=external_data)
        elif f is not None:  # a file object: one stream, the weights inside
            f.write(proto.SerializeToString())
        return program
    data = proto.SerializeToString()
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as file:
            file.write(data)
    else:
        f.write(data)


def _axes_from_dynamic_shapes(dynamic_shapes, names):
    """torch.export-style ``dynamic_shapes`` (per input, or by input name: ``{axis: name or
    Dim}`` or a list of axes) as ``dynamic_axes`` keyed by the graph's input names."""
    if isinstance(dynamic_shapes, dict):
        per_input = [dynamic_shapes.get(name) for name in names]
    else:
        per_input = list(dynamic_shapes)
    axes = {}
    for name, spec in zip(names, per_input):
        if not spec:
            continue
        if isinstance(spec, (list, tuple)):
            spec = {axis: None for axis in spec}
        axes[name] = {int(axis): _axis_name(name, axis, dim) for axis, dim in spec.items()}
    return axes


def _axis_name(input_name, axis, dim):
    if isinstance(dim, str):
        return dim
    name = getattr(dim, "__name__", None)
    if isinstance(name, str) and name:
        return name
    return f"{input_name}_dim_{axis}"


def _graph_text(proto):
    """The graph as ONNX's text form, without the initializers' values."""
    onnx = _require_onnx()
    graph = onnx.GraphProto()
    graph.CopyFrom(proto.graph)
    del graph.initializer[:]
    return onnx.printer.to_text(graph)


def export_model_proto(model, args=(), *, kwargs=None, input_names=None, output_names=None,
                       dynamic_axes=None, opset_version=17, export_params=True,
                       do_constant_folding=True, keep_initializers_as_inputs=False,
                       training=TrainingMode.EVAL, dynamo=False):
    """The ``onnx.ModelProto`` that :func:`export` writes (same arguments, without ``f``),
    checked with ``onnx.checker.check_model``.

    Example::

        >>> proto = ember.onnx.export_model_proto(ember.nn.ReLU(), (ember.randn(2),))
        >>> [n.op_type for n in proto.graph.node]
        ['Relu']
    """
    onnx = _require_onnx()
    opset = 17 if opset_version is None else opset_version
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(f"Unsupported ONNX opset version: {opset} (ember.onnx exports "
                         f"opsets {MIN_OPSET} to {MAX_OPSET})")
    if dynamo:
        raise NotImplementedError("ember.onnx.export has no dynamo-based exporter: call it "
                                  "with dynamo=False (the default) to export by tracing")
    if kwargs:
        raise NotImplementedError("ember.onnx.export traces positional inputs only: pass "
                                  "the inputs in args")
    inputs = _as_inputs(args)
    model = _owner_of_forward(model)
    with _export_mode(), _training_mode(model, training):
        names = _input_names(model, inputs, input_names)
        axes = _parse_dynamic_axes(dynamic_axes, names, output_names)
        axis_sizes = _axis_sizes(axes, names, inputs)
        traces = _traces(model, inputs, names, axes, axis_sizes)
    merged = _merge(traces, list(axis_sizes))
    known = _fold(merged, export_params, do_constant_folding and export_params)
    emitter = _Emitter(onnx, opset, merged, known, axis_sizes, export_params)
    proto = emitter.build(names, output_names, axes, keep_initializers_as_inputs)
    try:
        onnx.checker.check_model(proto)
    except onnx.checker.ValidationError as error:
        raise OnnxExporterError(f"the exported model does not pass onnx.checker: {error}") \
            from error
    return proto


# ---------------------------------------------------------------- inputs and modes


def _as_inputs(args):
    from .._tensor import Tensor

    if isinstance(args, Tensor):
        return (args,)
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"args must be a Tensor or a tuple of Tensors, not "
                        f"{type(args).__name__}")
    if args and isinstance(args[-1], dict):
        if args[-1]:
            raise NotImplementedError("ember.onnx.export traces positional inputs only: "
                                      "keyword inputs in args are not supported")
        args = args[:-1]
    for i, a in enumerate(args):
        if not isinstance(a, Tensor):
            raise TypeError(f"ember.onnx.export traces tensor inputs only; input {i} is a "
                            f"{type(a).__name__}")
    return tuple(args)


def _owner_of_forward(model):
    """The module itself for ``module.forward`` (exported as the module, as torch does)."""
    from ..nn.modules.module import Module

    owner = getattr(model, "__self__", None)
    if isinstance(owner, Module) and getattr(model, "__name__", None) == "forward":
        return owner
    return model


@contextlib.contextmanager
def _export_mode():
    _exporting.append(True)
    try:
        yield
    finally:
        _exporting.pop()


@contextlib.contextmanager
def _training_mode(model, training):
    from ..nn.modules.module import Module

    if not isinstance(model, Module) or training == TrainingMode.PRESERVE:
        yield
        return
    saved = [(m, m.training) for m in model.modules()]
    model.train(training == TrainingMode.TRAINING)
    try:
        yield
    finally:
        for m, mode in saved:
            m.training = mode


def _input_names(model, inputs, input_names):
    from ..jit import _input_names as signature_names
    from ..nn.modules.module import Module

    names = list(input_names or [])[:len(inputs)]
    graph = getattr(model, "graph", None)  # a ScriptModule/ScriptFunction: its input names
    if graph is not None and len(graph.inputs) == len(inputs):
        defaults = [v.debug_name() for v in graph.inputs]
    else:
        defaults = signature_names(model.forward if isinstance(model, Module) else model,
                                   len(inputs))
    for default in defaults[len(names):]:
        name, k = default, 1
        while name in names:
            name, k = f"{default}.{k}", k + 1
        names.append(name)
    if len(set(names)) != len(names):
        raise ValueError(f"input_names must be distinct, got {names}")
    return names


def _parse_dynamic_axes(dynamic_axes, input_names, output_names):
    """``{tensor name: {axis: symbol}}`` from torch's two spellings."""
    parsed = {}
    for key, axes in (dynamic_axes or {}).items():
        if key not in input_names and key not in (output_names or []):
            warnings.warn(f"Provided key {key} for dynamic axes is not a valid input/output "
                          "name", stacklevel=4)
        if isinstance(axes, dict):
            parsed[key] = {int(a): str(s) for a, s in axes.items()}
        elif isinstance(axes, (list, tuple)):
            parsed[key] = {int(a): f"{key}_dynamic_axes_{i + 1}" for i, a in enumerate(axes)}
        else:
            raise TypeError(f"dynamic_axes[{key!r}] must be a list of axes or a dict from "
                            f"axis to name, not {type(axes).__name__}")
    return parsed


def _axis_sizes(axes, names, inputs):
    """``{symbol: example size}`` for the dynamic axes of the inputs, in first-seen order."""
    sizes = {}
    for name, t in zip(names, inputs):
        for axis, symbol in axes.get(name, {}).items():
            if not -t.dim() <= axis < t.dim():
                raise ValueError(f"dynamic axis {axis} of input '{name}' is out of range for "
                                 f"a tensor of {t.dim()} dimensions")
            sizes.setdefault(symbol, t.shape[axis])
    return sizes


# ---------------------------------------------------------------- tracing


class _Trace:
    """One traced graph with the tensors its get_attr nodes read."""

    def __init__(self, graph, attributes):
        self.graph = graph
        self.attributes = attributes


def _trace(model, inputs, quiet=False):
    from .. import jit
    from ..nn.modules.module import Module
    from ..ops.random import default_generator

    if isinstance(model, (jit.ScriptModule, jit.ScriptFunction)):
        attributes = _attributes(model) if isinstance(model, Module) else {}
        return _Trace(model.graph, attributes)
    rng_before = default_generator.get_state()
    with warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore")
        # sizes as constants: the traces at doubled axes below find the dynamic ones
        traced = jit.trace(model, inputs, check_trace=False, _dynamic_sizes=False)
    if not (default_generator.get_state() == rng_before).all():
        raise OnnxExporterError(
            "the model drew random numbers while traced (dropout in training mode, rand...): "
            "the ONNX graph would replay them as constants. Export in eval mode "
            "(training=TrainingMode.EVAL) or pass random tensors as inputs.")
    attributes = _attributes(model) if isinstance(model, Module) else {}
    return _Trace(traced.graph, attributes)


def _attributes(module):
    found = dict(module.named_parameters())
    for name, b in module.named_buffers():
        found.setdefault(name, b)
    return found


def _traces(model, inputs, names, axes, axis_sizes):
    """The example trace, then one per dynamic axis name with that axis doubled."""
    from .. import jit

    traces = [_trace(model, inputs)]
    if axis_sizes and isinstance(model, (jit.ScriptModule, jit.ScriptFunction)):
        warnings.warn("ember.onnx.export: a traced ScriptModule keeps the sizes it was traced "
                      "with; pass the nn.Module itself to export dynamic axes that reshape "
                      "operations follow", stacklevel=3)
        return traces
    for symbol in axis_sizes:
        grown = [_grow(t, [a for a, s in axes.get(name, {}).items() if s == symbol])
                 for name, t in zip(names, inputs)]
        traces.append(_trace(model, tuple(grown), quiet=True))
    return traces


def _grow(tensor, axes):
    """``tensor`` twice as long along ``axes``, its entries repeated (valid indices stay
    valid)."""
    from .. import arange

    with grad_mode.no_grad():
        for axis in axes:
            size = tensor.shape[axis]
            tensor = tensor.index_select(axis, arange(2 * size, device=tensor.device) % size)
    return tensor


# ---------------------------------------------------------------- lining the traces up


class _Merged:
    """The example trace annotated with what the other traces showed."""

    def __init__(self, trace):
        self.graph = trace.graph
        self.attributes = trace.attributes
        self.dims = {}          # Value -> tuple of int | Dim
        self.params = {}        # op Node -> params with Dims
        self.filled = {}        # constant Node -> (fill value, dims) for size-dependent ones


def _definitions(graph):
    values = list(graph.inputs)
    for n in graph.nodes:
        values += n.outputs
    return values


def _merge(traces, symbols):
    merged = _Merged(traces[0])
    graphs = [t.graph for t in traces]
    values = [_definitions(g) for g in graphs]
    if any(len(v) != len(values[0]) or len(g.nodes) != len(graphs[0].nodes)
           for v, g in zip(values, graphs)):
        _changed(symbols, graphs, "the number of operations differs")
    index = [{v: i for i, v in enumerate(vs)} for vs in values]
    for k, graph in enumerate(graphs[1:], 1):
        base_out = [index[0][v] for v in graphs[0].output_values()]
        if [index[k][v] for v in graph.output_values()] != base_out:
            _changed(symbols[k - 1:k], graphs, "the outputs differ")
    for position, value in enumerate(values[0]):
        try:
            merged.dims[value] = tuple(merge([tuple(vs[position].shape) for vs in values]))
        except TraceMismatch:
            _changed(symbols, graphs, f"the rank of %{value.debug_name()} differs")
    for i, node in enumerate(graphs[0].nodes):
        nodes = [g.nodes[i] for g in graphs]
        signature = (node.kind, node.target, [index[0][v] for v in node.inputs])
        for k, other in enumerate(nodes[1:], 1):
            if (other.kind, other.target, [index[k][v] for v in other.inputs]) != signature:
                _changed(symbols[k - 1:k], graphs, f"node {i} ({node.target}) differs")
        if node.kind == OP:
            try:
                merged.params[node] = merge([n.params for n in nodes])
            except TraceMismatch:
                _changed(symbols, graphs, f"the parameters of {node.target} differ")
        elif node.kind == CONSTANT:
            _merge_constant(merged, node, [(g.constants[n.params["name"]]) for g, n in
                                           zip(graphs, nodes)], symbols, graphs)
    return merged


def _merge_constant(merged, node, tensors, symbols, graphs):
    arrays = [t.detach().cpu().numpy() for t in tensors]
    if all(a.shape == arrays[0].shape and np.array_equal(a, arrays[0], equal_nan=True)
           for a in arrays):
        return
    dims = merged.dims[node.outputs[0]]
    first = arrays[0].flat[0] if arrays[0].size else None
    if first is not None and all(a.size and (a == a.flat[0]).all() and a.flat[0] == first
                                 for a in arrays):
        merged.filled[node] = (first, dims)
        return
    _changed(symbols, graphs, f"the values of a tensor the model made inside (constant "
                              f"{node.params['name']}, shape {arrays[0].shape}) depend on it")


def _changed(symbols, graphs, detail):
    names = ", ".join(repr(s) for s in symbols)
    raise OnnxExporterError(
        f"ember.onnx.export: the traced graph changes with the size of the dynamic axis "
        f"{names} ({detail}). ember traces the model, so its graph is fixed for the traced "
        "sizes: an LSTM/GRU is unrolled over the traced sequence length, Python control flow "
        "and tensors built from sizes are fixed. Export with that axis static.")


# ---------------------------------------------------------------- constant folding


def _fold(merged, export_params, fold):
    """``{Value: tensor}`` for values known before run time: the weights (when exported),
    the trace's constants, and, when ``fold``, every op that reads only those."""
    known = {}
    graph = merged.graph
    for node in graph.nodes:
        if node.kind == GET_ATTR and export_params:
            known[node.outputs[0]] = merged.attributes[node.params["name"]]
        elif node.kind == CONSTANT and node not in merged.filled:
            known[node.outputs[0]] = graph.constants[node.params["name"]]
        elif (fold and node.kind == OP and node.inputs
              and all(v in known for v in node.inputs)
              and _foldable(node.op)
              and not _has_dim(merged.params[node])):
            with grad_mode.no_grad():
                result = node.op(*[known[v] for v in node.inputs], **node.params)
            results = result if node.op.multi_output else (result,)
            for value, tensor in zip(node.outputs, results):
                known[value] = tensor
    return known


def _foldable(op):
    """Whether an op whose inputs are all known may be evaluated ahead of time: not a random
    draw (its kind), nor an op whose ONNX rule is marked ``unfolded`` (``ops/_onnx_rules.py``:
    a result much larger than its inputs, or a node only the runtime runs)."""
    return op.kind != "random" and folds(op.onnx)


def _has_dim(obj):
    if isinstance(obj, Dim):
        return True
    if isinstance(obj, (tuple, list)):
        return any(_has_dim(o) for o in obj)
    if isinstance(obj, dict):
        return any(_has_dim(o) for o in obj.values())
    if isinstance(obj, slice):
        return any(_has_dim(o) for o in (obj.start, obj.stop, obj.step))
    return False


# ---------------------------------------------------------------- emitting ONNX


class _Emitter:
    """Builds the ONNX graph from the merged trace."""

    def __init__(self, onnx, opset, merged, known, axis_sizes, export_params):
        self.onnx = onnx
        self.merged = merged
        self.known = known
        self.export_params = export_params
        self.ctx = ExportContext(onnx, opset, axis_sizes)
        self.ctx.value_dims = merged.dims
        self.env = {}
        self.param_inputs = []
        self.symbol_dims = {}     # dynamic axis name -> its Dim
        self.producers = {v: n for n in merged.graph.nodes for v in n.outputs}

    def name_of(self, value):
        """The ONNX name of a traced value, making its initializer on first use."""
        if value in self.env:
            name = self.env[value]
            if name is None:
                raise SymbolicValueError("this output of its operator has no ONNX form and "
                                         "cannot be read", value)
            return name
        if value in self.known:
            array = self.known[value].detach().cpu().numpy()
            name = self._initializer_name(value)
            if array.size == 1 and not self._is_attribute(value):
                name = self.ctx.const(array)  # a scalar: a Constant node, as torch's
                self.env[value] = name
                return name
            self.ctx.initializers.append(self.onnx.numpy_helper.from_array(
                np.ascontiguousarray(array), name))
            self.env[value] = name
            return name
        raise SymbolicValueError("the exporter found no definition for this value", value)

    def _is_attribute(self, value):
        return self.producers[value].kind == GET_ATTR

    def _initializer_name(self, value):
        node = self.producers[value]
        if node.kind == GET_ATTR:
            return node.params["name"]  # the state_dict's name, as torch's initializers
        if node.kind == CONSTANT:
            return f"onnx::{node.params['name']}"
        return f"onnx::{node.target}_{value.id}"

    def build(self, input_names, output_names, axes, keep_initializers_as_inputs):
        helper = self.onnx.helper
        graph = self.merged.graph
        inputs = []
        for value, name in zip(graph.inputs, input_names):
            self.env[value] = name
            inputs.append(self._value_info(name, value, axes.get(name, {})))
            for axis, symbol in axes.get(name, {}).items():
                axis %= len(value.shape)
                self.ctx.axis_sources.setdefault(symbol, (name, axis))
                self.symbol_dims.setdefault(symbol, self.merged.dims[value][axis])
        for node in graph.nodes:
            self._emit(node)
        outputs = self._outputs(output_names, axes)
        self._drop_unread_initializers()
        inputs += self.param_inputs
        if keep_initializers_as_inputs:
            inputs += [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                       for t in self.ctx.initializers]
        onnx_graph = helper.make_graph(self.ctx.nodes, "main_graph", inputs, outputs,
                                       initializer=self.ctx.initializers)
        opsets = [helper.make_opsetid("", self.ctx.opset)] + [
            helper.make_opsetid(domain, version)  # custom operators' domains (onnx.ops)
            for domain, version in sorted(self.ctx.custom_domains.items())]
        from .. import __version__

        return helper.make_model(onnx_graph, opset_imports=opsets, producer_name="ember",
                                 producer_version=__version__,
                                 ir_version=helper.find_min_ir_version_for(opsets[:1]))

    def _drop_unread_initializers(self):
        # a mapping may leave an input unread (the recurrent matmul's layout-only weight)
        read = {name for node in self.ctx.nodes for name in node.input}
        self.ctx.initializers = [t for t in self.ctx.initializers if t.name in read]
        self.param_inputs = [i for i in self.param_inputs if i.name in read]

    def _value_info(self, name, value, named_axes):
        dims = []
        for axis, size in enumerate(self.merged.dims[value]):
            symbol = named_axes.get(axis, named_axes.get(axis - len(value.shape)))
            if symbol is not None:
                dims.append(symbol)
            elif isinstance(size, Dim):
                dims.append(self._symbol_for(size) or f"{name}_dim_{axis}")
            else:
                dims.append(size)
        return self.onnx.helper.make_tensor_value_info(
            name, onnx_type(self.onnx, value.dtype), dims)

    def _symbol_for(self, dim):
        return next((s for s, d in self.symbol_dims.items() if d == dim), None)

    def _emit(self, node):
        out = node.outputs
        if node.kind == GET_ATTR:
            if not self.export_params:
                name = node.params["name"]
                self.env[out[0]] = name
                self.param_inputs.append(self._value_info(name, out[0], {}))
        elif node.kind == CONSTANT:
            if node in self.merged.filled:
                self.ctx.node = node
                fill, dims = self.merged.filled[node]
                scalar = self.ctx.const(np.array(fill))
                self.env[out[0]] = self.ctx.op("Expand", scalar, self.ctx.shape_tensor(dims))
        elif node.kind == COPY:
            target, source = node.inputs
            self.env[out[0]] = self.ctx.cast(self.name_of(source), source.dtype, target.dtype)
        elif node.kind == OP:
            if all(v in self.known for v in out):
                return  # folded: an initializer when something reads it
            self._emit_op(node)
        else:
            raise UnsupportedOperatorError(f"prim::{node.target}", self.ctx.opset, None)

    def _emit_op(self, node):
        mapping = node.op.onnx
        if mapping is None:
            raise UnsupportedOperatorError(f"ember::{node.op.name}", self.ctx.opset, None)
        self.ctx.node = node
        inputs = [self.name_of(v) for v in node.inputs]
        if isinstance(mapping, str):  # one ONNX operator on the inputs cast to the result's dtype
            results = self.ctx.op(mapping, *self.ctx.operands(*inputs))
        else:
            results = mapping(self.ctx, *inputs, **self.merged.params[node])
        if not isinstance(results, tuple):
            results = (results,)
        if len(results) != len(node.outputs):  # pragma: no cover - a mapping's bug
            raise OnnxExporterError(f"the mapping of {node.op.name} gave {len(results)} "
                                    f"results for {len(node.outputs)} outputs")
        for value, name in zip(node.outputs, results):
            self.env[value] = name

    def _outputs(self, output_names, axes):
        values = self.merged.graph.output_values()
        names = list(output_names or [])[:len(values)]
        names += [f"output_{i}" if len(values) > 1 else "output"
                  for i in range(len(names), len(values))]
        infos, renamed = [], {}
        for value, name in zip(values, names):
            internal = self.name_of(value)
            producer = next((n for n in self.ctx.nodes if internal in n.output), None)
            if internal in renamed or producer is None:
                # read twice, or a graph input or initializer itself: a copy under the name
                self.ctx.nodes.append(self.onnx.helper.make_node(
                    "Identity", [renamed.get(internal, internal)], [name],
                    name=f"Identity/{name}"))
            else:
                _rename(self.ctx.nodes, internal, name)
                renamed[internal] = name
            infos.append(self._value_info(name, value, axes.get(name, {})))
        return infos


def _rename(nodes, old, new):
    for node in nodes:
        for field in (node.input, node.output):
            for i, n in enumerate(field):
                if n == old:
                    field[i] = new
