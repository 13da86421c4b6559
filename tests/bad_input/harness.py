"""Differential bad-input check: careless calls made on torch and on ember, outcomes compared.

For every public function of ``torch``, ``torch.nn.functional``, ``torch.linalg``,
``torch.special``, ``torch.fft`` and every ``Tensor`` method that torch's override table
lists and ember also has, this module

* builds one valid base call (:func:`base_call`): the first sample torch's OpInfo database
  gives for the op (converted by ``tests/opinfo/opinfo_harness.py``), or, where OpInfo has
  none, arguments filled from the op's typed ATen schema or its Python signature;
* derives a fixed list of invalid calls from it (:func:`mutations`): a tensor argument
  replaced by None, a str or a list; a dim out of range or a float; a mismatched shape; the
  input and the second tensor argument as bool, int64 or complex, empty, or all NaN or inf;
  a negative size; a float where an int belongs; an unknown keyword;
* makes each call on torch and on ember (same values) and classifies the pair of outcomes
  (:func:`classify`): ``match``, ``leaked`` (ember raises an internal error such as
  AttributeError, KeyError or NumPy's where torch raises a typed error), ``accepted`` (ember
  succeeds, torch raises), ``different`` (both succeed, the results differ), ``other_type``
  (both raise, different types) or ``refused`` (torch succeeds, ember raises); and apart
  from these, ``torch_leaks``: torch's own outcome is an internal error raised by its Python
  code (``F.softmax(None, 0)`` is an AttributeError in torch) where ember raises a typed
  error, counted beside the match rate and left out of its denominator.

Everything is deterministic: samples are drawn with fixed seeds, generic tensors come from
a generator seeded by the function's name, and the mutations are a fixed list.

Command line (from the repository root)::

    python -m tests.bad_input.harness --report        # totals, categories, worst functions
    python -m tests.bad_input.harness --write-known   # regenerate known_mismatches.py
    python -m tests.bad_input.harness --show torch.cumsum   # every case of one function

Example::

    >>> [c.category for c in run_function("torch.sin") if c.mutation == "kwarg"]
    ['match']
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
import os
import sys
import time
import types
import warnings

import numpy as np

_OPINFO_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "opinfo")
if _OPINFO_DIR not in sys.path:
    sys.path.insert(0, _OPINFO_DIR)

import opinfo_harness as oh  # noqa: E402

import ember  # noqa: E402

CATEGORIES = ("match", "leaked", "accepted", "different", "other_type", "refused")
# Calls where torch's own outcome is an internal error leaked from its Python code (e.g.
# ``F.softmax(None, 0)``: AttributeError "'NoneType' object has no attribute 'softmax'") and
# ember raises a typed error instead. ember keeps its typed error on purpose, so these are
# neither matches nor mismatches: they are counted apart and left out of the match rate.
TORCH_LEAKS = "torch_leaks"

# Functions not called at all, each with the reason.
RANDOM = "random result: only its structure could be compared, and the draws differ"
SKIPPED = {
    **{name: RANDOM for name in (
        "torch.bernoulli", "torch.binomial", "torch.multinomial", "torch.poisson",
        "torch.rrelu", "torch.dropout", "torch.alpha_dropout", "torch.feature_dropout",
        "torch.feature_alpha_dropout", "torch.native_dropout", "torch.svd_lowrank",
        "torch.pca_lowrank", "torch.lobpcg", "torch.nn.functional.dropout",
        "torch.nn.functional.dropout1d", "torch.nn.functional.dropout2d",
        "torch.nn.functional.dropout3d", "torch.nn.functional.alpha_dropout",
        "torch.nn.functional.feature_alpha_dropout", "torch.nn.functional.rrelu",
        "torch.nn.functional.gumbel_softmax", "torch.nn.functional.fractional_max_pool2d",
        "torch.nn.functional.fractional_max_pool3d",
        "torch.nn.functional.fractional_max_pool2d_with_indices",
        "torch.nn.functional.fractional_max_pool3d_with_indices",
        "Tensor.bernoulli", "Tensor.bernoulli_", "Tensor.multinomial", "Tensor.cauchy_",
        "Tensor.exponential_", "Tensor.geometric_", "Tensor.log_normal_", "Tensor.normal_",
        "Tensor.random_", "Tensor.uniform_")},
    **{name: "acts on the process or the device, not on its arguments" for name in (
        "Tensor.cuda", "Tensor.xpu", "Tensor.ipu", "Tensor.mtia", "Tensor.pin_memory",
        "Tensor.record_stream", "Tensor.share_memory_", "Tensor.is_pinned",
        "Tensor.is_shared")},
    **{name: "returns storage or addresses, which differ between the libraries" for name in (
        "Tensor.storage", "Tensor.untyped_storage", "Tensor.storage_type", "Tensor.data_ptr",
        "Tensor.const_data_ptr", "Tensor.set_", "Tensor.is_set_to")},
    **{name: "registers callbacks or runs autograd: not a function of its arguments" for name in (
        "Tensor.backward", "Tensor.register_hook", "Tensor.register_post_accumulate_grad_hook",
        "Tensor.retain_grad", "Tensor.apply_", "Tensor.map_", "Tensor.map2_",
        "Tensor.module_load")},
    **{name: "symbolic-shape helpers for tracing, not tensor functions" for name in (
        "torch.sym_float", "torch.sym_int", "torch.sym_ite", "torch.sym_max", "torch.sym_min",
        "torch.sym_not", "torch.sym_sqrt", "torch.sym_sum")},
}
# Mutation kinds not made for some functions, because torch itself crashes on them.
CRASHES_TORCH = "torch's CPU kernel crashes the process (MKL's gebal rejects a NaN matrix)"
SKIPPED_MUTATIONS = {  # (function, mutation kind or whole id)
    ("torch.linalg.eig", "nan"): CRASHES_TORCH, ("torch.linalg.eig", "inf"): CRASHES_TORCH,
    ("torch.linalg.eigvals", "nan"): CRASHES_TORCH,
    ("torch.linalg.eigvals", "inf"): CRASHES_TORCH,
    ("torch.lu_unpack", "empty:LU_pivots"): "torch's CPU kernel crashes the process (it "
                                            "reads the pivots past their end)",
}
# Results compared by structure, shape and dtype only (uninitialised values).
UNINITIALISED = frozenset({"torch.empty_like", "Tensor.new_empty", "Tensor.new_empty_strided",
                           "Tensor.resize", "Tensor.resize_", "Tensor.resize_as",
                           "Tensor.resize_as_"})

NAMESPACES = ("torch", "torch.nn.functional", "torch.linalg", "torch.special", "torch.fft",
              "Tensor")
DIM_NAMES = frozenset({"dim", "dim0", "dim1", "dim2", "dims", "axis", "axis0", "axis1",
                       "start_dim", "end_dim", "source", "destination"})
SIZE_NAMES = frozenset({"size", "sizes", "shape", "output_size", "kernel_size", "stride",
                        "split_size", "split_size_or_sections", "sections", "chunks",
                        "repeats", "n", "s", "normalized_shape", "upscale_factor",
                        "downscale_factor", "groups", "num_classes", "minlength", "bins",
                        "padding", "dilation", "k", "diagonal", "offset"}) - {"diagonal",
                                                                               "offset"}
NOT_A_TENSOR = ["a", "b"]
UNKNOWN_KEYWORD = "bogus_keyword"
# Exceptions that only ever come from a missing check inside ember (where torch raises a
# typed error): internal errors that leaked out.
INTERNAL = frozenset({"AttributeError", "KeyError", "ZeroDivisionError", "AssertionError",
                      "NameError", "UnboundLocalError", "RecursionError", "OverflowError",
                      "IndexError"})


# --------------------------------------------------------------------------- targets

@dataclasses.dataclass(frozen=True)
class Target:
    """One public function or method: its torch object and ember's, and its parameter names."""
    name: str           # "torch.nn.functional.relu", "Tensor.add_"
    torch_obj: object
    ember_obj: object
    params: tuple       # positional parameter names from torch's override table
    method: bool

    def call(self, lib, args, kwargs):
        """Call this function of ``lib`` ("torch" or "ember") on converted arguments."""
        if self.method:
            return getattr(args[0], self.name.split(".", 1)[1])(*args[1:], **kwargs)
        return (self.torch_obj if lib == "torch" else self.ember_obj)(*args, **kwargs)


def _namespace(name):
    """(torch's module or class, ember's) for a namespace name such as 'torch.linalg'."""
    import torch
    if name == "Tensor":
        return torch.Tensor, ember.Tensor
    path = name.removeprefix("torch").lstrip(".")
    return (oh._attr_path(torch, path), oh._attr_path(ember, path)) if path else (torch, ember)


def _param_names(signature_fn):
    """Positional parameter names; a ``*args`` parameter is written '*args'."""
    import inspect
    try:
        params = inspect.signature(signature_fn).parameters.values()
    except (TypeError, ValueError):
        return ()
    return tuple(("*" if p.kind == p.VAR_POSITIONAL else "") + p.name for p in params
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL))


@functools.cache
def targets():
    """{name: Target} for every public function both libraries have, in a fixed order."""
    import torch
    table = torch.overrides.get_testing_overrides()
    found = {}
    for ns in NAMESPACES:
        torch_ns, ember_ns = _namespace(ns)
        for attr in sorted(dir(torch_ns)):
            if attr.startswith("_"):
                continue
            obj = getattr(torch_ns, attr, None)
            try:
                lam = table.get(obj)
            except TypeError:
                continue
            theirs = getattr(ember_ns, attr, None)
            name = f"{ns}.{attr}"
            if lam is None or not callable(theirs) or name in found:
                continue
            found[name] = Target(name, obj, theirs, _param_names(lam), ns == "Tensor")
    return found


# --------------------------------------------------------------------------- base calls

@dataclasses.dataclass
class BaseCall:
    """A valid call: torch arguments (``args[0]`` is self for a method) and their source."""
    args: list
    kwargs: dict
    source: str  # "opinfo:<op id>", "schema:<overload>", "signature"


@functools.cache
def _opinfo_index():
    """{target name: OpInfo} for ops whose sample inputs call the public function directly."""
    import torch
    by_obj = {}
    for t in targets().values():
        by_obj.setdefault(id(t.torch_obj), t.name)
    index = {}
    for op in sorted(oh.ops_by_id().values(), key=lambda o: bool(o.variant_test_name)):
        public = oh._attr_path(torch, op.name.removeprefix("torch."))
        for obj in (public if op.op is public else None, op.method_variant, op.inplace_variant):
            name = by_obj.get(id(obj)) if obj is not None else None
            if name and name not in index and not oh.cuda_only(op):
                index[name] = op
    return index


def _first_sample(op, method):
    """The first of ``op``'s samples (first dtype) that torch runs, as a BaseCall."""
    dtypes = oh.forward_dtypes(op)
    if not dtypes:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            oh._seed()
            generator = _sample_inputs(op, getattr(__import__("torch"), dtypes[0]))
            for sample in _take(generator, 4):
                call = BaseCall([sample.input, *sample.args], dict(sample.kwargs),
                                f"opinfo:{oh.op_id(op)}")
                if _torch_accepts(method, call):
                    return call
        except Exception:  # noqa: BLE001 - a sample generator torch cannot run here
            return None
    return None


def _sample_inputs(op, dtype):
    """``op.sample_inputs("cpu", dtype)``'s samples, the same ones: torch's RNG seeded before
    each is made, as its iterator does. That iterator also crawls the Python stack (twice per
    call) for the unittest running it, which is none here: most of this check's time."""
    from torch.testing._internal.common_utils import SEED, set_rng_seed

    samples = iter(op.sample_inputs_func(op, "cpu", dtype, False))
    while True:
        set_rng_seed(SEED)
        try:
            yield next(samples)
        except StopIteration:
            return


def _take(iterable, n):
    for i, item in enumerate(iterable):
        if i >= n:
            return
        yield item


def _torch_accepts(method, call):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            method(_clone(call.args), _clone(call.kwargs))
        return True
    except Exception:  # noqa: BLE001 - any refusal means the call is not a valid base
        return False


def _rng(name):
    return np.random.default_rng(oh.stable_hash(name, "bad-input"))


def _tensor(name, shape=(3, 4), dtype="float32"):
    import torch
    return torch.from_numpy(_rng(name).standard_normal(shape)).to(getattr(torch, dtype))


def _schema_value(target, arg):
    """A valid value for one ATen schema argument, or ``...`` when none is known."""
    import torch
    kind = str(arg.type)
    name = arg.name
    if kind.startswith("Optional["):
        return None
    if kind == "Tensor":
        if name in ("index", "indices", "target", "indices_or_sections"):
            return torch.zeros((3, 4), dtype=torch.int64)
        return _tensor(target.name + name)
    if kind == "List[Tensor]":
        return [_tensor(target.name + "a"), _tensor(target.name + "b")]
    if kind == "int":
        return 1 if name in DIM_NAMES else 2
    if kind == "List[int]":
        return [1] if name in DIM_NAMES else [3, 4] if name in ("size", "shape") else [2]
    if kind == "float":
        return 0.5
    if kind in ("number", "Scalar"):
        return 2
    if kind == "bool":
        return False
    return ...


def _schema_calls(target):
    """Base calls filled from the op's ATen schemas, one per overload that can be filled."""
    import torch
    op_name = target.name.rsplit(".", 1)[1]
    for schema in torch._C._jit_get_schemas_for_operator(f"aten::{op_name}"):
        args = [a for a in schema.arguments if not a.has_default_value()]
        if any(a.name == "out" or a.kwarg_only for a in args) or \
                (target.method and (not args or args[0].name != "self")):
            continue
        values = [_schema_value(target, a) for a in args]
        if any(v is ... for v in values):
            continue
        yield BaseCall(values, {}, f"schema:{schema.overload_name or 'default'}")


def _signature_call(target):
    """A base call from parameter names alone: a tensor for each required parameter."""
    import inspect
    lam = __import__("torch").overrides.get_testing_overrides()[target.torch_obj]
    values = []
    for p in inspect.signature(lam).parameters.values():
        if p.default is not inspect.Parameter.empty or p.kind != p.POSITIONAL_OR_KEYWORD:
            break
        values.append(_tensor(target.name + p.name))
    return BaseCall(values or [_tensor(target.name)], {}, "signature")


@functools.cache
def base_call(name):
    """A valid call of target ``name`` (torch arguments), or the best guess when none is."""
    target = targets()[name]
    method = functools.partial(_call, target, "torch")
    op = _opinfo_index().get(name)
    if op is not None:
        found = _first_sample(op, method)
        if found is not None:
            return found
    guesses = list(_schema_calls(target)) + [_signature_call(target)]
    for guess in guesses:
        if _torch_accepts(method, guess):
            return guess
    return guesses[0]


def _call(target, lib, args, kwargs):
    return target.call(lib, args, kwargs)


def _clone(tree):
    """Fresh copies of the tensors in a tree of arguments (in-place ops change them)."""
    import torch
    if isinstance(tree, torch.Tensor):
        return tree.detach().clone().requires_grad_(tree.requires_grad) \
            if tree.layout == torch.strided else tree.detach().clone()
    if isinstance(tree, list):
        return [_clone(v) for v in tree]
    if isinstance(tree, tuple) and not hasattr(tree, "_fields"):
        return tuple(_clone(v) for v in tree)
    if isinstance(tree, dict):
        return {k: _clone(v) for k, v in tree.items()}
    return tree


# --------------------------------------------------------------------------- mutations

@dataclasses.dataclass
class Mutation:
    """One invalid call derived from a base call."""
    id: str  # "none:other", "dim_oob:dim", "kwarg"
    args: list
    kwargs: dict


def _slots(target, base):
    """(slot, value) for each argument: slot is the parameter name, or '#i' if unknown."""
    params, slots = target.params, []
    for i, value in enumerate(base.args):
        if i < len(params) and not params[i].startswith("*"):
            label = params[i]
        elif params and params[min(i, len(params) - 1)].startswith("*"):
            label = params[min(i, len(params) - 1)][1:]
        else:
            label = f"#{i}"
        slots.append((("arg", i), label, value))
    slots += [(("kw", k), k, v) for k, v in base.kwargs.items()]
    return slots


def _replace(base, where, value):
    args, kwargs = list(base.args), dict(base.kwargs)
    if where[0] == "arg":
        args[where[1]] = value
    else:
        kwargs[where[1]] = value
    return args, kwargs


def _is_tensor(v):
    """A dense torch tensor (sparse ones are left as they are)."""
    import torch
    return isinstance(v, torch.Tensor) and v.layout == torch.strided


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _int_list(v):
    return isinstance(v, (list, tuple)) and v and all(_is_int(x) for x in v)


def mutations(name):
    """The fixed list of invalid calls for target ``name``."""
    import torch
    target, base = targets()[name], base_call(name)
    found = []

    def add(mid, where, value):
        found.append(Mutation(mid, *_replace(base, where, value)))

    slots = _slots(target, base)
    tensors = [(w, label, v) for w, label, v in slots if _is_tensor(v)]
    for where, label, _ in tensors:
        if target.method and where == ("arg", 0):
            continue  # None.add(...) is Python's error, not the library's
        add(f"none:{label}", where, None)
        add(f"str:{label}", where, "abc")
        add(f"list:{label}", where, list(NOT_A_TENSOR))
    if tensors:
        where, label, first = tensors[0]
        for dtype in ("bool", "int64", "complex64"):
            if first.dtype != getattr(torch, dtype):
                add(f"dtype_{dtype}:{label}", where, first.detach().to(getattr(torch, dtype)))
        shape = (0,) + tuple(first.shape[1:]) if first.dim() else (0,)
        add(f"empty:{label}", where, torch.empty(shape, dtype=first.dtype))
        if first.dtype.is_floating_point or first.dtype.is_complex:
            add(f"nan:{label}", where, torch.full_like(first, math.nan))
            add(f"inf:{label}", where, torch.full_like(first, math.inf))
        for where2, label2, other in tensors[1:2]:
            wrong = tuple(s + 2 for s in other.shape) or (5,)
            add(f"shape:{label2}", where2, torch.ones(wrong, dtype=other.dtype))
            for dtype in ("bool", "int64", "complex64"):  # a target or weight of a wrong type
                if other.dtype != getattr(torch, dtype):
                    add(f"dtype_{dtype}:{label2}", where2, other.detach().to(getattr(torch,
                                                                                   dtype)))
            if other.dtype.is_floating_point or other.dtype.is_complex:
                add(f"nan:{label2}", where2, torch.full_like(other, math.nan))
                add(f"inf:{label2}", where2, torch.full_like(other, math.inf))
            empty2 = (0,) + tuple(other.shape[1:]) if other.dim() else (0,)
            add(f"empty:{label2}", where2, torch.empty(empty2, dtype=other.dtype))
    for where, label, value in slots:
        if label in DIM_NAMES and (_is_int(value) or _int_list(value)):
            first = value if _is_int(value) else value[0]
            add(f"dim_oob:{label}", where, _with_first(value, 9 if first >= 0 else -10))
            add(f"dim_float:{label}", where, _with_first(value, first + 0.5))
        elif label in SIZE_NAMES and (_is_int(value) or _int_list(value)):
            first = value if _is_int(value) else value[0]
            add(f"negative:{label}", where, _with_first(value, -2))
            add(f"float_int:{label}", where, _with_first(value, first + 0.5))
        elif _is_int(value):
            add(f"float_int:{label}", where, value + 0.5)
    found.append(Mutation("kwarg", list(base.args), {**base.kwargs, UNKNOWN_KEYWORD: 1}))
    return [m for m in found if (name, m.id.split(":")[0]) not in SKIPPED_MUTATIONS
            and (name, m.id) not in SKIPPED_MUTATIONS]


def _with_first(value, first):
    if _is_int(value):
        return first
    return (list if isinstance(value, list) else tuple)([first, *value[1:]])


# --------------------------------------------------------------------------- outcomes

def exception_kind(e):
    """A comparable name for an exception: 'TypeError', 'LinAlgError', 'numpy:LinAlgError'.

    Library-specific classes count as their nearest builtin base, except the linear-algebra
    error both libraries define; anything raised by NumPy itself is tagged as NumPy's."""
    cls = type(e)
    module = cls.__module__ or ""
    if module.startswith("numpy"):
        return f"numpy:{cls.__name__}"
    if "LinAlgError" in cls.__name__:
        return "LinAlgError"
    for klass in cls.__mro__:
        if klass.__module__ == "builtins":
            return klass.__name__
    return cls.__name__


@dataclasses.dataclass
class Case:
    """The outcome of one mutated call on both libraries."""
    function: str
    mutation: str
    category: str
    detail: str


def _outcome(thunk):
    """("ok", result) or ("raise", exception)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", thunk()
    except Exception as e:  # noqa: BLE001 - every exception is an outcome to compare
        return "raise", e


def _strip_objects(tree):
    """Opaque objects compare by presence only (their class names differ by library)."""
    if tree[0] == "O":
        return ("O",)
    if tree[0] == "S":
        return ("S", [_strip_objects(t) for t in tree[1]])
    return tree


def _short_name(name):
    """'sort' for 'torch.sort' or 'Tensor.sort', 'linalg.eig' for 'torch.linalg.eig'."""
    return name.split(".", 1)[1] if name.startswith(("torch.", "Tensor.")) else name


def _index_shapes_only(tree):
    """Integer leaves reduced to their shape and dtype: the indices of equal elements, which
    torch returns in an unspecified order (mutated inputs are full of ties)."""
    if tree[0] == "S":
        return ("S", [_index_shapes_only(t) for t in tree[1]])
    if tree[0] == "T" and tree[2] == "int64":
        return ("T", np.zeros(tree[3], np.int64), tree[2], tree[3])
    return tree


def _results_differ(name, expected, got):
    """None if ember's result equals torch's (shape, dtype, values NaN-aware), else why.

    Eigen- and singular vectors compare up to their phase (as in the OpInfo check), and the
    indices of sorting ops by shape and dtype."""
    try:
        e = oh.normalize(expected)
    except oh.Unmeasurable:
        return None  # torch's result has no ember counterpart to compare (e.g. uint16)
    except Exception:  # noqa: BLE001 - an exotic torch result: compare success alone
        return None
    try:
        g = oh.normalize(got)
    except Exception as err:  # noqa: BLE001
        return f"ember's result cannot be read: {type(err).__name__}"
    short = _short_name(name)
    if short in oh.GAUGE_OPS:
        op = types.SimpleNamespace(name=short)
        e, g = oh._fix_gauge(op, e), oh._fix_gauge(op, g)
    if short in oh.TIE_OPS:
        e, g = _index_shapes_only(e), _index_shapes_only(g)
    return oh.compare(_strip_objects(e), _strip_objects(g), oh.TOLERANCES,
                      values=name not in UNINITIALISED)


def _line(e):
    return f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:120]}"


def classify(name, torch_outcome, ember_outcome):
    """(category, detail) for one pair of outcomes; see CATEGORIES."""
    (t_kind, t_val), (e_kind, e_val) = torch_outcome, ember_outcome
    if t_kind == "ok" and e_kind == "ok":
        reason = _results_differ(name, t_val, e_val)
        return ("different", reason) if reason else ("match", "")
    if t_kind == "ok":
        return "refused", _line(e_val)
    if e_kind == "ok":
        return "accepted", f"torch: {_line(t_val)}"
    theirs, ours = exception_kind(t_val), exception_kind(e_val)
    if theirs == ours:
        return "match", ""
    detail = f"torch {theirs}, ember {_line(e_val)}"
    if ours.startswith("numpy:") or ours in INTERNAL:
        return "leaked", detail
    if theirs in INTERNAL and _raised_in_torch_python(t_val):
        return TORCH_LEAKS, f"torch {_line(t_val)}; ember {_line(e_val)}"
    return "other_type", detail


def _raised_in_torch_python(e):
    """Whether ``e`` was raised by a line of torch's own Python source (not by its C++
    argument parser, whose errors are deliberate): an internal error torch leaks."""
    import torch
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return False
    filename = tb.tb_frame.f_code.co_filename
    return filename.endswith(".py") and \
        filename.startswith(os.path.dirname(os.path.abspath(torch.__file__)))


def run_mutation(target, mutation):
    """Make one mutated call on torch and on ember and classify it; None if unmeasurable."""
    torch_args, torch_kwargs = _clone(mutation.args), _clone(mutation.kwargs)
    try:
        conv = oh.ToEmber()
        # converted from copies: the conversion reads tensors through .numpy(), after which
        # torch refuses to grow their storage (resize_), as no ordinary tensor's
        e_args, e_kwargs = conv(_clone(mutation.args)), conv(_clone(mutation.kwargs))
    except oh.Unmeasurable:
        return None
    t_out = _outcome(lambda: target.call("torch", torch_args, torch_kwargs))
    e_out = _outcome(lambda: target.call("ember", e_args, e_kwargs))
    category, detail = classify(target.name, t_out, e_out)
    return Case(target.name, mutation.id, category, detail)


def run_function(name):
    """Every mutated call of target ``name``, classified (the base call first, id 'base')."""
    target = targets()[name]
    base = base_call(name)
    cases = []
    for mutation in [Mutation("base", base.args, base.kwargs), *mutations(name)]:
        case = run_mutation(target, mutation)
        if case is not None:
            cases.append(case)
    return cases


def unsupported():
    """Top-level functions ember deliberately lacks (calling one raises NotImplementedError
    naming what to use instead; docs/migrating-from-pytorch.md lists them)."""
    from ember._unsupported import UNSUPPORTED_FUNCTIONS
    return {f"torch.{name}" for name in UNSUPPORTED_FUNCTIONS}


def checked_names():
    """Names of the targets the check calls, in a fixed order."""
    lacking = unsupported()
    return [name for name in targets() if name not in SKIPPED and name not in lacking]


# --------------------------------------------------------------------------- command line

def run_all(progress=False):
    """{name: [Case]} for every checked target, and the seconds each took."""
    results, seconds = {}, {}
    for name in checked_names():
        start = time.perf_counter()
        results[name] = run_function(name)
        seconds[name] = time.perf_counter() - start
        if progress:
            print(f"{seconds[name]:7.3f}s {name}", file=sys.stderr, flush=True)
    return results, seconds


def report(results, seconds):
    cases = [c for cs in results.values() for c in cs]
    counts = collections.Counter(c.category for c in cases)
    print(f"functions: {len(results)} (skipped {len(targets()) - len(results)}: random or "
          f"stateful, or not in ember by design), calls: {len(cases)}, "
          f"match: {match_rate(counts)}, time: {sum(seconds.values()):.1f}s")
    for category in (*CATEGORIES, TORCH_LEAKS):
        print(f"  {category:11s} {counts[category]}")
    sources = collections.Counter(base_call(n).source.split(":")[0] for n in results)
    print("base calls:", dict(sources))
    worst = collections.Counter(c.function for c in cases if c.category in CATEGORIES[1:])
    print("functions with most mismatches:")
    for name, n in worst.most_common(25):
        print(f"  {n:3d} {name}")
    print("slowest functions:")
    for name in sorted(seconds, key=seconds.get, reverse=True)[:10]:
        print(f"  {seconds[name]:.3f}s {name}")


def match_rate(counts):
    """The share of calls that match torch, with the torch-leaks calls left out of the
    denominator (and their count said beside it).

    Example::

        >>> match_rate(collections.Counter(match=98, other_type=1, torch_leaks=1))
        '99.0% (of 99 calls; 1 more where torch leaks an internal error)'
    """
    leaks = counts[TORCH_LEAKS]
    measured = sum(counts.values()) - leaks
    return (f"{100 * counts['match'] / max(1, measured):.1f}% (of {measured} calls; "
            f"{leaks} more where torch leaks an internal error)")


def write_known(results, path=None):
    """Write known_mismatches.py from the current outcomes."""
    path = path or os.path.join(os.path.dirname(os.path.abspath(__file__)), "known_mismatches.py")
    rows = sorted((c.function, c.mutation, c.category, c.detail)
                  for cs in results.values() for c in cs if c.category in CATEGORIES[1:])
    with open(path, "w") as f:
        f.write(KNOWN_HEADER)
        for function, mutation, category, detail in rows:
            f.write(f"    ({function!r}, {mutation!r}, {category!r}),  # {_comment(detail)}\n")
        f.write("}\n")
    print(f"wrote {len(rows)} known mismatches to {path}")


def _comment(detail):
    return detail.replace("\n", " ")[:150].encode("ascii", "replace").decode().rstrip()


KNOWN_HEADER = '''"""The bad-input cases where ember does not yet behave as torch: (function, mutation, category).

Generated by ``python -m tests.bad_input.harness --write-known`` (see harness.py for the
mutations and categories); the comment on each entry is what happened. ``test_bad_input.py``
checks that every case not listed matches torch and that every listed case still mismatches,
so fix a case and regenerate: this list only shrinks.
"""

KNOWN_MISMATCHES = {
'''


def main(argv):
    if "--show" in argv:
        name = argv[argv.index("--show") + 1]
        for case in run_function(name):
            print(f"{case.mutation:28s} {case.category:10s} {case.detail}")
        print("base:", base_call(name).source)
        return
    results, seconds = run_all(progress="--progress" in argv)
    if "--write-known" in argv:
        write_known(results)
    if "--report" in argv or "--write-known" not in argv:
        report(results, seconds)


if __name__ == "__main__":
    main(sys.argv[1:])
