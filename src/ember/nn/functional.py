"""``ember.nn.functional``: the stateless form of every layer, loss and activation.

Each family lives in ``ember/nn/_functional/<family>.py``; this module re-exports them all.
"""

from __future__ import annotations

from ..ops.shape import pad  # noqa: F401  (torch.nn.functional.pad)
from ._functional.activation import *  # noqa: F403
from ._functional.attention import *  # noqa: F403
from ._functional.conv import *  # noqa: F403
from ._functional.distance import *  # noqa: F403
from ._functional.dropout import *  # noqa: F403
from ._functional.embedding import *  # noqa: F403
from ._functional.fractional_pooling import *  # noqa: F403
from ._functional.linear import *  # noqa: F403
from ._functional.loss import *  # noqa: F403
from ._functional.normalization import *  # noqa: F403
from ._functional.pooling import *  # noqa: F403
from ._functional.vision import *  # noqa: F403
