"""ember.utils.tensorboard.SummaryWriter against torch.utils.tensorboard.SummaryWriter.

Each test makes the same calls on an ember writer and a torch writer (tensors built from the
same NumPy data), reads both log directories back with TensorBoard's own EventAccumulator,
and compares what TensorBoard would show: tags, steps, values, histogram buckets, encoded
image bytes, text, plugin data, and the projector's files.
"""

import dataclasses
import io
import math
import os
import re
import socket
import sys

import numpy as np
import pytest

pytest.importorskip("tensorboard")
pytest.importorskip("PIL")

import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from tensorboard.backend.event_processing import event_accumulator  # noqa: E402
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader  # noqa: E402
from tensorboard.plugins.custom_scalar import layout_pb2  # noqa: E402
from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402
from torch.utils.tensorboard import SummaryWriter as TorchWriter  # noqa: E402

import ember  # noqa: E402
import ember.utils.tensorboard as ember_tensorboard  # noqa: E402
from ember.utils.tensorboard import SummaryWriter as EmberWriter  # noqa: E402

LIBRARIES = {"ember": (ember, EmberWriter), "torch": (torch, TorchWriter)}
EVERYTHING = {kind: 0 for kind in event_accumulator.DEFAULT_SIZE_GUIDANCE}


def as_tensor(lib, array):
    """The same NumPy data as an ember or a torch tensor."""
    return lib.from_numpy(np.array(array, copy=True))


def log_both(tmp_path, calls, **writer_kwargs):
    """Run ``calls(writer, lib)`` with each library's writer; return their log dirs."""
    dirs = {}
    for name, (lib, writer_class) in LIBRARIES.items():
        dirs[name] = str(tmp_path / name)
        with writer_class(dirs[name], **writer_kwargs) as writer:
            calls(writer, lib)
    return dirs


def accumulate(log_dir):
    return event_accumulator.EventAccumulator(log_dir, size_guidance=EVERYTHING).Reload()


def accumulate_both(tmp_path, calls, **writer_kwargs):
    dirs = log_both(tmp_path, calls, **writer_kwargs)
    return accumulate(dirs["ember"]), accumulate(dirs["torch"])


def events(log_dir):
    """Every event in the (single) event file of ``log_dir``, in order."""
    (name,) = [f for f in os.listdir(log_dir) if f.startswith("events.out.tfevents.")]
    return list(EventFileLoader(os.path.join(log_dir, name)).Load())


def without_wall_time(points):
    return [dataclasses.replace(point, wall_time=0) for point in points]


def tensors_as_arrays(acc, tag):
    return [(e.step, tensor_util.make_ndarray(e.tensor_proto)) for e in acc.Tensors(tag)]


def assert_same_tensors(ember_acc, torch_acc, tag):
    ours, theirs = tensors_as_arrays(ember_acc, tag), tensors_as_arrays(torch_acc, tag)
    assert [step for step, _ in ours] == [step for step, _ in theirs]
    for (_, mine), (_, reference) in zip(ours, theirs):
        assert mine.dtype == reference.dtype
        np.testing.assert_array_equal(mine, reference)


def relative_files(root):
    return sorted(os.path.relpath(os.path.join(folder, f), root)
                  for folder, _, files in os.walk(root) for f in files)


# ----------------------------------------------------------------------- files and life cycle

EVENT_FILE = re.compile(r"events\.out\.tfevents\.\d{10}\.(?P<host>.+)\.(?P<pid>\d+)\.\d+(?P<rest>.*)")


@pytest.mark.parametrize("suffix", ["", ".v2"])
def test_event_file_named_as_torch(tmp_path, suffix):
    dirs = log_both(tmp_path, lambda w, lib: w.add_scalar("x", 1.0), filename_suffix=suffix)
    for log_dir in dirs.values():
        (name,) = os.listdir(log_dir)
        match = EVENT_FILE.fullmatch(name)
        assert match, name
        assert (match["host"], int(match["pid"]), match["rest"]) == (
            socket.gethostname(), os.getpid(), suffix)


def test_default_log_dir_uses_time_hostname_and_comment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ours = EmberWriter(comment="_lr0.1")
    theirs = TorchWriter(comment="_lr0.1")
    ours.close()
    theirs.close()
    pattern = re.compile(r"runs/[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_" + re.escape(socket.gethostname())
                         + r"_lr0\.1")
    assert pattern.fullmatch(ours.get_logdir()) and pattern.fullmatch(theirs.get_logdir())
    assert os.path.isdir(ours.get_logdir())


def test_get_logdir_returns_the_given_path(tmp_path):
    with EmberWriter(str(tmp_path / "run")) as ours, TorchWriter(str(tmp_path / "run2")) as theirs:
        assert ours.get_logdir() == str(tmp_path / "run")
        assert theirs.get_logdir() == str(tmp_path / "run2")


def test_close_is_idempotent_and_logging_after_close_opens_a_new_file(tmp_path):
    counts = {}
    for name, (_, writer_class) in LIBRARIES.items():
        writer = writer_class(str(tmp_path / name))
        writer.add_scalar("a", 1.0, 0)
        writer.close()
        writer.close()
        writer.add_scalar("a", 2.0, 1)
        writer.flush()
        writer.close()
        counts[name] = len(os.listdir(tmp_path / name))
    assert counts["ember"] == counts["torch"] == 2
    ours, theirs = accumulate(str(tmp_path / "ember")), accumulate(str(tmp_path / "torch"))
    assert without_wall_time(ours.Scalars("a")) == without_wall_time(theirs.Scalars("a"))


def test_flush_writes_pending_events(tmp_path):
    writer = EmberWriter(str(tmp_path), flush_secs=10_000)
    writer.add_scalar("loss", 0.5, 3)
    writer.flush()
    assert [(e.step, e.value) for e in accumulate(str(tmp_path)).Scalars("loss")] == [(3, 0.5)]
    writer.close()


def test_purge_step_writes_the_same_restart_events(tmp_path):
    dirs = log_both(tmp_path, lambda w, lib: w.add_scalar("x", 1.0, 7), purge_step=5)

    def shape(log_dir):
        return [(e.step, e.file_version, e.session_log.status, e.WhichOneof("what"))
                for e in events(log_dir)]

    assert shape(dirs["ember"]) == shape(dirs["torch"])
    assert shape(dirs["ember"])[1:3] == [(5, "brain.Event:2", 0, "file_version"),
                                         (5, "", 1, "session_log")]


def test_missing_tensorboard_raises_import_error_as_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    with pytest.raises(ImportError, match="TensorBoard logging requires TensorBoard version 1.15"):
        ember_tensorboard._require_tensorboard()


def test_missing_pillow_raises_a_clear_import_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    with EmberWriter(str(tmp_path)) as writer, pytest.raises(ImportError, match="Pillow"):
        writer.add_image("img", np.zeros((3, 4, 4)))


# ----------------------------------------------------------------------------------- scalars

def test_scalars_from_numbers_arrays_and_tensors(tmp_path):
    values = [0.5, 3, np.float32(1.25), np.array([2.5]), np.array(-1.0, dtype=np.float64)]

    def calls(writer, lib):
        for step, value in enumerate(values):
            writer.add_scalar("plain", value, step)
        writer.add_scalar("tensor", as_tensor(lib, np.float32(0.1)), 10)
        writer.add_scalar("tensor", as_tensor(lib, np.array([[0.7]], np.float64)), 11)
        writer.add_scalar("tensor", lib.ones((), dtype=lib.bfloat16) * 3, 12)
        writer.add_scalar("walltime", 1.0, 0, walltime=1234.5)

    ours, theirs = accumulate_both(tmp_path, calls)
    assert ours.Tags()["scalars"] == theirs.Tags()["scalars"]
    for tag in ("plain", "tensor"):
        assert without_wall_time(ours.Scalars(tag)) == without_wall_time(theirs.Scalars(tag))
    assert ours.Scalars("walltime")[0].wall_time == theirs.Scalars("walltime")[0].wall_time == 1234.5


@pytest.mark.parametrize("double_precision", [False, True])
def test_new_style_scalars(tmp_path, double_precision):
    def calls(writer, lib):
        writer.add_scalar("x", as_tensor(lib, np.float64(1 / 3)), 1, new_style=True,
                          double_precision=double_precision)

    ours, theirs = accumulate_both(tmp_path, calls)
    assert_same_tensors(ours, theirs, "x")
    assert ours.SummaryMetadata("x") == theirs.SummaryMetadata("x")


def test_scalar_with_several_elements_raises_as_torch(tmp_path):
    for lib, writer_class in LIBRARIES.values():
        with writer_class(str(tmp_path / lib.__name__)) as writer:
            with pytest.raises(AssertionError, match="one element"):
                writer.add_scalar("x", as_tensor(lib, np.ones(2)))
            with pytest.raises(NotImplementedError, match="numpy array or torch tensor"):
                writer.add_scalar("x", [1.0])


def test_add_scalars_writes_one_run_per_series(tmp_path):
    def calls(writer, lib):
        for step in range(3):
            writer.add_scalars("loss/all", {"train": 1.0 / (step + 1),
                                            "val": as_tensor(lib, np.float32(step))}, step)

    dirs = log_both(tmp_path, calls)
    series = sorted(os.listdir(dirs["ember"]))
    assert [s for s in series if not s.startswith("events")] == ["loss_all_train", "loss_all_val"]
    assert [s.startswith("events") for s in series] == [
        s.startswith("events") for s in sorted(os.listdir(dirs["torch"]))]
    for run in ("loss_all_train", "loss_all_val"):
        ours = accumulate(os.path.join(dirs["ember"], run)).Scalars("loss/all")
        theirs = accumulate(os.path.join(dirs["torch"], run)).Scalars("loss/all")
        assert without_wall_time(ours) == without_wall_time(theirs)
        assert len({e.wall_time for e in ours}) == 3


# -------------------------------------------------------------------------------- histograms

@pytest.mark.parametrize("bins", ["tensorflow", "auto", "fd", 7, [-3.0, -1.0, 0.0, 0.5, 4.0]])
def test_histogram_buckets_match_torch(tmp_path, bins):
    data = np.random.default_rng(0).normal(size=(50, 20)).astype(np.float32)

    def calls(writer, lib):
        writer.add_histogram("weights", as_tensor(lib, data), 0, bins=bins)
        writer.add_histogram("weights", data * 3 + 1, 1, bins=bins)

    ours, theirs = accumulate_both(tmp_path, calls)
    assert without_wall_time(ours.Histograms("weights")) == without_wall_time(
        theirs.Histograms("weights"))


def test_histogram_of_integers_bfloat16_and_max_bins(tmp_path):
    integers = np.arange(-20, 60) % 13

    def calls(writer, lib):
        writer.add_histogram("ints", as_tensor(lib, integers), 0)
        writer.add_histogram("bf16", as_tensor(lib, np.linspace(-2, 2, 33)).to(lib.bfloat16), 0)
        writer.add_histogram("merged", as_tensor(lib, np.linspace(0, 1, 101)), 0, bins=30,
                             max_bins=7)

    ours, theirs = accumulate_both(tmp_path, calls)
    for tag in ("ints", "bf16", "merged"):
        assert without_wall_time(ours.Histograms(tag)) == without_wall_time(theirs.Histograms(tag))


def test_histogram_of_nothing_raises_value_error(tmp_path):
    for lib, writer_class in LIBRARIES.values():
        with writer_class(str(tmp_path / lib.__name__)) as writer:
            with pytest.raises(ValueError, match="no element"):
                writer.add_histogram("empty", as_tensor(lib, np.zeros(0)))


def test_histogram_raw(tmp_path):
    def calls(writer, lib):
        writer.add_histogram_raw("raw", min=0.0, max=4.0, num=6, sum=10.0, sum_squares=24.0,
                                 bucket_limits=[1.0, 2.0, 4.0], bucket_counts=[1, 2, 3],
                                 global_step=2)

    ours, theirs = accumulate_both(tmp_path, calls)
    assert without_wall_time(ours.Histograms("raw")) == without_wall_time(theirs.Histograms("raw"))
    for lib, writer_class in LIBRARIES.values():
        with writer_class(str(tmp_path / lib.__name__)) as writer:
            with pytest.raises(ValueError, match=re.escape("len(bucket_limits) != len(bucket_counts)")):
                writer.add_histogram_raw("raw", 0, 1, 1, 1, 1, [1.0], [1, 2])


# ------------------------------------------------------------------------------------ images

def test_images_in_every_layout(tmp_path):
    rng = np.random.default_rng(1)
    chw = rng.random((3, 9, 7), dtype=np.float32)
    hwc_uint8 = rng.integers(0, 256, (5, 6, 3), dtype=np.uint8)
    grey_hw = rng.random((4, 8)) * 1.5 - 0.2  # outside [0, 1]: clipped
    one_channel = rng.random((1, 6, 6), dtype=np.float32)
    rgba_hwc = rng.integers(0, 256, (4, 4, 4), dtype=np.uint8)

    def calls(writer, lib):
        writer.add_image("chw", as_tensor(lib, chw), 0)
        writer.add_image("hwc", as_tensor(lib, hwc_uint8), 1, dataformats="HWC")
        writer.add_image("hw", grey_hw, 2, dataformats="HW")
        writer.add_image("grey", as_tensor(lib, one_channel), 3)
        writer.add_image("rgba", rgba_hwc, 4, dataformats="HWC")

    ours, theirs = accumulate_both(tmp_path, calls)
    assert sorted(ours.Tags()["images"]) == sorted(theirs.Tags()["images"]) == [
        "chw", "grey", "hw", "hwc", "rgba"]
    for tag in ours.Tags()["images"]:
        assert without_wall_time(ours.Images(tag)) == without_wall_time(theirs.Images(tag))
    assert (ours.Images("chw")[0].width, ours.Images("chw")[0].height) == (7, 9)


@pytest.mark.parametrize("count,layout", [(10, "NCHW"), (3, "NHWC"), (8, "NCHW")])
def test_add_images_tiles_a_grid(tmp_path, count, layout):
    batch = np.random.default_rng(2).random((count, 3, 5, 4), dtype=np.float32)
    if layout == "NHWC":
        batch = batch.transpose(0, 2, 3, 1).copy()

    def calls(writer, lib):
        writer.add_images("batch", as_tensor(lib, batch), 0, dataformats=layout)

    ours, theirs = accumulate_both(tmp_path, calls)
    assert without_wall_time(ours.Images("batch")) == without_wall_time(theirs.Images("batch"))
    columns = min(count, 8)
    assert ours.Images("batch")[0].width == columns * 4
    assert ours.Images("batch")[0].height == math.ceil(count / columns) * 5


def test_image_with_boxes_and_labels(tmp_path):
    picture = np.random.default_rng(3).random((3, 40, 50), dtype=np.float32)
    boxes = np.array([[2, 3, 20, 30], [10, 5, 45, 35]], dtype=np.float32)

    def calls(writer, lib):
        writer.add_image_with_boxes("boxes", as_tensor(lib, picture), as_tensor(lib, boxes), 0,
                                    labels=["cat", "dog"])
        writer.add_image_with_boxes("unlabelled", as_tensor(lib, picture),
                                    as_tensor(lib, boxes[:1]), 0, rescale=2, labels="x")

    ours, theirs = accumulate_both(tmp_path, calls)
    for tag in ("boxes", "unlabelled"):
        assert without_wall_time(ours.Images(tag)) == without_wall_time(theirs.Images(tag))


def test_image_layout_errors_as_torch(tmp_path):
    for lib, writer_class in LIBRARIES.values():
        with writer_class(str(tmp_path / lib.__name__)) as writer:
            with pytest.raises(AssertionError, match="size of input tensor and input format"):
                writer.add_image("bad", as_tensor(lib, np.zeros((3, 4))))
            with pytest.raises(AssertionError, match="same dimension shorthand twice"):
                writer.add_image("bad", as_tensor(lib, np.zeros((3, 4, 4))), dataformats="CHH")


def small_figure(shift):
    figure = Figure(figsize=(2, 1.5), dpi=40)
    figure.add_subplot().plot([0, 1, 2], [shift, 2 + shift, 1])
    return figure


def test_add_figure_renders_like_torch(tmp_path):
    def calls(writer, lib):
        writer.add_figure("one", small_figure(0), 0)
        writer.add_figure("many", [small_figure(0), small_figure(1)], 1, close=False)

    ours, theirs = accumulate_both(tmp_path, calls)
    for tag in ("one", "many"):
        assert without_wall_time(ours.Images(tag)) == without_wall_time(theirs.Images(tag))
    assert (ours.Images("one")[0].width, ours.Images("one")[0].height) == (80, 60)


@pytest.mark.parametrize("batch", [1, 3, 4, 5])
def test_video_frames_tile_as_torch(batch):
    from torch.utils.tensorboard._utils import _prepare_video

    from ember.utils.tensorboard._images import video_frames

    clips = np.random.default_rng(8).integers(0, 256, (batch, 4, 3, 5, 6), dtype=np.uint8)
    np.testing.assert_array_equal(video_frames(clips), _prepare_video(clips))
    floats = clips / 255.0
    np.testing.assert_array_equal(video_frames(floats), _prepare_video(floats))


def test_add_video_writes_an_animated_gif(tmp_path):
    from PIL import Image

    from ember.utils.tensorboard._images import video_frames

    # black and white pixels only, so that the GIF's palette keeps them exactly
    clips = np.random.default_rng(9).integers(0, 2, (2, 3, 3, 4, 5)).astype(np.float32)
    with EmberWriter(str(tmp_path)) as writer:
        writer.add_video("clip", ember.from_numpy(clips), 1, fps=5)
    (event,) = accumulate(str(tmp_path)).Images("clip")
    expected = (video_frames(clips) * 255).astype(np.uint8)
    assert (event.step, event.height, event.width) == (1, 4, 10)
    gif = Image.open(io.BytesIO(event.encoded_image_string))
    assert (gif.format, gif.n_frames, gif.info["duration"]) == ("GIF", 3, 200)
    for index in range(3):
        gif.seek(index)
        np.testing.assert_array_equal(np.asarray(gif.convert("RGB")), expected[index])


# ------------------------------------------------------------------------------ text, audio

def test_text(tmp_path):
    def calls(writer, lib):
        writer.add_text("notes", "lr **0.1**", 0)
        writer.add_text("notes", "naïve — unicode", 1)

    ours, theirs = accumulate_both(tmp_path, calls)
    assert ours.Tags()["tensors"] == theirs.Tags()["tensors"] == ["notes/text_summary"]
    assert_same_tensors(ours, theirs, "notes/text_summary")
    assert ours.SummaryMetadata("notes/text_summary") == theirs.SummaryMetadata("notes/text_summary")
    assert tensors_as_arrays(ours, "notes/text_summary")[1][1][0].decode() == "naïve — unicode"


def test_audio(tmp_path):
    wave = np.sin(np.arange(400) * 0.3) * 0.8

    def calls(writer, lib):
        writer.add_audio("tone", as_tensor(lib, wave), 0, sample_rate=8000)

    ours, theirs = accumulate_both(tmp_path, calls)
    assert without_wall_time(ours.Audio("tone")) == without_wall_time(theirs.Audio("tone"))


# ---------------------------------------------------------------------------------- tensors

@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "int16", "bool",
                                   "complex64"])
def test_add_tensor(tmp_path, dtype):
    values = (np.arange(6).reshape(2, 3) % 4).astype(dtype)

    def calls(writer, lib):
        writer.add_tensor("t", as_tensor(lib, values), 5)

    ours, theirs = accumulate_both(tmp_path, calls)
    assert_same_tensors(ours, theirs, "t")


@pytest.mark.parametrize("dtype", ["float16", "uint8"])
def test_add_tensor_where_torch_writes_undecodable_fields(tmp_path, dtype):
    # torch writes float16 values as float32 bit patterns and uint8 ones in uint32_val, which
    # TensorBoard's decoder reads back wrong; ember writes the fields the decoder expects
    values = np.array([[0.5, 2.0, 255.0], [1.0, 3.0, 65.0]], dtype=dtype)
    with EmberWriter(str(tmp_path)) as writer:
        writer.add_tensor("t", ember.from_numpy(values.copy()))
    (event,) = accumulate(str(tmp_path)).Tensors("t")
    decoded = tensor_util.make_ndarray(event.tensor_proto)
    assert decoded.dtype == values.dtype
    np.testing.assert_array_equal(decoded, values)
    with TorchWriter(str(tmp_path / "torch")) as writer:
        writer.add_tensor("t", torch.from_numpy(values.copy()))
    (reference,) = accumulate(str(tmp_path / "torch")).Tensors("t")
    assert reference.tensor_proto.dtype == event.tensor_proto.dtype
    assert reference.tensor_proto.tensor_shape == event.tensor_proto.tensor_shape


def test_add_tensor_bfloat16_writes_its_bit_patterns(tmp_path):
    values = ember.tensor([0.5, -2.25, 3.0e38, 1.0e-3]).to(ember.bfloat16)
    with EmberWriter(str(tmp_path)) as writer:
        writer.add_tensor("bf16", values)
    (event,) = accumulate(str(tmp_path)).Tensors("bf16")
    assert event.tensor_proto.dtype == proto_dtype("DT_BFLOAT16")
    bits = torch.tensor(values.float().numpy()).to(torch.bfloat16).view(torch.int16)
    assert list(event.tensor_proto.half_val) == (bits.numpy().view(np.uint16)).tolist()


def proto_dtype(name):
    from tensorboard.compat.proto import types_pb2

    return types_pb2.DataType.Value(name)


# -------------------------------------------------------------------------------- PR curves

@pytest.mark.parametrize("num_thresholds", [127, 10, 300])
def test_pr_curve(tmp_path, num_thresholds):
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 2, 100)
    predictions = rng.random(100).astype(np.float32)
    weights = rng.random(100)

    def calls(writer, lib):
        writer.add_pr_curve("pr", as_tensor(lib, labels), as_tensor(lib, predictions), 0,
                            num_thresholds=num_thresholds)
        writer.add_pr_curve("pr", labels, predictions, 1, num_thresholds=num_thresholds,
                            weights=weights)

    ours, theirs = accumulate_both(tmp_path, calls)
    assert_same_tensors(ours, theirs, "pr")
    assert ours.SummaryMetadata("pr") == theirs.SummaryMetadata("pr")


def test_pr_curve_raw(tmp_path):
    counts = np.random.default_rng(5).random((6, 5))

    def calls(writer, lib):
        writer.add_pr_curve_raw("raw", *counts, global_step=3, num_thresholds=5)

    ours, theirs = accumulate_both(tmp_path, calls)
    assert_same_tensors(ours, theirs, "raw")


# ---------------------------------------------------------------------------- custom scalars

def test_custom_scalars_layouts(tmp_path):
    layout = {"Losses": {"both": ["Multiline", ["loss/train", "loss/val"]],
                         "band": ["Margin", ["acc", "acc_low", "acc_high"]]},
              "Other": {"lr": ["Multiline", ["lr"]]}}

    def calls(writer, lib):
        writer.add_custom_scalars(layout)
        writer.add_custom_scalars_multilinechart(["a", "b"], category="c", title="t")
        writer.add_custom_scalars_marginchart(["v", "lo", "hi"])

    ours, theirs = accumulate_both(tmp_path, calls)
    tag = "custom_scalars__config__"

    def layouts(acc):
        return [layout_pb2.Layout.FromString(e.tensor_proto.string_val[0])
                for e in acc.Tensors(tag)]

    assert layouts(ours) == layouts(theirs)
    assert len(layouts(ours)) == 3
    for lib, writer_class in LIBRARIES.values():
        with writer_class(str(tmp_path / lib.__name__)) as writer:
            with pytest.raises(AssertionError, match="Expected 3 tags, got 2"):
                writer.add_custom_scalars_marginchart(["v", "lo"])


# ---------------------------------------------------------------------------------- hparams

def test_hparams(tmp_path):
    def calls(writer, lib):
        writer.add_hparams({"lr": 0.1, "batch": 64, "optimizer": "sgd", "nesterov": True,
                            "skipped": None, "decay": as_tensor(lib, np.array([0.5]))},
                           {"hparam/accuracy": 0.93, "hparam/loss": 0.2},
                           hparam_domain_discrete={"optimizer": ["sgd", "adam"],
                                                   "batch": [32, 64]},
                           run_name="trial", global_step=4)

    dirs = log_both(tmp_path, calls)
    ours = accumulate(os.path.join(dirs["ember"], "trial"))
    theirs = accumulate(os.path.join(dirs["torch"], "trial"))

    def plugin_data(acc):
        return {tag: HParamsPluginData.FromString(content)
                for tag, content in acc.PluginTagToContent("hparams").items()}

    assert plugin_data(ours) == plugin_data(theirs)
    assert set(plugin_data(ours)) == {"_hparams_/experiment", "_hparams_/session_start_info",
                                      "_hparams_/session_end_info"}
    for metric in ("hparam/accuracy", "hparam/loss"):
        assert without_wall_time(ours.Scalars(metric)) == without_wall_time(theirs.Scalars(metric))


def test_hparams_bad_input_raises_as_torch(tmp_path):
    for lib, writer_class in LIBRARIES.values():
        with writer_class(str(tmp_path / lib.__name__)) as writer:
            with pytest.raises(TypeError, match="should be dictionary"):
                writer.add_hparams([("lr", 0.1)], {})
            with pytest.raises(TypeError, match=re.escape("hparam_domain_discrete[lr] should be a list")):
                writer.add_hparams({"lr": 0.1}, {}, hparam_domain_discrete={"lr": ["a"]})
            with pytest.raises(ValueError, match="value should be one of int, float, str, bool"):
                writer.add_hparams({"lr": [0.1]}, {})


# -------------------------------------------------------------------------------- embedding

def test_embedding_files_match_torch(tmp_path):
    rng = np.random.default_rng(6)
    features = rng.normal(size=(5, 3)).astype(np.float32)
    thumbnails = rng.random((5, 3, 4, 4), dtype=np.float32)

    def calls(writer, lib):
        writer.add_embedding(as_tensor(lib, features), metadata=["a", "b", "c", "d", "e"],
                             label_img=as_tensor(lib, thumbnails))
        writer.add_embedding(features, metadata=[[i, i % 2] for i in range(5)],
                             metadata_header=["index", "parity"], global_step=7, tag="with/slash")

    dirs = log_both(tmp_path, calls)
    names = [f for f in relative_files(dirs["ember"]) if not f.startswith("events")]
    assert names == [f for f in relative_files(dirs["torch"]) if not f.startswith("events")]
    assert "00007/with%2fslash/metadata.tsv" in names
    for name in names:
        with open(os.path.join(dirs["ember"], name), "rb") as mine, \
                open(os.path.join(dirs["torch"], name), "rb") as reference:
            assert mine.read() == reference.read(), name


def test_embedding_checks_as_torch(tmp_path):
    for lib, writer_class in LIBRARIES.values():
        with writer_class(str(tmp_path / lib.__name__)) as writer:
            with pytest.raises(AssertionError, match="#labels should equal with #data points"):
                writer.add_embedding(as_tensor(lib, np.zeros((3, 2))), metadata=["a"])
            with pytest.raises(AssertionError, match="mat should be 2D"):
                writer.add_embedding(as_tensor(lib, np.zeros((3, 2, 1))), global_step=1)


# ------------------------------------------------------------------------------------- mesh

def test_mesh(tmp_path):
    vertices = np.array([[[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]], dtype=np.float32)
    faces = np.array([[[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]]], dtype=np.int64)
    colors = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [9, 9, 9]]], dtype=np.uint8)

    def calls(writer, lib):
        writer.add_mesh("pyramid", as_tensor(lib, vertices), colors=as_tensor(lib, colors),
                        faces=as_tensor(lib, faces), config_dict={"camera": {"fov": 75}},
                        global_step=2)

    ours, theirs = accumulate_both(tmp_path, calls)
    assert sorted(ours.Tags()["tensors"]) == sorted(theirs.Tags()["tensors"])
    for tag in ours.Tags()["tensors"]:
        assert_same_tensors(ours, theirs, tag)
        assert ours.SummaryMetadata(tag) == theirs.SummaryMetadata(tag)


# ------------------------------------------------------------------------------------ graph

def sequential_model(lib):
    model = lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.ReLU(), lib.nn.Linear(3, 2))
    return model, ((5, 4),)


def two_input_model(lib):
    class TwoInputs(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = lib.nn.Sequential(lib.nn.Conv2d(1, 2, 3), lib.nn.BatchNorm2d(2))
            self.head = lib.nn.Linear(2, 2)

        def forward(self, x, y):
            features = self.body(x).mean((2, 3))
            return self.head(features) + y, features

    return TwoInputs(), ((2, 1, 5, 5), (2, 2))


@pytest.mark.filterwarnings("ignore:`torch.jit.trace")  # torch's own deprecation notice
@pytest.mark.parametrize("build", [sequential_model, two_input_model])
def test_add_graph_writes_a_graphdef_torch_like(tmp_path, build):
    rng = np.random.default_rng(7)
    models = {name: build(lib) for name, (lib, _) in LIBRARIES.items()}
    shapes = models["ember"][1]
    inputs = [rng.normal(size=shape).astype(np.float32) for shape in shapes]

    def calls(writer, lib):
        model = models[lib.__name__][0]
        model.train()
        example = tuple(as_tensor(lib, x) for x in inputs)
        writer.add_graph(model, example[0] if len(example) == 1 else example)
        assert model.training  # restored after tracing in eval mode

    ours, theirs = accumulate_both(tmp_path, calls)
    ours_graph, theirs_graph = ours.Graph(), theirs.Graph()
    assert ours.Tags()["run_metadata"] == theirs.Tags()["run_metadata"] == ["step1"]

    def io_shapes(graph_def):
        return sorted((node.name.split("/")[0], [d.size for d in
                                                  node.attr["_output_shapes"].list.shape[0].dim])
                      for node in graph_def.node if node.op == "IO Node")

    if build is sequential_model:
        assert io_shapes(ours_graph) == io_shapes(theirs_graph)
    else:
        # torch ends a tuple output in one TupleConstruct node and one output of shape [1];
        # ember gives each tensor of the output its own output node with its shape
        inputs_only = [entry for entry in io_shapes(theirs_graph) if entry[0] == "input"]
        assert io_shapes(ours_graph) == inputs_only + [("output", [2, 2])] * 2

    def parameter_scopes(graph_def):
        # torch appends a debug name to each GetAttr node ("weight/weight.1"); compare scopes
        return sorted(node.name.rsplit("/", 1)[0] if node.name.count("/") > 2 else node.name
                      for node in graph_def.node if node.op == "prim::GetAttr")

    def operator_scopes(graph_def):
        return {node.name.rsplit("/", 1)[0] for node in graph_def.node
                if node.op.startswith("aten::")}

    assert operator_scopes(ours_graph) == operator_scopes(theirs_graph)
    names = {node.name for node in ours_graph.node}
    assert len(names) == len(ours_graph.node)
    assert all(source.split(":")[0] in names for node in ours_graph.node for source in node.input)
    assert ours_graph.versions.producer == theirs_graph.versions.producer
    assert all(not module._forward_hooks and not module._forward_pre_hooks
               for module in models["ember"][0].modules())
    if build is sequential_model:
        assert parameter_scopes(ours_graph) == parameter_scopes(theirs_graph)
        assert operator_scopes(ours_graph) == {
            "Sequential/Linear[0]", "Sequential/ReLU[1]", "Sequential/Linear[2]"}


def test_add_onnx_graph_matches_torch(tmp_path, capsys):
    pytest.importorskip("onnx")
    model = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.ReLU(), ember.nn.Linear(3, 2))
    path = str(tmp_path / "model.onnx")
    ember.onnx.export(model, (ember.randn(5, 4),), path, input_names=["x"])
    ours, theirs = accumulate_both(tmp_path / "logs", lambda w, lib: w.add_onnx_graph(path))
    assert ours.Graph() == theirs.Graph()
    assert [node.op for node in ours.Graph().node][:2] == ["Variable", "Variable"]
