"""ember.vision.datasets: files written in tmp_path in the standard layouts, read back."""

import gzip
import os
import pickle

import numpy as np
import pytest

import ember
from ember.utils.data import DataLoader
from ember.vision import datasets
from ember.vision import transforms as T


def _write_idx(path, array, compress=False):
    codes = {np.dtype(np.uint8): 0x08, np.dtype(np.int8): 0x09, np.dtype(">i2"): 0x0B,
             np.dtype(">i4"): 0x0C, np.dtype(">f4"): 0x0D, np.dtype(">f8"): 0x0E}
    big = array.astype(array.dtype.newbyteorder(">"))
    header = bytes([0, 0, codes[big.dtype], array.ndim])
    header += np.array(array.shape, ">i4").tobytes()
    payload = header + big.tobytes()
    opener = gzip.open if compress else open
    with opener(str(path) + (".gz" if compress else ""), "wb") as f:
        f.write(payload)


def _make_mnist(root, name, n_train=12, n_test=5, compress=False, seed=0):
    rng = np.random.default_rng(seed)
    raw = root / name / "raw"
    raw.mkdir(parents=True)
    arrays = {}
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, n).astype(np.uint8)
        _write_idx(raw / f"{prefix}-images-idx3-ubyte", images, compress)
        _write_idx(raw / f"{prefix}-labels-idx1-ubyte", labels, compress)
        arrays[prefix] = (images, labels)
    return arrays


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("cls", [datasets.MNIST, datasets.FashionMNIST])
def test_mnist_family_reads_idx_files(tmp_path, cls, compress):
    arrays = _make_mnist(tmp_path, cls.__name__, compress=compress)
    for train, prefix in ((True, "train"), (False, "t10k")):
        images, labels = arrays[prefix]
        ds = cls(tmp_path, train=train)
        assert len(ds) == len(labels)
        assert ds.data.dtype == ember.uint8 and tuple(ds.data.shape) == images.shape
        assert ds.targets.dtype == ember.int64
        np.testing.assert_array_equal(ds.data.numpy(), images)
        np.testing.assert_array_equal(ds.targets.numpy(), labels.astype(np.int64))
        img, target = ds[3]
        assert isinstance(img, np.ndarray) and img.dtype == np.uint8
        np.testing.assert_array_equal(img, images[3])
        assert target == int(labels[3]) and isinstance(target, int)
    assert len(cls.classes) == 10 and ds.class_to_idx[cls.classes[4]] == 4
    assert f"Number of datapoints: {len(labels)}" in repr(ds) and "Split: Test" in repr(ds)


def test_mnist_transforms_and_loader(tmp_path):
    arrays = _make_mnist(tmp_path, "MNIST")
    images, labels = arrays["train"]
    ds = datasets.MNIST(str(tmp_path), transform=T.ToTensor(), target_transform=lambda y: y + 100)
    img, target = ds[0]
    assert tuple(img.shape) == (1, 28, 28) and img.dtype == ember.float32
    np.testing.assert_allclose(img.numpy()[0], images[0] / 255.0, rtol=1e-6)
    assert target == int(labels[0]) + 100
    x, y = next(iter(DataLoader(ds, batch_size=4)))
    assert tuple(x.shape) == (4, 1, 28, 28) and y.tolist() == [int(v) + 100 for v in labels[:4]]


def test_fashion_mnist_classes():
    assert datasets.FashionMNIST.classes[0] == "T-shirt/top"
    assert datasets.FashionMNIST.classes[9] == "Ankle boot"


def test_mnist_missing_files_name_the_path(tmp_path):
    with pytest.raises(RuntimeError, match="Dataset not found") as info:
        datasets.MNIST(tmp_path)
    assert os.path.join(str(tmp_path), "MNIST", "raw", "train-images-idx3-ubyte") in \
        str(info.value)


@pytest.mark.parametrize("cls", [datasets.MNIST, datasets.FashionMNIST, datasets.CIFAR10])
def test_download_is_refused_with_a_clear_message(tmp_path, cls):
    with pytest.raises(RuntimeError, match="cannot download") as info:
        cls(tmp_path, download=True)
    assert str(tmp_path) in str(info.value)


def test_mnist_mismatched_counts(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    _write_idx(raw / "train-images-idx3-ubyte", np.zeros((3, 28, 28), np.uint8))
    _write_idx(raw / "train-labels-idx1-ubyte", np.zeros(4, np.uint8))
    with pytest.raises(RuntimeError, match="do not match"):
        datasets.MNIST(tmp_path)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.float32,
                                   np.float64])
def test_read_idx_dtypes(tmp_path, dtype):
    array = (np.arange(24).reshape(2, 3, 4) - 5).astype(dtype)
    _write_idx(tmp_path / "a", array)
    back = datasets.read_idx(str(tmp_path / "a"))
    assert back.dtype == np.dtype(dtype) and back.shape == (2, 3, 4)
    np.testing.assert_array_equal(back, array)


def test_read_idx_rejects_bad_files(tmp_path):
    (tmp_path / "bad").write_bytes(b"\x01\x02\x08\x01" + b"\x00" * 8)
    with pytest.raises(RuntimeError, match="magic"):
        datasets.read_idx(str(tmp_path / "bad"))
    (tmp_path / "short").write_bytes(bytes([0, 0, 8, 1]) + np.array([10], ">i4").tobytes()
                                     + b"\x00" * 3)
    with pytest.raises(RuntimeError, match="expected 10 bytes"):
        datasets.read_idx(str(tmp_path / "short"))


def _make_cifar(root, per_batch=4, seed=0):
    rng = np.random.default_rng(seed)
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    batches = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data = rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8)
        labels = rng.integers(0, 10, per_batch).tolist()
        with open(folder / name, "wb") as f:
            pickle.dump({"batch_label": name, "data": data, "labels": labels}, f)
        batches[name] = (data, labels)
    names = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
             "truck"]
    with open(folder / "batches.meta", "wb") as f:
        pickle.dump({"label_names": names, "num_vis": 3072}, f)
    return batches, names


def test_cifar10_reads_pickle_batches(tmp_path):
    batches, names = _make_cifar(tmp_path)
    train = datasets.CIFAR10(tmp_path, train=True)
    test = datasets.CIFAR10(tmp_path, train=False)
    assert len(train) == 20 and len(test) == 4
    assert train.classes == names and train.class_to_idx["cat"] == 3
    expected = np.concatenate([batches[f"data_batch_{i}"][0] for i in range(1, 6)])
    expected = expected.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    assert train.data.shape == (20, 32, 32, 3) and train.data.dtype == np.uint8
    np.testing.assert_array_equal(train.data, expected)
    assert train.targets == sum((batches[f"data_batch_{i}"][1] for i in range(1, 6)), [])
    img, target = test[2]
    np.testing.assert_array_equal(img, batches["test_batch"][0][2].reshape(3, 32, 32)
                                  .transpose(1, 2, 0))
    assert target == batches["test_batch"][1][2]
    # ToTensor gives back the stored channel-major layout, scaled to [0, 1]
    chw = datasets.CIFAR10(tmp_path, train=False, transform=T.ToTensor())[1][0]
    np.testing.assert_allclose(chw.numpy(), batches["test_batch"][0][1].reshape(3, 32, 32) / 255,
                               rtol=1e-6)


def test_cifar10_missing_batch_names_the_path(tmp_path):
    _make_cifar(tmp_path)
    os.remove(tmp_path / "cifar-10-batches-py" / "data_batch_3")
    with pytest.raises(RuntimeError, match="data_batch_3"):
        datasets.CIFAR10(tmp_path, train=True)
    datasets.CIFAR10(tmp_path, train=False)  # the test split is complete


def test_digits_split():
    from sklearn.datasets import load_digits

    train, test = datasets.Digits(train=True), datasets.Digits(train=False)
    assert len(train) == 1437 and len(test) == 360
    assert tuple(train.data.shape) == (1437, 1, 8, 8) and train.data.dtype == ember.float32
    assert train.targets.dtype == ember.int64
    both = np.concatenate([train.data.numpy(), test.data.numpy()]).reshape(1797, 64)
    full = load_digits().data / 16.0
    # the two splits partition the data set: the same multiset of rows
    np.testing.assert_allclose(both[np.lexsort(both.T)], full[np.lexsort(full.T)], rtol=1e-6)
    assert 0.0 <= float(train.data.min()) and float(train.data.max()) <= 1.0
    again = datasets.Digits(train=False)
    np.testing.assert_array_equal(again.data.numpy(), test.data.numpy())
    img, label = train[5]
    assert tuple(img.shape) == (1, 8, 8) and label == int(train.targets[5])
    np.testing.assert_array_equal(img.numpy(), train.data[5].numpy())


def test_digits_with_transform_and_loader():
    ds = datasets.Digits(transform=T.Normalize((0.5,), (0.5,)), target_transform=str)
    img, label = ds[0]
    np.testing.assert_allclose(img.numpy(), ds.data[0].numpy() * 2 - 1, rtol=1e-6)
    assert label == str(int(ds.targets[0]))
    x, y = next(iter(DataLoader(datasets.Digits(), batch_size=32, shuffle=True)))
    assert tuple(x.shape) == (32, 1, 8, 8) and y.dtype == ember.int64


def test_fake_data():
    fake = datasets.FakeData(size=6, image_size=(3, 5, 7), num_classes=4)
    assert len(fake) == 6
    img, target = fake[2]
    assert img.shape == (5, 7, 3) and img.dtype == np.uint8 and 0 <= target < 4
    img2, target2 = fake[2]
    np.testing.assert_array_equal(img, img2)
    assert target == target2
    assert not np.array_equal(fake[1][0], img)
    shifted = datasets.FakeData(size=6, image_size=(3, 5, 7), num_classes=4, random_offset=1)
    np.testing.assert_array_equal(shifted[1][0], img)  # same seed: index + offset
    grey = datasets.FakeData(size=3, image_size=(1, 4, 4), transform=T.ToTensor())
    assert tuple(grey[0][0].shape) == (1, 4, 4)
    targets = [datasets.FakeData(size=200, image_size=(1, 1, 1), num_classes=3)[i][1]
               for i in range(200)]
    assert set(targets) == {0, 1, 2}
    with pytest.raises(IndexError):
        fake[6]
    assert fake[-1][1] == fake[5][1]


def test_samples_are_copies(tmp_path):
    digits = datasets.Digits(train=False, transform=T.Normalize((0.5,), (0.5,), inplace=True))
    before = digits.data[0].clone()
    digits[0]
    np.testing.assert_array_equal(digits.data[0].numpy(), before.numpy())
    _make_mnist(tmp_path, "MNIST")
    mnist = datasets.MNIST(tmp_path)
    mnist[0][0][:] = 0
    assert mnist.data[0].numpy().any()
    _make_cifar(tmp_path)
    cifar = datasets.CIFAR10(tmp_path, train=False)
    cifar[0][0][:] = 0
    assert cifar.data[0].any()
