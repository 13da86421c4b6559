"""``list_files``: the paths of the files under one or more directories."""

from __future__ import annotations

from .._decorator import functional_datapipe
from ..datapipe import IterDataPipe
from ..utils.common import get_file_pathnames_from_root
from .utils import IterableWrapperIterDataPipe

__all__ = ["FileListerIterDataPipe"]


@functional_datapipe("list_files")
class FileListerIterDataPipe(IterDataPipe):
    """Yield the paths (sorted, unless ``non_deterministic``) of the files under each root that
    match ``masks`` (shell patterns), walking subdirectories when ``recursive``.

    Example::

        >>> import tempfile, pathlib
        >>> root = tempfile.mkdtemp(); pathlib.Path(root, "a.txt").write_text("x")
        1
        >>> [p.endswith("a.txt") for p in FileListerIterDataPipe(root, "*.txt")]
        [True]
    """

    def __init__(self, root=".", masks="", *, recursive=False, abspath=False,
                 non_deterministic=False, length=-1):
        if isinstance(root, str):
            root = [root]
        if not isinstance(root, IterDataPipe):
            root = IterableWrapperIterDataPipe(root)
        self.datapipe = root
        self.masks = masks
        self.recursive = recursive
        self.abspath = abspath
        self.non_deterministic = non_deterministic
        self.length = length

    def __iter__(self):
        for path in self.datapipe:
            yield from get_file_pathnames_from_root(path, self.masks, self.recursive,
                                                    self.abspath, self.non_deterministic)

    def __len__(self):
        if self.length == -1:
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
        return self.length
