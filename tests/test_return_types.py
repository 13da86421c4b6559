"""ember.return_types holds every named tuple torch.return_types has, with torch's fields, and
results of multi-output operators pickle and print as torch's."""

import pickle

import pytest
import torch

import ember

TORCH_NAMES = [n for n in dir(torch.return_types)
               if not n.startswith("_") and isinstance(getattr(torch.return_types, n), type)
               and issubclass(getattr(torch.return_types, n), tuple)]


@pytest.mark.parametrize("name", TORCH_NAMES)
def test_every_torch_return_type_exists_with_its_fields(name):
    ours = getattr(ember.return_types, name)
    theirs = getattr(torch.return_types, name)
    assert len(ours._fields) == theirs.n_fields
    assert ours._fields == tuple(theirs.__match_args__)


CALLS = [
    lambda m: m.linalg.slogdet(m.eye(2)), lambda m: m.slogdet(m.eye(2)),
    lambda m: m.max(m.ones(2, 2), 1), lambda m: m.sort(m.ones(3)),
    lambda m: m.frexp(m.ones(2)), lambda m: m.linalg.lu_factor(m.eye(2)),
    lambda m: m.svd(m.eye(2)), lambda m: m.linalg.qr(m.eye(2)), lambda m: m.geqrf(m.eye(2)),
    lambda m: m.linalg.eigh(m.eye(2)), lambda m: m.aminmax(m.ones(3)),
]


@pytest.mark.parametrize("call", CALLS)
def test_results_have_torch_type_names_and_pickle(call):
    ours, theirs = call(ember), call(torch)
    assert type(ours).__name__ == type(theirs).__name__
    assert type(ours)._fields == tuple(type(theirs).__match_args__)
    restored = pickle.loads(pickle.dumps(ours))
    assert type(restored) is type(ours)
    assert repr(ours).split("(")[0].split(".")[-1] == repr(theirs).split("(")[0].split(".")[-1]
