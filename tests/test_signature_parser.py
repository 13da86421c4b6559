"""Typed signatures checked at the API boundary (``ember/ops/_signature.py``): each call below
is made on ember and on torch, and the outcome compared: the same exception type and message
(for torch's "invalid combination of arguments" message, its first line: the list of overloads
after it is torch's own), or the same result."""

import inspect

import numpy as np
import pytest
import torch

import ember
from ember.ops._registry import registry
from ember.ops._signature import Signature, parse_schema, signature, signature_of

# ``lib`` is ember or torch; ``x`` a float tensor of shape [2, 3], ``i`` an int64 one.
CALLS = [
    # Tensor: positional and keyword, None / str / list / number
    "lib.exp(None)", "lib.exp('abc')", "lib.exp([1.0])", "lib.exp(input=None)",
    "lib.sum(None)", "lib.sum(input=None)", "lib.cumsum(None, 1)", "lib.cumsum(x, 1, out='a')",
    "lib.is_conj(None)", "lib.resolve_conj(['a', 'b'])", "lib.resolve_neg(1)",
    "lib.gather(x, 1, None)", "lib.index_select(x, 0, 'a')", "lib.masked_select(x, 1.5)",
    "lib.take(None, i)", "lib.atan2(x, 2)", "lib.atan2(None, x)", "lib.hypot(x, other='a')",
    "lib.transpose(None, 0, 1)", "lib.tril(None)", "lib.flip(None, [0])",
    # Tensor that also takes numbers (add/sub/mul/div)
    "lib.add(x, None)", "lib.add(None, x)", "lib.add(x, 'a')", "lib.add(x, [1, 2, 3])",
    "lib.add(2, x)", "lib.add(x, np.float64(2))", "lib.add(x, lib.tensor(2.0))",
    "lib.mul(x, None)", "lib.mul(2, x)", "lib.sub(x, 'a')", "lib.div(x, None)",
    # Scalar
    "lib.add(x, 1, alpha='a')", "lib.add(x, x, alpha=None)", "lib.add(x, x, alpha=np.int64(2))",
    "lib.add(x, x, alpha=lib.tensor(2))", "lib.histc(x, 4, 'a')",
    # int: float, bool, str, NumPy and 0-dim tensor forms, positional and keyword
    "lib.cumsum(x, 1.5)", "lib.cumsum(x, dim=1.5)", "lib.cumsum(x, True)",
    "lib.cumsum(x, dim=True)", "lib.cumsum(x, '1')", "lib.cumsum(x, np.int32(1))",
    "lib.cumsum(x, np.int64(1))", "lib.cumsum(x, lib.tensor(1))", "lib.cumsum(x, np.float64(1))",
    "lib.cumsum(x, lib.tensor(1.0))", "lib.cumprod(x, 1.5)", "lib.logcumsumexp(x, 1.5)",
    "lib.cummax(x, 1.5)", "lib.argmax(x, 1.5)", "lib.argmax(x, True)", "lib.argmin(x, 0.5)",
    "lib.tril(x, 1.5)", "lib.tril(x, True)", "lib.tril(x, diagonal=1.5)", "lib.triu(x, 'a')",
    "lib.transpose(x, 0, 1.0)", "lib.flatten(x, 0.5)", "lib.unsqueeze(x, 1.5)",
    "lib.select(x, 0.5, 0)", "lib.diagonal(x, 1.5)", "lib.chunk(x, 1.5)", "lib.unbind(x, 1.5)",
    "lib.kthvalue(x, 1.5)", "lib.topk(x, 1.5)", "lib.gather(x, 1.5, i)", "lib.rot90(x, 1.5)",
    # int[N] / int[]: a float, a float element, a NumPy element, a list
    "lib.sum(x, 1.5)", "lib.sum(x, dim=1.5)", "lib.sum(x, True)", "lib.sum(x, (0, 1.5))",
    "lib.sum(x, [0, 1])", "lib.sum(x, np.int64(1))", "lib.sum(x, lib.tensor(1))",
    "lib.sum(x, None)", "lib.mean(x, 1.5)", "lib.prod(x, 1.5)", "lib.nansum(x, 1.5)",
    "lib.nanmean(x, 1.5)", "lib.logsumexp(x, 1.5)", "lib.amax(x, 1.5)", "lib.amin(x, (0.5,))",
    "lib.count_nonzero(x, 1.5)", "lib.all(x, 1.5)", "lib.any(x, 1.5)", "lib.all(None)",
    "lib.flip(x, 1.5)", "lib.flip(x, (1.5,))", "lib.flip(x, (0, 1.5))", "lib.flip(x, None)",
    "lib.flip(x, [0, np.int64(1)])", "lib.flip(x, 'ab')", "lib.tile(x, 1.5)",
    # bool
    "lib.sum(x, 0, 1)", "lib.sum(x, 0, keepdim=1)", "lib.sum(x, 0, keepdim=None)",
    "lib.sum(x, 0, keepdim=np.bool_(True))", "lib.argmax(x, 0, keepdim='a')",
    "lib.topk(x, 1, largest=1)",
    # dtype (ScalarType?), keyword-only
    "lib.sum(x, 0, dtype='float')", "lib.sum(x, 0, dtype=np.float32)",
    "lib.cumsum(x, 1, dtype=float)", "lib.cumsum(x, 1, dtype=lib.float64)",
    "lib.cumsum(x, 1, dtype=3)",
    # str
    "lib.div(x, x, rounding_mode=1)",
    # unknown keywords, too many positionals, repeated arguments
    "lib.exp(x, foo=1)", "lib.cumsum(x, 1, foo=2)", "lib.exp(x, x)",
    "lib.cumsum(x, 1, input=x)", "lib.mul(x, x, alpha=2)", "lib.tril(x, 0, 1)",
    # Tensor methods count from the first argument after self
    "x.cumsum(1.5)", "x.cumsum(dim=1.5)", "x.cumsum(1, foo=1)", "x.tril(1.5)",
    "x.tril(diagonal=1.5)", "x.add(None)", "x.add('a')", "x.sum(1.5)", "x.flip(0)",
    "x.transpose(0, 1.5)",
    # dims out of range reach the op's own check, which agrees with torch
    "lib.sum(x, 5)", "lib.cumsum(x, 5)", "lib.transpose(x, 0, 5)", "lib.unsqueeze(x, -4)",
]

# the first line of these messages is compared; what follows lists torch's own overloads
COMBINATION = "received an invalid combination of arguments"


def _outcome(lib, call):
    x = lib.arange(6.0).reshape(2, 3)
    i = lib.tensor([[0, 1], [1, 0]])
    try:
        result = eval(call, {"lib": lib, "np": np, "x": x, "i": i})  # noqa: S307
    except Exception as error:  # noqa: BLE001 - the exception is what is compared
        message = str(error)
        if COMBINATION in message:
            message = message.split(" but expected one of")[0]
        return type(error).__name__, message
    return "ok", result


@pytest.mark.parametrize("call", CALLS)
def test_same_error_as_torch(call):
    ours, theirs = _outcome(ember, call), _outcome(torch, call)
    assert ours[0] == theirs[0], (call, ours, theirs)
    if ours[0] == "ok":
        results = ours[1] if isinstance(ours[1], tuple) else (ours[1],)
        expected = theirs[1] if isinstance(theirs[1], tuple) else (theirs[1],)
        for r, e in zip(results, expected):
            np.testing.assert_array_equal(np.asarray(r.tolist()), e.numpy())
    elif not call.startswith(("lib.tril(x, 0, 1)", "lib.exp(x, x)")):
        # (too many positionals: Python's own TypeError, worded as torch's for keywords only)
        assert ours[1] == theirs[1], (call, ours[1], theirs[1])


def test_too_many_positionals_is_a_type_error_naming_the_function():
    with pytest.raises(TypeError, match=r"^exp\(\) takes 1 positional argument but 2 were"):
        ember.exp(ember.ones(2), ember.ones(2))


# ---------------------------------------------------------------- the mechanism


def test_schema_parses_types_optional_lists_defaults_and_keyword_only():
    name, params, returns = parse_schema(
        "sum(Tensor input, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None)"
        " -> Tensor")
    assert (name, returns) == ("sum", "Tensor")
    assert [(p.name, p.type_text, p.default, p.keyword_only) for p in params] == [
        ("input", "Tensor", None, False), ("dim", "int[1]?", "None", False),
        ("keepdim", "bool", "False", False), ("dtype", "ScalarType?", "None", True)]
    _, params, returns = parse_schema("topk(Tensor input, int k) -> (Tensor, Tensor)")
    assert [p.name for p in params] == ["input", "k"] and returns == "(Tensor, Tensor)"
    with pytest.raises(ValueError, match="bad parameter"):
        parse_schema("f(Tensr input)")


def test_signature_lives_on_the_op_and_the_public_function():
    assert signature_of(ember.exp).schema == "exp(Tensor input, *, Tensor? out=None) -> Tensor"
    assert ember.ops.pointwise.exp.op.signature is signature_of(ember.exp)
    assert signature_of(ember.cumsum).name == "cumsum"
    assert str(inspect.signature(ember.cumsum)) == "(input, dim, *, dtype=None, out=None)"
    with_signature = [op for ops in registry.values() for op in ops if op.signature is not None]
    assert len(with_signature) > 50  # every unary/binary pointwise declaration has one
    for op in with_signature:
        assert isinstance(op.signature, Signature) and op.signature.params[0].base == "Tensor"


def test_checker_is_compiled_on_first_call_and_keeps_the_function_object():
    @signature("twice(Tensor input, int times=2) -> Tensor")
    def twice(input, times=2):
        return input * times

    before = twice
    assert twice.__code__.co_name == "stub"  # nothing compiled at declaration
    np.testing.assert_array_equal(twice(ember.ones(2), 3).numpy(), [3.0, 3.0])
    # the checks are inlined into the function's own body: its code, from this file
    assert twice is before and twice.__code__.co_name == "twice"
    assert twice.__code__.co_filename == __file__
    assert twice.__defaults__ == (2,)
    with pytest.raises(TypeError, match=r"twice\(\): argument 'times' \(position 2\) must be "
                                        r"int, not float"):
        twice(ember.ones(2), 1.5)


def test_a_schema_that_does_not_match_the_function_is_refused():
    @signature("f(Tensor input, int dim) -> Tensor")
    def f(input, axis):
        return input

    with pytest.raises(TypeError, match="does not match the parameters"):
        f(ember.ones(2), 0)


def test_accepted_conversions_reach_the_function_as_plain_values():
    seen = {}

    @signature("g(Tensor input, int dim, int[] dims, ScalarType? dtype=None) -> Tensor")
    def g(input, dim, dims, dtype=None):
        seen.update(dim=dim, dims=dims, dtype=dtype)
        return input

    g(ember.ones(2), np.int64(1), [np.int32(0), ember.tensor(1)], float)
    # a Python ``float`` as a dtype is float64 in torch's parser, whatever the default dtype
    assert str(torch.empty(0, dtype=float).dtype) == "torch.float64"
    assert seen == {"dim": 1, "dims": (0, 1), "dtype": ember.float64}
    assert type(seen["dim"]) is int


def test_pyobject_passes_anything_and_numbers_as_tensors_names_its_parameters():
    @signature("h(Tensor input, PyObject anything=None) -> Tensor")
    def h(input, anything=None):
        return anything

    marker = object()
    assert h(ember.ones(1), marker) is marker

    @signature("k(Tensor input, Tensor other, *, Tensor? out=None) -> Tensor",
               numbers_as_tensors=("other",))
    def k(input, other, *, out=None):
        return other

    assert k(ember.ones(1), 2.5) == 2.5
    with pytest.raises(TypeError, match=r"k\(\): argument 'input' \(position 1\) must be "
                                        r"Tensor, not float"):
        k(2.5, ember.ones(1))
    with pytest.raises(TypeError, match=r"k\(\): argument 'out' must be Tensor, not int"):
        k(ember.ones(1), ember.ones(1), out=3)


def test_a_warning_from_a_checked_function_points_at_the_callers_line():
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ember.nn.functional.softmax(ember.ones(2, 2))  # implicit dim: torch warns too
    assert [w.filename for w in caught] == [__file__]


def _refusals(function, calls):
    """The (type, message) of each call's error, or its result's values."""
    outcomes = []
    for args, kwargs in calls:
        try:
            outcomes.append(function(*args, **kwargs).tolist())
        except Exception as error:  # noqa: BLE001 (the outcome is what is compared)
            outcomes.append((type(error), str(error)))
    return outcomes


# torch.cumsum's own calls, good and bad: an inlined body must answer each as torch does
_CUMSUM_CALLS = [((None, 0), {}), (("x", 1.5), {}), (("x",), {"dim": "a"}), (("x", 0), {}),
                 (("x", np.int64(0)), {}), (("x", 0), {"dtype": "f"}), (("x", 0), {"foo": 1}),
                 (("x",), {}), (("x", 0, None, 1), {})]


def _cumsum_calls(lib):
    x = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
    return [(tuple(x if a == "x" else a for a in args), kwargs) for args, kwargs in _CUMSUM_CALLS]


def _module_level_name(function):
    """``function`` named as a module's function is (Python's binding errors use the name)."""
    function.__qualname__ = function.__name__
    return function


def test_inlined_checks_shadowing_names_closures_and_the_checker_fallback_agree_with_torch():
    """The same declaration reached three ways: inlined into a module-level function whose
    body shadows ``type`` and ``Tensor``, inlined into a closure, and (its source not the code
    that runs) through the compiled checker: every call's outcome is the same as torch's."""
    schema = "cumsum(Tensor input, int dim, *, ScalarType? dtype=None, Tensor? out=None)"
    scale = 1

    @signature(schema)
    @_module_level_name
    def cumsum(input, dim, *, dtype=None, out=None):
        # (no ``assert`` here: pytest rewrites those, and the function's source must be the
        # code that runs for its checks to be inlined)
        type, Tensor = "shadowed", "shadowed"  # noqa: A001, N806 (the checks must not see them)
        if type is not Tensor:
            return None
        return ember.cumsum(input, dim, dtype=dtype) * scale  # (``scale``: a free variable)

    namespace = {"ember": ember, "signature": signature}
    exec(compile("@signature(" + repr(schema) + ")\n"  # noqa: S102 (code with no source file)
                 "def cumsum(input, dim, *, dtype=None, out=None):\n"
                 "    return ember.cumsum(input, dim, dtype=dtype)\n", "<no source>.py", "exec"),
         namespace)
    expected = _refusals(torch.cumsum, _cumsum_calls(torch))
    for function in (cumsum, namespace["cumsum"]):
        public = ember.overrides._public(function, "cumsum")  # as ember's public functions
        got = _refusals(public, _cumsum_calls(ember))
        for mine, theirs in zip(got, expected):
            if isinstance(theirs, tuple) and "positional argument" in theirs[1]:
                # torch counts ``self`` apart ("takes 1 positional argument but 4 were
                # given"); ember's binding is Python's: same type, same function named
                assert mine[0] is theirs[0] and mine[1].startswith("cumsum() ")
            else:
                assert mine == theirs
    assert cumsum.__code__.co_filename == __file__  # inlined, closure kept
    assert namespace["cumsum"].__code__.co_filename != "<no source>.py"  # the checker


def test_public_functions_run_their_own_body_with_the_checks_inlined():
    x = ember.ones(2, 3)
    ember.cumsum(x, 1), x.sum(0), ember.add(x, x), x.transpose(0, 1)
    for public in (ember.cumsum, ember.sum, ember.add, ember.Tensor.transpose):
        body = public.__torch_function_implementation__
        assert body.__code__.co_filename == body.__wrapped__.__code__.co_filename
        assert body.__code__.co_firstlineno == body.__wrapped__.__code__.co_firstlineno
    np.testing.assert_array_equal(ember.cumsum(x, 1).numpy(),
                                  torch.cumsum(torch.ones(2, 3), 1).numpy())
