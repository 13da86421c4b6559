"""``torch.distributed.flight_recorder.fr_trace``: the dump analyser's command line (see the
package: ember writes no flight-recorder dumps)."""

from __future__ import annotations

__all__ = ["main"]


def main(args=None):
    """torch's ``fr_trace`` command: not in ember (``NotImplementedError``)."""
    raise NotImplementedError("torch.distributed.flight_recorder: ember's collectives write "
                              "no flight-recorder dumps to analyse; time out a hanging "
                              "collective with init_process_group(timeout=...) and read the "
                              "error, which names the rank and the operation")
