"""``repr`` of tensors, formatted as torch formats them.

How a tensor prints:

1. If it has more than ``threshold`` elements it is *summarised*: every dimension longer than
   ``2 * edgeitems`` keeps only its first and last ``edgeitems`` entries (``...`` marks the cut).
   Only that summary leaves the device and is looked at from here on.
2. One formatter is chosen for the whole (summarised) tensor, complex tensors get one for the real
   and one for the imaginary parts. Integers and bools print as Python prints them. Floats look
   at their finite non-zero values: if all are integers they print as ``1.`` (*int mode*);
   otherwise with ``precision`` decimals; scientific notation is used when the largest is above
   1e8, the ratio largest/smallest above 1000, or (not in int mode) the smallest below 1e-4.
   ``set_printoptions(sci_mode=...)`` overrides that choice. Every element is right-aligned to
   the widest of those finite non-zero values (zeros, nan and inf do not widen the column).
3. The strings are laid out in nested brackets: the innermost dimension wraps at ``linewidth``,
   outer dimensions are separated by one newline per remaining dimension, each level indented by
   one more space.
4. Suffixes follow in torch's order: ``device=``, ``size=`` (empty and meta tensors), ``dtype=``
   (when not implied by the data), then ``grad_fn=<...>`` or ``requires_grad=True``; a suffix
   that would overflow the line goes to a new one.
"""

from __future__ import annotations

import math

import numpy as np

from . import _dtype as dt

__all__ = ["set_printoptions"]


class _PrintOptions:
    __slots__ = ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")

    def __init__(self):
        self.precision = 4
        self.threshold = 1000
        self.edgeitems = 3
        self.linewidth = 80
        self.sci_mode = None


PRINT_OPTS = _PrintOptions()

_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Set how tensors print, as ``torch.set_printoptions``.

    ``profile`` (``'default'``, ``'short'`` or ``'full'``) sets all four numeric options first;
    the explicit arguments then override it. ``sci_mode`` is always set: ``None`` lets the
    formatter choose, ``True``/``False`` force scientific notation on or off.

    Example::

        >>> ember.set_printoptions(precision=2)
        >>> ember.tensor([1.12345])
        tensor([1.12])
        >>> ember.set_printoptions(profile="default")
    """
    if profile is not None:
        for name, value in _PROFILES.get(profile, {}).items():
            setattr(PRINT_OPTS, name, value)
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions():
    """The current print options as a dict (keyword arguments for :func:`set_printoptions`)."""
    return {name: getattr(PRINT_OPTS, name) for name in _PrintOptions.__slots__}


# ---------------------------------------------------------------- element formatting


def _format_floats(values):
    """Right-aligned strings for a float64 array, and the column width torch would use."""
    precision = PRINT_OPTS.precision
    flat = values.ravel()
    finite_nonzero = flat[np.isfinite(flat) & (flat != 0)]
    if finite_nonzero.size == 0:
        int_mode, sci_mode, width = True, False, 1
    else:
        magnitudes = np.abs(finite_nonzero)
        largest, smallest = float(magnitudes.max()), float(magnitudes.min())
        int_mode = bool(np.all(np.ceil(finite_nonzero) == finite_nonzero))
        spread = largest / smallest > 1000.0 or largest > 1.0e8
        sci_mode = spread if int_mode else spread or smallest < 1.0e-4
        if PRINT_OPTS.sci_mode is not None:
            sci_mode = PRINT_OPTS.sci_mode
        if sci_mode:
            spec = f".{precision}e"
            width = max(len(format(v, spec)) for v in finite_nonzero.tolist())
        elif int_mode:
            width = max(len(format(v, ".0f")) for v in finite_nonzero.tolist()) + 1
        else:
            spec = f".{precision}f"
            width = max(len(format(v, spec)) for v in finite_nonzero.tolist())
    items = flat.tolist()
    if sci_mode:
        spec = f".{precision}e"
        strings = [format(v, spec) for v in items]
    elif int_mode:
        strings = [format(v, ".0f") + "." if math.isfinite(v) else format(v, ".0f")
                   for v in items]
    else:
        spec = f".{precision}f"
        strings = [format(v, spec) for v in items]
    return [s.rjust(width) for s in strings], width


def _format_plain(values):
    """Right-aligned ``str`` of integers or bools, and their width."""
    strings = [str(v) for v in values.ravel().tolist()]
    width = max(map(len, strings))
    return [s.rjust(width) for s in strings], width


def _format_elements(array):
    """(strings in C order, the element width used for line wrapping) for a host array."""
    kind = array.dtype.kind
    if kind == "c":
        reals, real_width = _format_floats(array.real.astype(np.float64))
        imags, imag_width = _format_floats(array.imag.astype(np.float64))
        strings = []
        for re, im in zip(reals, imags):
            im = im.lstrip()
            strings.append(f"{re}{im}j" if im[0] in "+-" else f"{re}+{im}j")
        return strings, real_width + imag_width + 3
    if kind in "biu":
        strings, width = _format_plain(array)
    else:  # float16, bfloat16 (kind "V"), float32, float64
        strings, width = _format_floats(array.astype(np.float64))
    return strings, width + 2


# ---------------------------------------------------------------- layout


def _summarise(array, xp, edgeitems):
    """Keep the first and last ``edgeitems`` entries of every dimension longer than twice that.

    Runs on the tensor's device (``xp``), so only the summary is copied to the host. Returns the
    smaller array and, per dimension, whether it was cut.
    """
    cut = []
    for axis, size in enumerate(array.shape):
        if size > 2 * edgeitems:
            index = xp.concatenate([xp.arange(edgeitems), xp.arange(size - edgeitems, size)])
            array = array.take(index, axis=axis)
            cut.append(True)
        else:
            cut.append(False)
    return array, cut


def _layout(strings, cut, indent, element_length):
    """Nested brackets around an object array of element strings."""
    edgeitems = PRINT_OPTS.edgeitems
    if strings.ndim == 1:
        items = strings.tolist()
        if cut[0]:
            items = items[:edgeitems] + [" ..."] + items[edgeitems:]
        per_line = max(1, (PRINT_OPTS.linewidth - indent) // element_length)
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = [_layout(strings[i], cut[1:], indent + 1, element_length)
            for i in range(strings.shape[0])]
    if cut[0]:
        rows = rows[:edgeitems] + ["..."] + rows[edgeitems:]
    separator = "," + "\n" * (strings.ndim - 1) + " " * (indent + 1)
    return "[" + separator.join(rows) + "]"


def _host(array):
    return array if isinstance(array, np.ndarray) else array.get()


def _body(t, indent):
    """The data part of the repr (``[...]`` or a scalar) of a non-empty, non-meta tensor."""
    array = t._data
    if array.ndim == 0:
        return _format_elements(_host(array).reshape(1))[0][0]
    if array.size > PRINT_OPTS.threshold:
        if not PRINT_OPTS.edgeitems:
            return "[...]"
        array, cut = _summarise(array, t._device.xp, PRINT_OPTS.edgeitems)
    else:
        cut = [False] * array.ndim
    array = _host(array)
    strings, element_length = _format_elements(array)
    grid = np.empty(len(strings), dtype=object)
    grid[:] = strings
    return _layout(grid.reshape(array.shape), cut, indent, element_length)


def _add_suffixes(text, suffixes, indent):
    parts = [text]
    line_length = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if line_length + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            line_length = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            line_length += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t):
    """``repr(t)`` as torch prints it, with ``ember.`` in dtype names; a Tensor subclass prints
    its class name in place of ``tensor`` (parameters and buffers print as plain tensors)."""
    cls = type(t)
    plain = cls.__name__ == "Tensor" or cls.__module__ == "ember.nn.parameter"
    prefix = "tensor(" if plain else f"{cls.__name__}("
    indent = len(prefix)
    suffixes = []
    device = t._device
    if device.type != "cpu":
        suffixes.append(f"device='{device}'")
    dtype = t.dtype
    default_float = dt.get_default_dtype()
    if device.type == "meta":
        body = "..."
        suffixes.append(f"size={tuple(t._data.shape)}")
        show_dtype = dtype is not default_float
    elif t._data.size == 0:
        body = "[]"
        if t._data.ndim != 1:
            suffixes.append(f"size={tuple(t._data.shape)}")
        show_dtype = dtype is not default_float
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(t._data.shape)}")
        body = _body(t, indent)
        show_dtype = dtype not in (default_float, default_float.to_complex(), dt.int64, dt.bool)
    if show_dtype:
        suffixes.append(f"dtype={dtype!r}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name().rsplit('::', 1)[-1]}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
