"""PyTorch's OpInfo database, run against ember: the machinery behind ``test_opinfo.py``.

Every OpInfo in ``torch.testing._internal.common_methods_invocations.op_db`` describes one
operator: the dtypes it supports on the CPU, a generator of sample inputs, whether it has
reverse- and forward-mode derivatives. For one op this module

* finds ember's version of it (:func:`resolve`): the function at the op's name, a Tensor
  method, or the OpInfo's own wrapper (a lambda in torch's test code) re-bound to ember;
* converts each torch sample to ember tensors (:class:`ToEmber`), optionally as
  non-contiguous views holding the same values;
* compares ember's outputs, vector-Jacobian products and Jacobian-vector products with
  torch's on the same sample (:func:`check_forward`, :func:`check_backward`,
  :func:`check_forward_ad`), each returning a list of failure messages (empty: pass).

Example::

    >>> op = ops_by_id()["sin"]
    >>> check_forward(op, "float32").failures
    []
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import sys
import types
import unittest
import warnings
import zlib

import numpy as np

import ember
from ember.sparse._base import SparseTensorBase

FULL = os.environ.get("EMBER_OPINFO_FULL") == "1"

# (rtol, atol) by dtype name; integer and bool results must match exactly.
TOLERANCES = {
    "float16": (1e-2, 1e-2),  # low precision: rounding order differs between libraries
    "bfloat16": (5e-2, 5e-2),
    "float32": (1e-4, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex64": (1e-4, 1e-5),
    "complex128": (1e-7, 1e-7),
}
EMBER_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
                "float32", "float64", "complex64", "complex128")
PRIMARY_DTYPES = ("float32", "float64", "int64", "complex64", "bool")
GRAD_DTYPE = "float64"

# Random or uninitialised results: only structure, shape and dtype are compared.
RANDOM_OPS = frozenset({
    "bernoulli", "multinomial", "normal", "cauchy", "exponential", "geometric", "log_normal",
    "uniform", "randn", "randn_like", "rand_like", "randint", "randint_like",
    "nn.functional.dropout", "nn.functional.dropout2d", "nn.functional.dropout3d",
    "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout.with_train",
    "nn.functional.rrelu", "nn.functional.fractional_max_pool2d",
    "nn.functional.fractional_max_pool3d", "svd_lowrank", "pca_lowrank", "empty", "empty_like",
    "empty_strided", "empty_permuted", "new_empty", "new_empty_strided",
})
# Ops that return indices of equal elements in an unspecified order: (position of dim among
# the sample's args, default dim, whether the indices are the whole output (else item 1)).
TIE_OPS = {"sort": (0, -1, False), "argsort": (0, -1, True), "msort": (None, 0, False),
           "topk": (1, -1, False), "kthvalue": (1, -1, False), "mode": (0, -1, False),
           "median": (0, None, False), "nanmedian": (0, None, False)}
# Decompositions whose vectors are unique only up to a sign (a phase if complex) per vector:
# op name -> (output position, whether vectors are columns) for each such output. The
# complete SVD's extra vectors span a null space in no particular basis: only the first
# min(m, n) are compared.
GAUGE_OPS = {"linalg.eigh": ((1, True),), "linalg.eig": ((1, True),),
             "linalg.svd": ((0, True), (2, False)), "svd": ((0, True), (2, True))}
# Results that depend on the input's storage, which converting through NumPy does not keep.
STORAGE_OPS = frozenset({"as_strided", "as_strided_copy", "as_strided_scatter"})
# Ops whose tangent where an index repeats is whichever write torch's kernel for the input's
# memory layout makes last (torch documents them as nondeterministic there, and its own
# OpInfo skips their forward-AD test): samples with repeats in a non-contiguous input.
LAYOUT_DEPENDENT_REPEATS = frozenset({"nn.functional.max_unpool1d",
                                      "nn.functional.max_unpool2d",
                                      "nn.functional.max_unpool3d"})
MAX_FAILURES = 3  # messages kept per check
DRAW_FACTOR = 4  # the sampled mode draws this many samples per one it runs


class Unmeasurable(Exception):
    """The sample or the oracle's result cannot be compared (sparse output, torch failed)."""


# --------------------------------------------------------------------------- the database

def _import_op_db():
    """torch's op_db; its test utilities need ``expecttest``, stubbed when absent."""
    try:
        import expecttest  # noqa: F401
    except ImportError:
        stub = types.ModuleType("expecttest")
        stub.TestCase, stub.ACCEPT = unittest.TestCase, False
        sys.modules["expecttest"] = stub
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import op_db
    _skip_test_case_lookup()
    return list(op_db)


def _skip_test_case_lookup():
    """torch's sample-input iterators look up the running ``unittest.TestCase`` by walking
    ``inspect.stack()`` (~1.4 ms a call under pytest), to name it in error notes; these tests
    are pytest functions, never found, so the lookup answers None at once."""
    from torch.testing._internal import common_utils
    from torch.testing._internal.opinfo import core

    common_utils.extract_test_fn = core.extract_test_fn = lambda: None


def op_id(op):
    """'linalg.pinv.hermitian' for the OpInfo named linalg.pinv with variant hermitian."""
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


@functools.cache
def ops_by_id():
    """{op id: OpInfo} in the database's order."""
    return {op_id(op): op for op in _import_op_db()}


def stable_hash(*parts):
    """A hash of strings that is the same in every process (``hash`` is randomised)."""
    return zlib.crc32("|".join(map(str, parts)).encode())


def dtype_name(d):
    return str(d).split(".")[-1]


def cuda_only(op):
    return any(getattr(d, "__name__", "") == "onlyCUDA" for d in getattr(op, "decorators", ()))


def forward_dtypes(op):
    """Dtype names that torch supports for ``op`` on the CPU and ember has, primary first."""
    if cuda_only(op):
        return []
    names = {dtype_name(d) for d in op.supported_dtypes("cpu")} & set(EMBER_DTYPES)
    primary = [d for d in PRIMARY_DTYPES if d in names][:1]
    return primary + sorted(names - set(primary))


def grad_dtype(op):
    """'float64' when torch differentiates ``op`` in float64 on the CPU, else None."""
    if not op.supports_autograd or cuda_only(op):
        return None
    names = {dtype_name(d) for d in op.supported_backward_dtypes("cpu")}
    return GRAD_DTYPE if GRAD_DTYPE in names else None


def is_random(op):
    return op_id(op) in RANDOM_OPS or op.name in RANDOM_OPS


# --------------------------------------------------------------------------- resolution

def _attr_path(root, path):
    obj = root
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


_EMBER_GLOBALS = {}  # id of a torch test module's globals -> a copy with torch -> ember


def rebind(fn):
    """``fn`` from torch's test code with its global ``torch`` bound to ember.

    OpInfo wrappers reorder arguments, symmetrise matrices or post-process outputs, all
    written against ``torch``; re-binding runs the same code on ember. Other callables are
    returned as they are."""
    if not isinstance(fn, types.FunctionType) or \
            not (fn.__module__ or "").startswith("torch.testing._internal"):
        return fn
    env = _EMBER_GLOBALS.get(id(fn.__globals__))
    if env is None:
        env = _EMBER_GLOBALS[id(fn.__globals__)] = {**fn.__globals__, "torch": ember}
    new = types.FunctionType(fn.__code__, env, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    return new


def _method_caller(name):
    def call(self, *args, **kwargs):
        return getattr(self, name)(*args, **kwargs)
    call.__name__ = name
    return call


def resolve(op):
    """ember's callable for ``op`` as ``fn(input, *args, **kwargs)``, or None if it has none."""
    import torch
    name = op.name.removeprefix("torch.")
    public = _attr_path(torch, name)
    if public is not op.op and isinstance(op.op, types.FunctionType) and \
            (op.op.__module__ or "").startswith("torch.testing._internal"):
        return rebind(op.op)
    method = getattr(op.method_variant, "__name__", None) if op.method_variant else None
    if method and public is not op.op and op.op is op.method_variant:
        return _method_caller(method) if hasattr(ember.Tensor, method) else None
    aten_name = (op.aten_name or "").removeprefix("torch.ops.aten.")
    for path in (name, op.aten_name, f"ops.aten.{aten_name}" if aten_name else None):
        fn = _attr_path(ember, path) if path else None
        if callable(fn):
            return fn
    if method and hasattr(ember.Tensor, method):
        return _method_caller(method)
    return None


# --------------------------------------------------------------------------- conversion

def _ember_dtype(t):
    return getattr(ember, dtype_name(t.dtype))


def _numpy_of(t):
    """A torch tensor's values as a NumPy array (bfloat16 widened to float32)."""
    import torch
    t = t.detach().resolve_conj().resolve_neg()
    if t._is_zerotensor():
        t = torch.zeros(t.shape, dtype=t.dtype)
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.numpy()


class ToEmber:
    """Converts torch sample trees to ember; one torch tensor maps to one ember tensor.

    With ``noncontiguous`` every tensor becomes a strided view holding the same values
    (every other element of a buffer with a trailing dimension of 2, the gaps filled with
    nan or 12), the layout of torch's ``SampleInput.noncontiguous()``, so kernels that
    assume a compact layout are caught."""

    def __init__(self, noncontiguous=False):
        self.noncontiguous = noncontiguous
        self.memo = {}
        self.leaves = []  # (torch tensor, ember tensor) for each tensor that requires grad

    def __call__(self, obj):
        import torch
        if isinstance(obj, torch.Tensor):
            return self.tensor(obj)
        if isinstance(obj, torch.dtype):
            return getattr(ember, dtype_name(obj))
        if isinstance(obj, torch.Size):
            return tuple(int(s) for s in obj)
        if isinstance(obj, torch.device):
            return str(obj)
        if isinstance(obj, (torch.memory_format, torch.layout)):
            return getattr(ember, dtype_name(obj))
        if isinstance(obj, torch.nn.Module):
            return self.module(obj)
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            cls = _attr_path(ember, _public_path(type(obj)))
            return cls(**{f.name: self(getattr(obj, f.name)) for f in dataclasses.fields(obj)})
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):
            return type(obj)(*map(self, obj))
        if isinstance(obj, (list, tuple)):
            return type(obj)(map(self, obj))
        if isinstance(obj, dict):
            return {k: self(v) for k, v in obj.items()}
        if callable(obj) and (getattr(obj, "__module__", "") or "").startswith("torch"):
            raise Unmeasurable(f"cannot convert {obj!r}")
        return obj

    def tensor(self, t):
        import torch
        if id(t) in self.memo:
            return self.memo[id(t)][1]
        if t.layout != torch.strided:
            return self.sparse(t)
        arr = _numpy_of(t)
        if dtype_name(t.dtype) not in EMBER_DTYPES:
            raise Unmeasurable(f"ember has no {t.dtype}")
        dtype = getattr(ember, dtype_name(t.dtype))
        if self.noncontiguous:  # the layout of torch's noncontiguous_like, gaps filled
            wide = np.empty(arr.shape + (2,), arr.dtype)
            wide[..., 0] = True if arr.dtype == np.bool_ else 12 if arr.dtype.kind in "iu" \
                else np.nan
            wide[..., 1] = arr
            e = ember.tensor(wide).to(dtype)[..., 1].detach()
        else:
            e = ember.tensor(arr.copy()).to(dtype)
        e.requires_grad_(t.requires_grad)
        self.memo[id(t)] = (t, e)  # keeps t alive, so its id stays unique
        if t.requires_grad:
            self.leaves.append((t, e))
        return e

    def sparse(self, t):
        """A 2-D sparse COO or CSR tensor with the same pattern and values (its values are
        the autograd leaf when ``t`` requires grad)."""
        import torch
        if t.dim() != 2 or t.layout not in (torch.sparse_coo, torch.sparse_csr):
            raise Unmeasurable(f"{t.dim()}-D {t.layout} input")
        if dtype_name(t.dtype) not in EMBER_DTYPES:
            raise Unmeasurable(f"ember has no {t.dtype}")
        dtype = _ember_dtype(t)
        if t.layout == torch.sparse_csr:
            e = ember.sparse_csr_tensor(_index(t.crow_indices()), _index(t.col_indices()),
                                        ember.tensor(_numpy_of(t.values())).to(dtype),
                                        tuple(t.shape), requires_grad=t.requires_grad)
        else:
            e = ember.sparse_coo_tensor(_index(t._indices()),
                                        ember.tensor(_numpy_of(t._values())).to(dtype),
                                        tuple(t.shape), is_coalesced=t.is_coalesced(),
                                        requires_grad=t.requires_grad)
        self.memo[id(t)] = (t, e)
        if t.requires_grad:
            self.leaves.append((t, e))
        return e

    @staticmethod
    def module(m):
        """A parameter-free module in its default configuration, e.g. nn.ReLU()."""
        cls = type(m)
        if list(m.parameters()) or list(m.buffers()):
            raise Unmeasurable(f"configured module {cls.__name__}")
        return _attr_path(ember, _public_path(cls))()


def _index(t):
    return ember.tensor(t.detach().numpy().astype(np.int64))


def _sparse_values(e):
    """The autograd leaf of an ember sparse tensor (its values), or the tensor itself."""
    return e._vals if isinstance(e, SparseTensorBase) else e


def _with_pattern(e, values):
    """An ember sparse tensor with ``e``'s pattern holding ``values`` (zeros if None)."""
    values = ember.zeros_like(e._vals) if values is None else values
    if e.layout is ember.sparse_csr:
        return ember.sparse_csr_tensor(e.crow_indices(), e.col_indices(), values, e.shape)
    return ember.sparse_coo_tensor(e._indices(), values, e.shape)


def _public_path(cls):
    import torch
    for ns in ("", "nn", "nn.functional", "linalg", "special", "fft"):
        path = f"{ns}.{cls.__name__}".lstrip(".")
        if _attr_path(torch, path) is cls:
            return path
    raise Unmeasurable(f"no public torch path for {cls.__qualname__}")


# --------------------------------------------------------------------------- comparison

def normalize(x):
    """An output tree as comparable leaves: ('T', array, dtype, shape), ('f', float), ..."""
    import torch
    if isinstance(x, torch.Tensor) and x.layout in (torch.sparse_coo, torch.sparse_csr):
        return ("S", [("L", dtype_name(x.layout)), normalize(x.detach().to_dense())])
    if isinstance(x, SparseTensorBase):
        return ("S", [("L", dtype_name(x.layout)), normalize(x.detach().to_dense())])
    if isinstance(x, torch.Tensor):
        if x.layout != torch.strided:
            raise Unmeasurable(f"{x.layout} output")
        if dtype_name(x.dtype) not in EMBER_DTYPES:
            raise Unmeasurable(f"ember has no {x.dtype}")  # complex32, uint16, float8...
        return ("T", _numpy_of(x), dtype_name(x.dtype), tuple(x.shape))
    if isinstance(x, ember.Tensor):
        y = x.detach()
        if y.dtype is ember.bfloat16:
            y = y.float()
        return ("T", np.asarray(y.numpy()), dtype_name(x.dtype), tuple(int(s) for s in x.shape))
    if isinstance(x, (bool, np.bool_)):
        return ("b", bool(x))
    if isinstance(x, (int, np.integer)):
        return ("i", int(x))
    if isinstance(x, (float, np.floating, complex, np.complexfloating)):
        return ("f", complex(x))
    if x is None:
        return ("N",)
    if isinstance(x, (torch.dtype, type(ember.float32))):
        return ("D", dtype_name(x))
    if isinstance(x, (list, tuple)):
        return ("S", [normalize(v) for v in x])
    return ("O", type(x).__name__)


def tolerances(op):
    """The default tolerances, loosened where the OpInfo declares an op-wide override."""
    tols = dict(TOLERANCES)
    for dec in getattr(op, "decorators", ()):
        kind = type(dec).__name__
        if kind not in ("precisionOverride", "toleranceOverride"):
            continue
        for dt, v in dec.d.items():
            rtol, atol = tols.get(dtype_name(dt), (0.0, 0.0))
            if kind == "precisionOverride":
                tols[dtype_name(dt)] = (rtol, max(atol, float(v)))
            else:
                tols[dtype_name(dt)] = (max(rtol, float(v.rtol)), max(atol, float(v.atol)))
    return tols


def compare(expected, got, tols, values=True, path="out"):
    """None when ember's normalized output ``got`` matches torch's, else the first difference."""
    if expected[0] != got[0]:
        return f"{path}: expected kind {expected[0]}, got {got[0]} ({got[1:]!r:.80})"
    kind = expected[0]
    if kind == "S":
        if len(expected[1]) != len(got[1]):
            return f"{path}: {len(got[1])} items, expected {len(expected[1])}"
        for i, (e, g) in enumerate(zip(expected[1], got[1])):
            reason = compare(e, g, tols, values, f"{path}[{i}]")
            if reason:
                return reason
        return None
    if kind == "T":
        _, ea, edt, eshape = expected
        _, ga, gdt, gshape = got
        if eshape != gshape:
            return f"{path}: shape {gshape} != {eshape}"
        if edt != gdt:
            return f"{path}: dtype {gdt} != {edt}"
        return _compare_arrays(ea, ga, tols.get(edt), path) if values else None
    if kind == "f":
        if values and not np.isclose(got[1], expected[1], rtol=1e-4, atol=1e-5, equal_nan=True):
            return f"{path}: {got[1]!r} != {expected[1]!r}"
        return None
    if values and expected[1:] != got[1:]:
        return f"{path}: {got[1:]!r} != {expected[1:]!r}"
    return None


def _compare_arrays(expected, got, tol, path):
    if expected.size == 0:
        return None
    if tol is None:  # integers and bools
        same = np.asarray(got) == expected
    else:
        kind = np.complex128 if np.iscomplexobj(expected) or np.iscomplexobj(got) else np.float64
        same = np.isclose(np.asarray(got).astype(kind), expected.astype(kind),
                          rtol=tol[0], atol=tol[1], equal_nan=True)
    if same.all():
        return None
    where = tuple(int(i) for i in np.argwhere(~same)[0])
    return (f"{path}: {int((~same).sum())}/{same.size} values differ, "
            f"at {where}: {np.asarray(got)[where]!r} vs {expected[where]!r}")


# --------------------------------------------------------------------------- samples

def _tensors(tree):
    """Torch tensors in a tree of lists/tuples/dicts, depth-first with their positions."""
    import torch
    found = []

    def walk(v, pos):
        if isinstance(v, (torch.Tensor, ember.Tensor, SparseTensorBase)):
            found.append((pos, v))
        elif isinstance(v, (list, tuple)) and not isinstance(v, torch.Size):
            for i, w in enumerate(v):
                walk(w, pos + (i,))
        elif isinstance(v, dict):
            for k, w in v.items():
                walk(w, pos + (k,))
    walk(tree, ())
    return found


def _seed():
    import random

    import torch
    torch.manual_seed(0)
    np.random.seed(0)
    random.seed(0)


def samples(op, dtype, requires_grad=False, quota=None, tag=""):
    """torch's sample inputs for ``op`` in ``dtype`` (a name), drawn with fixed seeds, as
    (index, sample) pairs.

    The full mode (EMBER_OPINFO_FULL=1) or ``quota=None`` yields every sample. Otherwise
    at most ``quota`` samples run: the first ``DRAW_FACTOR * quota`` are drawn, and among
    them a fixed hash of (op, ``tag``, index) picks an evenly thinned subset, so each run
    checks the same samples and different checks of one op see different ones."""
    import torch
    _seed()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        generator = op.sample_inputs("cpu", getattr(torch, dtype), requires_grad=requires_grad)
        if FULL or quota is None:
            yield from enumerate(generator)
            return
        drawn = list(itertools.islice(generator, DRAW_FACTOR * quota))
    keep_one_in = max(1, -(-len(drawn) // quota))
    offset = stable_hash(op_id(op), dtype, tag) % keep_one_in
    for index, sample in enumerate(drawn):
        if index % keep_one_in == offset:
            yield index, sample


def variants(op, dtype, requires_grad=False, quota=None, noncontiguous_every=1, tag=""):
    """(index, sample, noncontiguous) triples: each sample of :func:`samples`, then torch's
    non-contiguous copy of it (``SampleInput.noncontiguous()``) for every sample in the full
    mode, or for one in ``noncontiguous_every`` (0: none), picked by a fixed hash."""
    import torch
    for index, sample in samples(op, dtype, requires_grad, quota, tag):
        yield index, sample, False
        every = 1 if FULL and noncontiguous_every else noncontiguous_every
        strided = all(t.layout == torch.strided for _, t in
                      _tensors([sample.input, list(sample.args), dict(sample.kwargs)]))
        # torch has no non-contiguous copy of a sparse tensor
        if every and strided and stable_hash(op_id(op), dtype, tag, index, "nc") % every == 0:
            yield index, sample.noncontiguous(), True


def _unmeasurable(op, sample):
    if op.name not in STORAGE_OPS:
        return None
    for _, t in _tensors([sample.input]):
        compact = t.is_contiguous() and t.storage_offset() == 0 and \
            t.untyped_storage().nbytes() == t.numel() * t.element_size()
        if not compact:
            return "depends on torch's storage layout"
    return None


def _layout_dependent_repeats(op, sample):
    """Whether torch's tangent for this sample depends on its memory layout (see
    LAYOUT_DEPENDENT_REPEATS)."""
    if op.name not in LAYOUT_DEPENDENT_REPEATS or sample.input.is_contiguous():
        return False
    spatial = int(op.name[-2])
    index = sample.args[0] if sample.args else sample.kwargs["indices"]
    planes = index.detach().reshape(-1, int(np.prod(index.shape[-spatial:]))).numpy()
    return any(np.unique(row).size < row.size for row in planes)


def _dropout_active(op, sample):
    kw = sample.kwargs
    p = kw.get("dropout_p", 0.0)
    return (isinstance(p, (int, float)) and p > 0) or \
        (op.name == "nn.functional.multi_head_attention_forward" and bool(kw.get("training")))


def _untie(op, sample, tree):
    """``tree`` with the indices of a tie-ambiguous op replaced by the input values they
    point at, when the input holds equal values (then any of their indices is right)."""
    rule = TIE_OPS.get(op.name)
    if rule is None or tree[0] not in ("S", "T"):
        return tree
    values = _numpy_of(sample.input)
    if np.unique(values).size == values.size:
        return tree
    position, dim, whole = rule
    if position is not None and len(sample.args) > position:
        dim = sample.args[position]
    dim = sample.kwargs.get("dim", dim)
    if dim is None or values.ndim == 0:
        return tree
    leaf = tree if whole else tree[1][1] if tree[0] == "S" and len(tree[1]) > 1 else None
    if leaf is None or leaf[0] != "T":
        return tree
    index = leaf[1].astype(np.int64)
    if index.ndim < values.ndim:
        index = np.expand_dims(index, dim)
    try:
        picked = np.take_along_axis(values, index, axis=dim).reshape(leaf[1].shape)
    except (IndexError, ValueError):
        return tree  # out-of-range indices: compare them as they are
    new_leaf = ("T", picked, leaf[2], leaf[3])
    return new_leaf if whole else ("S", [tree[1][0], new_leaf] + tree[1][2:])


def _fix_gauge(op, tree):
    """Vectors of a decomposition scaled so that each one's largest entry is real positive,
    and the complete SVD's arbitrary null-space vectors dropped (see GAUGE_OPS)."""
    rule = GAUGE_OPS.get(op.name)
    if rule is None or tree[0] != "S":
        return tree
    items = list(tree[1])
    singular = items[1] if op.name in ("linalg.svd", "svd") and items[1][0] == "T" else None
    for position, columns in rule:
        leaf = items[position]
        if leaf[0] != "T" or leaf[1].ndim < 2 or leaf[1].size == 0:
            continue
        vectors = leaf[1] if columns else np.swapaxes(leaf[1], -1, -2)
        if singular is not None:
            vectors = vectors[..., :singular[1].shape[-1]]
        pick = np.argmax(np.abs(vectors), axis=-2)[..., None, :]
        top = np.take_along_axis(vectors, pick, axis=-2)
        phase = np.where(np.abs(top) > 0, top / np.where(top == 0, 1, np.abs(top)), 1)
        vectors = vectors / phase
        fixed = vectors if columns else np.swapaxes(vectors, -1, -2)
        items[position] = ("T", fixed, leaf[2], fixed.shape)
    return ("S", items)


def _describe(sample, index, dtype, noncontiguous):
    shapes = [tuple(t.shape) for _, t in _tensors([sample.input, list(sample.args)])]
    layout = "non-contiguous " if noncontiguous else ""
    return f"{dtype} {layout}sample {index} {shapes} kwargs={sample.kwargs!r:.80}"


def _oracle(thunk):
    """torch's result; Unmeasurable when torch itself refuses the sample."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return thunk()
    except Unmeasurable:
        raise
    except Exception as e:
        raise Unmeasurable(f"torch raised {type(e).__name__}") from e


def _run(thunk):
    """ember's result, or a one-line description of what it raised."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return thunk(), None
    except Exception as e:
        first = (str(e).strip().splitlines() or [""])[0][:160]
        return None, f"{type(e).__name__}: {first}"


# --------------------------------------------------------------------------- the checks

class Report:
    """Failure messages of one check, and how many samples it compared."""

    def __init__(self):
        self.failures, self.compared = [], 0

    def fail(self, where, reason):
        """Record a failure at ``where``: a string, or a callable that makes one (a sample's
        description is formatted only when it fails)."""
        if len(self.failures) < MAX_FAILURES:
            self.failures.append(f"{where() if callable(where) else where}: {reason}")

    @property
    def full(self):
        return len(self.failures) >= MAX_FAILURES


def check_forward(op, dtype, quota=None, noncontiguous_every=1, report=None):
    """Compare ember's forward results with torch's on the samples of ``op`` in ``dtype``
    (and their non-contiguous copies, see :func:`variants`)."""
    import torch
    report = report or Report()
    fn = resolve(op)
    if fn is None:
        report.fail(op_id(op), "ember has no such op")
        return report
    tols = tolerances(op)
    for i, sample, noncontiguous in variants(op, dtype, False, quota, noncontiguous_every,
                                             "forward"):
        if report.full:
            break
        where = functools.partial(_describe, sample, i, dtype, noncontiguous)
        if _unmeasurable(op, sample):
            continue
        try:
            conv = ToEmber(noncontiguous)
            args = conv((sample.input, list(sample.args), dict(sample.kwargs)))
            torch.manual_seed(0)
            expected = normalize(_oracle(lambda: op(sample.input, *sample.args, **sample.kwargs)))
        except Unmeasurable:
            continue
        ember.manual_seed(0)
        got, err = _run(lambda: normalize(fn(args[0], *args[1], **args[2])))
        if err is None:
            expected, got = _untie(op, sample, expected), _untie(op, sample, got)
            expected, got = _fix_gauge(op, expected), _fix_gauge(op, got)
        reason = err or compare(expected, got, tols,
                                values=not (is_random(op) or _dropout_active(op, sample)))
        report.compared += 1
        if reason:
            report.fail(where, reason)
    return report


def _cotangent(shape, dtype, k):
    rng = np.random.default_rng(1000 + k)
    c = rng.standard_normal(shape)
    if dtype.is_complex:
        c = c + 1j * rng.standard_normal(shape)
    return c


def _differentiable(out):
    return [(pos, t) for pos, t in _tensors(out)
            if t.requires_grad and (t.dtype.is_floating_point or t.dtype.is_complex)]


def check_backward(op, quota=None, noncontiguous_every=1, report=None):
    """Compare vector-Jacobian products (float64, fixed random cotangents) with torch's,
    on contiguous and non-contiguous inputs (see :func:`variants`)."""
    import torch
    report = report or Report()
    fn = resolve(op)
    if fn is None:
        report.fail(op_id(op), "ember has no such op")
        return report
    tols = tolerances(op)
    for i, sample, noncontiguous in variants(op, GRAD_DTYPE, True, quota, noncontiguous_every,
                                             "backward"):
        if report.full:
            break
        where = functools.partial(_describe, sample, i, GRAD_DTYPE, noncontiguous)
        if _unmeasurable(op, sample) or _dropout_active(op, sample):
            continue
        process = sample.output_process_fn_grad or (lambda x: x)
        try:
            conv = ToEmber(noncontiguous)
            args = conv((sample.input, list(sample.args), dict(sample.kwargs)))
            if not conv.leaves:
                continue
            torch.manual_seed(0)

            def torch_vjp():
                out = process(op.gradcheck_wrapper(op.op, sample.input, *sample.args,
                                                   **sample.kwargs))
                outs = _differentiable(out)
                if not outs or any(t.layout not in (torch.strided, torch.sparse_csr) or
                                   dtype_name(t.dtype) not in EMBER_DTYPES for _, t in outs):
                    raise Unmeasurable("no comparable differentiable output")
                cots = [_torch_cotangent(t, k) for k, (_, t) in enumerate(outs)]
                grads = torch.autograd.grad([t for _, t in outs], [t for t, _ in conv.leaves],
                                            cots, allow_unused=True)
                return outs, cots, [normalize(_torch_zeros_like(t) if g is None else g)
                                    for g, (t, _) in zip(grads, conv.leaves)]
            outs, cots, expected = _oracle(torch_vjp)
        except Unmeasurable:
            continue

        def ember_vjp():
            out = rebind(process)(rebind(op.gradcheck_wrapper)(fn, args[0], *args[1], **args[2]))
            found = dict(_tensors(out))
            if any(pos not in found for pos, _ in outs):
                return "an expected tensor output is missing"
            # An output ember does not differentiate contributes zero, as it must in torch
            # (a mismatch then shows in the gradients). A sparse output's values pair with
            # the values of its cotangent, which has the output's pattern.
            pairs = [(_sparse_values(found[pos]), _ember_cotangent(c))
                     for (pos, _), c in zip(outs, cots) if found[pos].requires_grad]
            leaves = [_sparse_values(e) for _, e in conv.leaves]
            grads = ember.autograd.grad(
                [o for o, _ in pairs], leaves, [c for _, c in pairs],
                allow_unused=True) if pairs else [None] * len(conv.leaves)
            return [normalize(_with_pattern(e, g) if isinstance(e, SparseTensorBase) else
                              ember.zeros_like(e) if g is None else g)
                    for g, (_, e) in zip(grads, conv.leaves)]
        ember.manual_seed(0)
        got, err = _run(ember_vjp)
        if err is None and isinstance(got, str):
            err = got
        reason = err or compare(("S", expected), ("S", got), tols, values=not is_random(op),
                                path="grad")
        report.compared += 1
        if reason:
            report.fail(where, reason)
    return report


def _torch_cotangent(t, k):
    """A fixed random cotangent for torch output ``t``; for a CSR output, on its pattern."""
    import torch
    if t.layout == torch.sparse_csr:
        values = torch.from_numpy(_cotangent((t._nnz(),), t.dtype, k)).to(t.dtype)
        return torch.sparse_csr_tensor(t.crow_indices(), t.col_indices(), values, t.shape)
    return torch.from_numpy(_cotangent(t.shape, t.dtype, k)).to(t.dtype)


def _ember_cotangent(c):
    """ember's copy of a torch cotangent: the values alone for a sparse one."""
    import torch
    if c.layout == torch.sparse_csr:
        c = c.values()
    return ember.tensor(_numpy_of(c)).to(_ember_dtype(c))


def _torch_zeros_like(t):
    import torch
    return t.detach() * 0 if t.layout != torch.strided else torch.zeros_like(t)


def _tangent(t, k):
    return _cotangent(tuple(t.shape), t.dtype, 5000 + k)


def _with_duals(tree, make, leaves):
    """``tree`` with each tensor of ``leaves`` (by identity) replaced by ``make(tensor, k)``."""
    ids = {id(t): k for k, t in enumerate(leaves)}

    def walk(v):
        if id(v) in ids:
            return make(v, ids[id(v)])
        if isinstance(v, tuple) and hasattr(v, "_fields"):
            return type(v)(*map(walk, v))
        if isinstance(v, (list, tuple)):
            return type(v)(map(walk, v))
        if isinstance(v, dict):
            return {k: walk(w) for k, w in v.items()}
        return v
    return walk(tree)


def check_forward_ad(op, quota=None, report=None):
    """Compare Jacobian-vector products (float64, fixed random tangents) with torch's."""
    import torch
    import torch.autograd.forward_ad as tfw

    import ember.autograd.forward_ad as efw
    report = report or Report()
    fn = resolve(op)
    if fn is None:
        report.fail(op_id(op), "ember has no such op")
        return report
    tols = tolerances(op)
    for i, sample in samples(op, GRAD_DTYPE, True, quota, "forward_ad"):
        if report.full:
            break
        if _unmeasurable(op, sample) or _dropout_active(op, sample) or \
                _layout_dependent_repeats(op, sample):
            continue
        where = functools.partial(_describe, sample, i, GRAD_DTYPE, False)
        process = sample.output_process_fn_grad or (lambda x: x)
        tree = (sample.input, list(sample.args), dict(sample.kwargs))
        leaves = [t for _, t in _tensors(tree) if t.requires_grad]
        if not leaves:
            continue
        try:
            conv = ToEmber()
            e_tree = conv(tree)
            e_leaves = [conv.memo[id(t)][1] for t in leaves]

            def torch_jvp():
                with tfw.dual_level():
                    dual = _with_duals(tree, lambda t, k: tfw.make_dual(
                        t.detach(), torch.from_numpy(_tangent(t, k)).to(t.dtype)), leaves)
                    torch.manual_seed(0)
                    out = process(op.gradcheck_wrapper(op.op, dual[0], *dual[1], **dual[2]))
                    outs = [(pos, t) for pos, t in _tensors(out)
                            if t.dtype.is_floating_point or t.dtype.is_complex]
                    if not outs or any(t.layout != torch.strided for _, t in outs):
                        raise Unmeasurable("no comparable output")
                    return [(pos, normalize(_tangent_or_zeros(tfw.unpack_dual(t).tangent, t)))
                            for pos, t in outs]
            expected = _oracle(torch_jvp)
        except Unmeasurable:
            continue

        def ember_jvp():
            with efw.dual_level():
                dual = _with_duals(e_tree, lambda e, k: efw.make_dual(
                    e.detach(), ember.tensor(_tangent(leaves[k], k)).to(e.dtype)), e_leaves)
                ember.manual_seed(0)
                out = rebind(process)(rebind(op.gradcheck_wrapper)(fn, dual[0], *dual[1],
                                                                   **dual[2]))
                found = dict(_tensors(out))
                if any(pos not in found for pos, _ in expected):
                    return "an expected tensor output is missing"
                return [normalize(_tangent_or_zeros(efw.unpack_dual(found[pos]).tangent,
                                                    found[pos]))
                        for pos, _ in expected]
        got, err = _run(ember_jvp)
        if err is None and isinstance(got, str):
            err = got
        reason = err or compare(("S", [e for _, e in expected]), ("S", got), tols,
                                values=not is_random(op), path="tangent")
        report.compared += 1
        if reason:
            report.fail(where, reason)
    return report


def _tangent_or_zeros(tangent, primal):
    """A missing tangent means zero (the output does not depend on any dual input)."""
    if tangent is not None:
        return tangent
    mod = ember if isinstance(primal, ember.Tensor) else sys.modules["torch"]
    return mod.zeros(tuple(primal.shape), dtype=primal.dtype)

