"""Summary protocol buffers for each kind of data TensorBoard shows (``torch.utils.
tensorboard.summary``). Each function returns a ``Summary`` for :class:`FileWriter.add_summary`.

The messages are tensorboard's own (``tensorboard.compat.proto``), filled as torch fills them,
so TensorBoard's plugins (scalars, histograms, images, text, PR curves, hparams, custom
scalars, mesh) read them as they read torch's.
"""

from __future__ import annotations

import io
import json
import wave

import numpy as np
from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

from ..._tensor import Tensor
from ._convert import make_np
from ._images import convert_to_HWC, encode_gif, encode_png, to_uint8_pixels, video_frames

__all__ = ["scalar", "histogram", "histogram_raw", "make_histogram", "image", "image_boxes",
           "video", "text", "hparams", "pr_curve", "pr_curve_raw", "compute_curve",
           "custom_scalars", "tensor_proto", "audio", "mesh"]


def _plugin_metadata(plugin_name, content=b""):
    return SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name=plugin_name, content=content))


def _shape_proto(shape):
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=size) for size in shape])


# ---------------------------------------------------------------------------------- scalars

def scalar(name, value, collections=None, new_style=False, double_precision=False):
    """A one-number summary. The old style is a ``simple_value`` (float32); ``new_style``
    writes a tensor for the scalars plugin instead, float64 with ``double_precision``.

    Example::

        >>> scalar("loss", ember.tensor(0.25)).value[0].simple_value
        0.25
    """
    array = make_np(value).squeeze()
    if array.ndim != 0:
        raise AssertionError("Tensor should contain one element (0 dimensions). "
                             f"Was given size: {array.size} and {array.ndim} dimensions.")
    number = float(array)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=number)])
    if double_precision:
        proto = TensorProto(double_val=[number], dtype="DT_DOUBLE")
    else:
        proto = TensorProto(float_val=[number], dtype="DT_FLOAT")
    return Summary(value=[Summary.Value(tag=name, tensor=proto,
                                        metadata=_plugin_metadata("scalars"))])


# ------------------------------------------------------------------------------- histograms

def histogram(name, values, bins, max_bins=None):
    """A histogram summary of ``values`` counted into ``bins`` (anything ``np.histogram``
    accepts: a count, edges, or a rule name such as ``"auto"``).

    Example::

        >>> histogram("w", np.arange(10.0), bins=5).value[0].histo.num
        10.0
    """
    array = make_np(values).astype(float)
    return Summary(value=[Summary.Value(tag=name, histo=make_histogram(array, bins, max_bins))])


def make_histogram(values, bins, max_bins=None):
    """The ``HistogramProto`` of ``values``: min, max, count, sum, sum of squares, and the
    buckets from the one before the first non-empty bucket to the last non-empty one, each
    given by its right edge (``max_bins`` merges neighbouring buckets to fit).

    Example::

        >>> make_histogram(np.array([0.5, 1.5]), bins=[0, 1, 2, 3]).bucket
        [0.0, 1.0, 1.0]
    """
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, edges = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        counts, edges = _merge_buckets(counts, edges, len(counts) // max_bins)
    occupied = np.flatnonzero(counts)
    if occupied.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    first, last = int(occupied[0]), int(occupied[-1])
    # TensorBoard draws a bucket from the previous right edge: lead with an empty bucket
    # whose right edge is where the data starts
    bucket_counts = np.concatenate([[0], counts[first:last + 1]])
    bucket_limits = edges[first:last + 2]
    return HistogramProto(min=values.min(), max=values.max(), num=len(values),
                          sum=values.sum(), sum_squares=values.dot(values),
                          bucket_limit=bucket_limits.tolist(), bucket=bucket_counts.tolist())


def _merge_buckets(counts, edges, group):
    """Sum each ``group`` neighbouring buckets (zero-padding the last group)."""
    padding = (-len(counts)) % group
    counts = np.pad(counts, (0, padding)).reshape(-1, group).sum(axis=-1)
    merged_edges = np.empty(counts.size + 1, edges.dtype)
    merged_edges[:-1] = edges[:-1:group]
    merged_edges[-1] = edges[-1]
    return counts, merged_edges


def histogram_raw(name, min, max, num, sum, sum_squares, bucket_limits, bucket_counts):
    """A histogram summary from numbers already computed (see :func:`make_histogram`).

    Example::

        >>> histogram_raw("h", 0, 2, 2, 2, 2, [1, 2], [1, 1]).value[0].histo.bucket
        [1.0, 1.0]
    """
    proto = HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares,
                           bucket_limit=bucket_limits, bucket=bucket_counts)
    return Summary(value=[Summary.Value(tag=name, histo=proto)])


# ----------------------------------------------------------------------------------- images

def image(tag, tensor, rescale=1, dataformats="NCHW"):
    """An image summary: uint8 pixels as they are, floats read as [0, 1]; a batch (``N`` in
    ``dataformats``) is tiled into a grid of 8 per row; encoded as PNG.

    Example::

        >>> image("img", np.zeros((3, 8, 8)), dataformats="CHW").value[0].image.width
        8
    """
    pixels = to_uint8_pixels(convert_to_HWC(make_np(tensor), dataformats))
    return Summary(value=[Summary.Value(tag=tag, image=make_image(pixels, rescale))])


def image_boxes(tag, tensor_image, tensor_boxes, rescale=1, dataformats="CHW", labels=None):
    """An image summary with boxes (N x 4: xmin, ymin, xmax, ymax, in pixels) drawn in red,
    each with its label if ``labels`` is given.

    Example::

        >>> boxes = np.array([[1, 1, 5, 5]])
        >>> image_boxes("det", np.zeros((3, 8, 8)), boxes).value[0].image.height
        8
    """
    pixels = to_uint8_pixels(convert_to_HWC(make_np(tensor_image), dataformats))
    return Summary(value=[Summary.Value(tag=tag, image=make_image(
        pixels, rescale, rois=make_np(tensor_boxes), labels=labels))])


def make_image(pixels_hwc, rescale=1, rois=None, labels=None):
    """The ``Summary.Image`` of an H x W x C uint8 array, with boxes ``rois`` drawn if given
    (height and width before ``rescale``, as torch records them).

    Example::

        >>> make_image(np.zeros((2, 3, 3), np.uint8)).height
        2
    """
    height, width, channels = pixels_hwc.shape
    return Summary.Image(height=height, width=width, colorspace=channels,
                         encoded_image_string=encode_png(pixels_hwc, rescale, rois, labels))


def video(tag, tensor, fps=4):
    """A video summary: B x T x C x H x W (uint8, or floats in [0, 1]), the B videos tiled
    in one animated GIF that TensorBoard's image dashboard plays.

    Example::

        >>> video("clip", np.zeros((1, 4, 3, 8, 8)), fps=2).value[0].image.width
        8
    """
    frames = to_uint8_pixels(video_frames(make_np(tensor)))
    _, height, width, channels = frames.shape
    clip = Summary.Image(height=height, width=width, colorspace=channels,
                         encoded_image_string=encode_gif(frames, fps))
    return Summary(value=[Summary.Value(tag=tag, image=clip)])


# ------------------------------------------------------------------------------------- text

def text(tag, text):
    """A text summary (Markdown in TensorBoard), under the tag ``<tag>/text_summary``.

    Example::

        >>> text("notes", "hello").value[0].tag
        'notes/text_summary'
    """
    metadata = _plugin_metadata("text", TextPluginData(version=0).SerializeToString())
    proto = TensorProto(dtype="DT_STRING", string_val=[text.encode("utf_8")],
                        tensor_shape=_shape_proto([1]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=metadata,
                                        tensor=proto)])


# ------------------------------------------------------------------------------------- audio

def audio(tag, tensor, sample_rate=44100):
    """A mono audio clip, values in [-1, 1] (clipped with a warning otherwise), as 16-bit WAV.

    Example::

        >>> audio("beep", np.zeros(100), sample_rate=8000).value[0].audio.length_frames
        100
    """
    samples = make_np(tensor).squeeze()
    if abs(samples).max() > 1:
        print("warning: audio amplitude out of range, auto clipped.")
        samples = samples.clip(-1, 1)
    if samples.ndim != 1:
        raise AssertionError("input tensor should be 1 dimensional.")
    pcm = (samples * np.iinfo(np.int16).max).astype("<i2")
    with io.BytesIO() as buffer:
        with wave.open(buffer, "wb") as wav:
            wav.setnchannels(1)
            wav.setsampwidth(2)
            wav.setframerate(sample_rate)
            wav.writeframes(pcm.tobytes())
        encoded = buffer.getvalue()
    clip = Summary.Audio(sample_rate=sample_rate, num_channels=1,
                         length_frames=pcm.shape[-1], encoded_audio_string=encoded,
                         content_type="audio/wav")
    return Summary(value=[Summary.Value(tag=tag, audio=clip)])


# ------------------------------------------------------------------------------------ tensor

def _half_bits(array):
    # float16 and bfloat16 arrays alike: their raw 16-bit patterns
    return np.ascontiguousarray(array).reshape(-1).view(np.uint16).tolist()


def _complex_parts(array):
    return np.stack([array.real, array.imag], axis=-1).reshape(-1).tolist()


def _flat_list(array):
    return array.reshape(-1).tolist()


# ember dtype name -> (TensorProto dtype, field, conversion of the NumPy array). The fields are
# those TensorBoard decodes (tensor_util.make_ndarray): float16 and bfloat16 as their 16-bit
# patterns, uint8 in int_val, where torch writes float32 bit patterns and uint32_val that read
# back wrong.
_TENSOR_FIELDS = {
    "float16": ("DT_HALF", "half_val", _half_bits),
    "bfloat16": ("DT_BFLOAT16", "half_val", _half_bits),
    "float32": ("DT_FLOAT", "float_val", _flat_list),
    "float64": ("DT_DOUBLE", "double_val", _flat_list),
    "int8": ("DT_INT8", "int_val", _flat_list),
    "uint8": ("DT_UINT8", "int_val", _flat_list),
    "int16": ("DT_INT16", "int_val", _flat_list),
    "int32": ("DT_INT32", "int_val", _flat_list),
    "int64": ("DT_INT64", "int64_val", _flat_list),
    "complex64": ("DT_COMPLEX64", "scomplex_val", _complex_parts),
    "complex128": ("DT_COMPLEX128", "dcomplex_val", _complex_parts),
    "bool": ("DT_BOOL", "bool_val", _flat_list),
}


def tensor_proto(tag, tensor):
    """A summary holding a whole tensor, for the generic ``tensor`` plugin.

    Example::

        >>> tensor_proto("t", ember.tensor([1.0, 2.0])).value[0].tensor.float_val
        [1.0, 2.0]
    """
    dtype_name = str(tensor.dtype).rsplit(".", 1)[-1]
    if tensor.numel() * tensor.itemsize >= 1 << 31:
        raise ValueError("tensor is bigger than protocol buffer's hard limit of 2GB in size")
    if dtype_name not in _TENSOR_FIELDS:
        raise ValueError(f"{tag} has unsupported tensor dtype {tensor.dtype}")
    proto_dtype, field, convert = _TENSOR_FIELDS[dtype_name]
    values = tensor.detach().cpu().numpy()
    proto = TensorProto(dtype=proto_dtype, tensor_shape=_shape_proto(tensor.shape),
                        **{field: convert(values)})
    return Summary(value=[Summary.Value(tag=tag, metadata=_plugin_metadata("tensor"),
                                        tensor=proto)])


# --------------------------------------------------------------------------------- PR curves

def compute_curve(labels, predictions, num_thresholds=None, weights=None):
    """The 6 x ``num_thresholds`` array of true/false positive and true/false negative counts,
    precision and recall, at thresholds evenly spaced over [0, 1].

    Example::

        >>> compute_curve(np.array([1, 0]), np.array([0.9, 0.2]), num_thresholds=3)[0]
        array([1., 1., 0.])
    """
    smallest_count = 1e-7  # keeps precision and recall finite where nothing was predicted
    weights = 1.0 if weights is None else weights
    thresholds = np.int32(np.floor(predictions * (num_thresholds - 1)))
    positive = labels.astype(np.float64)

    def counts_at_or_above(weight):
        per_bucket, _ = np.histogram(thresholds, bins=num_thresholds,
                                     range=(0, num_thresholds - 1), weights=weight)
        return np.cumsum(per_bucket[::-1])[::-1]

    true_pos = counts_at_or_above(positive * weights)
    false_pos = counts_at_or_above((1.0 - positive) * weights)
    true_neg = false_pos[0] - false_pos
    false_neg = true_pos[0] - true_pos
    precision = true_pos / np.maximum(smallest_count, true_pos + false_pos)
    recall = true_pos / np.maximum(smallest_count, true_pos + false_neg)
    return np.stack((true_pos, false_pos, true_neg, false_neg, precision, recall))


def _pr_curve_summary(tag, data, num_thresholds):
    content = PrCurvePluginData(version=0, num_thresholds=num_thresholds).SerializeToString()
    proto = TensorProto(dtype="DT_FLOAT", float_val=data.reshape(-1).tolist(),
                        tensor_shape=_shape_proto(data.shape[:2]))
    return Summary(value=[Summary.Value(tag=tag, metadata=_plugin_metadata("pr_curves", content),
                                        tensor=proto)])


def pr_curve(tag, labels, predictions, num_thresholds=127, weights=None):
    """A precision-recall curve of binary ``labels`` against ``predictions`` in [0, 1]
    (at most 127 thresholds, TensorBoard's limit).

    Example::

        >>> pr_curve("pr", np.array([1, 0]), np.array([0.9, 0.2])).value[0].tag
        'pr'
    """
    num_thresholds = min(num_thresholds, 127)
    data = compute_curve(labels, predictions, num_thresholds=num_thresholds, weights=weights)
    return _pr_curve_summary(tag, data, num_thresholds)


def pr_curve_raw(tag, tp, fp, tn, fn, precision, recall, num_thresholds=127, weights=None):
    """A precision-recall curve from counts already computed (see :func:`compute_curve`).

    Example::

        >>> pr_curve_raw("pr", *np.zeros((6, 3)), num_thresholds=3).value[0].tag
        'pr'
    """
    num_thresholds = min(num_thresholds, 127)
    data = np.stack((tp, fp, tn, fn, precision, recall))
    return _pr_curve_summary(tag, data, num_thresholds)


# ---------------------------------------------------------------------------- custom scalars

def custom_scalars(layout):
    """The layout of the custom-scalars dashboard: ``{category: {chart title: ["Multiline",
    [tags]] or ["Margin", [value, lower, upper]]}}``.

    Example::

        >>> custom_scalars({"loss": {"both": ["Multiline", ["train", "val"]]}}).value[0].tag
        'custom_scalars__config__'
    """
    categories = [layout_pb2.Category(title=title, chart=[_chart(name, spec)
                                                          for name, spec in charts.items()])
                  for title, charts in layout.items()]
    serialized = layout_pb2.Layout(category=categories).SerializeToString()
    proto = TensorProto(dtype="DT_STRING", string_val=[serialized],
                        tensor_shape=TensorShapeProto())
    return Summary(value=[Summary.Value(tag="custom_scalars__config__", tensor=proto,
                                        metadata=_plugin_metadata("custom_scalars"))])


def _chart(title, spec):
    kind, tags = spec[0], spec[1]
    if kind == "Margin":
        if len(tags) != 3:
            raise AssertionError("len(tags) != 3")
        series = layout_pb2.MarginChartContent.Series(value=tags[0], lower=tags[1],
                                                      upper=tags[2])
        return layout_pb2.Chart(title=title,
                                margin=layout_pb2.MarginChartContent(series=[series]))
    return layout_pb2.Chart(title=title, multiline=layout_pb2.MultilineChartContent(tag=tags))


# ---------------------------------------------------------------------------------- hparams

def hparams(hparam_dict=None, metric_dict=None, hparam_domain_discrete=None):
    """The three summaries of the hparams plugin for one run: the experiment (which
    hyperparameters and metrics exist), the session start (this run's values) and its end.

    Example::

        >>> experiment, start, end = hparams({"lr": 0.1}, {"hparam/accuracy": 0.9})
        >>> start.value[0].tag
        '_hparams_/session_start_info'
    """
    from tensorboard.plugins.hparams import metadata
    from tensorboard.plugins.hparams.api_pb2 import Experiment, MetricInfo, MetricName, Status
    from tensorboard.plugins.hparams.plugin_data_pb2 import (
        HParamsPluginData,
        SessionEndInfo,
        SessionStartInfo,
    )

    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    domains = hparam_domain_discrete or {}
    _check_domains(hparam_dict, domains)

    start_info = SessionStartInfo()
    infos = [_record_hparam(start_info, name, value, domains.get(name))
             for name, value in hparam_dict.items() if value is not None]
    experiment = Experiment(hparam_infos=infos,
                            metric_infos=[MetricInfo(name=MetricName(tag=name))
                                          for name in metric_dict])
    end_info = SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))

    def summary(tag, **part):
        content = HParamsPluginData(version=metadata.PLUGIN_DATA_VERSION, **part)
        plugin = _plugin_metadata(metadata.PLUGIN_NAME, content.SerializeToString())
        return Summary(value=[Summary.Value(tag=tag, metadata=plugin)])

    return (summary(metadata.EXPERIMENT_TAG, experiment=experiment),
            summary(metadata.SESSION_START_INFO_TAG, session_start_info=start_info),
            summary(metadata.SESSION_END_INFO_TAG, session_end_info=end_info))


def _check_domains(hparam_dict, domains):
    if not isinstance(domains, dict):
        raise TypeError(
            "parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for name, choices in domains.items():
        if (name not in hparam_dict or not isinstance(choices, list)
                or not all(isinstance(c, type(hparam_dict[name])) for c in choices)):
            raise TypeError(f"parameter: hparam_domain_discrete[{name}] should be a list of "
                            f"same type as hparam_dict[{name}].")


def _record_hparam(start_info, name, value, choices):
    """Store ``value`` in ``start_info`` and return the ``HParamInfo`` describing it."""
    from tensorboard.plugins.hparams.api_pb2 import HParamInfo

    # bool is an int: as in torch, True and False are logged as the numbers 1 and 0
    if isinstance(value, (int, float)):
        start_info.hparams[name].number_value = value
        kind, field = "DATA_TYPE_FLOAT64", "number_value"
    elif isinstance(value, str):
        start_info.hparams[name].string_value = value
        kind, field = "DATA_TYPE_STRING", "string_value"
    elif isinstance(value, Tensor):
        start_info.hparams[name].number_value = make_np(value).reshape(-1)[0]
        return HParamInfo(name=name, type=_data_type("DATA_TYPE_FLOAT64"))
    else:
        raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
    domain = None
    if choices is not None:
        domain = struct_pb2.ListValue(values=[struct_pb2.Value(**{field: c}) for c in choices])
    return HParamInfo(name=name, type=_data_type(kind), domain_discrete=domain)


def _data_type(name):
    from tensorboard.plugins.hparams.api_pb2 import DataType

    return DataType.Value(name)


# ------------------------------------------------------------------------------------- mesh

def mesh(tag, vertices, colors, faces, config_dict, display_name=None, description=None):
    """A 3-D mesh or point cloud: ``vertices`` (B x N x 3 floats), optional ``colors``
    (B x N x 3, 0-255) and ``faces`` (B x F x 3 vertex indices), one summary value each.

    Example::

        >>> len(mesh("m", np.zeros((1, 4, 3)), None, None, None).value)
        1
    """
    from tensorboard.plugins.mesh import metadata
    from tensorboard.plugins.mesh.plugin_data_pb2 import MeshPluginData

    config_json = "{}" if config_dict is None else json.dumps(config_dict, sort_keys=True)
    parts = [(array, kind) for array, kind in ((vertices, MeshPluginData.VERTEX),
                                               (faces, MeshPluginData.FACE),
                                               (colors, MeshPluginData.COLOR))
             if array is not None]
    components = metadata.get_components_bitmask([kind for _, kind in parts])
    values = []
    for array, kind in parts:
        array = np.asarray(make_np(array))
        if array.ndim != 3:
            raise ValueError(f"mesh data must be 3-dimensional (batch, points, 3), "
                             f"got shape {tuple(array.shape)}")
        plugin = metadata.create_summary_metadata(tag, display_name, kind, components,
                                                  array.shape, description,
                                                  json_config=config_json)
        proto = TensorProto(dtype="DT_FLOAT", float_val=array.reshape(-1).tolist(),
                            tensor_shape=_shape_proto(array.shape))
        values.append(Summary.Value(tag=metadata.get_instance_name(tag, kind), tensor=proto,
                                    metadata=plugin))
    return Summary(value=values)
