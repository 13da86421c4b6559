"""``ember.backends.cusparselt``: NVIDIA's semi-structured sparse matmul library (CUDA only).

Example::

    >>> ember.backends.cusparselt.is_available()
    False
"""

__all__ = ["version", "is_available", "get_max_alg_id"]


def is_available():
    """Whether cuSPARSELt is built in: never in ember."""
    return False


def version():
    """cuSPARSELt's version: None when it is not available (torch's answer too)."""
    return None


def get_max_alg_id():
    """The number of cuSPARSELt algorithms: None when it is not available."""
    return None
