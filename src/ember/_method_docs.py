"""Docstrings for the Tensor methods that are thin wrappers of a documented function.

Many methods are one-line adapters (``Tensor.cumsum_``, ``Tensor.where``); instead of repeating
the function's documentation, they point to it, as torch's own Tensor docs do.
"""

from __future__ import annotations

__all__ = ["document_methods"]


def document_methods(tensor_class, namespace):
    """Give every undocumented public method of ``tensor_class`` a pointer to its function."""
    for name, method in list(vars(tensor_class).items()):
        if name.startswith("_") or not callable(method) or (method.__doc__ or "").strip():
            continue
        base = name[:-1] if name.endswith("_") else None
        if base and hasattr(tensor_class, base):
            doc = f"In-place version of :meth:`Tensor.{base}`."
        elif hasattr(namespace, name):
            doc = f"See :func:`ember.{name}`."
        else:
            continue
        try:
            method.__doc__ = doc
        except (AttributeError, TypeError):  # builtins and slots keep their own docs
            pass
