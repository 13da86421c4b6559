"""``ember.export``: capture a module as a graph program (torch.export's API on ember.fx).

:func:`export` traces ``mod`` symbolically with :func:`ember.fx.symbolic_trace` (torch traces
with real tensors through its dispatcher); the result is an :class:`ExportedProgram` whose
:meth:`~ExportedProgram.module` runs the graph. ember's graphs are traced without concrete
shapes, so every input shape is accepted: ``dynamic_shapes`` (:class:`Dim`) are validated and
kept, not needed. Data-dependent control flow cannot be traced, as in torch's strict mode.

Example::

    >>> import ember.export
    >>> ep = ember.export.export(ember.nn.Linear(3, 2), (ember.ones(1, 3),))
    >>> ep.module()(ember.ones(4, 3)).shape
    ember.Size([4, 2])
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from ..nn.modules.module import Module

__all__ = ["Constraint", "Dim", "ExportBackwardSignature", "ExportGraphSignature",
           "ExportedProgram", "CustomDecompTable", "ModuleCallEntry", "ModuleCallSignature",
           "default_decompositions", "dims", "export", "draft_export", "load",
           "register_dataclass", "save", "unflatten", "FlatArgsAdapter", "UnflattenedModule",
           "AdditionalInputs", "ShapesCollection"]


# ---- dynamic shapes ----

class Dim:
    """A named dynamic dimension with optional bounds (``Dim("batch", min=1, max=64)``).

    Example::

        >>> Dim("batch", min=1, max=8)
        Dim('batch', min=1, max=8)
    """

    AUTO = "AUTO"
    STATIC = "STATIC"
    DYNAMIC = "DYNAMIC"

    def __init__(self, name, *, min=None, max=None):  # noqa: A002  (torch's keywords)
        lower = 0 if min is None else min
        upper = int(2 ** 63 - 2) if max is None else max
        if upper < lower:
            raise AssertionError(f"Cannot create Dim with inconsistent min={min}, max={max}")
        if not name.isidentifier():
            raise ValueError(f"Dim name must be a valid identifier, got {name}")
        self.__name__ = name
        self.min, self.max = lower, upper

    def __repr__(self):
        shown = []
        if self.min not in (0, 2):
            shown.append(f"min={self.min}")
        if self.max != int(2 ** 63 - 2):
            shown.append(f"max={self.max}")
        return f"Dim({self.__name__!r}" + "".join(f", {s}" for s in shown) + ")"


def dims(*names, min=None, max=None):  # noqa: A002
    """Several :class:`Dim` with the same bounds.

    Example::

        >>> dims("h", "w", min=1)
        (Dim('h', min=1), Dim('w', min=1))
    """
    return tuple(Dim(name, min=min, max=max) for name in names)


class Constraint:
    """A relation between dynamic dimensions (torch's base class; ember records it)."""


class ShapesCollection:
    """Dynamic shapes keyed by input tensor: ``shapes[tensor] = (Dim("b"), 4)``.

    Example::

        >>> x = ember.ones(2, 3)
        >>> sc = ShapesCollection(); sc[x] = (Dim("b"), 3)
        >>> sc.dynamic_shapes(None, (x,))
        ((Dim('b'), 3),)
    """

    def __init__(self):
        self._shapes = {}

    def __setitem__(self, tensor, shape):
        self._shapes[id(tensor)] = shape

    def __getitem__(self, tensor):
        return self._shapes[id(tensor)]

    def __len__(self):
        return len(self._shapes)

    def dynamic_shapes(self, m, args, kwargs=None):
        """The ``dynamic_shapes`` argument matching ``args`` (None for unlisted tensors)."""
        return tuple(self._shapes.get(id(a)) for a in args)


class AdditionalInputs:
    """Extra example inputs from which dynamic dimensions are inferred (dimensions that vary
    between the examples become dynamic).

    Example::

        >>> ai = AdditionalInputs(); ai.add((ember.ones(2, 3),)); ai.add((ember.ones(5, 3),))
        >>> ai.dynamic_shapes(None, (ember.ones(2, 3),))
        ((Dim.AUTO, None),)
    """

    def __init__(self):
        self._examples = []

    def add(self, args, kwargs=None):
        self._examples.append((tuple(args), dict(kwargs or {})))

    def dynamic_shapes(self, m, args, kwargs=None):
        result = []
        for i, arg in enumerate(args):
            sizes = {tuple(ex[0][i].shape) for ex in self._examples} | {tuple(arg.shape)}
            varying = [len({s[d] for s in sizes}) > 1 for d in range(arg.dim())]
            result.append(tuple(_AutoDim() if v else None for v in varying))
        return tuple(result)


class _AutoDim:
    def __repr__(self):
        return "Dim.AUTO"


# ---- signatures ----

@dataclasses.dataclass
class ExportGraphSignature:
    """Which graph inputs are parameters, buffers or user inputs, and which outputs are the
    user's (names, in graph order)."""

    input_specs: list
    output_specs: list

    def __str__(self):
        inputs = "\n".join(f"{name}: {kind}" for kind, name in self.input_specs)
        outputs = "\n".join(f"{name}: {kind}" for kind, name in self.output_specs)
        return f"\n# inputs\n{inputs}\n\n# outputs\n{outputs}\n"


@dataclasses.dataclass
class ExportBackwardSignature:
    """The gradient outputs of a joint forward-backward program (torch's fields)."""

    gradients_to_parameters: dict
    gradients_to_user_inputs: dict
    loss_output: str


@dataclasses.dataclass
class ModuleCallSignature:
    """The inputs and outputs of a preserved submodule call."""

    inputs: list
    outputs: list
    in_spec: Any = None
    out_spec: Any = None
    forward_arg_names: list | None = None


@dataclasses.dataclass
class ModuleCallEntry:
    """A submodule (by qualified name) whose call signature the program keeps."""

    fqn: str
    signature: ModuleCallSignature | None = None


class CustomDecompTable(dict):
    """A table of operator decompositions for :meth:`ExportedProgram.run_decompositions`."""


def default_decompositions():
    """The default decompositions: ember's graphs hold ember operators, already primitive
    enough to run, so the table is empty.

    Example::

        >>> len(default_decompositions())
        0
    """
    return CustomDecompTable()


# ---- the program ----

class ExportedProgram:
    """A traced graph of a module with its parameters, buffers and example inputs.

    Example::

        >>> ep = export(ember.nn.ReLU(), (ember.ones(2),))
        >>> ep.module()(ember.tensor([-1.0, 2.0]))
        tensor([0., 2.])
    """

    dialect = "ATEN"

    def __init__(self, graph_module, example_inputs, state_dict, graph_signature,
                 range_constraints=None):
        self.graph_module = graph_module
        self.example_inputs = example_inputs
        self._state_dict = state_dict
        self.graph_signature = graph_signature
        self.range_constraints = range_constraints or {}
        self.module_call_graph = []
        self.constants = {}
        self.verifiers = []

    @property
    def graph(self):
        return self.graph_module.graph

    @property
    def state_dict(self):
        return self._state_dict

    @property
    def call_spec(self):
        return None

    @property
    def tensor_constants(self):
        return self.constants

    def module(self):
        """A module running the program (a copy of its graph module)."""
        return copy.deepcopy(self.graph_module)

    def parameters(self):
        yield from self.graph_module.parameters()

    def named_parameters(self):
        yield from self.graph_module.named_parameters()

    def buffers(self):
        yield from self.graph_module.buffers()

    def named_buffers(self):
        yield from self.graph_module.named_buffers()

    def run_decompositions(self, decomp_table=None, decompose_custom_triton_ops=False):
        """The program with ``decomp_table`` applied: ember's graphs need none (a copy)."""
        return copy.copy(self)

    def validate(self):
        """Check the program runs on its example inputs."""
        args, kwargs = self.example_inputs
        self.graph_module(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Unable to call ExportedProgram directly. You should use "
                           "`exported_program.module()` instead.")

    def __str__(self):
        return f"ExportedProgram:\n{self.graph_module.code}\nGraph signature: " \
               f"{self.graph_signature}"


def _signature(module, graph_module):
    inputs = [("PARAMETER", n) for n, _ in module.named_parameters()]
    inputs += [("BUFFER", n) for n, _ in module.named_buffers()]
    inputs += [("USER_INPUT", node.name) for node in graph_module.graph.nodes
               if node.op == "placeholder"]
    outputs = [("USER_OUTPUT", str(node.args[0])) for node in graph_module.graph.nodes
               if node.op == "output"]
    return ExportGraphSignature(inputs, outputs)


def export(mod, args, kwargs=None, *, dynamic_shapes=None, strict=False,
           preserve_module_call_signature=(), prefer_deferred_runtime_asserts_over_guards=False):
    """Trace ``mod`` into an :class:`ExportedProgram`, checked on ``args``/``kwargs``.

    Example::

        >>> ep = export(ember.nn.Linear(3, 2), (ember.ones(1, 3),))
        >>> [kind for kind, _ in ep.graph_signature.input_specs]
        ['PARAMETER', 'PARAMETER', 'USER_INPUT']
    """
    if not isinstance(mod, Module):
        raise ValueError(f"Expected `mod` to be an instance of `torch.nn.Module`, got "
                         f"{type(mod)}.")
    if not isinstance(args, tuple):
        raise ValueError(f"Expecting `args` to be a tuple of example positional inputs, got "
                         f"{type(args)}")
    from ..fx import symbolic_trace
    graph_module = symbolic_trace(mod)
    kwargs = dict(kwargs or {})
    graph_module(*args, **kwargs)  # the program must run on the example inputs
    return ExportedProgram(graph_module, (args, kwargs), dict(mod.state_dict()),
                           _signature(mod, graph_module),
                           {"dynamic_shapes": dynamic_shapes} if dynamic_shapes else None)


def draft_export(mod, args, kwargs=None, *, dynamic_shapes=None,
                 preserve_module_call_signature=(), strict=False,
                 prefer_deferred_runtime_asserts_over_guards=False):
    """:func:`export` (torch's draft mode reports problems instead of raising; ember's tracer
    either succeeds or raises at the line that cannot be traced)."""
    return export(mod, args, kwargs, dynamic_shapes=dynamic_shapes, strict=strict)


def save(ep, f, *, extra_files=None, opset_version=None, pickle_protocol=2):
    """Save an :class:`ExportedProgram` with :func:`ember.save` (ember's format, not torch's
    .pt2 archive).

    Example::

        >>> import io; buf = io.BytesIO()
        >>> save(export(ember.nn.ReLU(), (ember.ones(1),)), buf)
    """
    if not isinstance(ep, ExportedProgram):
        raise TypeError(f"The 'ep' parameter must be an instance of 'ExportedProgram', got "
                        f"'{type(ep).__name__}' instead.")
    from ..serialization import save as _save
    _save({"exported_program": ep, "extra_files": extra_files or {}}, f,
          pickle_protocol=pickle_protocol)


def load(f, *, extra_files=None, expected_opset_version=None):
    """Load a program written by :func:`save`.

    Example::

        >>> import io; buf = io.BytesIO()
        >>> save(export(ember.nn.ReLU(), (ember.ones(1),)), buf); _ = buf.seek(0)
        >>> load(buf).module()(ember.tensor([-3.0]))
        tensor([0.])
    """
    from ..serialization import load as _load
    saved = _load(f, weights_only=False)
    if extra_files is not None:
        extra_files.update(saved.get("extra_files", {}))
    return saved["exported_program"]


_DATACLASSES = {}


def register_dataclass(cls, *, serialized_type_name=None):
    """Allow instances of the dataclass ``cls`` as program inputs and outputs.

    Example::

        >>> @dataclasses.dataclass
        ... class Pair:
        ...     a: int
        ...     b: int
        >>> register_dataclass(Pair)
    """
    if not dataclasses.is_dataclass(cls):
        raise AssertionError(f"{cls} is not a dataclass.")
    _DATACLASSES[cls] = serialized_type_name or f"{cls.__module__}.{cls.__qualname__}"


class FlatArgsAdapter:
    """Adapts flattened inputs to the signature an unflattened module expects (subclass and
    define :meth:`adapt`)."""

    def adapt(self, target_spec, input_spec, input_args, metadata=None, obj=None):
        raise NotImplementedError


class UnflattenedModule(Module):
    """A module calling an exported program's graph (torch rebuilds the submodule hierarchy;
    ember's graph already calls the original submodules).

    Example::

        >>> m = unflatten(export(ember.nn.ReLU(), (ember.ones(1),)))
        >>> m(ember.tensor([-1.0]))
        tensor([0.])
    """

    def __init__(self, export_module, flat_args_adapter=None):
        super().__init__()
        self.graph_module = export_module.module()
        self.flat_args_adapter = flat_args_adapter

    def forward(self, *args, **kwargs):
        return self.graph_module(*args, **kwargs)


def unflatten(module, flat_args_adapter=None):
    """A module running the exported program ``module``."""
    return UnflattenedModule(module, flat_args_adapter)
