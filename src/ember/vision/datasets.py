"""Image datasets, as ``torchvision.datasets``, read from files already on disk.

ember does not download anything: put the files where the error message says (the layout is
torchvision's, so a folder torchvision downloaded into works as it is).

- :class:`Digits`: scikit-learn's bundled 8x8 handwritten digits (nothing to download).
- :class:`MNIST`, :class:`FashionMNIST`: the idx files (raw or ``.gz``) in ``root/<Name>/raw/``.
- :class:`CIFAR10`: the python pickle batches in ``root/cifar-10-batches-py/``.
- :class:`FakeData`: random images, the same for the same index.

Samples are ``(image, target)``. Where torchvision gives a PIL image, ember gives the image as
a NumPy ``uint8`` array (``(H, W)`` grey, ``(H, W, 3)`` colour) that
:class:`ember.vision.transforms.ToTensor` turns into a ``(C, H, W)`` float tensor.

Example::

    >>> from ember.vision import datasets, transforms
    >>> train = datasets.Digits(train=True)
    >>> image, label = train[0]
    >>> image.shape
    ember.Size([1, 8, 8])
"""

from __future__ import annotations

import gzip
import os
import pickle

import numpy as np

import ember

from ..utils.data import Dataset

__all__ = ["VisionDataset", "Digits", "MNIST", "FashionMNIST", "CIFAR10", "FakeData"]


def _no_download(name, folder):
    raise RuntimeError(f"ember cannot download datasets (download=True given for {name}). "
                       f"Put the {name} files in {folder} yourself (torchvision's layout) and "
                       "pass download=False.")


def _missing(name, path):
    raise RuntimeError(f"Dataset not found: {name} needs {path}, which does not exist. ember "
                       "cannot download datasets; put the files there yourself.")


class VisionDataset(Dataset):
    """Base of the image datasets: ``root``, ``transform`` and ``target_transform``.

    Example::

        >>> class Ones(VisionDataset):
        ...     def __len__(self): return 1
        ...     def __getitem__(self, i): return ember.ones(1, 2, 2), 0
    """

    _repr_indent = 4

    def __init__(self, root=None, transform=None, target_transform=None):
        if isinstance(root, (str, os.PathLike)):
            root = os.path.expanduser(os.fspath(root))
        self.root = root
        self.transform = transform
        self.target_transform = target_transform

    def _apply(self, img, target):
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def extra_repr(self):
        return ""

    def __repr__(self):
        body = [f"Number of datapoints: {len(self)}"]
        if self.root is not None:
            body.append(f"Root location: {self.root}")
        body += [line for line in self.extra_repr().splitlines() if line]
        if self.transform is not None:
            body.append(f"Transform: {self.transform!r}".replace("\n", "\n" + " " * 4))
        if self.target_transform is not None:
            body.append(f"Target transform: {self.target_transform!r}")
        lines = [f"Dataset {self.__class__.__name__}"] + [" " * self._repr_indent + line
                                                          for line in body]
        return "\n".join(lines)


# ---------------------------------------------------------------- digits (scikit-learn)


class Digits(VisionDataset):
    """scikit-learn's 1,797 handwritten digits as ``(1, 8, 8)`` float32 images in ``[0, 1]``.

    A fixed split (seed 0) keeps 360 images for testing (``train=False``) and the other 1,437
    for training. ``root`` is unused (the data ship inside scikit-learn). ``data`` holds all
    images of the split as one ``(N, 1, 8, 8)`` tensor and ``targets`` the int64 labels.

    Example::

        >>> test = Digits(train=False)
        >>> len(test), test.data.shape
        (360, ember.Size([360, 1, 8, 8]))
    """

    classes = [str(d) for d in range(10)]
    n_test = 360
    split_seed = 0

    def __init__(self, root=None, train=True, transform=None, target_transform=None):
        super().__init__(root, transform, target_transform)
        try:
            from sklearn.datasets import load_digits
        except ImportError as error:
            raise RuntimeError("Digits needs scikit-learn (pip install scikit-learn)") from error
        self.train = train
        bunch = load_digits()
        images = (bunch.images / 16.0).astype(np.float32)[:, None]
        labels = bunch.target.astype(np.int64)
        order = np.random.default_rng(self.split_seed).permutation(len(labels))
        keep = order[self.n_test:] if train else order[:self.n_test]
        keep = np.sort(keep)
        self._images = np.ascontiguousarray(images[keep])
        self._labels = labels[keep]
        self.data = ember.from_numpy(self._images)
        self.targets = ember.from_numpy(self._labels)

    def __len__(self):
        return len(self._labels)

    def __getitem__(self, index):
        img = ember.tensor(self._images[index])  # a copy: in-place transforms keep the data
        return self._apply(img, int(self._labels[index]))

    def extra_repr(self):
        return f"Split: {'Train' if self.train else 'Test'}"


# ---------------------------------------------------------------- MNIST family (idx files)

_IDX_DTYPES = {0x08: np.dtype(np.uint8), 0x09: np.dtype(np.int8), 0x0B: np.dtype(">i2"),
               0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


def read_idx(path):
    """The array stored in an idx file (raw or gzip-compressed, by its ``.gz`` suffix).

    Example::

        >>> read_idx("MNIST/raw/t10k-labels-idx1-ubyte").shape
        (10000,)
    """
    opener = gzip.open if os.fspath(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES:
        raise RuntimeError(f"{path} is not an idx file (bad magic number)")
    dtype, ndim = _IDX_DTYPES[raw[2]], raw[3]
    shape = tuple(int(d) for d in np.frombuffer(raw, ">i4", ndim, offset=4))
    count = int(np.prod(shape)) if shape else 1
    start = 4 + 4 * ndim
    if len(raw) - start != count * dtype.itemsize:
        raise RuntimeError(f"{path}: expected {count * dtype.itemsize} bytes of data for shape "
                           f"{shape}, found {len(raw) - start}")
    data = np.frombuffer(raw, dtype, count, offset=start).reshape(shape)
    return data.astype(dtype.newbyteorder("="))


class MNIST(VisionDataset):
    """MNIST from the idx files in ``root/MNIST/raw/`` (``train-images-idx3-ubyte`` and
    friends, raw or ``.gz``).

    Samples are ``(image, label)`` with the image a ``(28, 28)`` uint8 NumPy array;
    ``data`` is the ``(N, 28, 28)`` uint8 tensor and ``targets`` the int64 labels.

    Example::

        >>> train = MNIST("data", train=True, transform=transforms.ToTensor())
        >>> train[0][0].shape
        ember.Size([1, 28, 28])
    """

    resources = {True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
                 False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five",
               "6 - six", "7 - seven", "8 - eight", "9 - nine"]

    def __init__(self, root, train=True, transform=None, target_transform=None,
                 download=False):
        super().__init__(root, transform, target_transform)
        self.train = train
        if download:
            _no_download(self.__class__.__name__, self.raw_folder)
        image_file, label_file = self.resources[bool(train)]
        images = read_idx(self._find(image_file))
        labels = read_idx(self._find(label_file)).astype(np.int64)
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise RuntimeError(f"{self.raw_folder}: {images.shape[0]} images of shape "
                               f"{images.shape[1:]} do not match {labels.shape} labels")
        self._images = np.ascontiguousarray(images)
        self._labels = labels
        self.data = ember.from_numpy(self._images)
        self.targets = ember.from_numpy(self._labels)

    @property
    def raw_folder(self):
        return os.path.join(self.root, self.__class__.__name__, "raw")

    @property
    def class_to_idx(self):
        return {name: i for i, name in enumerate(self.classes)}

    def _find(self, name):
        path = os.path.join(self.raw_folder, name)
        for candidate in (path, path + ".gz"):
            if os.path.isfile(candidate):
                return candidate
        _missing(self.__class__.__name__, path + "[.gz]")

    def __len__(self):
        return len(self._labels)

    def __getitem__(self, index):
        return self._apply(self._images[index].copy(), int(self._labels[index]))

    def extra_repr(self):
        return f"Split: {'Train' if self.train else 'Test'}"


class FashionMNIST(MNIST):
    """Fashion-MNIST (Zalando's clothing images), laid out as MNIST in
    ``root/FashionMNIST/raw/``.

    Example::

        >>> FashionMNIST("data", train=False).classes[0]
        'T-shirt/top'
    """

    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot"]


# ---------------------------------------------------------------- CIFAR-10 (pickle batches)


class CIFAR10(VisionDataset):
    """CIFAR-10 from the python pickle batches in ``root/cifar-10-batches-py/``.

    Samples are ``(image, label)`` with the image a ``(32, 32, 3)`` uint8 NumPy array; ``data``
    is the ``(N, 32, 32, 3)`` uint8 array and ``targets`` the list of labels, as torchvision's.

    Example::

        >>> test = CIFAR10("data", train=False)
        >>> test.classes[:2]
        ['airplane', 'automobile']
    """

    base_folder = "cifar-10-batches-py"
    train_list = [f"data_batch_{i}" for i in range(1, 6)]
    test_list = ["test_batch"]
    meta_file = "batches.meta"
    meta_key = "label_names"

    def __init__(self, root, train=True, transform=None, target_transform=None,
                 download=False):
        super().__init__(root, transform, target_transform)
        self.train = train
        folder = os.path.join(self.root, self.base_folder)
        if download:
            _no_download(self.__class__.__name__, folder)
        data, targets = [], []
        for name in self.train_list if train else self.test_list:
            entry = self._load(os.path.join(folder, name))
            data.append(np.asarray(entry["data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
            targets.extend(int(t) for t in entry.get("labels", entry.get("fine_labels", [])))
        self.data = np.ascontiguousarray(np.concatenate(data).transpose(0, 2, 3, 1))
        self.targets = targets
        if len(self.targets) != len(self.data):
            raise RuntimeError(f"{folder}: {len(self.data)} images but {len(self.targets)} "
                               "labels")
        self.classes = list(self._load(os.path.join(folder, self.meta_file))[self.meta_key])
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}

    def _load(self, path):
        if not os.path.isfile(path):
            _missing(self.__class__.__name__, path)
        with open(path, "rb") as f:
            return pickle.load(f, encoding="latin1")

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        return self._apply(self.data[index].copy(), self.targets[index])

    def extra_repr(self):
        return f"Split: {'Train' if self.train else 'Test'}"


# ---------------------------------------------------------------- fake data


class FakeData(VisionDataset):
    """``size`` random ``image_size`` (C, H, W) images with random labels below
    ``num_classes``; sample ``i`` is the same on every call (drawn from a generator seeded with
    ``i + random_offset``). Images are uint8 NumPy arrays ``(H, W, C)`` (``(H, W)`` for one
    channel), as the other datasets give, and labels ints.

    Example::

        >>> fake = FakeData(size=10, image_size=(1, 8, 8), num_classes=3)
        >>> fake[0][0].shape
        (8, 8)
    """

    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None,
                 target_transform=None, random_offset=0):
        super().__init__(None, transform, target_transform)
        self.size = size
        self.image_size = tuple(image_size)
        self.num_classes = num_classes
        self.random_offset = random_offset

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        if index >= len(self) or index < -len(self):
            raise IndexError(f"{self.__class__.__name__} index out of range")
        index %= len(self)
        generator = ember.Generator().manual_seed(index + self.random_offset)
        chw = ember.randint(0, 256, self.image_size, generator=generator, dtype=ember.uint8)
        target = int(ember.randint(0, self.num_classes, (1,), generator=generator).item())
        img = chw.numpy().transpose(1, 2, 0)
        if img.shape[2] == 1:
            img = img[:, :, 0]
        return self._apply(np.ascontiguousarray(img), target)
