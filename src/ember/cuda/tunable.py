"""``ember.cuda.tunable``: TunableOp, torch's search for the fastest CUDA GEMM kernel.

ember's GEMMs are CuPy's cuBLAS calls, which choose their own kernel, so there is nothing to
tune: with a GPU the switches and settings are kept (and read back) without effect, no result
is ever recorded and no file is written. Without a GPU every function raises, as torch's CPU
build does (it lacks the bindings: AttributeError; here also a RuntimeError).

Example::

    >>> from ember.cuda import tunable
    >>> tunable.is_enabled()          # doctest: +SKIP
    False
"""

from __future__ import annotations

from ._errors import CudaBindingMissingError, require_gpu

__all__ = ["enable", "is_enabled", "tuning_enable", "tuning_is_enabled",
           "record_untuned_enable", "record_untuned_is_enabled", "set_max_tuning_duration",
           "get_max_tuning_duration", "set_max_tuning_iterations", "get_max_tuning_iterations",
           "set_filename", "get_filename", "get_results", "get_validators", "read_file",
           "tune_gemm_in_file", "mgpu_tune_gemm_in_file", "set_rotating_buffer_size",
           "get_rotating_buffer_size", "set_numerical_check_tolerances"]

# torch's defaults for each setting
_settings = {"enabled": False, "tuning": True, "record_untuned": False, "duration_ms": 30,
             "iterations": 100, "filename": "tunableop_results.csv", "rotating_buffer_mb": 0,
             "numerical_check": (False, 1e-5, 1e-5)}


def _state():
    """The settings, once a GPU is known to be there (else torch's CPU-build error)."""
    require_gpu(CudaBindingMissingError)
    return _settings


def enable(val=True):
    """Turn TunableOp on or off (kept; cuBLAS picks its kernels itself)."""
    _state()["enabled"] = bool(val)


def is_enabled():
    """Whether TunableOp is on."""
    return _state()["enabled"]


def tuning_enable(val=True):
    """Allow or forbid tuning GEMM shapes not seen before."""
    _state()["tuning"] = bool(val)


def tuning_is_enabled():
    """Whether new GEMM shapes may be tuned."""
    return _state()["tuning"]


def record_untuned_enable(val=True):
    """Record GEMM shapes that were not tuned (kept; none are recorded)."""
    _state()["record_untuned"] = bool(val)


def record_untuned_is_enabled():
    """Whether untuned GEMM shapes are recorded."""
    return _state()["record_untuned"]


def set_max_tuning_duration(duration):
    """The most milliseconds to spend tuning one GEMM."""
    _state()["duration_ms"] = int(duration)


def get_max_tuning_duration():
    """The most milliseconds to spend tuning one GEMM."""
    return _state()["duration_ms"]


def set_max_tuning_iterations(iterations):
    """The most runs to try when tuning one GEMM."""
    _state()["iterations"] = int(iterations)


def get_max_tuning_iterations():
    """The most runs to try when tuning one GEMM."""
    return _state()["iterations"]


def set_filename(filename, insert_device_ordinal=False):
    """The results file (with the device's ordinal before the extension when asked)."""
    if insert_device_ordinal:
        stem, dot, extension = filename.rpartition(".")
        ordinal = require_gpu().cuda.Device().id
        filename = f"{stem}{ordinal}.{extension}" if dot else f"{filename}{ordinal}"
    _state()["filename"] = filename


def get_filename():
    """The results file's name."""
    return _state()["filename"]


def get_results():
    """The tuned GEMMs (op, shape, kernel, time): none, as nothing is tuned."""
    _state()
    return ()


def get_validators():
    """The settings a results file must match: none recorded."""
    _state()
    return ()


def read_file(filename=None):
    """Load tuning results: there are no kernels to choose between, so nothing is loaded
    (False)."""
    _state()
    return False


def tune_gemm_in_file(filename):
    """Tune the GEMMs listed in ``filename`` (nothing to tune; cuBLAS chooses)."""
    _state()


def mgpu_tune_gemm_in_file(filename_pattern, num_gpus):
    """Tune the GEMMs of the files matching ``filename_pattern`` on ``num_gpus`` GPUs."""
    _state()


def set_rotating_buffer_size(buffer_size):
    """The rotating buffer (MB) used while tuning, to defeat caches."""
    _state()["rotating_buffer_mb"] = int(buffer_size)


def get_rotating_buffer_size():
    """The rotating buffer size in MB."""
    return _state()["rotating_buffer_mb"]


def set_numerical_check_tolerances(enable, atol=1e-5, rtol=1e-5):
    """Compare each candidate kernel's result with the default one's, within these
    tolerances."""
    _state()["numerical_check"] = (bool(enable), float(atol), float(rtol))
