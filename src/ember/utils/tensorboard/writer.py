"""``SummaryWriter`` and ``FileWriter`` (``torch.utils.tensorboard.writer``): the API a
training loop calls to log data for TensorBoard.

A ``FileWriter`` owns one event file; tensorboard's ``EventFileWriter`` queues the events and
a background thread appends them as TFRecords. A ``SummaryWriter`` turns each ``add_*`` call
into a ``Summary`` (``summary.py``) and hands it to its file writer, plus one file writer per
series for :meth:`SummaryWriter.add_scalars`.
"""

from __future__ import annotations

import functools
import os
import socket
import time
from datetime import datetime

from tensorboard.compat import tf
from tensorboard.compat.proto.event_pb2 import Event, SessionLog, TaggedRunMetadata
from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from . import _embedding, summary
from ._convert import make_np
from ._graph import graph as _traced_graph
from ._images import figure_to_image
from ._onnx_graph import load_onnx_graph

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """Writes ``Event`` protocol buffers to a new event file in ``log_dir``, named
    ``events.out.tfevents.<time>.<hostname>.<pid>.<n><filename_suffix>``. Events are queued
    (at most ``max_queue``) and written every ``flush_secs`` seconds or on :meth:`flush`.

    Example::

        >>> writer = FileWriter("runs/raw")
        >>> writer.add_summary(summary.scalar("loss", 0.5), global_step=1)
        >>> writer.close()
    """

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs,
                                            filename_suffix)

    def get_logdir(self):
        """The directory the event file is in."""
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None):
        """Queue ``event``, stamped with ``walltime`` (default: now) and ``step`` if given."""
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None):
        """Queue a ``Summary`` as an event at ``global_step``."""
        self.add_event(Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_profile, walltime=None):
        """Queue a ``(GraphDef, RunMetadata)`` pair: the graph and its (empty) step stats."""
        graph_def, run_metadata = graph_profile
        self.add_event(Event(graph_def=graph_def.SerializeToString()), None, walltime)
        tagged = TaggedRunMetadata(tag="step1", run_metadata=run_metadata.SerializeToString())
        self.add_event(Event(tagged_run_metadata=tagged), None, walltime)

    def add_onnx_graph(self, graph_def, walltime=None):
        """Queue a ``GraphDef`` (of an ONNX model) as the run's graph."""
        self.add_event(Event(graph_def=graph_def.SerializeToString()), None, walltime)

    def flush(self):
        """Write every queued event to disk."""
        self.event_writer.flush()

    def close(self):
        """Flush and close the event file."""
        self.event_writer.close()


@functools.cache
def _tensorflow_buckets():
    """TensorFlow's default histogram edges: +-1e-12 growing by 10% up to 1e20, and 0.

    Built by repeated multiplication, as TensorFlow and torch build them, so that the edges
    (and so the buckets' counts) agree to the last bit."""
    positive = []
    edge = 1e-12
    while edge < 1e20:
        positive.append(edge)
        edge *= 1.1
    return [-e for e in reversed(positive)] + [0] + positive


def _default_log_dir(comment):
    stamp = datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join("runs", stamp + "_" + socket.gethostname() + comment)


def _escape_tag(tag):
    # the embedding's tag names a directory: escape what would split or break a path
    return tag.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")


class SummaryWriter:
    """Writes scalars, histograms, images, text, graphs, embeddings, PR curves and
    hyperparameters to event files in ``log_dir`` for TensorBoard, as
    ``torch.utils.tensorboard.SummaryWriter``.

    ``log_dir`` defaults to ``runs/<Mon>DD_HH-MM-SS_<hostname><comment>``. ``purge_step``
    (after a crash, resuming from step T) tells TensorBoard to hide events at steps >= T
    written before. Values may be ember tensors, NumPy arrays or Python numbers.

    Example::

        >>> with SummaryWriter("runs/exp1") as writer:
        ...     for step in range(100):
        ...         writer.add_scalar("loss", 1.0 / (step + 1), step)
        ...     writer.add_histogram("weights", model.weight, step)
    """

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10,
                 flush_secs=120, filename_suffix=""):
        self.log_dir = log_dir if log_dir else _default_log_dir(comment)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = self.all_writers = None
        self._get_file_writer()
        self.default_bins = _tensorflow_buckets()

    def _get_file_writer(self):
        """The main FileWriter, opened anew (a new event file) after :meth:`close`."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                          self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                self._write_purge_marker(self.purge_step)
                self.purge_step = None
        return self.file_writer

    def _write_purge_marker(self, step):
        # a restart marker: TensorBoard drops earlier events whose step is >= ``step``
        self.file_writer.add_event(Event(step=step, file_version="brain.Event:2"))
        self.file_writer.add_event(
            Event(step=step, session_log=SessionLog(status=SessionLog.START)))

    def _add(self, summary_proto, global_step=None, walltime=None):
        self._get_file_writer().add_summary(summary_proto, global_step, walltime)

    def get_logdir(self):
        """The directory event files are written to.

        Example::

            >>> SummaryWriter("runs/a").get_logdir()
            'runs/a'
        """
        return self.log_dir

    # ---------------------------------------------------------------------------- numbers

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        """Log one number (a Python number, or a one-element tensor or array) under ``tag``.
        ``new_style`` stores it as a tensor (float64 with ``double_precision``) rather than a
        float32 ``simple_value``.

        Example::

            >>> writer.add_scalar("loss", loss, global_step=step)
        """
        self._add(summary.scalar(tag, scalar_value, new_style=new_style,
                                 double_precision=double_precision), global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Log several numbers in one chart: each key of ``tag_scalar_dict`` is a series,
        written as run ``<log_dir>/<main_tag>_<key>`` under the tag ``main_tag``.

        Example::

            >>> writer.add_scalars("loss", {"train": 0.3, "val": 0.4}, global_step=step)
        """
        walltime = time.time() if walltime is None else walltime
        main_dir = self._get_file_writer().get_logdir()
        for series, value in tag_scalar_dict.items():
            series_dir = main_dir + "/" + main_tag.replace("/", "_") + "_" + series
            if series_dir not in self.all_writers:
                self.all_writers[series_dir] = FileWriter(
                    series_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers[series_dir].add_summary(summary.scalar(main_tag, value),
                                                     global_step, walltime)

    def add_tensor(self, tag, tensor, global_step=None, walltime=None):
        """Log a whole tensor (for TensorBoard's generic tensor data).

        Example::

            >>> writer.add_tensor("state", ember.tensor([1.0, 2.0, 3.0]))
        """
        self._add(summary.tensor_proto(tag, tensor), global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None):
        """Log the distribution of ``values``. ``bins="tensorflow"`` uses TensorFlow's
        default edges (+-1e-12 * 1.1**k and 0); any other value goes to ``np.histogram``
        (a count, a list of edges, ``"auto"``, ``"fd"``, ...).

        Example::

            >>> writer.add_histogram("fc.weight", model.fc.weight, global_step=step)
        """
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._add(summary.histogram(tag, values, bins, max_bins=max_bins), global_step,
                  walltime)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits,
                          bucket_counts, global_step=None, walltime=None):
        """Log a histogram computed elsewhere: its statistics and each bucket's right edge
        and count.

        Example::

            >>> writer.add_histogram_raw("h", min=0, max=2, num=3, sum=3, sum_squares=5,
            ...                          bucket_limits=[1, 2], bucket_counts=[1, 2])
        """
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        self._add(summary.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits,
                                        bucket_counts), global_step, walltime)

    # ----------------------------------------------------------------------------- images

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        """Log an image: ``dataformats`` is ``"CHW"``, ``"HWC"`` or ``"HW"``; uint8 values
        are pixels, floats are read as [0, 1]. Needs Pillow for the PNG encoding.

        Example::

            >>> writer.add_image("sample", ember.rand(3, 32, 32), global_step=step)
        """
        self._add(summary.image(tag, img_tensor, dataformats=dataformats), global_step,
                  walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None,
                   dataformats="NCHW"):
        """Log a batch of images as one grid, 8 per row (``"NCHW"`` or ``"NHWC"``; 1 or 3
        channels).

        Example::

            >>> writer.add_images("batch", ember.rand(16, 3, 28, 28), global_step=step)
        """
        self._add(summary.image(tag, img_tensor, dataformats=dataformats), global_step,
                  walltime)

    def add_image_with_boxes(self, tag, img_tensor, box_tensor, global_step=None,
                             walltime=None, rescale=1, dataformats="CHW", labels=None):
        """Log an image with boxes drawn on it: ``box_tensor`` is N x 4 ``(xmin, ymin, xmax,
        ymax)`` in pixels, ``labels`` one string per box (ignored if the count differs).

        Example::

            >>> writer.add_image_with_boxes("det", image, ember.tensor([[2, 2, 20, 20]]))
        """
        if labels is not None:
            labels = [labels] if isinstance(labels, str) else labels
            if len(labels) != box_tensor.shape[0]:
                labels = None
        self._add(summary.image_boxes(tag, img_tensor, box_tensor, rescale=rescale,
                                      dataformats=dataformats, labels=labels),
                  global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        """Log a matplotlib figure (or a list of them, as one grid) as an image; ``close``
        closes the figure after rendering it.

        Example::

            >>> fig, ax = plt.subplots(); ax.plot([1, 3, 2])
            >>> writer.add_figure("curve", fig, global_step=step)
        """
        layout = "NCHW" if isinstance(figure, list) else "CHW"
        self.add_image(tag, figure_to_image(figure, close), global_step, walltime,
                       dataformats=layout)

    def add_video(self, tag, vid_tensor, global_step=None, fps=4, walltime=None):
        """Log videos (B x T x C x H x W, uint8 or floats in [0, 1]) as one animated GIF, the
        B videos tiled in a grid. Encoded with Pillow, where torch needs moviepy.

        Example::

            >>> writer.add_video("rollout", ember.rand(2, 16, 3, 32, 32), fps=8)
        """
        self._add(summary.video(tag, vid_tensor, fps), global_step, walltime)

    def add_audio(self, tag, snd_tensor, global_step=None, sample_rate=44100, walltime=None):
        """Log a mono sound clip (values in [-1, 1]) as 16-bit WAV.

        Example::

            >>> writer.add_audio("tone", ember.sin(ember.arange(8000) * 0.1), sample_rate=8000)
        """
        self._add(summary.audio(tag, snd_tensor, sample_rate=sample_rate), global_step,
                  walltime)

    # ------------------------------------------------------------------------------- text

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """Log a string (shown as Markdown) under ``<tag>/text_summary``.

        Example::

            >>> writer.add_text("notes", "lr **0.1**, batch 64", global_step=0)
        """
        self._add(summary.text(tag, text_string), global_step, walltime)

    # ------------------------------------------------------------------------------ graph

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """Log ``model``'s graph, traced with ``ember.jit.trace`` on ``input_to_model`` (a
        tensor or a tuple of them) in eval mode; ``verbose`` prints the traced graph.

        Example::

            >>> writer.add_graph(model, ember.randn(1, 784))
        """
        self._get_file_writer().add_graph(
            _traced_graph(model, input_to_model, verbose, use_strict_trace))

    def add_onnx_graph(self, prototxt):
        """Log the graph of the ONNX model in the file ``prototxt`` (needs ``onnx``).

        Example::

            >>> ember.onnx.export(model, ember.randn(1, 784), "model.onnx")
            >>> writer.add_onnx_graph("model.onnx")
        """
        self._get_file_writer().add_onnx_graph(load_onnx_graph(prototxt))

    # -------------------------------------------------------------------------- embedding

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None,
                      tag="default", metadata_header=None):
        """Log an N x D matrix for the embedding projector, with optional labels
        (``metadata``: N strings, or N rows of columns named by ``metadata_header``) and
        thumbnails (``label_img``: N x C x H x W in [0, 1]). Files go to
        ``<log_dir>/<step:05d>/<tag>/``, listed in ``projector_config.pbtxt``.

        Example::

            >>> writer.add_embedding(features, metadata=class_names, label_img=images)
        """
        mat = make_np(mat)
        global_step = 0 if global_step is None else global_step
        subdir = f"{str(global_step).zfill(5)}/{_escape_tag(tag)}"
        log_dir = self._get_file_writer().get_logdir()
        save_path = os.path.join(log_dir, subdir)
        _prepare_embedding_dir(save_path)
        if metadata is not None:
            if mat.shape[0] != len(metadata):
                raise AssertionError("#labels should equal with #data points")
            _embedding.write_metadata(metadata, save_path, metadata_header=metadata_header)
        sprite_shape = None
        if label_img is not None:
            if mat.shape[0] != label_img.shape[0]:
                raise AssertionError("#images should equal with #data points")
            label_img = make_np(label_img)
            _embedding.write_sprite(label_img, save_path)
            sprite_shape = label_img.shape
        if mat.ndim != 2:
            raise AssertionError(
                "mat should be 2D, where mat.size(0) is the number of data points")
        _embedding.write_vectors(mat, save_path)
        # the config lists every embedding of the run: keep it and rewrite it whole, since
        # not every file system can append
        if not hasattr(self, "_projector_config"):
            self._projector_config = ProjectorConfig()
        self._projector_config.embeddings.append(_embedding.embedding_info(
            subdir, tag, global_step, metadata is not None, sprite_shape))
        _embedding.write_projector_config(log_dir, self._projector_config)

    # -------------------------------------------------------------------------- PR curves

    def add_pr_curve(self, tag, labels, predictions, global_step=None, num_thresholds=127,
                     weights=None, walltime=None):
        """Log a precision-recall curve of binary ``labels`` against ``predictions`` in
        [0, 1] (``num_thresholds`` at most 127).

        Example::

            >>> writer.add_pr_curve("pr", labels, ember.sigmoid(logits), global_step=step)
        """
        labels, predictions = make_np(labels), make_np(predictions)
        self._add(summary.pr_curve(tag, labels, predictions, num_thresholds, weights),
                  global_step, walltime)

    def add_pr_curve_raw(self, tag, true_positive_counts, false_positive_counts,
                         true_negative_counts, false_negative_counts, precision, recall,
                         global_step=None, num_thresholds=127, weights=None, walltime=None):
        """Log a precision-recall curve from per-threshold counts computed elsewhere.

        Example::

            >>> writer.add_pr_curve_raw("pr", tp, fp, tn, fn, precision, recall,
            ...                         num_thresholds=len(tp))
        """
        self._add(summary.pr_curve_raw(tag, true_positive_counts, false_positive_counts,
                                       true_negative_counts, false_negative_counts,
                                       precision, recall, num_thresholds, weights),
                  global_step, walltime)

    # ---------------------------------------------------------------------- custom scalars

    def add_custom_scalars(self, layout):
        """Lay out the custom-scalars dashboard: ``{category: {title: ["Multiline", tags] or
        ["Margin", [value, lower, upper]]}}``.

        Example::

            >>> writer.add_custom_scalars({"loss": {"both": ["Multiline", ["train", "val"]]}})
        """
        self._add(summary.custom_scalars(layout))

    def add_custom_scalars_multilinechart(self, tags, category="default", title="untitled"):
        """One multi-line chart of ``tags`` in the custom-scalars dashboard.

        Example::

            >>> writer.add_custom_scalars_multilinechart(["loss/train", "loss/val"])
        """
        self._add(summary.custom_scalars({category: {title: ["Multiline", tags]}}))

    def add_custom_scalars_marginchart(self, tags, category="default", title="untitled"):
        """One margin chart (value, lower, upper: three tags) in the custom-scalars
        dashboard.

        Example::

            >>> writer.add_custom_scalars_marginchart(["acc", "acc_low", "acc_high"])
        """
        if len(tags) != 3:
            raise AssertionError(f"Expected 3 tags, got {len(tags)}.")
        self._add(summary.custom_scalars({category: {title: ["Margin", tags]}}))

    # ---------------------------------------------------------------------------- hparams

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None,
                    run_name=None, global_step=None):
        """Log one run's hyperparameters (bool, str, int, float, or one-element tensor
        values) with its final metrics, for the hparams dashboard. They go to a sub-run
        ``<log_dir>/<run_name>`` (default: the current time), where each metric is also
        written as a scalar.

        Example::

            >>> writer.add_hparams({"lr": 0.1, "batch": 64}, {"hparam/accuracy": 0.93})
        """
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        experiment, start, end = summary.hparams(hparam_dict, metric_dict,
                                                 hparam_domain_discrete)
        run_dir = os.path.join(self._get_file_writer().get_logdir(),
                               run_name or str(time.time()))
        with SummaryWriter(log_dir=run_dir) as run_writer:
            for part in (experiment, start, end):
                run_writer.file_writer.add_summary(part, global_step)
            for metric, value in metric_dict.items():
                run_writer.add_scalar(metric, value, global_step)

    # ------------------------------------------------------------------------------- mesh

    def add_mesh(self, tag, vertices, colors=None, faces=None, config_dict=None,
                 global_step=None, walltime=None):
        """Log a 3-D mesh or point cloud: ``vertices`` B x N x 3, optional ``colors``
        (B x N x 3, 0-255) and ``faces`` (B x F x 3 vertex indices); ``config_dict`` holds
        three.js settings (camera, lights, material).

        Example::

            >>> writer.add_mesh("cube", vertices=corners, faces=triangles)
        """
        self._add(summary.mesh(tag, vertices, colors, faces, config_dict), global_step,
                  walltime)

    # ----------------------------------------------------------------------- life cycle

    def flush(self):
        """Write every pending event of every file writer to disk.

        Example::

            >>> writer.flush()
        """
        for file_writer in (self.all_writers or {}).values():
            file_writer.flush()

    def close(self):
        """Flush and close every event file (a second close does nothing; logging after a
        close opens a new event file).

        Example::

            >>> writer.close()
        """
        if self.all_writers is None:
            return
        for file_writer in self.all_writers.values():
            file_writer.flush()
            file_writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.close()


def _prepare_embedding_dir(save_path):
    files = tf.io.gfile
    if not files.exists(save_path):
        files.makedirs(save_path)
    elif files.isdir(save_path):
        print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
    else:
        raise NotADirectoryError(f"Path: `{save_path}` exists, but is a file. Cannot proceed.")
