"""Named tuples returned by operators with several results, like ``torch.return_types``.

Example::

    >>> values, indices = ember.tensor([[1, 5], [7, 2]]).max(dim=1)
    >>> ember.tensor([[1, 5], [7, 2]]).max(dim=1).indices
    tensor([1, 0])
"""

from __future__ import annotations

import collections

_FIELDS = {
    "max": ["values", "indices"], "min": ["values", "indices"], "sort": ["values", "indices"],
    "topk": ["values", "indices"], "kthvalue": ["values", "indices"],
    "median": ["values", "indices"], "nanmedian": ["values", "indices"],
    "mode": ["values", "indices"], "cummax": ["values", "indices"],
    "cummin": ["values", "indices"], "aminmax": ["min", "max"],
    "histogram": ["hist", "bin_edges"], "histogramdd": ["hist", "bin_edges"],
    "frexp": ["mantissa", "exponent"], "geqrf": ["a", "tau"],
    "slogdet": ["sign", "logabsdet"], "linalg_slogdet": ["sign", "logabsdet"],
    "linalg_inv_ex": ["inverse", "info"], "linalg_solve_ex": ["result", "info"],
    "linalg_cholesky_ex": ["L", "info"], "linalg_qr": ["Q", "R"], "qr": ["Q", "R"],
    "linalg_svd": ["U", "S", "Vh"], "svd": ["U", "S", "V"],
    "linalg_eig": ["eigenvalues", "eigenvectors"], "linalg_eigh": ["eigenvalues", "eigenvectors"],
    "linalg_lstsq": ["solution", "residuals", "rank", "singular_values"],
    "linalg_lu_factor": ["LU", "pivots"], "linalg_lu_factor_ex": ["LU", "pivots", "info"],
    "linalg_lu": ["P", "L", "U"], "lu_unpack": ["P", "L", "U"],
    "linalg_ldl_factor": ["LD", "pivots"], "linalg_ldl_factor_ex": ["LD", "pivots", "info"],
    "triangular_solve": ["solution", "cloned_coefficient"],
}
# torch has an ``_out`` twin of each (the type of results written through ``out=``), except
# histogramdd
_WITHOUT_OUT_TWIN = {"histogramdd"}

__all__ = sorted([*_FIELDS, *(f"{n}_out" for n in _FIELDS if n not in _WITHOUT_OUT_TWIN)])


def _make(name, fields):
    cls = collections.namedtuple(name, fields)
    cls.__module__ = "ember.return_types"
    cls.__qualname__ = name

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"ember.return_types.{name}(\n{body})"

    cls.__repr__ = __repr__
    return cls


for _name, _fields in _FIELDS.items():
    globals()[_name] = _make(_name, _fields)
    if _name not in _WITHOUT_OUT_TWIN:
        globals()[f"{_name}_out"] = _make(f"{_name}_out", _fields)
# torch's private LU result (linalg.lu_factor's older form); lives here so that it pickles
_lu_with_info = _make("_lu_with_info", ["LU", "pivots", "info"])
del _name, _fields
