"""``torch._C``: the handful of its private switches that real programs call.

torch's ``_C`` is its C++ extension; programs reach into it mostly to flip TorchScript's fuser
and profiling switches before benchmarking or exporting. Here each switch keeps its value and
returns what torch returns (the previous value where torch does), so such programs run; ember's
own compiler does not consult them.

Example::

    >>> import ember
    >>> previous = ember._C._jit_set_profiling_mode(False)
    >>> _ = ember._C._jit_set_profiling_mode(previous)
"""

from __future__ import annotations

_switches = {"profiling_mode": True, "profiling_executor": True, "texpr_fuser": True,
             "fuse_on_cpu": False, "fuse_on_gpu": False, "nvfuser": False}


def _swap(name, value):
    previous, _switches[name] = _switches[name], bool(value)
    return previous


def _jit_set_profiling_mode(enabled):
    """Set TorchScript's profiling mode; returns the previous setting, as torch."""
    return _swap("profiling_mode", enabled)


def _jit_set_profiling_executor(enabled):
    """Set TorchScript's profiling executor; returns the previous setting, as torch."""
    return _swap("profiling_executor", enabled)


def _jit_set_texpr_fuser_enabled(enabled):
    """Switch TorchScript's tensor-expression fuser (recorded only)."""
    _swap("texpr_fuser", enabled)


def _jit_texpr_fuser_enabled():
    """Whether the tensor-expression fuser switch is on."""
    return _switches["texpr_fuser"]


def _jit_override_can_fuse_on_cpu(enabled):
    """Allow TorchScript's legacy fuser on the CPU (recorded only)."""
    _swap("fuse_on_cpu", enabled)


def _jit_override_can_fuse_on_gpu(enabled):
    """Allow TorchScript's legacy fuser on the GPU (recorded only)."""
    _swap("fuse_on_gpu", enabled)


def _jit_can_fuse_on_cpu():
    """Whether the legacy CPU fuser switch is on."""
    return _switches["fuse_on_cpu"]


def _jit_can_fuse_on_gpu():
    """Whether the legacy GPU fuser switch is on."""
    return _switches["fuse_on_gpu"]


def _jit_set_nvfuser_enabled(enabled):
    """nvFuser's switch: deprecated and a no-op in torch, as here."""
    _swap("nvfuser", enabled)


def _jit_set_nvfuser_guard_mode(enabled):
    """nvFuser's guard mode: a no-op in torch, as here."""


def _get_tracing_state():
    """None outside ``torch.jit.trace``, as torch (ember's tracer keeps its own state)."""
    return None


def _get_privateuse1_backend_name():
    """The name of the out-of-tree device slot: torch's default, ``privateuseone``."""
    return "privateuseone"


def _log_api_usage_once(event):
    """torch's API-usage telemetry hook: a no-op."""


# the __torch_function__ switches and helpers (ember.overrides), under their torch._C names
from .overrides import (  # noqa: E402, F401
    DisableTorchFunction,
    DisableTorchFunctionSubclass,
    _disabled_torch_function_impl,
    _is_torch_function_enabled,
    _is_torch_function_mode_enabled,
)
from .overrides import has_torch_function as _has_torch_function  # noqa: E402, F401
from .overrides import has_torch_function_unary as _has_torch_function_unary  # noqa: E402, F401
from .overrides import (  # noqa: E402, F401
    has_torch_function_variadic as _has_torch_function_variadic,
)
