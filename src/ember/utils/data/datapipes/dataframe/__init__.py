"""``ember.utils.data.datapipes.dataframe``: torch's experimental DataFrame DataPipes.

Not implemented in ember: the names exist and raise ``NotImplementedError``.

Example::

    >>> from ember.utils.data.datapipes.dataframe import DFIterDataPipe
"""

from ..datapipe import DFIterDataPipe
from .dataframes import CaptureDataFrame
from .datapipes import DataFramesAsTuplesPipe

__all__ = ["CaptureDataFrame", "DFIterDataPipe", "DataFramesAsTuplesPipe"]
