"""Report the environment ember runs in, for bug reports: ``python -m ember.utils.collect_env``.

Prints the versions of ember, Python, NumPy, SciPy and CuPy, the BLAS library NumPy calls (and
its thread count, from threadpoolctl), and the GPUs that can be seen.

Example::

    >>> from ember.utils.collect_env import get_pretty_env_info
    >>> print(get_pretty_env_info())
    ember version: 0.1.0
    ...
"""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys

__all__ = ["get_env_info", "get_pretty_env_info", "main"]

NOT_INSTALLED = "not installed"


def _version(module_name):
    try:
        module = __import__(module_name)
    except Exception:  # absent, or broken in a way worth reporting as absent
        return NOT_INSTALLED
    return getattr(module, "__version__", "unknown")


def _blas_info():
    """One line per BLAS/OpenMP library loaded (threadpoolctl's view), after importing NumPy."""
    import numpy  # noqa: F401  (loads NumPy's BLAS so threadpoolctl can see it)

    try:
        import scipy.linalg  # noqa: F401  (and SciPy's, which some kernels call)
    except ImportError:
        pass

    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return ["threadpoolctl not installed: cannot tell"]
    lines = []
    for info in threadpool_info():
        name = info.get("internal_api", info.get("prefix", "?"))
        version = info.get("version") or "unknown version"
        extra = f", {info['architecture']}" if info.get("architecture") else ""
        lines.append(f"{info.get('user_api', '?')}: {name} {version}{extra}, "
                     f"{info.get('num_threads', '?')} threads ({info.get('filepath', '?')})")
    return lines or ["none found"]


def _gpus():
    """The GPUs seen: through CuPy when it is installed, else through nvidia-smi if present."""
    try:
        import cupy
    except Exception:
        cupy = None
    if cupy is not None:
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as error:  # CuPy present but no driver or no device
            return [f"none (CuPy cannot reach a GPU: {type(error).__name__}: {error})"]
        names = []
        for i in range(count):
            props = cupy.cuda.runtime.getDeviceProperties(i)
            name = props.get("name", b"?")
            name = name.decode() if isinstance(name, bytes) else str(name)
            names.append(f"cuda:{i}: {name}, {props.get('totalGlobalMem', 0) / 2**30:.1f} GiB")
        return names or ["none"]
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return ["none (CuPy not installed, no nvidia-smi)"]
    try:
        listing = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=10)
    except Exception as error:
        return [f"unknown (nvidia-smi failed: {error})"]
    gpus = [line.strip() for line in listing.stdout.splitlines() if line.strip()]
    if not gpus:
        return ["none"]
    return [f"{g} (seen by nvidia-smi; ember needs CuPy to use it)" for g in gpus]


def get_env_info():
    """The environment as a dict of name -> value (lists for BLAS libraries and GPUs)."""
    import ember

    try:
        threads = ember.get_num_threads()
    except Exception:
        threads = "unknown"
    return {
        "ember version": getattr(ember, "__version__", "unknown"),
        "Python version": sys.version.replace("\n", " "),
        "Python platform": platform.platform(),
        "NumPy version": _version("numpy"),
        "SciPy version": _version("scipy"),
        "CuPy version": _version("cupy"),
        "ml_dtypes version": _version("ml_dtypes"),
        "BLAS": _blas_info(),
        "ember intra-op threads": threads,
        "CUDA available to ember": ember.cuda.is_available(),
        "GPUs": _gpus(),
    }


def get_pretty_env_info():
    """The environment as the text :func:`main` prints."""
    lines = []
    for key, value in get_env_info().items():
        if isinstance(value, list):
            lines.append(f"{key}:")
            lines += [f"    {item}" for item in value]
        else:
            lines.append(f"{key}: {value}")
    return "\n".join(lines)


def main():
    print("Collecting environment information...")
    print(get_pretty_env_info())


if __name__ == "__main__":
    main()
