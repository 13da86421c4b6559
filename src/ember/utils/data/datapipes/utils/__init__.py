"""Helpers of the DataPipes: file walking and streams, decoders, graph snapshots."""

from . import common, decoder, snapshot  # noqa: F401
