"""torch's global switches: float32 matmul precision, deterministic algorithms, the default
device and the legacy default tensor type, warn-always, anomaly detection, flush-denormal, and
the deprecated per-device autocast dtype setters. Most are kept and reported only (see each
docstring): ember's kernels do not change with them.

Example::

    >>> ember.set_float32_matmul_precision("high")
    >>> ember.get_float32_matmul_precision()
    'high'
    >>> ember.set_float32_matmul_precision("highest")
"""

from __future__ import annotations

import builtins
import warnings

from . import _dtype as dt

__all__ = ["set_float32_matmul_precision", "get_float32_matmul_precision",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_default_device",
           "get_default_device", "set_warn_always", "is_warn_always_enabled",
           "set_anomaly_enabled", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "set_flush_denormal", "set_default_tensor_type", "get_autocast_cpu_dtype",
           "get_autocast_gpu_dtype", "set_autocast_cpu_dtype", "set_autocast_gpu_dtype"]

_matmul_precision = ["highest"]
_deterministic = [False, False]  # mode, warn_only


def set_float32_matmul_precision(precision):
    """Set the internal precision of float32 matrix products: ``'highest'`` (default),
    ``'high'`` or ``'medium'`` (TF32/bfloat16 passes on GPUs that have them).

    Kept and reported (also as ``ember.backends.cuda.matmul.allow_tf32``), with no effect on
    ember's kernels: NumPy's BLAS is always full float32, and CuPy's cuBLAS follows its own
    ``CUPY_TF32`` setting. An unknown name warns and changes nothing, as torch.

    Example::

        >>> ember.set_float32_matmul_precision("high")
    """
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got "
                           f"{type(precision).__name__}")
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning,
                      stacklevel=2)
        return
    _matmul_precision[0] = precision
    # torch also sets the matmul fp32 precision of its backends from it
    from .backends import _set_fp32_precision

    cuda, mkldnn = {"highest": ("ieee", "ieee"), "high": ("tf32", "tf32"),
                    "medium": ("tf32", "bf16")}[precision]
    _set_fp32_precision("cuda", "matmul", cuda)
    _set_fp32_precision("mkldnn", "matmul", mkldnn)


def get_float32_matmul_precision():
    """The float32 matmul precision set by :func:`set_float32_matmul_precision`.

    Example::

        >>> ember.get_float32_matmul_precision()
        'highest'
    """
    return _matmul_precision[0]


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Ask for deterministic algorithms (``mode``: a bool), as torch. ember's kernels are
    deterministic already (NumPy on the CPU; on the GPU CuPy's scatter-adds use atomics,
    which this flag does not change), so the flag is kept and reported only.

    Example::

        >>> ember.use_deterministic_algorithms(True)
        >>> ember.are_deterministic_algorithms_enabled()
        True
    """
    if type(mode) is not bool:
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must be "
                        f"bool, not {type(mode).__name__}")
    if type(warn_only) is not bool:
        raise TypeError(f"_set_deterministic_algorithms(): argument 'warn_only' must be bool, "
                        f"not {type(warn_only).__name__}")
    _deterministic[:] = [mode, warn_only]


def are_deterministic_algorithms_enabled():
    """Whether :func:`use_deterministic_algorithms` was turned on."""
    return _deterministic[0]


def is_deterministic_algorithms_warn_only_enabled():
    """Whether deterministic mode only warns (``warn_only=True``)."""
    return _deterministic[1]


def set_default_device(device):
    """Make factories (``zeros``, ``randn``, ``tensor``, ...) create tensors on ``device``
    when they are given none (``None`` resets to the CPU).

    Example::

        >>> ember.set_default_device("meta")
        >>> ember.zeros(2).device
        device(type='meta')
        >>> ember.set_default_device(None)
    """
    from . import _device

    _device.DEFAULT[0] = _device.CPU if device is None else _device.canonical(device)


def get_default_device():
    """The device factories use when given none (see :func:`set_default_device`).

    Example::

        >>> ember.get_default_device()
        device(type='cpu')
    """
    from . import _device

    return _device.DEFAULT[0]


_warn_always = [False]


def set_warn_always(b):
    """Make warnings that torch gives once per process (``TORCH_WARN_ONCE``) show every time.

    ember's warnings go through Python's ``warnings`` module, whose filters decide how often
    they show; the flag is kept and reported.

    Example::

        >>> ember.set_warn_always(True)
        >>> ember.is_warn_always_enabled()
        True
    """
    if type(b) is not bool:
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    _warn_always[0] = b


def is_warn_always_enabled():
    """Whether :func:`set_warn_always` is on.

    Example::

        >>> ember.is_warn_always_enabled()
        False
    """
    return _warn_always[0]


def set_anomaly_enabled(enabled, check_nan=True):
    """Turn anomaly detection (see ``ember.autograd.detect_anomaly``) on or off for this
    thread, without a context.

    Example::

        >>> ember.set_anomaly_enabled(True); ember.is_anomaly_enabled()
        True
        >>> ember.set_anomaly_enabled(False)
    """
    from .autograd import anomaly_mode

    anomaly_mode.state.enabled = builtins.bool(enabled)
    anomaly_mode.state.check_nan = builtins.bool(check_nan)


def is_anomaly_enabled():
    """Whether anomaly detection is on.

    Example::

        >>> ember.is_anomaly_enabled()
        False
    """
    from .autograd import anomaly_mode

    return anomaly_mode.state.enabled


def is_anomaly_check_nan_enabled():
    """Whether anomaly detection checks gradients for NaN.

    Example::

        >>> ember.is_anomaly_check_nan_enabled()
        True
    """
    from .autograd import anomaly_mode

    return anomaly_mode.state.check_nan


def set_flush_denormal(mode):
    """Ask the CPU to flush denormal floats to zero. NumPy offers no such switch, so ember
    leaves the FPU as it is and returns False ("not supported"), as torch does on CPUs
    without the feature.

    Example::

        >>> ember.set_flush_denormal(True)
        False
    """
    if type(mode) is not bool:
        raise RuntimeError(f"flush_denormal expects a bool, but got {type(mode).__name__}")
    return False


def set_default_tensor_type(t):
    """Make tensors default to the floating dtype of the legacy type ``t``
    (``ember.DoubleTensor`` or its name ``'torch.DoubleTensor'``); deprecated as in torch:
    use :func:`ember.set_default_dtype`.

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> ember.set_default_tensor_type(ember.DoubleTensor); ember.tensor([1.]).dtype
        ember.float64
        >>> ember.set_default_tensor_type(ember.FloatTensor)
    """
    from . import _tensor

    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    if isinstance(t, str):
        name = t.split(".")[-1]
        if name not in vars(_tensor) or not isinstance(vars(_tensor)[name],
                                                       _tensor._LegacyTensorType):
            raise AttributeError(f"module 'torch' has no attribute '{name}'")
        t = vars(_tensor)[name]
    if not isinstance(t, _tensor._LegacyTensorType):
        raise TypeError("invalid type object: only floating-point types are supported as the "
                        "default type")
    if not t.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    dt.set_default_dtype(t.dtype)


def _warn_autocast_renamed(old, new):
    warnings.warn(f"torch.{old}() is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def get_autocast_cpu_dtype():
    """Deprecated: ``get_autocast_dtype('cpu')``.

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> ember.get_autocast_cpu_dtype()
        ember.bfloat16
    """
    from .amp import autocast_mode

    _warn_autocast_renamed("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return autocast_mode.get_autocast_dtype("cpu")


def get_autocast_gpu_dtype():
    """Deprecated: ``get_autocast_dtype('cuda')``.

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> ember.get_autocast_gpu_dtype()
        ember.float16
    """
    from .amp import autocast_mode

    _warn_autocast_renamed("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return autocast_mode.get_autocast_dtype("cuda")


def set_autocast_cpu_dtype(dtype):
    """Deprecated: ``set_autocast_dtype('cpu', dtype)``.

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> ember.set_autocast_cpu_dtype(ember.bfloat16)
    """
    from .amp import autocast_mode

    _warn_autocast_renamed("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    autocast_mode.set_autocast_dtype("cpu", dtype)


def set_autocast_gpu_dtype(dtype):
    """Deprecated: ``set_autocast_dtype('cuda', dtype)``.

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> ember.set_autocast_gpu_dtype(ember.float16)
    """
    from .amp import autocast_mode

    _warn_autocast_renamed("set_autocast_gpu_dtype", "set_autocast_dtype('cuda', dtype)")
    autocast_mode.set_autocast_dtype("cuda", dtype)
