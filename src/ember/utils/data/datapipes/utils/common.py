"""File and argument helpers shared by the DataPipes (torch's names and errors).

Example::

    >>> match_masks("a.txt", ["*.txt", "*.csv"])
    True
"""

from __future__ import annotations

import fnmatch
import functools
import inspect
import os
from io import IOBase

__all__ = ["StreamWrapper", "get_file_binaries_from_pathnames", "get_file_pathnames_from_root",
           "match_masks", "validate_input_col", "validate_pathname_binary_tuple"]


def _function_name(fn):
    if isinstance(fn, functools.partial):
        return getattr(fn.func, "__name__", repr(fn.func))
    return getattr(fn, "__name__", repr(fn))


def validate_input_col(fn, input_col):
    """Check that ``fn`` can take the ``input_col`` fields as its positional arguments.

    Example::

        >>> validate_input_col(lambda a, b: a + b, [0, 1])
    """
    try:
        signature = inspect.signature(fn)
    except ValueError:  # a builtin without a signature: nothing to check
        return
    size = len(input_col) if isinstance(input_col, (list, tuple)) else 1
    kinds = inspect.Parameter
    positional = [p for p in signature.parameters.values()
                  if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)]
    var_positional = any(p.kind is kinds.VAR_POSITIONAL for p in signature.parameters.values())
    required_kw_only = [p for p in signature.parameters.values()
                        if p.kind is kinds.KEYWORD_ONLY and p.default is p.empty]
    name = _function_name(fn)
    if required_kw_only:
        raise ValueError(f"The function {name} takes {len(required_kw_only)} non-default "
                         "keyword-only parameters, which is not allowed.")
    if len(signature.parameters) < size:
        if not var_positional:
            raise ValueError(f"The function {name} takes {len(signature.parameters)} "
                             f"parameters, but {size} are required.")
    elif len(positional) > size:
        if any(p.default is p.empty for p in positional[size:]):
            raise ValueError(f"The function {name} takes {len(positional)} positional "
                             f"parameters, but {size} are required.")
    elif len(positional) < size and not var_positional:
        raise ValueError(f"The function {name} takes {len(positional)} positional parameters, "
                         f"but {size} are required.")


def match_masks(name, masks):
    """Whether ``name`` matches one of the shell patterns ``masks`` (empty: everything).

    Example::

        >>> match_masks("a.png", "*.jpg")
        False
    """
    if not masks:
        return True
    if isinstance(masks, str):
        return fnmatch.fnmatch(name, masks)
    return any(fnmatch.fnmatch(name, mask) for mask in masks)


def get_file_pathnames_from_root(root, masks, recursive=False, abspath=False,
                                 non_deterministic=False):
    """Yield the files under ``root`` (or ``root`` itself, if a file) matching ``masks``.

    Example::

        >>> list(get_file_pathnames_from_root(".", "*.nonexistent-ext"))
        []
    """
    if os.path.isfile(root):
        path = os.path.abspath(root) if abspath else root
        if match_masks(os.path.basename(path), masks):
            yield path
        return
    for dirpath, dirnames, filenames in os.walk(root):
        if abspath:
            dirpath = os.path.abspath(dirpath)
        if not non_deterministic:
            filenames.sort()
            dirnames.sort()
        for name in filenames:
            if match_masks(name, masks):
                yield os.path.join(dirpath, name)
        if not recursive:
            break


def get_file_binaries_from_pathnames(pathnames, mode, encoding=None):
    """Yield ``(path, StreamWrapper(open(path, mode)))`` for each path.

    Example::

        >>> list(get_file_binaries_from_pathnames([], "b"))
        []
    """
    if not isinstance(pathnames, (list, tuple)) and not hasattr(pathnames, "__iter__"):
        raise TypeError(f"Expected string type for pathname, but got {type(pathnames)}")
    if mode in ("b", "t"):
        mode = "r" + mode
    for pathname in pathnames:
        if not isinstance(pathname, str):
            raise TypeError(f"Expected string type for pathname, but got {type(pathname)}")
        yield pathname, StreamWrapper(open(pathname, mode, encoding=encoding))


def validate_pathname_binary_tuple(data):
    """Check that ``data`` is a ``(str path, stream)`` pair, with torch's messages.

    Example::

        >>> import io
        >>> validate_pathname_binary_tuple(("a", io.BytesIO()))
    """
    if not isinstance(data, tuple):
        raise TypeError(f"pathname binary data should be tuple type, but it is type {type(data)}")
    if len(data) != 2:
        raise TypeError(f"pathname binary stream tuple length should be 2, but got {len(data)}")
    if not isinstance(data[0], str):
        raise TypeError("pathname within the tuple should have string type pathname, but it is "
                        f"type {type(data[0])}")
    if not isinstance(data[1], (IOBase, StreamWrapper)):
        raise TypeError("binary stream within the tuple should have IOBase or"
                        f"its subclasses as type, but it is type {type(data[1])}")


class StreamWrapper:
    """A file-like object that closes its stream when it is garbage-collected, and can be
    closed with its parents and children (torch's ``StreamWrapper``).

    Example::

        >>> import io
        >>> StreamWrapper(io.StringIO("x")).read()
        'x'
    """

    session_streams: dict = {}
    debug_unclosed_streams = False

    def __init__(self, file_obj, parent_stream=None, name=None):
        self.file_obj = file_obj
        self.child_counter = 0
        self.parent_stream = parent_stream
        self.close_on_last_child = False
        self.name = name
        self.closed = False
        if parent_stream is not None:
            if not isinstance(parent_stream, StreamWrapper):
                raise RuntimeError("Parent stream should be StreamWrapper, "
                                   f"{type(parent_stream)} was given")
            parent_stream.child_counter += 1
            self.parent_stream = parent_stream

    @classmethod
    def close_streams(cls, v, depth=0):
        """Close every StreamWrapper found in ``v`` (nested containers searched 10 deep)."""
        if depth > 10:
            return
        if isinstance(v, StreamWrapper):
            v.close()
        elif isinstance(v, dict):
            for item in v.values():
                cls.close_streams(item, depth + 1)
        elif isinstance(v, (list, tuple)):
            for item in v:
                cls.close_streams(item, depth + 1)

    def __getattr__(self, name):
        return getattr(self.__dict__["file_obj"], name)

    def close(self, *args, **kwargs):
        if self.closed:
            return
        if self.parent_stream is not None:
            self.parent_stream.child_counter -= 1
            if not self.parent_stream.child_counter and self.parent_stream.close_on_last_child:
                self.parent_stream.close()
        try:
            self.file_obj.close(*args, **kwargs)
        except AttributeError:
            pass
        self.closed = True

    def autoclose(self):
        """Close when the last child stream closes (now, if it has none)."""
        if self.child_counter == 0:
            self.close()
        self.close_on_last_child = True

    def __dir__(self):
        return list(set(list(self.__dict__) + dir(self.file_obj)))

    def __del__(self):
        if not getattr(self, "closed", True):
            self.close()

    def __iter__(self):
        yield from self.file_obj

    def __next__(self):
        return next(self.file_obj)

    def __repr__(self):
        if self.name is None:
            return f"StreamWrapper<{self.file_obj!r}>"
        return f"StreamWrapper<{self.name},{self.file_obj!r}>"

    def __getstate__(self):
        return self.file_obj

    def __setstate__(self, obj):
        self.file_obj = obj
        self.child_counter = 0
        self.parent_stream = None
        self.close_on_last_child = False
        self.name = None
        self.closed = False
