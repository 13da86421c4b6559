"""``ember.jit``: trace a model into an inspectable graph IR, optimise it, and save it to a file
that loads and runs without the model's Python source.

* :func:`trace` runs a function or module once and records every primitive operator it calls
  (``_tracer.py``) into a :class:`Graph` (``_ir.py``);
* :class:`ScriptModule` / :class:`ScriptFunction` run the graph with the same ember operators
  (``_module.py``), so autograd and devices work as in eager code;
* :func:`save` / :func:`load` write and read a zip of the graph as JSON and the tensors through
  ``ember.serialization`` (``_serialize.py``); loading interprets names from ember's operator
  registry and never executes code from the file;
* :func:`freeze`, :func:`optimize_for_inference` and the passes in ``ember.jit.passes``
  (dead code, common subexpressions, constant folding, element-wise fusion) rewrite graphs.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import warnings

import numpy as np

from .._eager_control import Future, fork, wait
from .._tensor import Tensor
from ..autograd import grad_mode
from . import _passes as passes
from ._annotations import (
    Attribute,
    CompilationUnit,
    Error,
    Final,
    annotate,
    enable_onednn_fusion,
    export_opnames,
    interface,
    onednn_fusion_enabled,
    script_if_tracing,
    set_fusion_strategy,
    strict_fusion,
)
from ._ir import Graph, Node, Value
from ._module import RecursiveScriptModule, ScriptFunction, ScriptModule
from ._passes import freeze, optimize_for_inference
from ._serialize import load, save
from ._tracer import TracerWarning, is_tracing, trace_graph

__all__ = ["trace", "trace_module", "script", "save", "load", "freeze", "optimize_for_inference",
           "ScriptModule", "ScriptFunction", "RecursiveScriptModule", "TracerWarning",
           "TracingCheckError", "Graph", "Node", "Value", "ignore", "unused", "export",
           "is_scripting", "is_tracing", "passes", "Attribute", "CompilationUnit", "Error",
           "Final", "annotate", "enable_onednn_fusion", "export_opnames", "interface",
           "isinstance", "onednn_fusion_enabled", "script_if_tracing", "set_fusion_strategy",
           "strict_fusion", "Future", "fork", "wait"]

# the submodule torch.jit.annotations; a plain ``from . import`` would find the __future__ flag
annotations = importlib.import_module(f"{__name__}.annotations")


class TracingCheckError(Exception):
    """``check_trace`` found that the trace does not reproduce the function (torch's name)."""

    def __init__(self, graph_diff_error, tensor_compare_error, extra_msg=None):
        message = "Tracing failed sanity checks!\n"
        if extra_msg is not None:
            message += extra_msg + "\n"
        if graph_diff_error is not None:
            message += "ERROR: Graphs differed across invocations!\n" + graph_diff_error + "\n"
        if tensor_compare_error is not None:
            message += ("ERROR: Tensor-valued Constant nodes differed in value across "
                        "invocations. This often indicates that the tracer has encountered "
                        "untraceable code.\n" + tensor_compare_error + "\n")
        self.message = message
        super().__init__(message)


def _as_tuple(example_inputs):
    if isinstance(example_inputs, Tensor):
        return (example_inputs,)
    if isinstance(example_inputs, (tuple, list)):
        return tuple(example_inputs)
    raise TypeError(f"example_inputs must be a Tensor or a tuple of Tensors, not "
                    f"{type(example_inputs).__name__}")


def _input_names(fn, count):
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params[:count]]
    return names + [f"input{i}" for i in range(len(names), count)]


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-5, strict=True, _force_outplace=False, _module_class=None,
          _compilation_unit=None, example_kwarg_inputs=None, _store_inputs=True,
          _dynamic_sizes=True):
    """Trace ``func`` (a function or an ``ember.nn.Module``) on ``example_inputs``.

    The function runs once; every primitive operator it calls is recorded in a graph, which
    the result (:class:`ScriptModule` for a module, :class:`ScriptFunction` for a function)
    interprets when called. Control flow that depends on tensor values is frozen at the path
    the example took (converting a tensor to a Python value warns with :class:`TracerWarning`).
    Tensors made inside that do not depend on the inputs become constants; a module's
    parameters and buffers are read by name, shared with the original module.

    Dicts in the output need ``strict=False``, as in torch.

    ``check_trace`` re-runs the trace and the Python function on (copies of) the example
    inputs, or on each of ``check_inputs``: a different graph raises :class:`TracingCheckError`,
    different outputs warn with :class:`TracerWarning`, as torch.

    Example::

        >>> net = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU())
        >>> traced = ember.jit.trace(net, ember.randn(2, 3))
        >>> print(traced.graph)  # doctest: +SKIP
    """
    from ..nn.modules.module import Module

    if example_kwarg_inputs is not None:
        raise NotImplementedError("ember.jit.trace: example_kwarg_inputs is not supported yet; "
                                  "pass the inputs positionally")
    if example_inputs is None:
        raise RuntimeError("example_inputs must be given to ember.jit.trace")
    if isinstance(func, ScriptModule | ScriptFunction):
        warnings.warn("The input to trace is already a ScriptModule, tracing it is a no-op. "
                      "Returning the object as is.", stacklevel=2)
        return func
    inputs = _as_tuple(example_inputs)
    owner = getattr(func, "__self__", None)
    if isinstance(owner, Module) and getattr(func, "__name__", None) == "forward":
        func = owner  # torch traces ``module.forward`` as the module
    if isinstance(func, Module):
        return _trace_module(func, inputs, check_trace, check_inputs, check_tolerance, strict,
                             _dynamic_sizes)
    if not callable(func):
        raise TypeError(f"ember.jit.trace expects a function or a Module, not "
                        f"{type(func).__name__}")
    names = _input_names(func, len(inputs))
    graph, _ = trace_graph(func, inputs, names, strict=strict, dynamic_sizes=_dynamic_sizes)
    result = ScriptFunction(graph, getattr(func, "__name__", "fn"))
    if check_trace:
        _check(func, result, inputs, check_inputs, check_tolerance,
               lambda i: trace_graph(func, i, names, strict=strict,
                                     dynamic_sizes=_dynamic_sizes)[0])
    return result


def trace_module(mod, inputs, check_trace=True, check_inputs=None, check_tolerance=1e-5,
                 strict=True, **kwargs):
    """Trace ``mod``'s methods given as ``{"forward": example_inputs}`` (only ``forward``)."""
    if set(inputs) != {"forward"}:
        raise NotImplementedError("ember.jit.trace_module traces only the forward method")
    return _trace_module(mod, _as_tuple(inputs["forward"]), check_trace, check_inputs,
                         check_tolerance, strict)


def _trace_module(module, inputs, check_trace, check_inputs, check_tolerance, strict=True,
                  dynamic_sizes=True):
    attrs = {}
    for name, p in module.named_parameters():
        attrs[name] = ("parameter", p, True)
    for prefix, sub in module.named_modules():
        for name, b in sub._buffers.items():
            if b is not None:
                dotted = f"{prefix}.{name}" if prefix else name
                attrs.setdefault(dotted, ("buffer", b,
                                          name not in sub._non_persistent_buffers_set))
    attr_names = {}
    for name, (_, t, _) in attrs.items():
        attr_names.setdefault(id(t), name)
    names = _input_names(module.forward, len(inputs))

    def retrace(i):
        return trace_graph(module, i, names, attr_names, strict,
                           [t for _, t, _ in attrs.values()], dynamic_sizes)[0]
    graph = retrace(inputs)
    training = {prefix: sub.training for prefix, sub in module.named_modules()}
    result = ScriptModule(graph, attrs, training, type(module).__name__)
    if check_trace:
        _check(module, result, inputs, check_inputs, check_tolerance, retrace)
    return result


def _clone_inputs(inputs):
    with grad_mode.no_grad():
        out = []
        for t in inputs:
            c = t.detach().clone()
            c.requires_grad_(t.requires_grad)
            out.append(c)
    return tuple(out)


def _node_signature(graph):
    return [(n.kind, n.target, len(n.inputs), repr(n.params) if n.kind != "constant" else "")
            for n in graph.nodes]


def _check(func, traced, inputs, check_inputs, tolerance, retrace):
    for example in ([inputs] if check_inputs is None else [_as_tuple(i) for i in check_inputs]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TracerWarning)
            check_graph = retrace(_clone_inputs(example))
        if _node_signature(check_graph) != _node_signature(traced.graph):
            raise TracingCheckError(
                "\tFirst diverging graph:\n" + str(check_graph).replace("\n", "\n\t"), None)
        traced_out = _flat(_run_for_check(traced, example, "trace"))
        func_out = _flat(_run_for_check(func, example, "Python function"))
        for i, (a, b) in enumerate(zip(traced_out, func_out)):
            problem = _compare(a, b, tolerance)
            if problem:
                warnings.warn(f"Output nr {i + 1}. of the traced function does not match the "
                              f"corresponding output of the Python function. Detailed "
                              f"error:\n{problem}", TracerWarning, stacklevel=4)


def _compare(a, b, tolerance):
    if a.shape != b.shape:
        return f"The values for attribute 'shape' do not match: {a.shape} != {b.shape}."
    x = np.asarray(a._host_array(), dtype=np.complex128 if a.is_complex() else np.float64)
    y = np.asarray(b._host_array(), dtype=np.complex128 if b.is_complex() else np.float64)
    if not np.allclose(x, y, rtol=tolerance, atol=1e-5, equal_nan=True):
        diff = np.abs(x - y)
        return (f"Tensor-likes are not close!\n\nMismatched elements: "
                f"{int((~np.isclose(x, y, rtol=tolerance, atol=1e-5, equal_nan=True)).sum())} / "
                f"{x.size}\nGreatest absolute difference: {np.nanmax(diff)}")
    return None


def _run_for_check(fn, inputs, what):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TracerWarning)
            return fn(*_clone_inputs(inputs))
    except Exception as e:
        raise TracingCheckError(None, None, extra_msg=f"encountered an exception while running "
                                f"the {what} with test inputs.\nException:\n\t{e}") from e


def _flat(obj):
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [t for o in obj for t in _flat(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _flat(o)]
    return []


# ---------------------------------------------------------------- scripting


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Compile a function or a module written in a subset of Python.

    A function becomes a :class:`ScriptFunction`. The subset (``ember/jit/_script.py``):
    assignments to names, ``if``/``else``, ``for i in range(...)``, one ``return`` at the end;
    expressions from arguments, literals, operators, subscripts, tensor attributes and methods,
    and ember's public functions. Unlike :func:`trace`, control flow stays in the graph
    (``prim::If`` and ``prim::Loop`` nodes) and nothing is specialised to example shapes.

    A module becomes a ScriptModule (``ember/jit/_script_module.py``): ``forward``, the
    ``@ember.jit.export`` methods and everything they call are compiled (TorchScript's subset:
    annotated arguments, ``if``/``for``/``while`` with ``break``/``continue``/``return``,
    submodule calls, ``Final`` constants, ``@ember.jit.ignore`` methods run as Python); it
    shares the module's parameters and buffers and saves to a file that loads without the
    class. Code outside the subset raises ``ember.jit.frontend.NotSupportedError`` (also a
    NotImplementedError) naming the construct and the line.

    Example::

        >>> @ember.jit.script
        ... def f(x, n: int):
        ...     for i in range(n):
        ...         x = x * 2 if False else x + i
        ...     return x  # doctest: +SKIP
    """
    from ..nn.modules.module import Module
    from ._script import script_function

    if isinstance(obj, ScriptModule | ScriptFunction):
        return obj
    if isinstance(obj, Module):
        from ._script_module import script_module

        return script_module(obj)
    if not inspect.isfunction(obj):
        raise NotImplementedError(f"ember.jit.script compiles Python functions, not "
                                  f"{type(obj).__name__}")
    return ScriptFunction(script_function(obj), obj.__name__)


def is_scripting():
    """False: ember never runs code compiled by ``script`` (torch's helper for scripted code).

    Example::

        >>> ember.jit.is_scripting()
        False
    """
    return False


def _marker(attr):
    def decorate(fn=None, **kwargs):
        if fn is None:
            return functools.partial(decorate, **kwargs)
        setattr(fn, attr, True)
        return fn
    return decorate


ignore = _marker("_ember_jit_ignore")
ignore.__doc__ = """Mark a function to be left to Python by the compiler (torch.jit.ignore).

Tracing records what the function computes anyway; the mark is kept for ``script``.

Example::

    >>> @ember.jit.ignore
    ... def helper(x):
    ...     return x
"""
unused = _marker("_ember_jit_unused")
unused.__doc__ = """Mark a method the compiler may replace by a raise (torch.jit.unused).

Example::

    >>> @ember.jit.unused
    ... def helper(x):
    ...     return x
"""
export = _marker("_ember_jit_export")
export.__doc__ = """Mark a method to compile besides ``forward`` (torch.jit.export).

Example::

    >>> @ember.jit.export
    ... def helper(x):
    ...     return x
"""


def __getattr__(name):
    # ``ember.jit.isinstance`` is served here so that this module's own code keeps Python's
    # builtin ``isinstance``
    if name == "isinstance":
        from ._annotations import isinstance as jit_isinstance

        return jit_isinstance
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
