"""``ember.backends.kleidiai``: Arm's KleidiAI micro-kernels (not used by ember).

Example::

    >>> ember.backends.kleidiai.is_available()
    False
"""

__all__ = ["is_available"]


def is_available():
    """Whether KleidiAI kernels are built in: never in ember."""
    return False
