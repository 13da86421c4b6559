"""Reductions, scans, sorting and counting: sum, mean, var, max, norm, cumsum, sort, unique...

The shared helpers (dim handling, the meta rule :func:`reduced_shape`, gradients that route to
selected indices) live in ``_common``; each family module holds its ops (kernel, meta rule,
derivative) and public functions with torch's signatures, each declared a Tensor method
(``@tensor_method``) where it is defined.

Gradients that go to selected elements (``max(dim)``, ``sort``, ``topk``, ``median``...) use
:func:`_select_grad` (one selected element per slice: a one-hot comparison and ``where``) or
:func:`_scatter_grad` (several, possibly repeated: ``scatter_add`` from ``ops.index``).

The package's modules, one family each: ``_common`` (shared helpers), ``sums``, ``norms``,
``extrema``, ``scans``, ``sorting`` and ``histograms``. Every
public name is re-exported here (``ember.ops.reduce.sum``).
"""

from __future__ import annotations

from . import _common, extrema, histograms, norms, scans, sorting, sums  # noqa: F401
from .extrema import *  # noqa: F403
from .extrema import (  # noqa: F401  (importers use these names)
    all_op,
    amax_op,
    amin_op,
    any_op,
    argmax_op,
    argmin_op,
    count_nonzero_op,
    max_all_op,
    max_dim_op,
    min_all_op,
    min_dim_op,
)
from .histograms import *  # noqa: F403
from .histograms import (  # noqa: F401  (importers use these names)
    bin_positions,
    bincount_op,
    histc_op,
    histogram_op,
    searchsorted_op,
)
from .norms import *  # noqa: F403
from .norms import (  # noqa: F401  (importers use these names)
    logsumexp_op,
    norm_op,
    nuclear_norm_op,
    std_op,
    var_op,
)
from .scans import *  # noqa: F403
from .scans import (  # noqa: F401  (importers use these names)
    cummax_op,
    cummin_op,
    cumprod_op,
    cumsum_op,
    diff_adjoint_op,
    diff_op,
    logcumsumexp_op,
)
from .sorting import *  # noqa: F403
from .sorting import (  # noqa: F401  (importers use these names)
    _median_dim_op,
    kthvalue_op,
    median_all_op,
    median_dim_op,
    mode_op,
    nanmedian_all_op,
    nanmedian_dim_op,
    quantile_op,
    sort_op,
    topk_op,
    unique_op,
)
from .sums import *  # noqa: F403
from .sums import (  # noqa: F401  (importers use these names)
    _exclusive_cumprod,
    mean_op,
    nansum_op,
    prod_op,
    sum_op,
)

__all__ = [*sums.__all__, *norms.__all__, *extrema.__all__, *scans.__all__, *sorting.__all__,
           *histograms.__all__]
