"""The setuptools side of ``ember.utils.cpp_extension``: :func:`CppExtension` and
:class:`BuildExtension` build an extension in a package's ``setup.py``, as torch's do, and the
compiler checks torch offers next to them.

An extension built this way behaves as one from :func:`~ember.utils.cpp_extension.load`: its
functions take and return ember tensors. For that, ``BuildExtension`` writes the compiled
library under a name Python does not import (``<name>.ember-native<suffix>``) and, next to it,
a small module ``<name>.py`` that loads the library and wraps its functions.

Example (``setup.py``)::

    from setuptools import setup
    from ember.utils.cpp_extension import BuildExtension, CppExtension

    setup(name="my_ext", ext_modules=[CppExtension("my_ext", ["my_ext.cpp"])],
          cmdclass={"build_ext": BuildExtension})
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig

__all__ = ["BuildExtension", "CppExtension", "CUDAExtension", "SyclExtension",  # noqa: F822
           "check_compiler_is_gcc", "check_compiler_ok_for_platform",
           "get_compiler_abi_compatibility_and_version", "get_cxx_compiler", "library_paths",
           "remove_extension_h_precompiler_headers"]

_NATIVE_TAG = ".ember-native"
_MINIMUM_GCC = (5, 0, 0)
_SHIM = '''"""ember C++ extension {name} (written by ember.utils.cpp_extension.BuildExtension):
loads the compiled library {native!r} and wraps its functions for ember tensors."""

from ember.utils.cpp_extension import _import_built

_import_built(__name__, __file__, {native!r})
'''


def _compile_args(extra_compile_args):
    """The C++ flags of an extension: torch accepts a list or ``{"cxx": [...], "nvcc": [...]}``;
    ember compiles only the ``cxx`` part, with C++17 unless a standard is given."""
    if isinstance(extra_compile_args, dict):
        extra_compile_args = extra_compile_args.get("cxx", [])
    flags = list(extra_compile_args or [])
    if not any(flag.startswith("-std=") for flag in flags):
        flags.append("-std=c++17")
    return flags


def CppExtension(name, sources, *args, **kwargs):
    """A ``setuptools.Extension`` for C++ code using ``<ember/extension.h>`` (or pybind11):
    ember's, pybind11's and Python's include folders added, C++17.

    Example::

        >>> ext = CppExtension("my_ext", ["my_ext.cpp"])
        >>> ext.language
        'c++'
    """
    import setuptools

    from .cpp_extension import include_paths

    kwargs["include_dirs"] = list(kwargs.get("include_dirs", [])) + include_paths()
    kwargs["extra_compile_args"] = _compile_args(kwargs.get("extra_compile_args"))
    kwargs["language"] = "c++"
    return setuptools.Extension(name, sources, *args, **kwargs)


_GPU_BUILD = ("ember.utils.cpp_extension.{name}: ember C++ extensions run on the CPU; {what} "
              "sources are not compiled. Write GPU kernels with cupy.RawKernel / "
              "cupy.RawModule, and CPU code with CppExtension.")


def CUDAExtension(name, sources, *args, **kwargs):
    """torch's CUDA extension: not built by ember (``RuntimeError`` naming the alternative).

    Example::

        >>> CUDAExtension("ext", ["ext.cu"])                       # doctest: +SKIP
        Traceback (most recent call last):
        RuntimeError: ...
    """
    raise RuntimeError(_GPU_BUILD.format(name="CUDAExtension", what="CUDA"))


def SyclExtension(name, sources, *args, **kwargs):
    """torch's SYCL (Intel GPU) extension: not built by ember (``RuntimeError``).

    Example::

        >>> SyclExtension("ext", ["ext.sycl"])                     # doctest: +SKIP
        Traceback (most recent call last):
        RuntimeError: ...
    """
    raise RuntimeError(_GPU_BUILD.format(name="SyclExtension", what="SYCL"))


def _build_ext_class():
    from setuptools.command.build_ext import build_ext

    class BuildExtension(build_ext):
        """setuptools' ``build_ext`` for ember extensions: defines ``EMBER_EXTENSION_NAME``
        (and ``TORCH_EXTENSION_NAME``) as each module's name, and makes the built module take
        and return ember tensors (see the module docstring). ``use_ninja`` and
        ``no_python_abi_suffix`` are accepted as torch's options.

        Example::

            setup(..., cmdclass={"build_ext": BuildExtension})
        """

        @classmethod
        def with_options(cls, **options):
            """This class with constructor options bound, as torch's."""

            class Bound(cls):
                def __init__(self, *args, **kwargs):
                    super().__init__(*args, **{**options, **kwargs})

            return Bound

        def __init__(self, *args, **kwargs):
            self.no_python_abi_suffix = kwargs.pop("no_python_abi_suffix", False)
            self.use_ninja = kwargs.pop("use_ninja", False)
            super().__init__(*args, **kwargs)

        def build_extensions(self):
            for extension in self.extensions:
                module = extension.name.split(".")[-1]
                extension.define_macros = list(extension.define_macros or []) + [
                    ("EMBER_EXTENSION_NAME", module)]
                if sys.platform != "win32":
                    extension.extra_compile_args = list(extension.extra_compile_args or []) \
                        + ["-fvisibility=hidden"]
            super().build_extensions()

        def get_ext_filename(self, fullname):
            # the library under a name Python does not import; the shim module imports it
            filename = super().get_ext_filename(fullname)
            suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
            if self.no_python_abi_suffix and filename.endswith(suffix):
                suffix = os.path.splitext(filename)[1]
            stem = filename[:-len(suffix)]
            return stem + _NATIVE_TAG + suffix

        def run(self):
            super().run()
            for extension in self.extensions:
                self._write_shims(extension)

        def _write_shims(self, extension):
            native = os.path.basename(self.get_ext_filename(extension.name))
            module = extension.name.split(".")[-1]
            folders = {os.path.dirname(os.path.join(self.build_lib,
                                                    self.get_ext_filename(extension.name)))}
            if self.inplace:
                folders.add(os.path.dirname(self.get_ext_fullpath(extension.name)))
            for folder in folders:
                os.makedirs(folder, exist_ok=True)
                with open(os.path.join(folder, module + ".py"), "w", encoding="utf-8") as fh:
                    fh.write(_SHIM.format(name=extension.name, native=native))

    return BuildExtension


def __getattr__(name):
    # setuptools is imported only when a build asks for BuildExtension
    if name == "BuildExtension":
        cls = _build_ext_class()
        globals()["BuildExtension"] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------- compilers


def get_cxx_compiler():
    """The C++ compiler builds use: ``$CXX``, else ``c++``.

    Example::

        >>> get_cxx_compiler()
        'c++'
    """
    return os.environ.get("CXX") or "c++"


def _version_text(compiler):
    """What ``compiler -v`` prints (gcc and clang print to stderr), in the C locale."""
    env = dict(os.environ, LC_ALL="C")
    for flag in ("-v", "--version"):
        try:
            return subprocess.run([compiler, flag], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, env=env, check=True).stdout.decode(
                errors="replace")
        except (subprocess.CalledProcessError, OSError):
            continue
    return ""


def check_compiler_is_gcc(compiler):
    """Whether ``compiler`` is GCC (on Linux; False elsewhere).

    Example::

        >>> check_compiler_is_gcc("g++")
        True
    """
    if not sys.platform.startswith("linux"):
        return False
    text = _version_text(compiler)
    driver = re.findall(r"^COLLECT_GCC=(.*)$", text, re.MULTILINE)
    return bool(driver) and "gcc version" in text


def check_compiler_ok_for_platform(compiler):
    """Whether ``compiler`` is the platform's expected one: GCC or clang on Linux, Apple
    clang on macOS, anything on Windows.

    Example::

        >>> check_compiler_ok_for_platform("c++")
        True
    """
    if sys.platform == "win32":
        return True
    path = shutil.which(compiler)
    if path is None:
        return False
    resolved = os.path.basename(os.path.realpath(path))
    if sys.platform.startswith("linux") and re.search(r"(g\+\+|gcc|clang)", resolved):
        return True
    text = _version_text(compiler)
    if sys.platform == "darwin":
        return text.startswith("Apple clang")
    return "gcc version" in text or "clang version" in text


def get_compiler_abi_compatibility_and_version(compiler):
    """``(ok, version)``: whether ``compiler`` can build extensions (the platform's compiler,
    GCC 5 or newer on Linux) and its version as ``"major.minor.patch"``.

    Example::

        >>> get_compiler_abi_compatibility_and_version("g++")
        (True, '12.2.0')
    """
    if os.environ.get("TORCH_DONT_CHECK_COMPILER_ABI", "").upper() in ("ON", "1", "YES",
                                                                       "TRUE", "Y"):
        return True, "0.0.0"
    if not check_compiler_ok_for_platform(compiler):
        return False, "0.0.0"
    if sys.platform == "darwin":
        return True, "0.0.0"
    try:
        output = subprocess.run([compiler, "-dumpfullversion", "-dumpversion"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                check=True).stdout.decode(errors="replace")
    except (subprocess.CalledProcessError, OSError):
        return False, "0.0.0"
    found = re.search(r"(\d+)\.(\d+)\.(\d+)", output)
    numbers = [re.sub(r"\D", "", part) for part in found.groups()] if found else ["0"] * 3
    version = ".".join(numbers)
    return tuple(int(n) for n in numbers) >= _MINIMUM_GCC, version


def library_paths(device_type="cpu", torch_include_dirs=True, cross_target_platform=None):
    """The library folders an extension links against: none (ember extensions need no
    library of ember's; torch lists its own ``lib`` folder here).

    Example::

        >>> library_paths()
        []
    """
    if device_type not in ("cpu", None, False):
        raise RuntimeError(_GPU_BUILD.format(name="library_paths", what=str(device_type)))
    return []


def remove_extension_h_precompiler_headers():
    """Remove the precompiled headers of ``load_inline(use_pch=True)``: ember makes none, so
    there is nothing to remove.

    Example::

        >>> remove_extension_h_precompiler_headers()
    """
