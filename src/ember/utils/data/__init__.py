"""``ember.utils.data``: datasets, samplers, collation and the DataLoader.

Example::

    >>> from ember.utils.data import DataLoader, TensorDataset
    >>> loader = DataLoader(TensorDataset(ember.randn(100, 3)), batch_size=32, shuffle=True)
    >>> len(loader)
    4
"""

from . import datapipes  # noqa: F401
from ._collate import default_collate, default_convert
from .dataloader import DataLoader, WorkerInfo, get_worker_info
from .datapipes._decorator import (
    argument_validation,
    functional_datapipe,
    guaranteed_datapipes_determinism,
    non_deterministic,
    runtime_validation,
    runtime_validation_disabled,
)
from .datapipes.datapipe import DataChunk, DFIterDataPipe, IterDataPipe, MapDataPipe
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .sampler import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = ["DataLoader", "WorkerInfo", "get_worker_info", "default_collate", "default_convert",
           "Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split", "Sampler", "SequentialSampler",
           "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler",
           "DistributedSampler", "DataChunk", "DFIterDataPipe", "IterDataPipe", "MapDataPipe",
           "argument_validation", "functional_datapipe", "guaranteed_datapipes_determinism",
           "non_deterministic", "runtime_validation", "runtime_validation_disabled"]
