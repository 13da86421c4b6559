"""ember.save / ember.load against torch.save / torch.load, safe loading, atomic writes."""

import collections
import io
import os
import pickle
import re
import zipfile

import numpy as np
import pytest
import torch

import ember
from conftest import DTYPE_PAIRS, assert_same, to_ember, to_torch
from ember import _serialization_writer, serialization


def _sample(name, rng):
    e_dtype, t_dtype = DTYPE_PAIRS[name]
    values = rng.standard_normal((3, 4)) * 10
    t = torch.from_numpy(values).to(t_dtype)
    return t


@pytest.mark.parametrize("name", list(DTYPE_PAIRS))
def test_every_dtype_round_trips_both_ways(name, tmp_path):
    rng = np.random.default_rng(0)
    t = _sample(name, rng)
    torch.save({"t": t, "v": t[1:, ::2]}, tmp_path / "torch.pt")
    loaded = ember.load(tmp_path / "torch.pt")
    assert_same(loaded["t"], t)
    assert_same(loaded["v"], t[1:, ::2])
    e = to_ember(t)
    ember.save({"e": e, "v": e.t()}, tmp_path / "ember.pt")
    back = torch.load(tmp_path / "ember.pt", weights_only=True)
    torch.testing.assert_close(back["e"], t, equal_nan=True)
    torch.testing.assert_close(back["v"], t.t(), equal_nan=True)


def test_views_share_one_storage_both_ways(tmp_path):
    base = ember.arange(12).float().view(3, 4)
    ember.save([base, base.t(), base[1]], tmp_path / "e.pt")
    t_base, t_view, t_row = torch.load(tmp_path / "e.pt")
    assert t_view.untyped_storage().data_ptr() == t_base.untyped_storage().data_ptr()
    assert t_row.storage_offset() == 4 and t_view.stride() == (1, 4)
    t_row[0] = 100
    assert t_base[1, 0] == 100

    tb = torch.arange(12.0).view(3, 4)
    torch.save({"a": tb, "b": tb[:, 1:].t()}, tmp_path / "t.pt")
    loaded = ember.load(tmp_path / "t.pt")
    assert loaded["b"].stride() == tb[:, 1:].t().stride()
    assert loaded["b"].storage_offset() == 1
    assert loaded["b"].untyped_storage().data_ptr() == loaded["a"].untyped_storage().data_ptr()
    loaded["a"].mul_(2)
    assert loaded["b"].tolist() == (tb[:, 1:].t() * 2).tolist()


def test_nested_containers_and_metadata(tmp_path):
    obj = {"list": [1, 2.5, "s", None, True], "tuple": (ember.zeros(0, 3), 3),
           "od": collections.OrderedDict(a=ember.ones(2)), "size": ember.Size([2, 3]),
           "dtype": ember.bfloat16, "device": ember.device("cpu"), "set": {1, 2},
           "bytes": b"raw", "complex": 1 + 2j}
    ember.save(obj, tmp_path / "e.pt")
    t = torch.load(tmp_path / "e.pt", weights_only=True)
    assert t["size"] == torch.Size([2, 3]) and t["dtype"] == torch.bfloat16
    assert t["device"] == torch.device("cpu") and t["set"] == {1, 2} and t["bytes"] == b"raw"
    assert isinstance(t["od"], collections.OrderedDict) and t["tuple"][0].shape == (0, 3)
    again = ember.load(tmp_path / "e.pt")
    assert again["size"] == (2, 3) and again["dtype"] is ember.bfloat16
    assert again["list"] == obj["list"] and again["complex"] == 1 + 2j
    torch.save(t, tmp_path / "t.pt")
    from_torch = ember.load(tmp_path / "t.pt")
    assert from_torch["dtype"] is ember.bfloat16 and from_torch["device"] == ember.device("cpu")


def test_requires_grad_and_parameters_from_torch(tmp_path):
    torch.save({"p": torch.nn.Parameter(torch.ones(2)), "g": torch.ones(2, requires_grad=True)},
               tmp_path / "t.pt")
    loaded = ember.load(tmp_path / "t.pt")
    assert loaded["p"].requires_grad and loaded["g"].requires_grad


def test_file_objects_and_legacy_format(tmp_path):
    buffer = io.BytesIO()
    ember.save({"x": ember.arange(3)}, buffer)
    buffer.seek(0)
    assert torch.load(buffer)["x"].tolist() == [0, 1, 2]
    buffer.seek(0)
    assert ember.load(buffer)["x"].tolist() == [0, 1, 2]
    t = torch.arange(6.0).view(2, 3)
    torch.save({"t": t, "p": torch.nn.Parameter(torch.ones(2))}, tmp_path / "old.pt",
               _use_new_zipfile_serialization=False)
    loaded = ember.load(tmp_path / "old.pt")
    assert_same(loaded["t"], t)
    assert loaded["p"].requires_grad


def test_map_location_mmap_and_meta(tmp_path):
    t = torch.arange(10.0)
    torch.save({"t": t}, tmp_path / "t.pt")
    assert ember.load(tmp_path / "t.pt", map_location="cpu")["t"].device.type == "cpu"
    assert ember.load(tmp_path / "t.pt", map_location={"cpu": "cpu"})["t"].tolist() == t.tolist()
    seen = []
    ember.load(tmp_path / "t.pt", map_location=lambda storage, loc: seen.append(loc))
    assert seen == ["cpu"]
    mapped = ember.load(tmp_path / "t.pt", mmap=True)["t"]
    assert isinstance(mapped._storage_root(), np.memmap) and mapped.tolist() == t.tolist()
    meta = ember.load(tmp_path / "t.pt", map_location="meta")["t"]
    assert meta.device.type == "meta" and meta.shape == (10,)
    if not ember.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA"):
            ember.load(tmp_path / "t.pt", map_location="cuda")


# ---------------------------------------------------------------- safe loading


class _Exploit:
    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


class _Smuggler:
    """Hides the exploit inside a nested container."""

    def __reduce__(self):
        return dict, ([("inner", [_Exploit(os.system, ("true",))])],)


def _write_checkpoint(path, payload_pickle):
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("archive/data.pkl", payload_pickle)
        zf.writestr("archive/byteorder", "little")
        zf.writestr("archive/version", "3\n")


def _marker_payloads(marker):
    import builtins
    import subprocess

    command = f"touch {marker}"
    return {
        "os.system": pickle.dumps(_Exploit(os.system, (command,)), protocol=2),
        "builtins.exec": pickle.dumps(
            _Exploit(builtins.exec, (f"open({str(marker)!r}, 'w').close()",)), protocol=2),
        "subprocess.Popen": pickle.dumps(_Exploit(subprocess.Popen, (["touch", str(marker)],)),
                                         protocol=2),
        "nested": pickle.dumps({"ok": [1, 2, _Exploit(os.system, (command,))]}, protocol=2),
        "import": pickle.dumps(_Exploit(__import__, ("antigravity",)), protocol=2),
    }


@pytest.mark.parametrize("kind", ["os.system", "builtins.exec", "subprocess.Popen", "nested",
                                  "import"])
def test_malicious_pickles_are_refused_and_do_nothing(kind, tmp_path):
    marker = tmp_path / "pwned"
    payload = _marker_payloads(marker)[kind]
    path = tmp_path / "evil.pt"
    _write_checkpoint(path, payload)
    with pytest.raises(pickle.UnpicklingError) as error:
        ember.load(path)
    message = str(error.value)
    assert not marker.exists()
    with pytest.raises(pickle.UnpicklingError) as torch_error:
        torch.load(path, weights_only=True)
    # the same refusal as torch's: an unsupported global, or one from a blocked module (torch
    # spells some Python 2 names of a protocol-2 pickle its own way: only the kind is compared)
    refusal = r"Unsupported global: GLOBAL|GLOBAL \S+ whose module \S+ is blocked"
    assert re.search(refusal, str(torch_error.value)).group(0).split()[-1] in message
    assert re.search(refusal, message) and str(path) in message


def test_weights_only_false_loads_any_pickle_and_safe_globals_extend(tmp_path):
    path = tmp_path / "obj.pt"
    _write_checkpoint(path, pickle.dumps(collections.Counter("aab"), protocol=2))
    assert ember.load(path) == {"a": 2, "b": 1}
    _write_checkpoint(path, pickle.dumps(np.dtype, protocol=2))
    with pytest.raises(pickle.UnpicklingError, match="numpy"):
        ember.load(path)
    assert ember.load(path, weights_only=False) is np.dtype
    serialization.add_safe_globals([np.dtype])
    try:
        assert ember.load(path) is np.dtype
    finally:
        serialization.clear_safe_globals()
    with serialization.safe_globals([np.dtype]):
        assert ember.load(path) is np.dtype
    with pytest.raises(pickle.UnpicklingError):
        ember.load(path)


# ---------------------------------------------------------------- failures


def test_failed_save_leaves_the_old_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    ember.save({"w": ember.ones(3)}, path)
    calls = {"n": 0}
    original = _serialization_writer._write_record

    def failing(zf, name, data):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError("No space left on device")
        return original(zf, name, data)

    monkeypatch.setattr(_serialization_writer, "_write_record", failing)
    with pytest.raises(OSError, match="No space"):
        ember.save({"w": ember.zeros(3)}, path)
    monkeypatch.undo()
    assert ember.load(path)["w"].tolist() == [1.0, 1.0, 1.0]
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]


class _FailingFile(io.BytesIO):
    def write(self, data):
        if self.tell() > 100:
            raise OSError("disk full")
        return super().write(data)


def test_failing_file_object_raises(tmp_path):
    with pytest.raises(OSError, match="disk full"):
        ember.save({"w": ember.ones(1000)}, _FailingFile())


@pytest.mark.parametrize("cut", [10, 200, -40])
def test_truncated_files_give_clear_errors(cut, tmp_path):
    path = tmp_path / "full.pt"
    torch.save({"w": torch.ones(1000)}, path)
    data = path.read_bytes()
    bad = tmp_path / "bad.pt"
    bad.write_bytes(data[:cut])
    with pytest.raises(RuntimeError, match="bad.pt"):
        ember.load(bad)


def test_wrong_format_and_missing_files(tmp_path):
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"hello world, not a checkpoint")
    with pytest.raises(RuntimeError, match="garbage.pt"):
        ember.load(garbage)
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    with pytest.raises(RuntimeError, match="empty"):
        ember.load(empty)
    with pytest.raises(FileNotFoundError):
        ember.load(tmp_path / "missing.pt")
    with pytest.raises(RuntimeError, match="meta"):
        ember.save(ember.zeros(2, device="meta"), tmp_path / "m.pt")


def test_saved_records_are_aligned_like_torch(tmp_path):
    ember.save({"a": ember.ones(5), "b": ember.ones(7, dtype=ember.float64)}, tmp_path / "e.pt")
    with zipfile.ZipFile(tmp_path / "e.pt") as zf, open(tmp_path / "e.pt", "rb") as f:
        for info in zf.infolist():
            if "/data/" in info.filename:
                f.seek(info.header_offset + 26)
                name_len, extra_len = np.frombuffer(f.read(4), dtype="<u2")
                assert (info.header_offset + 30 + name_len + extra_len) % 64 == 0


def test_to_torch_helper_round_trip():
    e = ember.tensor([[1.5, 2.0]])
    assert_same(to_ember(to_torch(e)), to_torch(e))


# ---------------------------------------------------------------- the zip writer


def _big_state(rng):
    """Records above the threaded-CRC threshold (several chunks each), plus small ones."""
    return {"big": torch.from_numpy(rng.standard_normal(700_000).astype(np.float32)),
            "odd": torch.from_numpy(rng.standard_normal((333, 1001))),  # not a chunk multiple
            "view": torch.arange(12.0).view(3, 4).t(),
            "bf16": torch.randn(5, generator=torch.Generator().manual_seed(0)).bfloat16(),
            "step": 3, "name": "ckpt"}


def _check_archive(path_or_buffer, expected):
    with zipfile.ZipFile(path_or_buffer) as zf:
        assert zf.testzip() is None  # every CRC-32 checks out
    if hasattr(path_or_buffer, "seek"):
        path_or_buffer.seek(0)
    loaded = torch.load(path_or_buffer)
    for key, value in expected.items():
        if isinstance(value, torch.Tensor):
            assert torch.equal(loaded[key], value) and loaded[key].dtype == value.dtype
        else:
            assert loaded[key] == value


@pytest.mark.parametrize("chunk, pwrite", [(None, True), (4096 + 5, True), (4096 + 5, False)])
def test_written_archives_are_valid_zips_torch_reads(chunk, pwrite, tmp_path, monkeypatch):
    if chunk is not None:  # many chunks per record: the threaded CRC chains across them
        monkeypatch.setattr(_serialization_writer, "_CHUNK", chunk)
    if not pwrite:  # a platform without os.pwrite: CRCs computed before each record
        monkeypatch.setattr(_serialization_writer._FdSink, "can_patch", False)
    state = _big_state(np.random.default_rng(0))
    e_state = {k: to_ember(v) if isinstance(v, torch.Tensor) else v for k, v in state.items()}
    ember.save(e_state, tmp_path / "e.pt")
    _check_archive(tmp_path / "e.pt", state)
    assert torch.equal(torch.load(tmp_path / "e.pt", mmap=True)["big"], state["big"])
    buffer = io.BytesIO()
    ember.save(e_state, buffer)
    _check_archive(io.BytesIO(buffer.getvalue()), state)
    back = ember.load(tmp_path / "e.pt")
    for key, value in state.items():
        if isinstance(value, torch.Tensor):
            assert_same(back[key], value)


def test_zip64_records_and_end_record(tmp_path, monkeypatch):
    # The zip64 paths (sizes and offsets past 4 GiB, more than 65535 records) with small limits.
    monkeypatch.setattr(_serialization_writer, "_ZIP64_LIMIT", 1000)
    monkeypatch.setattr(_serialization_writer, "_ZIP_MAX_ENTRIES", 3)
    state = _big_state(np.random.default_rng(1))
    ember.save({k: to_ember(v) if isinstance(v, torch.Tensor) else v for k, v in state.items()},
               tmp_path / "z.pt")
    _check_archive(tmp_path / "z.pt", state)
    with zipfile.ZipFile(tmp_path / "z.pt") as zf:
        assert len(zf.infolist()) > 3 and zf.getinfo("z/data/0").file_size == 700_000 * 4
    monkeypatch.undo()
    assert_same(ember.load(tmp_path / "z.pt")["odd"], state["odd"])


class _WriteOnly:
    """A stream with nothing but write() (no tell/seek), returning nothing, like a socket."""

    def __init__(self):
        self.parts = []

    def write(self, data):
        self.parts.append(bytes(data))


def test_streams_without_seek_and_unbuffered_files(tmp_path):
    state = _big_state(np.random.default_rng(2))
    e_state = {k: to_ember(v) if isinstance(v, torch.Tensor) else v for k, v in state.items()}
    stream = _WriteOnly()
    ember.save(e_state, stream)
    _check_archive(io.BytesIO(b"".join(stream.parts)), state)
    with open(tmp_path / "raw.pt", "wb", buffering=0) as raw:  # FileIO: writes may be partial
        ember.save(e_state, raw)
    _check_archive(tmp_path / "raw.pt", state)


def test_saved_file_gets_the_usual_permissions(tmp_path):
    (tmp_path / "plain").write_bytes(b"")
    ember.save({"w": ember.ones(2)}, tmp_path / "c.pt")
    assert (os.stat(tmp_path / "c.pt").st_mode & 0o777) == (
        os.stat(tmp_path / "plain").st_mode & 0o777)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.pt", "plain"]


@pytest.mark.parametrize("where", ["write", "fsync", "replace"])
def test_failure_in_a_large_save_leaves_the_old_checkpoint(where, tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    ember.save({"w": ember.ones(3)}, path)
    big = {"w": ember.zeros(600_000)}  # above the threaded-CRC threshold
    if where == "write":
        calls = {"n": 0}
        original = os.write

        def failing_write(fd, data):
            calls["n"] += 1
            if calls["n"] == 20:  # part-way through the large record's chunks
                raise OSError("No space left on device")
            return original(fd, data)

        monkeypatch.setattr(_serialization_writer, "_CHUNK", 100_000)
        monkeypatch.setattr(os, "write", failing_write)
    else:
        def fail(*args):
            raise OSError(f"{where} failed")

        monkeypatch.setattr(os, where, fail)
    fds = _open_fds()
    with pytest.raises(OSError):
        ember.save(big, path)
    monkeypatch.undo()
    assert _open_fds() == fds  # neither the new file nor the held old one is left open
    assert ember.load(path)["w"].tolist() == [1.0, 1.0, 1.0]
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]
    ember.save(big, path)  # and the next save works
    assert ember.load(path)["w"].shape == (600_000,)


def _open_fds():
    return sorted(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else []


def test_replaced_checkpoint_is_released_in_the_background(tmp_path):
    import threading

    path = tmp_path / "ckpt.pt"
    ember.save({"w": ember.ones(300_000)}, path)
    fds = _open_fds()
    ember.save({"w": ember.zeros(3)}, path)
    for thread in threading.enumerate():
        if thread.name == "ember-save-release":
            thread.join()
    assert _open_fds() == fds
    assert torch.load(path)["w"].tolist() == [0.0, 0.0, 0.0]


# ---------------------------------------------------------------- torch's loading options


def _net_pair():
    torch.manual_seed(0)
    reference = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    ember.manual_seed(0)
    ours = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4))
    return ours, reference


def test_unsafe_globals_in_checkpoint_as_torch(tmp_path):
    ours, reference = _net_pair()
    for lib, model in ((ember, ours), (torch, reference)):
        path = tmp_path / f"{lib.__name__}.pt"
        lib.save(model, path)
        expected = torch.serialization.get_unsafe_globals_in_checkpoint(path)
        assert sorted(serialization.get_unsafe_globals_in_checkpoint(path)) == sorted(expected)
        assert expected  # the module classes
        with serialization.safe_globals([ember.nn.Sequential, ember.nn.Linear,
                                         ember.nn.BatchNorm1d]):
            assert serialization.get_unsafe_globals_in_checkpoint(str(path)) == []
    (tmp_path / "plain.txt").write_text("not a checkpoint")
    for lib in (ember, torch):
        with pytest.raises(ValueError, match="Expected input to be a checkpoint"):
            lib.serialization.get_unsafe_globals_in_checkpoint(tmp_path / "plain.txt")


def _rewrite(path, out, byteorder):
    """Copy a checkpoint with its storages in another byte order (or no byteorder record)."""
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename.endswith("/byteorder"):
                if byteorder is None:
                    continue
                data = byteorder.encode()
            elif "/data/" in info.filename and byteorder == "big":
                data = np.frombuffer(data, np.float32).byteswap().tobytes()
            target.writestr(info, data)


@pytest.mark.parametrize("case", ["big record", "no record, BIG default",
                                  "no record, NATIVE default", "no record, no default"])
def test_byte_order_of_checkpoints_as_torch(case, tmp_path):
    source = tmp_path / "little.pt"
    torch.save({"w": torch.arange(6.0).view(2, 3)}, source)
    path = tmp_path / "case.pt"
    _rewrite(source, path, "big" if case == "big record" else None)
    default = {"BIG": "BIG", "NATIVE": "NATIVE"}.get(case.split()[-2]) if "default" in case else None
    try:
        for lib in (ember, torch):
            order = getattr(lib.serialization.LoadEndianness, default) if default else None
            lib.serialization.set_default_load_endianness(order)
        assert_same(ember.load(path)["w"], torch.load(path)["w"])
    finally:
        ember.serialization.set_default_load_endianness(None)
        torch.serialization.set_default_load_endianness(None)
    for lib in (ember, torch):
        with pytest.raises(TypeError, match="Invalid argument type"):
            lib.serialization.set_default_load_endianness("big")


def test_mmap_options_as_torch(tmp_path):
    import mmap

    assert serialization.get_default_mmap_options() == torch.serialization.get_default_mmap_options()
    for lib in (ember, torch):
        path = tmp_path / f"{lib.__name__}.pt"
        lib.save({"w": lib.zeros(4)}, path)
        with lib.serialization.set_default_mmap_options(mmap.MAP_SHARED):
            lib.load(path, mmap=True)["w"].fill_(3.0)
        assert lib.serialization.get_default_mmap_options() == mmap.MAP_PRIVATE
        lib.load(path, mmap=True)["w"].fill_(5.0)  # private: stays in memory
        assert lib.load(path)["w"].tolist() == [3.0] * 4
        with pytest.raises(ValueError, match="expected mmap.MAP_PRIVATE or mmap.MAP_SHARED"):
            lib.serialization.set_default_mmap_options(12345)


def test_crc32_option_and_byteorder_record(tmp_path):
    assert serialization.get_crc32_options() is torch.serialization.get_crc32_options() is True
    serialization.set_crc32_options(False)
    try:
        assert serialization.get_crc32_options() is False
        ember.save({"w": ember.ones(3)}, tmp_path / "e.pt", _disable_byteorder_record=True)
    finally:
        serialization.set_crc32_options(True)
    with zipfile.ZipFile(tmp_path / "e.pt") as archive:
        assert not any(n.endswith("/byteorder") for n in archive.namelist())
    assert torch.load(tmp_path / "e.pt")["w"].tolist() == [1.0] * 3


def test_serialization_helpers_as_torch(tmp_path):
    import warnings as _warnings

    for lib in (ember, torch):
        s = lib.serialization
        assert s.DEFAULT_PROTOCOL == 2
        assert str(s.StorageType("DoubleStorage").dtype).endswith("float64")
        assert s.normalize_storage_type(lib.FloatStorage) is lib.FloatStorage
        assert s.location_tag(lib.ones(2)) == "cpu"
        assert s.location_tag(lib.ones(2).untyped_storage()) == "cpu"
        restored = s.default_restore_location(lib.ones(2).untyped_storage(), "cpu")
        assert restored.device.type == "cpu" and restored.nbytes() == 8
        with pytest.raises(RuntimeError, match="don't know how to restore data location"):
            s.default_restore_location(lib.ones(2).untyped_storage(), "nowhere:0")
        with pytest.raises(RuntimeError, match="is_available\\(\\) is False"):
            s.validate_cuda_device("cuda:0")
        with pytest.raises(RuntimeError, match="The HPU device module is not registered"):
            s.validate_hpu_device("hpu:0")
        assert s.check_module_version_greater_or_equal(np, (1, 0)) is True
        assert s.check_module_version_greater_or_equal(np, (999,)) is False
        bad = type("M", (), {"__name__": "m", "__version__": "x.y"})
        with pytest.raises(RuntimeError, match="malformed"):
            s.check_module_version_greater_or_equal(bad, (1, 0))
        with _warnings.catch_warnings(record=True):
            _warnings.simplefilter("always")
            assert s.check_module_version_greater_or_equal(bad, (1, 0), False) is True
        with s.mkdtemp() as path:
            lib.save(lib.ones(2), f"{path}/t.pt")
            assert lib.load(f"{path}/t.pt").tolist() == [1.0, 1.0]
        assert not os.path.exists(path)
        assert issubclass(s.SourceChangeWarning, Warning)
    with pytest.warns(UserWarning):  # TypedStorage is deprecated, in both
        assert serialization.storage_to_tensor_type(ember.FloatStorage(2)) is ember.FloatTensor
    with pytest.raises(NotImplementedError, match="map_location='meta'"):
        serialization.skip_data()
