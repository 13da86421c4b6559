"""``ember.nn.utils.prune``: torch's pruning API (masks applied by forward pre-hooks).

Pruning the parameter ``name`` of a module moves it to ``name + "_orig"``, stores a buffer
``name + "_mask"`` and sets ``name`` to ``orig * mask``, recomputed by a forward pre-hook
before every call, exactly as torch does (so state dicts have torch's keys).
Pruning the same parameter again combines the masks in a :class:`PruningContainer`;
:func:`remove` makes the pruning permanent.

Example::

    >>> import ember.nn.utils.prune as prune
    >>> layer = ember.nn.Linear(4, 3)
    >>> prune.l1_unstructured(layer, "weight", amount=0.5)
    Linear(in_features=4, out_features=3, bias=True)
    >>> int((layer.weight == 0).sum())
    6
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

from ...ops.creation import ones_like, zeros_like
from ...ops.random import rand, rand_like
from .convert_parameters import parameters_to_vector

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
           "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask", "identity",
           "random_unstructured", "l1_unstructured", "random_structured", "ln_structured",
           "global_unstructured", "custom_from_mask", "remove", "is_pruned"]


class BasePruningMethod(ABC):
    """A way to compute a pruning mask; subclasses define :meth:`compute_mask`.

    ``PRUNING_TYPE`` is ``"unstructured"`` (individual entries), ``"structured"`` (whole
    channels along ``dim``) or ``"global"`` (a mask for the whole tensor); it tells a
    :class:`PruningContainer` which entries a further method may still prune.

    Example::

        >>> class KeepAll(BasePruningMethod):
        ...     PRUNING_TYPE = "unstructured"
        ...     def compute_mask(self, t, default_mask):
        ...         return default_mask
    """

    _tensor_name: str | None = None

    def __call__(self, module, inputs):
        # the forward pre-hook: refresh the pruned tensor from orig and mask before forward
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The new mask for ``t``, given the mask already in force (``default_mask``)."""

    def apply_mask(self, module):
        """``module.<name>_orig * module.<name>_mask`` in the original's dtype."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` with a new ``cls(*args, **kwargs)``; returns the method in force.

        ``importance_scores`` (same shape as the parameter) rank the entries instead of the
        parameter's own values.
        """
        method = _combined_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None and tuple(importance_scores.shape) != tuple(orig.shape):
            raise AssertionError(
                f"importance_scores should have the same shape as parameter {name} of {module}, "
                f"got {importance_scores.shape} vs {orig.shape}")
        scores = orig if importance_scores is None else importance_scores
        first_pruning = not isinstance(method, PruningContainer)
        if first_pruning:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            module.register_buffer(name + "_mask", method.compute_mask(scores, default_mask))
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first_pruning:  # put the parameter back where it was
                module.register_parameter(name, getattr(module, name + "_orig"))
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` times its mask, without touching any module.

        Example::

            >>> L1Unstructured(amount=1).prune(ember.tensor([3.0, -1.0, 2.0]))
            tensor([3., -0., 2.])
        """
        if importance_scores is not None and tuple(importance_scores.shape) != tuple(t.shape):
            raise AssertionError(
                "importance_scores should have the same shape as tensor t, "
                f"got {importance_scores.shape} vs {t.shape}")
        scores = t if importance_scores is None else importance_scores
        default_mask = default_mask if default_mask is not None else ones_like(t)
        return t * self.compute_mask(scores, default_mask=default_mask)

    def remove(self, module):
        """Make the pruning permanent: ``<name>`` becomes a parameter holding the pruned values."""
        if self._tensor_name is None:
            raise AssertionError(
                f"Module {module} has to be pruned before pruning can be removed")
        pruned = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = pruned.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _combined_method(cls, module, name, *args, **kwargs):
    """The new method, merged with any pruning hook already on ``module.<name>``."""
    previous = [(key, hook) for key, hook in module._forward_pre_hooks.items()
                if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]
    if len(previous) > 1:
        raise AssertionError(
            f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. "
            "Use a PruningContainer.")
    for key, _ in previous:
        del module._forward_pre_hooks[key]
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if not previous:
        return method
    old = previous[0][1]
    container = old if isinstance(old, PruningContainer) else PruningContainer(old)
    container.add_pruning_method(method)
    return container


class PruningContainer(BasePruningMethod):
    """Successive pruning methods of one parameter; each prunes only what is still unpruned.

    Example::

        >>> c = PruningContainer()
        >>> len(c)
        0
    """

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1 and isinstance(args[0], Iterable):
            args = tuple(args[0])
        for method in args:
            if self._tensor_name is None:
                self._tensor_name = method._tensor_name
            self.add_pruning_method(method)

    def add_pruning_method(self, method):
        """Append ``method`` (it must act on the same parameter name)."""
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(
                "Can only add pruning methods acting on the parameter named "
                f"'{self._tensor_name}' to PruningContainer {self}. "
                f"Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        """Apply the newest method to the entries (or channels) the current mask still keeps."""
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        where = _unpruned_region(method, t, default_mask)
        partial = method.compute_mask(t[where], default_mask=default_mask[where])
        new_mask[where] = partial.to(dtype=new_mask.dtype)
        return new_mask


def _unpruned_region(method, t, mask):
    """The index selecting what ``method`` may still prune under ``mask``."""
    kind = method.PRUNING_TYPE
    if kind == "unstructured":
        return mask == 1
    if kind == "structured":
        if not hasattr(method, "dim"):
            raise AttributeError("Pruning methods of PRUNING_TYPE 'structured' need to have the "
                                 "attribute `dim` defined.")
        n_dims = t.dim()
        dim = method.dim + n_dims if method.dim < 0 else method.dim
        if dim < 0:
            raise IndexError(f"Index is out of bounds for tensor of size {t.shape}")
        others = [d for d in range(n_dims) if d != dim]
        kept_channels = mask.sum(dim=others) != 0
        return tuple(kept_channels if d == dim else slice(None) for d in range(n_dims))
    if kind == "global":
        return tuple(slice(None) for _ in range(t.dim()))
    raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")


class Identity(BasePruningMethod):
    """A method that prunes nothing (its mask is all ones).

    Example::

        >>> Identity().prune(ember.tensor([1.0, 2.0]))
        tensor([1., 2.])
    """

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        """Attach an all-ones mask to ``module.<name>``."""
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    """Prune ``amount`` entries (an int, or a fraction of the tensor) chosen at random.

    Example::

        >>> int((RandomUnstructured(amount=2).prune(ember.ones(5)) == 0).sum())
        2
    """

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_amount(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        count = _count_to_prune(self.amount, t.numel())
        mask = default_mask.clone()
        if count != 0:
            chosen = rand_like(t).view(-1).topk(k=count).indices
            mask.view(-1)[chosen] = 0
        return mask

    @classmethod
    def apply(cls, module, name, amount):
        """Randomly prune ``amount`` entries of ``module.<name>``."""
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prune the ``amount`` entries of smallest absolute value.

    Example::

        >>> L1Unstructured(amount=0.5).prune(ember.tensor([0.1, -3.0, 0.2, 4.0]))
        tensor([0., -3., 0., 4.])
    """

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_amount(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        count = _count_to_prune(self.amount, t.numel())
        mask = default_mask.clone()
        if count != 0:
            smallest = t.abs().view(-1).topk(k=count, largest=False).indices
            mask.view(-1)[smallest] = 0
        return mask

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        """Prune the ``amount`` smallest-magnitude entries of ``module.<name>``."""
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prune ``amount`` whole channels along ``dim``, chosen at random.

    Example::

        >>> m = RandomStructured(amount=1, dim=0).compute_mask(ember.ones(3, 2), ember.ones(3, 2))
        >>> int(m.sum())
        4
    """

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_amount(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_structured(t)
        _validate_dim(t, self.dim)
        channels = t.shape[self.dim]
        count = _count_to_prune(self.amount, channels)
        if count == 0:
            return default_mask
        scores = rand(channels)
        threshold = scores.kthvalue(k=count).values
        kept = scores > threshold
        return _channel_mask(t, self.dim, kept) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        """Randomly prune ``amount`` channels of ``module.<name>`` along ``dim``."""
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prune the ``amount`` channels along ``dim`` of smallest ``n``-norm.

    Example::

        >>> t = ember.tensor([[1.0, 1.0], [5.0, 5.0], [0.1, 0.1]])
        >>> LnStructured(amount=1, n=2, dim=0).prune(t)
        tensor([[1., 1.],
                [5., 5.],
                [0., 0.]])
    """

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_amount(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_structured(t)
        _validate_dim(t, self.dim)
        channels = t.shape[self.dim]
        count = _count_to_prune(self.amount, channels)
        if count == 0:
            return default_mask
        norms = _norm_over_other_dims(t, self.n, self.dim)
        kept = norms.topk(k=channels - count, largest=True).indices
        return _channel_mask(t, self.dim, kept) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        """Prune the ``amount`` lowest-norm channels of ``module.<name>`` along ``dim``."""
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prune with a given mask (combined with any mask already in force).

    Example::

        >>> CustomFromMask(ember.tensor([1.0, 0.0])).prune(ember.tensor([3.0, 4.0]))
        tensor([3., 0.])
    """

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise AssertionError(
                f"default_mask should have the same shape as mask, got {default_mask.shape} "
                f"vs {self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        """Prune ``module.<name>`` with ``mask``."""
        return super().apply(module, name, mask=mask)


def identity(module, name):
    """Attach an all-ones mask to ``module.<name>`` (reparametrise without pruning).

    Example::

        >>> m = identity(ember.nn.Linear(2, 2), "bias")
        >>> sorted(dict(m.named_buffers()))
        ['bias_mask']
    """
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prune ``amount`` randomly chosen entries of ``module.<name>``; returns the module.

    Example::

        >>> m = random_unstructured(ember.nn.Linear(4, 2), "weight", amount=3)
        >>> int((m.weight == 0).sum())
        3
    """
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune the ``amount`` smallest-magnitude entries of ``module.<name>``; returns the module.

    Example::

        >>> m = l1_unstructured(ember.nn.Linear(4, 2), "weight", amount=0.25)
        >>> int((m.weight == 0).sum())
        2
    """
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prune ``amount`` random channels of ``module.<name>`` along ``dim``; returns the module.

    Example::

        >>> m = random_structured(ember.nn.Linear(4, 3), "weight", amount=1, dim=0)
        >>> int((m.weight.abs().sum(1) == 0).sum())
        1
    """
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune the ``amount`` lowest ``n``-norm channels of ``module.<name>`` along ``dim``.

    Example::

        >>> m = ln_structured(ember.nn.Conv2d(2, 4, 3), "weight", amount=0.5, n=2, dim=0)
        >>> int((m.weight.abs().sum((1, 2, 3)) == 0).sum())
        2
    """
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune several ``(module, name)`` parameters together, ranking all their entries at once.

    ``pruning_method`` is an unstructured method class (e.g. :class:`L1Unstructured`) and
    ``kwargs`` its arguments (``amount=...``).

    Example::

        >>> a, b = ember.nn.Linear(4, 2), ember.nn.Linear(2, 2)
        >>> global_unstructured([(a, "weight"), (b, "weight")], L1Unstructured, amount=4)
        >>> int((a.weight == 0).sum() + (b.weight == 0).sum())
        4
    """
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    parameters = list(parameters)
    scores = parameters_to_vector([importance_scores.get((m, n), getattr(m, n))
                                   for m, n in parameters])
    current = parameters_to_vector([getattr(m, n + "_mask", ones_like(getattr(m, n)))
                                    for m, n in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f"Found method {pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = container.compute_mask(scores, current)
    start = 0
    for module, name in parameters:
        param = getattr(module, name)
        size = param.numel()
        custom_from_mask(module, name, mask=final_mask[start:start + size].view_as(param))
        start += size


def custom_from_mask(module, name, mask):
    """Prune ``module.<name>`` with ``mask``; returns the module.

    Example::

        >>> m = custom_from_mask(ember.nn.Linear(2, 1), "bias", ember.tensor([0.0]))
        >>> float(m.bias)
        0.0
    """
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name):
    """Make the pruning of ``module.<name>`` permanent and drop its mask and hook.

    Example::

        >>> m = l1_unstructured(ember.nn.Linear(2, 2), "weight", amount=1)
        >>> sorted(dict(remove(m, "weight").named_parameters()))
        ['bias', 'weight']
    """
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(
        f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module):
    """Whether ``module`` or any of its submodules carries a pruning hook.

    Example::

        >>> is_pruned(ember.nn.Linear(2, 2))
        False
    """
    return any(isinstance(hook, BasePruningMethod)
               for _, sub in module.named_modules() for hook in sub._forward_pre_hooks.values())


def _validate_amount(amount):
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         "non-negative integer")


def _count_to_prune(amount, size):
    """``amount`` as a count of units out of ``size`` (a fraction is rounded, as in torch)."""
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ValueError(f"amount={amount} should be smaller than the number of parameters "
                             f"to prune={size}")
        return amount
    return round(amount * size)


def _validate_structured(t):
    if t.dim() <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. "
                         f"Found tensor of shape {tuple(t.shape)} with {t.dim()} dims")


def _validate_dim(t, dim):
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _norm_over_other_dims(t, n, dim):
    dims = list(range(t.dim()))
    dims.remove(dims[dim])
    return t.norm(p=n, dim=dims)


def _channel_mask(t, dim, channels):
    """A mask of ``t``'s shape, 1 on ``channels`` (indices or a bool vector) along ``dim``."""
    mask = zeros_like(t)
    index = [slice(None)] * t.dim()
    index[dim] = channels
    mask[tuple(index)] = 1
    return mask
