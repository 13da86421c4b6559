"""Every public function, class and Tensor method of the main namespaces has a docstring."""

import inspect

import pytest

import ember
import ember.autograd
import ember.linalg
import ember.nn
import ember.nn.functional
import ember.optim
import ember.optim.lr_scheduler
import ember.special
import ember.utils.data

NAMESPACES = [ember, ember.nn, ember.nn.functional, ember.optim, ember.optim.lr_scheduler,
              ember.utils.data, ember.linalg, ember.special, ember.autograd]


@pytest.mark.parametrize("namespace", NAMESPACES, ids=lambda m: m.__name__)
def test_public_callables_have_docstrings(namespace):
    undocumented = [name for name in dir(namespace)
                    if not name.startswith("_")
                    and callable(getattr(namespace, name))
                    and not inspect.ismodule(getattr(namespace, name))
                    and not isinstance(getattr(namespace, name), ember.dtype)
                    and not (getattr(namespace, name).__doc__ or "").strip()]
    assert undocumented == []


def test_tensor_methods_have_docstrings():
    undocumented = [name for name in dir(ember.Tensor)
                    if not name.startswith("_") and callable(getattr(ember.Tensor, name))
                    and not (getattr(ember.Tensor, name).__doc__ or "").strip()]
    assert undocumented == []
