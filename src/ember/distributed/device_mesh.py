"""``ember.distributed.device_mesh``: ranks laid out as an n-dimensional grid, as torch's.

A :class:`DeviceMesh` arranges the global ranks of the world in an array (``mesh``); along each
dimension the ranks that differ only in that coordinate form one process group. Sharding
(FSDP's ``fully_shard``, DTensor's ``Shard``) and replication happen along these groups.

Example::

    >>> from ember.distributed.device_mesh import init_device_mesh
    >>> mesh = init_device_mesh("cpu", (2,), mesh_dim_names=("dp",))
    >>> mesh.size(), mesh.get_local_rank("dp")
    (2, 0)
"""

from __future__ import annotations

import numpy as np

__all__ = ["DeviceMesh", "init_device_mesh"]


def _dist():
    from .. import distributed

    return distributed


def _as_rank_array(mesh):
    """``mesh`` (a tensor, array or nested list of global ranks) as an int64 NumPy array."""
    from .._tensor import Tensor

    if isinstance(mesh, Tensor):
        mesh = mesh.numpy()
    array = np.array(mesh, dtype=np.int64)
    if array.ndim == 0:
        raise ValueError("DeviceMesh expects a mesh with at least one dimension")
    if len(np.unique(array)) != array.size:
        raise RuntimeError(f"DeviceMesh cannot have duplicate values, but found "
                           f"{array.tolist()}")
    return array


class DeviceMesh:
    """An n-dimensional grid of global ranks with one process group per dimension.

    Every rank of the world must build the same meshes in the same order (the groups along each
    dimension are made collectively). A 1-D mesh over the whole world uses the default group.

    Example::

        >>> mesh = DeviceMesh("cpu", [[0, 1], [2, 3]], mesh_dim_names=("dp", "tp"))
        >>> mesh["tp"].size()
        2
    """

    def __init__(self, device_type, mesh, *, mesh_dim_names=None, backend_override=None,
                 _init_backend=True, _groups=None):
        if device_type and not str(device_type).isalpha():
            raise RuntimeError(f"Device type with index is not supported but got {device_type}. "
                               "If you maintained a 'torch.device' object, it's recommended to "
                               "pass in 'device.type'.")
        self.device_type = str(device_type)
        self._array = _as_rank_array(mesh)
        if mesh_dim_names is not None:
            mesh_dim_names = tuple(mesh_dim_names)
            if len(mesh_dim_names) != self._array.ndim:
                raise RuntimeError(f"mesh_dim_names {mesh_dim_names} must have one name per "
                                   f"mesh dimension ({self._array.ndim})")
        self._mesh_dim_names = mesh_dim_names
        self._groups = _groups if _groups is not None else self._make_groups()

    # ------------------------------------------------------------ construction

    def _make_groups(self):
        """One process group per dimension: the line of ranks through this rank's coordinate.

        Every line of every dimension is created on every rank (``new_group`` is collective);
        this rank keeps the group of its own line.
        """
        dist = _dist()
        world = dist.get_world_size()
        me = dist.get_rank()
        groups = []
        for dim in range(self._array.ndim):
            lines = np.moveaxis(self._array, dim, -1).reshape(-1, self._array.shape[dim])
            mine = None
            for line in lines:
                ranks = line.tolist()
                if sorted(ranks) == list(range(world)) and ranks == sorted(ranks):
                    group = dist.group.WORLD
                else:
                    group = dist.new_group(ranks, sort_ranks=False)
                if me in ranks:
                    mine = group
            groups.append(mine)
        return groups

    # ------------------------------------------------------------ shape and ranks

    @property
    def mesh(self):
        """The grid of global ranks as an int64 tensor."""
        from .._tensor import tensor

        return tensor(self._array)

    @property
    def mesh_dim_names(self):
        """The names of the dimensions (or None)."""
        return self._mesh_dim_names

    @property
    def ndim(self):
        """The number of mesh dimensions."""
        return self._array.ndim

    @property
    def shape(self):
        """The size of each mesh dimension."""
        return tuple(self._array.shape)

    def size(self, mesh_dim=None):
        """The number of ranks in the mesh, or along ``mesh_dim``."""
        if mesh_dim is None:
            return int(self._array.size)
        return int(self._array.shape[self._dim_index(mesh_dim)])

    def get_rank(self):
        """This process's global rank."""
        return _dist().get_rank()

    def get_coordinate(self):
        """This rank's coordinate in the mesh (None when it is not part of it)."""
        where = np.argwhere(self._array == _dist().get_rank())
        return None if len(where) == 0 else tuple(int(i) for i in where[0])

    def get_local_rank(self, mesh_dim=None):
        """This rank's index along ``mesh_dim`` (required when the mesh has several dims)."""
        dim = self._required_dim(mesh_dim)
        coordinate = self.get_coordinate()
        if coordinate is None:
            raise RuntimeError("this rank is not part of the DeviceMesh")
        return coordinate[dim]

    def get_group(self, mesh_dim=None):
        """The process group along ``mesh_dim`` that contains this rank."""
        return self._groups[self._required_dim(mesh_dim)]

    def get_all_groups(self):
        """This rank's process group along every dimension, in dimension order."""
        return list(self._groups)

    def _required_dim(self, mesh_dim):
        if mesh_dim is None:
            if self.ndim > 1:
                raise RuntimeError(f"Found the DeviceMesh have {self.ndim} dimensions. Optional "
                                   "kwarg `mesh_dim` needs to be specified when "
                                   "device_mesh.ndim > 1.")
            return 0
        return self._dim_index(mesh_dim)

    def _dim_index(self, mesh_dim):
        if isinstance(mesh_dim, str):
            if not self._mesh_dim_names:
                raise KeyError("No `mesh_dim_names` found.")
            if mesh_dim not in self._mesh_dim_names:
                raise KeyError(f"Mesh dimension '{mesh_dim}' does not exist. Available mesh "
                               f"dimensions are: mesh_dim_names={self._mesh_dim_names}")
            return self._mesh_dim_names.index(mesh_dim)
        if not -self.ndim <= mesh_dim < self.ndim:
            raise IndexError(f"mesh_dim {mesh_dim} is out of range for a {self.ndim}-D mesh")
        return mesh_dim % self.ndim

    # ------------------------------------------------------------ slicing

    def __getitem__(self, mesh_dim_names):
        """The sub-mesh of the named dimensions through this rank (its groups are reused)."""
        if not self._mesh_dim_names:
            raise RuntimeError("Cannot slice a DeviceMesh without mesh_dim_names!")
        names = (mesh_dim_names,) if isinstance(mesh_dim_names, str) else tuple(mesh_dim_names)
        dims = [self._dim_index(name) for name in names]
        if names == self._mesh_dim_names:
            return self
        coordinate = self.get_coordinate()
        index = tuple(slice(None) if d in dims else coordinate[d] for d in range(self.ndim))
        sub = np.transpose(self._array[index], np.argsort(np.argsort(dims)))
        return DeviceMesh(self.device_type, sub, mesh_dim_names=names,
                          _groups=[self._groups[d] for d in dims])

    # ------------------------------------------------------------ identity

    def __eq__(self, other):
        return (isinstance(other, DeviceMesh) and self.device_type == other.device_type
                and self._array.shape == other._array.shape
                and bool((self._array == other._array).all())
                and self._mesh_dim_names == other._mesh_dim_names)

    def __hash__(self):
        return hash((self.device_type, self._array.tobytes(), self._array.shape,
                     self._mesh_dim_names))

    def __repr__(self):
        sizes = self.shape
        if self._mesh_dim_names:
            inner = "(" + ", ".join(f"{k}={v}" for k, v in zip(self._mesh_dim_names, sizes)) + ")"
        else:
            inner = str(sizes)
        contiguous = np.ascontiguousarray(self._array)
        strides = tuple(s // contiguous.itemsize for s in contiguous.strides)
        return f"DeviceMesh({inner}, '{self.device_type}', stride={strides})"


def init_device_mesh(device_type, mesh_shape, *, mesh_dim_names=None, backend_override=None):
    """A :class:`DeviceMesh` of ``mesh_shape`` over global ranks ``0 .. prod(mesh_shape) - 1``
    in row-major order (the default process group must be initialised).

    Example::

        >>> mesh_2d = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    """
    mesh_shape = tuple(mesh_shape)
    if mesh_dim_names is not None:
        mesh_dim_names = tuple(mesh_dim_names)
        if len(set(mesh_dim_names)) != len(mesh_dim_names):
            raise RuntimeError(f"Each mesh_dim_name must be unique. Found repeated mesh_dim_name "
                               f"in mesh_dim_names {mesh_dim_names}")
        if len(mesh_shape) != len(mesh_dim_names):
            raise RuntimeError(f"mesh_shape and mesh_dim_names should have same length! Found "
                               f"len(mesh_dim_names): {len(mesh_dim_names)} and "
                               f"len(mesh_shape):{len(mesh_shape)}.")
    if not _dist().is_initialized():
        raise ValueError("Default process group has not been initialized, please make sure to "
                         "call init_process_group.")
    world = _dist().get_world_size()
    if int(np.prod(mesh_shape)) != world:
        raise RuntimeError(f"Mesh shape {mesh_shape} has {int(np.prod(mesh_shape))} ranks but "
                           f"the world has {world}")
    ranks = np.arange(world, dtype=np.int64).reshape(mesh_shape)
    return DeviceMesh(device_type, ranks, mesh_dim_names=mesh_dim_names)
