"""``ember.fx`` tracing: :class:`Tracer`, :func:`symbolic_trace` and :func:`wrap`.

How ember functions see a proxy: while a trace runs, the public namespaces ``ember`` and
``ember.nn.functional`` (and the functions registered with :func:`wrap` or listed in
``autowrap_functions``) are patched with thin wrappers that record a ``call_function`` node
when any argument is a :class:`~ember.fx.Proxy` and call the original otherwise; everything is
restored when the trace ends. ember's operators themselves carry no test for proxies, so
eager code pays nothing. ``nn.Module.__call__`` and ``nn.Module.__getattr__`` are patched in
the same way, so that leaf modules become ``call_module`` nodes and parameters read in
``forward`` become ``get_attr`` nodes.
"""

from __future__ import annotations

import builtins
import collections
import functools
import inspect
import math
import sys
import types
import warnings

from .._symbolic import _assert  # torch._assert: recorded by tracing, kept by DCE
from .graph import Graph
from .node import _side_effectful_functions, base_types, map_aggregate  # noqa: F401
from .proxy import (  # noqa: F401
    GraphAppendingTracer,
    ParameterProxy,
    Proxy,
    Scope,
    ScopeContextManager,
    TracerBase,
    find_proxy,
)

__all__ = ["Tracer", "symbolic_trace", "wrap"]

# (globals dict, name) pairs registered by wrap(): patched in every trace.
_wrapped_globals = []


def wrap(fn_or_name):
    """Record calls of a module-level function as one ``call_function`` node instead of
    tracing through it. Call it at module scope, with the function or its name.

    >>> import ember.fx
    >>> def clamp_len(x): return x
    >>> _ = ember.fx.wrap("clamp_len")
    """
    caller = inspect.currentframe().f_back
    if caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    name = fn_or_name if isinstance(fn_or_name, str) else fn_or_name.__name__
    _wrapped_globals.append((caller.f_globals, name))
    return fn_or_name


def _recording_wrapper(original, user_wrapped=False):
    """A stand-in for ``original`` that records a node when called with a proxy; the nodes
    of functions registered with :func:`wrap` (or autowrapped) are marked ``is_wrapped``."""

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        proxy = find_proxy(args, kwargs)
        if proxy is None:
            return original(*args, **kwargs)
        result = proxy.tracer.create_proxy("call_function", original, args, kwargs)
        if user_wrapped:
            result.node.meta["is_wrapped"] = True
        return result

    wrapper.__fx_original__ = original
    return wrapper


class _Patcher:
    """Replaces attributes for the length of a trace and puts the originals back."""

    def __init__(self):
        self._undo = []

    def set(self, owner, name, value):
        self._undo.append((owner, name, owner.__dict__.get(name, _MISSING)))
        setattr(owner, name, value)

    def set_item(self, mapping, name, value):
        self._undo.append((mapping, name, mapping.get(name, _MISSING)))
        mapping[name] = value

    def restore(self):
        for owner, name, old in reversed(self._undo):
            if isinstance(owner, dict):
                if old is _MISSING:
                    owner.pop(name, None)
                else:
                    owner[name] = old
            elif old is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, old)
        self._undo.clear()


_MISSING = object()


def _is_plain_function(value):
    return inspect.isfunction(value) or inspect.isbuiltin(value)


class Tracer(TracerBase):
    """Runs a module's ``forward`` on proxies and records the calls as a :class:`Graph`.

    Override :meth:`is_leaf_module` to choose which submodules stay opaque
    (``call_module`` nodes), and :meth:`call_module`, :meth:`create_proxy` or
    :meth:`create_node` to change what is recorded.

    >>> import ember, ember.fx
    >>> graph = ember.fx.Tracer().trace(ember.nn.Sequential(ember.nn.ReLU()))
    >>> [node.target for node in graph.nodes]
    ['input', '0', 'output']
    """

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(),
                 param_shapes_constant=False):
        self._autowrap_function_ids = {
            id(value) for module in autowrap_modules
            for name, value in vars(module).items()
            if not name.startswith("_") and callable(value)}
        self._autowrap_functions = list(autowrap_functions)
        self._autowrap_function_ids |= {id(fn) for fn in autowrap_functions}
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths = None
        self.root_module_name = ""
        self.scope = Scope("", None)
        self.module_stack = collections.OrderedDict()
        self.num_calls = {}
        self.node_name_to_scope = {}

    # ------------------------------------------------------------------ the rules

    def is_leaf_module(self, m, module_qualified_name):
        """ember.nn's own layers are leaves (but not ``Sequential``); user modules are traced
        through."""
        import ember.nn as nn
        module = type(m).__module__ or ""
        return module.startswith("ember.nn") and not isinstance(m, nn.Sequential)

    def path_of_module(self, mod):
        """The dotted name of ``mod`` inside the root module."""
        for name, candidate in self.root.named_modules():
            if candidate is mod:
                return name
        raise NameError("module is not installed as a submodule")

    def call_module(self, m, forward, args, kwargs):
        """Record a leaf module as one ``call_module`` node; run any other module's forward.
        Nodes recorded inside get the module in ``meta["nn_module_stack"]``."""
        module_qualified_name = self.path_of_module(m)
        with ScopeContextManager(self.scope, Scope(module_qualified_name, type(m))) as scope:
            calls = self.num_calls.get(module_qualified_name, 0)
            key = f"{scope.module_path}@{calls}" if calls else scope.module_path
            self.module_stack[key] = (module_qualified_name, scope.module_type)
            self.num_calls[module_qualified_name] = calls + 1
            try:
                if not self.is_leaf_module(m, module_qualified_name):
                    return forward(*args, **kwargs)
                return self.create_proxy("call_module", module_qualified_name, args, kwargs)
            finally:
                self.module_stack.popitem(last=True)

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        """A parameter read in ``forward`` becomes a ``get_attr`` proxy (one per parameter;
        a :class:`~ember.fx.proxy.ParameterProxy` with ``param_shapes_constant``); so does a
        buffer with ``proxy_buffer_attributes``."""
        import ember
        import ember.nn as nn
        if isinstance(attr_val, nn.Parameter):
            found = self._attribute_proxy(attr_val, self.root.named_parameters(),
                                          parameter_proxy_cache)
            if found is not None:
                return found
        if self.proxy_buffer_attributes and isinstance(attr_val, ember.Tensor):
            found = self._attribute_proxy(attr_val, self.root.named_buffers(),
                                          parameter_proxy_cache)
            if found is not None:
                return found
        return attr_val

    def _attribute_proxy(self, value, named_values, cache):
        for name, candidate in named_values:
            if candidate is value:
                if name not in cache:
                    factory = None
                    if self.param_shapes_constant and isinstance(value, ember_parameter()):
                        def factory(node, name=name):
                            return ParameterProxy(self, node, name, value)
                    cache[name] = self.create_proxy("get_attr", name, (), {},
                                                    proxy_factory_fn=factory)
                return cache[name]
        return None

    def get_fresh_qualname(self, prefix):
        """A name starting with ``prefix`` that the root module does not have yet."""
        index = 0
        while hasattr(self.root, f"{prefix}{index}"):
            index += 1
        return f"{prefix}{index}"

    def create_args_for_root(self, root_fn, is_module, concrete_args=None):
        """Make the placeholders of ``root_fn``'s parameters; returns ``(fn, args)`` where
        ``args`` are the values (proxies, or concrete arguments) to call it with."""
        args = self._create_placeholders(root_fn, is_module, concrete_args)
        return _with_variadics_as_positional(root_fn), args

    # ------------------------------------------------------------------ making nodes

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        """Insert a node (see :meth:`TracerBase.create_node`); a function that the trace
        has wrapped for recording is stored as the original function."""
        target = getattr(target, "__fx_original__", target)
        return super().create_node(kind, target, args, kwargs, name, type_expr)

    def create_arg(self, a):
        """Lower a value to what a node stores (see :meth:`TracerBase.create_arg`); a tensor
        of the root becomes a ``get_attr`` node, any other tensor a constant attached to the
        root (``_tensor_constant0``...)."""
        import ember
        import ember.nn as nn
        if isinstance(a, ember.Tensor):
            return self._tensor_node(a)
        if isinstance(a, nn.Module):
            raise NotImplementedError(f"argument of type: {type(a)}")
        return super().create_arg(a)

    def _tensor_node(self, tensor):
        name = self._tensor_names.get(id(tensor))
        if name is None:
            name = f"_tensor_constant{self._constant_count}"
            self._constant_count += 1
            setattr(self.root, name, tensor)
            self._tensor_names[id(tensor)] = name
        return self.create_node("get_attr", name, (), {})

    # ------------------------------------------------------------------ tracing

    def trace(self, root, concrete_args=None):
        """Trace ``root`` (a module or a function) and return the :class:`Graph`."""
        import ember.nn as nn
        if isinstance(root, nn.Module):
            if not hasattr(type(root), self.traced_func_name):
                raise AssertionError(f"traced_func_name={self.traced_func_name} doesn't exist "
                                     f"in {type(root).__name__}")
            self.root, fn = root, getattr(type(root), self.traced_func_name)
        else:
            self.root, fn = nn.Module(), root
        self.graph = Graph(tracer_cls=type(self))
        self.module_stack = collections.OrderedDict()
        self.num_calls = {}
        self.node_name_to_scope = {}
        self._constant_count = 0
        self._tensor_names = self._collect_tensor_names(self.root)
        patcher = _Patcher()
        try:
            args = self._create_placeholders(fn, isinstance(root, nn.Module), concrete_args)
            self._patch(patcher, fn)
            result = _with_variadics_as_positional(fn)(*args)
        finally:
            patcher.restore()
        self.create_node("output", "output", (self.create_arg(result),), {},
                         type_expr=getattr(fn, "__annotations__", {}).get("return"))
        return self.graph

    @staticmethod
    def _collect_tensor_names(root):
        import ember
        names = {}
        for module_name, module in root.named_modules():
            prefix = f"{module_name}." if module_name else ""
            for attribute, value in vars(module).items():
                if isinstance(value, ember.Tensor):
                    names.setdefault(id(value), prefix + attribute)
        for name, buffer in root.named_buffers():
            names.setdefault(id(buffer), name)
        for name, parameter in root.named_parameters():
            names.setdefault(id(parameter), name)
        return names

    def _create_placeholders(self, fn, is_method, concrete_args):
        concrete_args = dict(concrete_args or {})
        parameters = list(inspect.signature(fn).parameters.values())
        if is_method:
            parameters = parameters[1:]
        values = [self.root] if is_method else []
        annotations = getattr(fn, "__annotations__", {})
        for parameter in parameters:
            if parameter.name in concrete_args:
                values.append(self._specialize(parameter, concrete_args.pop(parameter.name)))
                continue
            if parameter.kind is parameter.VAR_POSITIONAL:
                values.append(self.create_proxy("placeholder", f"*{parameter.name}", (), {}))
                continue
            if parameter.kind is parameter.VAR_KEYWORD:
                values.append(self.create_proxy("placeholder", f"**{parameter.name}", (), {}))
                continue
            default = parameter.default
            values.append(self.create_proxy("placeholder", parameter.name,
                                            () if default is parameter.empty else (default,),
                                            {}, type_expr=annotations.get(parameter.name)))
        if concrete_args:
            raise TypeError(f"concrete_args names unknown arguments: {sorted(concrete_args)}")
        return values

    def _specialize(self, parameter, concrete):
        """The value traced code sees for a ``concrete_args`` entry: the value itself (or,
        for :data:`PH`, the input's proxy). The argument stays an input of the generated
        ``forward`` (placeholder ``name_1``) and, as torch.fx does, the value passed at run
        time is checked against the one traced with."""
        import ember
        name = parameter.name
        default = () if parameter.default is parameter.empty else (parameter.default,)
        placeholder = self.create_proxy("placeholder", f"{name}_1", default, {})
        if isinstance(concrete, PHBase):
            return placeholder
        if _contains(concrete, lambda leaf: isinstance(leaf, PHBase)):
            raise NotImplementedError(
                f"ember.fx: concrete_args['{name}'] holds PH inside a container, which torch.fx "
                "flattens with pytree code generation; ember does not. Pass the whole argument "
                "as an input, or specialize it entirely")
        message = f"{name} has been specialized to have value {concrete} but got another value"
        if concrete is None:
            self.create_proxy("call_function", _assert_is_none, (placeholder, message), {})
        elif not _contains(concrete, lambda leaf: leaf is not None and not (
                type(leaf) is bool or type(leaf) in base_types and type(leaf) is not
                ember.Tensor)):
            self.create_proxy("call_function", _assert,
                              (placeholder == concrete, message), {})
        else:
            warnings.warn(f"Was not able to add assertion to guarantee correct input {name} to "
                          "specialized function. It is up to the user to make sure that your "
                          "inputs match the inputs you specialized the function with.",
                          stacklevel=4)
        return concrete

    def _patch(self, patcher, fn):
        import ember
        import ember.nn as nn
        import ember.nn.functional as functional
        tracer, parameter_proxy_cache = self, {}
        original_call, original_getattr = nn.Module.__call__, nn.Module.__getattr__

        def module_call(module, *args, **kwargs):
            def forward(*args, **kwargs):
                return original_call(module, *args, **kwargs)
            return tracer.call_module(module, forward, args, kwargs)

        def module_getattr(module, name):
            value = original_getattr(module, name)
            return tracer.getattr(name, value, parameter_proxy_cache)

        patcher.set(nn.Module, "__call__", module_call)
        patcher.set(nn.Module, "__getattr__", module_getattr)
        public_ids = set()
        for namespace in (ember, functional):
            for name, value in list(vars(namespace).items()):
                if _is_plain_function(value) and not name.startswith("_"):
                    public_ids.add(id(value))
                    patcher.set(namespace, name, _cached_wrapper(value))
        from ..ops._namespaces import OpOverloadPacket
        for namespace in _operator_namespaces():
            for name, value in list(vars(namespace).items()):
                # torch.ops-style packets record themselves (through __torch_function__),
                # and must keep their overload attributes (ember.ops.mylib.foo.out)
                if getattr(value, "_ember_op_packet", False) and \
                        not isinstance(value, OpOverloadPacket):
                    patcher.set(namespace, name, _cached_wrapper(value))
        # ember's own layers call their functionals through module-level imports: patch those
        # too, so that a layer traced through (not a leaf) records F.linear, F.conv2d...
        for module_name, module in list(sys.modules.items()):
            if module_name.startswith("ember.nn.modules.") and module is not None:
                self._patch_globals(patcher, vars(module), public_ids)
        self._patch_globals(patcher, getattr(fn, "__globals__", {}),
                            self._autowrap_function_ids, user_wrapped=True)
        for globals_dict, name in _wrapped_globals + [
                (getattr(sys.modules.get(f.__module__), "__dict__", {}), f.__name__)
                for f in self._autowrap_functions]:
            value = globals_dict.get(name, getattr(builtins, name, None))
            if value is not None and not hasattr(value, "__fx_original__"):
                patcher.set_item(globals_dict, name, _cached_wrapper(value, True))

    @staticmethod
    def _patch_globals(patcher, globals_dict, function_ids, user_wrapped=False):
        for name, value in list(globals_dict.items()):
            if id(value) in function_ids and not hasattr(value, "__fx_original__"):
                patcher.set_item(globals_dict, name, _cached_wrapper(value, user_wrapped))




def _with_variadics_as_positional(fn):
    """``fn`` with its ``*args``/``**kwargs`` turned into ordinary positional parameters, so
    that each receives one proxy standing for the whole tuple or dict (as torch.fx does)."""
    code = fn.__code__
    variadic = code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    if not variadic:
        return fn
    extra = bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    if code.co_kwonlyargcount:
        raise NotImplementedError("ember.fx cannot trace keyword-only arguments next to "
                                  "*args/**kwargs")
    plain = code.replace(co_flags=code.co_flags & ~variadic,
                         co_argcount=code.co_argcount + extra)
    return types.FunctionType(plain, fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)


def ember_parameter():
    """``ember.nn.Parameter`` (imported late: ember.fx loads before ember.nn is complete)."""
    from ..nn.parameter import Parameter
    return Parameter


def _contains(value, test):
    """Whether ``test`` holds for a leaf of the nested tuples/lists/dicts ``value``."""
    if isinstance(value, (tuple, list)):
        return any(_contains(item, test) for item in value)
    if isinstance(value, dict):
        return any(_contains(item, test) for item in value.values())
    return test(value)


class PHBase:
    """A placeholder inside ``concrete_args``: that part of the argument stays a graph
    input while the rest is specialized."""

    def __repr__(self):
        return "PH"


PH = PHBase()


def _assert_is_none(value, msg):
    """Raise ``AssertionError(msg)`` unless ``value`` is None (the check of a
    ``concrete_args`` entry specialized to None)."""
    if value is not None:
        raise AssertionError(msg)


_side_effectful_functions.add(_assert)


def _operator_namespaces():
    """``ember.ops.profiler`` and the namespaces of custom operators (``ember.ops.mylib``)."""
    import ember.ops
    return [value for value in vars(ember.ops).values()
            if getattr(value, "_ember_op_namespace", False)] + [ember.ops.profiler]


@functools.cache
def _cached_wrapper(original, user_wrapped=False):
    return _recording_wrapper(original, user_wrapped)


def symbolic_trace(root, concrete_args=None):
    """Trace a module or function into a :class:`~ember.fx.GraphModule`.

    >>> import ember, ember.fx
    >>> gm = ember.fx.symbolic_trace(ember.nn.Sequential(ember.nn.Linear(2, 2)))
    >>> print(gm.code.strip())
    def forward(self, input):
        input_1 = input
        _0 = getattr(self, "0")(input_1);  input_1 = None
        return _0
    """
    from .graph_module import GraphModule
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if not inspect.isfunction(root) else root.__name__
    return GraphModule(tracer.root, graph, name)
