"""``ember.backends.miopen``: AMD MIOpen switches (ember has no MIOpen kernels; the flag is
kept without effect).

Example::

    >>> ember.backends.miopen.immediate
    False
"""

immediate = False
