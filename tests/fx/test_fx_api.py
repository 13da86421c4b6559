"""ember.fx's whole public surface against torch.fx: the proxy module (TracerBase,
GraphAppendingTracer, Scope, ParameterProxy, Proxy.__torch_function__), node types and
side effects, immutable collections, annotate, config, tensor_type, traceback (node-meta
preservation), operator_schemas, CodeGen, GraphModule helpers, the subgraph rewriter's
ReplacedPatterns, and torch.ops.profiler's range operators in graphs."""

import doctest
import importlib
import inspect
import operator
import pickle
import typing

import numpy as np
import pytest
import torch
import torch.fx

import ember
import ember.fx

FX_MODULES = ["", ".graph", ".graph_module", ".node", ".proxy", ".subgraph_rewriter",
              ".interpreter", ".annotate", ".config", ".immutable_collections",
              ".operator_schemas", ".tensor_type", ".traceback"]


def fx(lib, path=""):
    """``torch.fx<path>`` or ``ember.fx<path>``."""
    return importlib.import_module(f"{lib.__name__}.fx{path}")


def ember_code(torch_code):
    return torch_code.replace("torch.", "ember.")


def same_values(ember_value, torch_value):
    np.testing.assert_allclose(ember_value.detach().numpy(), torch_value.detach().numpy(),
                               rtol=1e-6, atol=1e-6)


def halved(x):
    """A leaf function both tracers keep as one call (registered below)."""
    return x / 2


torch.fx.wrap("halved")
ember.fx.wrap("halved")


# ---------------------------------------------------------------------------- module paths


@pytest.mark.parametrize("path", FX_MODULES)
def test_every_fx_module_imports_with_torchs_public_names(path):
    torch_module, ember_module = fx(torch, path), fx(ember, path)
    names = getattr(torch_module, "__all__", None) or [
        name for name in vars(torch_module) if not name.startswith("_")
        and not inspect.ismodule(getattr(torch_module, name))]
    missing = [name for name in names if not hasattr(ember_module, name)]
    assert missing == []


@pytest.mark.parametrize("path", [".annotate", ".immutable_collections", ".operator_schemas",
                                  ".tensor_type", ".traceback", ".graph", ".graph_module",
                                  ".node", ".proxy", "ember.ops.profiler"])
def test_docstring_examples_run(path):
    module = fx(ember, path) if path.startswith(".") else importlib.import_module(path)
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, module.__name__):
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 0


# ---------------------------------------------------------------------------- proxy


def build_with_appending_tracer(lib):
    graph = lib.fx.Graph()
    tracer = fx(lib, ".proxy").GraphAppendingTracer(graph)
    x = lib.fx.Proxy(graph.placeholder("x"), tracer)
    y = lib.fx.Proxy(graph.placeholder("y"), tracer)
    out = (x * y + 1).relu().sum(dim=0)
    graph.output(out.node)
    return lib.fx.GraphModule(lib.nn.Module(), graph), tracer


def test_graph_appending_tracer_builds_torchs_graph():
    torch_gm, torch_tracer = build_with_appending_tracer(torch)
    ember_gm, ember_tracer = build_with_appending_tracer(ember)
    assert ember_gm.code == ember_code(torch_gm.code)
    assert ember_tracer.node_name_to_scope == torch_tracer.node_name_to_scope
    assert (ember_tracer.scope.module_path, ember_tracer.scope.module_type) == ("", None)
    x, y = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    same_values(ember_gm(ember.tensor(x), ember.tensor(y)),
                torch_gm(torch.tensor(x), torch.tensor(y)))


def test_proxy_torch_function_records_functions_and_methods_as_torch():
    graphs = {}
    for lib in (torch, ember):
        graph = lib.fx.Graph()
        x = lib.fx.Proxy(graph.placeholder("x"))
        relu = lib.fx.Proxy.__torch_function__(lib.relu, (lib.fx.Proxy,), (x,), {})
        summed = lib.fx.Proxy.__torch_function__(lib.Tensor.sum, (lib.fx.Proxy,), (relu,),
                                                 {"dim": 1})
        graph.output(summed.node)
        graphs[lib] = [(n.op, n.name, n.target if isinstance(n.target, str)
                        else n.target.__name__, len(n.args)) for n in graph.nodes]
    assert graphs[ember] == graphs[torch]


def test_proxy_torch_function_refuses_two_tracers():
    graph = ember.fx.Graph()
    a = ember.fx.Proxy(graph.placeholder("a"))
    b = ember.fx.Proxy(graph.placeholder("b"))
    with pytest.raises(RuntimeError, match="Found multiple different tracers"):
        ember.fx.Proxy.__torch_function__(ember.add, (ember.fx.Proxy,), (a, b), {})


def test_proxies_pass_through_functionals_outside_tracing():
    # Through ember's __torch_function__ dispatch: F.leaky_relu(proxy) records a node.
    codes = {}
    for lib in (torch, ember):
        graph = lib.fx.Graph()
        x = lib.fx.Proxy(graph.placeholder("x"))
        out = lib.nn.functional.leaky_relu(lib.cat([x, x]), 0.2)
        graph.output(out.node)
        codes[lib] = [(n.op, n.name) for n in graph.nodes]
    assert codes[ember] == codes[torch]


def test_tracer_base_create_arg_lowers_values_as_torch():
    for lib in (torch, ember):
        tracer = fx(lib, ".proxy").GraphAppendingTracer(lib.fx.Graph())
        x = tracer.create_proxy("placeholder", "x", (), {})
        lowered = tracer.create_arg(((x, 1), [2.5, "s"], {"k": x}, slice(1, x), range(3),
                                     lib.float32, None, ...))
        assert lowered[0][0] is x.node and lowered[2]["k"] is x.node
        assert lowered[1] == [2.5, "s"] and lowered[4] == range(3)
        with pytest.raises(NotImplementedError, match="argument of type"):
            tracer.create_arg(object())
        with pytest.raises(RuntimeError, match="Keys for dictionaries"):
            tracer.create_arg({x: 1})


def scoped_model(lib):
    class Inner(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 3)

        def forward(self, x):
            return self.lin(x).relu()

    class Outer(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()
            self.w = lib.nn.Parameter(lib.ones(3))

        def forward(self, x):
            if self.w.shape[0] == 3:  # needs ParameterProxy (param_shapes_constant)
                x = x * self.w
            return self.inner(x) + self.inner(x)

    return Outer()


def test_param_shapes_constant_scopes_and_module_stack_as_torch():
    results = {}
    for lib in (torch, ember):
        tracer = lib.fx.Tracer(param_shapes_constant=True)
        graph = tracer.trace(scoped_model(lib))
        stacks = [{key: (path, cls.__name__) for key, (path, cls)
                   in node.meta.get("nn_module_stack", {}).items()} for node in graph.nodes]
        scopes = {name: (path, getattr(cls, "__name__", cls))
                  for name, (path, cls) in tracer.node_name_to_scope.items()}
        code = lib.fx.GraphModule(tracer.root, graph).code
        results[lib] = (code.replace("torch.", "ember."), stacks, scopes)
    assert results[ember] == results[torch]
    with pytest.raises(ember.fx.proxy.TraceError):
        ember.fx.symbolic_trace(scoped_model(ember))  # without it: control flow on a proxy


def test_parameter_proxy_answers_from_the_parameter():
    module = ember.nn.Linear(4, 2)
    graph = ember.fx.Graph()
    node = graph.get_attr("weight")
    tracer = ember.fx.proxy.GraphAppendingTracer(graph)
    proxy = ember.fx.proxy.ParameterProxy(tracer, node, "weight", module.weight)
    assert (proxy.shape, proxy.size(), proxy.dim(), proxy.ndim, proxy.numel(),
            proxy.nelement()) == ((2, 4), (2, 4), 2, 2, 8, 8)
    assert repr(proxy) == "ParameterProxy(weight)"
    with pytest.raises(AssertionError):
        ember.fx.proxy.ParameterProxy(tracer, node, "weight", ember.ones(2))


def test_scope_context_manager_restores_as_torch():
    for lib in (torch, ember):
        proxy_module = fx(lib, ".proxy")
        scope = proxy_module.Scope("", None)
        with proxy_module.ScopeContextManager(scope, proxy_module.Scope("a.b", int)) as inner:
            assert (inner.module_path, inner.module_type) == ("a.b", int)
        assert (scope.module_path, scope.module_type) == ("", None)


def test_meta_proxy_computes_example_values():
    graph = ember.fx.Graph()
    node = graph.placeholder("x")
    node.meta["val"] = ember.ones(2, 3)
    x = ember.fx.proxy.MetaProxy(node, fake_mode=None)
    out = ember.fx.proxy.MetaProxy.__torch_function__(ember.sum, (), (x,), {"dim": 1})
    assert isinstance(out, ember.fx.proxy.MetaProxy)
    assert out.node.meta["val"].tolist() == [3.0, 3.0]


def test_trace_asserts_records_the_assert():
    # torch 2.13 under Python 3.11 cannot: it looks for POP_JUMP_IF_TRUE, which 3.11 spells
    # POP_JUMP_FORWARD_IF_TRUE, and raises TraceError; ember records torch's assert_fn node.
    namespace = {}
    # Compiled here, not in this file: pytest rewrites the asserts of test modules.
    exec(compile("def forward(x):\n    assert x.dim() == 2\n    return x + 1\n",
                 "model.py", "exec"), namespace)  # noqa: S102
    forward = namespace["forward"]
    tracer = ember.fx.Tracer()
    tracer.trace_asserts = True
    gm = ember.fx.GraphModule(ember.nn.Module(), tracer.trace(forward))
    assert [(node.op, node.target) for node in gm.graph.nodes][1:4] == [
        ("call_method", "dim"), ("call_function", operator.eq),
        ("call_function", ember.fx.proxy.assert_fn)]
    assert gm(ember.ones(2, 2)).tolist() == [[2.0, 2.0], [2.0, 2.0]]
    with pytest.raises(AssertionError, match="Assertion failed"):
        gm(ember.ones(2))
    with pytest.raises(ember.fx.proxy.TraceError):
        ember.fx.symbolic_trace(forward)


# ---------------------------------------------------------------------------- node


def test_target_and_argument_work_as_annotations():
    def create(kind: str, target: ember.fx.node.Target,
               args: tuple[ember.fx.node.Argument, ...]) -> ember.fx.node.Argument:
        return target

    hints = typing.get_type_hints(create, globalns=vars(ember.fx.node))
    torch_target = typing.get_args(torch.fx.node.Target)
    assert [str(arg).replace("torch", "ember") for arg in typing.get_args(hints["target"])] \
        == [str(arg).replace("torch", "ember") for arg in torch_target]
    assert str in typing.get_args(ember.fx.node.Argument)
    assert {t.__name__ for t in ember.fx.node.base_types} == {
        t.__name__ for t in torch.fx.node.base_types if t.__name__ in
        {"str", "int", "float", "bool", "complex", "dtype", "Tensor", "device",
         "memory_format", "layout"}}


def test_has_side_effect_keeps_calls_through_dead_code_elimination_as_torch():
    kept = {}
    for lib in (torch, ember):
        @lib.fx.has_side_effect
        def log(x):
            return None

        graph = lib.fx.Graph()
        x = graph.placeholder("x")
        graph.call_function(log, (x,))
        graph.call_function(operator.neg, (x,))
        graph.output(x)
        graph.eliminate_dead_code()
        kept[lib] = [node.name for node in graph.nodes]
    assert kept[ember] == kept[torch] == ["x", "log", "output"]


def test_node_arguments_are_immutable_as_torch():
    for lib in (torch, ember):
        graph = lib.fx.Graph()
        x = graph.placeholder("x")
        node = graph.call_function(lib.cat, ([x, x],), {"dim": 0})
        assert type(node.args[0]).__name__ == "immutable_list"
        assert type(node.kwargs).__name__ == "immutable_dict"
        with pytest.raises(TypeError, match="does not support mutation"):
            node.args[0].append(x)
        node.insert_arg(1, 0)
        assert node.args[1] == 0


def test_normalized_arguments_match_torch():
    for ember_target, torch_target, args in [(ember.sum, torch.sum, (0,)),
                                             (ember.flatten, torch.flatten, ()),
                                             (ember.nn.functional.relu,
                                              torch.nn.functional.relu, ())]:
        results = {}
        for lib, target in ((torch, torch_target), (ember, ember_target)):
            graph = lib.fx.Graph()
            x = graph.placeholder("x")
            node = graph.call_function(target, (x, *args))
            pair = node.normalized_arguments(lib.nn.Module(),
                                             normalize_to_only_use_kwargs=True)
            results[lib] = {key: (value.name if hasattr(value, "op") else value)
                            for key, value in pair.kwargs.items()}
        assert results[ember] == results[torch]


def test_stack_trace_is_recorded_with_record_stack_traces():
    tracer = ember.fx.Tracer()
    tracer.record_stack_traces = True
    graph = tracer.trace(lambda x: x + 1)
    add = next(node for node in graph.nodes if node.name == "add")
    assert "test_fx_api.py" in add.stack_trace and "ember/fx" not in add.stack_trace


# ---------------------------------------------------------------------------- collections


MUTATIONS = {
    "immutable_list": [lambda c: c.append(1), lambda c: c.extend([1]), lambda c: c.insert(0, 1),
                       lambda c: c.pop(), lambda c: c.remove(1), lambda c: c.clear(),
                       lambda c: c.reverse(), lambda c: c.sort(),
                       lambda c: c.__setitem__(0, 1), lambda c: c.__delitem__(0),
                       lambda c: c.__iadd__([1]), lambda c: c.__imul__(2)],
    "immutable_dict": [lambda c: c.__setitem__("a", 2), lambda c: c.__delitem__("a"),
                       lambda c: c.update(b=2), lambda c: c.pop("a"), lambda c: c.popitem(),
                       lambda c: c.clear(), lambda c: c.setdefault("b", 1),
                       lambda c: c.__ior__({"b": 2})],
}


@pytest.mark.parametrize("kind", sorted(MUTATIONS))
def test_immutable_collections_refuse_mutation_as_torch(kind):
    make = {"immutable_list": lambda cls: cls([1, 2]), "immutable_dict": lambda cls: cls(a=1)}
    for mutate in MUTATIONS[kind]:
        messages = []
        for lib in (torch, ember):
            collection = make[kind](getattr(fx(lib, ".immutable_collections"), kind))
            with pytest.raises(TypeError) as error:
                mutate(collection)
            messages.append(str(error.value))
        assert messages[0] == messages[1]


def test_immutable_collections_hash_pickle_and_copy_as_torch():
    from torch.fx.immutable_collections import immutable_dict as torch_dict
    from torch.fx.immutable_collections import immutable_list as torch_list

    from ember.fx.immutable_collections import immutable_dict, immutable_list
    items, mapping = immutable_list([1, (2, 3)]), immutable_dict(a=1, b=(2,))
    assert hash(items) == hash(torch_list([1, (2, 3)]))
    assert hash(mapping) == hash(torch_dict(a=1, b=(2,)))
    assert type(pickle.loads(pickle.dumps(items))) is immutable_list
    assert pickle.loads(pickle.dumps(mapping)) == mapping
    assert type(items + [4]) is list and items + [4] == [1, (2, 3), 4]


# ---------------------------------------------------------------------------- annotate, config


def test_annotate_sets_the_node_type_and_refuses_twice_as_torch():
    for lib in (torch, ember):
        annotate = fx(lib, ".annotate").annotate
        gm = lib.fx.symbolic_trace(lambda x: annotate(x + 1, int) * 2)
        assert [node.type for node in gm.graph.nodes] == [None, int, None, None]
        assert "add : int = x + 1" in gm.code
        assert annotate(3, int) == 3
        with pytest.raises(RuntimeError, match="already had a type"):
            lib.fx.symbolic_trace(lambda x: annotate(annotate(x + 1, int), float))


def test_config_has_torchs_defaults():
    for name in ("disable_progress", "verbose_progress", "do_not_emit_stack_traces"):
        assert getattr(ember.fx.config, name) == getattr(torch.fx.config, name)


# ---------------------------------------------------------------------------- tensor_type


def tensor_type_cases(tt):
    T, Dyn = tt.TensorType, tt.Dyn
    return [(Dyn, T((1, 2))), (int, Dyn), (int, int), (T((1, Dyn, 3)), T((1, 2, 3))),
            (T((1, 2)), T((1, 3))), (T((1, 2)), T((1, 2, 3))), (T((1, 2)), T((Dyn, Dyn))),
            (Dyn, Dyn), (int, float)]


def test_tensor_type_relations_and_reprs_match_torch():
    import torch.fx.tensor_type as torch_tt

    import ember.fx.tensor_type as ember_tt
    for (a, b), (ta, tb) in zip(tensor_type_cases(ember_tt), tensor_type_cases(torch_tt)):
        assert ember_tt.is_consistent(a, b) == torch_tt.is_consistent(ta, tb)
        assert ember_tt.is_more_precise(a, b) == torch_tt.is_more_precise(ta, tb)
        assert ember_tt.is_more_precise(b, a) == torch_tt.is_more_precise(tb, ta)
        assert repr(a) == repr(ta) and repr(b) == repr(tb)
    assert ember_tt.TensorType[1, 2] == ember_tt.TensorType((1, 2))
    assert repr(ember_tt.TensorType[1, ember_tt.Dyn]) == repr(torch_tt.TensorType[1,
                                                                                  torch_tt.Dyn])


# ---------------------------------------------------------------------------- traceback


def test_preserve_node_meta_and_annotate_tag_nodes_as_torch():
    tags = {}
    for lib in (torch, ember):
        traceback_module = fx(lib, ".traceback")
        with traceback_module.preserve_node_meta():
            with traceback_module.annotate({"stage": 1}):
                gm = lib.fx.symbolic_trace(lambda x: x.relu() + 1)
            assert traceback_module.has_preserved_node_meta()
        assert not traceback_module.has_preserved_node_meta()
        tags[lib] = [node.meta.get("custom") for node in gm.graph.nodes]
    assert tags[ember] == tags[torch] == [{"stage": 1}] * 4


def test_transformer_keeps_stack_traces_and_provenance_as_torch():
    results = {}
    for lib in (torch, ember):
        traceback_module = fx(lib, ".traceback")
        gm = lib.fx.symbolic_trace(lambda x: x.relu() + 1)
        for node in gm.graph.nodes:
            node.meta["stack_trace"] = f"line of {node.name}"
        with traceback_module.preserve_node_meta():
            new = lib.fx.Transformer(gm).transform()
        results[lib] = [(node.name, node.meta.get("stack_trace"),
                         [(s.name, s.pass_name, s.to_dict()["action"])
                          for s in node.meta.get("from_node", [])])
                        for node in new.graph.nodes]
        provenance = traceback_module.get_graph_provenance_json(new.graph)
        results[lib].append({name: [(d["name"], d["pass_name"]) for d in sources]
                             for name, sources in provenance.items()})
    assert results[ember] == results[torch]


def test_traceback_state_functions_follow_torch():
    states = {}
    for lib in (torch, ember):
        tb = fx(lib, ".traceback")
        trail = []
        with tb.preserve_node_meta():
            tb.set_stack_trace(["a\n", "b\n"])
            trail.append(tb.format_stack())
            tb.set_grad_fn_seq_nr(3)
            tb.set_grad_fn_seq_nr(5)
            trail.append(dict(tb.get_current_meta()))
            tb.reset_grad_fn_seq_nr()
            trail.append(dict(tb.get_current_meta()))
            tb.reset_grad_fn_seq_nr()
            tb.set_stack_trace([])
            trail.append(dict(tb.get_current_meta()))
        with tb.set_current_replay_node("n"):
            trail.append(tb.get_current_replay_node())
        trail.append(tb.get_current_replay_node())
        trail.append(isinstance(tb.format_stack(), list))
        states[lib] = trail
    assert states[ember] == states[torch]


def test_node_source_matches_torch():
    dicts = {}
    for lib in (torch, ember):
        tb = fx(lib, ".traceback")
        graph = lib.fx.Graph()
        x = graph.placeholder("x")
        source = tb.NodeSource(x, "pass_a", [tb.NodeSourceAction.CREATE,
                                             tb.NodeSourceAction.REPLACE])
        x.meta["from_node"] = [source]
        nested = tb.NodeSource(x, "pass_b", tb.NodeSourceAction.REPLACE)
        dicts[lib] = (nested.to_dict() | {"graph_id": None}, nested.print_readable().count("\n"),
                      nested == tb.NodeSource(x, "pass_b", tb.NodeSourceAction.REPLACE))
        for entry in dicts[lib][0]["from_node"]:
            entry["graph_id"] = None
        with pytest.raises(AssertionError):
            tb.NodeSource(x, "p", ["create"])
    assert dicts[ember] == dicts[torch]


# ---------------------------------------------------------------------------- operator_schemas


def test_normalize_function_matches_torch():
    from torch.fx.operator_schemas import normalize_function as torch_normalize

    from ember.fx.operator_schemas import normalize_function
    tx, ex = torch.ones(2, 3), ember.ones(2, 3)
    cases = [("sum", (0,), {}), ("mean", (1,), {}), ("transpose", (0, 1), {}),
             ("flatten", (), {}), ("cumsum", (1,), {}), ("sum", (), {"dim": 1}),
             ("cat", (), {"dim": 1}), ("stack", (), {})]
    for name, args, kwargs in cases:
        for only_kwargs in (False, True):
            first = [tx, tx] if name in ("cat", "stack") else tx
            expected = torch_normalize(getattr(torch, name), (first, *args), kwargs,
                                       normalize_to_only_use_kwargs=only_kwargs)
            first = [ex, ex] if name in ("cat", "stack") else ex
            got = normalize_function(getattr(ember, name), (first, *args), kwargs,
                                     normalize_to_only_use_kwargs=only_kwargs)
            assert len(got.args) == len(expected.args)
            assert list(got.kwargs) == list(expected.kwargs)
            assert [v for v in got.kwargs.values() if not isinstance(v, (list, ember.Tensor))] \
                == [v for v in expected.kwargs.values()
                    if not isinstance(v, (list, torch.Tensor))]
    def plain(a, b=2, *, c=3):
        return a
    assert normalize_function(plain, (1,)) == torch_normalize(plain, (1,))
    assert normalize_function(lambda *a: a, (1,)) is torch_normalize(lambda *a: a, (1,)) is None


def test_normalize_module_matches_torch():
    from torch.fx.operator_schemas import normalize_module as torch_normalize

    from ember.fx.operator_schemas import normalize_module
    results = {}
    for lib, normalize in ((torch, torch_normalize), (ember, normalize_module)):
        root = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Conv2d(1, 1, 1))
        results[lib] = [sorted(normalize(root, name, (1,), normalize_to_only_use_kwargs=True)
                               .kwargs) for name in ("0", "1")]
        with pytest.raises(RuntimeError, match="did not have that target"):
            normalize(root, "missing", (1,))
    assert results[ember] == results[torch]


def test_type_hints_and_type_matching_match_torch():
    import torch.fx.operator_schemas as torch_schemas

    import ember.fx.operator_schemas as ember_schemas
    for value in ([int, bool], (bool, int), [int, str], [], (), int):
        assert ember_schemas.create_type_hint(value) == torch_schemas.create_type_hint(value)
    pairs = [(list[int], tuple[int, int]), (list[int], int), (list[int], list[bool]),
             (int, str), (typing.Union[int, str], str),  # noqa: UP007  (torch's schema form) (float, bool), (list[int], tuple[()]),
             (list[int], tuple[int, ...]), (list[int], tuple[str])]
    for signature_type, argument_type in pairs:
        assert (ember_schemas.type_matches(signature_type, argument_type)
                == torch_schemas.type_matches(signature_type, argument_type))
    assert ember_schemas.type_matches(int, ember.dtype) == torch_schemas.type_matches(
        int, torch.dtype)


@pytest.mark.parametrize("call", [lambda lib, x: lib.relu_(x), lambda lib, x: lib.tanh_(x),
                                  lambda lib, x: lib.sum(x, 0, out=x),
                                  lambda lib, x: lib.neg(x, out=x)])
def test_mutable_operations_are_refused_when_checked(call):
    for lib in (torch, ember):
        tracer = lib.fx.Tracer()
        tracer.check_mutable_operations = True
        with pytest.raises(RuntimeError, match="Tried to trace mutable operation"):
            tracer.trace(lambda x: call(lib, x))
        tracer.trace(lambda x: lib.neg(x))


def test_operator_signatures():
    signatures = ember.fx.operator_schemas.get_signature_for_torch_op(ember.add)
    assert all(isinstance(s, inspect.Signature) for s in signatures)
    assert ember.fx.operator_schemas.get_signature_for_torch_op(len) is None


def test_wrapped_functions_are_named_and_declared_in_code_as_torch():
    codes = {}
    for lib in (torch, ember):
        gm = lib.fx.symbolic_trace(lambda x: halved(x) + halved(x * 3))
        assert gm.graph.find_nodes(op="call_function", target=halved)[0].meta["is_wrapped"]
        codes[lib] = gm.code
        assert gm(lib.ones(2)).tolist() == [2.0, 2.0]
    assert codes[ember] == ember_code(codes[torch])
    assert 'ember.fx._symbolic_trace.wrap("' in codes[ember]


# ---------------------------------------------------------------------------- graph, codegen


def small_graph(lib):
    graph = lib.fx.Graph()
    x = graph.placeholder("x", type_expr=lib.Tensor)
    graph.placeholder("y", type_expr=typing.List[int])  # noqa: UP006  (a typing alias)
    out = graph.call_function(lib.relu, (x,), type_expr=lib.Tensor)
    graph.output(out, type_expr=lib.Tensor)
    return graph


def test_type_annotations_in_generated_code_match_torch():
    assert small_graph(ember).python_code("self").src == ember_code(
        small_graph(torch).python_code("self").src)


def test_custom_codegen_and_body_transformer_match_torch():
    sources = {}
    for lib in (torch, ember):
        graph_module = fx(lib, ".graph")

        class Pairs(graph_module.CodeGen):
            def generate_output(self, output_args, *, descs=None, repr_fn=repr):
                return f"return ({repr_fn(output_args)}, {repr_fn(output_args)})"

            def additional_globals(self):
                return [("math_pi", 3.14)]

        graph = small_graph(lib)
        graph.set_codegen(Pairs())
        with graph.on_generate_code(lambda previous: lambda body: ["# made by Pairs\n"] + body):
            with_comment = graph.python_code("self")
        without = graph.python_code("self").src
        assert with_comment.globals["math_pi"] == 3.14
        assert graph.process_inputs(1, 2) == (1, 2) and graph.process_outputs(3) == 3
        assert graph.output_node().op == "output"
        sources[lib] = (with_comment.src, without)
    assert sources[ember] == tuple(ember_code(src) for src in sources[torch])


def test_shape_query_nodes_compute_like_torch():
    graph = ember.fx.Graph()
    x = graph.placeholder("x")
    size = graph.create_size_node(x, 1)
    stride = graph.create_stride_node(x, 0)
    offset = graph.create_storage_offset_node(x)
    graph.output((size, stride, offset))
    gm = ember.fx.GraphModule(ember.nn.Module(), graph)
    t = torch.ones(4, 5)[1:]
    assert gm(ember.ones(4, 5)[1:]) == (t.size(1), t.stride(0), t.storage_offset())
    assert graph.materialize_symints([2, 3]) == [2, 3]


# ---------------------------------------------------------------------------- graph module


def graph_module_of(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 2)
            self.unused = lib.nn.Sequential(lib.nn.ReLU())
            self.register_buffer("scale", lib.full((2,), 2.0))

        def forward(self, x):
            return lib.relu(self.lin(x)) * self.scale

    lib.manual_seed(0)
    return lib.fx.symbolic_trace(Net())


def test_submodule_helpers_match_torch():
    names = {}
    for lib in (torch, ember):
        gm = graph_module_of(lib)
        assert gm.add_submodule("extra.act", lib.nn.ReLU())
        assert not gm.add_submodule("lin.weight.x", lib.nn.ReLU())
        assert gm.delete_submodule("extra.act") and not gm.delete_submodule("nothing")
        gm.delete_all_unused_submodules()
        names[lib] = [name for name, _ in gm.named_modules()]
    assert names[ember] == names[torch]


def test_reduce_graph_module_rebuilds_the_module():
    gm = graph_module_of(ember)
    body = dict(gm.__dict__)
    rebuilt = ember.fx.graph_module.reduce_graph_module(body, "import ember\nimport operator\n")
    assert rebuilt.code == gm.code
    x = ember.randn(4, 3)
    assert bool((rebuilt(x) == gm(x)).all())

    class Importer:
        def import_module(self, name):
            import types
            module = types.ModuleType(name)
            exec("import ember\n" + gm.code, vars(module))  # noqa: S102
            return module

    packaged = ember.fx.graph_module.reduce_package_graph_module(Importer(), dict(body), "gen")
    assert packaged.code == gm.code


def test_graph_module_pickles_as_torch_does():
    reduced = {}
    for lib in (torch, ember):
        gm = graph_module_of(lib)
        function, (body, import_block) = gm.__reduce__()
        assert function is fx(lib, ".graph_module").reduce_graph_module
        assert "_graph" not in body and body["_code"] == gm.code
        copy = pickle.loads(pickle.dumps(gm))
        reduced[lib] = (type(copy).__name__, copy.code.replace("torch.", "ember."),
                        [line.replace("torch", "ember") for line in import_block.splitlines()
                         if "pytree" not in line and "NoneType" not in line])
        x = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
        assert np.array_equal(copy(lib.tensor(x)).detach().numpy(),
                              gm(lib.tensor(x)).detach().numpy())
    assert reduced[ember][:2] == reduced[torch][:2]
    assert set(reduced[torch][2]) <= set(reduced[ember][2])


def test_to_folder_writes_an_importable_module(tmp_path, monkeypatch):
    gm = graph_module_of(ember)
    gm.to_folder(tmp_path / "exported", "Exported")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("exported.module")
    x = ember.randn(4, 3)
    assert bool((module.Exported()(x) == gm(x)).all())


def test_boxed_run_matches_torch():
    for lib in (torch, ember):
        gm = lib.fx.symbolic_trace(lambda x, y: x * y)
        args = [lib.full((2,), 3.0), lib.full((2,), 2.0)]
        assert lib.fx.Interpreter(gm).boxed_run(args).tolist() == [6.0, 6.0] and args == []
        with pytest.raises(RuntimeError, match=r"expected 2 arguments .* \(missing arguments\)"):
            lib.fx.Interpreter(gm).boxed_run([lib.ones(1)])


# ---------------------------------------------------------------------------- subgraph rewriter


def rewrite(lib, **options):
    gm = lib.fx.symbolic_trace(lambda x: lib.relu(x + 1) + lib.relu(x * 3))
    replaced = fx(lib, ".subgraph_rewriter").replace_pattern_with_filters(
        gm, lambda a: lib.relu(a), lambda a: lib.sigmoid(a), **options)
    return gm, replaced


def test_replaced_patterns_match_torch():
    for options in ({}, {"match_filters": [lambda match, graph, pattern: False]}):
        torch_gm, torch_replaced = rewrite(torch, **options)
        ember_gm, ember_replaced = rewrite(ember, **options)
        assert ember_gm.code == ember_code(torch_gm.code)
        assert ([[n.name for n in r.replacements] for r in ember_replaced]
                == [[n.name for n in r.replacements] for r in torch_replaced])
        assert all(type(r).__name__ == "ReplacedPatterns" for r in ember_replaced)


def test_ignore_literals_matches_torch():
    codes = {}
    for lib in (torch, ember):
        gm = lib.fx.symbolic_trace(lambda x: (x + 1) * 2 + (x + 5))
        lib_rewriter = fx(lib, ".subgraph_rewriter")
        lib_rewriter.replace_pattern_with_filters(gm, lambda a: a + 1, lambda a: a - 1,
                                                  ignore_literals=True)
        codes[lib] = gm.code
    assert codes[ember] == ember_code(codes[torch])


# ---------------------------------------------------------------------------- profiler ops


def profiled_model(lib):
    class Foo(lib.nn.Module):
        def forward(self, x):
            with lib.profiler.record_function("foo"):
                return lib.relu(x)
    return Foo()


def profiler_tracer(lib):
    class ProfilerTracer(lib.fx.Tracer):
        def trace(self, root, concrete_args=None):
            record = lib.autograd.profiler.record_function
            original_enter, original_exit = record.__enter__, record.__exit__

            def enter(range_self):
                range_self._fx_handle = self.create_proxy(
                    "call_function", lib.ops.profiler._record_function_enter,
                    (range_self.name,), {})
                return range_self._fx_handle

            def exit_(range_self, *exc_info):
                lib.ops.profiler._record_function_exit(range_self._fx_handle)

            record.__enter__, record.__exit__ = enter, exit_
            try:
                return super().trace(root, concrete_args)
            finally:
                record.__enter__, record.__exit__ = original_enter, original_exit

    return ProfilerTracer()


def test_profiler_range_operators_in_traced_graphs_match_torch():
    results = {}
    for lib in (torch, ember):
        tracer = profiler_tracer(lib)
        graph = tracer.trace(profiled_model(lib))
        graph.eliminate_dead_code()  # the range operators have side effects: kept
        gm = lib.fx.GraphModule(tracer.root, graph)
        with lib.profiler.profile() as prof:
            gm(lib.ones(2, 3))
        results[lib] = (gm.code.replace("torch.", "ember."), str(graph).replace("torch.",
                                                                               "ember."),
                        "foo" in [event.name for event in prof.events()])
    assert results[ember] == results[torch]
    assert results[ember][2]


def test_profiler_operators_look_like_torchs_op_packets():
    for name in ("_record_function_enter", "_record_function_enter_new",
                 "_record_function_exit"):
        ember_op, torch_op = (getattr(lib.ops.profiler, name) for lib in (ember, torch))
        assert (str(ember_op), repr(ember_op)) == (str(torch_op), repr(torch_op))
        assert pickle.loads(pickle.dumps(ember_op)) is ember_op
    with pytest.raises(RuntimeError):
        ember.ops.profiler._record_function_enter(3)
    with pytest.raises(RuntimeError):
        torch.ops.profiler._record_function_enter(3)


def test_profiler_operators_record_on_proxies_outside_tracing_as_torch():
    printed = {}
    for lib in (torch, ember):
        graph = lib.fx.Graph()
        x = lib.fx.Proxy(graph.placeholder("x"))
        lib.ops.profiler._record_function_exit(x)
        graph.output(x.node)
        printed[lib] = str(graph)
    assert printed[ember] == printed[torch].replace("torch.", "ember.")


def shape_model(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 2)

        def forward(self, x):
            return lib.relu(self.lin(x)) * 2

    return Net()


def test_print_readable_and_typed_graph_match_torch():
    printed = {}
    for lib in (torch, ember):
        gm = lib.fx.symbolic_trace(shape_model(lib))
        fx(lib, ".passes.shape_prop").ShapeProp(gm).propagate(lib.ones(4, 3))
        outer = lib.fx.GraphModule(lib.nn.Module(), small_graph(lib))
        printed[lib] = (gm.print_readable(print_output=False), str(small_graph(lib)),
                        outer.print_readable(print_output=False))
    assert printed[ember] == tuple(ember_code(text) for text in printed[torch])


def test_print_readable_names_source_lines_of_recorded_stack_traces():
    tracer = ember.fx.Tracer()
    tracer.record_stack_traces = True
    graph = tracer.trace(shape_model(ember))
    text = ember.fx.GraphModule(tracer.root, graph).print_readable(print_output=False)
    line = inspect.getsourcelines(shape_model)[1] + 7  # the return line of Net.forward
    assert (f"# File: {__file__}:{line} in forward, code: return lib.relu(self.lin(x)) * 2"
            in text)


def test_concrete_args_checks_and_annotations_match_torch():
    def f(x, flag, opt=None):
        return x + 1 if flag and opt is None else x

    codes = {}
    for lib in (torch, ember):
        gm = lib.fx.symbolic_trace(f, concrete_args={"flag": True, "opt": None})
        codes[lib] = gm.code
        assert gm(lib.ones(1), True, None).tolist() == [2.0]
        with pytest.raises(AssertionError, match="opt has been specialized to have value None"):
            gm(lib.ones(1), True, 5)
        gm.graph.eliminate_dead_code()  # torch keeps _assert, drops _assert_is_none
        codes[lib, "dce"] = [node.name for node in gm.graph.nodes]

        class Typed(lib.nn.Module):
            def forward(self, x: lib.Tensor, k: int = 2) -> lib.Tensor:
                return x * k

        codes[lib, "typed"] = lib.fx.symbolic_trace(Typed()).code
    for key in (torch, (torch, "dce"), (torch, "typed")):
        ember_key = ember if key is torch else (ember, key[1])
        expected = codes[key] if isinstance(codes[key], list) else ember_code(
            codes[key])
        assert codes[ember_key] == expected


def test_placeholder_marker_and_containers_in_concrete_args():
    from torch.fx._symbolic_trace import PH as TORCH_PH

    from ember.fx._symbolic_trace import PH

    def f(x, scale):
        return x * scale

    for lib, marker in ((torch, TORCH_PH), (ember, PH)):
        gm = lib.fx.symbolic_trace(f, concrete_args={"scale": marker})
        assert [node.name for node in gm.graph.nodes] == ["x", "scale_1", "mul", "output"]
        assert gm(lib.ones(2), 3.0).tolist() == [3.0, 3.0]
    # A specialized tuple stays one argument, checked whole (torch flattens it with pytree).
    gm = ember.fx.symbolic_trace(lambda x, pair: x * pair[0] + pair[1],
                                 concrete_args={"pair": (2, 1)})
    assert gm(ember.ones(1), (2, 1)).tolist() == [3.0]
    with pytest.raises(AssertionError, match=r"pair has been specialized to have value \(2, 1\)"):
        gm(ember.ones(1), (5, 1))
    with pytest.raises(NotImplementedError, match="PH inside a container"):
        ember.fx.symbolic_trace(lambda x, pair: x, concrete_args={"pair": (PH, 1)})


def test_buffer_proxies_and_traced_func_name_as_torch():
    codes = {}
    for lib in (torch, ember):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("scale", lib.ones(2))

            def forward(self, x):
                return x * 2

            def infer(self, x):
                return self.scale * x

        tracer = lib.fx.Tracer()
        tracer.proxy_buffer_attributes = True
        tracer.traced_func_name = "infer"
        graph = tracer.trace(Net())
        codes[lib] = lib.fx.GraphModule(tracer.root, graph).code.replace("torch.", "ember.")
        tracer.traced_func_name = "missing"
        with pytest.raises(AssertionError, match="traced_func_name=missing doesn't exist"):
            tracer.trace(Net())
    assert codes[ember] == codes[torch]


def multi_output_cases(lib):
    def two_branches(x):
        a = x.relu()
        b = x.sigmoid()
        return a + b, a * 2

    def chained(x, y):
        s = x + y
        t = s.relu()
        return t - s.sigmoid(), (x + y).relu()

    def pattern(x):
        return x.relu(), x.sigmoid()

    def replacement(x):
        return x.tanh(), x.neg()

    def chain_pattern(x, y):
        s = x + y
        return s, s.relu()

    def chain_replacement(x, y):
        s = x.mul(y)
        return s, s.abs()

    return [(two_branches, pattern, replacement), (chained, chain_pattern, chain_replacement)]


@pytest.mark.parametrize("case", range(2))
def test_multi_output_patterns_are_replaced_as_torch(case):
    results = {}
    for lib in (torch, ember):
        model, pattern, replacement = multi_output_cases(lib)[case]
        gm = lib.fx.symbolic_trace(model)
        matches = lib.fx.replace_pattern(gm, pattern, replacement)
        results[lib] = (gm.code.replace("torch.", "ember."),
                        [(m.anchor.name, sorted((k.name, v.name) for k, v in m.nodes_map.items()))
                         for m in matches])
    assert results[ember] == results[torch]


@pytest.mark.parametrize("class_name", ["Node", "Graph", "Tracer", "Proxy", "Interpreter",
                                        "Transformer", "GraphModule", "proxy.TracerBase",
                                        "proxy.GraphAppendingTracer", "proxy.Attribute",
                                        "proxy.ParameterProxy", "proxy.MetaProxy",
                                        "graph.CodeGen"])
def test_methods_take_torchs_parameter_names(class_name):
    path, _, name = class_name.rpartition(".")
    torch_class = getattr(fx(torch, f".{path}" if path else ""), name)
    ember_class = getattr(fx(ember, f".{path}" if path else ""), name)
    missing = {}
    for name, torch_method in vars(torch_class).items():
        ember_method = getattr(ember_class, name, None)
        if (name.startswith("_") and name != "__init__") or not callable(torch_method) \
                or isinstance(torch_method, type):
            continue
        assert ember_method is not None, name
        torch_parameters = inspect.signature(torch_method).parameters
        ember_parameters = inspect.signature(ember_method).parameters
        lacking = [p for p, spec in torch_parameters.items() if p not in ember_parameters
                   and spec.kind not in (spec.VAR_POSITIONAL, spec.VAR_KEYWORD)]
        if lacking:
            missing[name] = lacking
    assert missing == {}


def test_dead_code_elimination_keeps_random_samplers_as_torch():
    kept = {}
    for lib in (torch, ember):
        graph = lib.fx.Graph()
        x = graph.placeholder("x")
        for function in (lib.randn, lib.rand_like, lib.nn.functional.dropout, lib.bernoulli,
                         lib.relu, lib.randperm, lib.normal, lib.multinomial, lib.poisson):
            graph.call_function(function, (x,))
        graph.output(x)
        graph.eliminate_dead_code()
        kept[lib] = [node.name for node in graph.nodes]
        graph.eliminate_dead_code(is_impure_node=lambda node: node.op == "placeholder")
        kept[lib, "custom"] = [node.name for node in graph.nodes]
    assert kept[ember] == kept[torch]
    assert kept[ember, "custom"] == kept[torch, "custom"]


def test_graph_and_node_keyword_options_as_torch():
    results = {}
    for lib in (torch, ember):
        graph = lib.fx.Graph()
        x = graph.placeholder("x", type_expr=lib.Tensor)
        named = graph.call_function(operator.neg, (x,), name="flipped")
        named.meta["tag"] = 1
        other = graph.call_function(operator.pos, (x,))
        out = graph.output(named, type_expr=lib.Tensor)
        named.replace_all_uses_with(other, propagate_meta=True)
        placeholders, returns = ["self"], [""]
        assert x.format_node([]) is not None and x.format_node(placeholders) is None
        out.format_node(maybe_return_typename=returns)
        copy = lib.fx.Graph()
        value, output_node = copy.graph_copy(graph, {}, return_output_node=True)
        # torch 2.13 writes the placeholder's name twice ('xx: torch.Tensor'); ember once.
        assert placeholders[1].endswith(f"x: {lib.__name__}.Tensor")
        results[lib] = (named.name, dict(other.meta), returns, value.name,
                        output_node.op, [n.name for n in graph.find_nodes(
                            op="call_function", target=operator.pos, sort=True)])
        with pytest.raises(AssertionError, match="target must not be None"):
            graph.find_nodes(op="call_function")
        with pytest.raises(AssertionError, match="already has .meta keys"):
            other.replace_all_uses_with(named, propagate_meta=True)
    assert results[ember] == tuple(item.replace("torch.", "ember.") if isinstance(item, str)
                                   else [i.replace("torch.", "ember.") for i in item]
                                   if isinstance(item, list) else item
                                   for item in results[torch])
