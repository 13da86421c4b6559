"""``ember.compiler.config``: the compiler's user-facing settings (torch.compiler.config).

Example::

    >>> ember.compiler.config.job_id is None
    True
"""

from __future__ import annotations

__all__ = ["job_id", "cache_key_tag", "dynamic_sources", "unbacked_sources"]

job_id = None
cache_key_tag = ""
dynamic_sources = ""
unbacked_sources = ""
