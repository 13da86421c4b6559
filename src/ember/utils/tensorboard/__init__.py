"""TensorBoard logging (``torch.utils.tensorboard``): :class:`SummaryWriter` writes scalars,
histograms, images, text, embeddings, PR curves, hyperparameters and graphs into event files
that TensorBoard reads.

Like torch, this needs the ``tensorboard`` package (``pip install tensorboard``): its protocol
buffers and its event file writer do the encoding, so the files are TensorBoard's own.

Example::

    >>> from ember.utils.tensorboard import SummaryWriter
    >>> with SummaryWriter("runs/demo") as writer:
    ...     for step in range(3):
    ...         writer.add_scalar("loss", 1.0 / (step + 1), step)
"""

from __future__ import annotations


def _require_tensorboard():
    # torch refuses to import its tensorboard module without tensorboard >= 1.15; so do we
    message = "TensorBoard logging requires TensorBoard version 1.15 or above"
    try:
        import tensorboard
    except ImportError as missing:
        raise ImportError(message) from missing
    release = getattr(tensorboard, "__version__", "0")
    major_minor = tuple(int(part) for part in release.split(".")[:2] if part.isdigit())
    if major_minor < (1, 15):
        raise ImportError(message)


_require_tensorboard()

from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
