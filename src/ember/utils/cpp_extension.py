"""C/C++ extensions compiled at run time (``ember.utils.cpp_extension``), as torch's.

:func:`load_inline` compiles C++ source strings and :func:`load` compiles source files into a
Python extension module with pybind11, caches the build, and returns the imported module. The
sources see ``#include <ember/extension.h>`` (prepended by :func:`load_inline`), which offers
``ember::Tensor``: a strided view of an ember CPU tensor with typed data pointers, sizes,
strides, dtype checks and allocation helpers. Every function of the module is wrapped in Python
so that ember CPU tensors go in as NumPy arrays sharing their memory and arrays come back as
ember tensors (through tuples and lists too): a C++ function can be written as
``ember::Tensor add_one(ember::Tensor x)`` or with ``py::array_t<float>``.

The build runs the system C++ compiler (``$CXX``, else ``c++``) once, directly:
``-O3 -shared -fPIC -std=c++17`` with the pybind11, Python and ember include paths. It goes
into ``build_directory``, else ``$EMBER_EXTENSIONS_DIR/<name>``, else
``~/.cache/ember_extensions/<name>``. The library's file name carries a hash of the sources, the
flags, the compiler, the Python ABI and ember's header, so a changed source builds a new library
(loadable in the same process) and an unchanged one is loaded from the cache without compiling.
Builds hold a file lock (two processes building the same extension compile it once) and write a
temporary file renamed into place (a reader never sees half a library). Only CPU tensors are
accepted: CUDA sources (``cuda_sources``, ``.cu`` files) are not compiled; write GPU kernels with
CuPy's ``RawKernel``/``RawModule`` instead.

Example::

    >>> from ember.utils.cpp_extension import load_inline
    >>> src = '''
    ... ember::Tensor add_one(ember::Tensor x) {
    ...   auto y = ember::empty_like(x);
    ...   const float* a = x.contiguous().data_ptr<float>();
    ...   float* b = y.data_ptr<float>();
    ...   for (int64_t i = 0; i < x.numel(); ++i) b[i] = a[i] + 1;
    ...   return y;
    ... }'''
    >>> ext = load_inline("add_one_ext", src, functions={"add_one": "x + 1"})
    >>> ext.add_one(ember.ones(3))
    tensor([2., 2., 2.])
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading

import numpy as np

from .._device import CPU
from .._tensor import Tensor
from ._cpp_setuptools import (  # the setup.py side
    CppExtension,
    CUDAExtension,
    SyclExtension,
    check_compiler_is_gcc,
    check_compiler_ok_for_platform,
    get_compiler_abi_compatibility_and_version,
    get_cxx_compiler,
    library_paths,
    remove_extension_h_precompiler_headers,
)

__all__ = ["load", "load_inline", "include_paths", "get_default_build_root",
           "get_compiler", "verify_ninja_availability", "is_ninja_available",
           "BuildExtension", "CppExtension", "CUDAExtension", "SyclExtension",  # noqa: F822
           "check_compiler_is_gcc", "check_compiler_ok_for_platform",
           "get_compiler_abi_compatibility_and_version", "get_cxx_compiler", "library_paths",
           "remove_extension_h_precompiler_headers"]

_HEADER_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "include")
_EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
_BASE_FLAGS = ["-O3", "-shared", "-fPIC", "-std=c++17", "-fvisibility=hidden"]
_loaded = {}                       # library path -> module, for this process
_import_lock = threading.Lock()    # one import of a library at a time in this process
_versions = {}                     # name -> digests of the libraries built for it, in order


def get_default_build_root():
    """The folder under which extensions are built: ``$EMBER_EXTENSIONS_DIR``, else
    ``~/.cache/ember_extensions``.

    Example::

        >>> get_default_build_root()
        '/home/me/.cache/ember_extensions'
    """
    root = os.environ.get("EMBER_EXTENSIONS_DIR")
    if root:
        return os.path.abspath(os.path.expanduser(root))
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "ember_extensions")


def get_compiler():
    """The C++ compiler that builds extensions: ``$CXX``, else ``c++``.

    Example::

        >>> get_compiler()
        'c++'
    """
    return os.environ.get("CXX") or "c++"


def is_ninja_available():
    """False: ember compiles with one compiler call and needs no ninja (kept for torch's API).

    Example::

        >>> is_ninja_available()
        False
    """
    return False


def verify_ninja_availability():
    """Nothing to check: ember's builds do not use ninja (kept for torch's API).

    Example::

        >>> verify_ninja_availability()
    """


def include_paths(device_type="cpu", torch_include_dirs=True):
    """The include folders an extension is compiled with: ember's header, pybind11's, Python's.
    ``device_type`` is torch's (``"cpu"``; older torch passed ``cuda=False``): GPU builds are
    not supported.

    Example::

        >>> include_paths()[0].endswith("include")
        True
    """
    if device_type not in ("cpu", False, None):
        raise RuntimeError("ember C++ extensions run on the CPU: CUDA builds are not supported "
                           "(write GPU kernels with cupy.RawKernel / cupy.RawModule)")
    try:
        import pybind11
    except ImportError as e:
        raise RuntimeError("ember C++ extensions need pybind11: pip install pybind11 "
                           "(or pip install 'ember[ext]')") from e
    paths = [_HEADER_DIR, pybind11.get_include()]
    for key in ("include", "platinclude"):
        path = sysconfig.get_paths().get(key)
        if path and path not in paths:
            paths.append(path)
    return paths


# ---------------------------------------------------------------------------------------------
# the Python side of a bound function: ember tensors in as arrays, arrays out as ember tensors

def _to_arrays(obj, fname, seen):
    if isinstance(obj, Tensor):
        if obj._device is not CPU:
            raise RuntimeError(f"{fname}(): ember C++ extensions take CPU tensors, but got a "
                               f"tensor on device '{obj._device}'. Move it with .cpu() first "
                               "(GPU kernels can be written with cupy.RawKernel).")
        array = obj._data
        seen[id(array)] = obj
        return array
    if type(obj) is tuple or type(obj) is list:
        return type(obj)(_to_arrays(o, fname, seen) for o in obj)
    return obj


def _to_tensors(obj, seen):
    if isinstance(obj, np.ndarray):
        tensor = seen.get(id(obj))
        if tensor is not None:          # the function handed back an input: the same tensor
            return tensor
        if any(s < 0 for s in obj.strides):
            obj = obj.copy()
        return Tensor._make(obj, CPU)
    if type(obj) is tuple or type(obj) is list:
        return type(obj)(_to_tensors(o, seen) for o in obj)
    return obj


def __getattr__(name):
    if name == "BuildExtension":  # made on first use: it imports setuptools
        from . import _cpp_setuptools

        return _cpp_setuptools.BuildExtension
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _import_built(name, shim_file, native):
    """Load the library a ``BuildExtension`` build wrote next to its shim module ``name`` and
    make the wrapped module ``sys.modules[name]``."""
    path = os.path.join(os.path.dirname(os.path.abspath(shim_file)), native)
    with _import_lock:
        module = _loaded.get(path)
        if module is None:
            loader = importlib.machinery.ExtensionFileLoader(name, path)
            spec = importlib.util.spec_from_file_location(name, path, loader=loader)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            _loaded[path] = _wrap_module(module)
    sys.modules[name] = module
    return module


def _wrap_function(fn, module_name):
    name = getattr(fn, "__name__", "function")

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        seen = {}
        args = _to_arrays(args, name, seen)
        if kwargs:
            kwargs = {k: _to_arrays(v, name, seen) for k, v in kwargs.items()}
        return _to_tensors(fn(*args, **kwargs), seen)

    wrapper.__module__ = module_name
    return wrapper


def _wrap_module(module):
    for key, value in list(vars(module).items()):
        if (not key.startswith("_") and type(value).__name__ == "builtin_function_or_method"
                and not hasattr(value, "__wrapped__")):
            setattr(module, key, _wrap_function(value, module.__name__))
    return module


# ---------------------------------------------------------------------------------------------
# building

def _bindings(functions):
    """The PYBIND11_MODULE block binding ``functions`` (a name, a list, or name -> docstring)."""
    if isinstance(functions, str):
        functions = [functions]
    if isinstance(functions, list):
        functions = {f: f for f in functions}
    elif not isinstance(functions, dict):
        raise ValueError(f"Expected 'functions' to be a list or dict, but was {type(functions)}")
    lines = ["", "PYBIND11_MODULE(EMBER_EXTENSION_NAME, m) {"]
    for fname, doc in functions.items():
        if not isinstance(fname, str) or not fname.isidentifier():
            raise ValueError(f"function name {fname!r} is not a C++ identifier")
        lines.append(f'  m.def("{fname}", {fname}, R"ember_doc({doc})ember_doc");')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _check_name(name):
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"extension name {name!r} must be a valid Python identifier")


def _as_list(value):
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _header_digest():
    h = hashlib.sha256()
    for root, _, files in sorted(os.walk(_HEADER_DIR)):
        for f in sorted(files):
            with open(os.path.join(root, f), "rb") as fh:
                h.update(f.encode() + b"\0" + fh.read())
    return h.hexdigest()


@contextlib.contextmanager
def _file_lock(path):
    with open(path, "a+b") as fh:
        try:
            import fcntl
        except ImportError:     # no POSIX locks (Windows): builds are then not serialised
            yield
            return
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _write_if_changed(path, text):
    old = None
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            old = fh.read()
    if old != text:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)


def _compile(name, module_name, sources, build_directory, cflags, ldflags, includes, verbose,
             target):
    compiler = get_compiler()
    if shutil.which(compiler) is None:
        raise RuntimeError(f"Error building extension '{name}': C++ compiler '{compiler}' not "
                           "found (install g++ or clang++, or set $CXX)")
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".so.tmp", dir=build_directory)
    os.close(fd)
    cmd = [compiler, *sources, *_BASE_FLAGS, *[f"-I{p}" for p in includes],
           f"-DEMBER_EXTENSION_NAME={module_name}", *cflags, "-o", tmp, *ldflags]
    if sys.platform == "darwin":
        cmd += ["-undefined", "dynamic_lookup"]
    if verbose:
        print(f"Building extension module {name}...", file=sys.stderr)
        print(" ".join(cmd), file=sys.stderr)
    try:
        proc = subprocess.run(cmd, cwd=build_directory, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
        output = proc.stdout.decode(errors="replace")
        if verbose and output:
            print(output, file=sys.stderr)
        if proc.returncode != 0:
            raise RuntimeError(f"Error building extension '{name}': {output}")
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _import(name, module_name, path):
    with _import_lock:
        module = _loaded.get(path)
        if module is None:
            loader = importlib.machinery.ExtensionFileLoader(module_name, path)
            spec = importlib.util.spec_from_file_location(module_name, path, loader=loader)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            _wrap_module(module)
            _loaded[path] = module
        sys.modules[name] = sys.modules[module_name] = module
        return module


def _jit_compile(name, sources, extra_cflags, extra_ldflags, extra_include_paths,
                 build_directory, verbose, with_cuda, is_python_module, write_sources=None):
    _check_name(name)
    if with_cuda or any(os.path.splitext(s)[1] in (".cu", ".cuh") for s in sources):
        raise RuntimeError(f"Error building extension '{name}': ember C++ extensions run on the "
                           "CPU; CUDA sources are not supported (write GPU kernels with "
                           "cupy.RawKernel / cupy.RawModule)")
    cflags, ldflags = _as_list(extra_cflags), _as_list(extra_ldflags)
    includes = [os.path.abspath(p) for p in _as_list(extra_include_paths)] + include_paths()
    if build_directory is None:
        build_directory = os.path.join(get_default_build_root(), name)
        if verbose:
            print(f"Using {get_default_build_root()} as ember extensions root...",
                  file=sys.stderr)
    build_directory = os.path.abspath(build_directory)
    os.makedirs(build_directory, exist_ok=True)
    sources = [os.path.abspath(s) for s in sources]

    digest = hashlib.sha256()
    for part in (name, get_compiler(), _EXT_SUFFIX, sys.version, _header_digest(),
                 *_BASE_FLAGS, *cflags, "|", *ldflags, "|", *includes):
        digest.update(part.encode() + b"\0")
    for path in sources:
        if write_sources is not None and path in write_sources:
            data = write_sources[path].encode()
        else:
            try:
                with open(path, "rb") as fh:
                    data = fh.read()
            except OSError as e:
                raise RuntimeError(f"Error building extension '{name}': cannot read source "
                                   f"'{path}': {e}") from e
        digest.update(os.path.basename(path).encode() + b"\0" + data)
    # pybind11 (>= 3) keeps one module per name for the life of the interpreter, so a library
    # rebuilt in this process gets a new module name, as torch does: name, name_v1, name_v2...
    with _import_lock:
        versions = _versions.setdefault(name, [])
        if digest.hexdigest() not in versions:
            versions.append(digest.hexdigest())
        version = versions.index(digest.hexdigest())
    module_name = name if version == 0 else f"{name}_v{version}"
    digest.update(module_name.encode())
    target = os.path.join(build_directory,
                          f"{module_name}.{digest.hexdigest()[:16]}{_EXT_SUFFIX}")

    if not os.path.exists(target):
        with _file_lock(os.path.join(build_directory, "lock")):
            if not os.path.exists(target):      # another process may have built it meanwhile
                for path, text in (write_sources or {}).items():
                    _write_if_changed(path, text)
                _compile(name, module_name, sources, build_directory, cflags, ldflags,
                         includes, verbose, target)
    elif verbose:
        print(f"No modifications detected for re-loaded extension module {name}, skipping "
              f"build step...", file=sys.stderr)
    if verbose:
        print(f"Loading extension module {name}...", file=sys.stderr)
    if not is_python_module:
        import ctypes

        ctypes.CDLL(target, mode=getattr(ctypes, "RTLD_GLOBAL", 0))
        return target
    return _import(name, module_name, target)


def load(name, sources, extra_cflags=None, extra_cuda_cflags=None, extra_ldflags=None,
         extra_include_paths=None, build_directory=None, verbose=False, with_cuda=None,
         is_python_module=True, is_standalone=False, keep_intermediates=True):
    """Compile C++ source files into an extension module, load it and return it.

    The sources define the module themselves with
    ``PYBIND11_MODULE(EMBER_EXTENSION_NAME, m) { ... }`` and include ``<ember/extension.h>``
    (or just pybind11). The build is cached (see the module docstring); the module is then
    importable by ``name`` in this process. With ``is_python_module=False`` the library is loaded
    into the process (``RTLD_GLOBAL``) and its path is returned. ``extra_cuda_cflags``,
    ``keep_intermediates`` are accepted for torch's signature; CUDA sources raise RuntimeError.
    A compile error raises RuntimeError "Error building extension '<name>': <compiler output>".

    Example::

        >>> ext = load("my_ext", ["my_ext.cpp"], extra_cflags=["-march=native"])
        >>> ext.my_function(ember.ones(3))
    """
    if is_standalone:
        raise RuntimeError("ember.utils.cpp_extension.load: is_standalone=True (building an "
                           "executable) is not supported")
    return _jit_compile(name, _as_list(sources), extra_cflags, extra_ldflags,
                        extra_include_paths, build_directory, verbose, with_cuda,
                        is_python_module)


def load_inline(name, cpp_sources, cuda_sources=None, functions=None, extra_cflags=None,
                extra_cuda_cflags=None, extra_ldflags=None, extra_include_paths=None,
                build_directory=None, verbose=False, with_cuda=None, is_python_module=True,
                with_pytorch_error_handling=True, keep_intermediates=True, use_pch=False):
    """Compile C++ source strings into an extension module, load it and return it.

    ``cpp_sources`` (a string or a list of strings) is written to ``main.cpp`` in the build
    directory after ``#include <ember/extension.h>``. ``functions`` (a name, a list of names, or
    a dict name -> docstring) generates the ``PYBIND11_MODULE`` block binding them, as torch
    does; without it the sources define the module themselves with
    ``PYBIND11_MODULE(EMBER_EXTENSION_NAME, m)``. Every bound function takes ember CPU tensors
    (passed to C++ as NumPy arrays that share memory: ``ember::Tensor`` or ``py::array_t<T>``)
    and its returned arrays come back as ember tensors. ``cuda_sources``/``with_cuda`` raise
    RuntimeError (CPU only); ``extra_cuda_cflags``, ``with_pytorch_error_handling``,
    ``keep_intermediates`` and ``use_pch`` are accepted for torch's signature.

    Example::

        >>> ext = load_inline("scale_ext", '''
        ... ember::Tensor scale(ember::Tensor x, double s) {
        ...   auto y = ember::empty_like(x);
        ...   auto a = x.accessor<double, 1>();
        ...   double* b = y.data_ptr<double>();
        ...   for (int64_t i = 0; i < x.size(0); ++i) b[i] = s * a[i];
        ...   return y;
        ... }''', functions="scale")
        >>> ext.scale(ember.arange(3.0, dtype=ember.float64), 2.0)
        tensor([0., 2., 4.], dtype=ember.float64)
    """
    if cuda_sources:
        raise RuntimeError(f"Error building extension '{name}': ember C++ extensions run on the "
                           "CPU; cuda_sources are not supported (write GPU kernels with "
                           "cupy.RawKernel / cupy.RawModule)")
    _check_name(name)
    text = "\n".join(_as_list(cpp_sources))
    source = "#include <ember/extension.h>\n" + text + "\n"
    if functions is not None:
        source += _bindings(functions)
    if build_directory is None:
        build_directory = os.path.join(get_default_build_root(), name)
    path = os.path.join(os.path.abspath(build_directory), "main.cpp")
    return _jit_compile(name, [path], extra_cflags, extra_ldflags, extra_include_paths,
                        build_directory, verbose, with_cuda, is_python_module,
                        write_sources={path: source})
