"""``ember.mps.event``: Metal events, which need the MPS backend.

Example::

    >>> from ember.mps.event import Event
"""

from __future__ import annotations

from ._errors import no_mps

__all__ = ["Event"]


class Event:
    """A Metal event for timing and synchronising MPS work: needs the MPS backend
    (constructing it raises torch's RuntimeError)."""

    def __init__(self, enable_timing=False):
        raise no_mps("acquireEvent")

    def record(self):
        """Record the event in the current MPS stream."""

    def wait(self):
        """Make the current MPS stream wait for the event."""

    def query(self):
        """Whether the recorded work has finished."""
        return True

    def synchronize(self):
        """Wait for the recorded work."""

    def elapsed_time(self, end_event):
        """Milliseconds between this event and ``end_event``."""
        return 0.0
