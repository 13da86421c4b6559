"""``ember.nn.backends.thnn``: an empty module old torch pickles may name.

Example::

    >>> import ember.nn.backends.thnn
"""


def _get_thnn_function_backend():
    """Return None: no layer backend is selected here (torch's answer too)."""
    return None
