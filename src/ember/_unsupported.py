"""Names of torch's top-level namespace that ember cannot back with a real feature: they exist
(so imports, ``isinstance`` checks and dtype comparisons work) and using them raises
``NotImplementedError`` naming the torch API and what to use instead.

Three kinds, each made by one small factory from one table below:

* TorchScript's IR and C++ binding classes (``Graph``, ``Node``, ``TensorType``, ...):
  making one raises;
* functions of backends or features ember lacks (cuDNN/MIOpen/MKL-DNN/FBGEMM entry points,
  quantization, block-sparse tensors, TorchScript IR parsing): calling one raises;
* dtypes NumPy cannot hold as ember tensors (float8, complex32, quantized, sub-byte and wide
  unsigned ints): they compare, print and report ``itemsize``/``is_floating_point`` as torch's,
  and making a tensor of one raises.

docs/migrating-from-pytorch.md lists them all.
"""

from __future__ import annotations

import enum
import sys

from . import _dtype as dt
from ._tensor import layout

__all__ = []  # filled below with every name made here

_SCRIPT = "ember.jit (trace/script) builds its own graph IR; use ember.jit.trace or script"
_QUANT = ("ember has no quantized tensors; keep float tensors (bfloat16/float16 for low "
          "precision)")
_CUDNN = "ember calls cuDNN only inside its own cuda convolutions; use ember.nn.functional"
_MKLDNN = "ember has no MKL-DNN layout; use ember.nn.functional on strided tensors"
_MIOPEN = "ember has no MIOpen (ROCm) backend; use ember.nn.functional"
_FBGEMM = "ember has no FBGEMM kernels; use ember.nn.functional.linear on float tensors"
_DISPATCH = "ember has no C++ dispatcher; operators are ember.ops Ops (see ember.library)"
_SYNC_BN = "ember has no SyncBatchNorm kernels; use ember.nn.functional.batch_norm"
_BENCH = "ember has no C++ benchmark harness; use ember.utils.benchmark or bench/"

UNSUPPORTED_CLASSES = {
    **dict.fromkeys((
        "AliasDb", "AnyType", "Argument", "ArgumentSpec", "AwaitType", "Block", "BoolType",
        "BufferDict", "CallStack", "Capsule", "ClassType", "Code", "CompleteArgumentSpec",
        "ComplexType", "ConcreteModuleType", "ConcreteModuleTypeBuilder", "DeepCopyMemoTable",
        "DeserializationStorageContext", "DeviceObjType", "DictType", "EnumType", "ErrorReport",
        "ExecutionPlan", "FileCheck", "FloatType", "FunctionSchema", "FutureType", "Gradient",
        "Graph", "GraphExecutorState", "IODescriptor", "InferredType", "IntType",
        "InterfaceType", "ListType", "LiteScriptModule", "LockingLogger", "ModuleDict", "Node",
        "NoneType", "NoopLogger", "NumberType", "OperatorInfo", "OptionalType",
        "ParameterDict", "PyObjectType", "PyTorchFileReader", "PyTorchFileWriter", "RRefType",
        "ScriptClass", "ScriptClassFunction", "ScriptDict", "ScriptDictIterator",
        "ScriptDictKeyIterator", "ScriptList", "ScriptListIterator", "ScriptMethod",
        "ScriptModuleSerializer", "ScriptObject", "ScriptObjectProperty",
        "SerializationStorageContext", "StaticModule", "StreamObjType", "StringType",
        "SymBoolType", "SymIntType", "TensorType", "TracingState", "TupleType", "Type",
        "UnionType", "Use", "Value"), _SCRIPT),
    **dict.fromkeys(("DispatchKey", "DispatchKeySet", "ExcludeDispatchKeyGuard", "Tag"),
                    _DISPATCH),
    **dict.fromkeys(("BenchmarkConfig", "BenchmarkExecutionStats", "ThroughputBenchmark"),
                    _BENCH),
    "qscheme": _QUANT,
}

UNSUPPORTED_FUNCTIONS = {
    **dict.fromkeys((
        "import_ir_module", "import_ir_module_from_buffer", "merge_type_from_type_comment",
        "parse_ir", "parse_schema", "parse_type_comment", "unify_type_list"), _SCRIPT),
    **dict.fromkeys((
        "choose_qparams_optimized", "empty_quantized", "fake_quantize_per_channel_affine",
        "fake_quantize_per_tensor_affine", "fused_moving_avg_obs_fake_quant",
        "quantize_per_channel", "quantize_per_tensor", "quantize_per_tensor_dynamic",
        "quantized_batch_norm", "quantized_gru_cell", "quantized_lstm_cell",
        "quantized_max_pool1d", "quantized_max_pool2d", "quantized_max_pool3d",
        "quantized_rnn_relu_cell", "quantized_rnn_tanh_cell"), _QUANT),
    **dict.fromkeys((
        "cudnn_affine_grid_generator", "cudnn_batch_norm", "cudnn_convolution",
        "cudnn_convolution_add_relu", "cudnn_convolution_relu", "cudnn_convolution_transpose",
        "cudnn_grid_sampler"), _CUDNN),
    **dict.fromkeys((
        "mkldnn_adaptive_avg_pool2d", "mkldnn_convolution", "mkldnn_linear_backward_weights",
        "mkldnn_max_pool2d", "mkldnn_max_pool3d", "mkldnn_rnn_layer"), _MKLDNN),
    **dict.fromkeys((
        "miopen_batch_norm", "miopen_convolution", "miopen_convolution_add_relu",
        "miopen_convolution_relu", "miopen_convolution_transpose", "miopen_ctc_loss",
        "miopen_depthwise_convolution", "miopen_rnn"), _MIOPEN),
    **dict.fromkeys((
        "fbgemm_linear_fp16_weight", "fbgemm_linear_fp16_weight_fp32_activation",
        "fbgemm_linear_int8_weight", "fbgemm_linear_int8_weight_fp32_activation",
        "fbgemm_linear_quantize_weight", "fbgemm_pack_gemm_matrix_fp16",
        "fbgemm_pack_quantized_matrix"), _FBGEMM),
    **dict.fromkeys((
        "batch_norm_backward_elemt", "batch_norm_backward_reduce", "batch_norm_elemt",
        "batch_norm_gather_stats", "batch_norm_gather_stats_with_counts", "batch_norm_stats",
        "batch_norm_update_stats"), _SYNC_BN),
    "sparse_bsr_tensor": "ember has no block sparse layouts; use ember.sparse_csr_tensor",
    "sparse_bsc_tensor": "ember has no block sparse layouts; use ember.sparse_csc_tensor",
    "resize_as_sparse_": "ember resizes no sparse tensors in place; build a new one",
    **dict.fromkeys(("int_repr", "q_scale", "q_zero_point", "q_per_channel_scales",
                     "q_per_channel_zero_points", "q_per_channel_axis"), _QUANT),
    "hash_tensor": "ember has no uint64 dtype to hold the hash; use ember.Tensor.tolist() and "
                   "Python's hash",
}

# name: (itemsize, category, is_signed or None where torch refuses to say)
_FLOAT, _COMPLEX, _INT, _OTHER = dt._FLOAT, dt._COMPLEX, dt._INT, -1
UNSUPPORTED_DTYPES = {
    **{name: (1, _FLOAT, True) for name in (
        "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
        "float4_e2m1fn_x2")},
    "float8_e8m0fnu": (1, _FLOAT, False),
    "complex32": (4, _COMPLEX, True),
    **{f"int{bits}": (1, _INT, True) for bits in range(1, 8)},
    **{f"uint{bits}": (1, _INT, False) for bits in range(1, 8)},
    "uint16": (2, _INT, False), "uint32": (4, _INT, False), "uint64": (8, _INT, False),
    **{name: (size, _OTHER, None) for name, size in (
        ("bits16", 2), ("bits8", 1), ("bits1x8", 1), ("bits2x4", 1), ("bits4x2", 1),
        ("qint8", 1), ("qint32", 4), ("quint8", 1), ("quint4x2", 1), ("quint2x4", 1))},
}


class QuantizationStackMissing(NotImplementedError, AttributeError):
    """A name of torch's quantization stack that ember lacks: a NotImplementedError that says
    so, and an AttributeError for code that probes names (``hasattr``, and pickle's search
    of every loaded module for a function's home, which torch.compile's cache key runs).

    Example::

        >>> issubclass(QuantizationStackMissing, AttributeError)
        True
    """


def quantization_stack_getattr(torch_path):
    """A module ``__getattr__`` for a namespace of torch's quantization stack (torch.ao): any
    name raises :class:`QuantizationStackMissing` naming the torch API (dunder lookups stay
    plain AttributeError).

    Example::

        >>> __getattr__ = quantization_stack_getattr("torch.nn.qat")
    """
    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise QuantizationStackMissing(
            f"{torch_path}.{name} is part of torch's quantization stack (torch.ao), which "
            "ember does not implement; use the float modules of ember.nn instead")

    return __getattr__


def _unsupported_class(name, instead):
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"torch.{name} is not available in ember: {instead}.")
    doc = f"torch.{name}: a placeholder; making one raises NotImplementedError ({instead})."
    return type(name, (), {"__init__": __init__, "__doc__": doc, "__module__": "ember"})


def _unsupported_function(name, instead):
    def function(*args, **kwargs):
        raise NotImplementedError(f"torch.{name} is not available in ember: {instead}.")
    function.__name__ = function.__qualname__ = name
    function.__module__ = "ember"
    function.__doc__ = f"torch.{name}: raises NotImplementedError ({instead})."
    return function


class UnsupportedDtype(dt.dtype):
    """A torch dtype ember cannot store: it compares, prints and reports ``itemsize``,
    ``is_floating_point``, ``is_complex`` and ``is_signed`` as torch's, and any attempt to
    make a tensor of it raises NotImplementedError.

    Example::

        >>> ember.float8_e4m3fn.itemsize, ember.float8_e4m3fn.is_floating_point
        (1, True)
    """

    __slots__ = ("_signed",)

    def __init__(self, name, itemsize, category, signed):
        self.name, self.itemsize, self.category = name, itemsize, category
        self._signed, self._rank = signed, -1

    @property
    def np(self):
        raise NotImplementedError(
            f"ember has no {self.name} tensors (torch.{self.name} is outside its dtypes); keep "
            f"the data in a supported dtype (bfloat16/float16/float32, int16/int32/int64, "
            f"complex64).")

    @property
    def is_signed(self):
        if self._signed is None:
            raise RuntimeError("Bits types are undefined" if self.name.startswith("bits") else
                               f"is_signed is not defined for the quantized dtype {self.name}")
        return self._signed

    def __reduce__(self):
        return (_dtype_named, (self.name,))


def _dtype_named(name):
    return getattr(sys.modules[__name__], name)


# layouts of tensors ember cannot make: nested (jagged) and block-sparse tensors
jagged = layout("jagged")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")


class AggregationType(enum.Enum):
    """How ``ThroughputBenchmark`` aggregates (torch's ``SUM``/``AVG`` members).

    Example::

        >>> ember.AVG
        <AggregationType.AVG: 1>
    """

    SUM = 0
    AVG = 1


SUM, AVG = AggregationType.SUM, AggregationType.AVG


class FatalError(Exception):
    """torch's error for an unrecoverable C++ failure (ember never raises it).

    Example::

        >>> issubclass(ember.FatalError, Exception)
        True
    """


class AcceleratorError(RuntimeError):
    """torch's error from an accelerator runtime (a CUDA error in torch's build).

    Example::

        >>> issubclass(ember.AcceleratorError, RuntimeError)
        True
    """


def _make_all():
    module = sys.modules[__name__]
    for name, instead in UNSUPPORTED_CLASSES.items():
        setattr(module, name, _unsupported_class(name, instead))
    for name, instead in UNSUPPORTED_FUNCTIONS.items():
        setattr(module, name, _unsupported_function(name, instead))
    for name, (itemsize, category, signed) in UNSUPPORTED_DTYPES.items():
        setattr(module, name, UnsupportedDtype(name, itemsize, category, signed))
    module.chalf = module.complex32
    module.bit = module.uint1
    __all__.extend([*UNSUPPORTED_CLASSES, *UNSUPPORTED_FUNCTIONS, *UNSUPPORTED_DTYPES, "chalf",
                    "bit", "jagged", "sparse_bsr", "sparse_bsc", "AggregationType", "SUM", "AVG",
                    "FatalError", "AcceleratorError"])


_make_all()
