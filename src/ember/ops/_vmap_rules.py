"""vmap's rule builders (``ember/func/_batching_rules.py``), for the ops' definition sites.

Each op owns its batching rule, attached right after the op (``sum_op.defbatch(...)``). The
builders live with vmap's engine in ``ember.func``, whose package imports the op modules, so an
op module cannot import them while it loads. ``batching.<builder>`` is a rule that stands for
the builder of that name and imports it the first time vmap asks for it. (Modules that load
after ``ember.func``, such as ``ember/nn``, import the builders directly.)

Example::

    >>> from ember.ops._vmap_rules import batching
    >>> _ = sum_op.defbatch(batching.reduction)
    >>> sum_op.batch.resolve().__name__
    'reduction'
"""

from __future__ import annotations

__all__ = ["DeferredRule", "batching"]


class DeferredRule:
    """The batching rule ``name`` of ``ember/func/_batching_rules.py``, imported on first use.

    Calling it runs the builder; :meth:`resolve` returns the builder itself.

    Example::

        >>> DeferredRule("along_dim").resolve().__name__
        'along_dim'
    """

    __slots__ = ("name", "_rule")

    def __init__(self, name):
        self.name = name
        self._rule = None

    def resolve(self):
        """The builder function (an AttributeError names a builder that does not exist)."""
        if self._rule is None:
            from ..func import _batching_rules

            self._rule = getattr(_batching_rules, self.name)
        return self._rule

    def __call__(self, xp, step, arrays, batched, batch_size):
        return self.resolve()(xp, step, arrays, batched, batch_size)

    def __repr__(self):
        return f"<batching rule {self.name}>"


class _Builders:
    """``batching.along_dim`` and so on: a :class:`DeferredRule` per builder."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return DeferredRule(name)


batching = _Builders()
