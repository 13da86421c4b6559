"""``ember.backends.xnnpack``: the XNNPACK mobile kernels (not built into ember).

Example::

    >>> ember.backends.xnnpack.enabled
    False
"""

enabled = False
