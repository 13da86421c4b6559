"""``torch.sparse.check_sparse_tensor_invariants``: the switch that makes torch validate the
indices of every sparse tensor it builds.

ember validates indices always (a sparse tensor with out-of-range or unsorted compressed
indices is refused at construction), so the switch only records the setting that torch's API
reports back; it never turns the checks off.
"""

from __future__ import annotations

import functools


class check_sparse_tensor_invariants:
    """A context manager and decorator that turns sparse invariant checks on (or off with
    ``enable=False``) inside its scope; ``enable()``, ``disable()`` and ``is_enabled()`` set
    and read the global default.

    Example::

        >>> with ember.sparse.check_sparse_tensor_invariants():
        ...     ember.sparse.check_sparse_tensor_invariants.is_enabled()
        True
    """

    _enabled = False

    @staticmethod
    def is_enabled():
        """Whether sparse tensor constructors check invariants by default."""
        return check_sparse_tensor_invariants._enabled

    @staticmethod
    def enable():
        """Check invariants by default from now on."""
        check_sparse_tensor_invariants._enabled = True

    @staticmethod
    def disable():
        """Stop checking invariants by default (ember keeps validating indices)."""
        check_sparse_tensor_invariants._enabled = False

    def __init__(self, enable=True):
        self.state = bool(enable)
        self.saved_state = None

    def __enter__(self):
        if self.saved_state is not None:
            raise RuntimeError("This context manager instance is already activated. Use a "
                               "different context manager instance for context nesting.")
        self.saved_state = check_sparse_tensor_invariants._enabled
        check_sparse_tensor_invariants._enabled = self.state
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        check_sparse_tensor_invariants._enabled = self.saved_state
        self.saved_state = None

    def __call__(self, function):
        @functools.wraps(function)
        def checked(*args, **kwargs):
            with check_sparse_tensor_invariants(self.state):
                return function(*args, **kwargs)

        return checked
