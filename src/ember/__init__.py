"""ember: a deep-learning framework with PyTorch's API, on NumPy (CPU) and CuPy (GPU).

Example::

    >>> import ember as torch
    >>> x = torch.tensor([1., 2., 3.], requires_grad=True)
    >>> (x ** 2).sum().backward()
    >>> x.grad
    tensor([2., 4., 6.])
"""

from __future__ import annotations

import sys as _sys
import warnings as _warnings

from . import _allocator, _dtype, _method_docs
from ._device import device
from ._dtype import (
    bfloat16,
    bool,
    can_cast,
    cdouble,
    cfloat,
    complex64,
    complex128,
    double,
    dtype,
    finfo,
    float,
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    iinfo,
    int,
    int8,
    int16,
    int32,
    int64,
    long,
    promote_types,
    result_type,
    set_default_dtype,
    short,
    uint8,
)
from ._printing import set_printoptions
from ._threads import *  # noqa: F403
from ._tensor import (
    Size,
    Tensor,
    as_tensor,
    from_dlpack,
    from_numpy,
    is_complex,
    is_floating_point,
    is_tensor,
    numel,
    tensor,
)
from .autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .ops._operands import broadcast_shapes
from .ops.creation import *  # noqa: F403
from .ops.index import *  # noqa: F403
from .ops.linalg import *  # noqa: F403
from .ops.pointwise import *  # noqa: F403
from .ops.random import *  # noqa: F403
from .ops.reduce import *  # noqa: F403
from .ops.shape import *  # noqa: F403
from .ops.signal import *  # noqa: F403  (hann_window, ..., kaiser_window)
from .ops.foreach import *  # noqa: F403  (torch._foreach_add_, ...: fused optimisers)

from . import autograd, cuda, fft, linalg, nn, serialization, special  # noqa: E402  (need the ops)
from . import signal  # noqa: E402  (ember.signal.windows)
from . import masked  # noqa: E402  (ember.masked: torch.masked's reductions)
from . import nested  # noqa: E402  (ember.nested: torch.nested's strided layout)
from .fft import istft, stft  # noqa: E402  (torch.stft, torch.istft)
from .serialization import load, save  # noqa: E402
from . import multiprocessing, utils  # noqa: E402  (registers the tensor reducers)
from .ops import random  # noqa: E402, F401  (torch.random: seeds and generator state)
from .utils import data as _data  # noqa: E402, F401  (ember.utils.data, as torch.utils.data)
from .nn.functional import log_softmax, softmax  # noqa: E402, F401  (torch.softmax, ...)
from .nn._functional.rnn import gru, lstm, rnn_relu, rnn_tanh  # noqa: E402, F401  (torch.lstm, ...)
from . import optim  # noqa: E402  (ember.optim: optimisers, lr schedulers, SWA)
from . import func  # noqa: E402  (ember.func: functional_call, grad, vjp, jacrev)
from .func import vmap  # noqa: E402  (torch.vmap)
from . import amp, cpu  # noqa: E402  (ember.amp: autocast, GradScaler; ember.cpu.amp)
from .cuda import amp as _cuda_amp  # noqa: E402, F401  (ember.cuda.amp: deprecated aliases)
from . import _dynamo, accelerator, backends, compiler, mps, xpu  # noqa: E402, F401
from ._switches import *  # noqa: E402, F403  (set_default_device, matmul precision, ...)
from ._inductor import compile  # noqa: E402  (ember.compile: the compiler, in _inductor/)
from ._constants import *  # noqa: E402, F403  (pi, e, inf, nan, newaxis)
from ._tensor_functions import *  # noqa: E402, F403  (is_same_size, detach, abs_, ...)
from .ops.statistics import *  # noqa: E402, F403  (cov, corrcoef, histogramdd)
from .ops.combine import *  # noqa: E402, F403  (block_diag, cartesian_prod, combinations)
from .nn._functional.toplevel import *  # noqa: E402, F403  (torch.dropout, torch.kl_div, ...)
from ._streams import *  # noqa: E402, F403  (Stream, Event)
from ._tensor import (  # noqa: E402  (layouts, memory formats, legacy tensor types)
    BFloat16Tensor,
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
    channels_last,
    channels_last_3d,
    contiguous_format,
    layout,
    memory_format,
    preserve_format,
    strided,
)
from .amp.autocast_mode import (  # noqa: E402
    autocast,
    clear_autocast_cache,
    get_autocast_dtype,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from .special import gammainc as igamma, gammaincc as igammac  # noqa: E402  (torch.igamma)
from . import profiler  # noqa: E402  (ember.profiler; ember.autograd.profiler)
from .autograd import profiler as _autograd_profiler  # noqa: E402, F401
from . import storage  # noqa: E402  (ember.storage; attaches untyped_storage, storage, set_)
from .storage import (  # noqa: E402  (torch.UntypedStorage, torch.FloatStorage, ...)
    BFloat16Storage,
    BoolStorage,
    ByteStorage,
    CharStorage,
    ComplexDoubleStorage,
    ComplexFloatStorage,
    DoubleStorage,
    FloatStorage,
    HalfStorage,
    IntStorage,
    LongStorage,
    ShortStorage,
    TypedStorage,
    UntypedStorage,
    is_storage,
)
from . import quasirandom  # noqa: E402  (ember.quasirandom.SobolEngine)
from . import library  # noqa: E402  (ember.library.custom_op; ops in ember.ops.<ns>)
from . import _C  # noqa: E402, F401  (torch._C's switches that programs flip)

from .version import __version__  # noqa: E402

_allocator.tune_malloc()
amp.autocast_mode.install()  # the dispatcher's autocast hooks read the policies ops declare
_method_docs.document_methods(Tensor, _sys.modules[__name__])

# Torch computes 1/0, log(0) and overflow silently (inf/nan): so do ember's kernels. The filter
# matches only NumPy's floating-point warnings raised from ember's own modules.
_warnings.filterwarnings(
    "ignore", message=r"(divide by zero|invalid value|overflow|underflow) encountered",
    category=RuntimeWarning, module=r"ember(\.|$)")

del _dtype
from . import sparse  # noqa: E402  (ember.sparse: sparse COO tensors)
from ._tensor import sparse_coo, sparse_csc, sparse_csr  # noqa: E402  (sparse layouts)
from .sparse import sparse_coo_tensor, sparse_csc_tensor, sparse_csr_tensor  # noqa: E402
from .sparse._dispatch import addmm, matmul, mm  # noqa: E402, F811  (also take a sparse mat1)
from .amp import GradScaler  # noqa: E402  (torch.GradScaler: the device-generic scaler)
from .cuda import OutOfMemoryError  # noqa: E402  (torch.OutOfMemoryError)
from .ops.linalg import geqrf, lobpcg, orgqr, ormqr  # noqa: E402  (LAPACK's compact QR family)
from . import overrides  # noqa: E402  (ember.overrides: the __torch_function__ protocol)
from .sparse._products import (  # noqa: E402  (torch's older sparse-dense product names)
    dsmm,
    hsmm,
    hspmm,
    saddmm,
    smm,
    spmm,
    sspaddmm,
)
from . import _tensor_compat  # noqa: E402, F401  (rarer Tensor attributes: is_xpu, values...)
from ._symbolic import *  # noqa: E402, F403  (sym_int, sym_max, SymInt...: plain numbers)
from ._eager_control import Future, cond, fork, wait  # noqa: E402  (run eagerly)
from ._backend_info import *  # noqa: E402, F403  (has_lapack, get_device_module, ...)
from .ops.native import *  # noqa: E402, F403  (native_layer_norm, ..., values_copy)
from .ops.internal import *  # noqa: E402, F403  (_safe_softmax, segment_reduce, ...)
from ._classes import classes  # noqa: E402  (torch.classes: custom-class namespaces)
from . import _ops  # noqa: E402, F401  (torch._ops: OpOverload/OpOverloadPacket classes)
from ._unsupported import *  # noqa: E402, F403  (TorchScript IR classes, quantization, float8)
from .overrides import DisableTorchFunction, DisableTorchFunctionSubclass  # noqa: E402

overrides._install()  # last: every public function and Tensor method honours __torch_function__

# Submodules torch makes reachable as attributes of ``torch`` that ember imports on first use
# (PEP 562), keeping ``import ember`` short (jit, fx, onnx, distributions, distributed and
# testing are a seventh of it), and torch's top-level names that live in them.
_LAZY_SUBMODULES = frozenset({"cpp", "distributed", "distributions", "export", "functional",
                              "fx", "hub", "jit", "onnx", "testing", "types", "version",
                              "webgpu"})
_LAZY_NAMES = {"CompilationUnit": ("jit", "CompilationUnit"),
               "ScriptFunction": ("jit", "ScriptFunction"),
               "ScriptModule": ("jit", "ScriptModule"),
               "JITException": ("jit", "Error")}   # torch.JITException is torch.jit.Error


def __getattr__(name):
    import importlib

    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY_NAMES:
        module, attribute = _LAZY_NAMES[name]
        value = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _LAZY_SUBMODULES | set(_LAZY_NAMES))
