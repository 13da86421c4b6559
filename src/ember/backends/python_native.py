"""``ember.backends.python_native``: torch's switches for operator overrides written in
Python DSLs (Triton, CuTe DSL).

ember registers no such overrides (its kernels are NumPy's and CuPy's), so both DSLs are
known but unavailable and have no operations; the switches keep their state, so code that
disables a DSL, an operation or a dispatch key runs unchanged.

Example::

    >>> import ember.backends.python_native as pn
    >>> pn.all_dsls, pn.available_dsls
    (['cutedsl', 'triton'], [])
    >>> with pn.triton.disabled():
    ...     pn.is_dsl_disabled("triton")
    True
"""

from __future__ import annotations

import contextlib
import sys

from . import ContextProp, PropModule, flags_frozen  # noqa: F401  (torch's names)

__all__ = ["DSLController", "PythonNativeModule"]

_KNOWN_DSLS = ("cutedsl", "triton")
_disabled = {"dsls": set(), "operations": set(), "dispatch_keys": set()}


class DSLController:
    """The switch of one DSL: ``enabled`` (settable), ``available``, ``version``,
    ``disable()``, ``enable()`` and the ``disabled()`` block.

    Example::

        >>> DSLController("triton").available
        False
    """

    def __init__(self, dsl_name):
        self._dsl_name = dsl_name

    @property
    def name(self):
        """The DSL's name."""
        return self._dsl_name

    @property
    def available(self):
        """Whether ember has kernels in this DSL: never."""
        return False

    @property
    def version(self):
        """The DSL runtime's version: None, as it is not available."""
        return None

    @property
    def enabled(self):
        """Whether the DSL's overrides may be used (True unless disabled)."""
        return self._dsl_name not in _disabled["dsls"]

    @enabled.setter
    def enabled(self, value):
        if flags_frozen():
            raise RuntimeError(f"not allowed to set {self._dsl_name} DSL flags after "
                               "disable_global_flags; please use flags() context manager instead")
        if value:
            self.enable()
        else:
            self.disable()

    def disable(self):
        """Disable every operation of this DSL."""
        _disabled["dsls"].add(self._dsl_name)

    def enable(self):
        """Enable this DSL's operations again."""
        _disabled["dsls"].discard(self._dsl_name)

    @contextlib.contextmanager
    def disabled(self):
        """Disable the DSL inside the block."""
        was_enabled = self.enabled
        self.disable()
        try:
            yield
        finally:
            if was_enabled:
                self.enable()

    def __repr__(self):
        state = "enabled" if self.enabled else "disabled"
        return f"DSLController({self._dsl_name}, unavailable, {state})"


_CONTROLLERS = {name: DSLController(name) for name in _KNOWN_DSLS}


class PythonNativeModule(PropModule):
    """``ember.backends.python_native``: the DSL list and the per-operation switches."""

    def __init__(self, original_module):
        super().__init__(original_module, original_module.__name__)

    @property
    def all_dsls(self):
        """Every DSL torch knows: ``['cutedsl', 'triton']``."""
        return list(_KNOWN_DSLS)

    @property
    def available_dsls(self):
        """The DSLs whose runtime ember can use: none."""
        return []

    def get_dsl_operations(self, dsl_name):
        """The operations ``dsl_name`` overrides: none in ember."""
        return []

    def disable_operations(self, *op_symbols):
        """Disable the overrides of the named operations."""
        _disabled["operations"].update(op_symbols)

    def enable_operations(self, *op_symbols):
        """Enable the overrides of the named operations again."""
        _disabled["operations"].difference_update(op_symbols)

    def disable_dispatch_keys(self, *dispatch_keys):
        """Disable the overrides registered for these dispatch keys ('CUDA', 'CPU', ...)."""
        _disabled["dispatch_keys"].update(dispatch_keys)

    def enable_dispatch_keys(self, *dispatch_keys):
        """Enable the overrides of these dispatch keys again."""
        _disabled["dispatch_keys"].difference_update(dispatch_keys)

    @contextlib.contextmanager
    def operations_disabled(self, *op_symbols):
        """Disable the named operations inside the block."""
        newly = [op for op in op_symbols if op not in _disabled["operations"]]
        self.disable_operations(*op_symbols)
        try:
            yield
        finally:
            self.enable_operations(*newly)

    def is_operation_disabled(self, op_symbol):
        """Whether ``op_symbol``'s overrides are disabled."""
        return op_symbol in _disabled["operations"]

    def is_dsl_disabled(self, dsl_name):
        """Whether the DSL ``dsl_name`` is disabled."""
        return dsl_name in _disabled["dsls"]

    def __getattr__(self, name):
        if name in _CONTROLLERS:
            return _CONTROLLERS[name]
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(f"module '{self.__name__}' has no attribute '{name}'")
        return self.m.__getattribute__(name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(_KNOWN_DSLS))


sys.modules[__name__] = PythonNativeModule(sys.modules[__name__])
