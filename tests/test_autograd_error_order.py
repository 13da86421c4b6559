"""autograd.grad and backward name the first thing wrong as torch does: implicit gradients
only for outputs that require grad, then the outputs without a grad_fn (by index), then the
inputs that do not require grad."""

import pytest
import torch

import ember


def _calls(lib):
    x = lib.ones(2)
    y = lib.ones(2, requires_grad=True)
    return {
        "output without grad": lambda: lib.autograd.grad(x.sum(), x),
        "second output without grad": lambda: lib.autograd.grad([y.sum(), x.sum()], [y]),
        "input without grad": lambda: lib.autograd.grad(y.sum(), x),
        "non-scalar output with grad": lambda: lib.autograd.grad(y * 2, y),
        "non-scalar output without grad": lambda: lib.autograd.grad(x * 2, y),
        "backward of a plain tensor": lambda: (x * 2).sum().backward(),
        "backward of two outputs": lambda: lib.autograd.backward([y.sum(), x.sum()]),
        "grad_outputs given for an output without grad":
            lambda: lib.autograd.grad(x * 2, y, grad_outputs=lib.ones(2)),
    }


def _outcome(call):
    try:
        call()
    except Exception as error:  # noqa: BLE001 - the outcome is what is compared
        return type(error).__name__, str(error)
    return "ok", ""


@pytest.mark.parametrize("name", list(_calls(torch)))
def test_autograd_errors_match_torch(name):
    assert _outcome(_calls(ember)[name]) == _outcome(_calls(torch)[name])
