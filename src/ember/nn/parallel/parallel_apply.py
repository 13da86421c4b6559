"""``ember.nn.parallel.parallel_apply``: run modules on their inputs, one per device.

Example::

    >>> from ember.nn.parallel.parallel_apply import parallel_apply
    >>> nets = [ember.nn.Identity(), ember.nn.Identity()]
    >>> parallel_apply(nets, [(ember.ones(1),), (ember.zeros(1),)])
    [tensor([1.]), tensor([0.])]
"""

from __future__ import annotations

import threading

from ..._tensor import Tensor
from ...autograd import grad_mode

__all__ = ["get_a_var", "parallel_apply"]


def get_a_var(obj):
    """The first tensor found in ``obj`` (walking lists, tuples and dict items), else None.

    Example::

        >>> get_a_var([1, {"x": ember.ones(1)}])
        tensor([1.])
    """
    if isinstance(obj, Tensor):
        return obj
    if isinstance(obj, (list, tuple)):
        for item in obj:
            found = get_a_var(item)
            if found is not None:
                return found
    if isinstance(obj, dict):
        for item in obj.items():
            found = get_a_var(item)
            if found is not None:
                return found
    return None


def parallel_apply(modules, inputs, kwargs_tup=None, devices=None):
    """``[modules[i](*inputs[i], **kwargs_tup[i])]``, each in its own thread (grad mode kept);
    an exception in any of them is re-raised here.

    Example::

        >>> parallel_apply([ember.nn.Identity()], [ember.ones(1)])
        [tensor([1.])]
    """
    if len(modules) != len(inputs):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number "
                             f"of inputs {len(inputs)}")
    kwargs_tup = kwargs_tup if kwargs_tup is not None else ({},) * len(modules)
    if len(modules) != len(kwargs_tup):
        raise AssertionError("The number of modules is not equal to the number of kwargs")
    results = [None] * len(modules)
    grad_enabled = grad_mode.is_grad_enabled()

    def run(i):
        args = inputs[i] if isinstance(inputs[i], (list, tuple)) else (inputs[i],)
        try:
            with grad_mode.set_grad_enabled(grad_enabled):
                results[i] = modules[i](*args, **kwargs_tup[i])
        except Exception as error:  # noqa: BLE001  (re-raised in the caller's thread)
            results[i] = error

    if len(modules) == 1:
        run(0)
    else:
        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(modules))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for result in results:
        if isinstance(result, Exception):
            raise result
    return results
