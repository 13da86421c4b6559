"""The ``__torch_function__`` protocol (``ember.overrides``), checked against torch's.

The same tensor-like classes (plain Python, framework-agnostic) are handed to torch and to
ember; what their overrides see (which function, which arguments, in which order) and what
the call returns must agree.
"""

import inspect
import re

import pytest
import torch

import ember
import ember.nn.functional as F

FRAMEWORKS = {"torch": torch, "ember": ember}


class Recorder:
    """A tensor-like (not a Tensor subclass) that records each call it is handed."""

    calls = []

    def __init__(self, name="r"):
        self.name = name

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls.append((func, types, args, kwargs))
        return "recorded"


def _ember_object(torch_name):
    """ember's object for a name torch's resolve_name gives (``torch.Tensor.add``...)."""
    path = torch_name.split(".")[1:]
    if path[0] == "functional":  # torch.functional.split is torch.split
        path = path[1:]
    value = ember
    for part in path:
        value = getattr(value, part, None)
        if value is None:
            return None
    return value


def _required_positional(stub):
    try:
        signature = inspect.signature(stub)
    except (TypeError, ValueError):
        return 1
    count = 0
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD) and \
                parameter.default is parameter.empty:
            count += 1
        elif parameter.kind is parameter.VAR_POSITIONAL and count == 0:
            count += 1
    return max(count, 1)


def _torch_sample():
    """(torch function, its name, number of tensor-like arguments) for every function torch
    lists in get_testing_overrides that ember has too (properties excepted)."""
    sample = []
    for function, stub in torch.overrides.get_testing_overrides().items():
        name = torch.overrides.resolve_name(function)
        if name is None or name.endswith("__get__") or _ember_object(name) is None:
            continue
        if name.rsplit(".", 1)[-1] in ("__init_subclass__", "__subclasshook__"):
            continue
        sample.append((function, name, _required_positional(stub)))
    return sample


TORCH_SAMPLE = _torch_sample()
PUBLIC_FUNCTIONS = {function for functions in ember.overrides.get_overridable_functions().values()
                    for function in functions}


def _call_recorded(function, count):
    Recorder.calls.clear()
    args = tuple(Recorder(f"r{i}") for i in range(count))
    try:
        result = function(*args)
    except Exception as error:  # noqa: BLE001  (reported: the function did not dispatch)
        return f"{type(error).__name__}: {error}", Recorder.calls[:]
    return result, Recorder.calls[:]


def test_the_sample_is_broad():
    namespaces = {name.split(".")[1] if name.count(".") > 1 else "torch"
                  for _, name, _ in TORCH_SAMPLE}
    assert {"torch", "Tensor", "nn", "linalg", "special", "fft"} <= namespaces
    assert len(TORCH_SAMPLE) > 1000


def test_every_function_torch_dispatches_dispatches_in_ember_with_its_public_object():
    failures = []
    for function, name, count in TORCH_SAMPLE:
        torch_result, torch_calls = _call_recorded(function, count)
        if torch_result != "recorded":
            continue  # torch does not dispatch this one on these arguments
        public = _ember_object(name)
        result, calls = _call_recorded(public, count)
        expected_func = _ember_object(torch.overrides.resolve_name(torch_calls[0][0]) or name)
        if result != "recorded" or not calls:
            failures.append(f"{name}: {result}")
        elif calls[0][0] is not expected_func and (
                calls[0][0].__name__ != torch_calls[0][0].__name__ or
                calls[0][0] not in PUBLIC_FUNCTIONS):
            # (torch's operators share function objects: Tensor.__rtruediv__ is __rdiv__)
            failures.append(f"{name}: func {calls[0][0]!r}, expected {expected_func!r}")
    assert failures == []


def test_functions_ember_alone_has_dispatch_too():
    # ember's public functions that torch's testing list does not cover (Python-level torch
    # functions, newer names): each still hands a tensor-like to its override
    covered = {id(_ember_object(name)) for _, name, _ in TORCH_SAMPLE}
    overridable = ember.overrides.get_overridable_functions()
    failures = []
    for namespace, functions in overridable.items():
        for public in functions:
            if id(public) in covered:
                continue
            result, calls = _call_recorded(public, _required_positional(public))
            if result != "recorded" or calls[0][0] != public:  # (== for a property's __get__)
                failures.append(f"{namespace.__name__}.{public.__name__}: {result}")
    assert failures == []


@pytest.mark.parametrize("name", ["cat", "stack", "broadcast_tensors", "block_diag",
                                  "cartesian_prod", "einsum", "meshgrid"])
def test_tensor_likes_inside_lists_and_varargs_dispatch(name):
    seen = {}
    for label, fw in FRAMEWORKS.items():
        Recorder.calls.clear()
        plain = fw.ones(2)
        if name == "einsum":
            result = fw.einsum("i,i->", plain, Recorder())
        elif name in ("cat", "stack"):
            result = getattr(fw, name)([plain, Recorder()])
        else:
            result = getattr(fw, name)(plain, Recorder())
        assert result == "recorded"
        seen[label] = Recorder.calls[0][0].__name__
    assert seen["ember"] == seen["torch"]


def test_keyword_arguments_and_func_as_torch_passes_them():
    seen = {}
    for label, fw in FRAMEWORKS.items():
        got = []
        for call in (lambda: fw.add(fw.ones(1), Recorder(), alpha=2),
                     lambda: fw.add(input=Recorder(), other=1),
                     lambda: fw.ones(1).add(Recorder()),
                     lambda: fw.ones(1) + Recorder(),
                     lambda: Recorder() + fw.ones(1) if False else fw.ones(1).__radd__(Recorder()),
                     lambda: fw.ones(1) - Recorder(),
                     lambda: fw.ones(2)[Recorder()],
                     lambda: fw.where(fw.ones(1) > 0, Recorder(), 0.0),
                     lambda: fw.linalg.solve(fw.ones(2, 2), Recorder())):
            Recorder.calls.clear()
            assert call() == "recorded"
            func, types, args, kwargs = Recorder.calls[0]
            got.append((torch.overrides.resolve_name(func) if fw is torch
                        else ember.overrides.resolve_name(func),
                        [t.__name__ for t in types],
                        [type(a).__name__ for a in args],
                        {k: type(v).__name__ for k, v in (kwargs or {}).items()}))
        seen[label] = got
    assert seen["ember"] == seen["torch"]


# ---------------------------------------------------------------- dispatch order and errors


def _hierarchy(log, declines=True):
    class A:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            log.append(("A", tuple(t.__name__ for t in types)))
            return NotImplemented if declines else "A"

    class B(A):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            log.append(("B", tuple(t.__name__ for t in types)))
            return NotImplemented if declines else "B"

    class C:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            log.append(("C", tuple(t.__name__ for t in types)))
            return NotImplemented if declines else "C"

    return A, B, C


@pytest.mark.parametrize("order", ["AB", "BA", "AC", "CA", "CAB", "ACB", "AAB", "CBAB"])
def test_dispatch_order_equals_torchs(order):
    outcome = {}
    for label, fw in FRAMEWORKS.items():
        log = []
        classes = dict(zip("ABC", _hierarchy(log)))
        args = [classes[c]() for c in order]
        with pytest.raises(TypeError) as error:
            fw.cat(args)
        outcome[label] = (log, _normalise(str(error.value)))
    assert outcome["ember"] == outcome["torch"]


def _normalise(message):
    return re.sub(r" at 0x[0-9a-f]+", "", message).replace("ember", "torch")


def test_first_acceptance_wins_as_in_torch():
    for label, fw in FRAMEWORKS.items():
        log = []
        A, B, C = _hierarchy(log, declines=False)
        assert fw.add(A(), B()) == "B", label
        assert fw.add(C(), A()) == "C", label


@pytest.mark.parametrize("call", ["function", "method", "functional", "operator", "compare"])
def test_all_declining_raises_torchs_error(call):
    messages = {}
    for label, fw in FRAMEWORKS.items():
        log = []
        A, _, _ = _hierarchy(log)
        if call == "compare":  # == falls back to identity, as in torch
            messages[label] = fw.ones(1) == A()
            continue
        with pytest.raises(TypeError) as error:
            {"function": lambda: fw.mul(fw.ones(1), A()),
             "method": lambda: fw.ones(1).mul(A()),
             "functional": lambda: fw.nn.functional.relu(A()),
             "operator": lambda: fw.ones(1) * A()}[call]()
        messages[label] = _normalise(str(error.value))
    assert messages["ember"] == messages["torch"]


# ---------------------------------------------------------------- Tensor subclasses


def _subclass(fw):
    class Tagged(fw.Tensor):
        pass
    return Tagged


SUBCLASS_OPS = {
    "add": lambda fw, s: s + 1,
    "radd": lambda fw, s: 1 + s,
    "mul_plain": lambda fw, s: fw.ones(2) * s,
    "method": lambda fw, s: s.exp(),
    "reduction": lambda fw, s: s.sum(),
    "cat": lambda fw, s: fw.cat([fw.ones(2), s]),
    "index": lambda fw, s: s[0],
    "view": lambda fw, s: s.view(2, 1),
    "relu": lambda fw, s: fw.nn.functional.relu(s),
    "linear": lambda fw, s: fw.nn.functional.linear(s, fw.ones(3, 2)),
    "max_dim": lambda fw, s: fw.max(s, 0),
    "split": lambda fw, s: s.split(1),
    "matmul": lambda fw, s: s @ fw.ones(2),
    "clone": lambda fw, s: s.clone(),
    "in_place": lambda fw, s: s.add_(1),
    "item": lambda fw, s: s.sum().item(),
    "shape": lambda fw, s: s.size(),
}


def _type_names(value):
    if isinstance(value, tuple):
        return type(value).__name__, [_type_names(v) for v in value]
    return type(value).__name__


@pytest.mark.parametrize("op", sorted(SUBCLASS_OPS))
def test_a_tensor_subclass_keeps_its_type_as_in_torch(op):
    types = {}
    for label, fw in FRAMEWORKS.items():
        tagged = fw.ones(2).as_subclass(_subclass(fw))
        types[label] = _type_names(SUBCLASS_OPS[op](fw, tagged))
    assert types["ember"] == types["torch"]


def test_subclass_values_and_gradients_equal_plain_ones():
    Tagged = _subclass(ember)
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = (x.as_subclass(Tagged) * 3).exp().sum()
    assert type(y) is Tagged
    y.backward()
    expected = torch.tensor([1.0, 2.0], requires_grad=True)
    (expected * 3).exp().sum().backward()
    torch.testing.assert_close(torch.from_numpy(x.grad.numpy()), expected.grad)


def test_subclass_override_sees_the_public_function_and_can_defer():
    seen = {}
    for label, fw in FRAMEWORKS.items():
        names = []

        class Logged(fw.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                names.append(func.__name__)
                return super().__torch_function__(func, types, args, kwargs)

        logged = fw.ones(2).as_subclass(Logged)
        result = fw.nn.functional.relu(logged * 2 + fw.ones(2)).sum()
        seen[label] = (names, type(result).__name__)
    assert seen["ember"] == seen["torch"]


def test_parameters_stay_plain_as_in_torch():
    for fw in FRAMEWORKS.values():
        parameter = fw.nn.Parameter(fw.ones(2))
        assert type(parameter * 2) is fw.Tensor
        assert type(fw.cat([parameter, parameter])) is fw.Tensor
        assert not fw.overrides.has_torch_function((parameter,))


def test_disable_torch_function_subclass():
    seen = {}
    for label, fw in FRAMEWORKS.items():
        tagged = fw.ones(2).as_subclass(_subclass(fw))
        with fw._C.DisableTorchFunctionSubclass():
            inside = type(tagged + 1).__name__
        seen[label] = (inside, type(tagged + 1).__name__)
    assert seen["ember"] == seen["torch"] == ("Tensor", "Tagged")


# ---------------------------------------------------------------- has_torch_function and co.


def _probe_values(fw):
    tagged = fw.ones(1).as_subclass(_subclass(fw))
    return {
        "plain": (fw.ones(1),), "parameter": (fw.nn.Parameter(fw.ones(1)),),
        "subclass": (tagged,), "tensor_like": (Recorder(),), "nested": ([Recorder()],),
        "scalars": (1, 2.0, None, "x"), "mixed": (fw.ones(1), Recorder()), "empty": (),
    }


def test_has_torch_function_equals_torchs():
    results = {}
    for label, fw in FRAMEWORKS.items():
        o = fw.overrides
        results[label] = {name: (o.has_torch_function(values),
                                 o.has_torch_function_variadic(*values),
                                 [o.has_torch_function_unary(v) for v in values],
                                 [o.is_tensor_like(v) for v in values])
                          for name, values in _probe_values(fw).items()}
    assert results["ember"] == results["torch"]


def test_has_torch_function_is_true_under_a_mode():
    for fw in FRAMEWORKS.values():
        with fw.overrides.BaseTorchFunctionMode():
            assert fw.overrides.has_torch_function((fw.ones(1),))


def test_handle_torch_function_on_a_users_function_as_torch():
    results = {}
    for label, fw in FRAMEWORKS.items():
        o = fw.overrides

        def scaled(a, b=2):
            if o.has_torch_function((a,)):
                return o.handle_torch_function(scaled, (a,), a, b=b)
            return a * b

        Recorder.calls.clear()
        plain = scaled(fw.ones(1)).tolist()
        recorded = scaled(Recorder(), b=3)
        func, types, args, kwargs = Recorder.calls[0]
        results[label] = (plain, recorded, func is scaled, len(args), kwargs)
    assert results["ember"] == results["torch"]


def test_wrap_torch_function_as_torch():
    results = {}
    for label, fw in FRAMEWORKS.items():
        @fw.overrides.wrap_torch_function(lambda a, b=None: (a, b))
        def combine(a, b=None):
            return a + (0 if b is None else b)

        Recorder.calls.clear()
        results[label] = (combine(fw.ones(1)).tolist(), combine(1, Recorder()),
                          Recorder.calls[0][0] is combine)
    assert results["ember"] == results["torch"]


@pytest.mark.parametrize("name", ["add", "Tensor.add", "Tensor.__add__", "Tensor.sum",
                                  "nn.functional.relu", "linalg.norm", "special.erf",
                                  "fft.fft", "cat"])
def test_resolve_name_and_method_test_equal_torchs(name):
    def lookup(fw):
        value = fw
        for part in name.split("."):
            value = getattr(value, part)
        return value
    expected = torch.overrides.resolve_name(lookup(torch))
    assert ember.overrides.resolve_name(lookup(ember)) == expected
    assert ember.overrides.is_tensor_method_or_property(lookup(ember)) == \
        torch.overrides.is_tensor_method_or_property(lookup(torch))


def test_overridable_and_ignored_functions():
    overridable = ember.overrides.get_overridable_functions()
    assert ember.add in overridable[ember]
    assert F.leaky_relu in overridable[F]
    assert ember.Tensor.add in overridable[ember.Tensor]
    ignored = ember.overrides.get_ignored_functions()
    for name in ("is_grad_enabled", "get_default_dtype", "set_num_threads", "is_tensor"):
        assert getattr(ember, name) in ignored
        assert getattr(torch, name) in torch.overrides.get_ignored_functions()
    with ember.overrides.BaseTorchFunctionMode():
        pass
    stubs = ember.overrides.get_testing_overrides()
    assert stubs[ember.add](ember.ones(1), 1) == -1
    assert list(inspect.signature(stubs[ember.add]).parameters) == \
        list(inspect.signature(ember.add).parameters)


# ---------------------------------------------------------------- modes


def _program(fw):
    x = fw.zeros(2)
    y = fw.nn.functional.relu(x + 1)
    z = fw.cat([y, y]).sum()
    return z.item()


def test_a_mode_sees_the_calls_torchs_sees():
    seen = {}
    for label, fw in FRAMEWORKS.items():
        names = []

        class Log(fw.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                names.append(func.__name__)
                return func(*args, **(kwargs or {}))

        with Log():
            value = _program(fw)
        seen[label] = (names, value)
    assert seen["ember"] == seen["torch"]


def test_modes_nest_and_each_is_off_the_stack_in_its_own_override():
    seen = {}
    for label, fw in FRAMEWORKS.items():
        log = []

        class Outer(fw.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                log.append(("outer", func.__name__))
                return func(*args, **(kwargs or {}))

        class Inner(fw.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                log.append(("inner", func.__name__))
                return func(*args, **(kwargs or {}))

        x = fw.ones(2)
        with Outer(), Inner():
            fw.neg(x)
        with Outer():
            fw.neg(x)
        fw.neg(x)
        seen[label] = log
    assert seen["ember"] == seen["torch"]


def test_a_mode_can_replace_results_and_decline():
    for fw in FRAMEWORKS.values():
        class Constant(fw.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                if func is fw.mul:
                    return "replaced"
                return func(*args, **(kwargs or {}))

        with Constant():
            assert fw.mul(fw.ones(1), 2) == "replaced"
            assert fw.add(fw.ones(1), 2).tolist() == [3.0]


def test_a_mode_runs_before_tensor_likes():
    seen = {}
    for label, fw in FRAMEWORKS.items():
        log = []

        class Mode(fw.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                log.append(("mode", [t.__name__ for t in types]))
                return NotImplemented

        Recorder.calls.clear()
        plain = fw.ones(1)
        with Mode():
            result = fw.add(plain, Recorder())
        seen[label] = (log, result, len(Recorder.calls))
    assert seen["ember"] == seen["torch"]


def test_disable_torch_function_turns_modes_off():
    for fw in FRAMEWORKS.values():
        log = []

        class Mode(fw.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                log.append(func.__name__)
                return func(*args, **(kwargs or {}))

        with Mode():
            with fw._C.DisableTorchFunction():
                fw.ones(1) + 1
        assert log == []


# ---------------------------------------------------------------- ember.fx


def test_fx_proxy_passes_through_functionals_via_the_protocol():
    import ember.fx

    graph = ember.fx.Graph()
    proxy = ember.fx.Proxy(graph.placeholder("x"))
    out = F.leaky_relu(ember.cat([proxy, proxy]), 0.2)
    graph.output(out.node)
    targets = [node.target for node in graph.nodes if node.op == "call_function"]
    assert targets == [ember.cat, F.leaky_relu]
    module = ember.fx.GraphModule(ember.nn.Module(), graph)
    x = ember.tensor([-1.0, 2.0])
    expected = torch.nn.functional.leaky_relu(torch.cat([torch.tensor([-1.0, 2.0])] * 2), 0.2)
    assert module(x).tolist() == expected.tolist()


# ---------------------------------------------------------------- what the wrappers leave alone


def test_warnings_inside_public_functions_still_point_at_the_callers_line():
    import warnings

    for fw in FRAMEWORKS.values():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fw.nn.functional.softmax(fw.ones(2, 2))  # implicit dim: torch warns
            fw.ones(4).resize(2, 2)  # deprecated method
        assert [w.filename for w in caught] == [__file__] * 2, [str(w.message) for w in caught]


def test_plain_calls_take_the_fast_path_and_give_plain_results():
    x = ember.ones(3)
    assert type(x + 1) is ember.Tensor and type(ember.add(x, x)) is ember.Tensor
    assert ember.add.__torch_function_implementation__ is not ember.add
    assert ember.add.__wrapped__ is ember.add.__torch_function_implementation__
    assert inspect.signature(ember.add) == inspect.signature(ember.add.__wrapped__)
    assert ember.add.__name__ == "add" and ember.Tensor.add.__qualname__ == "Tensor.add"


def test_public_functions_pickle_by_their_public_names():
    import pickle
    import pickletools

    def globals_in(obj):
        return [arg for op, arg, _ in pickletools.genops(pickle.dumps(obj, protocol=2))
                if op.name == "GLOBAL"]

    for name in ("relu", "leaky_relu", "softmax", "cross_entropy"):
        assert [g.replace("ember", "torch") for g in globals_in(getattr(F, name))] == \
            globals_in(getattr(torch.nn.functional, name))
    for public in (ember.add, ember.cat, ember.linalg.norm, ember.special.erf, ember.fft.fft,
                   ember.Tensor.add, ember.Tensor.__add__, ember.nn.init.uniform_):
        assert pickle.loads(pickle.dumps(public)) is public


def test_a_subclass_prints_and_records_autograd_as_in_torch():
    seen = {}
    for label, fw in FRAMEWORKS.items():
        Tagged = _subclass(fw)
        leaf = fw.ones(2, requires_grad=True)
        tagged = leaf.as_subclass(Tagged)
        seen[label] = (repr(tagged * 2), repr(fw.arange(12.0).reshape(3, 4).as_subclass(Tagged)),
                       tagged.grad_fn.name(), tagged.is_leaf, tagged._base is leaf,
                       repr(fw.nn.Parameter(fw.ones(1))))
    assert seen["ember"] == seen["torch"]


def test_tensor_valued_properties_dispatch_as_torch():
    seen = {}
    for label, fw in FRAMEWORKS.items():
        calls = []

        class Tagged(fw.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                o = fw.overrides
                calls.append((o.resolve_name(func), o.is_tensor_method_or_property(func)))
                return super().__torch_function__(func, types, args, kwargs)

        leaf = fw.ones(2, 2, requires_grad=True)
        tagged = leaf.as_subclass(Tagged)
        kinds = [type(getattr(tagged, name)).__name__
                 for name in ("T", "mT", "H", "mH", "real", "data")]
        (tagged * 2).sum().backward()
        seen[label] = (kinds, tagged.grad, type(leaf.grad).__name__, calls)
    assert seen["ember"] == seen["torch"]


def test_helpers_that_torch_does_not_dispatch_are_left_alone():
    # the protocol's own helpers, higher-order functions and functional-writing helpers
    assert F.handle_torch_function is ember.overrides.handle_torch_function
    assert F.has_torch_function((Recorder(),)) is torch.nn.functional.has_torch_function(
        (Recorder(),)) is True
    assert ember.vmap is ember.func.vmap
    for name in ("vmap", "assert_int_or_pair"):
        namespace = ember if hasattr(ember, name) else F
        assert getattr(namespace, name) in ember.overrides.get_ignored_functions()
