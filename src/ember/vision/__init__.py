"""``ember.vision``: image datasets, transforms and utilities, as torchvision's.

Example::

    >>> from ember.vision import datasets, transforms, utils
    >>> train = datasets.Digits(train=True, transform=transforms.Normalize((0.3,), (0.4,)))
    >>> image, label = train[0]
    >>> utils.make_grid(train.data[:16], nrow=4).shape
    ember.Size([3, 42, 42])
"""

from . import datasets, transforms, utils

__all__ = ["datasets", "transforms", "utils"]
