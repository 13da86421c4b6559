"""Tracebacks that end at the user's line: ember's own frames are hidden at its API boundary.

torch checks shapes, dtypes and devices in C++, so the traceback of a torch error ends at the
user's line. ember checks them in Python, several calls deep, so without help a mismatched
``a @ b`` would end in ember's operator method, ``matmul`` and its shape check. Like JAX's
filtered tracebacks, ember removes the frames of its own package from the traceback of an error
as the error leaves ember through a public entry point; every other frame stays.

The rules (see "Errors and tracebacks" in ``docs/migrating-from-pytorch.md``):

* a frame is *internal* when its code lives in the ember package (``ember/examples`` excepted:
  those are programs using ember); every other frame stays, also the frames of user code that
  ember called (a hook, a ``Dataset.__getitem__``, an ``autograd.Function``, a user module's
  ``forward``), and ember frames between two user frames are hidden, as JAX does;
* the unfiltered traceback stays reachable: :func:`full_traceback` returns it, and with the
  environment variable ``EMBER_FULL_TRACEBACK=1`` nothing is hidden at all;
* every error type is filtered the same way (ember cannot tell its deliberate errors from its
  bugs by type alone), but an error raised inside ember with a type that ember does not raise
  on purpose (``AttributeError``, ``KeyError``, ``NameError``, ``ZeroDivisionError``) is
  probably a bug in ember: it gets a note saying so and how to see the hidden frames.

The mechanism costs nothing until an error happens: an entry point that already is a Python
frame (the ``ember.overrides`` wrapper of every public function and Tensor method, the binary
operators of ``ops/_operands.py``, ``Module.__call__``, ``autograd.backward``/``grad``,
``Function.apply``, an optimiser's ``step``, the DataLoader iterators) ends its body with::

    try:
        ...
    except Exception as error:
        hide_internal_frames(error)
        raise

Python 3.11's exception tables make the ``try`` free, and the bare ``raise`` re-raises with the
rewritten traceback without adding the entry point's own frame. Each entry point that an error
crosses filters again, so the frames that the error collects on its way out (an outer ember
call) are removed by the outermost entry point. (On Python 3.10 a bare ``raise`` ignores the
rewritten traceback, so tracebacks stay complete there.)
"""

from __future__ import annotations

import functools
import os
import types

__all__ = ["entry_point", "full_traceback", "hide_internal_frames", "is_internal"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_EXAMPLES_DIR = os.path.join(_PACKAGE_DIR, "examples") + os.sep

# Types that ember never raises on purpose: raised from ember's own code, they point at a bug.
_BUG_TYPES = (AttributeError, KeyError, NameError, ZeroDivisionError)
# Exceptions that end loops rather than report errors: left alone.
_CONTROL_FLOW = (StopIteration, StopAsyncIteration)

_BUG_NOTE = ("ember hid its internal frames from this traceback, but this error was raised "
             "inside ember and looks like a bug in ember. Set EMBER_FULL_TRACEBACK=1 to see "
             "every frame (or print ember._traceback.full_traceback(error) with "
             "traceback.print_tb), and please report it.")


def is_internal(code):
    """Whether ``code`` (a code object) belongs to ember itself rather than to its user.

    Example::

        >>> is_internal(is_internal.__code__)
        True
    """
    filename = code.co_filename
    return filename.startswith(_PACKAGE_DIR) and not filename.startswith(_EXAMPLES_DIR)


def _full_traceback_requested():
    return os.environ.get("EMBER_FULL_TRACEBACK", "") not in ("", "0")


def hide_internal_frames(error):
    """Remove ember's frames from ``error``'s traceback, keeping the unfiltered one reachable.

    Called by an API entry point in an ``except`` clause, just before a bare ``raise``; does
    nothing when ``EMBER_FULL_TRACEBACK`` is set. Frames that ``error`` collected since an
    earlier call (outer calls it crossed on its way out) are filtered now, the rest was
    already.

    Example::

        >>> try:
        ...     ember.ones(2, 3) @ ember.ones(4, 5)
        ... except RuntimeError as error:
        ...     traceback.extract_tb(error.__traceback__)[-1].name
        '<module>'
    """
    if isinstance(error, _CONTROL_FLOW) or _full_traceback_requested():
        return
    try:
        _filter(error)
    except Exception:  # tidying a traceback must never replace the error being raised
        pass


def _filter(error):
    full, shown = getattr(error, "_ember_tracebacks", (None, None))
    current = error.__traceback__
    collected = _entries_before(current, shown)
    if collected is None:  # someone replaced the traceback since the last call: start over
        full, shown = None, None
        collected = _entries_before(current, None)
    if not collected:
        return
    if full is not None:  # the full traceback: the new outer frames, then the earlier full one
        collected[-1].tb_next = full
    full = current
    kept = [entry for entry in collected if not is_internal(entry.tb_frame.f_code)]
    filtered = _chain(kept, shown)
    error._ember_tracebacks = (full, filtered)
    error.with_traceback(filtered)
    if len(kept) < len(collected):
        _note_probable_bug(error, full)


def entry_point(fn):
    """Decorator: ``fn`` hides ember's frames from the errors that leave it.

    For entry points that are not a frame of their own already and run long enough that one
    more call does not matter (the functions ``ember.func.grad`` returns, ...); per-operator
    entry points put the ``try`` in their own body instead (see the module's docstring).

    Example::

        >>> @entry_point
        ... def transformed(x):
        ...     return x @ x
    """
    @functools.wraps(fn)
    def entry(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as error:
            hide_internal_frames(error)
            raise
    return entry


def full_traceback(error):
    """The traceback of ``error`` with ember's frames, as it was before they were hidden.

    Example::

        >>> try:
        ...     ember.ones(2, 3) @ ember.ones(4, 5)
        ... except RuntimeError as error:
        ...     traceback.extract_tb(full_traceback(error))[-1].name
        '_check_mm'
    """
    full, shown = getattr(error, "_ember_tracebacks", (None, None))
    current = error.__traceback__
    # the frames the error collected after ember last filtered it (the user's callers) come first
    outer = _entries_before(current, shown) if full is not None else None
    return current if outer is None else _chain(outer, full)


def _entries_before(traceback, stop):
    """The traceback entries from ``traceback`` (outermost) down to ``stop`` (excluded), or
    None when ``stop`` is not in the chain."""
    entries = []
    while traceback is not stop:
        if traceback is None:
            return None
        entries.append(traceback)
        traceback = traceback.tb_next
    return entries


def _chain(entries, tail):
    """A new traceback of copies of ``entries`` (outermost first), followed by ``tail``."""
    for entry in reversed(entries):
        tail = types.TracebackType(tail, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return tail


def _note_probable_bug(error, full):
    if not isinstance(error, _BUG_TYPES) or getattr(error, "_ember_noted", False):
        return
    innermost = full
    while innermost.tb_next is not None:
        innermost = innermost.tb_next
    if is_internal(innermost.tb_frame.f_code) and hasattr(error, "add_note"):
        error.add_note(_BUG_NOTE)
        error._ember_noted = True
