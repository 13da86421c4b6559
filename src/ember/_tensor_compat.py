"""The rarer ``torch.Tensor`` attributes, so that code probing them runs as under torch.

* backend flags (``is_xpu``, ``is_mps``, ``is_nested``...): ``False``, as on torch's CPU build;
* the sparse accessors on a dense tensor (``values``, ``indices``, ``crow_indices``...): torch's
  RuntimeError naming the layout they expect (sparse tensors have their own methods);
* methods torch removed (``eig``, ``symeig``, ``lstsq``, ``solve``, ``reinforce``): torch's
  RuntimeError, naming what replaces them;
* quantized accessors (``q_scale``, ``int_repr``...) and other backends' conversions
  (``xpu``, ``to_mkldnn``...): the error torch raises for a dense CPU tensor;
* small real ones: ``const_data_ptr``, ``dim_order``, ``nonzero_static``, ``module_load``,
  ``slice_inverse``, ``dequantize``, ``grad_dtype``, ``name``, ``volatile``.

Each is installed where it is defined, with :func:`~ember.ops._methods.tensor_method` (as
every method outside ``_tensor.py``), when ember is imported. The one-line error methods are
made by small factories (:func:`sparse_only`, :func:`no_cpu_kernel`, :func:`removed`,
:func:`no_backend`), one ``tensor_method(...)`` line each, naming the method and torch's message.
"""

from __future__ import annotations

import warnings

from . import _dtype as dt
from ._tensor import channels_last, channels_last_3d, memory_format
from .ops._methods import tensor_method
from .ops._signature import refusing, signature

__all__ = []

def _always_false(self):
    """``False``: ember tensors live on cpu, cuda or meta only (as torch's CPU build says)."""
    return False


# the backend flags: one property, False on every tensor (the sparse classes get them too)
_BACKEND_FLAGS = ("is_xpu", "is_ipu", "is_maia", "is_mkldnn", "is_mps", "is_mtia", "is_nested",
                  "is_vulkan", "is_xla")
for _flag in _BACKEND_FLAGS:
    tensor_method(property(_always_false, doc=_always_false.__doc__), _flag)


@tensor_method
def is_distributed(self):
    """``False``, as torch answers for every tensor.

    Example::

        >>> ember.ones(2).is_distributed()
        False
    """
    return False


# ---------------------------------------------------------------- sparse accessors


_LAYOUT_KINDS = {"strided": "Strided", "sparse_coo": "Sparse", "sparse_csr": "SparseCsr",
                 "sparse_csc": "SparseCsc"}


def sparse_only(name, layout):
    """The accessor ``name`` of sparse ``layout`` tensors, for a tensor without that layout:
    it raises torch's RuntimeError naming the layout it expects and the one it got.

    Example::

        >>> ember.ones(2).values()
        Traceback (most recent call last):
        RuntimeError: values expected sparse tensor layout but got Strided
    """
    def accessor(self):  # (an argument is Python's TypeError, as torch's)
        raise RuntimeError(f"{name} expected sparse {layout} layout but got "
                           f"{_LAYOUT_KINDS[self.layout.name]}")
    accessor.__name__ = accessor.__qualname__ = name
    accessor.__doc__ = (f"A sparse tensor's ``{name}``; a dense tensor raises torch's "
                        f"RuntimeError (the tensor needs a sparse {layout} layout).")
    return accessor


# also inherited by the sparse classes, for the layouts whose accessors they do not define
_SPARSE_ACCESSORS = (
    tensor_method(sparse_only("values", "tensor")),
    tensor_method(sparse_only("indices", "coordinate tensor")),
    tensor_method(sparse_only("coalesce", "coordinate tensor")),
    tensor_method(sparse_only("is_coalesced", "coordinate tensor")),
    tensor_method(sparse_only("crow_indices", "row compressed tensor")),
    tensor_method(sparse_only("col_indices", "row compressed tensor")),
    tensor_method(sparse_only("ccol_indices", "column compressed tensor")),
    tensor_method(sparse_only("row_indices", "column compressed tensor")),
)


@tensor_method
def sparse_dim(self):
    """The number of sparse dims: 0 for a dense tensor.

    Example::

        >>> ember.ones(2, 3).sparse_dim()
        0
    """
    return 0


@tensor_method
def dense_dim(self):
    """The number of dense dims: all of them for a dense tensor.

    Example::

        >>> ember.ones(2, 3).dense_dim()
        2
    """
    return self.dim()


@tensor_method
def smm(self, mat2):
    """``ember.smm(self, mat2)`` (``self`` must be sparse).

    Example::

        >>> ember.ones(2, 2).smm(ember.ones(2, 2))
        Traceback (most recent call last):
        RuntimeError: tensor.sspaddmm(...) can only be called on sparse tensors
    """
    from .sparse._products import smm as _smm

    return _smm(self, mat2)


@tensor_method
def sspaddmm(self, mat1, mat2, *, beta=1, alpha=1):
    """``ember.sspaddmm(self, mat1, mat2)`` (``self`` and ``mat1`` must be sparse).

    Example::

        >>> ember.ones(2, 2).sspaddmm(ember.ones(2, 2), ember.ones(2, 2))
        Traceback (most recent call last):
        RuntimeError: tensor.sspaddmm(...) can only be called on sparse tensors
    """
    from .sparse._products import sspaddmm as _sspaddmm

    return _sspaddmm(self, mat1, mat2, beta=beta, alpha=alpha)


# ---------------------------------------------------------------- unavailable in ember or torch

_NO_KERNEL = ("Could not run 'aten::{}' with arguments from the 'CPU' backend. This could be "
              "because the operator doesn't exist for this backend, or was omitted during the "
              "selective/custom build process (if using custom build).")


def no_cpu_kernel(name, why, params=""):
    """The method ``name`` that torch has no CPU kernel for on a dense tensor: it raises
    torch's NotImplementedError, followed by ``why`` (what ember offers instead), once its
    arguments (``params`` after ``self``, in torch's schema language) pass torch's checks.

    Example::

        >>> ember.ones(2).q_scale()
        Traceback (most recent call last):
        NotImplementedError: Could not run 'aten::q_scale' with arguments from the 'CPU' ...
    """
    def error():
        return NotImplementedError(_NO_KERNEL.format(name) + " " + why)

    if params:  # (a generated function: bind it at the top of this module, its home)
        method = refusing(f"{name}(Tensor self, {params}) -> Tensor", error)
        method.__module__ = __name__
    else:
        def method(self):
            raise error()
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Raises NotImplementedError as torch does on a dense CPU tensor ({why})."
    return method


_QUANTIZED = "ember has no quantized tensors; keep the float tensor (see migrating-from-pytorch)."
_SPARSE_RESIZE = "ember resizes no sparse tensors in place; build a new sparse_coo_tensor."
tensor_method(no_cpu_kernel("int_repr", _QUANTIZED))
tensor_method(no_cpu_kernel("q_scale", _QUANTIZED))
tensor_method(no_cpu_kernel("q_zero_point", _QUANTIZED))
tensor_method(no_cpu_kernel("q_per_channel_scales", _QUANTIZED))
tensor_method(no_cpu_kernel("q_per_channel_zero_points", _QUANTIZED))
tensor_method(no_cpu_kernel("q_per_channel_axis", _QUANTIZED))
tensor_method(no_cpu_kernel("qscheme", _QUANTIZED))
_SPARSE_SIZES = "int[] size, int sparse_dim, int dense_dim"
resize_as_sparse_ = tensor_method(no_cpu_kernel("resize_as_sparse_", _SPARSE_RESIZE,
                                                "Tensor the_template"))
sparse_resize_ = tensor_method(no_cpu_kernel("sparse_resize_", _SPARSE_RESIZE, _SPARSE_SIZES))
sparse_resize_and_clear_ = tensor_method(no_cpu_kernel("sparse_resize_and_clear_",
                                                       _SPARSE_RESIZE, _SPARSE_SIZES))
_NO_NESTED = "ember has no nested tensors; pad with ember.nn.utils.rnn.pad_sequence."
to_padded_tensor = tensor_method(no_cpu_kernel("to_padded_tensor", _NO_NESTED,
                                               "float padding, SymInt[]? output_size=None"))


def removed(name, replacement):
    """The method ``name`` that torch removed in 1.9: it raises torch's RuntimeError naming
    ``replacement``.

    Example::

        >>> ember.eye(2).symeig()
        Traceback (most recent call last):
        RuntimeError: This function was deprecated since version 1.9 and is now removed. ...
    """
    def method(self, *args, **kwargs):
        raise RuntimeError(f"This function was deprecated since version 1.9 and is now removed. "
                           f"`torch.{name}` is replaced by {replacement}.")
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Removed from torch in 1.9: raises RuntimeError naming {replacement}."
    return method


tensor_method(removed("eig", "torch.linalg.eig (complex eigenvalues and eigenvectors) or "
                             "torch.linalg.eigvals"))
tensor_method(removed("symeig", "torch.linalg.eigh (lower triangle by default) or "
                                "torch.linalg.eigvalsh"))
tensor_method(removed("lstsq", "torch.linalg.lstsq (arguments reversed: lstsq(A, B))"))
tensor_method(removed("solve", "torch.linalg.solve (arguments reversed: solve(A, B)); for the "
                               "LU factors, torch.linalg.lu_factor"))


@tensor_method
def reinforce(self, reward):
    """Removed from torch (stochastic functions): raises torch's RuntimeError.

    Example::

        >>> ember.ones(1).reinforce(1.0)
        Traceback (most recent call last):
        RuntimeError: reinforce() was removed. Use torch.distributions instead...
    """
    raise RuntimeError("reinforce() was removed. Use torch.distributions instead (sample an "
                       "action, then minimise -log_prob(action) * reward). See "
                       "https://pytorch.org/docs/main/distributions.html")


@tensor_method
def chalf(self, memory_format=None):
    """``self.to(complex32)`` in torch; ember has no complex32 dtype.

    Example::

        >>> ember.ones(1).chalf()
        Traceback (most recent call last):
        NotImplementedError: Tensor.chalf: ember has no complex32 ...
    """
    raise NotImplementedError("Tensor.chalf: ember has no complex32 (chalf) dtype (NumPy has "
                              "no half-precision complex); use Tensor.cfloat() (complex64).")


def no_backend(name, exc, message):
    """The method ``name`` of a backend or layout ember lacks: it raises ``exc(message)``, the
    exception torch's CPU build raises.

    Example::

        >>> ember.ones(2).xpu()
        Traceback (most recent call last):
        AssertionError: Torch not compiled with XPU enabled (ember: use cpu or cuda)
    """
    def method(self, *args, **kwargs):
        raise exc(message)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Raises {exc.__name__} as torch's CPU build does: {message}"
    return method


tensor_method(no_backend("ipu", RuntimeError, "PyTorch is not linked with support for ipu "
                                              "devices (ember: use cpu or cuda)"))
tensor_method(no_backend("xpu", AssertionError, "Torch not compiled with XPU enabled (ember: use "
                                                "cpu or cuda)"))
tensor_method(no_backend("mtia", AssertionError, "Torch not compiled with MTIA enabled (ember: "
                                                 "use cpu or cuda)"))


@tensor_method
@signature("to_mkldnn(Tensor self, ScalarType? dtype=None) -> Tensor")
def to_mkldnn(self, dtype=None):
    """Refused after torch's argument checks: ember has no MKL-DNN layout.

    Example::

        >>> ember.ones(2).to_mkldnn()
        Traceback (most recent call last):
        RuntimeError: Tensor.to_mkldnn: ember has no MKL-DNN layout; strided tensors already ...
    """
    raise RuntimeError("Tensor.to_mkldnn: ember has no MKL-DNN layout; strided tensors already "
                       "use the CPU's BLAS")


@tensor_method
@signature("hash_tensor(Tensor self, int[1] dim=[], *, bool keepdim=False, int mode=0) -> Tensor")
def hash_tensor(self, dim=(), *, keepdim=False, mode=0):
    """Refused after torch's checks of the arguments and of an empty input's reduction dims:
    ember has no uint64 dtype to hold the hash.

    Example::

        >>> ember.ones(2).hash_tensor()
        Traceback (most recent call last):
        NotImplementedError: Tensor.hash_tensor: ember has no uint64 dtype to hold the hash; ...
    """
    if self.numel() == 0 and not dim:
        raise RuntimeError("hash_tensor: Expected reduction dim to be specified for "
                           "input.numel() == 0. Specify the reduction dim with the 'dim' "
                           "argument.")
    raise NotImplementedError("Tensor.hash_tensor: ember has no uint64 dtype to hold the hash; "
                              "use Python's hash of tensor.tolist()")


tensor_method(no_backend("to_sparse_bsr", RuntimeError, "Tensor.to_sparse_bsr: ember has no "
                         "block sparse layouts; use Tensor.to_sparse_csr()"))
tensor_method(no_backend("to_sparse_bsc", RuntimeError, "Tensor.to_sparse_bsc: ember has no "
                         "block sparse layouts; use Tensor.to_sparse_csc()"))


@tensor_method
def index(self, positions, dims):
    """torch's first-class dimensions (``functorch.dim``), which ember lacks.

    Example::

        >>> ember.ones(2).index((0,), None)
        Traceback (most recent call last):
        NotImplementedError: Tensor.index binds first-class dims ...
    """
    raise NotImplementedError("Tensor.index binds first-class dims (functorch.dim), which "
                              "ember does not have; index with tensor[...] instead.")


# ---------------------------------------------------------------- small real attributes


@tensor_method
def const_data_ptr(self):
    """The address of the first element, as :meth:`data_ptr` (read-only intent).

    Example::

        >>> x = ember.ones(2); x.const_data_ptr() == x.data_ptr()
        True
    """
    return self.data_ptr()


@tensor_method
def dequantize(self):
    """A non-quantized tensor dequantizes to float32, as torch's.

    Example::

        >>> ember.arange(2).dequantize()
        tensor([0., 1.])
    """
    return self.to(dt.float32)


@tensor_method
def record_stream(self, stream):
    """Mark memory as used by ``stream`` (torch's caching allocator). ember's CuPy pool frees
    memory only when no tensor holds it, so there is nothing to record.

    Example::

        >>> ember.ones(2).record_stream(ember.Stream())
    """
    from ._streams import Stream
    from .cuda.streams import Stream as CudaStream

    if not isinstance(stream, (Stream, CudaStream)):
        raise RuntimeError("unknown parameter type")


@tensor_method
def module_load(self, other, assign=False):
    """What ``load_state_dict`` swaps into a module for ``other``: ``other`` detached with
    ``assign``, else ``self.copy_(other)`` detached (torch's default).

    Example::

        >>> ember.zeros(2).module_load(ember.ones(2))
        tensor([1., 1.])
    """
    if assign:
        return other.detach()
    return self.copy_(other).detach()


@tensor_method
def nonzero_static(self, *, size, fill_value=-1):
    """The indices of the nonzero elements as :meth:`nonzero` gives them, cut or padded with
    ``fill_value`` to exactly ``size`` rows (a shape known before the values).

    Example::

        >>> ember.tensor([0, 3, 0, 5]).nonzero_static(size=3)
        tensor([[ 1],
                [ 3],
                [-1]])
    """
    from .ops.creation import full
    from .ops.shape import cat

    if not isinstance(size, int) or isinstance(size, bool):
        raise TypeError(f"nonzero_static(): argument 'size' must be int, not "
                        f"{type(size).__name__}")
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got "
                           f"size: {size}")
    found = self.nonzero()
    if found.shape[0] >= size:
        return found[:size]
    padding = full((size - found.shape[0], found.shape[1]), fill_value, dtype=found.dtype,
                   device=found.device)
    return cat([found, padding])


@tensor_method
@signature("slice_inverse(Tensor self, Tensor src, int dim=0, SymInt? start=None, "
           "SymInt? end=None, SymInt step=1) -> Tensor")
def slice_inverse(self, src, dim=0, start=None, end=None, step=1):
    """The view of ``self``'s memory with ``src``'s sizes, strides and offset: the inverse of
    slicing that torch's functionalization uses to write a slice back into its base.

    Example::

        >>> ember.arange(4.).slice_inverse(ember.zeros(2), 0, 1, 3)
        tensor([0., 1.])
    """
    return self.as_strided(src.shape, src.stride(), src.storage_offset())


@tensor_method
def dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory (largest stride first): ``(0, 1)``
    for a contiguous matrix, ``(1, 0)`` for its transpose, ``(0, 2, 3, 1)`` channels last.

    ``ambiguity_check=True`` refuses a tensor whose order is not unique (equal strides or
    size-1 dims); a list of memory formats accepts it if exactly one of them fits.

    Example::

        >>> ember.zeros(3, 4).t().dim_order()
        (1, 0)
    """
    formats = ambiguity_check if isinstance(ambiguity_check, list) else []
    if not isinstance(ambiguity_check, bool) and not (
            isinstance(ambiguity_check, list) and
            all(isinstance(f, memory_format) for f in ambiguity_check)):
        raise TypeError("The ambiguity_check argument must be a bool or a list of memory "
                        "formats.")
    check = ambiguity_check if isinstance(ambiguity_check, bool) else True
    if check and _has_several_orders(self) and \
            sum(self.is_contiguous(memory_format=f) for f in formats) != 1:
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact "
                           "one of the given memory formats.")
    return tuple(_memory_order(self, ambiguity_check))


def _has_several_orders(tensor):
    strides = tensor.stride()
    return any(a == b for a, b in zip(strides, strides[1:])) or 1 in tensor.shape


def _memory_order(tensor, ambiguity_check=False):
    """Logical dims sorted outermost-first by stride; ties keep the order that torch's
    insertion sort (run from the innermost dim) gives. With ``ambiguity_check``, a tie left
    after sorting raises torch's RuntimeError."""
    ndim = tensor.dim()
    if ndim <= 1:
        return list(range(ndim))
    contiguous = tensor.is_contiguous()
    last = channels_last if ndim == 4 else channels_last_3d if ndim == 5 else None
    in_last = last is not None and tensor.is_contiguous(memory_format=last)
    if contiguous and not in_last:
        return list(range(ndim))
    if in_last and not contiguous:
        return [0, *range(2, ndim), 1]
    order = list(reversed(range(ndim)))  # innermost first while sorting
    for i in range(1, ndim):
        j = i
        for k in reversed(range(i)):
            swap = _outer_first(tensor, order[k], order[j])
            if swap > 0:
                order[k], order[j] = order[j], order[k]
                j = k
            elif swap < 0:
                break
    if ambiguity_check and any(_outer_first(tensor, inner, outer) != -1
                               for inner, outer in zip(order, order[1:])):
        raise RuntimeError("The tensor does not have unique dim order.")
    return list(reversed(order))


def _outer_first(tensor, a, b):
    """1 when dim ``a`` sits outside dim ``b`` in memory (so they swap), -1 when inside, 0
    when their strides don't tell."""
    stride_a, stride_b = tensor.stride(a), tensor.stride(b)
    if stride_a == 0 or stride_b == 0:
        return 0
    if stride_a == stride_b:
        return 0 if _at_least(tensor.shape[b], tensor.shape[a]) else 1
    if _at_least(stride_b, stride_a):
        return -1
    return 1 if _at_least(stride_a, stride_b) else 0


def _at_least(a, b):
    return b == 0 or (a != 0 and (a >= b or a % b == 0))


def _sparse_dim_order(self, *, ambiguity_check=False):
    """Sparse tensors have no strides, so no dim order (torch's errors)."""
    if self.layout.name == "sparse_coo":
        from ._tensor import _TYPE_NAMES

        kind = _TYPE_NAMES[self.dtype.name].replace("torch.", "torch.sparse.")
        raise AttributeError(f"Can't get dim order on sparse type: {kind} Use "
                             f"Tensor.to_dense() to convert to a dense tensor first.")
    raise RuntimeError(f"Sparse {self.layout.name[-3:].upper()} tensors do not have strides")


def _install_on_sparse():
    """``dim_order`` on ember's sparse tensors (Tensor subclasses, which inherit the flags
    and the other layouts' accessors, whose errors read ``self.layout``)."""
    from .sparse._base import SparseTensorBase

    SparseTensorBase.dim_order = _sparse_dim_order


def _grad_dtype(self):
    """The dtype a leaf's ``.grad`` takes: its own dtype (torch's default); only leaves
    have one."""
    if not self.is_leaf:
        raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
    return self.dtype


def _set_grad_dtype(self, value):
    if not self.is_leaf:
        raise RuntimeError("grad_dtype can only be set on leaf tensors.")
    if value is not None and dt.to_dtype(value) is not self.dtype:
        raise NotImplementedError("Tensor.grad_dtype: ember accumulates a leaf's gradient in "
                                  "the leaf's dtype; cast .grad after backward instead.")


tensor_method(property(_grad_dtype, _set_grad_dtype, doc=_grad_dtype.__doc__), "grad_dtype")


def _volatile(self):
    """Always False: ``volatile`` was removed from torch (use ``ember.no_grad()``)."""
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                  stacklevel=2)
    return False


def _set_volatile(self, value):
    warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` "
                  "instead.", UserWarning, stacklevel=2)


tensor_method(property(_volatile, _set_volatile, doc=_volatile.__doc__), "volatile")


def _name(self):
    """None: ember tensors carry no name (torch's named-tensor field)."""
    return None


tensor_method(property(_name, doc=_name.__doc__), "name")
_install_on_sparse()
